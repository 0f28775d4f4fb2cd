package org.nccl4j;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import org.nccl4j.control.Attached;
import org.nccl4j.control.Departures;
import org.nccl4j.control.Farewell;
import org.nccl4j.control.Ledger;
import org.nccl4j.control.Liveness;
import org.nccl4j.control.RankProcess;
import org.nccl4j.control.Survivors;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.trace.FlightRecorder;
import org.nccl4j.trace.TraceDump;
import org.nccl4j.trace.TraceEntry;
import org.nccl4j.trace.TraceOperation;

/**
 * One communicator as the watchdog, the flight recorder, the metrics and the liveness channel see it: its identity
 * and lifecycle state (closed, failed, kept for recovery, a thread inside an NCCL call), what it recorded and
 * published, the streams it used, its ledger and channel, and the hooks through which they act on it (a failure
 * found, a completion seen by a wait, a graph launched, a dump written, an abort at exit); and what it reports when a
 * rank leaves: its failure told to its peers, its flight record written on a peer's failure or its own departure.
 * {@link Communicator} holds one in a final field and is the only class that makes one; {@link Watchdog},
 * {@link WatchdogMonitor}, {@link Teardown} and {@link LeftBehindExit} talk to it, never to the Communicator;
 * streams, events and graphs know it only as a {@link Stream.User}, the control plane ({@link Liveness},
 * {@link Farewell}) as an {@link Attached}.
 *
 * <p>It sits below the watchdog ({@code LayersTest}): it names neither Watchdog nor Communicator. What must reach
 * the program's own objects (the {@link OperationObserver} and the {@link FailureListener}, which are given the
 * Communicator) goes through {@link Hooks}, which the Communicator supplies.
 */
final class CommHealth implements Stream.User, Errors.Source, Attached {
    /** What only the Communicator can do: call the program's observer and listener with itself. */
    interface Hooks {
        /** Whether an observer is set. */
        boolean observed();

        /** Tells the observer that {@code operation} ({@code bytes}) went on {@code stream} as {@code sequence}. */
        void enqueued(long sequence, NcclFunction operation, long bytes, long stream);

        /** Tells the observer that the operations {@code from..to} completed at {@code nowNanos}. */
        void completed(long from, long to, long nowNanos);

        /** Tells the observer of the failure (the watchdog found it; nothing when no observer is set). */
        void failed(CommunicatorFailedException f);

        /** Tells {@code listener} of the failure ({@link FailurePolicy#CALLBACK}). */
        void tell(FailureListener listener, CommunicatorFailedException f);
    }

    private static final VarHandle PUBLISHED;
    private static final VarHandle NOTIFIED;
    private static final VarHandle IN_CALL;
    private static final Stream[] NO_STREAMS = {};

    static {
        try {
            PUBLISHED = MethodHandles.lookup().findVarHandle(CommHealth.class, "published", long.class);
            NOTIFIED = MethodHandles.lookup().findVarHandle(CommHealth.class, "notifiedThrough", long.class);
            IN_CALL = MethodHandles.lookup().findVarHandle(CommHealth.class, "inCall", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * The logger of what it reports, and of what the core's classes that make, watch and end a communicator report:
     * the Communicator's, so that a logging configuration that names {@code org.nccl4j.Communicator} covers it.
     */
    static final org.slf4j.Logger COMMUNICATOR_LOG = org.slf4j.LoggerFactory.getLogger("org.nccl4j.Communicator");
    /** NCCL teardowns (abort, finalize, destroy) under way in this process: the exit waits for them. */
    private static final java.util.concurrent.atomic.AtomicInteger TEARDOWNS =
            new java.util.concurrent.atomic.AtomicInteger();
    /** How long a teardown waits for a thread inside an enqueueing NCCL call to leave it. */
    private static final long CALL_LEAVE_NANOS = 2_000_000_000L;
    /**
     * The same wait before the watchdog's abort of a communicator it found broken: 250 ms. A call that can still leave
     * does so within microseconds; one that has not is waiting for what the failure says will never come (the first
     * collective making its connections to a peer that is gone: seen on 2 x H200 with NCCL 2.28.3, where the 2 s wait
     * was most of a survivor's end), and only the abort ends it.
     */
    static final long WATCHDOG_CALL_LEAVE_NANOS = 250_000_000L;

    final long handle;
    final int rank;
    final int size;
    final int device;
    final boolean blocking;
    /** The loaded NCCL's version, for the flight record. */
    private final String ncclVersion;
    private final Leaks.Token leak;
    private final Hooks hooks;

    /** The settings this communicator is watched and recorded with. */
    final WatchSettings settings;
    /** The flight recorder, or null when the settings turn it off (watchdog off and a buffer of 0). */
    final FlightRecorder recorder;
    /** Its collectives in the terms every rank shares, for the liveness channel's comparisons and departures. */
    final Ledger ledger = new Ledger();
    /** Held by close(), abort() and the watchdog while it looks at this communicator. */
    final ReentrantLock lifecycle = new ReentrantLock();

    /** Closed for calls: closed, aborted, or failed. */
    volatile boolean closed;
    /**
     * No new operation is taken: set as {@code close()} or {@code abort()} begins, on whatever thread, before it reads
     * the last collective it tells the peers, and when it is closed. The one flag the collective path reads.
     */
    volatile boolean refusing;
    /** Who began closing it, while it is being closed: {@code close() on thread "hook"}. */
    private volatile String closingBy;
    /** 1 while a thread is inside an NCCL call that enqueues on it: a teardown waits for it to leave. */
    @SuppressWarnings("unused")
    private volatile int inCall;
    /** Failed, closed for calls, but not aborted: kept for shrink ({@link FailurePolicy#RECOVER}). */
    volatile boolean kept;
    /** The failure the watchdog found, thrown by every later call; null while healthy. */
    volatile CommunicatorFailedException failure;
    /** Why the process's exit aborted it (a signal, System.exit), for the message of later calls; null otherwise. */
    volatile String closedAtExit;
    private volatile boolean traceDumped;
    /** Taken out of the watchdog's recorded communicators (closed, aborted, aborted at exit). */
    volatile boolean forgotten;

    /** The number of operations enqueued so far (the enqueueing thread's). */
    long sequence;
    /** The last recorded sequence number that NCCL has launched (not inside an open group): the watchdog's to mark. */
    @SuppressWarnings("unused")
    private volatile long published;
    /** Known complete because a wait on the only stream returned after it was published; the watchdog marks it. */
    private volatile long syncedThrough;
    /**
     * The last recorded operation known complete when this rank first heard that a member is lost (a wait's or the
     * watchdog's); -1 before that news. A wait that returns over a later one throws (see completedBySynchronize).
     */
    private volatile long provenAtLoss = -1;
    /** The last recorded operation whose completion the observer has been told of. */
    private volatile long notifiedThrough;
    /** Recorded inside an open group: published at the group's end. */
    private volatile boolean deferred;
    /** The streams this communicator has enqueued on, for the watchdog's markers; replaced, never changed. */
    private volatile Stream[] streams = NO_STREAMS;
    /** The stream of the last operation: the hot path's test of whether the stream is known. */
    private Stream lastStream;

    /** Which ranks are gone ({@link Liveness}); null when not made by fromEnvironment with MASTER_ADDR/MASTER_PORT. */
    volatile Liveness liveness;
    /** How many recoveries led to this communicator: 0 for one made directly; each recovery adds one. */
    final int generation;
    /** The collective check (NCCL4J_CHECK_COLLECTIVES), or null when it is off. */
    final CollectiveCheck check;

    CommHealth(long handle, int rank, int size, int device, boolean blocking, WatchSettings settings, int generation,
            String ncclVersion, Leaks.Token leak, Hooks hooks) {
        this.handle = handle;
        this.rank = rank;
        this.size = size;
        this.device = device;
        this.blocking = blocking;
        this.settings = settings;
        this.generation = generation;
        this.ncclVersion = ncclVersion;
        this.leak = leak;
        this.hooks = hooks;
        this.recorder = settings.traceBuffer() == 0 ? null : new FlightRecorder(settings.traceBuffer());
        this.check = settings.checkCollectives() ? new CollectiveCheck(this) : null;
    }

    // ------------------------------------------------------------------ identity, as the lower classes ask for it

    @Override
    public long handleUnchecked() {
        return closed ? 0L : handle;
    }

    @Override
    public int rankUnchecked() {
        return rank;
    }

    @Override
    public boolean isBlocking() {
        return blocking;
    }

    @Override
    public int generation() {
        return generation;
    }

    @Override
    public Ledger ledger() {
        return ledger;
    }

    /** The name its config gave it, or null. */
    String name() {
        return settings.commName();
    }

    // ------------------------------------------------------------------ the hot path's part

    /** Enters an enqueueing NCCL call: then the open check, so that a teardown either sees this call or it sees it. */
    void enterCall() {
        IN_CALL.setVolatile(this, 1);
    }

    /**
     * Enters an NCCL call that enqueues on this communicator (a collective, a graph's launch), or throws the close's
     * exception when a close or abort has begun, with nothing entered: entered first, then checked, so that a close
     * either sees the call (and waits for {@link #leaveCall}) or the call sees the close.
     */
    @Override
    public void enterIfOpen() {
        enterCall();
        if (refusing) {
            leaveCall();
            throw closedError();
        }
    }

    @Override
    public void leaveCall() {
        IN_CALL.setRelease(this, 0);
    }

    /**
     * Records an operation NCCL took on {@code stream} and publishes it to the watchdog (at the group's end when a
     * group is open); inside a graph capture, notes the communicator on the stream instead. Allocates nothing.
     *
     * @return its number in the flight recorder, or 0 when nothing was recorded
     */
    long record(TraceOperation operation, long count, DataType type, int reduceOp, int peer, long bytes,
            Stream stream) {
        FlightRecorder r = recorder;
        if (r == null) {
            return 0;
        }
        if (Capture.active() != 0 && stream.captureThread() != null) {
            stream.capturedCommunicator(this);   // runs at each launch of the graph, recorded then
            return 0;
        }
        long traced = r.record(operation.code(), count, type.code(), reduceOp, peer, bytes, stream.handle());
        if (stream != lastStream) {
            useStream(stream);
        }
        if (Groups.open() == 0) {
            PUBLISHED.setRelease(this, traced);
        } else {
            deferred = true;
        }
        return traced;
    }

    /** A stream not used by the last operation: remembered for the watchdog's markers (copy on write, rare). */
    private void useStream(Stream stream) {
        lastStream = stream;
        Stream[] known = streams;
        for (Stream s : known) {
            if (s == stream) {
                return;
            }
        }
        Stream[] more = Arrays.copyOf(known, known.length + 1);
        more[known.length] = stream;
        streams = more;
        stream.clearFailure();   // a stream reused after another communicator failed on it
        stream.addUser(this);
    }

    // ------------------------------------------------------------------ what streams, events and graphs tell it

    @Override
    public void graphLaunched(Stream stream, long operations) {
        FlightRecorder r = recorder;
        if (r == null || closed) {
            return;
        }
        long traced = r.record(TraceOperation.graphLaunch.code(), operations, -1, -1, -1, 0, stream.handle());
        ledger.sawIssuer();   // the launching thread issues the graph's collectives: a close names it
        if (stream != lastStream) {
            useStream(stream);
        }
        PUBLISHED.setRelease(this, traced);
    }

    /** At the end of the outermost group: publishes what was recorded inside it. */
    void groupEnded() {
        if (deferred) {
            deferred = false;
            PUBLISHED.setRelease(this, recorder.lastEnqueued());
        }
    }

    /**
     * A wait on {@code stream} returned: every operation this communicator had published when the wait began (or
     * the event was recorded) has completed, if the stream is the only one it uses. The watchdog marks them. After a
     * departure, a wait on any of its streams (its own or one it shares) over a collective that a departed rank never
     * issued throws ({@link #refuseEndedWithoutAPeer}).
     */
    @Override
    public void completedBySynchronize(Stream stream, long published) {
        if (published <= syncedThrough) {
            return;
        }
        Liveness l = liveness;
        if (heardOf(l)) {
            refuseEndedWithoutAPeer(l, published);
        }
        Stream[] s = streams;
        if (s.length == 1 && s[0] == stream) {
            syncedThrough = published;
            if (hooks.observed()) {
                notifyCompleted(published, System.nanoTime());
            }   // bound metrics: the latency runs to this wait's return
        }
    }

    @Override
    public boolean heardDeparture() {
        return heardOf(liveness);
    }

    /** Whether {@code l} (this communicator's channel, or null) told of a member that departed or was lost. */
    private static boolean heardOf(Liveness l) {
        return l != null && (l.departures().any() || l.anyLost());
    }

    @Override
    public void refuseAfterNews(long published) {
        Liveness l = liveness;
        if (published > syncedThrough && heardOf(l)) {
            refuseEndedWithoutAPeer(l, published);
        }
    }

    /**
     * A wait over collectives up to {@code published} returned normally, and a departure or a loss has been heard:
     * when a collective it covered was never issued by a departed member, or was not yet known complete when this rank
     * heard that a member is lost (its connection ended without a goodbye, or went silent: what it issued is not
     * known), its result may not be every rank's reduction (an abort elsewhere in the middle of it let it end: seen
     * with 4 ranks on 4 x H200, a stopped rank's all-reduce ending with two ranks' sum on a third), and the wait
     * throws instead of returning. The watchdog finds the same at its next look; its failure is awaited (at most
     * {@link #ENDED_WITHOUT_WAIT_NANOS}) and thrown, so that the program sees one failure, the communicator aborted.
     */
    private void refuseEndedWithoutAPeer(Liveness l, long published) {
        String without = l.departures().any() ? l.departures().endedWithout(l.launchRankOfSelf(), ledger, published,
                generation, l::currentRank) : null;
        noteLoss(l);   // the wait may see the loss before the news reaches this communicator: it hears it now
        if (without == null && published > provenAtLoss && l.anyLost()) {
            without = endedAfterALoss(l, published);
        }
        if (without == null) {
            return;
        }
        long end = System.nanoTime() + ENDED_WITHOUT_WAIT_NANOS;
        while (failure == null && System.nanoTime() - end < 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
        }
        CommunicatorFailedException f = failure;
        if (f != null) {
            throw f.toProgram();
        }
        throw new IllegalStateException("rank " + rank + " of " + size + ": " + without + "; its result is not the "
                + "reduction of every rank's data. The communicator cannot go on: close it, and restart the job (or "
                + "recover the survivors)");
    }

    /**
     * {@code allReduce #3 ended after the news that rank 1 (host, pid 42) is lost, and may not hold its part}: the last
     * operation a wait covered.
     */
    private String endedAfterALoss(Liveness l, long published) {
        FlightRecorder r = recorder;
        TraceEntry e = r == null ? null : r.entry(published);
        StringBuilder sb = new StringBuilder(e == null ? "operation #" + published
                : e.operation().name() + " #" + e.sequence()).append(" ended after the news that ");
        List<RankProcess> lost = l.lost();
        for (int i = 0; i < lost.size(); i++) {
            sb.append(i == 0 ? "" : ", ").append(lost.get(i));
        }
        return sb.append(lost.size() == 1 ? " is" : " are").append(" lost, and may not hold its part").toString();
    }

    /** The news of a loss: what is known complete now is not in doubt (see {@link #provenAtLoss}). */
    private void noteLoss(Liveness l) {
        if (provenAtLoss < 0 && l.anyLost()) {
            FlightRecorder r = recorder;
            provenAtLoss = Math.max(syncedThrough, r == null ? 0 : r.lastCompleted());
        }
    }

    /** How long a wait that ended without a departed peer's part waits for the watchdog's failure. */
    private static final long ENDED_WITHOUT_WAIT_NANOS = 1_000_000_000L;

    /** The observer is set: what came before it is not its business. */
    void observing() {
        FlightRecorder r = recorder;
        notifiedThrough = r == null ? 0 : r.lastEnqueued();
    }

    /**
     * Tells the observer (if any) that the recorded operations up to {@code to} completed at {@code nowNanos}, each
     * once: from a user's wait (its caller's thread) or the watchdog's look, whichever sees it first.
     */
    void notifyCompleted(long to, long nowNanos) {
        if (!hooks.observed()) {
            return;
        }
        long from = notifiedThrough;
        while (to > from) {
            if (NOTIFIED.compareAndSet(this, from, to)) {
                hooks.completed(from + 1, to, nowNanos);
                return;
            }
            from = notifiedThrough;
        }
    }

    /** The hooks into the Communicator: its observer and its failure listener. */
    Hooks hooks() {
        return hooks;
    }

    /** The last operation known complete through a wait of the user's (see completedBySynchronize). */
    long syncedThrough() {
        return syncedThrough;
    }

    /** Throws the watchdog's failure of this communicator, if there is one. */
    @Override
    public void throwIfFailed() {
        CommunicatorFailedException f = failure;
        if (f != null) {
            throw f.toProgram();
        }
    }

    @Override
    public long published() {
        return (long) PUBLISHED.getAcquire(this);
    }

    Stream[] streamsUsed() {
        return streams;
    }

    /** Whether waits on this communicator's streams must poll: its failures keep it for recovery. */
    @Override
    public boolean keptForRecovery() {
        return settings.policy() == FailurePolicy.RECOVER;
    }

    boolean traceDumped() {
        return traceDumped;
    }

    @Override
    public boolean ownOperationsPending() {
        return failure == null && !closed && !ownOperationsComplete();
    }

    /** Whether every operation it recorded is known complete (true when nothing records or watches them). */
    boolean ownOperationsComplete() {
        FlightRecorder r = recorder;
        return r == null || !settings.enabled() || r.oldestPending() == 0;
    }

    // ------------------------------------------------------------------ failure

    /**
     * The watchdog found this communicator broken (its lifecycle lock is held): the failure becomes this
     * communicator's and its streams', which releases the threads waiting on them; then the communicator is aborted,
     * or under {@link FailurePolicy#RECOVER} kept for shrink (marked kept before the waiters are released).
     */
    void failedByWatchdog(CommunicatorFailedException f) {
        failure = f;
        if (settings.policy() == FailurePolicy.RECOVER) {
            if (markClosed()) {
                kept = true;   // no abort: shrink(NCCL_SHRINK_ABORT) or abort() ends its operations
            }
            releaseWaiters(f);   // after kept: a released waiter's next call (shrink, recover) finds it kept
            return;
        }
        releaseWaiters(f);
        if (markClosed()) {
            // a thread inside an enqueue leaves it first, unless it waits for what the failure says is gone
            long waited = awaitCallsLeft("the watchdog's ncclCommAbort", WATCHDOG_CALL_LEAVE_NANOS);
            long begin = System.nanoTime();
            int rc = tearDown(() -> NcclNative.ncclCommAbort(handle));
            long took = System.nanoTime() - begin;
            if (rc != 0) {
                COMMUNICATOR_LOG.warn("nccl4j watchdog: ncclCommAbort of {} returned {}", this, rc);
            }
            if (waited + took >= SLOW_ABORT_NANOS) {
                // the process's end and a close() of this communicator wait for it: say where the time went
                COMMUNICATOR_LOG.info("nccl4j watchdog: ncclCommAbort of {} took {} ms (after {} ms for a thread "
                        + "inside an NCCL call to leave it)", this, took / 1_000_000, waited / 1_000_000);
            }
        }
    }

    /** An abort of the watchdog's that takes this long is logged with its time. */
    private static final long SLOW_ABORT_NANOS = 200_000_000L;

    /**
     * The watchdog's monitor found the watchdog's thread stuck ({@link WatchdogMonitor}): the failure becomes this
     * communicator's and its streams', as {@link #failedByWatchdog} makes it under {@link FailurePolicy#RECOVER}:
     * closed for calls and kept, not aborted (the stuck thread may be inside an NCCL call on it), so that
     * abort, close, shrink or recover can follow. The lifecycle lock is not taken (the stuck thread may hold it);
     * closed and kept are set together under this object's monitor, where {@code markClosed()} sets closed, so that
     * close() sees them both or neither.
     *
     * @return false when the communicator was already closed (closed, aborted or failed): nothing changed
     */
    boolean failedByMonitor(CommunicatorFailedException f) {
        synchronized (this) {
            if (!markClosed()) {
                return false;
            }
            failure = f;
            kept = true;   // close() and abort() abort it
        }
        releaseWaiters(f);
        return true;
    }

    /** Every thread waiting on a stream this communicator used throws {@code f}. */
    private void releaseWaiters(CommunicatorFailedException f) {
        for (Stream s : streams) {
            s.failed(f);
        }
    }

    /** The program closes or aborts this communicator: it needs no telling of its failure any more. */
    void failureAcknowledged() {
        CommunicatorFailedException f = failure;
        if (f != null) {
            f.told();
        }
    }

    /** The exception of a call on it once closed: its failure, or that it is closed (and why, at exit). */
    RuntimeException closedError() {
        CommunicatorFailedException f = failure;
        if (f != null) {
            return f.toProgram();
        }
        String why = closedAtExit;
        String by = closingBy;
        if (!closed && by != null) {
            return new IllegalStateException("this Communicator (rank " + rank + " of " + size + ") is being closed: "
                    + by);
        }
        return new IllegalStateException("this Communicator (rank " + rank + " of " + size + ") is closed"
                + (why == null ? "" : ": " + why));
    }

    /**
     * {@code close()} or {@code abort()} begins ({@code how}: which, and on which thread): no operation is taken from
     * now on, and one inside NCCL on another thread is let finish, so that the last collective is the one told.
     */
    @Override
    public void stopIssuing(String how) {
        if (closingBy == null) {
            closingBy = how;
        }
        refusing = true;
        awaitCallsLeft(how);
    }

    // ------------------------------------------------------------------ the flight record

    /**
     * This rank leaves while its peers may go on (an abort, an exit with the communicator open, a close after other
     * collectives than theirs): its flight record is written too, unless one was (a failure's), so that
     * {@code scripts/nccl4j-trace} has every rank's.
     */
    @Override
    public void recordDeparture(String what) {
        if (recorder == null || traceDumped) {
            return;
        }
        try {
            writeTrace(TraceDump.REASON_DEPARTED, "rank " + rankUnchecked() + " " + what, null);
        } catch (IOException | RuntimeException e) {
            COMMUNICATOR_LOG.warn("nccl4j: rank {} could not write its flight record as it left: {}", rankUnchecked(),
                    e.toString());
        }
    }

    /**
     * The watchdog failed this communicator: its peers are told on the liveness channel ({@code DEPART failure}),
     * except under RECOVER (the rank stays, to recover).
     */
    void announceFailure(CommunicatorFailedException f) {
        Liveness l = liveness;
        if (l != null && !keptForRecovery()) {
            long last = ledger.last();
            l.depart(Departures.Kind.FAILURE, generation, last, ledger.describe(last),
                    f.getClass().getSimpleName() + ": " + f.verdict());
        }
    }

    /**
     * News from the channel that a peer failed, left uncleanly or diverged: this rank's flight record, once (every
     * live rank writes its own, from the channel's thread, so that a rank stuck in its own code is recorded too).
     */
    private void peerNews(String news) {
        if (recorder == null || traceDumped || failure != null) {
            return;
        }
        try {
            Path p = writeTrace(TraceDump.REASON_PEER_FAILED, "a peer failed: " + news, null);
            COMMUNICATOR_LOG.warn("nccl4j: rank {} of {} wrote its flight record on news from the liveness channel "
                    + "({}): {}", rankUnchecked(), size, news, p);
        } catch (IOException | RuntimeException e) {
            COMMUNICATOR_LOG.warn("nccl4j: rank {} could not write its flight record on news of a peer's failure: {}",
                    rankUnchecked(), e.toString());
        }
    }

    /** Writes the flight record with {@code reason} into dir (null: the trace directory). */
    Path writeTrace(String reason, String failureText, Path dir) throws IOException {
        FlightRecorder r = recorder;
        if (r == null) {
            throw new IllegalStateException("this Communicator (rank " + rank + ") has no flight recorder: it was "
                    + "made with traceBuffer(0)");
        }
        TraceDump dump = TraceDump.capture(r, rank, size, settings.commName(), ncclVersion, reason, failureText);
        Thread issuer = ledger.issuer();
        if (issuer != null) {   // where the thread that issues its operations is: NCCL, CUDA, nccl4j or its own code
            TraceDump.ThreadStack stack = TraceDump.ThreadStack.of(issuer);
            if (issuer == Thread.currentThread()) {   // it writes this dump itself: where it was, not the writing
                List<String> frames = stack.frames();
                int from = 0;
                for (int i = 0; i < frames.size(); i++) {
                    String f = frames.get(i);
                    if (f.contains("org.nccl4j.CommHealth.writeTrace(")
                            || f.contains("org.nccl4j.CommHealth.recordDeparture(")) {
                        from = i + 1;
                    }
                }
                stack = new TraceDump.ThreadStack(stack.name(), stack.id(), stack.state(),
                        frames.subList(from, frames.size()));
            }
            dump = dump.withThreads(List.of(stack));
        }
        Path file = dump.write(dir == null ? settings.traceDir() : dir);
        traceDumped = true;
        return file;
    }

    // ------------------------------------------------------------------ the liveness channel

    /**
     * The channel now serves this communicator: reports, comparisons, departures, and a dump on a peer's failure. The
     * Communicator's constructor calls it, last, when its parts name a channel.
     */
    void attachChannel(Liveness l) {
        liveness = l;
        l.attach(this, news -> {
            noteLoss(l);
            Survivors.heard(l);   // rank 0 gone: this rank answers the roll call of those that remain
            peerNews(news);
        });
        Farewell.register(l);   // the process's end tells this communicator's departure on it
    }

    /** The liveness channel no longer serves this communicator: it is handed on (see Recovery); null if none. */
    Liveness detachChannel() {
        Liveness l = liveness;
        liveness = null;
        return l;
    }

    /** The channel lingers a moment for this rank's cause, then closes (see {@link Liveness#leave()}). */
    void leaveLiveness() {
        Liveness l = liveness;
        if (l != null) {
            liveness = null;
            l.leave();
        }
    }

    // ------------------------------------------------------------------ closing and NCCL teardowns

    /** Marks this communicator closed, once; false if it already was (as Netty's FileDescriptor.markClosed). */
    boolean markClosed() {
        synchronized (this) {
            if (closed) {
                return false;
            }
            closed = true;
            refusing = true;
        }
        NcclLog.unregister(handle);
        leak.closed();
        return true;
    }

    /**
     * After {@link #markClosed}: waits until no thread is inside an enqueueing NCCL call on this communicator, so
     * that {@code what} (an abort, a finalize) does not free what the call uses. Such a call takes microseconds; one
     * that has not left after 2 s is stuck (making connections to a peer that is gone, say), and only the abort can
     * end it: then {@code what} goes ahead, with a warning.
     */
    void awaitCallsLeft(String what) {
        awaitCallsLeft(what, CALL_LEAVE_NANOS);
    }

    /** {@link #awaitCallsLeft(String)} for at most {@code boundNanos}; returns how long it waited, in nanoseconds. */
    long awaitCallsLeft(String what, long boundNanos) {
        long start = System.nanoTime();
        long end = start + boundNanos;
        while ((int) IN_CALL.getVolatile(this) != 0) {
            if (System.nanoTime() - end >= 0) {
                COMMUNICATOR_LOG.warn("nccl4j: a thread has been inside an NCCL "
                        + "call on {} for {}: {} goes ahead (only it can end a call that waits for a peer)", this,
                        org.nccl4j.control.Durations.format(java.time.Duration.ofNanos(boundNanos)), what);
                return System.nanoTime() - start;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(50_000L);
        }
        return System.nanoTime() - start;
    }

    /**
     * Runs an NCCL teardown call, counted, so that the process's exit can wait for it ({@link Farewell}); once the
     * exit has waited for those under way ({@link #endCalls}), a new one is skipped (0 returned): the C runtime's exit
     * handlers would run libnccl's destructors under it (seen on 2 x H200 with NCCL 2.28.3: a {@code close()} on the
     * main thread after the exit's hook crashed in {@code ncclCommAbort}), and the process's end frees what it holds.
     */
    static int tearDown(java.util.function.IntSupplier call) {
        if (!teardownAhead()) {
            COMMUNICATOR_LOG.debug("nccl4j: an NCCL teardown was skipped: the process is exiting");
            return 0;
        }
        try {
            return call.getAsInt();
        } finally {
            teardownDone();
        }
    }

    /**
     * Counts an NCCL teardown about to run (on this thread, or on one about to start), so that the process's exit
     * waits for it from now on; {@link #teardownDone} when it has returned.
     *
     * @return false when the process's exit has already ended NCCL's calls: the teardown is not to run
     */
    static boolean teardownAhead() {
        TEARDOWNS.incrementAndGet();
        if (callsEnded) {   // after the count: the exit either sees this call and waits, or this call sees the end
            TEARDOWNS.decrementAndGet();
            return false;
        }
        return true;
    }

    /** A teardown counted by {@link #teardownAhead} has returned. */
    static void teardownDone() {
        TEARDOWNS.decrementAndGet();
    }

    /** The process's exit has waited for the NCCL calls under way: none starts from now on ({@link #tearDown}). */
    static void endCalls() {
        callsEnded = true;
    }

    /** @return whether the process's exit has ended NCCL's calls ({@link #endCalls}) */
    static boolean callsEnded() {
        return callsEnded;
    }

    private static volatile boolean callsEnded;

    /** For tests: NCCL's calls start again, as before {@link #endCalls}. */
    static void callsAgainForTests() {
        callsEnded = false;
    }

    /** @return how many NCCL teardown calls are under way in this process */
    static int teardownsUnderWay() {
        return TEARDOWNS.get();
    }

    /**
     * The process is ending ({@link Farewell}): aborts this communicator unless a thread is closing or aborting it
     * (then it is left to that thread); a thread that passed the open check just before is given a moment to leave
     * its enqueueing call.
     */
    @Override
    public void abortAtExit(String cause) {
        boolean locked = false;
        try {
            locked = lifecycle.tryLock(Farewell.ABORT_WAIT_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!locked) {
            return;
        }
        try {
            closedAtExit = "the process is exiting (" + cause + ") and aborted it";
            if (markClosed() || kept) {
                kept = false;
                awaitCallsLeft("ncclCommAbort at exit");
                forgotten = true;   // out of the watchdog's recorded communicators
                tearDown(() -> NcclNative.ncclCommAbort(handle));
            }
        } finally {
            lifecycle.unlock();
        }
    }

    @Override
    public String toString() {
        return "Communicator[rank " + rank + " of " + size + ", device " + device + (closed ? ", closed" : "") + "]";
    }
}
