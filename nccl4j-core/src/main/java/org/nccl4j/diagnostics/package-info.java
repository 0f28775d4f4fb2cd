/**
 * Watching a running job from outside the collectives: optional tools a program attaches to a communicator.
 *
 * <ul>
 *   <li>{@link org.nccl4j.diagnostics.SlowRankMonitor}: each rank's compute and wait time per step, exchanged every
 *       N steps, naming the rank that holds the others back; and a bus-bandwidth probe.</li>
 *   <li>{@link org.nccl4j.diagnostics.NcclMetrics}: Micrometer counters and timers of a communicator's operations
 *       (an optional dependency: an unbound communicator loads no Micrometer class).</li>
 *   <li>{@link org.nccl4j.diagnostics.StepStats}: the median of step or operation times, over the measured steps
 *       only (the examples' per-step reports and the tools' benchmarks use it).</li>
 *   <li>{@link org.nccl4j.diagnostics.ExitStatus}: a rank program's exit status, 2 with one message on a machine
 *       without NCCL, a CUDA runtime or a GPU, 1 with NCCL's failure in one line (the examples and the tools).</li>
 * </ul>
 * All use only the public API of {@link org.nccl4j}; see {@code docs/diagnostics.md}.
 */
package org.nccl4j.diagnostics;
