package org.nccl4j;

/**
 * What the watchdog does once it has found a communicator broken, recorded the failure, written the flight record,
 * logged it and aborted the communicator ({@code ncclCommAbort}). Set per communicator with
 * {@link CommConfig.Builder#onFailure(FailurePolicy)}, process-wide with {@code NCCL4J_ON_FAILURE} or the system
 * property {@code nccl4j.onFailure} ({@code throw} or {@code exit}).
 */
public enum FailurePolicy {
    /**
     * The default: threads waiting on the communicator's streams and every later call on it throw a
     * {@link CommunicatorFailedException}; the program decides what to do. A rank that cannot be told, stuck in its
     * own code while its peers gave up waiting for it, is halted with {@link #EXIT_STATUS} once it has issued nothing
     * for the operation timeout and a grace has passed ({@code NCCL4J_LEFT_BEHIND_EXIT}, 500 ms; {@code off} keeps it
     * running until its next call).
     */
    THROW,
    /**
     * Halt the process with {@link #EXIT_STATUS} at once, without running shutdown hooks (which could wait on the
     * GPU), as PyTorch's {@code TORCH_NCCL_ASYNC_ERROR_HANDLING=1} does. For jobs whose launcher restarts them.
     */
    EXIT,
    /**
     * As {@link #THROW}, and the {@link FailureListener} given with
     * {@link CommConfig.Builder#onFailure(FailureListener)} is called on the watchdog's thread.
     */
    CALLBACK,
    /**
     * As {@link #THROW}, but the communicator is not aborted: it is left for {@link Communicator#shrink(int...)} to
     * go on without the lost ranks ({@code NCCL_SHRINK_ABORT} then aborts its pending operations). Waits on its
     * streams poll ({@code cudaStreamQuery}, {@code cudaEventQuery}) instead of blocking in CUDA, so that the failure
     * can release them while its kernels still hang. {@link Communicator#abort()} or {@link Communicator#close()}
     * it once shrunk.
     */
    RECOVER;

    /** The exit status of {@link #EXIT}: 70 ({@code EX_SOFTWARE} of sysexits.h). */
    public static final int EXIT_STATUS = 70;
}
