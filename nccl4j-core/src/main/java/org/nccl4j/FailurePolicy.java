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
     * {@link CommunicatorFailedException}; the program decides what to do.
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
    CALLBACK;

    /** The exit status of {@link #EXIT}: 70 ({@code EX_SOFTWARE} of sysexits.h). */
    public static final int EXIT_STATUS = 70;
}
