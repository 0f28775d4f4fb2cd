/**
 * nccl4j's checked API over NVIDIA NCCL: communicators and their collectives, the CUDA resources they run on, and
 * the watchdog that keeps a job from hanging. This package is what a program imports; the sub-packages hold what
 * is needed before a communicator exists ({@link org.nccl4j.launch}), what watches a running job from outside
 * ({@link org.nccl4j.diagnostics}) and the flight recorder's data ({@link org.nccl4j.trace}). The imports go one way:
 * this package uses {@code launch} and {@code trace}, which use nothing of it; {@code diagnostics} uses only its
 * public API.
 *
 * <h2>Which file holds what</h2>
 * <h3>The collective API</h3>
 * <ul>
 *   <li>{@link org.nccl4j.Communicator}: one rank of an {@code ncclComm_t}. Read it as a table of contents: making
 *       one (create, fromEnvironment, initAll, split), recovery (shrink, recover, grow), queries, then every
 *       collective's three public forms (buffers, in place, raw addresses) in NCCL's order, each a one-line call
 *       into the one path at the end of the file that checks arguments, records the operation and makes the single
 *       NCCL call.</li>
 *   <li>{@code Collective}: the shape of each operation (which buffer gives the count, which holds a block per
 *       rank, which is used at the root only) that the one path reads.</li>
 *   <li>{@link org.nccl4j.Group} ({@code ncclGroupStart/End}), {@link org.nccl4j.DataType}, {@link org.nccl4j.ReduceOp}
 *       (built-in operators and PreMulSum), {@link org.nccl4j.UniqueId}, {@link org.nccl4j.CommConfig}
 *       ({@code ncclConfig_t} and nccl4j's per-communicator settings) with {@link org.nccl4j.CtaPolicy},
 *       {@link org.nccl4j.Nccl} (the loaded library, groups, open resources), {@link org.nccl4j.GradientBuckets}
 *       (bucketed gradient all-reduce).</li>
 *   <li>{@link org.nccl4j.Window}: a buffer registered as a symmetric window ({@code ncclCommWindowRegister}),
 *       alone or with the memory it allocates ({@code ncclMemAlloc}); what NCCL asks of it and what its symmetric
 *       kernels give. Kept out of Communicator, which only delegates to it.</li>
 *   <li>Errors: {@link org.nccl4j.NcclException} with {@link org.nccl4j.NcclResult}; {@code Errors} maps NCCL's
 *       status codes to them and holds the argument-error helpers.</li>
 * </ul>
 * <h3>CUDA resources</h3>
 * <ul>
 *   <li>{@link org.nccl4j.DeviceBuffer}, {@link org.nccl4j.Stream}, {@link org.nccl4j.Event},
 *       {@link org.nccl4j.CudaGraph}, {@link org.nccl4j.Cuda}, {@link org.nccl4j.CudaException}.</li>
 *   <li>{@code CudaBackend} is the seam of every CUDA runtime call ({@code PresetsCudaBackend} over the JavaCPP
 *       Presets; the tests put a fake behind it). {@code Capture} tracks graph captures; {@code Leaks} reports what
 *       was left open.</li>
 *   <li>They live here, not in a sub-package, because streams and graphs carry the watchdog's hooks: a stream
 *       knows the communicators that use it (so a wait on it throws their failure), and a graph launch is recorded
 *       by the communicators captured in it.</li>
 * </ul>
 * <h3>Reliability</h3>
 * <ul>
 *   <li>{@code Watchdog}: one daemon thread that watches every communicator (completion markers, asynchronous
 *       errors, timeouts), then records, aborts and applies the {@link org.nccl4j.FailurePolicy}.
 *       {@link org.nccl4j.WatchdogConfig} holds its process-wide settings from {@code NCCL4J_*} variables.
 *       {@code WatchdogMonitor}: a second daemon thread that watches the watchdog's heartbeat and reports, dumps and
 *       applies the policy when the watchdog is stuck.</li>
 *   <li>The failures: {@link org.nccl4j.CommunicatorFailedException} and its kinds
 *       {@link org.nccl4j.CollectiveTimeoutException}, {@link org.nccl4j.RemoteErrorException} (and its
 *       {@link org.nccl4j.PeerDepartedException}), {@link org.nccl4j.RanksDivergedException} and
 *       {@link org.nccl4j.WatchdogStuckException}; {@link org.nccl4j.CloseTimeoutException} from {@code close()};
 *       {@link org.nccl4j.CollectiveMismatchException} from {@code CollectiveCheck} ({@code NCCL4J_CHECK_COLLECTIVES});
 *       {@link org.nccl4j.InitTimeoutException} from {@code InitDeadline}.</li>
 *   <li>{@code Liveness}: the channel on which ranks say they are alive, so that a lost rank is named with its host
 *       and pid, authenticated by {@link org.nccl4j.launch.JobSecret}; {@link org.nccl4j.FailureListener} hears of
 *       failures. Over it: {@code Departures} (how peers left, and what that means for this rank's pending
 *       collectives), {@code Ledger} (a communicator's collectives, numbered and fingerprinted),
 *       {@code Agreement} (rank 0's comparison of the fingerprints), {@code Departing} (telling and recording a
 *       departure).</li>
 *   <li>The end of a communicator or a process: {@code Teardown} (finalize only when every rank closes after the
 *       same collective, else abort; the close deadline), {@code Farewell} (signals, uncaught exceptions and the exit
 *       told to the peers; the exit waits for NCCL teardowns), {@code Bounded} (a daemon thread waited for at most a
 *       given time).</li>
 *   <li>{@link org.nccl4j.OperationObserver}: the hook through which {@link org.nccl4j.diagnostics.NcclMetrics}
 *       sees operations. {@link org.nccl4j.NcclLog} routes NCCL's own log lines into SLF4J.</li>
 * </ul>
 */
package org.nccl4j;
