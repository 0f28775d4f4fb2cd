package org.nccl4j;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.launch.LaunchInfo;
import org.nccl4j.launch.Rendezvous;

/**
 * Making a communicator: {@link Communicator#create(int, int, UniqueId, int, CommConfig)}'s checks and NCCL call
 * against a deadline, {@link Communicator#initAll(int...)}, and {@link Communicator#fromEnvironment(CommConfig)} from
 * what the launcher says: detection ({@link LaunchInfo}), the unique id's {@link Rendezvous}, and the liveness
 * channel, served by rank 0 and joined by every rank while NCCL makes the communicator, then attached to it, as
 * NCCL's bootstrap attaches RAS.
 *
 * <p>It lives here, not in {@code org.nccl4j.launch}, because it makes a communicator against a deadline
 * ({@link InitDeadline}) and opens the channel ({@link Liveness}), both internals of this package; the launch package
 * uses nothing of this one ({@code LayersTest}). What it reads of the environment, it reads through
 * {@code launch}: {@link LaunchInfo#detect} and {@link LaunchInfo#rankZeroAddress()}.
 */
final class Bootstrap {
    private Bootstrap() {
    }

    /** {@link Communicator#create(int, int, UniqueId, int, CommConfig)} against {@code deadline}. */
    static Communicator create(int rank, int size, UniqueId id, int device, CommConfig config,
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
        NcclLibrary lib = Nccl.library();
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
        Communicator c = Communicator.adopt(InitDeadline.finished(rc, out, fn, null, deadline), device, blocking,
                settings);
        c.configured(config);
        return c;
    }

    /** {@link Communicator#initAll(int...)}. */
    static List<Communicator> initAll(int... devices) {
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
        Nccl.library();
        WatchSettings settings = CommConfig.watchdogSettings(null, WatchdogConfig.fromEnvironment());
        long[] comms = new long[devices.length];
        int rc = NcclNative.ncclCommInitAll(comms, devices.length, devices.clone());
        if (rc != 0) {
            throw Errors.failure(rc, NcclFunction.ncclCommInitAll, null);
        }
        List<Communicator> out = new ArrayList<>(devices.length);
        try {
            for (int i = 0; i < devices.length; i++) {
                out.add(new Communicator(comms[i], devices[i], true, settings));
            }
        } catch (RuntimeException | Error e) {
            // the caller gets none of them: abort those wrapped already and those not yet wrapped
            for (Communicator c : out) {
                try {
                    c.abort();
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

    /** {@link Communicator#fromEnvironment(CommConfig)}. */
    static Communicator fromEnvironment(CommConfig config) {
        LaunchInfo launch = LaunchInfo.detect(System.getenv(), Cuda::deviceCount);
        Nccl.library();
        java.time.Duration timeout = CommConfig.initTimeout(config);
        long deadline = System.nanoTime() + timeout.toNanos();
        UniqueId id;
        if (launch.worldSize() == 1) {
            id = UniqueId.generate();
        } else {
            Rendezvous rv = Rendezvous.forLaunch(launch, timeout);
            id = UniqueId.of(rv.exchange(() -> UniqueId.generate().toBytes()));
            rv.awaitArrivals(deadline);   // the file route: names a rank that never came, before NCCL waits for it
        }
        String[] where = launch.worldSize() == 1 ? null : livenessAddress();
        Liveness served = null;
        if (where != null && launch.rank() == 0) {
            try {
                // before the communicator: up for every rank; on MASTER_ADDR's address, ranks in [0, worldSize)
                served = Liveness.serve(Integer.parseInt(where[1]), where[0], launch.worldSize());
            } catch (IOException e) {
                org.slf4j.LoggerFactory.getLogger(Communicator.class).warn("nccl4j: no liveness channel (port {}): {};"
                        + " a lost rank is found by NCCL's error or the timeout only", where[1], e.toString());
                where = null;
            }
        }
        // joined in the background while NCCL makes the communicator: its roster names who never arrived
        Liveness live = where == null ? null
                : Liveness.joinLater(served, launch.rank(), where[0], Integer.parseInt(where[1]), deadline);
        InitDeadline until = new InitDeadline(deadline, timeout, launch.rank(), launch.worldSize(), live);
        if (live != null) {
            // NCCL is called once every rank is there: a rank that never came is named here, at the deadline
            boolean commId = Rendezvous.forLaunchRoute() == Rendezvous.Route.COMM_ID;
            if (!live.awaitArrivals(launch.worldSize(), deadline, commId)) {
                live.close();
                throw until.expired("the arrival of every rank on the liveness channel", null, false);
            }
        }
        Communicator c;
        try {
            c = create(launch.rank(), launch.worldSize(), id, launch.device(), config, until);
        } catch (RuntimeException | Error e) {
            if (live != null) {
                live.close();
            }
            throw e;
        }
        if (live != null) {
            c.health().attachChannel(live);
        }
        return c;
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
}
