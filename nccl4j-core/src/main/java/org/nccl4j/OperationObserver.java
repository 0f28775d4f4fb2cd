package org.nccl4j;

import org.nccl4j.jni.NcclFunction;

/**
 * Sees what a {@link Communicator} does: every operation it enqueues, after NCCL accepted it (the communicator's
 * running sequence number, the NCCL function, the bytes this rank sends or reduces, and the stream); the operations
 * the watchdog finds completed; and a failure the watchdog declares. {@link org.nccl4j.diagnostics.NcclMetrics} is
 * one; set one with {@link Communicator#observe}. {@link #enqueued} is called on the caller's thread, the others on
 * the watchdog's ({@link #failed} with a {@link WatchdogStuckException} on the watchdog monitor's); none may block or
 * allocate.
 */
public interface OperationObserver {
    /**
     * An operation was enqueued.
     *
     * @param comm the communicator
     * @param sequence its number in the communicator, from 1
     * @param operation the NCCL function
     * @param bytes the bytes this rank sends or reduces
     * @param stream the stream handle
     */
    void enqueued(Communicator comm, long sequence, NcclFunction operation, long bytes, long stream);

    /**
     * The watchdog found operations {@code from..to} completed, at {@code nowNanos} ({@link System#nanoTime()}): at a
     * completion marker or when a wait on a stream or event returned, so within the watchdog's poll interval of the
     * true completion.
     *
     * @param comm the communicator
     * @param from the first sequence number completed
     * @param to the last
     * @param nowNanos when the watchdog saw it
     */
    default void completed(Communicator comm, long from, long to, long nowNanos) {
    }

    /**
     * The watchdog declared the communicator failed.
     *
     * @param comm the communicator
     * @param failure what it found
     */
    default void failed(Communicator comm, CommunicatorFailedException failure) {
    }
}
