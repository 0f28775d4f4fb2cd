package org.nccl4j;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;
import org.nccl4j.control.Departures;
import org.nccl4j.control.Durations;
import org.nccl4j.control.Liveness;
import org.nccl4j.control.RankProcess;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.trace.FlightRecorder;
import org.nccl4j.trace.TraceDump;
import org.nccl4j.trace.TraceEntry;
import org.nccl4j.trace.TraceOperation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One daemon thread per process ({@code nccl4j-watchdog}) that watches every communicator made with the watchdog
 * on (the default).
 *
 * <h2>How it knows what completed</h2>
 * The thread that issues a collective only records it in the communicator's {@link FlightRecorder} and publishes
 * its sequence number: nothing more on the hot path. The watchdog, every poll interval, records a completion marker
 * (a pooled CUDA event, timing disabled) on each stream the communicator has used once new operations were
 * published; a marker recorded after operation {@code s} was published completes only after every operation up to
 * {@code s} on those streams has. When one of a marker's events has completed ({@code cudaEventQuery}), the
 * operations up to its sequence number issued on that event's stream are marked completed, so that a collective
 * still running on one stream does not hold back those completed on another (nor is named for them in a failure).
 * Operations issued inside an open group are published
 * at the group's end, when NCCL launches them; operations captured into a CUDA graph are not recorded, and each
 * launch of the graph is recorded instead ({@code graphLaunch}) on every communicator captured in it.
 *
 * <h2>What it looks for</h2>
 * Each poll, per communicator: {@code ncclCommGetAsyncError} (a remote or other asynchronous error), the CUDA
 * status of its markers, and the age of the oldest operation not yet completed against the timeout. On a failure it
 * writes the flight record, makes the failure the communicator's and its streams' (so that waiting threads and later
 * calls throw it), logs one ERROR line, aborts the communicator ({@code ncclCommAbort}) so that the GPU is released,
 * and then applies the {@link FailurePolicy}.
 *
 * <h2>Threads</h2>
 * The watchdog looks at a communicator only while it holds the communicator's lifecycle lock, which
 * {@link Communicator#close()} and {@link Communicator#abort()} hold while they tear it down; a communicator being
 * closed is skipped. Markers are recorded on a stream while holding the stream's monitor, which
 * {@link Stream#close()} takes before destroying it.
 */
final class Watchdog implements Runnable, WatchdogMonitor.Watched {
    private static final Logger LOG = LoggerFactory.getLogger(Watchdog.class);
    /** {@code cudaErrorNotReady}. */
    private static final int NOT_READY = 600;
    /** {@code cudaEventDisableTiming}. */
    private static final int DISABLE_TIMING = 2;
    /** At most this many markers of one communicator are outstanding. */
    private static final int MAX_MARKERS = 16;

    private static volatile Watchdog instance;

    private final List<Watch> watches = new CopyOnWriteArrayList<>();
    /** Every communicator with a recorder, watched or not, for the dumps at exit after a failure. */
    private final List<java.lang.ref.WeakReference<CommHealth>> recorded = new CopyOnWriteArrayList<>();
    private final long pollNanos;
    /** {@link LeftBehindExit#grace()}: read once, with the other process-wide settings; null: off. */
    private final Duration leftBehindGrace;
    private final Thread thread;
    private volatile boolean exitHook;
    /** {@link System#nanoTime()} at the start of the loop's latest iteration: the monitor's sign of life. */
    private volatile long heartbeat = System.nanoTime();

    private Watchdog(Duration poll) {
        this.pollNanos = poll.toNanos();
        this.leftBehindGrace = LeftBehindExit.grace();
        this.thread = new Thread(this, "nccl4j-watchdog");
        thread.setDaemon(true);
    }

    /** The process's watchdog, started on first use with the poll interval of {@link WatchdogConfig}. */
    static Watchdog instance() {
        Watchdog w = instance;
        if (w == null) {
            synchronized (Watchdog.class) {
                w = instance;
                if (w == null) {
                    w = new Watchdog(WatchdogConfig.fromEnvironment().poll());
                    w.thread.start();
                    WatchdogMonitor.start(w);   // the watchdog is itself watched
                    instance = w;
                    Groups.whenAllEnd(Watchdog::groupsEnded);   // publishes what was recorded inside groups
                }
            }
        }
        return w;
    }

    /** Watches {@code comm} with {@code settings} until it is closed or fails. */
    void watch(CommHealth comm, WatchSettings settings) {
        watches.add(new Watch(comm, settings));
        LockSupport.unpark(thread);
    }

    /** Remembers a recorded communicator for the dumps at exit. */
    void recorded(CommHealth comm) {
        recorded.removeIf(r -> r.get() == null);
        recorded.add(new java.lang.ref.WeakReference<>(comm));
    }

    /** The last open group of the process ended: publishes what the communicators recorded inside groups. */
    static void groupsEnded() {
        Watchdog w = instance;
        if (w != null) {
            for (java.lang.ref.WeakReference<CommHealth> r : w.recorded) {
                CommHealth c = r.get();
                if (c != null && !c.forgotten) {   // forgotten: aborted at exit
                    c.groupEnded();
                }
            }
        }
    }

    void forget(CommHealth comm) {
        comm.forgotten = true;
        recorded.removeIf(r -> r.get() == null || r.get() == comm);
    }

    /** {@link System#nanoTime()} at the start of the loop's latest iteration (its heartbeat). */
    @Override
    public long heartbeat() {
        return heartbeat;
    }

    /** The watchdog's thread, whose stack the monitor reports when it is stuck. */
    @Override
    public Thread thread() {
        return thread;
    }

    /** Every recorded communicator still reachable, watched or not (for the monitor). */
    @Override
    public List<CommHealth> recordedCommunicators() {
        List<CommHealth> out = new java.util.ArrayList<>();
        for (java.lang.ref.WeakReference<CommHealth> r : recorded) {
            CommHealth c = r.get();
            if (c != null && !c.forgotten) {   // forgotten: aborted at exit
                out.add(c);
            }
        }
        return out;
    }

    @Override
    public void run() {
        while (true) {
            long now = System.nanoTime();
            heartbeat = now;   // a volatile store of a value the loop reads anyway: no allocation, no extra clock read
            for (Watch w : watches) {
                try {
                    if (!w.poll(now)) {
                        watches.remove(w);
                    }
                } catch (RuntimeException | Error e) {
                    LOG.error("nccl4j watchdog: watching a communicator failed; it is no longer watched", e);
                    watches.remove(w);
                }
            }
            LockSupport.parkNanos(pollNanos);
        }
    }

    /** After the first failure: dump, at exit, every recorded communicator that has not been dumped. */
    private void dumpAtExit() {
        if (exitHook) {
            return;
        }
        exitHook = true;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (java.lang.ref.WeakReference<CommHealth> r : recorded) {
                CommHealth c = r.get();
                if (c != null && !c.forgotten && !c.traceDumped()) {
                    try {
                        c.writeTrace(TraceDump.REASON_EXIT, null, null);
                    } catch (IOException | RuntimeException e) {
                        LOG.warn("nccl4j: could not write the trace of {} at exit: {}", c, e.toString());
                    }
                }
            }
        }, "nccl4j-trace-at-exit"));
    }

    /**
     * The markers recorded after operation {@code seq}: one event per stream, with the stream it was recorded on; an
     * event seen complete goes back to the idle ones and is 0 here (the operations up to seq on its stream are marked).
     */
    private static final class Marker {
        final long seq;
        final long[] events;
        final long[] streams;
        final int count;

        Marker(long seq, long[] events, long[] streams, int count) {
            this.seq = seq;
            this.events = events;
            this.streams = streams;
            this.count = count;
        }

        /** @return whether every event was seen complete */
        boolean complete() {
            for (int i = 0; i < count; i++) {
                if (events[i] != 0) {
                    return false;
                }
            }
            return true;
        }
    }

    /** One communicator's watch; touched by the watchdog's thread only. */
    private final class Watch {
        /** Weak, so that an open communicator nobody can reach is still collected and reported by Leaks. */
        final java.lang.ref.WeakReference<CommHealth> ref;
        /** The communicator during one poll; null between polls. */
        CommHealth comm;
        final WatchSettings settings;
        final FlightRecorder recorder;
        final long timeoutNanos;
        /** When the watch began (the communicator's creation): its last issue when it never issued. */
        final long startNanos = System.nanoTime();
        /** The failure found leaves this rank behind its peers ({@link LeftBehindExit}). */
        boolean leftBehind;
        final ArrayDeque<Marker> markers = new ArrayDeque<>();
        /** Idle events of this communicator's device, for the next markers. */
        final ArrayDeque<Long> idle = new ArrayDeque<>();
        final int[] state = new int[1];
        /** The CUDA backend the communicator was made with (tests install fakes). */
        final CudaBackend cuda = CudaCalls.backend();
        long markedUpTo;

        Watch(CommHealth comm, WatchSettings settings) {
            this.ref = new java.lang.ref.WeakReference<>(comm);
            this.settings = settings;
            this.recorder = comm.recorder;
            this.timeoutNanos = settings.timeout().toNanos();
        }

        /** One look at the communicator; false once it needs no more watching. */
        boolean poll(long now) {
            comm = ref.get();
            try {
                return comm != null && poll0(now) || retired();
            } finally {
                comm = null;
            }
        }

        private boolean retired() {
            if (comm == null) {
                retire();
            }
            return false;
        }

        private boolean poll0(long now) {
            if (comm.closed) {
                retire();
                return false;
            }
            if (!comm.lifecycle.tryLock()) {
                return true; // being closed or aborted: look again next time
            }
            CommunicatorFailedException failure;
            try {
                if (comm.closed) {
                    retire();
                    return false;
                }
                failure = look(now);
                comm.notifyCompleted(recorder.lastCompleted(), now);   // what no wait of the user's has shown
                boolean observed = comm.hooks().observed();
                if (failure == null) {
                    return true;
                }
                retire();
                dumpAtExit();   // before the failure is seen: a thread that sees it may end the process at once
                // first too: the peers hear of it before the process ends
                comm.announceFailure(failure);
                comm.failedByWatchdog(failure);
                if (observed) {
                    comm.hooks().failed(failure);
                }
                if (settings.policy() == FailurePolicy.EXIT) {
                    // at once: a thread that the abort released throws the failure, but could otherwise end the
                    // process first with a status of its own. The abort comes first all the same: exiting runs the
                    // CUDA runtime's exit handlers, which wait for kernels that a live communicator keeps hung.
                    exit(failure);
                }
            } finally {
                comm.lifecycle.unlock();
            }
            after(failure);
            if (leftBehind && settings.policy() == FailurePolicy.THROW) {
                long last = recorder.lastEnqueued();
                long issued = last > 0 ? recorder.enqueuedNanos(last) : 0;
                LeftBehindExit.watch(comm, failure, issued != 0 ? issued : startNanos, settings.timeout(),
                        leftBehindGrace);
            }
            return false;
        }

        /** The failure found, or null; the lock is held. */
        private CommunicatorFailedException look(long now) {
            long synced = comm.syncedThrough();
            if (synced > recorder.lastCompleted()) {
                recorder.completedThrough(synced);
            }
            // each stream on its own: a collective that completed on one stream is not held pending by another
            // stream's (which a failure would otherwise name as the operation that did not complete)
            for (Marker m : markers) {
                for (int i = 0; i < m.count; i++) {
                    if (m.events[i] == 0) {
                        continue;
                    }
                    int status = cuda.eventQuery(m.events[i]);
                    if (status == 0) {
                        idle.push(m.events[i]);   // complete: free for the next markers
                        m.events[i] = 0;
                        recorder.completedThroughOn(m.seq, m.streams[i]);
                    } else if (status != NOT_READY) {
                        return failure(Kind.CUDA, recorder.oldestPending(), 1, cuda.errorName(status) + " ("
                                + status + "): " + cuda.errorString(status), now);
                    }
                }
            }
            while (!markers.isEmpty() && markers.peekFirst().complete()) {
                recorder.completedThrough(markers.removeFirst().seq);
            }
            int rc = NcclNative.ncclCommGetAsyncError(comm.handleUnchecked(), state);
            int async = rc != 0 ? rc : state[0];
            if (Errors.isFailure(async)) {
                Kind kind = async == Errors.REMOTE_ERROR ? Kind.REMOTE : Kind.ASYNC;
                return failure(kind, recorder.oldestPending(), async, null, now);
            }
            Liveness liveness = comm.liveness;
            if (liveness != null && liveness.anyLost()) {
                return failure(Kind.LOST, recorder.oldestPending(), async, null, now);
            }
            if (liveness != null) {
                Departures.Verdict v = liveness.departures().verdict(liveness.launchRankOfSelf(), comm.ledger,
                        recorder, comm.generation, liveness::currentRank, now);
                if (v != null) {
                    leftBehind = v.leftBehind();
                    // the collective the verdict names, which an operation before it not yet seen complete (on a
                    // communicator that issues on several streams, say) would hide
                    long pending = v.operation() != 0 ? v.operation() : recorder.oldestPending();
                    return failure(v.mismatch() ? Kind.MISMATCH : Kind.DEPARTED, pending, 0, v.text(), now);
                }
            }
            long published = comm.published();
            if (published > markedUpTo && markers.size() < MAX_MARKERS) {
                mark(published);
            }
            long oldest = recorder.oldestPending();
            if (oldest != 0 && now - recorder.enqueuedNanos(oldest) > timeoutNanos) {
                return failure(Kind.TIMEOUT, oldest, 0, null, now);
            }
            CollectiveCheck check = comm.check;
            long since = check == null ? 0 : check.since();
            if (since != 0 && now - since > timeoutNanos) {
                return checkTimedOut(now - since);
            }
            return null;
        }

        private void mark(long seq) {
            Stream[] streams = comm.streamsUsed();
            long[] events = new long[streams.length];
            long[] handles = new long[streams.length];
            int n = 0;
            for (Stream s : streams) {
                synchronized (s) {
                    if (s.isClosed()) {
                        continue;
                    }
                    long e = takeEvent();
                    int rc = cuda.eventRecord(e, s.handle());
                    if (rc != 0) {
                        idle.push(e);
                        LOG.warn("nccl4j watchdog: cudaEventRecord on {} failed: {}", s, cuda.errorName(rc));
                        continue;
                    }
                    events[n] = e;
                    handles[n++] = s.handle();
                }
            }
            markers.addLast(new Marker(seq, events, handles, n));
            markedUpTo = seq;
        }

        private void release(Marker m) {
            for (int i = 0; i < m.count; i++) {
                if (m.events[i] != 0) {
                    idle.push(m.events[i]);
                }
            }
        }

        private long takeEvent() {
            if (!idle.isEmpty()) {
                return idle.pop();
            }
            CudaCalls.check(cuda.setDevice(comm.device), "cudaSetDevice", comm.device);
            long[] e = new long[1];
            CudaCalls.check(cuda.eventCreate(e, DISABLE_TIMING), "cudaEventCreateWithFlags", comm.device);
            return e[0];
        }

        private void retire() {
            // every event goes: a marker's may still be pending on a stream, which cudaEventDestroy allows (CUDA
            // frees it once its work completes)
            for (Marker m : markers) {
                release(m);
            }
            markers.clear();
            while (!idle.isEmpty()) {
                cuda.eventDestroy(idle.pop());
            }
        }

        private CommunicatorFailedException failure(Kind kind, long seq, int code, String cudaError, long now) {
            String lastError = NcclNative.ncclGetLastError(comm.handleUnchecked());
            List<RankProcess> lost = lostRanks(kind);
            TraceEntry e = seq > 0 ? recorder.entry(seq) : null;
            String op = e == null ? null : e.operation().name();
            Duration elapsed = seq > 0 ? Duration.ofNanos(now - recorder.enqueuedNanos(seq)) : Duration.ZERO;
            String verdict;
            switch (kind) {
                case TIMEOUT:
                    long upTo = undistinguished(seq);
                    verdict = (op == null ? "operation" : op) + " #" + seq + " did not complete within "
                            + Durations.format(settings.timeout()) + (upTo > seq ? " (or a later one up to #" + upTo
                            + ": they were enqueued together, before the watchdog could tell them apart)" : "")
                            + ": a peer never joined it, is stuck before it, or joined a different operation";
                    break;
                case REMOTE:
                    String left = lost.isEmpty() && comm.liveness != null ? departed(comm.liveness) : null;
                    verdict = "peer lost: remote error (" + (left != null ? left : lost.isEmpty() ? "a peer rank "
                            + "failed, exited or lost its connection" : describe(lost)) + ")";
                    break;
                case LOST:
                    verdict = "peer lost: " + describe(lost);
                    break;
                case CUDA:
                    verdict = "CUDA reported " + cudaError + " on the communicator's stream";
                    break;
                case DEPARTED:
                case MISMATCH:
                    verdict = cudaError;
                    break;
                default:
                    verdict = "NCCL reported " + NcclResult.of(code).ncclName() + " (" + code + ") in the background";
                    break;
            }
            Path trace = trace(kind.reason, verdict);
            CommunicatorFailedException.Details d = new CommunicatorFailedException.Details(comm.rankUnchecked(),
                    comm.size, settings.commName(), op, e == null ? seq : e.sequence(), e == null ? 0 : e.count(),
                    e == null ? null : e.dataType(), e == null ? null : e.reduceOp(),
                    e == null || e.peer() == null ? -1 : e.peer(), e == null ? 0 : e.bytes(),
                    e == null ? 0 : e.stream(), elapsed, settings.timeout(), code, lastError, trace, verdict,
                    settings.policy() == FailurePolicy.RECOVER, lost.stream().mapToInt(RankProcess::rank).toArray());
            switch (kind) {
                case TIMEOUT:
                    return new CollectiveTimeoutException(d);
                case REMOTE:
                case LOST:
                    return new RemoteErrorException(d);
                case DEPARTED:
                    return new PeerDepartedException(d);
                case MISMATCH:
                    return new RanksDivergedException(d);
                default:
                    return new CommunicatorFailedException(d);
            }
        }

        /**
         * The last operation that the watchdog cannot tell apart from {@code seq}: those that its first marker after
         * {@code seq} also covers (or, with no marker yet, every published one).
         */
        private long undistinguished(long seq) {
            for (Marker m : markers) {
                if (m.seq >= seq) {
                    return m.seq;
                }
            }
            return Math.max(seq, comm.published());
        }

        /**
         * The ranks the liveness channel knows to be gone; after NCCL's remote error, up to half a second for its news
         * (the error may come first by a few milliseconds).
         */
        private List<RankProcess> lostRanks(Kind kind) {
            Liveness liveness = comm.liveness;
            if (liveness == null) {
                return List.of();
            }
            long end = System.nanoTime() + 500_000_000L;
            while (kind == Kind.REMOTE && !liveness.anyLost() && departed(liveness) == null
                    && System.nanoTime() < end) {
                LockSupport.parkNanos(10_000_000L);
            }
            return liveness.lost();
        }

        /** The unclean departures the channel told of (an exit, abort or failure), described; or null. */
        private String departed(Liveness liveness) {
            return liveness.departures().unclean(liveness.launchRankOfSelf(), comm.generation,
                    liveness::currentRank);
        }

        private String describe(List<RankProcess> lost) {
            StringBuilder sb = new StringBuilder();
            for (RankProcess l : lost) {
                sb.append(sb.length() == 0 ? "" : ", ").append(l);
            }
            return sb.append(lost.size() == 1 ? " is gone" : " are gone")
                    .append(" (its connection to the liveness channel ended without a goodbye, or went silent)")
                    .toString();
        }

        /** Writes the communicator's trace for a failure; null (and a warning) when it cannot be written. */
        private Path trace(String reason, String verdict) {
            try {
                return comm.writeTrace(reason, verdict, null);
            } catch (IOException | RuntimeException x) {
                LOG.warn("nccl4j watchdog: could not write the trace of {}: {}", comm, x.toString());
                return null;
            }
        }

        /** The collective check's all-gather did not complete: a peer never reached the same collective. */
        private CommunicatorFailedException checkTimedOut(long waited) {
            long[] fp = comm.check.fingerprint();
            String op = fp[1] >= 0 && fp[1] < org.nccl4j.trace.TraceOperation.values().length
                    ? org.nccl4j.trace.TraceOperation.fromCode((int) fp[1]).name() : "operation";
            String verdict = "the collective check before " + op + " #" + fp[0] + " did not complete within "
                    + Durations.format(settings.timeout()) + ": a peer never reached a collective";
            Path trace = trace(Kind.TIMEOUT.reason, verdict);
            DataType type = fp[3] >= 0 && fp[3] < DataType.values().length ? DataType.fromCode((int) fp[3]) : null;
            CommunicatorFailedException.Details d = new CommunicatorFailedException.Details(comm.rankUnchecked(),
                    comm.size, settings.commName(), op, fp[0], fp[2], type == null ? null : type.ncclName(), null,
                    (int) fp[5], 0, 0, Duration.ofNanos(waited), settings.timeout(), 0,
                    NcclNative.ncclGetLastError(comm.handleUnchecked()), trace, verdict,
                    settings.policy() == FailurePolicy.RECOVER, null);
            return new CollectiveTimeoutException(d);
        }

        /** The exit policy: the failure is logged and the trace written; the process halts at once. */
        private void exit(CommunicatorFailedException failure) {
            LOG.error("nccl4j watchdog: {}", failure.getMessage());
            LOG.error("nccl4j watchdog: halting the process with status {} (the exit policy, NCCL4J_ON_FAILURE=exit)",
                    FailurePolicy.EXIT_STATUS);
            System.out.flush();
            System.err.flush();
            NcclLog.flush();   // halt runs no shutdown hook: NCCL's last lines (its WARN of the failure) first
            Runtime.getRuntime().halt(FailurePolicy.EXIT_STATUS);
        }

        /** After the lock is released: log, exit hook, policy. */
        private void after(CommunicatorFailedException failure) {
            LOG.error("nccl4j watchdog: {}", failure.getMessage());
            switch (settings.policy()) {
                case CALLBACK:
                    try {
                        comm.hooks().tell(settings.listener(), failure);
                    } catch (RuntimeException | Error x) {
                        LOG.error("nccl4j watchdog: the failure listener of {} threw", comm, x);
                    }
                    break;
                default:
                    break;
            }
        }
    }

    /** What the watchdog found. */
    private enum Kind {
        TIMEOUT(TraceDump.REASON_TIMEOUT),
        REMOTE(TraceDump.REASON_REMOTE_ERROR),
        LOST(TraceDump.REASON_REMOTE_ERROR),
        DEPARTED(TraceDump.REASON_PEER_DEPARTED),
        MISMATCH(TraceDump.REASON_MISMATCH),
        ASYNC(TraceDump.REASON_ERROR),
        CUDA(TraceDump.REASON_ERROR);

        final String reason;

        Kind(String reason) {
            this.reason = reason;
        }
    }
}
