package org.nccl4j;

import java.io.IOException;
import org.nccl4j.launch.LaunchInfo;
import org.nccl4j.launch.Rendezvous;

/**
 * Making a communicator from what the launcher says ({@link Communicator#fromEnvironment(CommConfig)}): detection
 * ({@link LaunchInfo}), the unique id's {@link Rendezvous}, and the liveness channel, served by rank 0 and joined by
 * every rank while NCCL makes the communicator, then attached to it, as NCCL's bootstrap attaches RAS.
 *
 * <p>It lives here, not in {@code org.nccl4j.launch}, because it makes a communicator against a deadline
 * ({@link InitDeadline}) and opens the channel ({@link Liveness}), both internals of this package; the launch package
 * uses nothing of this one ({@code LayersTest}). What it reads of the environment, it reads through
 * {@code launch}: {@link LaunchInfo#detect} and {@link LaunchInfo#rankZeroAddress()}.
 */
final class Bootstrap {
    private Bootstrap() {
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
            c = Communicator.create(launch.rank(), launch.worldSize(), id, launch.device(), config, until);
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
        String explicit = org.nccl4j.jni.NcclNative.getenv(Liveness.PORT_VARIABLE);
        if (explicit != null && explicit.trim().matches("[0-9]{1,5}")) {
            return new String[] {host.trim(), explicit.trim()};
        }
        if (base == null || !base.trim().matches("[0-9]{1,5}")) {
            return null;
        }
        int p = Integer.parseInt(base.trim()) + Liveness.PORT_OFFSET;
        return p <= 65535 ? new String[] {host.trim(), Integer.toString(p)} : null;
    }
}
