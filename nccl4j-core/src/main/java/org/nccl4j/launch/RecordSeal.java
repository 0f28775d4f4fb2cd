package org.nccl4j.launch;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The records of one authenticated connection, after its handshake: every frame or line either side sends carries a
 * MAC under a key of that connection and that direction, over an implicit sequence number, so a record cannot be
 * forged, replayed (on this connection or another), reordered or dropped without the receiver seeing it.
 *
 * <p>Keys, as TLS derives its traffic keys from the handshake: {@code session = HMAC-SHA256(secret, "nccl4j-records|"
 * + purpose + "|" + server nonce + "|" + client nonce)}, then one key a direction, {@code HMAC-SHA256(session,
 * "server")} for what the serving side sends and {@code HMAC-SHA256(session, "client")} for what the connecting side
 * sends. A record's MAC is the first {@value #MAC_BYTES} bytes of {@code HMAC-SHA256(direction key, sequence number
 * (8 bytes, big-endian, from 0 per direction) | record)}. TCP keeps the order, so the numbers do not travel: a record
 * that was dropped, repeated or moved fails on the next one.
 *
 * <p>A line travels as {@code <line> ~<MAC in hex>}; a binary frame as its bytes followed by the MAC's. Sending and
 * receiving are each counted under this object's lock: the caller that writes a sealed record must write it in the
 * order it sealed it (seal and write under one lock per connection).
 */
public final class RecordSeal {
    /** The bytes of a record's MAC (128 bits). */
    public static final int MAC_BYTES = 16;
    /** What separates a line from its MAC. */
    public static final String LINE_MARK = " ~";

    private static final HexFormat HEX = HexFormat.of();

    private final Mac sendMac;
    private final Mac receiveMac;
    private final byte[] seq = new byte[8];
    private long sent;
    private long received;

    private RecordSeal(byte[] sendKey, byte[] receiveKey) {
        try {
            sendMac = Mac.getInstance("HmacSHA256");
            sendMac.init(new SecretKeySpec(sendKey, "HmacSHA256"));
            receiveMac = Mac.getInstance("HmacSHA256");
            receiveMac.init(new SecretKeySpec(receiveKey, "HmacSHA256"));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }

    /**
     * The seal of one side of a connection whose handshake proved {@code secret} on both sides with these nonces.
     *
     * @param secret the job's secret
     * @param purpose what the connection is for ({@code liveness}, {@code rendezvous}), as in the handshake
     * @param serverNonce the nonce the serving side sent in the handshake
     * @param clientNonce the nonce the connecting side sent in the handshake
     * @param server whether this side is the serving one
     * @return the seal; both sides of one connection get matching ones
     * @throws IllegalArgumentException when an argument is null
     */
    public static RecordSeal of(JobSecret secret, String purpose, String serverNonce, String clientNonce,
            boolean server) {
        if (secret == null || purpose == null || serverNonce == null || clientNonce == null) {
            throw new IllegalArgumentException("RecordSeal.of: secret, purpose and both nonces are required (got "
                    + (secret == null ? "no secret" : "a secret") + ", purpose " + purpose + ")");
        }
        byte[] session = secret.hmac(("nccl4j-records|" + purpose + "|" + serverNonce + "|" + clientNonce)
                .getBytes(StandardCharsets.UTF_8));
        byte[] fromServer = JobSecret.hmac(session, "server".getBytes(StandardCharsets.UTF_8));
        byte[] fromClient = JobSecret.hmac(session, "client".getBytes(StandardCharsets.UTF_8));
        return server ? new RecordSeal(fromServer, fromClient) : new RecordSeal(fromClient, fromServer);
    }

    /**
     * Seals a line: {@code line} with its MAC appended ({@code <line> ~<hex>}), a trailing newline kept at the end.
     *
     * @param line the line, with or without its trailing {@code \n}
     * @return the line to send
     */
    public synchronized String seal(String line) {
        boolean nl = line.endsWith("\n");
        String body = nl ? line.substring(0, line.length() - 1) : line;
        byte[] m = mac(sendMac, sent++, body.getBytes(StandardCharsets.UTF_8));
        return body + LINE_MARK + HEX.formatHex(m) + (nl ? "\n" : "");
    }

    /**
     * Opens a received line: checks its MAC against the next number of this direction and returns it without the MAC.
     *
     * @param sealed the line as received, without its trailing newline
     * @return the line the other side sealed
     * @throws Broken when the line has no MAC or its MAC fails (forged, replayed, reordered, or one was dropped);
     *         the connection cannot go on: every later record would fail too
     */
    public synchronized String open(String sealed) throws Broken {
        long n = received++;
        int at = sealed == null ? -1 : sealed.lastIndexOf(LINE_MARK);
        if (at < 0 || sealed.length() - at - LINE_MARK.length() != 2 * MAC_BYTES) {
            throw new Broken(n, "carries no MAC");
        }
        String body = sealed.substring(0, at);
        byte[] got;
        try {
            got = HEX.parseHex(sealed, at + LINE_MARK.length(), sealed.length());
        } catch (IllegalArgumentException e) {
            throw new Broken(n, "carries no MAC");
        }
        if (!MessageDigest.isEqual(mac(receiveMac, n, body.getBytes(StandardCharsets.UTF_8)), got)) {
            throw new Broken(n, "failed its MAC");
        }
        return body;
    }

    /**
     * Seals a binary frame: its bytes followed by its {@value #MAC_BYTES}-byte MAC.
     *
     * @param frame the frame's bytes
     * @return the bytes to send
     */
    public synchronized byte[] sealFrame(byte[] frame) {
        byte[] out = Arrays.copyOf(frame, frame.length + MAC_BYTES);
        System.arraycopy(mac(sendMac, sent++, frame), 0, out, frame.length, MAC_BYTES);
        return out;
    }

    /**
     * Opens a received binary frame (its bytes and the MAC at its end).
     *
     * @param sealed the bytes as received
     * @return the frame without its MAC
     * @throws Broken when the frame is shorter than a MAC or its MAC fails
     */
    public synchronized byte[] openFrame(byte[] sealed) throws Broken {
        long n = received++;
        if (sealed == null || sealed.length < MAC_BYTES) {
            throw new Broken(n, "is shorter than its MAC");
        }
        byte[] frame = Arrays.copyOf(sealed, sealed.length - MAC_BYTES);
        byte[] got = Arrays.copyOfRange(sealed, frame.length, sealed.length);
        if (!MessageDigest.isEqual(mac(receiveMac, n, frame), got)) {
            throw new Broken(n, "failed its MAC");
        }
        return frame;
    }

    /** @return how many records this side has sealed */
    public synchronized long sent() {
        return sent;
    }

    /** @return how many records this side has opened (or tried to) */
    public synchronized long received() {
        return received;
    }

    private byte[] mac(Mac m, long n, byte[] body) {
        for (int i = 7; i >= 0; i--) {
            seq[i] = (byte) n;
            n >>>= 8;
        }
        m.update(seq);
        return Arrays.copyOf(m.doFinal(body), MAC_BYTES);
    }

    @Override
    public String toString() {
        return "RecordSeal[sent " + sent() + ", received " + received() + ", keys not shown]";
    }

    /** A record that failed: the connection is to be closed (one WARN line), as nothing later on it can be trusted. */
    public static final class Broken extends IOException {
        private static final long serialVersionUID = 1L;
        private final long record;

        Broken(long record, String what) {
            super("record #" + record + " after the handshake " + what + " (forged, replayed, reordered or altered on"
                    + " the way)");
            this.record = record;
        }

        /** @return the failed record's number in its direction, from 0 after the handshake */
        public long record() {
            return record;
        }
    }
}
