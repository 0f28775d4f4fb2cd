package org.nccl4j.control;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import org.nccl4j.RankPhase;
import org.nccl4j.control.LivenessWire.LineReader;
import org.nccl4j.control.LivenessWire.Refused;
import org.nccl4j.launch.JobSecret;
import org.nccl4j.launch.RecordSeal;

/**
 * A rank's side of the liveness channel (rank 0's too: it joins its own hub as every rank does): connects to rank 0
 * and joins (the challenge and response when there is a secret, then {@code HELLO}), reads rank 0's lines on a thread
 * of its own and acts on them (the roster, losses, departures, comparisons), and sends this rank's heartbeat every
 * second ({@link #pingLoop}). The lines are {@link LivenessWire}'s; the state it fills is the facade's,
 * {@link Liveness}.
 */
final class LivenessClient {
    /** The facade whose roster, losses, phases and departures this side fills. */
    private final ChannelState l;
    /** The connection to rank 0 once joined, else null. */
    private volatile Conn toServer;
    /** Rank 0 closed its side on purpose ({@code LEFT 0}): the end of its connection is not a loss. */
    private volatile boolean serverLeft;
    /** Rank 0 refused this rank, or this rank refused rank 0 (the secret): retrying cannot help. */
    private volatile String refusal;
    private volatile String failedToConnect;
    /** Where rank 0's channel is, once connected: a connection closed after a failed check is made again there. */
    private volatile String serverHost;
    private volatile int serverPort;

    LivenessClient(ChannelState l) {
        this.l = l;
    }

    /** @return the connection to rank 0 once joined, else null */
    Socket socket() {
        Conn c = toServer;
        return c == null ? null : c.socket;
    }

    /**
     * One connection to rank 0: its socket and, with a secret, the seal of its lines after the handshake. A line is
     * sealed and written under the socket's lock, so that the sequence numbers follow the order of the writes
     * whichever thread writes (the heartbeat, the reader's answers, the program's departure).
     */
    private static final class Conn {
        final Socket socket;
        volatile RecordSeal seal;

        Conn(Socket socket) {
            this.socket = socket;
        }
    }

    /** @return why joining was refused (retrying cannot help), or null */
    String refusal() {
        return refusal;
    }

    /** @return why the background connection gave up, or null */
    String failedToConnect() {
        return failedToConnect;
    }

    /**
     * Connects in the background, retrying until {@code deadlineNanos} ({@link System#nanoTime()}); a refusal for the
     * secret ends the tries ({@link #refusal()}).
     */
    void joinLater(String host, int port, long deadlineNanos) {
        ChannelState.daemon(() -> {
            Tries tries;
            try {
                tries = connectUntil(host, port, deadlineNanos, JOIN_BACKOFF_MILLIS);
            } catch (Refused e) {
                refusal = e.getMessage();
                failedToConnect = e.getMessage();
                ChannelState.LOG.error("nccl4j liveness: {}", e.getMessage());
                return;
            }
            if (!tries.connected() && !l.closing) {
                failedToConnect = "rank 0's liveness channel at " + host + ":" + port + " did not answer"
                        + (tries.last() == null ? "" : " (" + tries.last() + ")");
            }
        }, "nccl4j-liveness-connect-" + l.rank);
    }

    /** How the tries to connect ended: connected, or not, with the last failure (null when none was made). */
    private record Tries(boolean connected, IOException last) {
    }

    /**
     * The longest pause between two tries of the first join: rank 0's channel usually comes up while the other ranks
     * try (their JVMs start together), and each pause is time a rank's loss could not be told; a refused connection
     * costs little, even from thousands of ranks.
     */
    static final long JOIN_BACKOFF_MILLIS = 100;

    /** The longest pause between two tries of a reconnection: rank 0 is busy, or starting again. */
    static final long REJOIN_BACKOFF_MILLIS = 500;

    /**
     * {@link #connect} until it succeeds or {@code deadlineNanos} passes, trying again after each failure with a
     * backoff of 20 ms doubling to {@code maxBackoffMillis}; a refusal ends the tries.
     *
     * @throws Refused when rank 0 refused this rank, or this rank rank 0 (the secret): trying again cannot help
     */
    private Tries connectUntil(String host, int port, long deadlineNanos, long maxBackoffMillis) throws Refused {
        long backoff = 20;
        IOException last = null;
        while (!l.closing && System.nanoTime() < deadlineNanos) {
            try {
                int left = (int) Math.max(1, Math.min(5_000, (deadlineNanos - System.nanoTime()) / 1_000_000));
                connect(host, port, left);
                return new Tries(true, null);
            } catch (Refused e) {
                throw e;
            } catch (IOException e) {
                last = e;
                ChannelState.sleep(backoff);
                backoff = Math.min(maxBackoffMillis, backoff * 2);
            }
        }
        return new Tries(false, last);
    }

    /**
     * Connects, authenticates when there is a secret ({@code CHALLENGE}, {@code AUTH}, {@code OK}), says hello and
     * reads rank 0's welcome; then reads rank 0's lines on a thread of its own.
     */
    void connect(String host, int port, int timeoutMillis) throws IOException {
        Socket socket = new Socket();
        Conn s = new Conn(socket);
        String where = "rank 0's liveness channel at " + host + ":" + port;
        int rank = l.rank;
        JobSecret secret = l.secret;
        long helloMillis = l.helloMillis;
        String first;
        LineReader in;
        try {
            socket.connect(new InetSocketAddress(host, port), timeoutMillis);
            socket.setTcpNoDelay(true);
            in = new LineReader(socket, LivenessWire.MAX_LINE + LivenessWire.SEAL_CHARS);
            long deadline = System.nanoTime() + helloMillis * 1_000_000L;
            if (secret != null) {
                // a rank 0 without the secret says OPEN at once: that is the refusal; silence is a rank 0 too busy
                // to answer yet (thousands of ranks arriving together), and the connection is tried again
                String challenge = quietly(in, deadline);
                if (challenge == null) {
                    throw new IOException(where + " sent no CHALLENGE (" + (in.ended() ? "it closed the connection"
                            : "nothing within " + helloMillis + " ms") + "); rank " + rank + " tries again");
                }
                if (!challenge.startsWith("CHALLENGE ")) {
                    String got = challenge.equals(LivenessWire.OPEN) ? "it runs without a secret"
                            : "'" + LivenessWire.printable(challenge, 60) + "'";
                    throw new Refused(where + " sent no CHALLENGE (" + got + "): rank " + rank + " has "
                            + JobSecret.VARIABLE + " but rank 0 runs without it; give every rank the same "
                            + JobSecret.VARIABLE + ", or none");
                }
                String serverNonce = challenge.substring("CHALLENGE ".length());
                String clientNonce = JobSecret.nonce();
                write(s, LivenessWire.auth(secret, serverNonce, clientNonce));
                String ok = quietly(in, deadline);
                if (LivenessWire.DENIED.equals(ok)) {
                    throw new Refused(where + " refused rank " + rank + "'s proof: its " + JobSecret.VARIABLE
                            + " differs from this rank's (every rank of the job needs the same one)");
                }
                if (ok == null) {   // let go for another connection (a full house), or a rank 0 starting again
                    throw new IOException(where + " answered rank " + rank + "'s proof with " + (in.ended()
                            ? "the end of the connection" : "nothing within " + helloMillis + " ms") + "; rank "
                            + rank + " tries again");
                }
                if (!LivenessWire.proves(secret, serverNonce, clientNonce, ok)) {
                    throw new Refused(where + " could not prove it holds " + JobSecret.VARIABLE + ": it is not this "
                            + "job's rank 0, or its secret differs; rank " + rank + " does not join it");
                }
                // from here on every line, both ways, is sealed (RecordSeal): forged, replayed or reordered ones fail
                s.seal = RecordSeal.of(secret, LivenessWire.PURPOSE, serverNonce, clientNonce, false);
            }
            write(s, LivenessWire.hello(rank));
            first = quietly(in, deadline);
            if (first != null && s.seal != null) {
                try {
                    first = s.seal.open(first);
                } catch (RecordSeal.Broken e) {
                    throw new IOException(where + " sent a welcome that " + e.getMessage() + "; rank " + rank
                            + " tries again");
                }
            }
            if (LivenessWire.OPEN.equals(first)) {   // rank 0 without a secret, as this rank: its welcome follows
                first = quietly(in, deadline);
            }
            if (first != null && first.startsWith("CHALLENGE ")) {
                throw new Refused(where + " asks for the job's secret, but rank " + rank + " has no "
                        + JobSecret.VARIABLE + ": give every rank the same " + JobSecret.VARIABLE + " (or "
                        + JobSecret.FILE_VARIABLE + ")");
            }
            if (first == null) {
                throw new IOException(where + " did not welcome rank " + rank + " (it refused its hello: see rank 0's "
                        + "log)");
            }
            socket.setSoTimeout(l.timeoutMillis);
        } catch (IOException e) {
            ChannelState.closeQuietly(socket);
            throw e;
        }
        serverHost = host;
        serverPort = port;
        toServer = s;
        fromServer(s, first);
        // a heartbeat at once: without a secret, the hub tells a loss only of a connection that said something after
        // its hello (a stranger's bare claim that drops is not a rank's death)
        write(s, "PING\n");
        RankPhase now = l.phase;
        if (now != RankPhase.JOINED && !l.serves()) {   // the phase it reached while connecting
            write(s, LivenessWire.phase(now));
        }
        ChannelState.daemon(() -> listen(s, in), "nccl4j-liveness-" + rank);
    }

    /** A line before {@code deadline}, or null when the connection ends or the deadline passes first. */
    private static String quietly(LineReader in, long deadline) throws IOException {
        try {
            return in.readLine(LivenessWire.MAX_LINE + LivenessWire.SEAL_CHARS, deadline);
        } catch (SocketTimeoutException e) {
            return null;
        }
    }

    /** Reads rank 0's lines; the end of the connection, or its silence, means rank 0 is gone. */
    private void listen(Conn s, LineReader in) {
        String why = "its connection ended";
        boolean said = false;
        boolean again = false;
        try {
            String line;
            int max = LivenessWire.MAX_LINE + (s.seal == null ? 0 : LivenessWire.SEAL_CHARS);
            while ((line = in.readLine(max, 0)) != null) {
                RecordSeal seal = s.seal;
                String opened = seal == null ? line : seal.open(line);
                if (LivenessWire.AGAIN.equals(opened) && seal != null) {   // rank 0 refused one of this rank's lines
                    why = "rank 0 closed the connection after a line from this rank failed its check";
                    again = true;
                    break;
                }
                fromServer(s, opened);
            }
        } catch (RecordSeal.Broken e) {
            // one line at WARN (through the refusals): nothing later on this connection can be trusted; with a secret
            // (the only way a line has a check) the rank tells rank 0, closes it, connects again with a new handshake
            why = "a line on its connection failed its check (" + e.getMessage() + ")";
            said = true;
            again = s.seal != null && l.rank != 0;
            if (!l.closing) {
                l.said.refused("nccl4j liveness: rank " + l.rank + " refused a line on rank 0's connection: "
                        + e.getMessage() + "; it closes the connection" + (again ? " and connects again"
                        : l.rank != 0 ? " and takes rank 0 for lost" : ""));
            }
            if (again) {
                try {
                    write(s, LivenessWire.AGAIN + "\n");
                } catch (IOException w) {
                    // rank 0 learns from the end of the connection
                }
            }
        } catch (SocketTimeoutException e) {
            why = "it sent nothing for " + l.timeoutMillis + " ms (no heartbeat: stopped, or its host unreachable)";
        } catch (IOException e) {
            // as the end of the stream
        }
        ChannelState.closeQuietly(s.socket);
        if (again && !l.closing && !serverLeft && l.rank != 0 && connectAgain(why)) {
            return;
        }
        if (!l.closing && !serverLeft && l.rank != 0) {
            l.lostRankZero(why, !said);
        }
    }

    /**
     * Connects to rank 0 again after a line failed its check, with a new handshake (and so new keys), for up to
     * {@link LivenessHub#REJOIN_MILLIS} ms, as long as rank 0 waits for it.
     *
     * @return whether this rank is connected again (a new reader runs); false: rank 0 is taken for lost
     */
    private boolean connectAgain(String why) {
        long start = System.nanoTime();
        try {
            if (connectUntil(serverHost, serverPort, start + LivenessHub.REJOIN_MILLIS * 1_000_000L,
                    REJOIN_BACKOFF_MILLIS).connected()) {
                ChannelState.LOG.info("nccl4j liveness: rank {} connected to rank 0 again after {} ms ({})", l.rank,
                        (System.nanoTime() - start) / 1_000_000, why);
                return true;
            }
        } catch (Refused e) {
            // rank 0 refused it: taken for lost, as when it does not answer
        }
        return false;
    }

    /** One line of rank 0's; a line it does not expect (a rank's, or the handshake's) is ignored. */
    private void fromServer(Conn s, String line) {
        if (line.startsWith("LOST ")) {
            l.lost(line.split(" ", 6));
            l.news("rank " + line.split(" ")[1] + " is lost");
        } else if (line.startsWith("PHASE ")) {   // rank 0's own phase
            RankPhase said = LivenessWire.phaseOf(line.substring("PHASE ".length()).trim());
            if (said != null) {
                l.phases.put(0, said);
            }
        } else if (line.startsWith("JOINED ")) {
            l.joined(line.split(" "));
        } else if (line.startsWith(LivenessWire.ID_IS + " ") && s.seal != null) {
            try {
                l.uniqueIdHeard.complete(java.util.HexFormat.of().parseHex(line.substring(LivenessWire.ID_IS.length()
                        + 1).trim()));
            } catch (IllegalArgumentException e) {
                l.said.refused("nccl4j liveness: a unique id from rank 0 it cannot read: "
                        + LivenessWire.cut(line, 80));
            }
        } else if (line.equals(LivenessWire.LEFT_0)) {
            serverLeft = true;
        } else if (!line.equals(LivenessWire.PING)) {
            heard(s, line);
        }
    }

    /** A line of rank 0's about departures, comparisons and mismatches. */
    private void heard(Conn s, String line) {
        String[] f = line.split(" ", 2);
        String rest = f.length > 1 ? f[1] : "";
        Departures departures = l.departures;
        int rank = l.rank;
        try {
            switch (f[0]) {
                case "DEPARTED": {
                    Departures.Departure d = LivenessWire.parseDeparted(rest, System.nanoTime());
                    int who = d.rank();
                    String fingerprint = LivenessWire.departedFingerprint(rest);
                    if (fingerprint != null) {
                        departures.fingerprint(who, fingerprint);
                    }
                    departures.heard(d);
                    if (who == 0) {
                        serverLeft = true;   // rank 0 left on purpose: the end of its connection is no loss
                    }
                    if (d.generation() == ChannelState.STARTUP_GENERATION && who != rank) {
                        l.goneAtStartUp(who, d.host(), d.pid());
                    }
                    if (d.kind() != Departures.Kind.CLOSE && who != rank) {
                        l.news("rank " + who + " " + d.kind().says + (d.cause() == null ? "" : ": " + d.cause()));
                    } else if (who != rank && toServer != null) {
                        write(toServer, heartbeat());   // at once: a closing rank learns now whether others went on
                    }
                    return;
                }
                case "CAUSED": {
                    String[] g = rest.split(" ", 2);
                    departures.cause(Integer.parseInt(g[0]), g.length > 1 ? g[1] : "");
                    return;
                }
                case "AHEAD": {
                    String[] g = rest.split(" ");
                    departures.reported(Long.parseLong(g[1]));
                    return;
                }
                case "MISMATCH": {
                    String[] g = rest.split(" ", 2);
                    departures.mismatch(Integer.parseInt(g[0]), g[1]);
                    l.news(g[1]);
                    return;
                }
                case "CHECK": {
                    String[] g = rest.split(" ");
                    Attached c = l.owner;
                    int gen = Integer.parseInt(g[0]);
                    if (c != null && c.generation() == gen) {
                        Ledger ledger = c.ledger();
                        long t = Long.parseLong(g[1]);
                        write(s, LivenessWire.fingerprint(gen, t, ledger.fingerprintAt(t), ledger.last()));
                    }
                    return;
                }
                case "DESCRIBE": {
                    String[] g = rest.split(" ");
                    Attached c = l.owner;
                    int gen = Integer.parseInt(g[0]);
                    long from = Long.parseLong(g[1]);
                    long to = Long.parseLong(g[2]);
                    if (c != null && c.generation() == gen && to - from < Agreement.WINDOW && to >= from) {
                        write(s, LivenessWire.ops(gen, from, to, c.ledger()));
                    }
                    return;
                }
                default:
                    return;
            }
        } catch (IOException e) {
            // the reader sees the end
        } catch (RuntimeException e) {
            // through the refusals' one line per burst: a flood of unreadable lines fills no log
            l.said.refused("nccl4j liveness: a line from rank 0 it cannot read: " + LivenessWire.cut(line, 200));
        }
    }

    /**
     * The heartbeat thread: a {@code PING} every second on this rank's connection and, for rank 0, on every rank's
     * ({@link LivenessHub#pingAll}), so that silence means a loss.
     */
    void pingLoop(LivenessHub hub) {
        long lastPing = 0;
        while (!l.closing) {
            ChannelState.sleep(hub != null ? Agreement.MIN_INTERVAL_MILLIS : ChannelState.PING_MILLIS);
            long now = System.currentTimeMillis();
            if (hub != null) {
                hub.tick(now);
                if (now - lastPing < ChannelState.PING_MILLIS - Agreement.MIN_INTERVAL_MILLIS / 2) {
                    continue;
                }
            }
            lastPing = now;
            Conn s = toServer;
            if (s != null) {   // rank 0's own connection to itself too
                try {
                    write(s, heartbeat());
                } catch (IOException e) {
                    // the reader sees the end
                }
            }
            if (hub != null) {
                hub.pingAll();
            }
        }
    }

    /** {@code PING}, with the communicator's generation and last collective once one is attached. */
    private String heartbeat() {
        Attached c = l.owner;
        return LivenessWire.ping(l.departed ? null : c);
    }

    /**
     * Sends {@code line} to rank 0 when connected (and not closing, unless {@code evenClosing}); a broken connection
     * is left to the reader, which sees its end.
     */
    void send(String line, boolean evenClosing) {
        Conn s = toServer;
        if (s != null && (evenClosing || !l.closing)) {
            try {
                write(s, line);
            } catch (IOException e) {
                // the reader sees the end
            }
        }
    }

    /** Says goodbye and closes the connection. */
    void close() {
        Conn s = toServer;
        if (s != null) {
            send(LivenessWire.BYE + "\n", true);
            ChannelState.closeQuietly(s.socket);
        }
    }

    /** For tests: the connection ends without a goodbye. */
    void drop() {
        Conn s = toServer;
        if (s != null) {
            ChannelState.closeQuietly(s.socket);
        }
    }

    /** Writes {@code line}, sealed when the connection has a seal: sealing and writing under one lock. */
    private static void write(Conn s, String line) throws IOException {
        synchronized (s.socket) {
            RecordSeal seal = s.seal;
            OutputStream out = s.socket.getOutputStream();
            out.write((seal == null ? line : seal.seal(line)).getBytes(StandardCharsets.UTF_8));
            out.flush();
        }
    }
}
