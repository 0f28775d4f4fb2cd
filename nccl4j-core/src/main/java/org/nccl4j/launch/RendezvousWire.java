package org.nccl4j.launch;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The wire format of the TCP rendezvous. Every message is one frame:
 *
 * <pre>
 *   magic   4 bytes  0x4E344A52 ("N4JR")
 *   version 1 byte   {@link #VERSION}
 *   type    1 byte   CHALLENGE, HELLO, ID, ERROR, AUTH_CHALLENGE, AUTH, AUTH_OK or RETRY
 *   length  4 bytes  big-endian payload length, 0 to {@link #MAX_PAYLOAD}
 *   payload length bytes
 * </pre>
 *
 * A frame whose header announces more than {@link #MAX_PAYLOAD} bytes is refused before anything is allocated; a
 * frame of another version is refused naming both versions (version 2 added the AUTH frames, version 3 the sealed
 * records and RETRY).
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
 *
 * <p>Sealed records: after AUTH_OK, every frame either side sends (the HELLO, the ID, an ERROR) is sealed by
 * {@link RecordSeal} (purpose {@value #PURPOSE}, rank 0's nonce as the server's, the peer's as the client's): its
 * payload is followed by the {@value RecordSeal#MAC_BYTES}-byte MAC of the record {@code type byte | payload}, and the
 * header's length counts the MAC. A sealed frame that fails to open (forged, altered, replayed from another connection
 * or rendezvous, reordered, or one dropped before it) is refused: the connection is closed.
 *
 * <p>RETRY (a UTF-8 reason), sent only before a peer has proved anything: rank 0 let go of the connection to make
 * room for another (its waiting slots were full) or because it sent nothing in time; the peer connects again, as
 * after a refused connection, instead of failing.
 */
final class RendezvousWire {
    static final int MAGIC = 0x4E344A52;
    /** 3 sealed the frames after the handshake and added RETRY; 2 added AUTH_CHALLENGE, AUTH and AUTH_OK. */
    static final int VERSION = 3;
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
    /** Rank 0 let go of a connection that had proved nothing yet: connect again. */
    static final int RETRY = 8;
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
            case RETRY: return "RETRY";
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
        writeMessage(out, null, ERROR, message);
    }

    /** Writes an ERROR or RETRY frame, sealed when {@code seal} is not null, cutting the message to fit. */
    static void writeMessage(OutputStream out, RecordSeal seal, int type, String message) throws IOException {
        byte[] m = message.getBytes(StandardCharsets.UTF_8);
        int room = MAX_PAYLOAD - (seal == null ? 0 : RecordSeal.MAC_BYTES);
        if (m.length > room) {
            m = Arrays.copyOf(m, room);
        }
        write(out, type, seal == null ? m : seal(seal, type, m));
    }

    /** The bytes of one frame, sealed when {@code seal} is not null. */
    static byte[] bytes(RecordSeal seal, int type, byte[] payload) {
        java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream(HEADER_BYTES + payload.length + 16);
        try {
            write(b, type, seal == null ? payload : seal(seal, type, payload));
        } catch (IOException e) {
            throw new AssertionError(e);   // a byte array does not fail
        }
        return b.toByteArray();
    }

    /** The bytes of an ERROR or RETRY frame, sealed when {@code seal} is not null, its message cut to fit. */
    static byte[] messageBytes(RecordSeal seal, int type, String message) {
        java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
        try {
            writeMessage(b, seal, type, message);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return b.toByteArray();
    }

    /**
     * A payload sealed for its connection: the payload followed by the MAC of the record {@code type | payload}, so
     * that the frame's type is authenticated with its contents.
     */
    static byte[] seal(RecordSeal seal, int type, byte[] payload) {
        byte[] record = new byte[1 + payload.length];
        record[0] = (byte) type;
        System.arraycopy(payload, 0, record, 1, payload.length);
        byte[] sealed = seal.sealFrame(record);
        return Arrays.copyOfRange(sealed, 1, sealed.length);
    }

    /**
     * Opens a sealed frame: the frame with its payload without the MAC.
     *
     * @throws RecordSeal.Broken when the frame is shorter than a MAC or its MAC fails
     */
    static Frame open(RecordSeal seal, Frame f) throws RecordSeal.Broken {
        byte[] record = new byte[1 + f.payload.length];
        record[0] = (byte) f.type;
        System.arraycopy(f.payload, 0, record, 1, f.payload.length);
        byte[] opened = seal.openFrame(record);
        return new Frame(f.type, Arrays.copyOfRange(opened, 1, opened.length));
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
     * Reads one frame from a socket within a total time: each read waits at most until {@code deadlineNanos} (as
     * {@link System#nanoTime()}), so a peer that trickles its bytes cannot stretch the wait past it.
     *
     * @throws SocketTimeoutException when the deadline passes before the frame is complete
     * @throws ProtocolException when the magic, version, type or length is wrong
     * @throws java.io.EOFException when the stream ends early
     */
    static Frame read(Socket s, InputStream in, long deadlineNanos) throws IOException {
        byte[] header = new byte[HEADER_BYTES];
        readFully(s, in, header, deadlineNanos);
        Frame f = readHeader(header);
        readFully(s, in, f.payload, deadlineNanos);
        return f;
    }

    private static void readFully(Socket s, InputStream in, byte[] b, long deadlineNanos) throws IOException {
        int off = 0;
        while (off < b.length) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
            if (left <= 0) {
                throw new SocketTimeoutException("the frame was not complete in time (" + off + " of " + b.length
                        + " bytes)");
            }
            s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
            int n = in.read(b, off, b.length - off);
            if (n < 0) {
                throw new java.io.EOFException();
            }
            off += n;
        }
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
        if (type < CHALLENGE || type > RETRY) {
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
