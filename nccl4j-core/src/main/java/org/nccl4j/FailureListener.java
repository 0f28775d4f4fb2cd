package org.nccl4j;

/**
 * Called by the watchdog when it has found a communicator broken ({@link FailurePolicy#CALLBACK}), after the
 * communicator was aborted and its flight record written. Runs on the watchdog's thread: return quickly (a listener
 * that blocks for the stuck timeout, {@code NCCL4J_WATCHDOG_STUCK_TIMEOUT}, counts as a stuck watchdog); an
 * exception it throws is logged and ignored. Also called, on the watchdog monitor's thread, with a
 * {@link WatchdogStuckException} when the watchdog's thread is stuck: then the communicator is not aborted.
 */
@FunctionalInterface
public interface FailureListener {
    /**
     * The communicator failed.
     *
     * @param communicator the communicator, already aborted (failed and kept, for a {@link WatchdogStuckException})
     * @param failure what happened; the same failure the communicator's later calls throw
     */
    void onFailure(Communicator communicator, CommunicatorFailedException failure);
}
