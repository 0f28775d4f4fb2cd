/**
 * The control plane of a job, beside NCCL's data plane: who is alive, who left and how, what they said as they left,
 * and what all ranks agree on. <b>Part of nccl4j's internals, not of its API:</b> its public types and methods are
 * public only so that {@link org.nccl4j} can reach them across the package boundary; a program uses
 * {@link org.nccl4j.Communicator} and the exceptions it throws, never these, and they may change in any release.
 *
 * <h2>Which file holds what</h2>
 * <ul>
 *   <li>{@link org.nccl4j.control.Liveness}: the liveness channel's facade, one per rank, which the rest of the core
 *       calls (the roster, the losses, the departures, a rank's phase): every rank keeps a TCP connection to rank 0 so
 *       that a rank that dies is named with its host and pid within milliseconds, authenticated by
 *       {@link org.nccl4j.launch.JobSecret}. Its parts: {@code LivenessWire} (the lines and their bounds, the phases'
 *       names on the wire), {@code LivenessHub} (rank 0's serving side), {@code LivenessClient} (a rank's connecting
 *       side).</li>
 *   <li>Over it: {@link org.nccl4j.control.Departures} (how peers left, and the verdict on this rank's pending
 *       collectives), {@link org.nccl4j.control.Ledger} (a communicator's collectives, numbered and fingerprinted),
 *       {@code Agreement} (rank 0's comparison of the fingerprints), {@link org.nccl4j.control.Survivors} (the roll
 *       call of the ranks that remain when rank 0 is gone).</li>
 *   <li>{@link org.nccl4j.control.Farewell}: the end of a process told to its peers (the end of main,
 *       {@code System.exit}, an uncaught exception, SIGTERM).</li>
 *   <li>Two helpers the whole core shares: {@link org.nccl4j.control.Durations} (durations as users write them and as
 *       nccl4j prints them) and {@link org.nccl4j.control.BoundedWait} (work waited for at most a given time).</li>
 * </ul>
 *
 * <h2>One way</h2>
 * This package sits below {@link org.nccl4j}: it uses {@link org.nccl4j.launch} and {@link org.nccl4j.trace}, and of
 * {@link org.nccl4j} only the public value {@link org.nccl4j.RankPhase}, which names nothing of it ({@code LayersTest}
 * checks both). What it needs from above is an interface of its own that a class of {@link org.nccl4j} implements:
 * {@link org.nccl4j.control.Attached} (the communicator a channel serves, which the core's per-communicator state
 * implements) and {@link org.nccl4j.control.Farewell.NcclUnderWay} (the NCCL calls the exit waits for). The classes
 * of {@link org.nccl4j} that act on a communicator when a peer leaves ({@code CommHealth}'s reports,
 * {@code LeftBehindExit}, {@code StartupGuard}, {@code InitDeadline}, {@code Teardown}) stay there: they call NCCL,
 * or make the public exceptions, and use this package.
 */
package org.nccl4j.control;
