package org.nccl4j;

import org.nccl4j.jni.NcclFunction;

/**
 * Sees every operation a {@link Communicator} enqueues, after NCCL accepted it: the communicator's running
 * sequence number, the NCCL function, the bytes this rank sends or reduces, and the stream. The hook for a
 * watchdog; it is called on the caller's thread and must not block or allocate.
 */
interface OperationObserver {
    void enqueued(Communicator comm, long sequence, NcclFunction operation, long bytes, long stream);
}
