package org.nccl4j.launch;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The wire format of the TCP rendezvous. Every message is one frame:
 *
 * <pre>
 *   magic   4 bytes  0x4E344A52 ("N4JR")
 *   version 1 byte   {@link #VERSION}
 *   type    1 byte   CHALLENGE, HELLO, ID, ERROR, AUTH_CHALLENGE, AUTH or AUTH_OK
 *   length  4 bytes  big-endian payload length, 0 to {@link #MAX_PAYLOAD}
 *   payload length bytes
 * </pre>
 *
 * A frame whose header announces more than {@link #MAX_PAYLOAD} bytes is refused before anything is allocated; a
 * frame of another version is refused naming both versions (version 2 added the AUTH frames).
 *
 * <p>The exchange, when rank 0 holds the job's secret ({@link JobSecret}): rank 0 sends AUTH_CHALLENGE (its 32-byte
 * random nonce); the peer answers AUTH (its own 32-byte nonce, then its 32-byte proof, purpose {@code rendezvous},
 * side {@code client}); rank 0 checks the proof and answers AUTH_OK (its own proof, side {@code server}), which the
 * peer checks before it sends anything else or trusts anything rank 0 sends. Then, as without a secret: the peer sends
 * HELLO (rank int, world size int, flags byte with bit 0 = token present, then 32 bytes of HMAC-SHA256 keyed by the
 * {@code NCCL4J_RENDEZVOUS_TOKEN} over nonce, rank and world size when a token is present); rank 0 answers ID (the
 * 128-byte unique id) once every rank has arrived, or ERROR (a UTF-8 message) when it refuses the peer or gives up.
 * When rank 0 has no secret it sends CHALLENGE (its 32-byte nonce) instead of AUTH_CHALLENGE, and the peer answers
 * HELLO at once. A side that has a secret never talks to one without: the peer sends ERROR and fails; rank 0 refuses.
 * Neither the secret nor the token travels, and a recorded AUTH or HELLO is useless against a later nonce.
 */
final class RendezvousWire {
    static final int MAGIC = 0x4E344A52;
    /** 2 added AUTH_CHALLENGE, AUTH and AUTH_OK (the job's secret); 1 had only the token. */
    static final int VERSION = 2;
    static final int HEADER_BYTES = 10;
    /** The largest payload accepted; larger frames are refused before anything is allocated. */
    static final int MAX_PAYLOAD = 1024;

    static final int CHALLENGE = 1;
    static final int HELLO = 2;
    static final int ID = 3;
    static final int ERROR = 4;
    static final int AUTH_CHALLENGE = 5;
    static final int AUTH = 6;
    static final int AUTH_OK = 7;
    /** The purpose the job's secret proves for, see {@link JobSecret#prove}. */
    static final String PURPOSE = "rendezvous";

    static final int NONCE_BYTES = 32;
    static final int MAC_BYTES = 32;
    static final int HELLO_NO_TOKEN_BYTES = 9;
    static final int HELLO_TOKEN_BYTES = HELLO_NO_TOKEN_BYTES + MAC_BYTES;
    /** AUTH: the client's nonce, then its proof. */
    static final int AUTH_BYTES = NONCE_BYTES + MAC_BYTES;

    private RendezvousWire() {
    }

    /** A frame that breaks the format; its message says how. */
    static final class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }

    /** A received frame. */
    static final class Frame {
        final int type;
        final byte[] payload;

        Frame(int type, byte[] payload) {
            this.type = type;
            this.payload = payload;
        }
    }

    /** The HELLO contents. */
    static final class Hello {
        final int rank;
        final int worldSize;
        final byte[] mac;

        Hello(int rank, int worldSize, byte[] mac) {
            this.rank = rank;
            this.worldSize = worldSize;
            this.mac = mac;
        }
    }

    static String typeName(int type) {
        switch (type) {
            case CHALLENGE: return "CHALLENGE";
            case HELLO: return "HELLO";
            case ID: return "ID";
            case ERROR: return "ERROR";
            case AUTH_CHALLENGE: return "AUTH_CHALLENGE";
            case AUTH: return "AUTH";
            case AUTH_OK: return "AUTH_OK";
            default: return "unknown type " + type;
        }
    }

    static void write(OutputStream out, int type, byte[] payload) throws IOException {
        if (payload.length > MAX_PAYLOAD) {
            throw new IllegalArgumentException("payload of " + payload.length + " bytes exceeds " + MAX_PAYLOAD);
        }
        ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES + payload.length);
        b.putInt(MAGIC).put((byte) VERSION).put((byte) type).putInt(payload.length).put(payload);
        out.write(b.array());
        out.flush();
    }

    /** Writes an ERROR frame, cutting the message to fit. */
    static void writeError(OutputStream out, String message) throws IOException {
        byte[] m = message.getBytes(StandardCharsets.UTF_8);
        if (m.length > MAX_PAYLOAD) {
            byte[] cut = new byte[MAX_PAYLOAD];
            System.arraycopy(m, 0, cut, 0, MAX_PAYLOAD);
            m = cut;
        }
        write(out, ERROR, m);
    }

    /**
     * Reads one frame; the header is checked before the payload is allocated.
     *
     * @throws ProtocolException when the magic, version, type or length is wrong
     * @throws java.io.EOFException when the stream ends early
     */
    static Frame read(InputStream in) throws IOException {
        DataInputStream d = new DataInputStream(in);
        byte[] header = new byte[HEADER_BYTES];
        d.readFully(header);
        Frame h = readHeader(header);
        byte[] payload = new byte[h.payload.length];
        d.readFully(payload);
        return new Frame(h.type, payload);
    }

    /**
     * Checks a frame's {@value #HEADER_BYTES}-byte header: returns its type and a zeroed payload of the announced
     * length, which is at most {@link #MAX_PAYLOAD}.
     *
     * @throws ProtocolException when the magic, version, type or length is wrong
     */
    static Frame readHeader(byte[] header) throws ProtocolException {
        ByteBuffer h = ByteBuffer.wrap(header);
        int magic = h.getInt();
        int version = h.get() & 0xff;
        int type = h.get() & 0xff;
        int length = h.getInt();
        if (magic != MAGIC) {
            throw new ProtocolException(String.format("malformed frame: bad magic 0x%08X (expected 0x%08X); the peer"
                    + " does not speak the nccl4j rendezvous protocol (wrong port, or another service?)", magic,
                    MAGIC));
        }
        if (version != VERSION) {
            throw new ProtocolException("malformed frame: protocol version " + version + ", but this side speaks "
                    + VERSION + "; use the same nccl4j version on every rank");
        }
        if (type < CHALLENGE || type > AUTH_OK) {
            throw new ProtocolException("malformed frame: unknown frame type " + type);
        }
        if (length < 0 || length > MAX_PAYLOAD) {
            throw new ProtocolException("oversized frame: " + typeName(type) + " frame announces "
                    + Integer.toUnsignedString(length) + " bytes, above the limit of " + MAX_PAYLOAD + " bytes");
        }
        return new Frame(type, new byte[length]);
    }

    static byte[] hello(int rank, int worldSize, byte[] mac) {
        ByteBuffer b = ByteBuffer.allocate(mac == null ? HELLO_NO_TOKEN_BYTES : HELLO_TOKEN_BYTES);
        b.putInt(rank).putInt(worldSize).put((byte) (mac == null ? 0 : 1));
        if (mac != null) {
            b.put(mac);
        }
        return b.array();
    }

    static Hello parseHello(byte[] p) throws ProtocolException {
        if (p.length != HELLO_NO_TOKEN_BYTES && p.length != HELLO_TOKEN_BYTES) {
            throw new ProtocolException("malformed HELLO: " + p.length + " bytes, expected " + HELLO_NO_TOKEN_BYTES
                    + " or " + HELLO_TOKEN_BYTES);
        }
        ByteBuffer b = ByteBuffer.wrap(p);
        int rank = b.getInt();
        int size = b.getInt();
        int flags = b.get() & 0xff;
        boolean token = (flags & 1) != 0;
        if ((flags & ~1) != 0 || token != (p.length == HELLO_TOKEN_BYTES)) {
            throw new ProtocolException("malformed HELLO: flags 0x" + Integer.toHexString(flags) + " do not match its "
                    + p.length + " bytes");
        }
        byte[] mac = null;
        if (token) {
            mac = new byte[MAC_BYTES];
            b.get(mac);
        }
        return new Hello(rank, size, mac);
    }

    /** The hex form of a nonce or proof, as {@link JobSecret#prove} takes and gives them. */
    static String hex(byte[] b) {
        return java.util.HexFormat.of().formatHex(b);
    }

    /** The bytes of a hex nonce or proof. */
    static byte[] unhex(String s) {
        return java.util.HexFormat.of().parseHex(s);
    }

    /** HMAC-SHA256 keyed by {@code token} over nonce, rank and world size. */
    static byte[] mac(String token, byte[] nonce, int rank, int worldSize) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(token.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            mac.update(nonce);
            mac.update(ByteBuffer.allocate(8).putInt(rank).putInt(worldSize).array());
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }

    /** SHA-256 of the parts, each preceded by its length. */
    static byte[] sha256(String... parts) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (String s : parts) {
                byte[] b = (s == null ? "" : s).getBytes(StandardCharsets.UTF_8);
                md.update(ByteBuffer.allocate(4).putInt(s == null ? -1 : b.length).array());
                md.update(b);
            }
            return md.digest();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("SHA-256 is not available in this JVM", e);
        }
    }
}
