package org.nccl4j;

/**
 * Where a rank is in its life, from process start to exit: the one model that the liveness channel, the rendezvous,
 * the start-up guard, the watchdog, teardown and the farewell at exit follow. A rank that leaves, however it leaves,
 * is named to every other rank with the phase it was in (docs/reliability.md has the table of what each other rank
 * learns, and how soon, for every phase and every way of leaving).
 *
 * <p>{@link Communicator#fromEnvironment} goes through the start-up phases in this order: the rank joins rank 0's
 * liveness channel first ({@link #JOINED}), so that from then on its death is known to every rank; then it takes
 * the unique id ({@link #RENDEZVOUS}, {@link #ID_TAKEN}), waits for every rank to have arrived, and calls NCCL
 * ({@link #NCCL_INIT}). A rank lost in any of these phases ends the start-up of every other rank within 2 s with
 * {@link PeerLostDuringStartupException}. Before {@link #JOINED} a rank is not known to the others: one that leaves
 * there in a way Java sees (a signal, an exception, {@code System.exit}) once {@code fromEnvironment} has begun still
 * joins to say so, at exit, and is named as lost {@link #LAUNCHED} ("before it joined the job"); one that dies before
 * that, or by SIGKILL, never started as far as they can tell, and the init timeout ({@code NCCL4J_INIT_TIMEOUT})
 * bounds their wait.
 */
public enum RankPhase {
    /** The process runs, and has not reached rank 0's liveness channel yet. */
    LAUNCHED("before it joined the job"),
    /** Said hello on rank 0's liveness channel: from now on its death is known to every rank. */
    JOINED("after joining the job, before the rendezvous"),
    /** Exchanging NCCL's unique id with rank 0 ({@code NCCL4J} rendezvous, file or {@code NCCL_COMM_ID}). */
    RENDEZVOUS("during the rendezvous"),
    /** Holds the unique id; waits for every rank to arrive before NCCL is called. */
    ID_TAKEN("after taking the unique id"),
    /** Inside NCCL's communicator initialization ({@code ncclCommInitRank}, {@code ncclCommInitRankConfig}). */
    NCCL_INIT("during NCCL initialization"),
    /** The communicator is made; between collectives. */
    READY("with its communicator ready"),
    /** A collective issued and not yet complete. */
    IN_COLLECTIVE("inside a collective"),
    /** Closing its communicator ({@code close()}: the agreement on the last collective, then finalize). */
    CLOSING("while closing its communicator"),
    /** Making a new communicator from a failed one ({@code shrink}, {@code reform}, {@code grow}). */
    RECOVERING("during recovery"),
    /** The rank has left. */
    GONE("after it left");

    private final String during;

    RankPhase(String during) {
        this.during = during;
    }

    /**
     * How the phase reads in a message: {@code during NCCL initialization}, {@code after taking the unique id}.
     *
     * @return the words, as in "rank 1 (gpu7, pid 934) was lost during NCCL initialization"
     */
    public String during() {
        return during;
    }
}
