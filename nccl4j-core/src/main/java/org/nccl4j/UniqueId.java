package org.nccl4j;

import java.util.Arrays;
import java.util.Base64;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;

/**
 * An {@code ncclUniqueId}: 128 opaque bytes made by one rank ({@link #generate()}) and given to all ranks
 * of a new communicator. Immutable.
 */
public final class UniqueId {
    /** {@code NCCL_UNIQUE_ID_BYTES}. */
    public static final int BYTES = NcclNative.UNIQUE_ID_BYTES;

    private final byte[] bytes;

    private UniqueId(byte[] bytes) {
        this.bytes = bytes;
    }

    /**
     * {@code ncclGetUniqueId}: a new id. With {@code NCCL_COMM_ID=host:port} set, every rank gets the same id.
     *
     * @return the id
     */
    public static UniqueId generate() {
        NcclLoad.library();
        byte[] b = new byte[BYTES];
        Errors.check(NcclNative.ncclGetUniqueId(b), NcclFunction.ncclGetUniqueId, null);
        return new UniqueId(b);
    }

    /**
     * @param bytes exactly {@value #BYTES} bytes (copied)
     * @return the id with those bytes
     */
    public static UniqueId of(byte[] bytes) {
        if (bytes == null) {
            throw Errors.nullArgument("bytes");
        }
        if (bytes.length != BYTES) {
            throw Errors.argument("an ncclUniqueId has " + BYTES + " bytes, got " + bytes.length);
        }
        return new UniqueId(bytes.clone());
    }

    /**
     * @param base64 the id as from {@link #toBase64()}
     * @return the id
     */
    public static UniqueId fromBase64(String base64) {
        return of(Base64.getDecoder().decode(base64));
    }

    /** @return a copy of the 128 bytes */
    public byte[] toBytes() {
        return bytes.clone();
    }

    byte[] internalBytes() {
        return bytes;
    }

    /** @return the bytes in Base64 */
    public String toBase64() {
        return Base64.getEncoder().encodeToString(bytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof UniqueId u && Arrays.equals(bytes, u.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
        return "UniqueId[" + toBase64().substring(0, 12) + "...]";
    }
}
