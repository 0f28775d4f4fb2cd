package org.nccl4j;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.nccl4j.launch.ProcessEnvironment;
import org.nccl4j.trace.TraceDump;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which ranks are here and which are gone: every rank keeps one TCP connection to rank 0 open for the life of its
 * communicator, so that a process that dies (its sockets closed by the kernel, whatever killed it) is known to all
 * within milliseconds and by its rank, host and pid, and a process or host that stops answering is known within the
 * heartbeat timeout. Rank 0 serves; it tells every rank who joined ({@code JOINED}), so that each rank has the roster
 * and can name the ranks that never arrived when making the communicator times out; when a rank's connection ends
 * without a goodbye, or its heartbeats stop, it tells every other rank {@code LOST <rank> <host> <pid>}; when rank 0
 * itself goes (or stops answering), every rank sees its connection end (or go quiet).
 *
 * <p>The lines: a rank sends {@code HELLO <rank> <host> <pid>} on connecting, {@code PING} every second and
 * {@code BYE} before closing; rank 0 sends {@code JOINED <rank> <host> <pid>} for every rank that said hello (the
 * earlier ones to a newcomer too), {@code PING} every second, {@code LOST ...}, and {@code LEFT 0} when it closes on
 * purpose. Silence for {@code NCCL4J_LIVENESS_TIMEOUT} (default 4 s, so that a loss is named within 5 s; raise it where
 * a JVM may pause longer, e.g. for a very large heap) is a loss.
 *
 * <p>Made by {@link Communicator#fromEnvironment} on {@code MASTER_ADDR} at {@code MASTER_PORT + 50}
 * (scripts/nccl4j-run, torchrun-style launches, plain {@code java}), or, where only {@code NCCL_COMM_ID} is set
 * (mpirun), on its host at its port + 50; {@code NCCL4J_LIVENESS_PORT} chooses another port.
 *
 * <p>Ranks are launch ranks (those of the communicator {@code fromEnvironment} made); after a recovery,
 * {@link #renumber(int[])} maps them to the new communicator's, and ranks left out are no longer reported.
 *
 * <h2>Departures and agreement</h2>
 * The channel also carries what makes every departure known with its facts, and what lets rank 0 compare the ranks'
 * collectives at no cost per operation. Once its communicator is attached ({@link #attach}), a rank's heartbeat is
 * {@code PING <generation> <last collective>}; rank 0 asks {@code CHECK <g> <n>}, answered by
 * {@code FP <g> <n> <fingerprint|?> <last>}, then, where fingerprints differ, {@code DESCRIBE <g> <from> <to>},
 * answered by {@code OPS <g> <from> <to> <shape>...}, and tells every rank {@code MISMATCH <g> <text>}
 * ({@link Agreement}). A rank that leaves says {@code DEPART <g> <kind> <last> <name> <cause>} (kind: close, abort,
 * failure, exit; name: its last collective, as {@code allReduce#3}); rank 0 tells every rank
 * {@code DEPARTED <rank> <host> <pid> <g> <kind> <last> <name> <cause>}; a cause that comes later (the exception
 * leaving the departed rank's main) is {@code CAUSE <text>}, relayed as {@code CAUSED <rank> <text>}; a closing
 * rank whose peers went on past its last collective is told {@code AHEAD <g> <n>} ({@link Departures}). A rank that
 * departed keeps its connection a moment ({@value #LINGER_MILLIS} ms) for its cause, then says goodbye.
 */
final class Liveness implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Liveness.class);
    /** The variable that sets the port. */
    static final String PORT_VARIABLE = "NCCL4J_LIVENESS_PORT";
    /** The variable that sets how long a silent connection is taken for a lost rank. */
    static final String TIMEOUT_VARIABLE = "NCCL4J_LIVENESS_TIMEOUT";
    /** Offset from MASTER_PORT (or NCCL_COMM_ID's port) when the variable is not set. */
    static final int PORT_OFFSET = 50;
    /** Silence taken for a loss when the variable is not set. */
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(4);
    /** How often each side says it is alive. */
    static final long PING_MILLIS = 1000;

    /** A rank that is (or was) in the job: its rank, host and process id. */
    record Lost(int rank, String host, long pid) {
        @Override
        public String toString() {
            return "rank " + rank + (host == null ? "" : " (" + host + ", pid " + pid + ")");
        }
    }

    private final int rank;
    private final int timeoutMillis;
    /** By launch rank. */
    private final Map<Integer, Lost> lost = new ConcurrentHashMap<>();
    /** By launch rank: every rank that said hello. */
    private final Map<Integer, Lost> roster = new ConcurrentHashMap<>();
    private final List<Socket> peers = new CopyOnWriteArrayList<>();
    /** Rank 0: the launch rank of each connection that said hello. */
    private final Map<Socket, Integer> rankOfSocket = new ConcurrentHashMap<>();
    /** launch rank -> rank of the communicator now served, -1 for a rank left out; null: the same. */
    private volatile int[] current;
    private ServerSocket server;
    private volatile Socket toServer;
    private volatile boolean closing;
    /** Rank 0 closed its side on purpose ({@code LEFT 0}): the end of its connection is not a loss. */
    private volatile boolean serverLeft;
    private volatile String failedToConnect;
    /** What this rank heard of departures and mismatches. */
    private final Departures departures = new Departures();
    /** The communicator the channel serves, once attached: its collectives are reported and compared. */
    private volatile Communicator owner;
    /** This rank said how it leaves ({@code DEPART}); its connection lingers for a cause. */
    private volatile boolean departed;
    private volatile Departures.Kind departedKind;
    /** The generation, last collective and its name of this rank's departure. */
    private volatile Object[] departedAs;
    /** Rank 0: the comparison of the ranks' collectives. */
    private Agreement agreement;
    /** Rank 0: by launch rank, the connection of every rank that said hello and has not departed or been lost. */
    private final Map<Integer, Socket> online = new ConcurrentHashMap<>();
    /** Rank 0: by launch rank, the last collective of each rank that is closing, to tell it when others go past. */
    private final Map<Integer, Long> closingAt = new ConcurrentHashMap<>();
    /** Rank 0: the highest collective number reported, per generation (the newest only). */
    private volatile long highest;
    private volatile int highestGeneration;
    /** Called (on the channel's reader thread) with a line of news: a peer failed, aborted, exited or diverged. */
    private volatile java.util.function.Consumer<String> onNews;
    /** How long a departed rank's connection stays open for the cause that may follow. */
    static final long LINGER_MILLIS = 2000;
    /** The longest line read from a peer (a cause is cut to {@value #CAUSE_CHARS} characters). */
    static final int MAX_LINE = 16 * 1024;
    /** The longest cause sent. */
    static final int CAUSE_CHARS = 400;

    private Liveness(int rank, Duration timeout) {
        this.rank = rank;
        this.timeoutMillis = (int) Math.max(2 * PING_MILLIS, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
    }

    /** The silence taken for a loss: {@code NCCL4J_LIVENESS_TIMEOUT}, else 4 s. */
    static Duration configuredTimeout() {
        String v = ProcessEnvironment.liveOrJvmCopy().get(TIMEOUT_VARIABLE);
        if (v == null || v.isBlank()) {
            return DEFAULT_TIMEOUT;
        }
        Duration d = Durations.parse(TIMEOUT_VARIABLE, v);
        if (d.toMillis() < 2 * PING_MILLIS) {
            throw new IllegalArgumentException(TIMEOUT_VARIABLE + "=" + v + " is shorter than two heartbeats ("
                    + 2 * PING_MILLIS + " ms): use 2s or more, e.g. 4s (the default) or 30s for long pauses");
        }
        return d;
    }

    /** Rank 0's side: listens on {@code port}; call before the communicator is made, so that it is up for all. */
    static Liveness serve(int port) throws IOException {
        return serve(port, configuredTimeout());
    }

    static Liveness serve(int port, Duration timeout) throws IOException {
        Liveness l = new Liveness(0, timeout);
        l.agreement = new Agreement(l::sendToRank, text -> l.broadcast("MISMATCH " + text + "\n"));
        l.server = new ServerSocket();
        l.server.setReuseAddress(true);
        l.server.bind(new InetSocketAddress(port));
        daemon(l::accept, "nccl4j-liveness-server");
        daemon(l::pingLoop, "nccl4j-liveness-ping");
        return l;
    }

    /** Every rank (rank 0 too): connects to rank 0 at {@code host:port} and says hello; waits for the connection. */
    static Liveness join(Liveness served, int rank, String host, int port) throws IOException {
        Liveness l = served != null ? served : new Liveness(rank, configuredTimeout());
        l.connect(host, port, 10_000);
        if (served == null) {
            daemon(l::pingLoop, "nccl4j-liveness-ping-" + rank);
        }
        return l;
    }

    /**
     * Every rank: connects in the background, retrying until {@code deadlineNanos} ({@link System#nanoTime()}), so that
     * making the communicator need not wait for rank 0's channel; {@link #connected()} tells when it is up.
     */
    static Liveness joinLater(Liveness served, int rank, String host, int port, long deadlineNanos) {
        Liveness l = served != null ? served : new Liveness(rank, configuredTimeout());
        daemon(() -> {
            long backoff = 20;
            IOException last = null;
            while (!l.closing && System.nanoTime() < deadlineNanos) {
                try {
                    int left = (int) Math.max(1, Math.min(5_000, (deadlineNanos - System.nanoTime()) / 1_000_000));
                    l.connect(host, port, left);
                    return;
                } catch (IOException e) {
                    last = e;
                    sleep(backoff);
                    backoff = Math.min(500, backoff * 2);
                }
            }
            if (!l.closing) {
                l.failedToConnect = "rank 0's liveness channel at " + host + ":" + port + " did not answer"
                        + (last == null ? "" : " (" + last + ")");
            }
        }, "nccl4j-liveness-connect-" + rank);
        if (served == null) {
            daemon(l::pingLoop, "nccl4j-liveness-ping-" + rank);
        }
        return l;
    }

    private void connect(String host, int port, int timeoutMillis) throws IOException {
        Socket s = new Socket();
        try {
            s.connect(new InetSocketAddress(host, port), timeoutMillis);
            s.setTcpNoDelay(true);
            s.setSoTimeout(this.timeoutMillis);
            write(s, "HELLO " + rank + " " + org.nccl4j.trace.TraceDump.localHost().replace(' ', '_') + " "
                    + ProcessHandle.current().pid() + "\n");
        } catch (IOException e) {
            closeQuietly(s);
            throw e;
        }
        toServer = s;
        daemon(() -> listen(s), "nccl4j-liveness-" + rank);
    }

    /** How long a rank tries to reach rank 0's channel when the rendezvous has shown that rank 0 is alive. */
    private static final long REACH_NANOS = 10_000_000_000L;

    /**
     * Waits until all {@code worldSize} ranks have said hello, or the deadline. When rank 0's channel cannot be
     * reached: with {@code mustReach} (NCCL_COMM_ID: nothing else shows that rank 0 is alive) that is a failure at the
     * deadline; otherwise (the rendezvous already met rank 0) it gives up after 10 s with a warning and returns true,
     * leaving a lost rank to NCCL's error and the watchdog.
     *
     * @return false when the deadline passed first
     */
    boolean awaitArrivals(int worldSize, long deadlineNanos, boolean mustReach) {
        long start = System.nanoTime();
        while (true) {
            if (roster.size() >= worldSize) {
                return true;
            }
            long now = System.nanoTime();
            if (!connected() && !mustReach && (now - start > REACH_NANOS || failedToConnect != null)) {
                LOG.warn("nccl4j liveness: rank {} could not reach rank 0's liveness channel ({}): going on without it;"
                        + " a lost rank is found by NCCL's error or the watchdog's timeout only", rank,
                        failedToConnect != null ? failedToConnect : "no answer within 10 s");
                return true;
            }
            if (now - deadlineNanos >= 0) {
                return false;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(2_000_000L);
        }
    }

    /** @return whether this rank's connection to rank 0 is up */
    boolean connected() {
        return toServer != null;
    }

    /** @return why the background connection gave up, or null */
    String failedToConnect() {
        return failedToConnect;
    }

    /** The ranks known to be gone (of the communicator now served), in rank order. */
    List<Lost> lost() {
        int[] map = current;
        List<Lost> out = new ArrayList<>();
        for (Lost l : new TreeMap<>(lost).values()) {
            int r = map == null ? l.rank() : l.rank() < map.length ? map[l.rank()] : -1;
            if (r >= 0) {
                out.add(r == l.rank() ? l : new Lost(r, l.host(), l.pid()));
            }
        }
        return out;
    }

    boolean anyLost() {
        return !lost.isEmpty() && !lost().isEmpty();
    }

    /** The ranks that said hello, by launch rank. */
    Map<Integer, Lost> roster() {
        return new TreeMap<>(roster);
    }

    /**
     * The launch ranks of {@code worldSize} that have not said hello; empty when this rank has no connection (it
     * cannot know).
     */
    List<Integer> neverArrived(int worldSize) {
        List<Integer> missing = new ArrayList<>();
        if (!connected()) {
            return missing;
        }
        for (int r = 0; r < worldSize; r++) {
            if (!roster.containsKey(r)) {
                missing.add(r);
            }
        }
        return missing;
    }

    /**
     * From now on ranks are those of the communicator made without {@code excluded} (ranks of the one served until
     * now): ranks keep their order and close the gaps; the excluded ones are no longer reported.
     */
    synchronized void renumber(int[] excluded) {
        int[] map = current;
        int n = Math.max(map == null ? 0 : map.length, 1 + roster.keySet().stream().mapToInt(i -> i).max().orElse(0));
        for (Lost l : lost.values()) {
            n = Math.max(n, l.rank() + 1);
        }
        for (int e : excluded) {
            n = Math.max(n, e + 1);
        }
        int[] next = new int[n];
        for (int launch = 0; launch < n; launch++) {
            int r = map == null ? launch : launch < map.length ? map[launch] : -1;
            if (r < 0) {
                next[launch] = -1;
                continue;
            }
            int below = 0;
            boolean out = false;
            for (int e : excluded) {
                out |= e == r;
                below += e < r ? 1 : 0;
            }
            next[launch] = out ? -1 : r - below;
        }
        current = next;
    }

    /** The rank in the communicator now served of launch rank {@code launch}, or -1 when it was left out. */
    int currentRank(int launch) {
        int[] map = current;
        return map == null ? launch : launch < map.length ? map[launch] : -1;
    }

    /** The launch rank that has rank {@code r} in the communicator now served, or -1. */
    int launchRank(int r) {
        int[] map = current;
        if (map == null) {
            return r;
        }
        for (int i = 0; i < map.length; i++) {
            if (map[i] == r) {
                return i;
            }
        }
        return -1;
    }

    private void accept() {
        while (!closing) {
            try {
                Socket s = server.accept();
                s.setTcpNoDelay(true);
                s.setSoTimeout(timeoutMillis);
                peers.add(s);
                daemon(() -> serveOne(s), "nccl4j-liveness-peer");
            } catch (IOException e) {
                if (!closing) {
                    LOG.warn("nccl4j liveness: rank 0 stopped accepting: {}", e.toString());
                }
                return;
            }
        }
    }

    /** Rank 0: reads one rank's lines until its connection ends; tells the others when it ends without BYE. */
    private void serveOne(Socket s) {
        boolean bye = false;
        String[] hello = null;
        int who = -1;
        String why = "its connection ended without a goodbye";
        try (BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = readLine(in)) != null) {
                if (line.startsWith("HELLO ")) {
                    hello = line.split(" ");
                    who = welcome(s, hello);
                } else if (line.equals("BYE")) {
                    bye = true;
                } else if (who >= 0) {
                    bye |= served(who, hello, line);
                }
            }
        } catch (SocketTimeoutException e) {
            why = "it sent nothing for " + timeoutMillis + " ms (no heartbeat: the process is stopped or its host "
                    + "is unreachable)";
        } catch (IOException e) {
            // the connection broke: the rank is gone unless it said goodbye
        }
        peers.remove(s);
        closeQuietly(s);
        if (who >= 0) {
            online.remove(who, s);
            closingAt.remove(who);
            agreement.left(who);
        }
        if (bye || closing || hello == null || hello.length < 4) {
            return;
        }
        LOG.warn("nccl4j liveness: rank {} ({}, pid {}) is lost: {}", hello[1], hello[2], hello[3], why);
        String message = "LOST " + hello[1] + " " + hello[2] + " " + hello[3] + "\n";
        lost(message.trim().split(" "));
        broadcast(message);
    }

    /**
     * Rank 0: one line of rank {@code who} after its hello. Returns true for a departure (the end of the connection is
     * then no loss).
     */
    private boolean served(int who, String[] hello, String line) {
        String[] f = line.split(" ", 2);
        String rest = f.length > 1 ? f[1] : "";
        try {
            switch (f[0]) {
                case "PING": {
                    if (!rest.isEmpty()) {
                        String[] g = rest.split(" ");
                        reportedBy(who, Integer.parseInt(g[0]), Long.parseLong(g[1]));
                    }
                    return false;
                }
                case "FP": {
                    String[] g = rest.split(" ");
                    int gen = Integer.parseInt(g[0]);
                    reportedBy(who, gen, Long.parseLong(g[3]));
                    agreement.fingerprint(who, gen, Long.parseLong(g[1]), g[2]);
                    return false;
                }
                case "OPS": {
                    String[] g = rest.split(" ");
                    String[] list = java.util.Arrays.copyOfRange(g, 3, g.length);
                    agreement.shapes(who, Integer.parseInt(g[0]), Long.parseLong(g[1]), Long.parseLong(g[2]), list);
                    return false;
                }
                case "DEPART":
                    relayDeparture(who, hello[2], hello[3], rest);
                    return true;
                case "CAUSE":
                    broadcast("CAUSED " + who + " " + rest + "\n");
                    return false;
                default:
                    return false;
            }
        } catch (RuntimeException e) {
            LOG.warn("nccl4j liveness: a line from rank {} it cannot read: {}", who, cut(line, 200));
            return false;
        }
    }

    /**
     * Rank 0: rank {@code who} leaves ({@code rest}: {@code <g> <kind> <last> <name> <cause...>}): it is no longer
     * compared, a closing rank is told when others went past its last collective, and every rank hears of it.
     */
    private void relayDeparture(int who, String host, String pid, String rest) {
        String[] g = rest.split(" ", 5);
        long last = Long.parseLong(g[2].split(":")[0]);
        online.remove(who);
        agreement.left(who);
        if (g[1].equals("close")) {
            closingAt.put(who, last);
            if (highest > last && highestGeneration == Integer.parseInt(g[0])) {
                sendToRank(who, "AHEAD " + g[0] + " " + highest + "\n");
            }
        }
        broadcast("DEPARTED " + who + " " + host + " " + pid + " " + rest + "\n");
    }

    /** Rank 0: rank {@code who} has issued up to collective #n of communicator {@code gen}. */
    private void reportedBy(int who, int gen, long n) {
        agreement.reported(who, gen, n);
        if (gen > highestGeneration) {
            highestGeneration = gen;
            highest = 0;
        }
        if (gen == highestGeneration && n > highest) {
            highest = n;
            for (Map.Entry<Integer, Long> c : closingAt.entrySet()) {
                if (n > c.getValue()) {
                    sendToRank(c.getKey(), "AHEAD " + gen + " " + n + "\n");
                }
            }
        }
    }

    /** Rank 0: a line to one rank's connection, or to every connection with rank -1. */
    private void sendToRank(int r, String line) {
        if (r < 0) {
            for (Socket p : online.values()) {
                try {
                    write(p, line);
                } catch (IOException e) {
                    // its reader reports it
                }
            }
            return;
        }
        Socket p = online.get(r);
        if (p == null) {
            for (Socket q : peers) {   // a closing rank is no longer online: find it among the connections
                Integer k = rankOfSocket.get(q);
                if (k != null && k == r) {
                    p = q;
                }
            }
        }
        if (p != null) {
            try {
                write(p, line);
            } catch (IOException e) {
                // its reader reports it
            }
        }
    }

    /** Reads a line of at most {@value #MAX_LINE} characters; a longer one ends the connection. */
    private static String readLine(BufferedReader in) throws IOException {
        StringBuilder sb = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                return sb.toString();
            }
            if (sb.length() >= MAX_LINE) {
                throw new IOException("a line longer than " + MAX_LINE + " characters");
            }
            sb.append((char) c);
        }
        return sb.length() == 0 ? null : sb.toString();
    }

    /** Rank 0: a newcomer gets the roster so far; everyone gets the newcomer. */
    private int welcome(Socket s, String[] hello) {
        if (hello.length < 4) {
            return -1;
        }
        int who;
        try {
            who = Integer.parseInt(hello[1]);
        } catch (NumberFormatException e) {
            return -1;
        }
        StringBuilder earlier = new StringBuilder();
        synchronized (roster) {
            joined(hello);
            for (Lost m : roster.values()) {
                earlier.append("JOINED ").append(m.rank()).append(' ').append(m.host()).append(' ').append(m.pid())
                        .append('\n');
            }
            try {
                write(s, earlier.toString());
            } catch (IOException e) {
                // its reader sees the end
            }
            String line = "JOINED " + hello[1] + " " + hello[2] + " " + hello[3] + "\n";
            for (Socket p : peers) {
                if (p != s) {
                    try {
                        write(p, line);
                    } catch (IOException e) {
                        // that one is going; its own reader reports it
                    }
                }
            }
        }
        online.put(who, s);
        rankOfSocket.put(s, who);
        return who;
    }

    private void broadcast(String message) {
        for (Socket p : peers) {
            try {
                write(p, message);
            } catch (IOException e) {
                // that one is going too; its own reader reports it
            }
        }
    }

    /** Every rank: reads rank 0's lines; the end of the connection, or its silence, means rank 0 is gone. */
    private void listen(Socket s) {
        String why = "its connection ended";
        try (BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = readLine(in)) != null) {
                if (line.startsWith("LOST ")) {
                    lost(line.split(" "));
                    news("rank " + line.split(" ")[1] + " is lost");
                } else if (line.startsWith("JOINED ")) {
                    joined(line.split(" "));
                } else if (line.equals("LEFT 0")) {
                    serverLeft = true;
                } else if (!line.equals("PING")) {
                    heard(s, line);
                }
            }
        } catch (SocketTimeoutException e) {
            why = "it sent nothing for " + timeoutMillis + " ms (no heartbeat: stopped, or its host unreachable)";
        } catch (IOException e) {
            // as the end of the stream
        }
        closeQuietly(s);
        if (!closing && !serverLeft && rank != 0) {
            Lost known = roster.get(0);
            lost.putIfAbsent(0, known != null ? known : new Lost(0, null, -1));
            LOG.warn("nccl4j liveness: rank {} lost rank 0{}: {}", rank,
                    known == null ? "" : " (" + known.host() + ", pid " + known.pid() + ")", why);
            news("rank 0 is lost");
        }
    }

    /** Every rank: a line of rank 0's about departures, comparisons and mismatches. */
    private void heard(Socket s, String line) {
        String[] f = line.split(" ", 2);
        String rest = f.length > 1 ? f[1] : "";
        try {
            switch (f[0]) {
                case "DEPARTED": {
                    // DEPARTED <rank> <host> <pid> <g> <kind> <last> <name> <cause...>
                    String[] g = rest.split(" ", 8);
                    int who = Integer.parseInt(g[0]);
                    Departures.Kind kind = Departures.Kind.valueOf(g[4].toUpperCase(java.util.Locale.ROOT));
                    String cause = g.length > 7 && !g[7].isBlank() ? g[7] : null;
                    String[] lastAndFingerprint = g[5].split(":");
                    if (lastAndFingerprint.length > 1) {
                        departures.fingerprint(who, lastAndFingerprint[1]);
                    }
                    departures.heard(new Departures.Departure(who, g[1], Long.parseLong(g[2]), kind,
                            Integer.parseInt(g[3]), Long.parseLong(lastAndFingerprint[0]),
                            g[6].replace("#", " #").replace('_', ' '), cause, System.nanoTime()));
                    if (who == 0) {
                        serverLeft = true;   // rank 0 left on purpose: the end of its connection is no loss
                    }
                    if (kind != Departures.Kind.CLOSE && who != rank) {
                        news("rank " + who + " " + kind.says + (cause == null ? "" : ": " + cause));
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
                    news(g[1]);
                    return;
                }
                case "CHECK": {
                    String[] g = rest.split(" ");
                    Communicator c = owner;
                    int gen = Integer.parseInt(g[0]);
                    if (c != null && c.generationForChannel() == gen) {
                        Ledger ledger = c.ledger();
                        long t = Long.parseLong(g[1]);
                        Long fp = ledger.fingerprintAt(t);
                        write(s, "FP " + gen + " " + t + " " + (fp == null ? "?" : Long.toHexString(fp)) + " "
                                + ledger.last() + "\n");
                    }
                    return;
                }
                case "DESCRIBE": {
                    String[] g = rest.split(" ");
                    Communicator c = owner;
                    int gen = Integer.parseInt(g[0]);
                    long from = Long.parseLong(g[1]);
                    long to = Long.parseLong(g[2]);
                    if (c != null && c.generationForChannel() == gen && to - from < Agreement.WINDOW && to >= from) {
                        Ledger ledger = c.ledger();
                        StringBuilder sb = new StringBuilder("OPS ").append(gen).append(' ').append(from).append(' ')
                                .append(to);
                        for (long n = from; n <= to; n++) {
                            Ledger.Shape sh = ledger.shape(n);
                            sb.append(' ').append(sh == null ? "?" : sh.wire());
                        }
                        write(s, sb.append('\n').toString());
                    }
                    return;
                }
                default:
                    return;
            }
        } catch (IOException e) {
            // the reader sees the end
        } catch (RuntimeException e) {
            LOG.warn("nccl4j liveness: a line from rank 0 it cannot read: {}", cut(line, 200));
        }
    }

    private void news(String what) {
        java.util.function.Consumer<String> n = onNews;
        if (n != null && !closing) {
            try {
                n.accept(what);
            } catch (RuntimeException e) {
                LOG.warn("nccl4j liveness: acting on news failed: {}", e.toString());
            }
        }
    }

    /** Both sides: a PING every second on every connection, so that silence means a loss. */
    private void pingLoop() {
        byte[] ping = "PING\n".getBytes(StandardCharsets.UTF_8);
        long lastPing = 0;
        while (!closing) {
            sleep(server != null ? Agreement.MIN_INTERVAL_MILLIS : PING_MILLIS);
            long now = System.currentTimeMillis();
            if (server != null) {
                agreement.tick(online.keySet(), now);
                if (now - lastPing < PING_MILLIS - Agreement.MIN_INTERVAL_MILLIS / 2) {
                    continue;
                }
            }
            lastPing = now;
            Socket s = toServer;
            if (s != null) {   // rank 0's own connection to itself too
                try {
                    write(s, heartbeat());
                } catch (IOException e) {
                    // the reader sees the end
                }
            }
            if (server != null) {
                for (Socket p : peers) {
                    try {
                        write(p, ping);
                    } catch (IOException e) {
                        // the reader sees the end
                    }
                }
            }
        }
    }

    /** {@code PING}, with the communicator's generation and last collective once one is attached. */
    private String heartbeat() {
        Communicator c = owner;
        return c == null || departed ? "PING\n" : "PING " + c.generationForChannel() + " " + c.ledger().last() + "\n";
    }

    /**
     * The channel now serves {@code comm} (made, or recovered): its collectives are reported and compared, and news of
     * a peer's failure makes it write its flight record ({@code onNews}). News of an earlier communicator is dropped.
     */
    void attach(Communicator comm, java.util.function.Consumer<String> onNews) {
        if (owner != null && owner != comm) {
            departures.clear();
        }
        owner = comm;
        this.onNews = onNews;
        departed = false;
        departedKind = null;
        Farewell.register(this);
    }

    /** @return the communicator the channel serves, or null */
    Communicator owner() {
        return owner;
    }

    /** @return what this rank heard of departures and mismatches */
    Departures departures() {
        return departures;
    }

    /** @return this rank's launch rank */
    int launchRankOfSelf() {
        return rank;
    }

    /** @return whether this rank said how it leaves */
    boolean departed() {
        return departed;
    }

    /**
     * The process ends after this rank announced a failure: it leaves for good ({@code exit}), so that the others
     * count it among the ranks gone ({@link #gone()}); a failed rank that lives on may still recover.
     */
    void exitAfterFailure(String cause) {
        Object[] as = departedAs;
        if (departedKind == Departures.Kind.FAILURE && as != null) {
            depart(Departures.Kind.EXIT, (Integer) as[0], (Long) as[1], (String) as[2], cause);
        }
    }

    /**
     * The ranks of the communicator now served that are gone: lost, or departed for good (closed, aborted, exited;
     * a rank that failed may still recover), sorted.
     */
    int[] gone() {
        java.util.TreeSet<Integer> out = new java.util.TreeSet<>();
        for (Lost l : lost()) {
            out.add(l.rank());
        }
        Communicator c = owner;
        if (c != null) {
            for (Departures.Departure d : departures.of(c.generationForChannel()).values()) {
                int r = currentRank(d.rank());
                if (d.kind() != Departures.Kind.FAILURE && d.rank() != rank && r >= 0) {
                    out.add(r);
                }
            }
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * Says how this rank leaves ({@code DEPART}); once per attached communicator. Does not close the connection: see
     * {@link #leave()}.
     *
     * @param kind how
     * @param generation the communicator's generation
     * @param last the number of its last collective
     * @param lastName {@code allReduce #3}
     * @param cause why, or null
     */
    synchronized void depart(Departures.Kind kind, int generation, long last, String lastName, String cause) {
        depart(kind, generation, last, lastName, cause, null);
    }

    /**
     * {@link #depart(Departures.Kind, int, long, String, String)} with the running fingerprint through the last
     * collective (a close: the closing ranks compare them before they finalize), or null.
     */
    synchronized void depart(Departures.Kind kind, int generation, long last, String lastName, String cause,
            String fingerprint) {
        Socket s = toServer;
        boolean endsAFailure = departedKind == Departures.Kind.FAILURE && kind == Departures.Kind.EXIT;
        if (departed && !endsAFailure || s == null) {
            return;
        }
        departed = true;
        departedKind = kind;
        departedAs = new Object[] {generation, last, lastName};
        String rest = generation + " " + kind.name().toLowerCase(java.util.Locale.ROOT) + " " + last
                + (fingerprint == null ? "" : ":" + fingerprint) + " "
                + lastName.replace(" #", "#").replace(' ', '_') + (cause == null ? "" : " " + oneLine(cause));
        if (server != null) {   // rank 0 tells everyone itself, now: its process may end right after
            try {
                relayDeparture(0, org.nccl4j.trace.TraceDump.localHost().replace(' ', '_'),
                        Long.toString(ProcessHandle.current().pid()), rest);
            } catch (RuntimeException e) {
                LOG.warn("nccl4j liveness: rank 0 could not tell its departure: {}", e.toString());
            }
            return;
        }
        try {
            write(s, "DEPART " + rest + "\n");
        } catch (IOException e) {
            // rank 0 is gone; nothing to tell
        }
    }

    /** The cause of this rank's departure, when it comes after it (the exception leaving main). */
    void cause(String cause) {
        Socket s = toServer;
        if (s != null && !closing) {
            try {
                write(s, "CAUSE " + oneLine(cause) + "\n");
            } catch (IOException e) {
                // gone
            }
        }
    }

    /** One line of at most {@value #CAUSE_CHARS} characters. */
    static String oneLine(String text) {
        return cut(text.replace('\r', ' ').replace('\n', ' ').trim(), CAUSE_CHARS);
    }

    private static String cut(String text, int max) {
        return text.length() <= max ? text : text.substring(0, max - 3) + "...";
    }

    /**
     * After {@link #depart}: keeps the connection open {@value #LINGER_MILLIS} ms for a cause that may follow (rank 0:
     * until every other rank has left, at most ten times that), then says goodbye and closes; at once when the process
     * ends ({@link Farewell}).
     */
    void leave() {
        if (toServer == null && server == null) {
            close();
            return;
        }
        owner = null;
        daemon(() -> {
            long end = System.currentTimeMillis() + LINGER_MILLIS;
            long longest = System.currentTimeMillis() + 10 * LINGER_MILLIS;
            while (!closing && (System.currentTimeMillis() < end
                    || server != null && !online.isEmpty() && System.currentTimeMillis() < longest)) {
                sleep(50);
            }
            close();
        }, "nccl4j-liveness-linger-" + rank);
    }

    private void joined(String[] f) {
        Lost m = parse(f);
        if (m != null) {
            roster.put(m.rank(), m);
        }
    }

    private void lost(String[] f) {
        Lost m = parse(f);
        if (m != null && m.rank() != rank) {
            lost.putIfAbsent(m.rank(), m);
        }
    }

    private static Lost parse(String[] f) {
        try {
            return new Lost(Integer.parseInt(f[1]), f.length > 2 ? f[2] : null, f.length > 3 ? Long.parseLong(f[3])
                    : -1);
        } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
            LOG.warn("nccl4j liveness: a line it cannot read: {}", String.join(" ", f));
            return null;
        }
    }

    private static void write(Socket s, String line) throws IOException {
        write(s, line.getBytes(StandardCharsets.UTF_8));
    }

    private static void write(Socket s, byte[] bytes) throws IOException {
        synchronized (s) {
            OutputStream out = s.getOutputStream();
            out.write(bytes);
            out.flush();
        }
    }

    private static void daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(java.io.Closeable c) {
        try {
            if (c != null) {
                c.close();
            }
        } catch (IOException e) {
            // closed
        }
    }

    /** For tests: this rank's process dies (its connection ends without a goodbye). */
    void dropWithoutGoodbye() {
        closing = true;
        closeQuietly(toServer);
        if (server != null) {
            closeQuietly(server);
            for (Socket p : peers) {
                closeQuietly(p);
            }
        }
    }

    /** For tests: this rank's process stops (a SIGSTOP, a frozen host): its connections stay open but go silent. */
    void freeze() {
        closing = true;
    }

    /** Says goodbye (this rank leaves on purpose) and closes the connections. */
    @Override
    public void close() {
        closing = true;
        Farewell.unregister(this);
        Socket s = toServer;
        if (s != null) {
            try {
                write(s, "BYE\n");
            } catch (IOException e) {
                // gone already
            }
            closeQuietly(s);
        }
        if (server != null) {
            if (departed) {   // its departure was told: the end of its connections is no loss
                broadcast("LEFT 0\n");
            }
            closeQuietly(server);
            for (Socket p : peers) {
                closeQuietly(p);
            }
        }
    }
}
