package org.nccl4j;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.nccl4j.launch.JobSecret;
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
 *
 * <h2>Who may speak</h2>
 * Rank 0's port is open to any process that reaches its host, so rank 0 trusts nothing a connection says until it has
 * proved itself, and nothing it claims that contradicts what it knows:
 * <ul>
 * <li><b>Authentication.</b> With the job's secret ({@link JobSecret}: {@code NCCL4J_JOB_SECRET} or
 * {@code NCCL4J_JOB_SECRET_FILE}), rank 0 sends {@code CHALLENGE <serverNonce>} on accept; the rank answers
 * {@code AUTH <clientNonce> <proof>} (the client's proof, purpose {@value #PURPOSE}); rank 0 checks it and answers
 * {@code OK <proof>} (the server's), which the rank checks before its {@code HELLO}, so that a false rank 0 is refused
 * too. A captured exchange is worth nothing on another connection (rank 0's nonce differs). Without a secret the
 * exchange is skipped (rank 0 says {@code OPEN} on accept instead), said once per process at INFO; both sides must
 * agree: a rank with a secret facing a rank 0 without one (it hears {@code OPEN}), or the reverse, fails at join time
 * naming {@code NCCL4J_JOB_SECRET}, and rank 0 refuses it. A rank that hears nothing within its hello time (rank 0
 * busy with thousands of arrivals) connects again, until its join deadline.</li>
 * <li><b>Claims.</b> Rank 0 refuses a hello for a rank outside [0, world size), for a rank connected already, or for a
 * rank that joined from another address; a second {@code HELLO} on one connection; any line before the hello but the
 * handshake's; and any line only rank 0 sends ({@code JOINED}, {@code LOST}, {@code LEFT}, {@code DEPARTED},
 * {@code CAUSED}, {@code AHEAD}, {@code CHECK}, {@code DESCRIBE}, {@code MISMATCH}, {@code CHALLENGE}, {@code OK},
 * {@code OPEN}) or
 * it does not know. A refused connection is closed and said with its address
 * ({@code nccl4j liveness: refused the connection from <address>: <why>; the job goes on}), at WARN once per burst
 * of refusals ({@link org.nccl4j.launch.Refusals}: the others at DEBUG, counted in the next WARN line; a flood's
 * connections that time out waiting are said with the flood's line); it is never a loss, a
 * join or a departure, and the rank it claimed is untouched. A rank ignores the lines of rank 0 it does not
 * expect.</li>
 * <li><b>Bounds.</b> A line before the hello is at most {@value #MAX_EARLY_LINE} bytes, a rank's line at most
 * {@value #MAX_RANK_LINE} ({@code OPS}: {@value #MAX_OPS_LINE}), rank 0's at most {@value #MAX_LINE}; a longer one is
 * refused without reading it whole. A connection has {@value #HELLO_MILLIS} ms to authenticate and say hello
 * ({@code NCCL4J_LIVENESS_TIMEOUT} bounds the silence after it); at most {@value #MAX_PENDING} connections more
 * than the world's ranks wait for their hello at once (none holds a thread, so every rank of a large job may arrive
 * at once), further ones are closed at accept, said once per flood at WARN (a flood ends
 * {@value org.nccl4j.launch.Refusals#FLOOD_GAP_MILLIS} ms after the last such close). A rank that leaves more than
 * {@value #MAX_OUTBOX} bytes waiting and takes none of them for the liveness timeout, or more than
 * {@value #HARD_OUTBOX} however fast it reads, is lost ({@code it did not read rank 0's lines}), as one whose
 * heartbeats stop; a rank that reads, only slower for a moment, is not.</li>
 * <li><b>Where it listens.</b> On {@code MASTER_ADDR}'s address when it is one of rank 0's host's, else on every
 * address (said at INFO, with why); {@code NCCL4J_LIVENESS_BIND=any|<address>} chooses.</li>
 * </ul>
 *
 * <h2>Thousands of ranks</h2>
 * Rank 0's side runs on two threads whatever the number of ranks: a {@link java.nio.channels.Selector} thread
 * ({@code nccl4j-liveness-server}) accepts, authenticates, reads every connection's lines, serves them, and enforces
 * the hello deadline, the silence timeout and the line bounds above; the heartbeat thread
 * ({@code nccl4j-liveness-ping}) sends the pings and drives the comparison. A line to a rank never waits for that rank:
 * it goes to the connection's outbox, written at once without blocking as far as the socket takes it, the rest by the
 * selector thread when the socket can take more (a line fanned out to every rank is one array shared by their
 * outboxes); a rank that lets more than {@value #MAX_OUTBOX} bytes wait and reads none of them for the liveness
 * timeout (or lets {@value #HARD_OUTBOX} wait) is lost, so that a stopped process cannot hold up the news of every
 * other rank. When ranks arrive in a burst, their {@code JOINED} lines are gathered for
 * {@value #JOIN_BATCH_MILLIS} ms and each rank is sent what it has not had in one write (at once when ranks arrive one
 * by one, with at most {@value #JOIN_BATCH_PEERS} ranks connected, or when the last arrives). The lines, bounds and
 * refusals are those of one thread per rank, which this replaced; the figures before and after, from 64 to 4,096
 * simulated ranks, are in docs/gpu-runs/2026-11-26-control-plane-scale.md (scripts/bench/control-plane-scale.sh).
 *
 * <p>Why the JDK's NIO and not a library: Netty would bring buffers, an event loop and a line decoder, but none of what
 * the channel is made of (the challenge and response, the claims, the bounds and refusals, the roster and departures),
 * which stay nccl4j's own code whichever way the bytes travel; it would add four to six jars (Netty 4.2's buffer,
 * common, transport, resolver, codec and handler) to a library whose core depends on slf4j alone, and those jars would
 * land on the class paths of the Spark and Flink jobs that embed it, which bring Netty versions of their own. JGroups
 * solves a harder problem (group membership with views, merges and reliable multicast among peers) with its own
 * discovery, failure detection and security stack, which would overlap and contradict this channel's: here rank 0 is
 * the authority by construction (the launcher names it), a lost rank is a fact its kernel reports, and the job ends or
 * recovers rather than merging partitions. One selector over plain sockets is a few hundred lines, keeps the protocol
 * that the scripts, the attack tests and the other ranks speak, and served 2,048 simulated ranks on one thread (4,096
 * did not all join on the 2-core machine: see the report). A tree of relays (ranks forwarding rank 0's lines) is the
 * next step if one host's fan-out ever becomes the limit; rank 0's own fan-out does not call for it yet.
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
    /** The job's secret (both sides), or null: the channel is then unauthenticated. */
    private final JobSecret secret;
    /** Rank 0: the world size; a hello claiming a rank outside [0, size) is refused. */
    private int size = Integer.MAX_VALUE;
    /** How long a connection has to authenticate and say hello. */
    private volatile long helloMillis = HELLO_MILLIS;
    /** Rank 0 (its selector thread only): the connections that have not said hello yet. */
    private final java.util.Set<Peer> early = new java.util.LinkedHashSet<>();
    /**
     * Rank 0: says refused connections, one WARN line per burst, and each flood of connections closed at accept once
     * (a flood ends {@value org.nccl4j.launch.Refusals#FLOOD_GAP_MILLIS} ms after its last close; the connections
     * that waited during it are said at DEBUG).
     */
    private final org.nccl4j.launch.Refusals refusals = new org.nccl4j.launch.Refusals(LOG);
    /** Rank 0: by launch rank, the address each rank said hello from. */
    private final Map<Integer, InetAddress> joinedFrom = new ConcurrentHashMap<>();
    /** Rank 0 refused this rank, or this rank refused rank 0 (the secret): retrying cannot help. */
    private volatile String refusal;
    /** By launch rank. */
    private final Map<Integer, Lost> lost = new ConcurrentHashMap<>();
    /** By launch rank: every rank that said hello. */
    private final Map<Integer, Lost> roster = new ConcurrentHashMap<>();
    /** Rank 0: the connections that said hello and are open. */
    private final java.util.Set<Peer> peers = ConcurrentHashMap.newKeySet();
    /** Rank 0: the launch rank of each connection that said hello. */
    private final Map<Peer, Integer> rankOfPeer = new ConcurrentHashMap<>();
    /** Rank 0: by launch rank, the open connection that said hello as that rank. */
    private final Map<Integer, Peer> connectedAs = new ConcurrentHashMap<>();
    /** Rank 0: connections whose outbox overflowed, for the selector thread to end. */
    private final java.util.Queue<Peer> overflowed = new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** Rank 0: guards the log of JOINED lines and what each connection was sent of it. */
    private final Object joinLock = new Object();
    /** Rank 0: every JOINED line so far, in order (append-only: a part once written never changes). */
    private byte[] joinedLog = new byte[4096];
    private int joinedLength;
    /** Rank 0: how much of the log has been fanned out to every connection, and when last. */
    private int joinedFannedOut;
    private long lastJoinFanOut;
    private Selector selector;
    private volatile Thread serverThread;
    /** Rank 0's selector thread: the lines it broadcast during the present round, fanned out at its end. */
    private final java.io.ByteArrayOutputStream roundLines = new java.io.ByteArrayOutputStream();
    /** launch rank -> rank of the communicator now served, -1 for a rank left out; null: the same. */
    private volatile int[] current;
    private ServerSocketChannel server;
    private volatile Socket toServer;
    private volatile boolean closing;
    /** Rank 0 closed its side on purpose ({@code LEFT 0}): the end of its connection is not a loss. */
    private volatile boolean serverLeft;
    private volatile String failedToConnect;
    /** What this rank heard of departures and mismatches. */
    private final Departures departures = new Departures();
    /** This rank's phase ({@link RankPhase}), told to rank 0 (by rank 0: to every rank) as it changes. */
    private volatile RankPhase phase = RankPhase.JOINED;
    /** Rank 0: by launch rank, the phase each rank last said; every rank: rank 0's under key 0. */
    private final Map<Integer, RankPhase> phases = new ConcurrentHashMap<>();
    /** By launch rank: the phase and the way of each lost rank, as rank 0 told it ({@code LOST}). */
    private final Map<Integer, String[]> lostAs = new ConcurrentHashMap<>();
    /** When this rank first heard of a loss or departure during start-up ({@link System#nanoTime}), or 0. */
    private volatile long firstLossNanos;
    /** The communicator the channel serves, once attached: its collectives are reported and compared. */
    private volatile Watched owner;
    /** This rank said how it leaves ({@code DEPART}); its connection lingers for a cause. */
    private volatile boolean departed;
    private volatile Departures.Kind departedKind;
    /** The generation, last collective and its name of this rank's departure. */
    private volatile Object[] departedAs;
    /** Rank 0: the comparison of the ranks' collectives. */
    private Agreement agreement;
    /** Rank 0: by launch rank, the connection of every rank that said hello and has not departed or been lost. */
    private final Map<Integer, Peer> online = new ConcurrentHashMap<>();
    /** Rank 0: by launch rank, the last collective of each rank that is closing, to tell it when others go past. */
    private final Map<Integer, Long> closingAt = new ConcurrentHashMap<>();
    /** Rank 0: the highest collective number reported, per generation (the newest only). */
    private volatile long highest;
    private volatile int highestGeneration;
    /** Called (on the channel's reader thread) with a line of news: a peer failed, aborted, exited or diverged. */
    private volatile java.util.function.Consumer<String> onNews;
    /** How long a departed rank's connection stays open for the cause that may follow. */
    static final long LINGER_MILLIS = 2000;
    /** The longest line a rank reads from rank 0 (a cause is cut to {@value #CAUSE_CHARS} characters). */
    static final int MAX_LINE = 16 * 1024;
    /** The longest line rank 0 reads from a rank, but for {@code OPS}. */
    static final int MAX_RANK_LINE = 4 * 1024;
    /** The longest {@code OPS} line: {@link Agreement#WINDOW} shapes of at most 70 characters each. */
    static final int MAX_OPS_LINE = 128 + Agreement.WINDOW * 72;
    /** What rank 0 without a secret says on accept, where one with the secret says {@code CHALLENGE}. */
    static final String OPEN = "OPEN";
    /** The longest line before the hello ({@code CHALLENGE}, {@code AUTH}, {@code OK}, {@code HELLO}). */
    static final int MAX_EARLY_LINE = 512;
    /** How long a new connection has to authenticate and say hello. */
    static final long HELLO_MILLIS = 5000;
    /**
     * The most connections at once beyond the world's ranks that have not said hello; further ones are closed at
     * accept.
     */
    static final int MAX_PENDING = 64;
    /**
     * The most bytes rank 0 holds for one connection that does not read them (beyond what the kernel's buffers hold):
     * a rank whose outbox grows past it is taken for lost, as one that stopped sending heartbeats.
     */
    static final int MAX_OUTBOX = 1 << 20;
    /** The most bytes that may wait for a rank, however fast it reads. */
    static final int HARD_OUTBOX = 16 << 20;
    /** How long rank 0 gathers JOINED lines, while ranks arrive in a burst, before fanning them out. */
    static final long JOIN_BATCH_MILLIS = 50;
    /** Up to this many ranks connected, every JOINED line is fanned out at once. */
    static final int JOIN_BATCH_PEERS = 64;
    /** How often rank 0's selector thread looks for silent connections and passed hello deadlines, at least. */
    static final long SWEEP_MILLIS = 100;
    /** The variable that chooses the address rank 0 listens on: {@code any}, or an address of its host. */
    static final String BIND_VARIABLE = "NCCL4J_LIVENESS_BIND";
    /** What the proofs of the channel's challenge and response are bound to. */
    static final String PURPOSE = "liveness";
    private static final AtomicBoolean SAID_UNAUTHENTICATED = new AtomicBoolean();
    /** The longest cause sent. */
    static final int CAUSE_CHARS = 400;

    private Liveness(int rank, Duration timeout, JobSecret secret) {
        this.rank = rank;
        this.secret = secret;
        if (secret == null && SAID_UNAUTHENTICATED.compareAndSet(false, true)) {
            LOG.info("nccl4j liveness: the liveness channel is unauthenticated: {} is not set, so any process that "
                    + "reaches rank 0's port can open it (scripts/nccl4j-run sets a random one; under mpirun or Slurm "
                    + "export the same random value to every rank)", JobSecret.VARIABLE);
        }
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

    /**
     * Rank 0's side: listens on {@code port} (every address), with the secret of the environment and no bound on the
     * ranks claimed (for tests); call before the communicator is made, so that it is up for all.
     */
    static Liveness serve(int port) throws IOException {
        return serve(port, configuredTimeout());
    }

    static Liveness serve(int port, Duration timeout) throws IOException {
        return serve(port, timeout, Integer.MAX_VALUE, JobSecret.fromEnvironment(), null);
    }

    /**
     * Rank 0's side as {@link Communicator#fromEnvironment} opens it: ranks in [0, {@code worldSize}), the secret of
     * the environment, listening where {@link #bindAddress} says for {@code masterHost}.
     */
    static Liveness serve(int port, String masterHost, int worldSize) throws IOException {
        return serve(port, configuredTimeout(), worldSize, JobSecret.fromEnvironment(),
                bindAddress(masterHost, ProcessEnvironment.liveOrJvmCopy().get(BIND_VARIABLE), port));
    }

    /**
     * Rank 0's side: listens on {@code bind} (null: every address) at {@code port}; ranks claimed must be in
     * [0, {@code worldSize}); with {@code secret} (null: none) every connection is authenticated first.
     */
    static Liveness serve(int port, Duration timeout, int worldSize, JobSecret secret, InetAddress bind)
            throws IOException {
        Liveness l = new Liveness(0, timeout, secret);
        l.size = worldSize;
        l.agreement = new Agreement(l::sendToRank, text -> l.broadcast("MISMATCH " + text + "\n"));
        l.server = ServerSocketChannel.open();
        try {
            l.server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            // room in the backlog for every rank arriving at once (the kernel caps it at somaxconn)
            l.server.bind(new InetSocketAddress(bind, port), Math.max(50, Math.min(worldSize, 65_536)));
            l.server.configureBlocking(false);
            l.selector = Selector.open();
            l.server.register(l.selector, SelectionKey.OP_ACCEPT);
        } catch (IOException | RuntimeException e) {
            closeQuietly(l.server);
            closeQuietly(l.selector);
            throw e;
        }
        l.serverThread = daemon(l::serveAll, "nccl4j-liveness-server");
        daemon(l::pingLoop, "nccl4j-liveness-ping");
        return l;
    }

    /**
     * Where rank 0 listens: {@code NCCL4J_LIVENESS_BIND} ({@code any}: every address; else that address), else
     * {@code MASTER_ADDR}'s address when it is one of this host's (and not a loopback address that only stands for
     * the host's name, which other hosts cannot reach), else every address, said at INFO.
     *
     * @return the address, or null for every address
     * @throws IOException when the variable names no address of this host
     */
    static InetAddress bindAddress(String masterHost, String override, int port) throws IOException {
        if (override != null && !override.isBlank()) {
            if (override.strip().equalsIgnoreCase("any")) {
                return null;
            }
            InetAddress a;
            try {
                a = InetAddress.getByName(override.strip());
            } catch (java.net.UnknownHostException e) {
                throw new IOException(BIND_VARIABLE + "=" + override + " is not an address: use any, or an address "
                        + "of rank 0's host", e);
            }
            if (!local(a)) {
                throw new IOException(BIND_VARIABLE + "=" + override + " is not an address of this host: use any, or "
                        + "an address of rank 0's host");
            }
            return a;
        }
        if (masterHost == null || masterHost.isBlank()) {
            return null;
        }
        String why;
        try {
            InetAddress a = InetAddress.getByName(masterHost.strip());
            boolean loopbackName = masterHost.strip().equalsIgnoreCase("localhost")
                    || masterHost.strip().equals(a.getHostAddress()) || masterHost.strip().startsWith("[");
            if (a.isAnyLocalAddress()) {
                return null;
            }
            if (a.isLoopbackAddress() && !loopbackName) {
                why = "it resolves to " + a.getHostAddress() + " here, a loopback address other hosts cannot reach";
            } else if (local(a)) {
                return a;
            } else {
                why = "its address " + a.getHostAddress() + " is not one of this host's";
            }
        } catch (java.net.UnknownHostException e) {
            why = "it does not resolve here";
        }
        LOG.info("nccl4j liveness: rank 0 listens on every address at port {}, not MASTER_ADDR={}: {}; set "
                + "{}=<address> to choose one", port, masterHost.strip(), why, BIND_VARIABLE);
        return null;
    }

    private static boolean local(InetAddress a) {
        try {
            return a.isLoopbackAddress() || NetworkInterface.getByInetAddress(a) != null;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Every rank (rank 0 too): connects to rank 0 at {@code host:port} and says hello; waits for the connection. The
     * secret is rank 0's own (when served), else the environment's.
     */
    static Liveness join(Liveness served, int rank, String host, int port) throws IOException {
        return join(served, rank, host, port, served != null ? served.secret : JobSecret.fromEnvironment());
    }

    /** As {@link #join(Liveness, int, String, int)} with {@code secret} (null: none); for tests. */
    static Liveness join(Liveness served, int rank, String host, int port, JobSecret secret) throws IOException {
        Liveness l = served != null ? served : new Liveness(rank, configuredTimeout(), secret);
        l.connect(host, port, 10_000);
        if (served == null) {
            daemon(l::pingLoop, "nccl4j-liveness-ping-" + rank);
        }
        return l;
    }

    /**
     * Every rank: connects in the background, retrying until {@code deadlineNanos} ({@link System#nanoTime()}), so that
     * making the communicator need not wait for rank 0's channel; {@link #connected()} tells when it is up. A refusal
     * for the secret (one side has none, or they differ) ends the tries: {@link #awaitArrivals} throws it.
     */
    static Liveness joinLater(Liveness served, int rank, String host, int port, long deadlineNanos) {
        return joinLater(served, rank, host, port, deadlineNanos, served != null ? served.secret
                : JobSecret.fromEnvironment());
    }

    /** As {@link #joinLater(Liveness, int, String, int, long)} with {@code secret} (null: none); for tests. */
    static Liveness joinLater(Liveness served, int rank, String host, int port, long deadlineNanos, JobSecret secret) {
        Liveness l = served != null ? served : new Liveness(rank, configuredTimeout(), secret);
        daemon(() -> {
            long backoff = 20;
            IOException last = null;
            while (!l.closing && System.nanoTime() < deadlineNanos) {
                try {
                    int left = (int) Math.max(1, Math.min(5_000, (deadlineNanos - System.nanoTime()) / 1_000_000));
                    l.connect(host, port, left);
                    return;
                } catch (Refused e) {
                    l.refusal = e.getMessage();
                    l.failedToConnect = e.getMessage();
                    LOG.error("nccl4j liveness: {}", e.getMessage());
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
     * Connects, authenticates when there is a secret ({@code CHALLENGE}, {@code AUTH}, {@code OK}), says hello and
     * reads rank 0's welcome; then reads rank 0's lines on a thread of its own.
     */
    private void connect(String host, int port, int timeoutMillis) throws IOException {
        Socket s = new Socket();
        String where = "rank 0's liveness channel at " + host + ":" + port;
        String first;
        LineReader in;
        try {
            s.connect(new InetSocketAddress(host, port), timeoutMillis);
            s.setTcpNoDelay(true);
            in = new LineReader(s, MAX_LINE);
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
                    String got = challenge.equals(OPEN) ? "it runs without a secret"
                            : "'" + printable(challenge, 60) + "'";
                    throw new Refused(where + " sent no CHALLENGE (" + got + "): rank " + rank + " has "
                            + JobSecret.VARIABLE + " but rank 0 runs without it; give every rank the same "
                            + JobSecret.VARIABLE + ", or none");
                }
                String serverNonce = challenge.substring("CHALLENGE ".length());
                String clientNonce = JobSecret.nonce();
                write(s, "AUTH " + clientNonce + " " + secret.prove(PURPOSE, serverNonce, clientNonce, "client")
                        + "\n");
                String ok = quietly(in, deadline);
                if (ok == null) {
                    throw new Refused(where + " refused rank " + rank + "'s proof: its " + JobSecret.VARIABLE
                            + " differs from this rank's (every rank of the job needs the same one)");
                }
                if (!ok.startsWith("OK ") || !secret.verify(PURPOSE, serverNonce, clientNonce, "server",
                        ok.substring(3))) {
                    throw new Refused(where + " could not prove it holds " + JobSecret.VARIABLE + ": it is not this "
                            + "job's rank 0, or its secret differs; rank " + rank + " does not join it");
                }
            }
            write(s, "HELLO " + rank + " " + org.nccl4j.trace.TraceDump.localHost().replace(' ', '_') + " "
                    + ProcessHandle.current().pid() + "\n");
            first = quietly(in, deadline);
            if (OPEN.equals(first)) {   // rank 0 without a secret, as this rank: its welcome follows
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
            s.setSoTimeout(this.timeoutMillis);
        } catch (IOException e) {
            closeQuietly(s);
            throw e;
        }
        toServer = s;
        fromServer(s, first);
        RankPhase now = phase;
        if (now != RankPhase.JOINED && server == null) {   // the phase it reached while connecting
            write(s, "PHASE " + now.wire() + "\n");
        }
        daemon(() -> listen(s, in), "nccl4j-liveness-" + rank);
    }

    /** A line before {@code deadline}, or null when the connection ends or the deadline passes first. */
    private static String quietly(LineReader in, long deadline) throws IOException {
        try {
            return in.readLine(MAX_LINE, deadline);
        } catch (SocketTimeoutException e) {
            return null;
        }
    }

    /**
     * Waits until this rank has said hello on rank 0's channel (from then on its loss is known to every rank), the
     * channel failed, {@value #REACH_NANOS} ns passed or the deadline: {@link Communicator#fromEnvironment} joins
     * before the rendezvous, so that a rank lost in the rendezvous is not one that never arrived.
     */
    void awaitJoined(long deadlineNanos) {
        long start = System.nanoTime();
        while (!connected() && refusal == null && failedToConnect == null && !closing) {
            long now = System.nanoTime();
            if (now - start > REACH_NANOS || now - deadlineNanos >= 0) {
                return;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
        }
    }

    /** How long a rank tries to reach rank 0's channel when the rendezvous has shown that rank 0 is alive. */
    private static final long REACH_NANOS = 10_000_000_000L;

    /**
     * Waits until all {@code worldSize} ranks have said hello, or the deadline. When rank 0's channel cannot be
     * reached: with {@code mustReach} (NCCL_COMM_ID: nothing else shows that rank 0 is alive) that is a failure at the
     * deadline; otherwise (the rendezvous already met rank 0) it gives up after 10 s with a warning and returns true,
     * leaving a lost rank to NCCL's error and the watchdog.
     *
     * @return false when the deadline passed first, or a rank was lost first ({@link #startupLoss})
     * @throws IllegalStateException when rank 0 and this rank do not agree on the secret (naming NCCL4J_JOB_SECRET)
     */
    boolean awaitArrivals(int worldSize, long deadlineNanos, boolean mustReach) {
        long start = System.nanoTime();
        while (true) {
            if (refusal != null) {
                close();
                throw new IllegalStateException(refusal);
            }
            if (arrivals() >= worldSize) {
                return true;
            }
            if (startupLoss(worldSize) != null) {
                return false;   // a rank is gone: the caller names it
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

    /**
     * For tests: the quiet time that ends a burst of refusals ({@link org.nccl4j.launch.Refusals#QUIET_MILLIS}); zero
     * says every refusal at WARN.
     */
    Liveness refusalQuiet(Duration d) {
        refusals.quietMillis(d.toMillis());
        return this;
    }

    /** For tests: how long a new connection has to authenticate and say hello (both sides). */
    Liveness helloDeadline(Duration d) {
        helloMillis = Math.max(1, d.toMillis());
        return this;
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

    /** @return how many ranks said hello (the roster's size) */
    int arrivals() {
        return roster.size();
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

    /**
     * Rank 0's selector thread: accepts connections, reads every connection's lines and serves them, writes what the
     * connections' outboxes hold, fans out the JOINED lines gathered, and ends the connections that overflowed, that
     * passed their hello deadline or that fell silent. Rank 0 serves any number of ranks on this one thread; a line
     * to a rank never waits for that rank to read it (see {@link #send}).
     */
    private void serveAll() {
        ByteBuffer in = ByteBuffer.allocate(64 * 1024);
        long nextSweep = System.nanoTime();
        try {
            while (!closing) {
                long now = System.nanoTime();
                long wake = Math.min(nextSweep, nextHelloDeadline(now + SWEEP_MILLIS * 1_000_000L));
                synchronized (joinLock) {
                    if (joinedFannedOut < joinedLength) {
                        wake = Math.min(wake, lastJoinFanOut + JOIN_BATCH_MILLIS * 1_000_000L);
                    }
                }
                selector.select(Math.max(1, (wake - now + 999_999L) / 1_000_000L));
                for (SelectionKey k : selector.selectedKeys()) {
                    handle(k, in);
                }
                selector.selectedKeys().clear();
                Peer o;
                while ((o = overflowed.poll()) != null) {
                    end(o, null, false, "it did not read rank 0's lines (over " + MAX_OUTBOX + " bytes waited for it, "
                            + "none taken for " + timeoutMillis + " ms, or over " + HARD_OUTBOX + ": the process is "
                            + "stopped or too slow)");
                }
                fanOutJoins(false);
                now = System.nanoTime();
                boolean sweep = now - nextSweep >= 0;
                // in accept order, which is deadline order but where a test shortened the deadline: all on a sweep
                for (java.util.Iterator<Peer> it = early.iterator(); it.hasNext();) {
                    Peer p = it.next();
                    if (now - p.helloDeadline >= 0) {
                        it.remove();
                        end(p, "it did not authenticate and say hello within " + p.helloMillis + " ms", false, null);
                    } else if (!sweep) {
                        break;
                    }
                }
                if (sweep) {
                    nextSweep = now + SWEEP_MILLIS * 1_000_000L;
                    for (Peer p : peers) {
                        if (overflowIfStalled(p, now)) {
                            continue;
                        }
                        if (now - p.lastHeard > timeoutMillis * 1_000_000L) {
                            end(p, null, false, "it sent nothing for " + timeoutMillis + " ms (no heartbeat: the "
                                    + "process is stopped or its host is unreachable)");
                        }
                    }
                }
                endRound();
            }
        } catch (IOException | java.nio.channels.ClosedSelectorException e) {
            if (!closing) {
                LOG.warn("nccl4j liveness: rank 0 stopped accepting: {}", e.toString());
            }
        } finally {
            try {
                for (SelectionKey k : selector.keys()) {
                    closeQuietly(k.channel());
                }
            } catch (java.nio.channels.ClosedSelectorException e) {
                // closed already
            }
            closeQuietly(server);
            closeQuietly(selector);   // a registered channel's socket closes once its selector lets it go
        }
    }

    /** The hello deadline of the oldest connection that has not said hello, or {@code latest} when earlier. */
    private long nextHelloDeadline(long latest) {
        if (early.isEmpty()) {
            return latest;
        }
        long first = early.iterator().next().helloDeadline;
        return first - latest < 0 ? first : latest;
    }

    /** One ready key of the selector thread: new connections, or a connection to write to or read from. */
    private void handle(SelectionKey k, ByteBuffer in) throws IOException {
        if (!k.isValid()) {
            return;
        }
        if (k.isAcceptable()) {
            acceptAll();
            return;
        }
        Peer p = (Peer) k.attachment();
        try {
            if (k.isWritable()) {
                flush(p);
            }
            if (k.isValid() && k.isReadable()) {
                read(p, in);
            }
        } catch (java.nio.channels.CancelledKeyException e) {
            end(p, null, false, null);
        } catch (RuntimeException e) {
            LOG.warn("nccl4j liveness: rank 0 could not serve the connection from {}: {}", p.remote, e.toString());
            end(p, null, false, null);
        }
    }

    /**
     * @return the most connections that may wait for their hello at once: {@value #MAX_PENDING} more than the world's
     *         ranks, so that every rank may arrive at once (only {@value #MAX_PENDING} with no bound on the ranks)
     */
    private int maxPending() {
        return size >= Integer.MAX_VALUE - MAX_PENDING ? MAX_PENDING : MAX_PENDING + size;
    }

    /** Accepts every connection the backlog holds: each gets its challenge, or is closed at once over the cap. */
    private void acceptAll() throws IOException {
        SocketChannel c;
        while ((c = server.accept()) != null) {
            if (early.size() >= maxPending()) {   // at most so many connections wait for a hello
                String from = remote(c);
                closeQuietly(c);
                if (refusals.flooded()) {
                    LOG.warn("nccl4j liveness: {} connections have not said hello yet (the most at once): closing "
                            + "further ones at accept until they do or their {} ms pass (the first from {}); the job "
                            + "goes on", maxPending(), helloMillis, from);
                }
                continue;
            }
            try {
                c.configureBlocking(false);
                c.setOption(StandardSocketOptions.TCP_NODELAY, true);
                Peer p = new Peer(c, c.register(selector, SelectionKey.OP_READ), refusals.now(), helloMillis);
                p.key.attach(p);
                early.add(p);
                if (secret != null) {
                    p.serverNonce = JobSecret.nonce();
                    send(p, "CHALLENGE " + p.serverNonce + "\n");
                } else {
                    send(p, OPEN + "\n");   // no secret here: a rank with one knows at once, and never waits
                    p.stage = 1;
                }
            } catch (IOException | RuntimeException e) {
                closeQuietly(c);
            }
        }
    }

    private static String remote(SocketChannel c) {
        try {
            java.net.SocketAddress a = c.getRemoteAddress();
            return a instanceof InetSocketAddress i ? i.getAddress().getHostAddress() + ":" + i.getPort()
                    : String.valueOf(a);
        } catch (IOException e) {
            return "an unknown address";
        }
    }

    /**
     * Rank 0: one connection, served by the selector thread (its handshake, its lines, its deadlines); its outbox is
     * written by any thread, under the connection's lock.
     */
    private static final class Peer {
        final SocketChannel channel;
        final SelectionKey key;
        final String remote;
        final InetAddress address;
        /** When it was accepted, on {@link #refusals}' clock. */
        final long accepted;
        final long helloMillis;
        final long helloDeadline;
        /** Where its handshake is: 0 waits for AUTH (with a secret), 1 for HELLO, 2 said hello. */
        int stage;
        String serverNonce;
        String[] hello;
        int who = -1;
        boolean bye;
        /** Whether any byte was read from it. */
        boolean any;
        long lastHeard = System.nanoTime();
        /** The line being read: at most {@value #MAX_EARLY_LINE} bytes before the hello, then {@code MAX_OPS_LINE}. */
        byte[] line = new byte[256];
        int length;
        /** How much of the JOINED log it has been sent (under {@code joinLock}). */
        int joinedSent;
        /** What it has not read yet, in order (under this connection's lock). */
        final java.util.ArrayDeque<ByteBuffer> outbox = new java.util.ArrayDeque<>();
        long queued;
        /** When rank 0 last wrote any of its outbox to it (or found the outbox empty): a rank that reads drains. */
        long lastDrained = System.nanoTime();
        boolean writing;
        boolean overflowed;
        volatile boolean ended;

        Peer(SocketChannel channel, SelectionKey key, long accepted, long helloMillis) {
            this.channel = channel;
            this.key = key;
            this.remote = remote(channel);
            this.address = channel.socket().getInetAddress();
            this.accepted = accepted;
            this.helloMillis = helloMillis;
            this.helloDeadline = System.nanoTime() + helloMillis * 1_000_000L;
        }
    }

    /**
     * Rank 0: reads what a connection sent and serves its complete lines; a line longer than its bound is refused
     * without reading it whole, and the end of the connection ends it.
     */
    private void read(Peer p, ByteBuffer in) {
        in.clear();
        int n;
        try {
            n = p.channel.read(in);
        } catch (IOException e) {
            end(p, null, false, null);   // the connection broke: the rank is gone unless it said goodbye
            return;
        }
        if (n < 0) {
            end(p, p.stage < 2 ? "it closed the connection before its hello" : null, p.stage < 2 && !p.any, null);
            return;
        }
        if (n == 0) {
            return;
        }
        p.any = true;
        p.lastHeard = System.nanoTime();
        in.flip();
        try {
            while (in.hasRemaining() && !p.ended) {
                byte b = in.get();
                if (b == '\n') {
                    String line = new String(p.line, 0, p.length, StandardCharsets.UTF_8);
                    p.length = 0;
                    line(p, line);
                    continue;
                }
                int max = p.stage < 2 ? MAX_EARLY_LINE : MAX_OPS_LINE;
                if (p.length >= max) {
                    throw new Refused("it sent a line longer than " + max + " bytes");
                }
                if (p.length == p.line.length) {
                    p.line = java.util.Arrays.copyOf(p.line, Math.min(max, 2 * p.line.length));
                }
                p.line[p.length++] = b;
            }
        } catch (Refused e) {
            end(p, e.getMessage(), e.silent, null);
        }
    }

    /**
     * Rank 0: one line of a connection: its challenge's answer ({@code AUTH}, with a secret), its hello, then the
     * rank's lines ({@link #served}).
     *
     * @throws Refused when the line refuses the connection, with why
     */
    private void line(Peer p, String line) throws Refused {
        if (p.stage == 0) {
            String[] a = line.split(" ", -1);
            if (!a[0].equals("AUTH")) {
                throw new Refused("it did not authenticate (sent '" + printable(line, 60) + "' where AUTH was due): "
                        + "every rank needs this job's " + JobSecret.VARIABLE);
            }
            if (a.length != 3 || !hex(a[1]) || !hex(a[2])
                    || !secret.verify(PURPOSE, p.serverNonce, a[1], "client", a[2])) {
                throw new Refused("its AUTH proof is wrong (not this job's " + JobSecret.VARIABLE
                        + ", or an answer to another challenge)");
            }
            send(p, "OK " + secret.prove(PURPOSE, p.serverNonce, a[1], "server") + "\n");
            p.stage = 1;
            return;
        }
        if (p.stage == 1) {
            String[] hello = greet(p, line);
            p.who = Integer.parseInt(hello[1]);
            p.hello = hello;
            p.stage = 2;
            p.lastHeard = System.nanoTime();
            early.remove(p);
            return;
        }
        if (line.length() > MAX_RANK_LINE && !line.startsWith("OPS ")) {
            throw new Refused("rank " + p.who + "'s connection sent a line longer than " + MAX_RANK_LINE + " bytes");
        }
        if (line.equals("BYE")) {
            p.bye = true;
        } else {
            p.bye |= served(p.who, p.hello, line);
        }
    }

    /**
     * Rank 0: the end of a connection. A refused one ({@code refused}: why) is closed and said with its address
     * ({@link org.nccl4j.launch.Refusals}: at WARN once per burst) and is no loss; a rank's that ends without BYE
     * (why: {@code why}, else the end of its connection) is lost, and every other rank is told.
     *
     * @param silent whether a refused connection sent nothing at all (a port probe: said at DEBUG only)
     */
    private void end(Peer p, String refused, boolean silent, String why) {
        if (p.ended) {
            return;
        }
        p.ended = true;
        early.remove(p);
        peers.remove(p);
        p.key.cancel();
        closeQuietly(p.channel);
        synchronized (p) {
            p.outbox.clear();
            p.queued = 0;
        }
        if (p.who >= 0 && rankOfPeer.remove(p, p.who)) {
            connectedAs.remove(p.who, p);
            online.remove(p.who, p);
            closingAt.remove(p.who);
            agreement.left(p.who);
        }
        if (refused != null) {
            if (silent) {   // connected and left without a byte: a port probe, no claim to refuse
                LOG.debug("nccl4j liveness: the connection from {} ended without a byte", p.remote);
            } else if (!closing) {
                refusals.refused("nccl4j liveness: refused the connection from " + p.remote + ": " + refused
                        + "; the job goes on", p.accepted);
            }
            return;
        }
        String[] hello = p.hello;
        if (p.bye || closing || hello == null) {
            return;
        }
        RankPhase was = phases.getOrDefault(p.who, RankPhase.JOINED);
        String how = oneLine(why != null ? why : "its connection ended without a goodbye");
        LOG.warn("nccl4j liveness: rank {} ({}, pid {}) is lost: {} ({})", hello[1], hello[2], hello[3], how,
                was.during());
        // LOST <rank> <host> <pid> <phase> <how...>: a reader of the first four fields only reads them unchanged
        String message = "LOST " + hello[1] + " " + hello[2] + " " + hello[3] + " " + was.wire() + " " + how + "\n";
        lost(message.trim().split(" ", 6));
        broadcast(message);
    }

    /**
     * Rank 0: a new connection's hello, after its challenge and response (with a secret); its claims are checked and,
     * when they hold, the rank is welcomed.
     *
     * @return its hello's fields
     * @throws Refused when it is refused, with why
     */
    private String[] greet(Peer p, String line) throws Refused {
        if (line.startsWith("AUTH ") && secret == null) {
            throw new Refused("it sent AUTH, but rank 0 has no " + JobSecret.VARIABLE + ": give every rank the same "
                    + JobSecret.VARIABLE + ", or none");
        }
        if (!line.startsWith("HELLO ")) {
            throw new Refused("it sent '" + printable(line, 60) + "' before its hello");
        }
        String[] hello = line.split(" ", -1);
        int who;
        try {
            who = Integer.parseInt(hello[1]);
            if (hello.length != 4 || hello[2].isEmpty() || !hello[2].chars().allMatch(c -> c > ' ' && c < 127)) {
                throw new NumberFormatException();
            }
            Long.parseLong(hello[3]);
        } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
            throw new Refused("its hello is malformed: '" + printable(line, 80) + "'");
        }
        if (who < 0 || who >= size) {
            throw new Refused("it claims rank " + who + ", outside this job's ranks 0.." + (size - 1));
        }
        welcome(p, hello, who);
        return hello;
    }

    private static boolean hex(String s) {
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

    /**
     * Rank 0: one line of rank {@code who} after its hello. Returns true for a departure (the end of the connection is
     * then no loss).
     *
     * @throws Refused for a line a rank may not send
     */
    private boolean served(int who, String[] hello, String line) throws Refused {
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
                case "PHASE": {
                    RankPhase said = RankPhase.fromWire(rest.trim());
                    if (said == null) {
                        throw new IllegalArgumentException("no such phase");
                    }
                    phases.put(who, said);
                    return false;
                }
                case "HELLO":
                    throw new Refused("a second HELLO on the connection of rank " + who + " ('"
                            + printable(line, 60) + "')");
                default:
                    throw new Refused("rank " + who + "'s connection sent '" + printable(line, 60) + "', a line a "
                            + "rank may not send");
            }
        } catch (RuntimeException e) {
            // through the refusals' one line per burst: a connection that floods unreadable lines fills no log
            refusals.refused("nccl4j liveness: a line from rank " + who + " it cannot read: " + printable(line, 200)
                    + "; the job goes on");
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
            String[] lastAndFingerprint = g[2].split(":");
            if (lastAndFingerprint.length > 1) {
                closedWith(who, Integer.parseInt(g[0]), last, lastAndFingerprint[1]);
            }
            if (highest > last && highestGeneration == Integer.parseInt(g[0])) {
                sendToRank(who, "AHEAD " + g[0] + " " + highest + "\n");
            }
        }
        broadcast("DEPARTED " + who + " " + host + " " + pid + " " + rest + "\n");
        if (Integer.parseInt(g[0]) == STARTUP_GENERATION && who != rank) {
            // rank 0's own start-up waits read it here: its connection to itself may not be up yet to hear it
            departures.heard(new Departures.Departure(who, host, Long.parseLong(pid),
                    Departures.Kind.valueOf(g[1].toUpperCase(java.util.Locale.ROOT)), STARTUP_GENERATION, 0, g[3],
                    g.length > 4 && !g[4].isBlank() ? g[4] : null, System.nanoTime()));
            goneAtStartUp(who, host, Long.parseLong(pid));
        }
    }

    /** Rank 0: by launch rank, the generation, last collective and fingerprint each closing rank closed with. */
    private final Map<Integer, String> closedWith = new ConcurrentHashMap<>();

    /**
     * Rank 0: rank {@code who} closes communicator {@code gen} after collective #{@code last} with fingerprint
     * {@code fp}; when it differs from another closing rank's at the same collective, the closing ranks' shapes are
     * compared at once, so that the first collective that differs is named before they close
     * ({@link Agreement#closedDiffering}).
     */
    private void closedWith(int who, int gen, long last, String fp) {
        String at = gen + " " + last + " ";
        synchronized (closedWith) {
            closedWith.put(who, at + fp);
            List<Integer> same = new ArrayList<>();
            boolean differ = false;
            for (Map.Entry<Integer, String> e : new TreeMap<>(closedWith).entrySet()) {
                if (e.getValue().startsWith(at)) {
                    same.add(e.getKey());
                    differ |= !e.getValue().equals(at + fp);
                }
            }
            if (differ) {
                agreement.closedDiffering(same, gen, last);
            }
        }
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
        if (Thread.currentThread() == serverThread) {
            endRound();   // what was broadcast before goes first
        }
        fanOutJoins(true);
        if (r < 0) {
            byte[] bytes = line.getBytes(StandardCharsets.UTF_8);
            for (Peer p : online.values()) {
                send(p, ByteBuffer.wrap(bytes));
            }
            return;
        }
        Peer p = online.get(r);
        if (p == null) {   // a closing rank is no longer online, but still connected
            p = connectedAs.get(r);
        }
        if (p != null) {
            send(p, line);
        }
    }

    /**
     * Rank 0: checks a hello's claim (a rank connected already, or one that joined from another address, is refused);
     * then a newcomer gets the roster so far (every JOINED line, its own included) and everyone gets the newcomer: at
     * once when ranks arrive one by one (or at most {@value #JOIN_BATCH_PEERS} are connected), gathered for
     * {@value #JOIN_BATCH_MILLIS} ms when more arrive in a burst.
     */
    private void welcome(Peer p, String[] hello, int who) throws Refused {
        synchronized (roster) {
            Peer already = connectedAs.get(who);
            if (already != null) {
                throw new Refused("it claims rank " + who + ", which is connected already (from " + already.remote
                        + ")");
            }
            InetAddress before = joinedFrom.get(who);
            if (before != null && !before.equals(p.address)) {
                throw new Refused("it claims rank " + who + ", which joined from " + before.getHostAddress());
            }
            joinedFrom.put(who, p.address);
            rankOfPeer.put(p, who);
            connectedAs.put(who, p);
            joined(hello);
            byte[] line = ("JOINED " + hello[1] + " " + hello[2] + " " + hello[3] + "\n")
                    .getBytes(StandardCharsets.UTF_8);
            synchronized (joinLock) {
                if (joinedLength + line.length > joinedLog.length) {
                    joinedLog = java.util.Arrays.copyOf(joinedLog, Math.max(2 * joinedLog.length,
                            joinedLength + line.length));
                }
                System.arraycopy(line, 0, joinedLog, joinedLength, line.length);
                joinedLength += line.length;
                send(p, ByteBuffer.wrap(joinedLog, 0, joinedLength));
                p.joinedSent = joinedLength;
                peers.add(p);
                online.put(who, p);
            }
            RankPhase mine = phase;
            if (mine != RankPhase.JOINED) {   // rank 0's own phase, which it told the earlier ranks
                send(p, "PHASE " + mine.wire() + "\n");
            }
        }
        fanOutJoins(false);
    }

    /**
     * Rank 0: sends every connection the JOINED lines it has not had, in one write: when {@code now}, with at most
     * {@value #JOIN_BATCH_PEERS} ranks connected, when the last such fan-out was {@value #JOIN_BATCH_MILLIS} ms ago or
     * more, or when every rank has arrived; else the selector thread does it when that time comes.
     */
    private void fanOutJoins(boolean now) {
        synchronized (joinLock) {
            if (joinedFannedOut == joinedLength) {
                return;
            }
            long t = System.nanoTime();
            if (!now && peers.size() > JOIN_BATCH_PEERS && t - lastJoinFanOut < JOIN_BATCH_MILLIS * 1_000_000L
                    && roster.size() < size) {
                return;
            }
            lastJoinFanOut = t;
            joinedFannedOut = joinedLength;
            for (Peer p : peers) {
                if (p.joinedSent < joinedLength) {
                    send(p, ByteBuffer.wrap(joinedLog, p.joinedSent, joinedLength - p.joinedSent));
                    p.joinedSent = joinedLength;
                }
            }
        }
    }

    /**
     * Rank 0: a line to every connection that said hello. On the selector thread, the lines of one round of the
     * selector (the losses of many ranks gone at once, say) are gathered and fanned out together at its end
     * ({@link #endRound}): one write per rank.
     */
    private void broadcast(String message) {
        byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
        if (Thread.currentThread() == serverThread) {
            roundLines.writeBytes(bytes);
            return;
        }
        fanOut(bytes);
    }

    /** Rank 0: {@code bytes} to every connection that said hello, after the JOINED lines they have not had. */
    private void fanOut(byte[] bytes) {
        fanOutJoins(true);
        for (Peer p : peers) {
            send(p, ByteBuffer.wrap(bytes));
        }
    }

    /** Rank 0's selector thread: fans out the lines broadcast during this round. */
    private void endRound() {
        if (roundLines.size() > 0) {
            byte[] bytes = roundLines.toByteArray();
            roundLines.reset();
            fanOut(bytes);
        }
    }

    private void send(Peer p, String line) {
        send(p, ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * Rank 0: queues {@code data} for a connection (its own view: the bytes may be shared) and writes what it can at
     * once, without blocking; the selector thread writes the rest when the connection can take it. A connection that
     * {@linkplain #stalled stopped reading} is ended by the selector thread as lost.
     */
    private void send(Peer p, ByteBuffer data) {
        boolean wake = false;
        synchronized (p) {
            if (p.ended || p.overflowed) {
                return;
            }
            if (p.outbox.isEmpty()) {
                p.lastDrained = System.nanoTime();
                try {
                    p.channel.write(data);
                } catch (IOException e) {
                    return;   // the selector thread sees the end
                }
                if (!data.hasRemaining()) {
                    return;
                }
            }
            p.outbox.add(data);
            p.queued += data.remaining();
            if (overflowIfStalled(p, System.nanoTime())) {
                wake = true;
            } else if (!p.writing) {
                p.writing = true;
                try {
                    p.key.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
                } catch (java.nio.channels.CancelledKeyException e) {
                    return;   // ended
                }
                wake = true;
            }
        }
        if (wake && Thread.currentThread() != serverThread) {
            selector.wakeup();
        }
    }

    /**
     * Whether a connection stopped reading: more than {@value #MAX_OUTBOX} bytes wait for it and it has taken none of
     * them for the liveness timeout, or more than {@value #HARD_OUTBOX} wait whatever it takes. A rank that reads,
     * only slower for a moment (a collection, a busy core), is not taken for lost (under this connection's lock).
     */
    private boolean stalled(Peer p, long now) {
        return p.queued > HARD_OUTBOX
                || p.queued > MAX_OUTBOX && now - p.lastDrained > timeoutMillis * 1_000_000L;
    }

    /**
     * When the connection {@linkplain #stalled stopped reading}: drops its outbox and hands it to the selector thread
     * to end, once; returns whether it did.
     */
    private boolean overflowIfStalled(Peer p, long now) {
        synchronized (p) {
            if (p.overflowed || p.ended || !stalled(p, now)) {
                return false;
            }
            p.overflowed = true;
            p.outbox.clear();
        }
        overflowed.add(p);
        return true;
    }

    /** Rank 0's selector thread: writes what a connection's outbox holds, as much as it takes now. */
    private void flush(Peer p) {
        boolean broke = false;
        synchronized (p) {
            try {
                while (!p.outbox.isEmpty()) {
                    ByteBuffer[] batch = new ByteBuffer[Math.min(64, p.outbox.size())];
                    java.util.Iterator<ByteBuffer> it = p.outbox.iterator();
                    for (int i = 0; i < batch.length; i++) {
                        batch[i] = it.next();
                    }
                    long wrote = p.channel.write(batch);
                    p.queued -= wrote;
                    if (wrote > 0) {
                        p.lastDrained = System.nanoTime();
                    }
                    while (!p.outbox.isEmpty() && !p.outbox.peekFirst().hasRemaining()) {
                        p.outbox.removeFirst();
                    }
                    if (batch[batch.length - 1].hasRemaining()) {
                        break;   // the connection takes no more now
                    }
                }
                if (p.outbox.isEmpty() && p.writing) {
                    p.writing = false;
                    p.key.interestOps(SelectionKey.OP_READ);
                }
            } catch (IOException e) {
                broke = true;
            }
        }
        if (broke) {
            end(p, null, false, null);
        }
    }

    /** Every rank: reads rank 0's lines; the end of the connection, or its silence, means rank 0 is gone. */
    private void listen(Socket s, LineReader in) {
        String why = "its connection ended";
        try {
            String line;
            while ((line = in.readLine(MAX_LINE, 0)) != null) {
                fromServer(s, line);
            }
        } catch (SocketTimeoutException e) {
            why = "it sent nothing for " + timeoutMillis + " ms (no heartbeat: stopped, or its host unreachable)";
        } catch (IOException e) {
            // as the end of the stream
        }
        closeQuietly(s);
        if (!closing && !serverLeft && rank != 0) {
            Lost known = roster.get(0);
            RankPhase was = phases.get(0);
            lostAs.putIfAbsent(0, new String[] {was == null ? null : was.wire(), why.equals("its connection ended")
                    ? "its connection ended without a goodbye" : why});
            lost.putIfAbsent(0, known != null ? known : new Lost(0, null, -1));
            heardOfLoss();
            LOG.warn("nccl4j liveness: rank {} lost rank 0{}: {}", rank,
                    known == null ? "" : " (" + known.host() + ", pid " + known.pid() + ")", why);
            news("rank 0 is lost");
        }
    }

    /** Every rank: one line of rank 0's; a line it does not expect (a rank's, or the handshake's) is ignored. */
    private void fromServer(Socket s, String line) {
        if (line.startsWith("LOST ")) {
            lost(line.split(" ", 6));
            news("rank " + line.split(" ")[1] + " is lost");
        } else if (line.startsWith("PHASE ")) {   // rank 0's own phase
            RankPhase said = RankPhase.fromWire(line.substring("PHASE ".length()).trim());
            if (said != null) {
                phases.put(0, said);
            }
        } else if (line.startsWith("JOINED ")) {
            joined(line.split(" "));
        } else if (line.equals("LEFT 0")) {
            serverLeft = true;
        } else if (!line.equals("PING")) {
            heard(s, line);
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
                    if (Integer.parseInt(g[3]) == STARTUP_GENERATION && who != rank) {
                        goneAtStartUp(who, g[1], Long.parseLong(g[2]));
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
                    Watched c = owner;
                    int gen = Integer.parseInt(g[0]);
                    if (c != null && c.generation == gen) {
                        Ledger ledger = c.ledger;
                        long t = Long.parseLong(g[1]);
                        Long fp = ledger.fingerprintAt(t);
                        write(s, "FP " + gen + " " + t + " " + (fp == null ? "?" : Long.toHexString(fp)) + " "
                                + ledger.last() + "\n");
                    }
                    return;
                }
                case "DESCRIBE": {
                    String[] g = rest.split(" ");
                    Watched c = owner;
                    int gen = Integer.parseInt(g[0]);
                    long from = Long.parseLong(g[1]);
                    long to = Long.parseLong(g[2]);
                    if (c != null && c.generation == gen && to - from < Agreement.WINDOW && to >= from) {
                        Ledger ledger = c.ledger;
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
                for (Peer p : peers) {
                    send(p, ByteBuffer.wrap(ping));
                }
            }
        }
    }

    /** {@code PING}, with the communicator's generation and last collective once one is attached. */
    private String heartbeat() {
        Watched c = owner;
        return c == null || departed ? "PING\n" : "PING " + c.generation + " " + c.ledger.last() + "\n";
    }

    /**
     * The channel now serves {@code comm} (made, or recovered): its collectives are reported and compared, and news of
     * a peer's failure makes it write its flight record ({@code onNews}). News of an earlier communicator is dropped.
     */
    void attach(Watched comm, java.util.function.Consumer<String> onNews) {
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
    Watched owner() {
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
     * {@link #gone()} once the news has settled: waits until no new loss has been reported for {@code settle}
     * ({@link Communicator#lostRanks}).
     */
    int[] goneOnceSettled(java.time.Duration settle) {
        int seen = -1;
        long quietSince = System.nanoTime();
        while (true) {
            int now = gone().length;
            if (now != seen) {
                seen = now;
                quietSince = System.nanoTime();
            } else if (System.nanoTime() - quietSince >= settle.toNanos()) {
                return gone();
            }
            java.util.concurrent.locks.LockSupport.parkNanos(5_000_000L);
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
        Watched c = owner;
        if (c != null) {
            for (Departures.Departure d : departures.of(c.generation).values()) {
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

    /** The generation of a departure during start-up: no communicator has been made yet. */
    static final int STARTUP_GENERATION = -1;

    /**
     * This rank is now in {@code p}: told to rank 0 (rank 0 tells every rank its own), so that a loss of this rank is
     * named with its phase. Start-up phases only travel; a communicator's phases are known from its heartbeats.
     */
    void phase(RankPhase p) {
        phase = p;
        String line = "PHASE " + p.wire() + "\n";
        if (server != null) {
            phases.put(0, p);
            broadcast(line);
            return;
        }
        Socket s = toServer;
        if (s != null && !closing) {
            try {
                write(s, line);
            } catch (IOException e) {
                // the reader sees the end
            }
        }
    }

    /**
     * This rank leaves before its communicator was made ({@code DEPART -1 <kind> 0 <phase> <cause>}): every rank hears
     * how, and in which phase.
     */
    void departDuringStartUp(Departures.Kind kind, String cause) {
        if (owner == null) {
            depart(kind, STARTUP_GENERATION, 0, phase.wire(), cause);
        }
    }

    /** A rank lost (or that left) while this one makes its communicator: who, in which phase, and how. */
    record Loss(int rank, String host, long pid, RankPhase phase, String how, long heardNanos) {
        /** {@code rank 1 (gpu7, pid 934) was lost during NCCL initialization (SIGTERM)}. */
        String says() {
            return "rank " + rank + (host == null ? "" : " (" + host + ", pid " + pid + ")") + " was lost "
                    + (phase == null ? "during start-up" : phase.during()) + " (" + how + ")";
        }
    }

    /**
     * The first other rank (of launch ranks below {@code worldSize}) known to be lost or to have left before the
     * communicator was made, or null.
     */
    Loss startupLoss(int worldSize) {
        if (firstLossNanos == 0) {
            return null;
        }
        // a rank that ended (or was lost) first; one that failed because of another's loss last
        Departures.Departure failed = null;
        java.util.Set<Integer> failedRanks = new java.util.HashSet<>();
        for (Departures.Departure d : new TreeMap<>(departures.of(STARTUP_GENERATION)).values()) {
            if (d.rank() != rank && d.rank() < worldSize) {
                if (d.kind() == Departures.Kind.FAILURE) {
                    failed = failed == null ? d : failed;
                    failedRanks.add(d.rank());
                    continue;
                }
                return departureLoss(d);
            }
        }
        Loss fromLost = lostLoss(worldSize, failedRanks);
        if (fromLost != null || failed == null) {
            return fromLost;
        }
        return departureLoss(failed);
    }

    private Loss departureLoss(Departures.Departure d) {
        RankPhase was = RankPhase.fromWire(d.lastName());
        String how = d.cause() != null ? d.cause() : d.kind().says;
        return new Loss(d.rank(), d.host(), d.pid(), was, how, firstLossNanos);
    }

    private Loss lostLoss(int worldSize, java.util.Set<Integer> failedRanks) {
        for (Lost l : new TreeMap<>(lost).values()) {
            if (l.rank() != rank && l.rank() < worldSize && !failedRanks.contains(l.rank())) {
                String[] as = lostAs.get(l.rank());
                RankPhase was = as == null ? null : RankPhase.fromWire(as[0]);
                if (was == null && l.rank() == 0) {
                    was = phases.get(0);
                }
                String how = as == null || as[1] == null ? "its connection ended without a goodbye" : as[1];
                Lost named = l.host() != null ? l : roster.getOrDefault(l.rank(), l);
                return new Loss(l.rank(), named.host(), named.pid(), was, how, firstLossNanos);
            }
        }
        return null;
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
            if (f.length > 4) {
                lostAs.putIfAbsent(m.rank(), new String[] {f[4], f.length > 5 ? f[5] : null});
            }
            lost.putIfAbsent(m.rank(), m);
            heardOfLoss();
        }
    }

    /**
     * Rank {@code who} left during start-up: it never made (or never kept) its communicator, so it is gone for any
     * communicator of this start-up.
     */
    private void goneAtStartUp(int who, String host, long pid) {
        lost.putIfAbsent(who, new Lost(who, host, pid));
        heardOfLoss();
    }

    /** Notes when the first loss or departure was heard (the start-up guard's clock starts there). */
    private void heardOfLoss() {
        if (firstLossNanos == 0) {
            firstLossNanos = System.nanoTime() | 1;
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

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
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
            stopServing();
        }
    }

    /**
     * Rank 0: stops its selector thread, which closes every connection and the listening socket; waits for it (at
     * most 2 s) unless called on it.
     */
    private void stopServing() {
        closing = true;
        selector.wakeup();
        Thread t = serverThread;
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** @return whether this rank closed its channel (or froze): what it still hears no longer starts anything */
    boolean closing() {
        return closing;
    }

    /** For tests: this rank's process stops (a SIGSTOP, a frozen host): its connections stay open but go silent. */
    void freeze() {
        closing = true;
    }

    /** Says goodbye (this rank leaves on purpose) and closes the connections. */
    @Override
    public void close() {
        closing = true;
        Survivors.forget(this);   // the roll call after rank 0's loss, if this rank answers it
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
            stopServing();
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
