package org.nccl4j;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;
import org.nccl4j.control.Departures;
import org.nccl4j.control.Farewell;
import org.nccl4j.control.Liveness;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.launch.LaunchInfo;
import org.nccl4j.launch.Rendezvous;
import org.nccl4j.launch.RendezvousException;
import org.nccl4j.launch.UniqueIdCheckException;

/**
 * Making a communicator: {@link Communicator#create(int, int, UniqueId, int, CommConfig)}'s checks and NCCL call
 * against a deadline, {@link Communicator#initAll(int...)}, and {@link Communicator#fromEnvironment(CommConfig)} from
 * what the launcher says: detection ({@link LaunchInfo}), the unique id's {@link Rendezvous}, and the liveness
 * channel, served by rank 0 and joined by every rank while NCCL makes the communicator, then given to it as one of
 * its {@link Communicator.Parts}, as NCCL's bootstrap attaches RAS.
 *
 * <p>It lives here, not in {@code org.nccl4j.launch}, because it makes a communicator against a deadline
 * ({@link InitDeadline}) and opens the channel ({@link Liveness}), both internals of this package; the launch package
 * uses nothing of this one ({@code LayersTest}). What it reads of the environment, it reads through
 * {@code launch}: {@link LaunchInfo#detect} and {@link LaunchInfo#rankZeroAddress()}.
 */
final class Bootstrap {
    private Bootstrap() {
    }

    /**
     * {@link Communicator#create(int, int, UniqueId, int, CommConfig)}'s checks and NCCL call, against the deadline
     * of {@code config}'s init timeout.
     *
     * @return the parts of the communicator NCCL made, with {@code config}, for {@link Communicator#adopt}
     */
    static CommParts create(int rank, int size, UniqueId id, int device, CommConfig config) {
        return create(rank, size, id, device, config,
                new InitDeadline(CommConfig.initTimeout(config), rank, size, null));
    }

    /** {@link #create(int, int, UniqueId, int, CommConfig)} against {@code deadline}. */
    static CommParts create(int rank, int size, UniqueId id, int device, CommConfig config,
            InitDeadline deadline) {
        if (size < 1) {
            throw Errors.argument("size must be >= 1, got " + size);
        }
        if (rank < 0 || rank >= size) {
            throw Errors.argument("rank must be in 0.." + (size - 1) + " for size " + size + ", got " + rank);
        }
        if (id == null) {
            throw Errors.nullArgument("id");
        }
        if (device < 0) {
            throw Errors.argument("device must be >= 0, got " + device);
        }
        NcclLibrary lib = NcclLoad.library();
        if (config != null) {
            config.requireSupportedBy(lib);
        }
        WatchSettings settings = CommConfig.watchdogSettings(config, WatchdogConfig.fromEnvironment());
        Cuda.setDevice(device);
        long[] out = new long[1];
        int rc;
        NcclFunction fn;
        boolean blocking = config == null || config.ints()[NcclNative.CFG_BLOCKING] != 0;
        if (config == null) {
            fn = NcclFunction.ncclCommInitRank;
            rc = NcclNative.ncclCommInitRank(out, size, id.internalBytes(), rank);
        } else {
            fn = NcclFunction.ncclCommInitRankConfig;
            rc = NcclNative.ncclCommInitRankConfig(out, size, id.internalBytes(), rank, config.ints(),
                    config.netName(), config.commName());
        }
        return CommParts.of(InitDeadline.finished(rc, out, fn, null, deadline), device, blocking, settings)
                .withConfig(config);
    }

    /**
     * {@link Communicator#initAll(int...)}: each communicator NCCL made is adopted in rank order; if one cannot be,
     * those adopted already are aborted ({@code abort}) and the others aborted in NCCL, and it throws.
     */
    static <C> List<C> initAll(Function<CommParts, C> adopt, Consumer<C> abort, int... devices) {
        if (devices == null || devices.length == 0) {
            throw Errors.argument("devices must name at least one CUDA device");
        }
        for (int i = 0; i < devices.length; i++) {
            if (devices[i] < 0) {
                throw Errors.argument("devices[" + i + "] must be >= 0, got " + devices[i]);
            }
            for (int j = 0; j < i; j++) {
                if (devices[i] == devices[j]) {
                    throw Errors.argument("devices must be distinct: device " + devices[i] + " appears twice");
                }
            }
        }
        NcclLoad.library();
        WatchSettings settings = CommConfig.watchdogSettings(null, WatchdogConfig.fromEnvironment());
        long[] comms = new long[devices.length];
        int rc = NcclNative.ncclCommInitAll(comms, devices.length, devices.clone());
        if (rc != 0) {
            throw Errors.failure(rc, NcclFunction.ncclCommInitAll, null);
        }
        List<C> out = new ArrayList<>(devices.length);
        try {
            for (int i = 0; i < devices.length; i++) {
                out.add(adopt.apply(CommParts.query(comms[i], devices[i], true, settings)));
            }
        } catch (RuntimeException | Error e) {
            // the caller gets none of them: abort those wrapped already and those not yet wrapped
            for (C c : out) {
                try {
                    abort.accept(c);
                } catch (RuntimeException x) {
                    e.addSuppressed(x);
                }
            }
            for (int i = out.size(); i < devices.length; i++) {
                NcclNative.ncclCommAbort(comms[i]);
            }
            throw e;
        }
        return Collections.unmodifiableList(out);
    }

    /**
     * {@link Communicator#fromEnvironment(CommConfig)}, through the start-up phases of {@link RankPhase}: the liveness
     * channel first (rank 0 serves it, every rank joins it in the background), so that a rank lost at any later step
     * is known to all; then the unique id, the arrival of every rank, and NCCL. A loss reported by the channel ends
     * each wait with {@link PeerLostDuringStartupException} ({@link StartupGuard}). What NCCL made is adopted
     * ({@code adopt}) before this rank says it is ready.
     */
    static <C> C fromEnvironment(CommConfig config, Function<CommParts, C> adopt) {
        // from here on an exit waits (briefly) for this rank's channel, so that even a SIGTERM now is told
        Farewell.startupBegins(StartupGuard.AT_EXIT);
        LaunchInfo launch;
        java.time.Duration timeout;
        long deadline;
        Liveness live;
        try {
            launch = LaunchInfo.detect(System.getenv(), Cuda::deviceCount);
            timeout = CommConfig.initTimeout(config);
            deadline = System.nanoTime() + timeout.toNanos();
            Liveness joined = takeEarly(launch);   // the channel JobLiveness.join() opened, if any
            live = joined != null ? joined : channel(launch, deadline);
        } finally {
            Farewell.startupEnds();
        }
        if (live != null) {
            live.awaitJoined(deadline);   // joined before the rendezvous: its loss there is known to all
        }
        try {
            return fromEnvironment(config, adopt, launch, live, timeout, deadline);
        } catch (RuntimeException | Error e) {
            if (live != null) {
                if (!(e instanceof PeerLostDuringStartupException)) {
                    live.departDuringStartUp(Departures.Kind.FAILURE, Farewell.describe(e));
                }
                live.stayForLateRanks(Liveness.LEAVING_WAIT_MILLIS);   // rank 0: the ranks still to come hear why
                live.close();
            }
            throw e;
        }
    }

    /** The channel {@link JobLiveness#join} opened before the program made its communicator, or null. */
    private static Liveness early;
    /** The launch the early channel was opened for. */
    private static LaunchInfo earlyLaunch;

    /**
     * {@link JobLiveness#join}: opens the start-up's liveness channel now (rank 0 serves it, every rank joins it in
     * the background), for the next {@link #fromEnvironment} to use; once, until that call takes it.
     *
     * @return whether this rank has a channel (false: a world of one, or no {@code MASTER_ADDR})
     */
    static synchronized boolean joinEarly() {
        if (early != null) {
            return true;
        }
        Farewell.startupBegins(StartupGuard.AT_EXIT);
        try {
            LaunchInfo launch = LaunchInfo.detect(System.getenv(), Cuda::deviceCount);
            Liveness live = channel(launch, System.nanoTime() + CommConfig.initTimeout(null).toNanos());
            if (live != null) {
                early = live;
                earlyLaunch = launch;
            }
            return live != null;
        } finally {
            Farewell.startupEnds();
        }
    }

    /** The early channel, when it was opened for {@code launch}'s rank and size (else it is closed); then none. */
    private static synchronized Liveness takeEarly(LaunchInfo launch) {
        Liveness l = early;
        LaunchInfo was = earlyLaunch;
        early = null;
        earlyLaunch = null;
        if (l != null && (was.rank() != launch.rank() || was.worldSize() != launch.worldSize())) {
            l.close();   // the environment changed between the two calls: a channel for another launch
            return null;
        }
        return l;
    }

    /** {@link JobLiveness#check}: throws when a rank of the early channel's job is known lost or gone. */
    static void checkEarly() {
        Liveness l;
        LaunchInfo launch;
        synchronized (Bootstrap.class) {
            l = early;
            launch = earlyLaunch;
        }
        if (l != null) {
            StartupGuard.throwIfLost(l, launch.rank(), launch.worldSize(), "JobLiveness.check",
                    "the job cannot start without it");
        }
    }

    /**
     * The liveness channel of a start-up: rank 0 serves it (before anything else: up for every rank; on MASTER_ADDR's
     * address, ranks in [0, worldSize)), every rank joins it in the background while the id is exchanged (its roster
     * names who never arrived), registered with {@link Farewell} so that a rank that ends during start-up says how,
     * and in which phase. Null for a world of one, without MASTER_ADDR, or when rank 0 cannot serve it.
     */
    private static Liveness channel(LaunchInfo launch, long deadline) {
        int rank = launch.rank();
        int size = launch.worldSize();
        String[] where = size == 1 ? null : livenessAddress();
        Liveness served = null;
        if (where != null && rank == 0) {
            try {
                served = Liveness.serve(Integer.parseInt(where[1]), where[0], size);
            } catch (IOException e) {
                CommHealth.COMMUNICATOR_LOG.warn("nccl4j: no liveness channel (port {}): {};"
                        + " a lost rank is found by NCCL's error or the timeout only", where[1], e.toString());
                where = null;
            }
        }
        if (where == null) {
            return null;
        }
        Liveness live = Liveness.joinLater(served, rank, where[0], Integer.parseInt(where[1]), deadline);
        Farewell.register(live);
        return live;
    }

    /**
     * The rendezvous' exchange of the unique id. Rank 0 keeps the id on its liveness channel; a rank whose id frame
     * failed its MAC on the way (forged, replayed or altered: the job has a secret) asks rank 0 for it there, on a
     * connection sealed with keys of its own handshake, instead of failing its start-up.
     */
    private static byte[] exchange(Rendezvous rv, Liveness live, int rank, long deadline) {
        byte[] bytes;
        try {
            bytes = rv.exchange(() -> UniqueId.generate().toBytes());
        } catch (UniqueIdCheckException e) {
            byte[] again = live == null ? null : live.askUniqueId(Math.min(deadline, System.nanoTime()
                    + ID_ASK_NANOS));
            if (again == null) {
                throw e;
            }
            CommHealth.COMMUNICATOR_LOG.warn("nccl4j: {}; rank {} took the id from rank 0's"
                    + " liveness channel instead (sealed with the keys of its own handshake)", e.getMessage(), rank);
            return again;
        }
        if (rank == 0 && live != null) {
            live.offerUniqueId(bytes);
        }
        return bytes;
    }

    /** How long a rank whose id frame failed its check waits for the id on the liveness channel. */
    private static final long ID_ASK_NANOS = 10_000_000_000L;

    private static <C> C fromEnvironment(CommConfig config, Function<CommParts, C> adopt, LaunchInfo launch,
            Liveness live, java.time.Duration timeout, long deadline) {
        int rank = launch.rank();
        int size = launch.worldSize();
        // joined, and told of a rank that left before (a newcomer hears it with the roster): no NCCL to wait for
        StartupGuard.throwIfLost(live, rank, size, "joining", "NCCL was not called");
        NcclLoad.library();
        UniqueId id;
        if (size == 1) {
            id = UniqueId.generate();
        } else {
            phase(live, RankPhase.RENDEZVOUS);
            java.util.function.Supplier<String> lossSays = live == null ? null : () -> {
                Liveness.Loss l = live.startupLoss(size);
                return l == null ? null : l.says();
            };
            Rendezvous rv = Rendezvous.forLaunch(launch, timeout, lossSays);
            try {
                id = UniqueId.of(exchange(rv, live, rank, deadline));
                rv.awaitArrivals(deadline);   // the file route: names a rank that never came, before NCCL waits for it
            } catch (RendezvousException e) {
                Liveness.Loss loss = StartupGuard.explain(live, size);
                if (loss != null) {
                    throw StartupGuard.lost(loss, rank, size, "rendezvous", "the rendezvous ended", e);
                }
                throw e;
            }
        }
        phase(live, RankPhase.ID_TAKEN);
        InitDeadline until = new InitDeadline(deadline, timeout, rank, size, live);
        if (live != null) {
            // NCCL is called once every rank is there: a rank that never came is named here, at the deadline
            boolean commId = Rendezvous.forLaunchRoute() == Rendezvous.Route.COMM_ID;
            if (!live.awaitArrivals(size, deadline, commId) && live.startupLoss(size) == null) {
                throw until.expired("the arrival of every rank on the liveness channel", null, false);
            }
        }
        // a rank lost before every rank arrived, or since: NCCL would wait for it
        StartupGuard.throwIfLost(live, rank, size, "arrival", "NCCL was not called");
        phase(live, RankPhase.NCCL_INIT);
        CommParts made;
        boolean blocking = config == null || config.ints()[NcclNative.CFG_BLOCKING] != 0;
        String initCall = config == null ? "ncclCommInitRank" : "ncclCommInitRankConfig";
        StartupGuard guard = blocking ? StartupGuard.watch(live, rank, size, Thread.currentThread(), initCall) : null;
        StartupGuard.initBegins();
        try {
            // after the count: the exit either sees this call and waits for it, or this call sees the exit's end
            if (CommHealth.callsEnded()) {
                throw new IllegalStateException("rank " + rank + " of " + size + ": the process is exiting; NCCL's "
                        + "initialization was not started");
            }
            made = create(rank, size, id, launch.device(), config, until);
            if (Farewell.exiting()) {   // the process began to exit while NCCL made it: its exit waits for this
                NcclNative.ncclCommAbort(made.handle());
                throw new IllegalStateException("rank " + rank + " of " + size + ": the process is exiting; the "
                        + "communicator NCCL made was aborted");
            }
        } catch (NcclException e) {
            Liveness.Loss loss = e instanceof PeerLostDuringStartupException ? null : StartupGuard.explain(live, size);
            if (loss != null) {
                throw StartupGuard.lost(loss, rank, size, e.operation(), "NCCL initialization failed: "
                        + e.getMessage(), e);
            }
            throw e;
        } finally {
            StartupGuard.initEnded();
            if (guard != null) {
                guard.close();
            }
        }
        Liveness.Loss late = live == null ? null : live.startupLoss(size);
        if (late != null) {   // lost while NCCL made the communicator: it cannot serve a collective with that rank
            abortInTheBackground(made.handle());
            throw StartupGuard.lost(late, rank, size, initCall, "the communicator NCCL made is aborted", null);
        }
        if (live == null) {
            return adopt.apply(made);
        }
        C c = adopt.apply(made.withChannel(live));   // the channel serves it from the start
        live.phase(RankPhase.READY);
        return c;
    }

    private static void phase(Liveness live, RankPhase p) {
        if (live != null) {
            live.phase(p);
        }
    }

    /**
     * Where the liveness channel is: rank 0's host ({@link LaunchInfo#rankZeroAddress()}: {@code MASTER_ADDR}, or
     * {@code NCCL_COMM_ID}'s host) at its port + 50; {@code NCCL4J_LIVENESS_PORT} chooses the port. Null when neither
     * is set.
     */
    static String[] livenessAddress() {
        String[] master = LaunchInfo.rankZeroAddress();
        if (master == null) {
            return null;
        }
        String host = master[0];
        String base = master[1];
        String explicit = NcclNative.getenv(Liveness.PORT_VARIABLE);
        if (LaunchInfo.portNumber(explicit) >= 0) {
            return new String[] {host.trim(), explicit.trim()};
        }
        int b = LaunchInfo.portNumber(base);
        if (b < 0) {
            return null;
        }
        int p = b + Liveness.PORT_OFFSET;
        return p <= 65535 ? new String[] {host.trim(), Integer.toString(p)} : null;
    }

    /**
     * Aborts the communicator NCCL made for a start-up that a rank's loss has ended, on a thread of its own, so that
     * the loss reaches the program now rather than after NCCL's abort (0.2-2 s with NCCL 2.28.3 on H200). The
     * process's exit waits for it (counted before the thread starts); when the exit has already ended NCCL's calls,
     * the process's end frees it instead.
     */
    private static void abortInTheBackground(long handle) {
        if (!CommHealth.teardownAhead()) {
            return;
        }
        Thread t = new Thread(() -> {
            try {
                NcclNative.ncclCommAbort(handle);
            } finally {
                CommHealth.teardownDone();
            }
        }, "nccl4j-abort-made");
        t.setDaemon(true);
        t.start();
    }
}
