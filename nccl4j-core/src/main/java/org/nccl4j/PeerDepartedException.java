package org.nccl4j;

/**
 * A peer left and this rank's pending collective can no longer complete: the peer closed its communicator, aborted
 * it, failed or ended its process after its last collective, and this rank is waiting in one the peer never issued
 * (or, after an abort, failure or exit, in one the peer cancelled). The message names the operation, the peer (rank,
 * host, pid), how it left, its last collective and, where it sent one, its cause, for example {@code rank 0 of 2:
 * allReduce #4 cannot complete: rank 1 (gpu7, pid 4242) closed its communicator after allReduce #3, its last
 * (IllegalStateException: data loader failed on rank 1)}. Known through the liveness channel that
 * {@link Communicator#fromEnvironment} opens; thrown by the watchdog as the other failures are.
 */
public class PeerDepartedException extends RemoteErrorException {
    private static final long serialVersionUID = 1L;

    PeerDepartedException(Details d) {
        super(message(d), d, null);
    }

    private PeerDepartedException(String message, Details d, Throwable cause) {
        super(message, d, cause);
    }

    @Override
    CommunicatorFailedException again() {
        return new PeerDepartedException(getMessage(), detailsOf(this), this);
    }
}
