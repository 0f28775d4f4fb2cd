/**
 * nccl4j's checked API over NVIDIA NCCL: communicators and their collectives, the CUDA resources they run on, and
 * the watchdog that keeps a job from hanging. This package is what a program imports; the sub-packages hold what
 * is needed before a communicator exists ({@link org.nccl4j.launch}), the control plane of the job (the liveness
 * channel, departures and agreement: {@link org.nccl4j.control}, internals), what watches a running job from outside
 * ({@link org.nccl4j.diagnostics}) and the flight recorder's data ({@link org.nccl4j.trace}). The imports go one way:
 * this package uses {@code control}, {@code launch} and {@code trace}; {@code launch} uses nothing of it and
 * {@code trace} only {@code launch}, {@code control} only the public value {@link org.nccl4j.RankPhase};
 * {@code diagnostics} uses only its public API.
 *
 * <h2>Which file holds what</h2>
 * <h3>The collective API</h3>
 * <ul>
 *   <li>{@link org.nccl4j.Communicator}: one rank of an {@code ncclComm_t}. Read it as a table of contents: making
 *       one (create, fromEnvironment, initAll), the communicators made from it and recovery (split, shrink,
 *       recover, grow), queries, operators and registrations, then every collective's three public forms (buffers,
 *       in place, raw addresses) in NCCL's order, each a one-line call into the one path; then teardown. What is
 *       not the communicator's own lives beside it, reached by one-line delegations: {@code Bootstrap} (create's
 *       checks and NCCL call, initAll, and fromEnvironment: launch detection, the id's rendezvous, and the liveness
 *       channel served, joined and attached, as NCCL's bootstrap attaches RAS), {@code Recovery} (split, shrink,
 *       reform, recover and its rendezvous, revoke, grow, join, and the child they make); both make the
 *       {@code CommParts} of a communicator (handle, settings, configuration, generation, channel), which the
 *       Communicator's constructor takes whole, and never name the Communicator: Recovery reads its parent's
 *       {@code CommHealth}; {@code Dispatch} and {@code CommHealth} (below), and
 *       {@link org.nccl4j.ReduceOp.PreMulSum}, whose {@code ncclRedOpCreatePreMulSum} and {@code ncclRedOpDestroy}
 *       it calls itself.</li>
 *   <li>{@code Dispatch}: the one path of a communicator's collectives, one per communicator, which checks the
 *       arguments ({@code Arguments}), makes the single NCCL call (or {@code ComposedCollectives}'s group of sends and
 *       receives), records the operation and publishes it to the watchdog and the observer.</li>
 *   <li>{@code Collective}: the shape of each operation (which buffer gives the count, which holds a block per
 *       rank, which is used at the root only) that the one path reads.</li>
 *   <li>{@link org.nccl4j.Group} ({@code ncclGroupStart/End}), {@link org.nccl4j.DataType}, {@link org.nccl4j.ReduceOp}
 *       (built-in operators and PreMulSum), {@link org.nccl4j.UniqueId}, {@link org.nccl4j.CommConfig}
 *       ({@code ncclConfig_t} and nccl4j's per-communicator settings) with {@link org.nccl4j.CtaPolicy},
 *       {@link org.nccl4j.Nccl} (the loaded library, groups, open resources: the public face of {@code NcclLoad},
 *       the library opened once, and {@code Groups}, the process's open groups), {@link org.nccl4j.GradientBuckets}
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
 *   <li>{@code CudaBackend} is the seam of every CUDA runtime call ({@code NativeCudaBackend} over
 *       nccl4j-native's CUDA 12 or 13 runtime; the tests put a fake behind it); {@code CudaCalls} opens it once,
 *       turns a status into a {@link org.nccl4j.CudaException} and runs work on a device, and {@code Cuda} is its
 *       public face. {@code Capture} tracks graph captures; {@code Leaks} reports what was left open.</li>
 *   <li>They live here, not in a sub-package, because streams and graphs carry the watchdog's hooks: a stream
 *       knows the communicators that use it (so a wait on it throws their failure), and a graph launch is recorded
 *       by the communicators captured in it.</li>
 * </ul>
 * <h3>Reliability</h3>
 * <ul>
 *   <li>{@code CommHealth}: one communicator as the watchdog, the flight recorder, the metrics and the liveness channel
 *       see it (its identity and lifecycle state, failure, recorder, ledger, published sequence, streams used,
 *       channel, trace dumping, the flight record written when a peer fails or this rank leaves, the failure told to
 *       the peers) and the hooks through which they act on it. The Communicator holds one in a final field; the
 *       classes below talk to it, never to the Communicator. Streams, events and graphs know it as a
 *       {@code Stream.User}, {@code Errors} as an {@code Errors.Source}; what must reach the program's observer and
 *       listener (which are given the Communicator) goes through its {@code Hooks}, which the Communicator's own
 *       {@code ProgramHooks} implements. {@code WatchSettings} holds a communicator's resolved watchdog
 *       settings.</li>
 *   <li>{@code Watchdog}: one daemon thread that watches every communicator (completion markers, asynchronous
 *       errors, timeouts), then records, aborts and applies the {@link org.nccl4j.FailurePolicy}.
 *       {@link org.nccl4j.WatchdogConfig} holds its process-wide settings from {@code NCCL4J_*} variables.
 *       {@code WatchdogMonitor}: a second daemon thread that watches the watchdog's heartbeat (through its own
 *       {@code Watched}, which the watchdog implements) and reports, dumps and applies the policy when the watchdog is
 *       stuck.</li>
 *   <li>The failures: {@link org.nccl4j.CommunicatorFailedException} and its kinds
 *       {@link org.nccl4j.CollectiveTimeoutException}, {@link org.nccl4j.RemoteErrorException} (and its
 *       {@link org.nccl4j.PeerDepartedException}), {@link org.nccl4j.RanksDivergedException} and
 *       {@link org.nccl4j.WatchdogStuckException}; {@link org.nccl4j.CloseTimeoutException} from {@code close()};
 *       {@link org.nccl4j.CollectiveMismatchException} from {@code CollectiveCheck} ({@code NCCL4J_CHECK_COLLECTIVES});
 *       {@link org.nccl4j.InitTimeoutException} from {@code InitDeadline}.</li>
 *   <li>The control plane lives in {@link org.nccl4j.control}: the liveness channel on which ranks say they are
 *       alive ({@code Liveness}), so that a lost rank is named with its host and pid, and over it the departures, the
 *       ledger of each communicator's collectives, rank 0's comparison of their fingerprints, the roll call after rank
 *       0's loss and the farewell at exit. Here, what acts on a communicator because of it: {@code CommHealth}
 *       (telling a failure, and recording a departure in the flight record), {@code LeftBehindExit} (ending a rank
 *       stuck in its own code that its peers left behind), {@code StartupGuard} (a peer lost during start-up; the
 *       exit's wait for NCCL, {@code AT_EXIT}), {@code InitDeadline}. {@link org.nccl4j.FailureListener} hears of
 *       failures.</li>
 *   <li>The end of a communicator: {@code Teardown} (close and abort: finalize only when every rank closes after the
 *       same collective, else abort; the close deadline).</li>
 *   <li>{@link org.nccl4j.OperationObserver}: the hook through which {@link org.nccl4j.diagnostics.NcclMetrics}
 *       sees operations. {@link org.nccl4j.NcclLog} routes NCCL's own log lines into SLF4J.</li>
 * </ul>
 *
 * <h2>Layers</h2>
 * Inside this package the classes that make a communicator work stand in layers, and a class names, in code, only
 * classes of its own layer or below ({@code LayersTest} checks it), bottom up:
 * <ol>
 *   <li>the libraries, CUDA resources and errors: {@code Errors}, {@code Leaks}, {@code NcclLog}, {@code NcclLoad},
 *       {@code Groups}, {@code Capture}, {@code CudaCalls} with the backends, {@code Stream}, {@code Event},
 *       {@code CudaGraph}, {@code Cuda}, {@code DeviceBuffer};</li>
 *   <li>a communicator's health: {@code CommHealth}, {@code CollectiveCheck}, {@code CommBound}, {@code InitDeadline},
 *       {@code LeftBehindExit}, {@code StartupGuard};</li>
 *   <li>the watchdog, and the teardown that takes a communicator off it: {@code Watchdog}, {@code WatchdogMonitor},
 *       {@code Teardown};</li>
 *   <li>the making of one: {@code CommParts}, {@code Bootstrap}, {@code Recovery}, {@link org.nccl4j.JobLiveness};</li>
 *   <li>{@code Communicator}, with {@code Dispatch} (the one path of its collectives), {@code Arguments} (their
 *       argument checks, thrown out of line) and {@code ComposedCollectives} (all-to-all, gather and scatter from
 *       sends and receives, for an NCCL older than 2.28);</li>
 *   <li>built on its API: {@link org.nccl4j.Window}, {@link org.nccl4j.GradientBuckets},
 *       {@link org.nccl4j.ParameterShards}.</li>
 * </ol>
 * Every layer may use the control plane, which names none of them. The one arrow up that the public API asks for is
 * Communicator's entry point to a window, a one-line delegation ({@code registerWindow} to Window); Bootstrap and
 * Recovery take the Communicator's making as a function ({@code Communicator::adopt}) where they need it. The
 * classes outside the layers (values, settings, exceptions) name of the layers only the first, the libraries, CUDA
 * resources and errors, so that they sit below them, except where the public API
 * ties them to a Communicator: {@link org.nccl4j.OperationObserver}, {@link org.nccl4j.FailureListener} and
 * {@link org.nccl4j.ReduceOp} ({@code PreMulSum.communicator()}, which a communicator makes and frees). What one of
 * them needs done by a layer goes through a class of the first layer ({@code Groups}, whose hook for the end of the
 * last NCCL group the watchdog sets), and what a layer needs to know of one it reads there ({@code LeftBehindExit}
 * asks {@link org.nccl4j.CommunicatorFailedException} whether a failure reached the program).
 *
 * <p>The classes name each other in a loop only where the public API has that shape ({@code LayersTest.LOOPS}): a
 * callback or an operator that names its Communicator, a window and its communicator, a stream with its events and
 * graphs; and, inside the second layer, a communicator's health and the collective check it holds.
 */
package org.nccl4j;
