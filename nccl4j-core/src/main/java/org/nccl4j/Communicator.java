package org.nccl4j;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.nccl4j.control.Farewell;
import org.nccl4j.control.Liveness;
import org.nccl4j.control.Survivors;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.launch.LaunchInfo;
import org.nccl4j.launch.Rendezvous;
import org.nccl4j.launch.RendezvousException;
import org.nccl4j.trace.FlightRecorder;
import org.nccl4j.trace.TraceDump;

/**
 * An NCCL communicator ({@code ncclComm_t}): one rank of a group of GPUs that run collectives together.
 *
 * <h2>Making one</h2>
 * {@link #create(int, int, UniqueId, int, CommConfig)} ({@code ncclCommInitRankConfig}) in each process or
 * thread, with an id that rank 0 made and gave to the others; {@link #initAll(int...)}
 * ({@code ncclCommInitAll}) for one process driving several GPUs; {@link #split(int, int)}
 * ({@code ncclCommSplit}) from an existing one.
 *
 * <h2>Collectives</h2>
 * Every collective comes in three forms: out-of-place on {@link DeviceBuffer}s (counts derived from the buffers
 * and checked), in-place on one buffer, and raw on {@code (address, count)} for memory another library owns.
 * All are asynchronous: they return once the operation is enqueued on the stream. Arguments are checked
 * before anything reaches NCCL (closed communicator, buffer or stream, or a slice of a closed buffer; buffer or
 * stream on another device; a buffer whose size is not a whole number of elements of the data type, whose count
 * would be truncated: use a buffer of whole elements, a slice of one, or the raw form with an explicit count; counts
 * that do not fit; root or peer out of range; an operator made for another communicator or type). A collective call
 * allocates nothing on the Java heap and makes one JNI call.
 *
 * <p>{@link #alltoAll}, {@link #gather} and {@link #scatter} use NCCL's own functions when the loaded library
 * has them (2.28+) and otherwise are composed from {@code ncclSend}/{@code ncclRecv} inside one group.
 *
 * <h2>Closing</h2>
 * {@link #close()} ({@code ncclCommFinalize} then {@code ncclCommDestroy}) is idempotent; {@link #abort()}
 * ({@code ncclCommAbort}) tears down without waiting for peers. A communicator left open is reported in the
 * log when it becomes unreachable, never destroyed behind your back.
 */
public final class Communicator implements AutoCloseable {
    /** {@code NCCL_SPLIT_NOCOLOR}: the rank takes no part in the split. */
    public static final int NO_COLOR = Recovery.NO_COLOR;

    private final long handle;
    private final int rank;
    private final int size;
    private final int device;
    private final boolean blocking;
    private final NcclLibrary library;
    /** What the watchdog, the recorder, the metrics and the liveness channel see of it, and its lifecycle state. */
    private final CommHealth health;
    /** The one path of its collectives: checks, the NCCL call, the record. */
    private final Dispatch path;
    private volatile OperationObserver observer;
    /** The configuration it was made with (null: NCCL's defaults), for {@link #reform}. */
    private final CommConfig config;

    /**
     * Made complete from {@code parts}: registered with the watchdog, the recorder's list and NCCL's log, and, last,
     * attached to its liveness channel, if it has one, so that the channel serves a whole communicator.
     */
    Communicator(CommParts parts) {
        this.library = NcclLibrary.load();
        this.handle = parts.handle();
        this.blocking = parts.blocking();
        this.rank = parts.rank();
        this.size = parts.size();
        this.device = parts.device();
        this.config = parts.config();
        WatchSettings settings = parts.settings();
        Leaks.Token leak = Leaks.track(this, "Communicator rank " + rank + " of " + size + " on device " + this.device);
        this.health = new CommHealth(handle, rank, size, this.device, blocking, settings, parts.generation(),
                library.version(), leak, new ProgramHooks());
        this.path = new Dispatch(handle, library, health, parts.fingerprinted());
        NcclLog.register(handle, rank, size, settings.commName());
        // the exit waits for NCCL teardowns under way, whatever made the communicator
        Farewell.install(StartupGuard.AT_EXIT);
        if (health.recorder != null) {
            Watchdog.instance().recorded(health);
            if (settings.enabled()) {
                Watchdog.instance().watch(health, settings);
            }
        }
        if (parts.channel() != null) {
            health.attachChannel(parts.channel());
        }
    }

    // Making one

    /**
     * {@code ncclCommInitRank} with NCCL's default configuration.
     *
     * @see #create(int, int, UniqueId, int, CommConfig)
     * @param rank this rank, {@code 0 <= rank < size}
     * @param size the number of ranks, {@code >= 1}
     * @param id the id rank 0 made, the same on every rank
     * @param device the CUDA device this rank uses
     * @return the communicator
     */
    public static Communicator create(int rank, int size, UniqueId id, int device) {
        return create(rank, size, id, device, null);
    }

    /**
     * Makes this process's (or thread's) rank of a new communicator: sets {@code device} current
     * ({@code cudaSetDevice}) and calls {@code ncclCommInitRankConfig} (or {@code ncclCommInitRank} when
     * {@code config} is null). Blocks until every rank has joined.
     *
     * <p>With a nonblocking config ({@link CommConfig.Builder#blocking}{@code (false)}) it polls
     * {@code ncclCommGetAsyncError} until the deadline of initialization ({@link CommConfig.Builder#initTimeout},
     * {@code NCCL4J_INIT_TIMEOUT}, 5 minutes by default); at the deadline it aborts what NCCL half made
     * ({@code ncclCommAbort}) and throws {@link InitTimeoutException}. A blocking communicator (the default) is
     * made by NCCL's blocking call: {@link #fromEnvironment(CommConfig)} first waits, until that deadline, for every
     * rank to arrive on the liveness channel, so NCCL is only called once all are there. (nccl4j does not make
     * blocking communicators nonblocking underneath: with NCCL 2.28.3, ncclCommSplit and ncclCommShrink of a
     * nonblocking parent return before they write the child's handle, and refuse a parent whose last call is still
     * in progress; measured in docs/gpu-runs/2026-11-25-recovery.md.)
     *
     * @param rank this rank, {@code 0 <= rank < size}
     * @param size the number of ranks, {@code >= 1}
     * @param id the id rank 0 made ({@link UniqueId#generate()}), the same on every rank
     * @param device the CUDA device this rank uses
     * @param config the configuration, or null for NCCL's defaults
     * @return the communicator
     * @throws IllegalArgumentException when {@code config} sets a field that the loaded NCCL is older than (it
     *         would ignore it), among the other argument checks
     * @throws InitTimeoutException when the communicator is not made by the deadline
     */
    public static Communicator create(int rank, int size, UniqueId id, int device, CommConfig config) {
        return adopt(Bootstrap.create(rank, size, id, device, config));
    }

    /**
     * The communicator made of {@code parts} (null for none: a split's {@link #NO_COLOR}); if that fails, aborts
     * NCCL's communicator rather than leaving it alive with no owner.
     */
    static Communicator adopt(CommParts parts) {
        if (parts == null) {
            return null;
        }
        try {
            return new Communicator(parts);
        } catch (RuntimeException | Error e) {
            NcclNative.ncclCommAbort(parts.handle());
            throw e;
        }
    }

    /**
     * Detection, rendezvous and initialization in one call, for a process started as one rank by a launcher.
     *
     * @return this process's rank of a new communicator
     * @see #fromEnvironment(CommConfig)
     */
    public static Communicator fromEnvironment() {
        return fromEnvironment(null);
    }

    /**
     * Makes this process's rank of a new communicator from what the launcher says:
     * <ol>
     *   <li>rank, world size and device from {@link LaunchInfo#detect()} (Open MPI, PMIx/PMI, Slurm, Kubeflow, an
     *       Indexed Job, torchrun-style variables, or a single process);</li>
     *   <li>the unique id through a {@link Rendezvous}: {@code NCCL_COMM_ID} set: NCCL's own bootstrap, nothing
     *       exchanged; else {@code NCCL4J_RENDEZVOUS_FILE} set: that file on a shared filesystem; else
     *       {@code MASTER_ADDR}/{@code MASTER_PORT}: TCP served by rank 0; a world of one needs none;</li>
     *   <li>{@link #create(int, int, UniqueId, int, CommConfig)} on the detected device.</li>
     * </ol>
     * With more than one rank, rank 0 first serves the liveness channel ({@code MASTER_PORT + 50}) and every rank
     * joins it before the rendezvous ({@link RankPhase}): a rank lost at any later step of start-up ends every other
     * rank's call within 2 s with {@link PeerLostDuringStartupException}. A rank still inside NCCL's blocking
     * initialization when that news comes, which no exception can reach, is ended with status 70 instead (one ERROR
     * line first; {@code NCCL4J_LEFT_BEHIND_EXIT}); with {@link CommConfig.Builder#blocking}{@code (false)} the
     * initialization is aborted and the exception thrown.
     *
     * <p>It may be called many times in one run (several communicators, or destroy and create again); each call is a
     * new rendezvous. Over TCP rank 0 listens on {@code MASTER_PORT} again each time, and a peer that comes while the
     * previous call's socket is still closing retries. With {@code NCCL4J_RENDEZVOUS_FILE}, every rank must make the
     * same sequence of calls with one file and run id: the file carries the number of the rendezvous (its generation,
     * see {@link Rendezvous.Route#FILE} and {@link Rendezvous}), so no rank takes the id of an earlier call.
     *
     * @param config the configuration, or null for NCCL's defaults
     * @return the communicator
     * @throws RendezvousException when the id cannot be exchanged
     * @throws PeerLostDuringStartupException when another rank was lost (or ended its start-up) before the
     *         communicator was made, naming it, its phase and how it left
     * @throws InitTimeoutException when a rank never arrived within the init timeout ({@code NCCL4J_INIT_TIMEOUT})
     */
    public static Communicator fromEnvironment(CommConfig config) {
        return Bootstrap.fromEnvironment(config, Communicator::adopt);
    }

    /** The environment variable naming a shared file for the id rendezvous of {@link #fromEnvironment()}. */
    public static final String RENDEZVOUS_FILE_VARIABLE = Rendezvous.FILE_VARIABLE;

    /**
     * {@code ncclCommInitAll}: one communicator per device, all in this process, rank i on {@code devices[i]}.
     *
     * @param devices the CUDA devices, distinct, at least one
     * @return the communicators, in rank order
     */
    public static List<Communicator> initAll(int... devices) {
        return Bootstrap.initAll(Communicator::new, Communicator::abort, devices);
    }

    // Communicators made from this one, and recovery (see Recovery)

    /**
     * {@code ncclCommSplit}: a new communicator of the ranks that pass the same {@code color}, ordered by
     * {@code key}, inheriting this one's configuration. Every rank of this communicator must call it.
     *
     * @param color ranks with equal color end up together; {@link #NO_COLOR} to take no part
     * @param key orders ranks within the new communicator
     * @return the new communicator, or null when {@code color} is {@link #NO_COLOR}
     */
    public Communicator split(int color, int key) {
        return split(color, key, null);
    }

    /**
     * {@code ncclCommSplit} with a configuration for the child.
     *
     * @param color ranks with equal color end up together ({@code >= 0}), or {@link #NO_COLOR}
     * @param key orders ranks within the new communicator
     * @param config the child's configuration, or null to inherit
     * @return the new communicator, or null for {@link #NO_COLOR}
     * @throws IllegalArgumentException when {@code config} sets a field that the loaded NCCL is older than (it
     *         would ignore it), or for a bad {@code color}
     */
    public Communicator split(int color, int key, CommConfig config) {
        return adopt(Recovery.split(health, this.config, color, key, config));
    }

    /**
     * {@code ncclCommShrink} (NCCL 2.27+) with the parent's configuration.
     *
     * @param excludedRanks the ranks to leave out
     * @return the new communicator
     * @see #shrink(CommConfig, int...)
     */
    public Communicator shrink(int... excludedRanks) {
        return shrink(null, excludedRanks);
    }

    /**
     * {@code ncclCommShrink} (NCCL 2.27+): a new communicator of this one's ranks without {@code excludedRanks}, for
     * going on without ranks that failed or leave. Every remaining rank must call it with the same set; the excluded
     * ones do not call it. The remaining ranks keep their order and are renumbered without gaps
     * ({@link #rankAfterShrink(int, int...)}): of 4 ranks without rank 1, ranks 0, 2, 3 become 0, 1, 2.
     *
     * <p>When NCCL reports this communicator broken ({@code ncclCommGetAsyncError}: a peer was lost), the shrink
     * passes {@code NCCL_SHRINK_ABORT}, which aborts this communicator's pending operations first; otherwise
     * {@code NCCL_SHRINK_DEFAULT}. This communicator stays open either way: {@link #abort()} it when it is broken,
     * {@link #close()} it otherwise. A communicator that the watchdog has found broken is already aborted and cannot
     * be shrunk; its failure is thrown.
     *
     * @param config the new communicator's configuration (and watchdog settings), or null to inherit this one's
     * @param excludedRanks the ranks to leave out: at least one, each in {@code 0..size()-1}, distinct, not this
     *        rank
     * @return the new communicator
     * @throws IllegalArgumentException for an empty, out-of-range or repeated rank, or this rank itself
     * @throws UnsupportedOperationException when the loaded NCCL is older than 2.27 (no {@code ncclCommShrink})
     * @throws NcclException when {@code ncclCommShrink} fails
     */
    public Communicator shrink(CommConfig config, int... excludedRanks) {
        return adopt(Recovery.shrink(health, this.config, config, excludedRanks));
    }

    /**
     * A new communicator of this one's ranks without {@code excludedRanks}, made afresh through {@code route}: the
     * remaining ranks are numbered as {@link #shrink(int...)} numbers them ({@link #rankAfterShrink}), exchange a new
     * unique id over the route and call {@code ncclCommInitRankConfig}. For an NCCL without {@code ncclCommShrink},
     * or one that will not shrink a communicator a lost peer broke. Every remaining rank calls it with the same set
     * and an equivalent route; this communicator is left as it is ({@link #abort()} it when it is broken).
     *
     * @param route the rendezvous of the remaining ranks (its rank and world size are set here)
     * @param config the new communicator's configuration, or null for this one's
     * @param excludedRanks the ranks to leave out, as for {@link #shrink(int...)}
     * @return the new communicator
     * @throws IllegalArgumentException for a bad exclusion, as {@link #shrink(int...)}
     * @throws RendezvousException when the remaining ranks cannot exchange the id
     */
    public Communicator reform(Rendezvous.Builder route, CommConfig config, int... excludedRanks) {
        return adopt(Recovery.reform(health, this.config, route, config, excludedRanks));
    }

    /**
     * Goes on without {@code excludedRanks}: {@link #shrink(CommConfig, int...)} when this communicator is healthy (a
     * planned shrink) or the loaded NCCL has {@code ncclCommRevoke} (2.28.7+); otherwise, and where shrink is missing
     * or refused, {@link #reform} through a rendezvous of the remaining ranks. A broken communicator is not shrunk on
     * an older NCCL: NCCL 2.28.3 refuses the shrink on the ranks that saw the lost peer's error (it returns the
     * parent's {@code ncclRemoteError}) and would let the others, which saw only a timeout, wait in theirs, while
     * every survivor must take the same path. The rendezvous: the file {@code NCCL4J_RENDEZVOUS_FILE} names, with
     * {@code .recovery<N>} appended, when it is set; else TCP to {@code MASTER_ADDR} at {@code MASTER_PORT + 100 + N};
     * N counts the recoveries. The TCP form needs the lowest remaining rank on {@code MASTER_ADDR}'s host (true on
     * one machine); elsewhere set the file or call {@link #reform} with a route of your own.
     *
     * @param config the new communicator's configuration, or null for this one's
     * @param excludedRanks the ranks to leave out, as for {@link #shrink(int...)}
     * @return the new communicator; {@link #abort()} this one when it is broken
     * @throws IllegalStateException when a rendezvous is needed and neither the file nor MASTER_ADDR/MASTER_PORT is
     *         set
     */
    public Communicator recover(CommConfig config, int... excludedRanks) {
        return adopt(Recovery.recover(health, this.config, config, excludedRanks));
    }

    /**
     * The rank that {@code rank} has in the communicator {@link #shrink(int...)} makes without {@code excludedRanks}:
     * ranks keep their order, renumbered without gaps.
     *
     * @param rank a rank of the parent, not excluded
     * @param excludedRanks the excluded ranks
     * @return {@code rank} minus the number of excluded ranks below it
     * @throws IllegalArgumentException when {@code rank} is negative or itself excluded
     */
    public static int rankAfterShrink(int rank, int... excludedRanks) {
        return Recovery.rankAfterShrink(rank, excludedRanks);
    }

    /**
     * {@code ncclCommRevoke} (NCCL 2.28.7+): stops this communicator's in-flight operations, so that it can then be
     * shrunk, split or destroyed without waiting for peers that are gone.
     *
     * @throws UnsupportedOperationException when the loaded NCCL is older than 2.28.7 (no {@code ncclCommRevoke})
     * @throws NcclException when {@code ncclCommRevoke} fails
     */
    public void revoke() {
        Recovery.revoke(health);
    }

    /**
     * {@code ncclCommGetUniqueId} (NCCL 2.29.2+): on the one rank that coordinates a {@link #grow}, the id it sends
     * to the joining ranks (good for one grow).
     *
     * @return the id
     * @throws UnsupportedOperationException when the loaded NCCL is older than 2.29.2
     */
    public UniqueId growId() {
        return Recovery.growId(health);
    }

    /**
     * {@code ncclCommGrow} (NCCL 2.29.2+) on a rank of this communicator: a communicator of {@code newSize} ranks,
     * this one's ranks keeping their numbers and the new ones taking {@code size()..newSize-1} (they call
     * {@link #join(int, int, UniqueId, int, CommConfig)}).
     *
     * @param newSize the grown communicator's number of ranks, more than {@link #size()}
     * @param id the coordinator's {@link #growId()} on the coordinating rank, null on the others
     * @param config the new communicator's configuration, or null to inherit this one's
     * @return the grown communicator
     * @throws IllegalArgumentException when {@code newSize} is not more than {@link #size()}
     * @throws UnsupportedOperationException when the loaded NCCL is older than 2.29.2
     */
    public Communicator grow(int newSize, UniqueId id, CommConfig config) {
        return adopt(Recovery.grow(health, this.config, newSize, id, config));
    }

    /**
     * {@code ncclCommGrow} (NCCL 2.29.2+) on a joining rank: its rank of the communicator that the existing ranks make
     * with {@link #grow}.
     *
     * @param newSize the grown communicator's number of ranks
     * @param rank this rank, from the parent's size to {@code newSize - 1}
     * @param id the coordinator's {@link #growId()}
     * @param device the CUDA device this rank uses
     * @param config the configuration, or null for NCCL's defaults
     * @return the communicator
     * @throws IllegalArgumentException for a rank out of range, a null id or a negative device
     * @throws UnsupportedOperationException when the loaded NCCL is older than 2.29.2
     */
    public static Communicator join(int newSize, int rank, UniqueId id, int device, CommConfig config) {
        return adopt(Recovery.join(newSize, rank, id, device, config));
    }

    // Queries, and what the watchdog and the liveness channel found

    /** @return this rank ({@code ncclCommUserRank}) */
    public int rank() {
        return rank;
    }

    /** @return the number of ranks ({@code ncclCommCount}) */
    public int size() {
        return size;
    }

    /** @return the CUDA device of this rank ({@code ncclCommCuDevice}) */
    public int device() {
        return device;
    }

    /** @return whether NCCL calls on this communicator block until done (the default) */
    public boolean isBlocking() {
        return blocking;
    }

    /** @return the {@code ncclComm_t} handle, for code that calls NCCL itself */
    public long handle() {
        ensureOpen();
        return handle;
    }

    /** The handle, closed or not: for recovery, which works on a communicator kept after its failure. */
    long nativeHandle() {
        return handle;
    }

    NcclLibrary library() {
        return library;
    }

    /** The configuration it was made with (null: NCCL's defaults). */
    CommConfig config() {
        return config;
    }

    /** What the watchdog, the recorder, the metrics and the liveness channel see of it. */
    CommHealth health() {
        return health;
    }

    /** Throws unless it is open: its failure, or that it is closed. */
    void ensureOpen() {
        if (health.refusing) {
            throw health.closedError();
        }
    }

    /** @return how many operations this communicator has enqueued */
    public long operationsEnqueued() {
        return health.sequence;
    }

    /**
     * Whether {@link #close()} or {@link #abort()} was called, on any thread (true from the moment either begins: the
     * communicator takes no new operation from then on), or the watchdog closed it after a failure.
     *
     * @return whether it is closed or being closed
     */
    public boolean isClosed() {
        return health.refusing;
    }

    /**
     * Sets the one observer of this communicator's operations, replacing any other; null removes it. The observer
     * hears of the operations enqueued after this call and of their completion as the watchdog sees it (see
     * {@link OperationObserver}); {@link org.nccl4j.diagnostics.NcclMetrics} is one. Not an NCCL function.
     *
     * @param o the observer, or null
     */
    public void observe(OperationObserver o) {
        health.observing();   // what came before the observer is not its business
        observer = o;
    }

    /** @return the observer set by {@link #observe}, or null */
    public OperationObserver observer() {
        return observer;
    }

    /** @return the name its config gave it ({@link CommConfig.Builder#commName}), or null */
    public String name() {
        return health.settings.commName();
    }

    /**
     * When operation number {@code sequence} (counted from 1, as {@link OperationObserver} numbers them) was
     * enqueued, as {@link System#nanoTime()}. Read from the flight recorder, which keeps the latest
     * {@code NCCL4J_TRACE_BUFFER} operations. Not an NCCL function.
     *
     * @param sequence the operation's number
     * @return when it was enqueued, or 0 when the recorder is off or no longer holds it
     */
    public long enqueuedAt(long sequence) {
        FlightRecorder r = health.recorder;
        return r == null ? 0 : r.enqueuedNanos(sequence);
    }

    /**
     * {@code ncclCommGetAsyncError}: the state of operations running in the background.
     *
     * @return {@link NcclResult#SUCCESS}, {@link NcclResult#IN_PROGRESS}, or the error that broke the communicator
     */
    public NcclResult asyncError() {
        return NcclResult.of(asyncState());
    }

    /**
     * Throws the asynchronous error, if any ({@code ncclCommGetAsyncError}).
     *
     * @throws NcclException when a background operation failed
     */
    public void checkAsyncError() {
        int state = asyncState();
        if (Errors.isFailure(state)) {
            throw Errors.failure(state, NcclFunction.ncclCommGetAsyncError, health);
        }
    }

    private int asyncState() {
        ensureOpen();
        int[] state = new int[1];
        Errors.check(NcclNative.ncclCommGetAsyncError(handle, state), NcclFunction.ncclCommGetAsyncError, health);
        return state[0];
    }

    /**
     * The failure the watchdog found on this communicator, if any.
     *
     * @return the failure (the watchdog's own instance), or null while the communicator is healthy
     */
    public CommunicatorFailedException failure() {
        CommunicatorFailedException f = health.failure;
        if (f != null) {
            f.told();   // the program has seen it (the left-behind exit asks)
        }
        return f;
    }

    /**
     * Writes this communicator's flight record (the last operations it enqueued, with their state) as one JSON file
     * into {@code dir}: {@code nccl4j-trace-rank<R>-<host>-<pid>.json} (see {@link org.nccl4j.trace}). For
     * {@code scripts/nccl4j-trace}, which compares the files of every rank.
     *
     * @param dir the directory, created when missing
     * @return the file written
     * @throws IOException when the directory or file cannot be written
     * @throws IllegalStateException when the communicator records nothing ({@code traceBuffer(0)})
     */
    public Path dumpTrace(Path dir) throws IOException {
        if (dir == null) {
            throw Errors.nullArgument("dir");
        }
        return health.writeTrace(TraceDump.REASON_ON_DEMAND, null, dir);
    }

    /**
     * {@link #dumpTrace(Path)} into the trace directory ({@code NCCL4J_TRACE_DIR}, by default
     * {@code ${java.io.tmpdir}/nccl4j-trace}).
     *
     * @return the file written
     * @throws IOException when the directory or file cannot be written
     */
    public Path dumpTrace() throws IOException {
        return health.writeTrace(TraceDump.REASON_ON_DEMAND, null, null);
    }

    /**
     * The ranks of this communicator known to be gone, once the news has settled: waits until no new loss has been
     * reported for {@code settle}, then returns them. Gone are the ranks lost (their process died or stopped
     * answering) and those that left for good (closed or aborted their communicator, or whose process is ending);
     * a rank whose communicator failed may still recover and is not counted. Rank 0 tells every rank of each loss and
     * departure (or every rank sees rank 0 go), so ranks that call this after a failure agree on the set to leave
     * out of {@link #recover}. When rank 0 is gone, the ranks lost with it (its host's) were reported to nobody: the
     * remaining ranks then call a roll ({@link org.nccl4j.launch.RollCall}, on {@code MASTER_PORT + 200 + launch rank},
     * for the settle time or 3 s, the longer) and those that do not answer are gone too. Known through the
     * liveness channel that {@link #fromEnvironment} opens when {@code MASTER_ADDR} and {@code MASTER_PORT} are set.
     *
     * @param settle how long no new loss must be reported, e.g. half a second
     * @return the lost ranks, sorted; empty when none is known or there is no liveness channel
     * @throws IllegalArgumentException when settle is null or negative
     */
    public int[] lostRanks(java.time.Duration settle) {
        if (settle == null || settle.isNegative()) {
            throw Errors.argument("settle must be zero or longer, got " + settle);
        }
        Liveness l = health.liveness;
        return l == null ? new int[0] : Survivors.lostRanks(l, settle, size());
    }

    // Reduction operators and registrations

    /**
     * {@code ncclRedOpCreatePreMulSum} with a host scalar ({@code ncclScalarHostImmediate}).
     *
     * @param scalar the factor each rank's input is multiplied by (converted to {@code type})
     * @param type the data type of the collectives that will use the operator (not fp8)
     * @return the operator; close it when done
     * @throws IllegalArgumentException when {@code type} cannot hold {@code scalar}: on an integer type a value with
     *     a fraction (0.5 would truncate to 0), NaN, an infinity, a negative value on an unsigned type, or a value
     *     outside the type's range; on a floating type a finite value that would round to infinity (1e6 on
     *     {@code FLOAT16}, 1e39 on {@code FLOAT32}). A floating type rounds a finite value to the nearest one it
     *     holds, and takes NaN and the infinities as they are
     */
    public ReduceOp.PreMulSum createPreMulSum(double scalar, DataType type) {
        return ReduceOp.PreMulSum.create(this, scalar, type);
    }

    /**
     * {@code ncclRedOpCreatePreMulSum} with a device scalar ({@code ncclScalarDevice}): NCCL reads the value
     * from {@code scalar} each time a collective using the operator runs.
     *
     * @param scalar one element of {@code type} on this communicator's device; must outlive the operator
     * @param type the data type of the collectives that will use the operator
     * @return the operator; close it when done
     * @throws IllegalStateException when the communicator or {@code scalar} is closed, or {@code scalar} is a
     *     slice of a closed buffer
     */
    public ReduceOp.PreMulSum createPreMulSum(DeviceBuffer scalar, DataType type) {
        return ReduceOp.PreMulSum.create(this, scalar, type);
    }

    /**
     * {@code ncclCommRegister}: registers a buffer for zero-copy use by this communicator.
     *
     * @param buffer a buffer on this communicator's device (best from {@link DeviceBuffer#allocateNccl})
     * @return the registration; close it ({@code ncclCommDeregister}) before freeing the buffer
     * @throws IllegalStateException while the calling thread is capturing a CUDA graph, or when the communicator
     *     or the buffer is closed, or the buffer is a slice of a closed buffer
     */
    public Registration register(DeviceBuffer buffer) {
        ensureOpen();
        Capture.refuseOnCapturingThread("Communicator.register (ncclCommRegister)");
        Arguments.buffer(health, buffer, "buffer");
        long[] h = new long[1];
        Errors.check(NcclNative.ncclCommRegister(handle, buffer.address(), buffer.bytes(), h),
                NcclFunction.ncclCommRegister, health);
        return new Registration(this, h[0]);
    }

    /**
     * {@code ncclCommWindowRegister(comm, buff, size, &win, NCCL_WIN_COLL_SYMMETRIC)} (NCCL 2.27+): registers a
     * buffer as a symmetric window, the memory NCCL's symmetric kernels use. Collective: every rank calls it, in the
     * same order, with a buffer of the same size. {@link Window} says what NCCL asks of the buffer and what it gives;
     * {@link Window#allocate(Communicator, long, DataType)} allocates and registers in one call.
     *
     * @param buffer on this communicator's device, of CUDA virtual memory (from {@link DeviceBuffer#allocateNccl},
     *     or a slice of it starting at a multiple of 4096 bytes; cudaMalloc memory is refused)
     * @return the window; close it ({@code ncclCommWindowDeregister}) after the collectives that use it, before
     *     freeing the buffer
     * @throws UnsupportedOperationException when the loaded NCCL is older than 2.27
     * @throws IllegalStateException when the communicator or the buffer is closed, inside a group, on a nonblocking
     *     communicator, or while the calling thread captures a CUDA graph
     * @throws IllegalArgumentException when the buffer is on another device, from cudaMalloc, or misaligned
     * @throws NcclException when ncclCommWindowRegister fails
     */
    public Window registerWindow(DeviceBuffer buffer) {
        return Window.register(this, buffer);
    }

    /** A buffer registration made by {@link #register(DeviceBuffer)}. */
    public static final class Registration implements AutoCloseable {
        private final CommBound bound;
        private final long handle;

        Registration(Communicator comm, long handle) {
            this.bound = new CommBound(comm.health(), NcclFunction.ncclCommDeregister);
            this.handle = handle;
        }

        /** @return NCCL's registration handle */
        public long handle() {
            return handle;
        }

        /**
         * {@code ncclCommDeregister}. Idempotent; a no-op once the communicator is closed.
         *
         * @throws NcclException when ncclCommDeregister fails (the registration counts as closed all the same)
         */
        @Override
        public void close() {
            bound.close(comm -> NcclNative.ncclCommDeregister(comm, handle));
        }
    }

    // Collectives, in NCCL's order: on buffers (the full description), in place, on raw addresses

    /**
     * {@code ncclAllReduce}, out of place: reduces {@code send} (its whole length in elements of {@code type})
     * across ranks into {@code recv} on every rank.
     *
     * @param send the data this rank sends, on this communicator's device
     * @param recv where the result lands, on this communicator's device
     * @param type the element type
     * @param op the reduction operator (built-in, or a PreMulSum made for this communicator and type)
     * @param stream the stream to enqueue on, of this communicator's device
     * @throws IllegalArgumentException when {@code send}'s size is not a whole number of elements of {@code type}
     *     (see this class), or for another invalid argument listed there
     * @throws IllegalStateException when the communicator, the stream or a buffer (or its parent) is closed
     */
    public void allReduce(DeviceBuffer send, DeviceBuffer recv, DataType type, ReduceOp op, Stream stream) {
        path.collective(Collective.ALL_REDUCE, send, recv, type, op, -1, stream);
    }

    /**
     * {@code ncclAllReduce}, in place on {@code buffer}; otherwise as
     * {@link #allReduce(DeviceBuffer, DeviceBuffer, DataType, ReduceOp, Stream)}.
     *
     * @param buffer the buffer, on this communicator's device
     * @param type the element type
     * @param op the reduction operator
     * @param stream the stream to enqueue on
     */
    public void allReduce(DeviceBuffer buffer, DataType type, ReduceOp op, Stream stream) {
        path.inPlace(Collective.ALL_REDUCE, buffer, type, op, -1, stream);
    }

    /**
     * {@code ncclAllReduce} on raw device addresses (in place when they are equal).
     *
     * @param send the device address of the data this rank sends
     * @param recv the device address where the result lands
     * @param count the number of elements of {@code type}
     * @param type the element type
     * @param op the reduction operator
     * @param stream the stream to enqueue on
     */
    public void allReduce(long send, long recv, long count, DataType type, ReduceOp op, Stream stream) {
        path.raw(Collective.ALL_REDUCE, send, recv, count, type, op, -1, stream);
    }

    /**
     * {@code ncclBroadcast}: copies {@code send} of rank {@code root} into {@code recv} on every rank. The
     * count is {@code recv}'s length; {@code send} is read on the root only (may be null elsewhere).
     *
     * @param send the data this rank sends, on this communicator's device
     * @param recv where the result lands, on this communicator's device
     * @param type the element type
     * @param root the root rank, {@code 0 <= root < size()}
     * @param stream the stream to enqueue on, of this communicator's device
     * @throws IllegalArgumentException when {@code recv}'s size is not a whole number of elements of {@code type}
     *     (see this class), or for another invalid argument listed there
     * @throws IllegalStateException when the communicator, the stream or a buffer (or its parent) is closed
     */
    public void broadcast(DeviceBuffer send, DeviceBuffer recv, DataType type, int root, Stream stream) {
        path.collective(Collective.BROADCAST, send, recv, type, null, root, stream);
    }

    /**
     * {@code ncclBroadcast}, in place: {@code buffer} of {@code root} is copied to {@code buffer} everywhere;
     * otherwise as {@link #broadcast(DeviceBuffer, DeviceBuffer, DataType, int, Stream)}.
     *
     * @param buffer the buffer, on this communicator's device
     * @param type the element type
     * @param root the root rank
     * @param stream the stream to enqueue on
     */
    public void broadcast(DeviceBuffer buffer, DataType type, int root, Stream stream) {
        path.inPlace(Collective.BROADCAST, buffer, type, null, root, stream);
    }

    /**
     * {@code ncclBroadcast} on raw device addresses.
     *
     * @param send the device address of the data this rank sends
     * @param recv the device address where the result lands
     * @param count the number of elements of {@code type}
     * @param type the element type
     * @param root the root rank
     * @param stream the stream to enqueue on
     */
    public void broadcast(long send, long recv, long count, DataType type, int root, Stream stream) {
        path.raw(Collective.BROADCAST, send, recv, count, type, null, root, stream);
    }

    /**
     * {@code ncclReduce}: reduces {@code send} across ranks into {@code recv} of rank {@code root}. The count is
     * {@code send}'s length; {@code recv} is written on the root only (may be null elsewhere).
     *
     * @param send the data this rank sends, on this communicator's device
     * @param recv where the result lands, on this communicator's device
     * @param type the element type
     * @param op the reduction operator (built-in, or a PreMulSum made for this communicator and type)
     * @param root the root rank, {@code 0 <= root < size()}
     * @param stream the stream to enqueue on, of this communicator's device
     * @throws IllegalArgumentException when {@code send}'s size is not a whole number of elements of {@code type}
     *     (see this class), or for another invalid argument listed there
     * @throws IllegalStateException when the communicator, the stream or a buffer (or its parent) is closed
     */
    public void reduce(DeviceBuffer send, DeviceBuffer recv, DataType type, ReduceOp op, int root, Stream stream) {
        path.collective(Collective.REDUCE, send, recv, type, op, root, stream);
    }

    /**
     * {@code ncclReduce}, in place on {@code buffer} (the result lands in the root's buffer); otherwise as
     * {@link #reduce(DeviceBuffer, DeviceBuffer, DataType, ReduceOp, int, Stream)}.
     *
     * @param buffer the buffer, on this communicator's device
     * @param type the element type
     * @param op the reduction operator
     * @param root the root rank
     * @param stream the stream to enqueue on
     */
    public void reduce(DeviceBuffer buffer, DataType type, ReduceOp op, int root, Stream stream) {
        path.inPlace(Collective.REDUCE, buffer, type, op, root, stream);
    }

    /**
     * {@code ncclReduce} on raw device addresses.
     *
     * @param send the device address of the data this rank sends
     * @param recv the device address where the result lands
     * @param count the number of elements of {@code type}
     * @param type the element type
     * @param op the reduction operator
     * @param root the root rank
     * @param stream the stream to enqueue on
     */
    public void reduce(long send, long recv, long count, DataType type, ReduceOp op, int root, Stream stream) {
        path.raw(Collective.REDUCE, send, recv, count, type, op, root, stream);
    }

    /**
     * {@code ncclAllGather}: every rank's {@code send} (its whole length) lands at offset rank x count of
     * {@code recv} on every rank; {@code recv} must hold size x count elements.
     *
     * @param send the data this rank sends, on this communicator's device
     * @param recv where the result lands, on this communicator's device
     * @param type the element type
     * @param stream the stream to enqueue on, of this communicator's device
     * @throws IllegalArgumentException when {@code send}'s size is not a whole number of elements of {@code type}
     *     (see this class), or for another invalid argument listed there
     * @throws IllegalStateException when the communicator, the stream or a buffer (or its parent) is closed
     */
    public void allGather(DeviceBuffer send, DeviceBuffer recv, DataType type, Stream stream) {
        path.collective(Collective.ALL_GATHER, send, recv, type, null, -1, stream);
    }

    /**
     * {@code ncclAllGather}, in place: {@code buffer} holds size x count elements and this rank's part is already at
     * offset rank x count; otherwise as {@link #allGather(DeviceBuffer, DeviceBuffer, DataType, Stream)}.
     *
     * @param buffer the buffer, on this communicator's device
     * @param type the element type
     * @param stream the stream to enqueue on
     */
    public void allGather(DeviceBuffer buffer, DataType type, Stream stream) {
        path.inPlace(Collective.ALL_GATHER, buffer, type, null, -1, stream);
    }

    /**
     * {@code ncclAllGather} on raw device addresses; {@code sendCount} elements per rank.
     *
     * @param send the device address of the data this rank sends
     * @param recv the device address where the result lands
     * @param sendCount the number of elements each rank sends
     * @param type the element type
     * @param stream the stream to enqueue on
     */
    public void allGather(long send, long recv, long sendCount, DataType type, Stream stream) {
        path.raw(Collective.ALL_GATHER, send, recv, sendCount, type, null, -1, stream);
    }

    /**
     * {@code ncclReduceScatter}: reduces {@code send} (size x count elements) across ranks; rank i receives
     * block i in {@code recv}, whose length is the count.
     *
     * @param send the data this rank sends, on this communicator's device
     * @param recv where the result lands, on this communicator's device
     * @param type the element type
     * @param op the reduction operator (built-in, or a PreMulSum made for this communicator and type)
     * @param stream the stream to enqueue on, of this communicator's device
     * @throws IllegalArgumentException when {@code recv}'s size is not a whole number of elements of {@code type}
     *     (see this class), or for another invalid argument listed there
     * @throws IllegalStateException when the communicator, the stream or a buffer (or its parent) is closed
     */
    public void reduceScatter(DeviceBuffer send, DeviceBuffer recv, DataType type, ReduceOp op, Stream stream) {
        path.collective(Collective.REDUCE_SCATTER, send, recv, type, op, -1, stream);
    }

    /**
     * {@code ncclReduceScatter}, in place: the result for this rank lands at offset rank x count of {@code buffer};
     * otherwise as {@link #reduceScatter(DeviceBuffer, DeviceBuffer, DataType, ReduceOp, Stream)}.
     *
     * @param buffer the buffer, on this communicator's device
     * @param type the element type
     * @param op the reduction operator
     * @param stream the stream to enqueue on
     */
    public void reduceScatter(DeviceBuffer buffer, DataType type, ReduceOp op, Stream stream) {
        path.inPlace(Collective.REDUCE_SCATTER, buffer, type, op, -1, stream);
    }

    /**
     * {@code ncclReduceScatter} on raw device addresses; {@code recvCount} elements per rank.
     *
     * @param send the device address of the data this rank sends
     * @param recv the device address where the result lands
     * @param recvCount the number of elements each rank receives
     * @param type the element type
     * @param op the reduction operator
     * @param stream the stream to enqueue on
     */
    public void reduceScatter(long send, long recv, long recvCount, DataType type, ReduceOp op, Stream stream) {
        path.raw(Collective.REDUCE_SCATTER, send, recv, recvCount, type, op, -1, stream);
    }

    /**
     * {@code ncclAlltoAll}: block j of {@code send} goes to rank j, and the block from rank i lands at block i
     * of {@code recv}; blocks are {@code send}'s length / size elements. NCCL defines no in-place form.
     *
     * @param send the data this rank sends, on this communicator's device
     * @param recv where the result lands, on this communicator's device
     * @param type the element type
     * @param stream the stream to enqueue on, of this communicator's device
     * @throws IllegalArgumentException when {@code send}'s size is not a whole number of elements of {@code type}
     *     (see this class), or for another invalid argument listed there
     * @throws IllegalStateException when the communicator, the stream or a buffer (or its parent) is closed
     */
    public void alltoAll(DeviceBuffer send, DeviceBuffer recv, DataType type, Stream stream) {
        path.collective(Collective.ALL_TO_ALL, send, recv, type, null, -1, stream);
    }

    /**
     * {@code ncclAlltoAll} on raw device addresses; {@code count} elements per peer.
     *
     * @param send the device address of the data this rank sends
     * @param recv the device address where the result lands
     * @param count the number of elements of {@code type}
     * @param type the element type
     * @param stream the stream to enqueue on
     */
    public void alltoAll(long send, long recv, long count, DataType type, Stream stream) {
        path.raw(Collective.ALL_TO_ALL, send, recv, count, type, null, -1, stream);
    }

    /**
     * {@code ncclGather}: every rank's {@code send} (its whole length) lands at block rank of {@code recv} on
     * {@code root}; {@code recv} is used on the root only (may be null elsewhere).
     *
     * @param send the data this rank sends, on this communicator's device
     * @param recv where the result lands, on this communicator's device
     * @param type the element type
     * @param root the root rank, {@code 0 <= root < size()}
     * @param stream the stream to enqueue on, of this communicator's device
     * @throws IllegalArgumentException when {@code send}'s size is not a whole number of elements of {@code type}
     *     (see this class), or for another invalid argument listed there
     * @throws IllegalStateException when the communicator, the stream or a buffer (or its parent) is closed
     */
    public void gather(DeviceBuffer send, DeviceBuffer recv, DataType type, int root, Stream stream) {
        path.collective(Collective.GATHER, send, recv, type, null, root, stream);
    }

    /**
     * {@code ncclGather}, in place: {@code buffer} holds size x count elements on every rank and this rank's part is
     * at block rank; the root's buffer receives every block. Otherwise as
     * {@link #gather(DeviceBuffer, DeviceBuffer, DataType, int, Stream)}.
     *
     * @param buffer the buffer, on this communicator's device
     * @param type the element type
     * @param root the root rank
     * @param stream the stream to enqueue on
     */
    public void gather(DeviceBuffer buffer, DataType type, int root, Stream stream) {
        path.inPlace(Collective.GATHER, buffer, type, null, root, stream);
    }

    /**
     * {@code ncclGather} on raw device addresses; {@code count} elements per rank.
     *
     * @param send the device address of the data this rank sends
     * @param recv the device address where the result lands
     * @param count the number of elements of {@code type}
     * @param type the element type
     * @param root the root rank
     * @param stream the stream to enqueue on
     */
    public void gather(long send, long recv, long count, DataType type, int root, Stream stream) {
        path.raw(Collective.GATHER, send, recv, count, type, null, root, stream);
    }

    /**
     * {@code ncclScatter}: block i of {@code send} on {@code root} goes to {@code recv} of rank i; the count is
     * {@code recv}'s length; {@code send} is read on the root only (may be null elsewhere).
     *
     * @param send the data this rank sends, on this communicator's device
     * @param recv where the result lands, on this communicator's device
     * @param type the element type
     * @param root the root rank, {@code 0 <= root < size()}
     * @param stream the stream to enqueue on, of this communicator's device
     * @throws IllegalArgumentException when {@code recv}'s size is not a whole number of elements of {@code type}
     *     (see this class), or for another invalid argument listed there
     * @throws IllegalStateException when the communicator, the stream or a buffer (or its parent) is closed
     */
    public void scatter(DeviceBuffer send, DeviceBuffer recv, DataType type, int root, Stream stream) {
        path.collective(Collective.SCATTER, send, recv, type, null, root, stream);
    }

    /**
     * {@code ncclScatter}, in place: {@code buffer} holds size x count elements; the root's blocks are sent out and
     * each rank receives its block at block rank of its own buffer. Otherwise as
     * {@link #scatter(DeviceBuffer, DeviceBuffer, DataType, int, Stream)}.
     *
     * @param buffer the buffer, on this communicator's device
     * @param type the element type
     * @param root the root rank
     * @param stream the stream to enqueue on
     */
    public void scatter(DeviceBuffer buffer, DataType type, int root, Stream stream) {
        path.inPlace(Collective.SCATTER, buffer, type, null, root, stream);
    }

    /**
     * {@code ncclScatter} on raw device addresses; {@code count} elements per rank.
     *
     * @param send the device address of the data this rank sends
     * @param recv the device address where the result lands
     * @param count the number of elements of {@code type}
     * @param type the element type
     * @param root the root rank
     * @param stream the stream to enqueue on
     */
    public void scatter(long send, long recv, long count, DataType type, int root, Stream stream) {
        path.raw(Collective.SCATTER, send, recv, count, type, null, root, stream);
    }

    // Point-to-point

    /**
     * {@code ncclSend}: sends all of {@code buffer} to {@code peer}, which must post a matching receive.
     *
     * @param buffer the buffer, on this communicator's device
     * @param type the element type
     * @param peer the other rank, {@code 0 <= peer < size()}
     * @param stream the stream to enqueue on, of this communicator's device
     * @throws IllegalArgumentException when {@code buffer}'s size is not a whole number of elements of {@code type}
     *     (see this class), or for another invalid argument listed there
     * @throws IllegalStateException when the communicator, the stream or the buffer (or its parent) is closed
     */
    public void send(DeviceBuffer buffer, DataType type, int peer, Stream stream) {
        path.inPlace(Collective.SEND, buffer, type, null, peer, stream);
    }

    /**
     * {@code ncclSend} from a raw device address.
     *
     * @param buffer the device address of the data
     * @param count the number of elements of {@code type}
     * @param type the element type
     * @param peer the other rank
     * @param stream the stream to enqueue on
     */
    public void send(long buffer, long count, DataType type, int peer, Stream stream) {
        path.raw(Collective.SEND, buffer, buffer, count, type, null, peer, stream);
    }

    /**
     * {@code ncclRecv}: receives {@code buffer}'s length in elements from {@code peer}.
     *
     * @param buffer the buffer, on this communicator's device
     * @param type the element type
     * @param peer the other rank, {@code 0 <= peer < size()}
     * @param stream the stream to enqueue on, of this communicator's device
     * @throws IllegalArgumentException when {@code buffer}'s size is not a whole number of elements of {@code type}
     *     (see this class), or for another invalid argument listed there
     * @throws IllegalStateException when the communicator, the stream or the buffer (or its parent) is closed
     */
    public void recv(DeviceBuffer buffer, DataType type, int peer, Stream stream) {
        path.inPlace(Collective.RECV, buffer, type, null, peer, stream);
    }

    /**
     * {@code ncclRecv} into a raw device address.
     *
     * @param buffer the device address of the data
     * @param count the number of elements of {@code type}
     * @param type the element type
     * @param peer the other rank
     * @param stream the stream to enqueue on
     */
    public void recv(long buffer, long count, DataType type, int peer, Stream stream) {
        path.raw(Collective.RECV, buffer, buffer, count, type, null, peer, stream);
    }

    // Teardown

    /**
     * {@code ncclCommAbort}: frees the communicator at once, cancelling operations in flight; use when a peer
     * failed or hung. Idempotent with {@link #close()}. With a liveness channel ({@link #fromEnvironment}) every
     * other rank is told that this rank aborted after its last collective: a peer waiting in a collective this rank
     * never issued, or one it cancelled, fails within about a second ({@link PeerDepartedException}).
     */
    public void abort() {
        Teardown.abort(health);
    }

    /**
     * {@code ncclCommFinalize} (waiting out ncclInProgress on a nonblocking communicator) then
     * {@code ncclCommDestroy}. Idempotent. Where the loaded NCCL has no {@code ncclCommFinalize}, destroys only.
     *
     * <p>It never hangs. With a liveness channel ({@link #fromEnvironment}) it first tells every rank that this rank
     * closes after its last collective, and finalizes only when its own operations have completed and every other
     * rank closes after the same collective; it aborts instead ({@code ncclCommAbort}) when a peer went past that
     * collective, closed after another, aborted, failed, exited or was lost, and at the close deadline
     * ({@code NCCL4J_CLOSE_TIMEOUT}, 30 s by default). A peer waiting in a collective this rank never issued fails at
     * once with a {@link PeerDepartedException} naming this rank. The finalize itself is bounded by the same deadline.
     *
     * @throws CloseTimeoutException when {@code ncclCommFinalize} or {@code ncclCommDestroy} did not return within the
     *         close deadline (without a liveness channel, a peer inside a collective this rank never issued)
     */
    @Override
    public void close() {
        Teardown.close(health, library.has(NcclFunction.ncclCommFinalize));
    }

    @Override
    public String toString() {
        return health.toString();
    }

    /**
     * The {@link CommHealth.Hooks} of this communicator: the program's {@link OperationObserver} and
     * {@link FailureListener}, called with this Communicator, which {@code CommHealth} and the classes below it never
     * name.
     */
    private final class ProgramHooks implements CommHealth.Hooks {
        @Override
        public boolean observed() {
            return observer != null;
        }

        @Override
        public void enqueued(long sequence, NcclFunction operation, long bytes, long stream) {
            OperationObserver o = observer;
            if (o != null) {
                o.enqueued(Communicator.this, sequence, operation, bytes, stream);
            }
        }

        @Override
        public void completed(long from, long to, long nowNanos) {
            OperationObserver o = observer;
            if (o != null) {
                o.completed(Communicator.this, from, to, nowNanos);
            }
        }

        @Override
        public void failed(CommunicatorFailedException f) {
            OperationObserver o = observer;
            if (o != null) {
                o.failed(Communicator.this, f);
            }
        }

        @Override
        public void tell(FailureListener listener, CommunicatorFailedException f) {
            listener.onFailure(Communicator.this, f);
        }
    }
}
