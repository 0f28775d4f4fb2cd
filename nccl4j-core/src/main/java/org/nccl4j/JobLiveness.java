package org.nccl4j;

/**
 * Joins the job's liveness channel at the start of a program, before the work that comes ahead of
 * {@link Communicator#fromEnvironment()} (loading a model, reading data, building the graph), so that a rank that dies
 * during that work is known to every other rank within 2 s instead of being, to them, a rank that never started,
 * which they would wait for until the init timeout ({@code NCCL4J_INIT_TIMEOUT}, 5 minutes). Not an NCCL function:
 * it opens nccl4j's own channel, which {@code fromEnvironment} then uses ({@link RankPhase}).
 *
 * <pre>{@code
 * public static void main(String[] args) {
 *     JobLiveness.join();                        // first: from here on, this rank's death is known to every rank
 *     Model model = Model.load(args[0]);         // minutes, and may fail (an OutOfMemoryError, a missing file)
 *     try (Communicator comm = Communicator.fromEnvironment()) {   // throws PeerLostDuringStartupException at once
 *         ...                                                       // when a rank was lost while it prepared
 *     }
 * }
 * }</pre>
 *
 * <p>What the other ranks learn when a joined rank leaves before its communicator is made: how it left (the signal,
 * the exception that left {@code main}, {@code System.exit}, or, after a SIGKILL such as the kernel's out-of-memory
 * killer, "its connection ended without a goodbye"), and that it was lost after joining the job, before the
 * rendezvous. A rank in {@code fromEnvironment} throws {@link PeerLostDuringStartupException} with those facts; a rank
 * still preparing learns it at its own {@code fromEnvironment}, or earlier from {@link #check()}. Joining needs what
 * {@code fromEnvironment} needs: the launcher's rank and world size, and {@code MASTER_ADDR} (rank 0's channel is on
 * {@code MASTER_PORT + 50}, or {@code NCCL4J_LIVENESS_PORT}).
 */
public final class JobLiveness {
    private JobLiveness() {
    }

    /**
     * Joins the job's liveness channel in the background (rank 0 opens it), for the next
     * {@link Communicator#fromEnvironment()} of this process to use; returns at once. Calling it again before that
     * {@code fromEnvironment} does nothing. A rank that ends from now on, in any way Java sees or by SIGKILL, is told
     * to every rank.
     *
     * @return true when this rank has a channel; false for a job of one rank, or without {@code MASTER_ADDR} (then
     *         nothing is opened, and {@code fromEnvironment} works as without this call)
     * @throws IllegalArgumentException when the launcher's variables are malformed (as {@code fromEnvironment})
     */
    public static boolean join() {
        return Bootstrap.joinEarly();
    }

    /**
     * Throws when another rank of the job is known to have been lost, or to have left, since this rank joined: for a
     * rank whose preparation is long, to stop early. Nothing without an open channel ({@link #join()} not called, or
     * its channel already taken by {@code fromEnvironment}).
     *
     * @throws PeerLostDuringStartupException naming the rank, its host and pid, its phase and how it left
     */
    public static void check() {
        Bootstrap.checkEarly();
    }
}
