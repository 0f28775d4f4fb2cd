package org.nccl4j;

/**
 * An operation of the communicator did not complete within its timeout ({@link CommConfig.Builder#timeout},
 * {@code NCCL4J_TIMEOUT}): a peer never joined it, is stuck before it, or joined a different operation (a rank
 * that skipped, added or reordered a collective). The verdict reads {@code "allReduce #3 did not complete within
 * 10 s: ..."}; {@code scripts/nccl4j-trace} over every rank's trace names the rank that diverged.
 */
public class CollectiveTimeoutException extends CommunicatorFailedException {
    private static final long serialVersionUID = 1L;

    CollectiveTimeoutException(Details d) {
        super(message(d), d, null);
    }

    private CollectiveTimeoutException(String message, Details d, Throwable cause) {
        super(message, d, cause);
    }

    @Override
    CommunicatorFailedException again() {
        return new CollectiveTimeoutException(getMessage(), detailsOf(this), this);
    }
}
