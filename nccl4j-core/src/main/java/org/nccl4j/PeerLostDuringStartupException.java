package org.nccl4j;

/**
 * A rank was lost while the communicator was being made, so it will never be made: thrown by
 * {@link Communicator#fromEnvironment} on every other rank within 2 s of the loss, instead of a wait for the init
 * timeout. The message names this rank, the rank lost with its host and process id, the phase it was in
 * ({@link RankPhase}) and how it left, as it was known: e.g. {@code "rank 0 of 2: rank 1 (gpu7, pid 934) was lost
 * during NCCL initialization (SIGTERM); the communicator was not made (NCCL initialization abandoned). Restart the
 * job (or the lost rank's launcher restarts it), after fixing what ended rank 1"}.
 *
 * <p>How a rank left reads as: the signal that ended it ({@code SIGTERM}, {@code SIGINT}, {@code SIGHUP}), the
 * exception that left its {@code main}, the line that called {@code System.exit}, or, when its process said nothing
 * (SIGKILL, a crash, its host or network gone), {@code its connection ended without a goodbye}.
 *
 * <p>Its {@link #code()} is {@code ncclRemoteError} (6); its {@link #operation()} is the step of this rank that
 * ended: {@code rendezvous}, {@code arrival} or the NCCL function.
 */
public class PeerLostDuringStartupException extends NcclException {
    private static final long serialVersionUID = 1L;
    /** {@code ncclRemoteError}. */
    private static final int REMOTE_ERROR = 6;

    private final int lostRank;
    private final String host;
    private final long pid;
    private final RankPhase phase;
    private final String how;

    PeerLostDuringStartupException(String message, String operation, int rank, int lostRank, String host, long pid,
            RankPhase phase, String how, Throwable cause) {
        super(message, operation, REMOTE_ERROR, null, rank, cause);
        this.lostRank = lostRank;
        this.host = host;
        this.pid = pid;
        this.phase = phase;
        this.how = how;
    }

    /**
     * The rank that was lost (its launch rank).
     *
     * @return the rank
     */
    public int lostRank() {
        return lostRank;
    }

    /**
     * The lost rank's host, as it said when it joined; null when not known.
     *
     * @return the host name
     */
    public String lostHost() {
        return host;
    }

    /**
     * The lost rank's process id, as it said when it joined; -1 when not known.
     *
     * @return the pid
     */
    public long lostPid() {
        return pid;
    }

    /**
     * The phase the lost rank was in when it left.
     *
     * @return the phase
     */
    public RankPhase lostPhase() {
        return phase;
    }

    /**
     * How it left: {@code SIGTERM}, {@code IllegalStateException: ...}, {@code System.exit at ...}, or
     * {@code its connection ended without a goodbye}.
     *
     * @return the words
     */
    public String how() {
        return how;
    }
}
