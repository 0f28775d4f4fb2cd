package org.nccl4j.control;

import java.io.IOException;

/**
 * The liveness channel's test hooks for the tests of {@code org.nccl4j}, which drive channels of their own (loopback)
 * but cannot reach the package-private ones: serving and joining with the environment's secret, a rank's death
 * without a goodbye, the cause that follows a departure, and how long an unclean departure's pending collectives are
 * given.
 */
public final class Channels {
    /** {@link Departures}' grace for the collectives a departed rank issued and this rank has pending. */
    public static final long DEPARTURE_GRACE_NANOS = Departures.GRACE_NANOS;

    private Channels() {
    }

    /**
     * Rank 0's side on {@code port} (every address), joined by rank 0 itself.
     *
     * @param port a free port
     * @return rank 0's channel
     * @throws IOException when it cannot listen or connect
     */
    public static Liveness rankZero(int port) throws IOException {
        return Liveness.join(Liveness.serve(port), 0, "127.0.0.1", port);
    }

    /**
     * Rank {@code rank} joins the channel served on loopback at {@code port}.
     *
     * @param rank its rank
     * @param port rank 0's port
     * @return its channel
     * @throws IOException when it cannot connect
     */
    public static Liveness join(int rank, int port) throws IOException {
        return Liveness.join(null, rank, "127.0.0.1", port);
    }

    /**
     * The rank of {@code l} dies: its connection ends without a goodbye.
     *
     * @param l its channel
     */
    public static void dropWithoutGoodbye(Liveness l) {
        l.dropWithoutGoodbye();
    }

    /**
     * Sends the cause of this rank's departure, as the uncaught-exception handler does.
     *
     * @param l its channel
     * @param cause the cause
     */
    public static void cause(Liveness l, String cause) {
        l.cause(cause);
    }
}
