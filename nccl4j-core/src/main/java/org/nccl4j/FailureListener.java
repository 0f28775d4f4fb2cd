package org.nccl4j;

/**
 * Called by the watchdog when it has found a communicator broken ({@link FailurePolicy#CALLBACK}), after the
 * communicator was aborted and its flight record written. Runs on the watchdog's thread: return quickly; an
 * exception it throws is logged and ignored.
 */
@FunctionalInterface
public interface FailureListener {
    /**
     * The communicator failed.
     *
     * @param communicator the communicator, already aborted
     * @param failure what happened; the same failure the communicator's later calls throw
     */
    void onFailure(Communicator communicator, CommunicatorFailedException failure);
}
