package org.nccl4j.control;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import org.nccl4j.RankPhase;
import org.nccl4j.launch.JobSecret;
import org.nccl4j.launch.RecordSeal;

/**
 * The liveness channel's wire: the lines both sides send, how each is built and read, their bounds, and the reader
 * that keeps a connection's lines bounded ({@link LineReader}). No I/O but the reader's; rank 0's side is
 * {@link LivenessHub}, a rank's {@link LivenessClient}, the facade the rest of the core calls {@link Liveness}.
 *
 * <p>The handshake: rank 0 says {@code CHALLENGE <serverNonce>} on accept when it holds the job's secret (else
 * {@value #OPEN}); the rank answers {@code AUTH <clientNonce> <proof>} (purpose {@value #PURPOSE}, side
 * {@code client}), rank 0 {@code OK <proof>} (side {@code server}); then the rank says
 * {@code HELLO <rank> <host> <pid>}. With a secret, every line after {@code OK}, both ways, travels sealed as
 * {@code <line> ~<MAC>} ({@link RecordSeal}, purpose {@value #PURPOSE}; {@link #seal}, {@link #open}); without one,
 * as it is.
 *
 * <p>A rank's lines: {@code PING} (or {@code PING <generation> <last collective>} once its communicator is attached),
 * {@code PHASE <phase>}, {@code FP <g> <n> <fingerprint|?> <last>}, {@code OPS <g> <from> <to> <shape>...},
 * {@code DEPART <g> <kind> <last>[:<fingerprint>] <name> <cause...>}, {@code CAUSE <text>} and {@code BYE}.
 *
 * <p>Rank 0's lines: {@code JOINED <rank> <host> <pid>}, {@code PING}, {@code PHASE <phase>} (its own),
 * {@code LOST <rank> <host> <pid> <phase> <how...>}, {@code LEFT 0}, {@code DEPARTED <rank> <host> <pid> <g> <kind>
 * <last> <name> <cause...>}, {@code CAUSED <rank> <text>}, {@code AHEAD <g> <n>}, {@code CHECK <g> <n>},
 * {@code DESCRIBE <g> <from> <to>} and {@code MISMATCH <g> <text>}.
 *
 * <p>Bounds: a line before the hello is at most {@value #MAX_EARLY_LINE} bytes, a rank's line at most
 * {@value #MAX_RANK_LINE} ({@code OPS}: {@value #MAX_OPS_LINE}), rank 0's at most {@value #MAX_LINE}; a cause is cut
 * to {@value #CAUSE_CHARS} characters.
 */
final class LivenessWire {
    /** The longest line a rank reads from rank 0 (a cause is cut to {@value #CAUSE_CHARS} characters). */
    static final int MAX_LINE = 16 * 1024;
    /** The longest line rank 0 reads from a rank, but for {@code OPS}. */
    static final int MAX_RANK_LINE = 4 * 1024;
    /** The longest {@code OPS} line: {@link Agreement#WINDOW} shapes of at most 70 characters each. */
    static final int MAX_OPS_LINE = 128 + Agreement.WINDOW * 72;
    /** What rank 0 without a secret says on accept, where one with the secret says {@code CHALLENGE}. */
    static final String OPEN = "OPEN";
    /**
     * Rank 0's answer to a wrong {@code AUTH} proof, written before it closes the connection: the rank stops trying
     * (its secret differs). A connection closed after the proof without it was let go for another (a full house of
     * connections waiting) or by a restarting rank 0: the rank tries again.
     */
    static final String DENIED = "DENIED";
    /**
     * A sealed line either side sends before it closes a joined rank's connection on which a line failed its check (a
     * record forged, replayed or reordered on the way): the rank connects again with a new handshake, and rank 0 waits
     * up to {@link LivenessHub#REJOIN_MILLIS} ms for it before telling its loss. A check that fails says nothing of the
     * rank's health, and the sealed lines that follow are as trustworthy as the first ones were.
     */
    static final String AGAIN = "AGAIN";
    /**
     * A rank asks rank 0 for the start-up's unique id, its id frame from the rendezvous having failed its check;
     * rank 0 answers {@code UNIQUEID <hex>} (sealed, as every line with a secret) once it has one.
     */
    static final String ID_ASK = "IDASK";
    /** Rank 0's answer to {@link #ID_ASK}: {@code UNIQUEID <the id in hex>}. */
    static final String ID_IS = "UNIQUEID";
    /** The longest line before the hello ({@code CHALLENGE}, {@code AUTH}, {@code OK}, {@code HELLO}). */
    static final int MAX_EARLY_LINE = 512;
    /** What the proofs of the channel's challenge and response are bound to. */
    static final String PURPOSE = "liveness";
    /** The longest cause sent. */
    static final int CAUSE_CHARS = 400;
    /** Rank 0's goodbye: it closes on purpose, so the end of its connection is no loss. */
    static final String LEFT_0 = "LEFT 0";
    /** A rank's goodbye. */
    static final String BYE = "BYE";
    /** A heartbeat before a communicator is attached (and rank 0's). */
    static final String PING = "PING";
    /** What a seal adds to a line after the handshake: {@code " ~"} and the MAC in hex. */
    static final int SEAL_CHARS = RecordSeal.LINE_MARK.length() + 2 * RecordSeal.MAC_BYTES;

    private LivenessWire() {
    }

    // ------------------------------------------------------------------ the handshake

    /** {@code CHALLENGE <serverNonce>}. */
    static String challenge(String serverNonce) {
        return "CHALLENGE " + serverNonce + "\n";
    }

    /** {@code AUTH <clientNonce> <proof>}: the rank's answer to {@code CHALLENGE <serverNonce>}. */
    static String auth(JobSecret secret, String serverNonce, String clientNonce) {
        return "AUTH " + clientNonce + " " + secret.prove(PURPOSE, serverNonce, clientNonce, "client") + "\n";
    }

    /** {@code OK <proof>}: rank 0's proof, after the rank's. */
    static String ok(JobSecret secret, String serverNonce, String clientNonce) {
        return "OK " + secret.prove(PURPOSE, serverNonce, clientNonce, "server") + "\n";
    }

    /**
     * The client nonce of an {@code AUTH} line that proves {@code secret} for {@code serverNonce}, or null when it
     * does not (malformed, or a wrong proof).
     */
    static String authenticated(JobSecret secret, String serverNonce, String line) {
        String[] a = line.split(" ", -1);
        if (a.length != 3 || !a[0].equals("AUTH") || !hex(a[1]) || !hex(a[2])
                || !secret.verify(PURPOSE, serverNonce, a[1], "client", a[2])) {
            return null;
        }
        return a[1];
    }

    /** Whether {@code line} is an {@code OK} line that proves {@code secret} for these nonces. */
    static boolean proves(JobSecret secret, String serverNonce, String clientNonce, String line) {
        return line.startsWith("OK ") && secret.verify(PURPOSE, serverNonce, clientNonce, "server", line.substring(3));
    }

    /** {@code HELLO <rank> <host> <pid>} of this process. */
    static String hello(int rank) {
        return "HELLO " + rank + " " + org.nccl4j.trace.TraceDump.localHost().replace(' ', '_') + " "
                + ProcessHandle.current().pid() + "\n";
    }

    /**
     * The fields of a well-formed {@code HELLO <rank> <host> <pid>}: a rank, a printable host and a pid.
     *
     * @throws Refused naming the line when it is malformed
     */
    static String[] parseHello(String line) throws Refused {
        String[] hello = line.split(" ", -1);
        try {
            Integer.parseInt(hello[1]);
            if (hello.length != 4 || hello[2].isEmpty() || !hello[2].chars().allMatch(c -> c > ' ' && c < 127)) {
                throw new NumberFormatException();
            }
            Long.parseLong(hello[3]);
        } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
            throw new Refused("its hello is malformed: '" + printable(line, 80) + "'");
        }
        return hello;
    }

    // ------------------------------------------------------------------ rank 0's lines

    /** {@code JOINED <rank> <host> <pid>} of a hello's fields. */
    static String joined(String[] hello) {
        return "JOINED " + hello[1] + " " + hello[2] + " " + hello[3] + "\n";
    }

    /** {@code LOST <rank> <host> <pid> <phase> <how...>}: a reader of the first four fields reads them unchanged. */
    static String lost(String[] hello, RankPhase was, String how) {
        return "LOST " + hello[1] + " " + hello[2] + " " + hello[3] + " " + wire(was) + " " + how + "\n";
    }

    /** {@code DEPARTED <rank> <host> <pid> <rest of DEPART>}. */
    static String departed(int who, String host, String pid, String rest) {
        return "DEPARTED " + who + " " + host + " " + pid + " " + rest + "\n";
    }

    /** {@code CAUSED <rank> <text>}. */
    static String caused(int who, String text) {
        return "CAUSED " + who + " " + text + "\n";
    }

    /** {@code AHEAD <g> <n>}. */
    static String ahead(Object generation, long n) {
        return "AHEAD " + generation + " " + n + "\n";
    }

    /** {@code MISMATCH <g> <text>} ({@code text} begins with the generation, as {@link Agreement} says it). */
    static String mismatch(String text) {
        return "MISMATCH " + text + "\n";
    }

    /** {@code PHASE <phase>}. */
    static String phase(RankPhase p) {
        return "PHASE " + wire(p) + "\n";
    }

    /** A phase's name on the channel: its constant's, lower case, with dashes ({@code nccl-init}, {@code id-taken}). */
    static String wire(RankPhase p) {
        return p.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** The phase named {@code wire} on the channel (in any case), or null when it names none. */
    static RankPhase phaseOf(String wire) {
        if (wire == null) {
            return null;
        }
        for (RankPhase p : RankPhase.values()) {
            if (wire(p).equals(wire.toLowerCase(Locale.ROOT))) {
                return p;
            }
        }
        return null;
    }

    /**
     * The rank, host and pid of a {@code JOINED} or {@code LOST} line's fields (split at spaces), or null when they
     * cannot be read.
     */
    static RankProcess parse(String[] f) {
        try {
            return new RankProcess(Integer.parseInt(f[1]), f.length > 2 ? f[2] : null,
                    f.length > 3 ? Long.parseLong(f[3]) : -1);
        } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
            return null;
        }
    }

    // ------------------------------------------------------------------ a rank's lines

    /** {@code PING}, or {@code PING <generation> <last collective>} for an attached communicator. */
    static String ping(Attached c) {
        return c == null ? PING + "\n" : PING + " " + c.generation() + " " + c.ledger().last() + "\n";
    }

    /** {@code FP <g> <n> <fingerprint|?> <last>}: the answer to {@code CHECK <g> <n>}. */
    static String fingerprint(int generation, long n, Long fingerprint, long last) {
        return "FP " + generation + " " + n + " " + (fingerprint == null ? "?" : Long.toHexString(fingerprint)) + " "
                + last + "\n";
    }

    /** {@code OPS <g> <from> <to> <shape>...}: the answer to {@code DESCRIBE <g> <from> <to>}. */
    static String ops(int generation, long from, long to, Ledger ledger) {
        StringBuilder sb = new StringBuilder("OPS ").append(generation).append(' ').append(from).append(' ').append(to);
        for (long n = from; n <= to; n++) {
            Ledger.Shape sh = ledger.shape(n);
            sb.append(' ').append(sh == null ? "?" : sh.wire());
        }
        return sb.append('\n').toString();
    }

    /** The part of a {@code DEPART} line after its word: {@code <g> <kind> <last>[:<fp>] <name>[ <cause>]}. */
    static String departure(Departures.Kind kind, int generation, long last, String lastName, String cause,
            String fingerprint) {
        return generation + " " + kind.name().toLowerCase(java.util.Locale.ROOT) + " " + last
                + (fingerprint == null ? "" : ":" + fingerprint) + " "
                + lastName.replace(" #", "#").replace(' ', '_') + (cause == null ? "" : " " + oneLine(cause));
    }

    /**
     * The departure of a {@code DEPARTED} line's part after its word ({@code <rank> <host> <pid> <g> <kind> <last>
     * <name> <cause...>}), heard at {@code nanos}.
     *
     * @throws RuntimeException when it cannot be read
     */
    static Departures.Departure parseDeparted(String rest, long nanos) {
        String[] g = rest.split(" ", 8);
        int who = Integer.parseInt(g[0]);
        Departures.Kind kind = Departures.Kind.valueOf(g[4].toUpperCase(java.util.Locale.ROOT));
        String cause = g.length > 7 && !g[7].isBlank() ? g[7] : null;
        String[] lastAndFingerprint = g[5].split(":");
        return new Departures.Departure(who, g[1], Long.parseLong(g[2]), kind, Integer.parseInt(g[3]),
                Long.parseLong(lastAndFingerprint[0]), g[6].replace("#", " #").replace('_', ' '), cause, nanos);
    }

    /** The fingerprint a {@code DEPARTED} line's part after its word carries ({@code <last>:<fp>}), or null. */
    static String departedFingerprint(String rest) {
        String[] lastAndFingerprint = rest.split(" ", 8)[5].split(":");
        return lastAndFingerprint.length > 1 ? lastAndFingerprint[1] : null;
    }

    // ------------------------------------------------------------------ sealed lines

    /**
     * {@code data}'s lines (each ending in a newline), each sealed in turn: call under the connection's lock, and
     * write the result before anything sealed later (the numbers are implicit).
     */
    static ByteBuffer seal(RecordSeal seal, ByteBuffer data) {
        ByteBuffer d = data.duplicate();
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(d.remaining() + 2 * SEAL_CHARS);
        byte[] bytes = new byte[d.remaining()];
        d.get(bytes);
        int from = 0;
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] == '\n') {
                out.writeBytes(seal.seal(new String(bytes, from, i - from, StandardCharsets.UTF_8) + "\n")
                        .getBytes(StandardCharsets.UTF_8));
                from = i + 1;
            }
        }
        return ByteBuffer.wrap(out.toByteArray());
    }

    /**
     * The line a sealed one carries.
     *
     * @throws Refused when it fails to open (forged, replayed, reordered or altered): the connection is closed
     */
    static String open(RecordSeal seal, String sealed) throws Refused {
        try {
            return seal.open(sealed);
        } catch (RecordSeal.Broken e) {
            throw new Refused(e.getMessage());
        }
    }

    // ------------------------------------------------------------------ text

    /** Whether {@code s} is a nonce or a proof: {@value JobSecret#NONCE_BYTES} bytes in lower-case hex. */
    static boolean hex(String s) {
        return s.length() == 2 * JobSecret.NONCE_BYTES && s.chars().allMatch(c -> c >= '0' && c <= '9'
                || c >= 'a' && c <= 'f');
    }

    /** At most {@code max} characters of {@code text} for a log line, anything unprintable as {@code ?}. */
    static String printable(String text, int max) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < text.length() && i < max; i++) {
            char c = text.charAt(i);
            sb.append(c >= ' ' && c < 127 ? c : '?');
        }
        return text.length() > max ? sb.append("...").toString() : sb.toString();
    }

    /** One line of at most {@value #CAUSE_CHARS} characters. */
    static String oneLine(String text) {
        return cut(text.replace('\r', ' ').replace('\n', ' ').trim(), CAUSE_CHARS);
    }

    /** At most {@code max} characters of {@code text}, cut with {@code ...}. */
    static String cut(String text, int max) {
        return text.length() <= max ? text : text.substring(0, max - 3) + "...";
    }

    /** A refusal: a line or a connection that is not accepted; on a rank's side, one that retrying cannot mend. */
    static final class Refused extends IOException {
        private static final long serialVersionUID = 1L;
        /** A connection that ended without sending a byte (a port probe): said at DEBUG only. */
        final boolean silent;

        Refused(String message) {
            this(message, false);
        }

        Refused(String message, boolean silent) {
            super(message);
            this.silent = silent;
        }
    }

    /**
     * Reads lines from a socket without holding more than a bounded number of bytes: a line longer than asked ends the
     * reading ({@link Refused}); with a deadline, the reads of one line stop when it passes (a peer that trickles bytes
     * cannot hold the connection longer).
     */
    static final class LineReader {
        private final Socket socket;
        private final InputStream in;
        private final byte[] buffer = new byte[4096];
        private final byte[] line;
        private int pos;
        private int end;
        private boolean ended;
        private boolean any;

        LineReader(Socket socket, int longest) throws IOException {
            this.socket = socket;
            this.in = socket.getInputStream();
            this.line = new byte[longest];
        }

        /**
         * The next line (UTF-8, without its newline), or null at the end of the stream (a line cut by the end is
         * dropped).
         *
         * @param max the most bytes of the line, at most the reader's longest
         * @param deadlineNanos when to give up ({@link System#nanoTime()}), or 0 for the socket's own timeout
         * @throws Refused for a longer line
         * @throws SocketTimeoutException when the deadline or the socket's timeout passes first
         */
        String readLine(int max, long deadlineNanos) throws IOException {
            int n = 0;
            while (true) {
                if (pos == end) {
                    if (deadlineNanos != 0) {
                        long left = (deadlineNanos - System.nanoTime()) / 1_000_000L;
                        if (left <= 0) {
                            throw new SocketTimeoutException("the deadline passed");
                        }
                        socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
                    }
                    int r = in.read(buffer, 0, buffer.length);
                    if (r < 0) {
                        ended = true;
                        return null;
                    }
                    pos = 0;
                    end = r;
                    any |= r > 0;
                }
                byte b = buffer[pos++];
                if (b == '\n') {
                    return new String(line, 0, n, StandardCharsets.UTF_8);
                }
                if (n >= Math.min(max, line.length)) {
                    throw new Refused("it sent a line longer than " + Math.min(max, line.length) + " bytes");
                }
                line[n++] = b;
            }
        }

        /** @return whether nothing at all has been read from the connection */
        boolean silent() {
            return !any;
        }

        /** @return whether the stream ended */
        boolean ended() {
            return ended;
        }
    }
}
