package org.nccl4j.control;

/**
 * The communicator a liveness channel serves, as the control plane sees it: what its heartbeats and answers carry
 * (the generation, the collectives issued) and what the process's exit does to it ({@link Farewell}). The core's
 * per-communicator state implements it and attaches itself ({@link Liveness#attach}); the control plane names nothing
 * above it. Part of nccl4j's internals, not of its API.
 */
public interface Attached {
    /**
     * How many recoveries led to the communicator: 0 for one made directly; each recovery adds one.
     *
     * @return the generation
     */
    int generation();

    /**
     * Its collectives in the terms every rank shares.
     *
     * @return the ledger
     */
    Ledger ledger();

    /**
     * The process is exiting: no operation is taken from now on, and one inside NCCL on another thread is let finish,
     * so that the last collective is the one told.
     *
     * @param how why, for the message of later calls
     */
    void stopIssuing(String how);

    /**
     * This rank leaves while its peers may go on: its flight record is written, unless one was.
     *
     * @param what what it did, after "rank N"
     */
    void recordDeparture(String what);

    /**
     * Whether operations this rank issued on it may still be running: it has not failed, is not closed, and not every
     * operation it recorded is known complete.
     *
     * @return true while the exit should wait for them
     */
    boolean ownOperationsPending();

    /**
     * The process is ending: aborts the communicator unless a thread is closing or aborting it.
     *
     * @param cause how the process ends, for the message of later calls
     */
    void abortAtExit(String cause);
}
