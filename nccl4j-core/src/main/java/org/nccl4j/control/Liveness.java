package org.nccl4j.control;

import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.nccl4j.RankPhase;
import org.nccl4j.launch.JobSecret;
import org.nccl4j.launch.ProcessEnvironment;
import org.nccl4j.launch.Rendezvous;


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
 * <p>Made by {@link org.nccl4j.Communicator#fromEnvironment} on {@code MASTER_ADDR} at {@code MASTER_PORT + 50}
 * (scripts/nccl4j-run, torchrun-style launches, plain {@code java}), or, where only {@code NCCL_COMM_ID} is set
 * (mpirun), on its host at its port + 50; {@code NCCL4J_LIVENESS_PORT} chooses another port.
 *
 * <p>Ranks are launch ranks (those of the communicator {@code fromEnvironment} made); after a recovery,
 * {@link #renumber(int[])} maps them to the new communicator's, and ranks left out are no longer reported.
 *
 * <h2>Departures and agreement</h2>
 * The channel also carries what makes every departure known with its facts, and what lets rank 0 compare the ranks'
 *
 * <h2>The parts</h2>
 * This class is the facade the rest of the core calls (the roster, the losses, the departures, a rank's phase); the
 * lines and their bounds are {@link LivenessWire}'s; rank 0's serving side, with who may speak on its port and how it
 * serves thousands of ranks, is {@link LivenessHub}; a rank's connecting side (rank 0's own too) is
 * {@link LivenessClient}; they know the channel as its {@link ChannelState} and log as this class, so that one logger
 * names the channel.
 *
 * <p><b>Where rank 0 listens.</b> Where the rendezvous does ({@link Rendezvous#bindFor}): on {@code MASTER_ADDR}'s
 * address when it is one of rank 0's host's (a loopback one too, whatever name resolved to it), else on every address
 * (said at INFO, with why); {@code NCCL4J_LIVENESS_BIND=any|<address>} chooses, else
 * {@code NCCL4J_RENDEZVOUS_BIND}, so that both ports listen on one address.
 */
public final class Liveness extends ChannelState implements AutoCloseable {
    /** The variable that sets the port. */
    public static final String PORT_VARIABLE = "NCCL4J_LIVENESS_PORT";
    /** The variable that sets how long a silent connection is taken for a lost rank. */
    static final String TIMEOUT_VARIABLE = "NCCL4J_LIVENESS_TIMEOUT";
    /** Offset from MASTER_PORT (or NCCL_COMM_ID's port) when the variable is not set. */
    public static final int PORT_OFFSET = 50;
    /** Silence taken for a loss when the variable is not set. */
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(4);
    /** Rank 0's serving side, or null. */
    private volatile LivenessHub hub;
    /** This rank's connection to rank 0. */
    final LivenessClient client = new LivenessClient(this);
    /** launch rank -> rank of the communicator now served, -1 for a rank left out; null: the same. */
    private volatile int[] current;
    /** Set by {@link #close()}, before it runs {@link #closeHooks}. */
    private volatile boolean closed;
    /** What runs when the channel closes ({@link #whenClosed}). */
    private final List<Runnable> closeHooks = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** By launch rank: the phase and the way of each lost rank, as rank 0 told it ({@code LOST}). */
    private final Map<Integer, String[]> lostAs = new ConcurrentHashMap<>();
    /** When this rank first heard of a loss or departure during start-up ({@link System#nanoTime}), or 0. */
    private volatile long firstLossNanos;
    private volatile Departures.Kind departedKind;
    /** The generation, last collective and its name of this rank's departure. */
    private volatile Object[] departedAs;
    /** Called (on the channel's reader thread) with a line of news: a peer failed, aborted, exited or diverged. */
    private volatile java.util.function.Consumer<String> onNews;
    /** How long a departed rank's connection stays open for the cause that may follow. */
    static final long LINGER_MILLIS = 2000;
    /** The variable that chooses the address rank 0 listens on: {@code any}, or an address of its host. */
    static final String BIND_VARIABLE = "NCCL4J_LIVENESS_BIND";
    private static final AtomicBoolean SAID_UNAUTHENTICATED = new AtomicBoolean();

    private Liveness(int rank, Duration timeout, JobSecret secret) {
        super(rank, (int) Math.max(2 * PING_MILLIS, Math.min(Integer.MAX_VALUE, timeout.toMillis())), secret);
        if (secret == null && SAID_UNAUTHENTICATED.compareAndSet(false, true)) {
            LOG.info("nccl4j liveness: the liveness channel is unauthenticated: {} is not set, so any process that "
                    + "reaches rank 0's port can open it (scripts/nccl4j-run sets a random one; under mpirun or Slurm "
                    + "export the same random value to every rank)", JobSecret.VARIABLE);
        }
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
     * Rank 0's side as {@link org.nccl4j.Communicator#fromEnvironment} opens it: ranks in [0, {@code worldSize}), the
     * secret of the environment, listening where {@link #bindAddress} says for {@code masterHost}.
     *
     * @param port the port
     * @param masterHost {@code MASTER_ADDR}, or null
     * @param worldSize how many ranks the job has
     * @return rank 0's channel
     * @throws IOException when it cannot listen
     */
    public static Liveness serve(int port, String masterHost, int worldSize) throws IOException {
        ProcessEnvironment env = ProcessEnvironment.liveOrJvmCopy();
        String bind = env.get(BIND_VARIABLE);
        return serve(port, configuredTimeout(), worldSize, JobSecret.fromEnvironment(), bindAddress(masterHost,
                bind != null && !bind.isBlank() ? bind : env.get(Rendezvous.BIND_VARIABLE), port));
    }

    /**
     * Rank 0's side: listens on {@code bind} (null: every address) at {@code port}; ranks claimed must be in
     * [0, {@code worldSize}); with {@code secret} (null: none) every connection is authenticated first.
     */
    static Liveness serve(int port, Duration timeout, int worldSize, JobSecret secret, InetAddress bind)
            throws IOException {
        Liveness l = new Liveness(0, timeout, secret);
        l.hub = new LivenessHub(l, port, worldSize, bind);
        LivenessHub h = l.hub;
        daemon(() -> l.client.pingLoop(h), "nccl4j-liveness-ping");
        return l;
    }

    /**
     * Where rank 0 listens: {@code NCCL4J_LIVENESS_BIND} ({@code any}: every address; else that address), else
     * {@code MASTER_ADDR}'s address by the rendezvous's rule ({@link Rendezvous#bindFor}: when it is one of this
     * host's, a loopback one included, whatever name resolved to it), so that both ports listen on one address; else
     * every address, said at INFO.
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
        // the rendezvous's rule, so that both ports listen on one address (a name that resolves to a loopback
        // address here: loopback only, as the rendezvous; other hosts reach neither port then)
        InetAddress a = Rendezvous.bindFor(masterHost.strip(), null, new ArrayList<>());
        if (!a.isAnyLocalAddress()) {
            return a;
        }
        String why;
        try {
            InetAddress resolved = InetAddress.getByName(masterHost.strip());
            if (resolved.isAnyLocalAddress()) {
                return null;
            }
            why = "its address " + resolved.getHostAddress() + " is not one of this host's";
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
        l.client.connect(host, port, 10_000);
        if (served == null) {
            daemon(() -> l.client.pingLoop(null), "nccl4j-liveness-ping-" + rank);
        }
        return l;
    }

    /**
     * Every rank: connects in the background, retrying until {@code deadlineNanos} ({@link System#nanoTime()}), so that
     * making the communicator need not wait for rank 0's channel; {@link #connected()} tells when it is up. A refusal
     * for the secret (one side has none, or they differ) ends the tries: {@link #awaitArrivals} throws it.
     *
     * @param served rank 0's channel when this is rank 0, else null
     * @param rank this rank
     * @param host rank 0's host
     * @param port the channel's port
     * @param deadlineNanos when to give up
     * @return this rank's channel
     */
    public static Liveness joinLater(Liveness served, int rank, String host, int port, long deadlineNanos) {
        return joinLater(served, rank, host, port, deadlineNanos, served != null ? served.secret
                : JobSecret.fromEnvironment());
    }

    /** As {@link #joinLater(Liveness, int, String, int, long)} with {@code secret} (null: none); for tests. */
    static Liveness joinLater(Liveness served, int rank, String host, int port, long deadlineNanos, JobSecret secret) {
        Liveness l = served != null ? served : new Liveness(rank, configuredTimeout(), secret);
        l.client.joinLater(host, port, deadlineNanos);
        if (served == null) {
            daemon(() -> l.client.pingLoop(null), "nccl4j-liveness-ping-" + rank);
        }
        return l;
    }

    /**
     * Waits until this rank has said hello on rank 0's channel (from then on its loss is known to every rank), the
     * channel failed, {@value #REACH_NANOS} ns passed or the deadline: {@link org.nccl4j.Communicator#fromEnvironment}
     * joins before the rendezvous, so that a rank lost in the rendezvous is not one that never arrived.
     *
     * @param deadlineNanos the start-up's deadline ({@link System#nanoTime()})
     */
    public void awaitJoined(long deadlineNanos) {
        long reach = System.nanoTime() + REACH_NANOS;
        awaitConnected(reach - deadlineNanos < 0 ? reach : deadlineNanos);
    }

    /**
     * Waits until this rank's connection to rank 0 is up, joining was refused or given up, the channel closes, or
     * {@code endNanos} ({@link System#nanoTime()}).
     *
     * @return whether it is up
     */
    private boolean awaitConnected(long endNanos) {
        while (!connected() && client.refusal() == null && client.failedToConnect() == null && !closing
                && System.nanoTime() - endNanos < 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
        }
        return connected();
    }

    /**
     * At exit during start-up: a rank whose join of rank 0's channel is still under way waits for it, at most
     * {@code millis}, so that its departure ({@link #departDuringStartUp}) reaches every rank; a rank that left
     * before joining would otherwise be, to the others, one that never started, waited for until the init timeout.
     * Its departure then names the phase as {@link RankPhase#LAUNCHED} ("before it joined the job").
     *
     * @param millis the longest wait
     * @return whether this rank is connected (rank 0: always)
     */
    public boolean awaitJoinedToLeave(long millis) {
        if (hub != null || connected()) {
            return true;
        }
        if (phase == RankPhase.JOINED) {   // never moved on: it leaves before joining
            phase = RankPhase.LAUNCHED;
        }
        return awaitConnected(System.nanoTime() + millis * 1_000_000L);
    }

    /**
     * Rank 0 at the end of its start-up (its process exits, or its start-up failed): keeps the channel open until every
     * rank of the job has arrived, at most {@code millis}, so that a rank that comes after rank 0 left hears why
     * (a newcomer gets the start-up's departures and losses with the roster) instead of waiting for the init timeout.
     * Nothing on other ranks, once a communicator is made, or when every rank has arrived.
     *
     * @param millis the longest wait
     * @return whether it waited for any rank
     */
    public boolean stayForLateRanks(long millis) {
        LivenessHub h = hub;
        if (h == null || owner != null || h.worldSize() == Integer.MAX_VALUE || arrivals() >= h.worldSize()) {
            return false;   // not rank 0, start-up is over, the job's size is not known, or every rank is here
        }
        long end = System.nanoTime() + millis * 1_000_000L;
        while (arrivals() < h.worldSize() && !closing && System.nanoTime() - end < 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(2_000_000L);
        }
        return true;
    }

    /**
     * How long a rank that leaves during start-up waits to join, or rank 0 for the ranks not yet arrived
     * ({@link #awaitJoinedToLeave}, {@link #stayForLateRanks}): the ranks of a job start within about a second of
     * each other, and the news must reach them within the 2 s every departure is told in.
     */
    public static final long LEAVING_WAIT_MILLIS = 2000;

    /** How long a rank tries to reach rank 0's channel when the rendezvous has shown that rank 0 is alive. */
    private static final long REACH_NANOS = 10_000_000_000L;

    /**
     * Waits until all {@code worldSize} ranks have said hello, or the deadline. When rank 0's channel cannot be
     * reached: with {@code mustReach} (NCCL_COMM_ID: nothing else shows that rank 0 is alive) that is a failure at the
     * deadline; otherwise (the rendezvous already met rank 0) it gives up after 10 s with a warning and returns true,
     * leaving a lost rank to NCCL's error and the watchdog.
     *
     * @param worldSize how many ranks the job has
     * @param deadlineNanos the start-up's deadline ({@link System#nanoTime()})
     * @param mustReach whether rank 0's channel must be reached
     * @return false when the deadline passed first, or a rank was lost first ({@link #startupLoss})
     * @throws IllegalStateException when rank 0 and this rank do not agree on the secret (naming NCCL4J_JOB_SECRET)
     */
    public boolean awaitArrivals(int worldSize, long deadlineNanos, boolean mustReach) {
        long start = System.nanoTime();
        while (true) {
            String refusal = client.refusal();
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
            String failedToConnect = client.failedToConnect();
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
        LivenessHub h = hub;
        if (h != null) {
            h.refusalQuiet(d.toMillis());
        }
        return this;
    }

    /** For tests: how long a new connection has to authenticate and say hello (both sides). */
    Liveness helloDeadline(Duration d) {
        helloMillis = Math.max(1, d.toMillis());
        return this;
    }

    /** @return whether this rank's connection to rank 0 is up */
    boolean connected() {
        return client.socket() != null;
    }

    /** @return why the background connection gave up, or null */
    public String failedToConnect() {
        return client.failedToConnect();
    }

    /**
     * The ranks known to be gone.
     *
     * @return them, with ranks of the communicator now served, in rank order
     */
    public List<RankProcess> lost() {
        int[] map = current;
        List<RankProcess> out = new ArrayList<>();
        for (RankProcess l : new TreeMap<>(lost).values()) {
            int r = map == null ? l.rank() : l.rank() < map.length ? map[l.rank()] : -1;
            if (r >= 0) {
                out.add(r == l.rank() ? l : new RankProcess(r, l.host(), l.pid()));
            }
        }
        return out;
    }

    /**
     * Whether any rank of the communicator now served is known to be gone.
     *
     * @return true when {@link #lost()} is not empty
     */
    public boolean anyLost() {
        return !lost.isEmpty() && !lost().isEmpty();
    }

    /** @return how many ranks said hello (the roster's size) */
    int arrivals() {
        return roster.size();
    }

    /**
     * The ranks that said hello.
     *
     * @return them, by launch rank
     */
    public Map<Integer, RankProcess> roster() {
        return new TreeMap<>(roster);
    }

    /**
     * The launch ranks of {@code worldSize} that have not said hello.
     *
     * @param worldSize how many ranks the job has
     * @return them; empty when this rank has no connection (it cannot know)
     */
    public List<Integer> neverArrived(int worldSize) {
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
     *
     * @param excluded the ranks left out
     */
    public synchronized void renumber(int[] excluded) {
        int[] map = current;
        int n = Math.max(map == null ? 0 : map.length, 1 + roster.keySet().stream().mapToInt(i -> i).max().orElse(0));
        for (RankProcess l : lost.values()) {
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

    /**
     * The rank in the communicator now served of a launch rank.
     *
     * @param launch the launch rank
     * @return its rank, or -1 when it was left out
     */
    public int currentRank(int launch) {
        int[] map = current;
        return map == null ? launch : launch < map.length ? map[launch] : -1;
    }

    /**
     * The launch rank of a rank of the communicator now served.
     *
     * @param r the rank
     * @return the launch rank that has it, or -1
     */
    public int launchRank(int r) {
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
    /** Acts on a line of news (a peer failed, aborted, exited, diverged or was lost), unless closing. */
    @Override
    void news(String what) {
        java.util.function.Consumer<String> n = onNews;
        if (n != null && !closing) {
            try {
                n.accept(what);
            } catch (RuntimeException e) {
                LOG.warn("nccl4j liveness: acting on news failed: {}", e.toString());
            }
        }
    }

    /**
     * The channel now serves {@code comm} (made, or recovered): its collectives are reported and compared, and news of
     * a peer's failure makes it write its flight record ({@code onNews}). News of an earlier communicator is dropped.
     *
     * @param comm the communicator
     * @param onNews called, on the channel's thread, with each line of news
     */
    public void attach(Attached comm, java.util.function.Consumer<String> onNews) {
        if (owner != null && owner != comm) {
            departures.clear();
        }
        owner = comm;
        this.onNews = onNews;
        departed = false;
        departedKind = null;
    }

    /**
     * Runs {@code r} when this channel closes, or at once if it has: what keeps a channel in a list of its own (the
     * farewell at exit, the roll call it answers) lets it go so. May run more than once: {@code r} must allow it.
     *
     * @param r what to run
     */
    public void whenClosed(Runnable r) {
        closeHooks.add(r);
        if (closed) {
            r.run();
        }
    }

    /** @return what this rank heard of departures and mismatches */
    public Departures departures() {
        return departures;
    }

    /** @return this rank's launch rank */
    public int launchRankOfSelf() {
        return rank;
    }

    /** @return whether this rank said how it leaves */
    public boolean departed() {
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
     * ({@link org.nccl4j.Communicator#lostRanks}).
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
        for (RankProcess l : lost()) {
            out.add(l.rank());
        }
        Attached c = owner;
        if (c != null) {
            for (Departures.Departure d : departures.of(c.generation()).values()) {
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
    public synchronized void depart(Departures.Kind kind, int generation, long last, String lastName, String cause) {
        depart(kind, generation, last, lastName, cause, null);
    }

    /**
     * {@link #depart(Departures.Kind, int, long, String, String)} with the running fingerprint through the last
     * collective (a close: the closing ranks compare them before they finalize), or null.
     *
     * @param kind how
     * @param generation the communicator's generation
     * @param last the number of its last collective
     * @param lastName {@code allReduce #3}
     * @param cause why, or null
     * @param fingerprint the fingerprint through the last collective, in hex, or null
     */
    public synchronized void depart(Departures.Kind kind, int generation, long last, String lastName, String cause,
            String fingerprint) {
        boolean endsAFailure = departedKind == Departures.Kind.FAILURE && kind == Departures.Kind.EXIT;
        if (departed && !endsAFailure || !connected()) {
            return;
        }
        departed = true;
        departedKind = kind;
        departedAs = new Object[] {generation, last, lastName};
        String rest = LivenessWire.departure(kind, generation, last, lastName, cause, fingerprint);
        LivenessHub h = hub;
        if (h != null) {   // rank 0 tells everyone itself, now: its process may end right after
            try {
                h.relayDeparture(0, org.nccl4j.trace.TraceDump.localHost().replace(' ', '_'),
                        Long.toString(ProcessHandle.current().pid()), rest);
            } catch (RuntimeException e) {
                LOG.warn("nccl4j liveness: rank 0 could not tell its departure: {}", e.toString());
            }
            return;
        }
        client.send("DEPART " + rest + "\n", true);   // when rank 0 is gone, nothing to tell
    }

    /**
     * This rank is now in {@code p}: told to rank 0 (rank 0 tells every rank its own), so that a loss of this rank is
     * named with its phase. Start-up phases only travel; a communicator's phases are known from its heartbeats.
     *
     * @param p the phase
     */
    public void phase(RankPhase p) {
        phase = p;
        String line = LivenessWire.phase(p);
        LivenessHub h = hub;
        if (h != null) {
            phases.put(0, p);
            h.broadcast(line);
            return;
        }
        client.send(line, false);
    }

    /**
     * Rank 0: the unique id its rendezvous sent, kept to answer a rank whose id frame failed its check
     * ({@link #askUniqueId}). Only on a channel with the job's secret, whose lines are sealed.
     *
     * @param id the id's bytes
     */
    public void offerUniqueId(byte[] id) {
        LivenessHub h = hub;
        if (h != null && secret != null && id != null) {
            uniqueId = id.clone();
            h.uniqueIdOffered();
        }
    }

    /**
     * A rank whose unique-id frame failed its MAC on the way from rank 0's rendezvous asks rank 0 for the id on this
     * channel, whose lines are sealed with the keys of its own handshake.
     *
     * @param deadlineNanos when to give up ({@link System#nanoTime()})
     * @return the id, or null when the channel has no secret, this is rank 0, or no answer came in time
     */
    public byte[] askUniqueId(long deadlineNanos) {
        if (hub != null || secret == null) {
            return null;
        }
        client.send(LivenessWire.ID_ASK + "\n", false);
        try {
            long left = deadlineNanos - System.nanoTime();
            return left <= 0 ? null : uniqueIdHeard.get(left, java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /**
     * This rank leaves before its communicator was made ({@code DEPART -1 <kind> 0 <phase> <cause>}): every rank hears
     * how, and in which phase.
     *
     * @param kind how
     * @param cause why, or null
     */
    public void departDuringStartUp(Departures.Kind kind, String cause) {
        if (owner == null) {
            depart(kind, STARTUP_GENERATION, 0, LivenessWire.wire(phase), cause);
        }
    }

    /** A rank lost (or that left) while this one makes its communicator: who, in which phase, and how. */
    public record Loss(int rank, String host, long pid, RankPhase phase, String how, long heardNanos) {
        /**
         * The loss, as a message says it.
         *
         * @return {@code rank 1 (gpu7, pid 934) was lost during NCCL initialization (SIGTERM)}
         */
        public String says() {
            return "rank " + rank + (host == null ? "" : " (" + host + ", pid " + pid + ")") + " was lost "
                    + (phase == null ? "during start-up" : phase.during()) + " (" + how + ")";
        }
    }

    /**
     * The first other rank known to be lost or to have left before the communicator was made.
     *
     * @param worldSize the launch ranks considered are those below it
     * @return the loss, or null
     */
    public Loss startupLoss(int worldSize) {
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
        RankPhase was = LivenessWire.phaseOf(d.lastName());
        String how = d.cause() != null ? d.cause() : d.kind().says;
        return new Loss(d.rank(), d.host(), d.pid(), was, how, firstLossNanos);
    }

    private Loss lostLoss(int worldSize, java.util.Set<Integer> failedRanks) {
        for (RankProcess l : new TreeMap<>(lost).values()) {
            if (l.rank() != rank && l.rank() < worldSize && !failedRanks.contains(l.rank())) {
                String[] as = lostAs.get(l.rank());
                RankPhase was = as == null ? null : LivenessWire.phaseOf(as[0]);
                if (was == null && l.rank() == 0) {
                    was = phases.get(0);
                }
                String how = as == null || as[1] == null ? "its connection ended without a goodbye" : as[1];
                RankProcess named = l.host() != null ? l : roster.getOrDefault(l.rank(), l);
                return new Loss(l.rank(), named.host(), named.pid(), was, how, firstLossNanos);
            }
        }
        return null;
    }

    /** The cause of this rank's departure, when it comes after it (the exception leaving main). */
    void cause(String cause) {
        client.send("CAUSE " + LivenessWire.oneLine(cause) + "\n", false);
    }

    /**
     * After {@link #depart}: keeps the connection open {@value #LINGER_MILLIS} ms for a cause that may follow (rank 0:
     * until every other rank has left, at most ten times that), then says goodbye and closes; at once when the process
     * ends ({@link Farewell}).
     */
    public void leave() {
        LivenessHub h = hub;
        if (!connected() && h == null) {
            close();
            return;
        }
        owner = null;
        daemon(() -> {
            long end = System.currentTimeMillis() + LINGER_MILLIS;
            long longest = System.currentTimeMillis() + 10 * LINGER_MILLIS;
            while (!closing && (System.currentTimeMillis() < end
                    || h != null && !h.nobodyOnline() && System.currentTimeMillis() < longest)) {
                sleep(50);
            }
            close();
        }, "nccl4j-liveness-linger-" + rank);
    }

    /** Every rank: a {@code JOINED} line's fields (rank 0: a hello's), into the roster. */
    @Override
    void joined(String[] f) {
        RankProcess m = LivenessWire.parse(f);
        if (m == null) {
            said.refused("nccl4j liveness: a line it cannot read: " + LivenessWire.printable(String.join(" ", f), 200));
            return;
        }
        roster.put(m.rank(), m);
        if (lost.remove(m.rank()) != null) {
            // a rank said hello after its loss was told: the loss was a stranger's that claimed its rank before it
            // (without a secret, an impostor that took a rank not yet joined and dropped): the rank is here
            lostAs.remove(m.rank());
            departures.arrived(m.rank(), STARTUP_GENERATION);
            LOG.info("nccl4j liveness: rank {} ({}, pid {}) said hello after its loss was told: it is here, the loss "
                    + "is forgotten", m.rank(), m.host(), m.pid());
            if (lost.isEmpty() && departures.of(STARTUP_GENERATION).isEmpty()) {
                firstLossNanos = 0;
            }
        }
    }

    /** Every rank: a {@code LOST} line's fields: the rank is gone (rank 0's own loss is never heard of). */
    @Override
    void lost(String[] f) {
        RankProcess m = LivenessWire.parse(f);
        if (m == null) {
            said.refused("nccl4j liveness: a line it cannot read: " + LivenessWire.printable(String.join(" ", f), 200));
            return;
        }
        if (m.rank() != rank) {
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
    @Override
    void goneAtStartUp(int who, String host, long pid) {
        lost.putIfAbsent(who, new RankProcess(who, host, pid));
        heardOfLoss();
    }

    /** Notes when the first loss or departure was heard (the start-up guard's clock starts there). */
    private void heardOfLoss() {
        if (firstLossNanos == 0) {
            firstLossNanos = System.nanoTime() | 1;
        }
    }

    /** For tests: this rank's process dies (its connection ends without a goodbye). */
    void dropWithoutGoodbye() {
        closing = true;
        client.drop();
        LivenessHub h = hub;
        if (h != null) {
            h.stop();
        }
    }

    /** @return whether this is rank 0 serving the channel */
    @Override
    boolean serves() {
        return hub != null;
    }

    /**
     * Every rank but 0: rank 0's connection ended (or fell silent) without its goodbye: rank 0 is lost ({@code why}),
     * said at WARN (unless {@code warn} is false: the refusal that ended it was said) and as news.
     */
    @Override
    void lostRankZero(String why, boolean warn) {
        RankProcess known = roster.get(0);
        RankPhase was = phases.get(0);
        lostAs.putIfAbsent(0, new String[] {was == null ? null : LivenessWire.wire(was),
                why.equals("its connection ended") ? "its connection ended without a goodbye" : why});
        lost.putIfAbsent(0, known != null ? known : new RankProcess(0, null, -1));
        heardOfLoss();
        if (warn) {
            LOG.warn("nccl4j liveness: rank {} lost rank 0{}: {}", rank,
                    known == null ? "" : " (" + known.host() + ", pid " + known.pid() + ")", why);
        }
        news("rank 0 is lost");
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
        closed = true;
        for (Runnable r : closeHooks) {   // the roll call it answers, the farewell's list
            r.run();
        }
        client.close();
        LivenessHub h = hub;
        if (h != null) {
            if (departed) {   // its departure was told: the end of its connections is no loss
                h.broadcast(LivenessWire.LEFT_0 + "\n");
            }
            h.stop();
        }
    }
}
