package org.nccl4j;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import org.nccl4j.control.Departures;
import org.nccl4j.control.Farewell;
import org.nccl4j.control.Liveness;
import org.nccl4j.jni.NcclNative;

/**
 * Start-up ends everywhere when a rank is lost during it: the exception every other rank's
 * {@link Communicator#fromEnvironment} throws ({@link PeerLostDuringStartupException}), and the guard of NCCL's
 * blocking initialization, the one start-up step that no thread can end from outside.
 *
 * <p>The waits of start-up that are nccl4j's own (the rendezvous, the arrival of every rank, a nonblocking NCCL
 * initialization that nccl4j polls) end as soon as the liveness channel brings the news, and throw. NCCL's blocking
 * {@code ncclCommInitRank} cannot be abandoned: it has no handle to abort until it returns ({@code ncclCommAbort} from
 * another thread would free the communicator the initializing thread still uses), and making the communicator
 * nonblocking instead would put every later collective on NCCL's nonblocking path, where each {@code ncclGroupEnd}
 * starts a thread and returns {@code ncclInProgress} (NCCL's src/group.cc), and ncclCommSplit and ncclCommShrink of
 * such a parent misbehave (docs/gpu-runs/2026-11-25-recovery.md). Usually NCCL fails by itself once the lost rank's
 * sockets close, and the failure is thrown as the loss. When it does not (the lost rank never reached NCCL's
 * bootstrap, which then waits for it for ever), the guard ends the process once the grace after the news has passed
 * ({@code NCCL4J_LEFT_BEHIND_EXIT}, 500 ms by default; {@code off} leaves the rank waiting for the init timeout):
 * one ERROR line with the exception's message and where the initializing thread is, then a halt with
 * {@link FailurePolicy#EXIT_STATUS}, as {@link LeftBehindExit} ends a rank that no exception can reach. A communicator
 * made with {@code CommConfig.Builder.blocking(false)} is polled, aborted and thrown instead, never halted.
 */
final class StartupGuard implements AutoCloseable {
    /** How often the guard looks for news. */
    static final long POLL_NANOS = 10_000_000L;
    /** How long a failed start-up step waits for the news that may explain it (the loss reaches it a moment later). */
    static final long EXPLAIN_NANOS = 600_000_000L;
    /** Blocking NCCL initializations under way in this process (the exit waits for them: {@link Farewell}). */
    private static final java.util.concurrent.atomic.AtomicInteger INITS =
            new java.util.concurrent.atomic.AtomicInteger();

    /**
     * How the guard ends the process: the ERROR line, then {@code _exit} ({@link NcclNative#exitNow}), not a halt:
     * the C runtime's exit would run libnccl's exit handlers and static destructors under the thread that is still
     * inside its initialization, and crash the process (seen on 4 x H200 with NCCL 2.28.3). Tests replace it.
     */
    static volatile LeftBehindExit.Ending ending = (status, line) -> {
        org.slf4j.LoggerFactory.getLogger(StartupGuard.class).error(line);
        exitNow(status);
    };

    /**
     * NCCL's side of the process's exit ({@link Farewell}): the blocking initializations under way here, the teardowns
     * under way ({@link CommHealth#teardownsUnderWay}), and {@link #exitNow}.
     */
    static final Farewell.NcclUnderWay AT_EXIT = new Farewell.NcclUnderWay() {
        @Override
        public int initsUnderWay() {
            return StartupGuard.initsUnderWay();
        }

        @Override
        public int teardownsUnderWay() {
            return CommHealth.teardownsUnderWay();
        }

        @Override
        public void exitNow(int status) {
            StartupGuard.exitNow(status);
        }

        @Override
        public void endCalls() {
            CommHealth.endCalls();
        }
    };

    private final Thread thread;
    private volatile boolean done;

    private StartupGuard(Liveness live, int rank, int size, Thread initializing, Duration grace, String operation) {
        thread = new Thread(() -> {
            while (!done) {
                Liveness.Loss loss = live.startupLoss(size);
                if (loss != null && System.nanoTime() - loss.heardNanos() - grace.toNanos() >= 0) {
                    if (!done && !Farewell.exiting()) {
                        PeerLostDuringStartupException e = lost(loss, rank, size, operation,
                                "NCCL initialization could not be abandoned", null);
                        live.departDuringStartUp(Departures.Kind.FAILURE, Farewell.describe(e));
                        end(e, initializing);
                    }
                    return;
                }
                LockSupport.parkNanos(POLL_NANOS);
            }
        }, "nccl4j-startup-guard-" + rank);
        thread.setDaemon(true);
    }

    /**
     * Guards {@code initializing}'s blocking NCCL initialization until {@link #close()}; null (nothing guarded) when
     * there is no channel or the exit is off ({@code NCCL4J_LEFT_BEHIND_EXIT=off}).
     *
     * @param operation the NCCL function called, for the message
     */
    static StartupGuard watch(Liveness live, int rank, int size, Thread initializing, String operation) {
        Duration grace = LeftBehindExit.grace();
        if (live == null || grace == null) {
            return null;
        }
        StartupGuard g = new StartupGuard(live, rank, size, initializing, grace, operation);
        g.thread.start();
        return g;
    }

    /** The initialization returned: nothing more to guard. */
    @Override
    public void close() {
        done = true;
        LockSupport.unpark(thread);
    }

    private static void end(PeerLostDuringStartupException e, Thread initializing) {
        String line = "nccl4j: " + e.getMessage() + "; its thread \"" + initializing.getName() + "\" is at "
                + LeftBehindExit.where(initializing) + ". Halting the process with status " + FailurePolicy.EXIT_STATUS
                + " (" + LeftBehindExit.VARIABLE + "=off leaves it waiting for the init timeout; a communicator made "
                + "with CommConfig.Builder.blocking(false) throws instead)";
        ending.end(FailurePolicy.EXIT_STATUS, line);
    }

    /** A blocking NCCL initialization begins on this thread ({@link #initEnded()} in a finally). */
    static void initBegins() {
        INITS.incrementAndGet();
    }

    /** It returned (made the communicator, failed, or was given up). */
    static void initEnded() {
        INITS.decrementAndGet();
    }

    /** @return how many blocking NCCL initializations are under way in this process */
    static int initsUnderWay() {
        return INITS.get();
    }

    /**
     * Flushes what Java and NCCL have to say, then ends the process with {@code _exit(status)}; a halt when the native
     * library is not loaded (then NCCL is not either).
     */
    static void exitNow(int status) {
        System.out.flush();
        System.err.flush();
        NcclLog.flush();
        try {
            NcclNative.exitNow(status);
        } catch (LinkageError e) {
            // no native library: nothing of NCCL runs
        }
        Runtime.getRuntime().halt(status);
    }

    /**
     * The exception for {@code loss}: rank {@code rank} of {@code size} ends its {@code operation} ({@code rendezvous},
     * {@code arrival}, the NCCL function) because of it.
     *
     * @param ended what became of this rank's start-up, e.g. {@code NCCL initialization abandoned}
     * @param cause what the step threw, or null
     */
    static PeerLostDuringStartupException lost(Liveness.Loss loss, int rank, int size, String operation, String ended,
            Throwable cause) {
        String m = "rank " + rank + " of " + size + ": " + loss.says() + "; the communicator was not made (" + ended
                + "). Restart the job (or let its launcher restart it), after fixing what ended rank " + loss.rank();
        return new PeerLostDuringStartupException(m, operation, rank, loss.rank(), loss.host(), loss.pid(),
                loss.phase(), loss.how(), cause);
    }

    /**
     * Throws {@link #lost} for a rank that {@code live} knows to be lost or gone now, if any (nothing without a
     * channel): the step {@code operation}, and what became of the start-up ({@code what}).
     */
    static void throwIfLost(Liveness live, int rank, int size, String operation, String what) {
        Liveness.Loss loss = live == null ? null : live.startupLoss(size);
        if (loss != null) {
            throw lost(loss, rank, size, operation, what, null);
        }
    }

    /**
     * The loss that explains a failed start-up step, waiting up to {@link #EXPLAIN_NANOS} for its news; null when
     * none comes (the step's own failure stands).
     */
    static Liveness.Loss explain(Liveness live, int size) {
        if (live == null) {
            return null;
        }
        long end = System.nanoTime() + EXPLAIN_NANOS;
        while (true) {
            Liveness.Loss loss = live.startupLoss(size);
            if (loss != null || System.nanoTime() - end >= 0) {
                return loss;
            }
            LockSupport.parkNanos(POLL_NANOS);
        }
    }
}
