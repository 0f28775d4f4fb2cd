package org.nccl4j;

/**
 * The ranks issued different collectives: rank 0 compared the running fingerprints that every rank's heartbeat
 * reports (operation, count, data type, reduction operator and root of each collective) and found the first that
 * differs, for example {@code collective #4 differs between ranks: rank 0 allReduce count 1048576 ncclFloat32 ncclSum,
 * rank 1 allReduce count 2097152 ncclFloat16 ncclSum (count and data type differ)}. Every rank fails with it, within
 * about a second of the diverging call, without {@code NCCL4J_CHECK_COLLECTIVES}. Known through the liveness channel
 * that {@link Communicator#fromEnvironment} opens; thrown by the watchdog as the other failures are.
 */
public class RanksDivergedException extends CommunicatorFailedException {
    private static final long serialVersionUID = 1L;

    RanksDivergedException(Details d) {
        super(message(d), d, null);
    }

    private RanksDivergedException(String message, Details d, Throwable cause) {
        super(message, d, cause);
    }

    @Override
    CommunicatorFailedException again() {
        return new RanksDivergedException(getMessage(), detailsOf(this), this);
    }
}
