package org.nccl4j.examples;

import java.nio.ByteBuffer;

/**
 * 64-bit FNV-1a over raw bytes, for comparing weights bit for bit across ranks: the weights' float32 bits as
 * they lie in device memory (little-endian), so two ranks agree only when every bit of every weight does.
 */
final class Checksum {
    /** FNV-1a 64 offset basis. */
    static final long OFFSET_BASIS = 0xcbf29ce484222325L;
    /** FNV-1a 64 prime. */
    static final long PRIME = 0x100000001b3L;

    private Checksum() {
    }

    /**
     * @param bytes the bytes from its position to its limit (position unchanged)
     * @return their FNV-1a 64 hash
     */
    static long fnv1a(ByteBuffer bytes) {
        return update(OFFSET_BASIS, bytes);
    }

    /**
     * Continues a hash over more bytes: {@code update(fnv1a(a), b) == fnv1a(a followed by b)}.
     *
     * @param hash the hash so far ({@link #OFFSET_BASIS} for none)
     * @param bytes the bytes from its position to its limit (position unchanged)
     * @return the hash including them
     */
    static long update(long hash, ByteBuffer bytes) {
        long h = hash;
        for (int i = bytes.position(), n = bytes.limit(); i < n; i++) {
            h ^= bytes.get(i) & 0xff;
            h *= PRIME;
        }
        return h;
    }

    /**
     * @param bytes some bytes
     * @return their FNV-1a 64 hash
     */
    static long fnv1a(byte[] bytes) {
        return fnv1a(ByteBuffer.wrap(bytes));
    }

    /**
     * @param value a checksum
     * @return it as 16 hex digits
     */
    static String hex(long value) {
        return String.format("%016x", value);
    }
}
