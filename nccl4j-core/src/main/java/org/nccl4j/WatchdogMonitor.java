package org.nccl4j;

import java.io.IOException;
import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import org.nccl4j.control.BoundedWait;
import org.nccl4j.control.Durations;
import org.nccl4j.trace.FlightRecorder;
import org.nccl4j.trace.TraceDump;
import org.nccl4j.trace.TraceEntry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches the watchdog: one daemon thread per process ({@code nccl4j-watchdog-monitor}), started with the watchdog,
 * as PyTorch's ProcessGroupNCCL heartbeat monitor watches its watchdog. The watchdog's loop stores
 * {@link System#nanoTime()} at the start of every iteration (its heartbeat, {@link Watchdog#heartbeat()}); the
 * monitor reads it every second, or every quarter of the stuck timeout when that is shorter. When the watchdog has
 * made no progress for the stuck timeout ({@link WatchdogConfig#stuckTimeout()},
 * {@code NCCL4J_WATCHDOG_STUCK_TIMEOUT}) it is stuck, e.g. in a CUDA or NCCL call that never returns or in a failure
 * listener that blocks, and nothing detects hangs any more. Then the monitor, once per stuck episode:
 * <ol>
 *   <li>logs one ERROR line: for how long, where (the top frame), what it does next, and the watchdog thread's
 *       stack; then every thread's stack, with the locks they hold and wait for, at WARN;</li>
 *   <li>writes the flight record of every open recorded communicator ({@link TraceDump#REASON_WATCHDOG_STUCK}), on
 *       a thread of its own, waiting for it at most {@link #TRACE_WAIT} (the stuck thread may be stuck in the
 *       same directory);</li>
 *   <li>applies the failure policy: {@link FailurePolicy#EXIT} (the process-wide policy or any watched
 *       communicator's) halts the process with {@link FailurePolicy#EXIT_STATUS}; otherwise a
 *       {@link WatchdogStuckException} becomes the failure of every open watched communicator and its streams
 *       ({@link Communicator#failedByMonitor}), which closes it for calls and releases the waits that poll, without
 *       {@code ncclCommAbort} (that would race the stuck thread's NCCL call); the observer is told, and the
 *       listener of {@link FailurePolicy#CALLBACK} is called on the monitor's thread.</li>
 * </ol>
 * When the watchdog makes progress again the monitor logs it at WARN, and a later stuck episode is reported again.
 * Reading a volatile field every second is all the monitor costs while the watchdog is healthy.
 */
final class WatchdogMonitor implements Runnable {
    /** What the monitor reads of the watchdog it watches ({@code Watchdog} implements it). */
    interface Watched {
        /** @return {@link System#nanoTime()} at the start of the watchdog loop's latest iteration */
        long heartbeat();

        /** @return the watchdog's thread, whose stack the monitor reports when it is stuck */
        Thread thread();

        /** @return every recorded communicator still reachable, watched or not */
        List<CommHealth> recordedCommunicators();
    }

    private static final Logger LOG = LoggerFactory.getLogger(WatchdogMonitor.class);
    /** How long the monitor waits for the flight records before it goes on without the rest (PyTorch: 15 s). */
    static final Duration TRACE_WAIT = Duration.ofSeconds(15);
    /** The longest time between two looks at the heartbeat. */
    private static final long MAX_CHECK_NANOS = 1_000_000_000L;

    private final Watched watchdog;
    private final Duration stuckTimeout;
    private final long stuckNanos;
    private final long checkNanos;
    /** The process-wide failure policy ({@code NCCL4J_ON_FAILURE}): exit halts even when no watched comm is open. */
    private final FailurePolicy processPolicy;
    private final Thread thread;
    private volatile boolean stopped;

    /**
     * A monitor of {@code watchdog}, not yet started.
     *
     * @param watchdog the watchdog to watch
     * @param stuckTimeout the time without a heartbeat after which the watchdog is stuck
     * @param processPolicy the process-wide failure policy
     */
    WatchdogMonitor(Watched watchdog, Duration stuckTimeout, FailurePolicy processPolicy) {
        this.watchdog = watchdog;
        this.stuckTimeout = stuckTimeout;
        this.stuckNanos = stuckTimeout.toNanos();
        this.checkNanos = Math.max(1_000_000L, Math.min(MAX_CHECK_NANOS, stuckNanos / 4));
        this.processPolicy = processPolicy;
        this.thread = new Thread(this, "nccl4j-watchdog-monitor");
        thread.setDaemon(true);
    }

    /** Starts the monitor of the process's watchdog, with the stuck timeout and policy of {@link WatchdogConfig}. */
    static WatchdogMonitor start(Watched watchdog) {
        WatchdogConfig config = WatchdogConfig.fromEnvironment();
        return new WatchdogMonitor(watchdog, config.stuckTimeout(), config.policy()).start();
    }

    /** Starts this monitor's thread. */
    WatchdogMonitor start() {
        thread.start();
        return this;
    }

    /** Ends this monitor's thread (tests: the process's monitor runs as long as the process). */
    void stop() throws InterruptedException {
        stopped = true;
        LockSupport.unpark(thread);
        thread.join(1000);
    }

    @Override
    public void run() {
        boolean reported = false;
        long reportedBeat = 0;
        while (!stopped) {
            LockSupport.parkNanos(checkNanos);
            long beat = watchdog.heartbeat();
            long now = System.nanoTime();
            if (reported) {
                if (beat != reportedBeat) {
                    reported = false;
                    LOG.warn("nccl4j watchdog monitor: the nccl4j watchdog thread is making progress again, after {} "
                            + "without progress; the communicators failed while it was stuck stay failed",
                            Durations.format(Duration.ofNanos(beat - reportedBeat)));
                }
            } else if (now - beat > stuckNanos && !stopped) {
                reported = true;
                reportedBeat = beat;
                try {
                    stuck(Duration.ofNanos(now - beat));
                } catch (RuntimeException | Error e) {
                    LOG.error("nccl4j watchdog monitor: handling the stuck watchdog failed", e);
                }
            }
        }
    }

    /** The watchdog made no progress for {@code stuckFor}: report, dump, apply the policy. */
    private void stuck(Duration stuckFor) {
        Thread t = watchdog.thread();
        StackTraceElement[] stack = t.getStackTrace();
        String where = stuckIn(stack);
        List<CommHealth> recorded = new ArrayList<>();
        List<CommHealth> watched = new ArrayList<>();
        boolean exit = processPolicy == FailurePolicy.EXIT;
        for (CommHealth c : watchdog.recordedCommunicators()) {
            if (c.closed) {
                continue;
            }
            recorded.add(c);
            if (c.settings.enabled()) {
                watched.add(c);
                exit |= c.settings.policy() == FailurePolicy.EXIT;
            }
        }
        String verdict = WatchdogStuckException.verdict(stuckFor, where);
        StringBuilder sb = new StringBuilder("nccl4j watchdog monitor: ").append(verdict).append(", thread state ")
                .append(t.getState()).append(" (").append(WatchdogConfig.STUCK_TIMEOUT).append(' ')
                .append(Durations.format(stuckTimeout)).append("): hangs and failures are no longer detected. ");
        sb.append("Writing the flight records of ").append(recorded.size()).append(" communicator")
                .append(recorded.size() == 1 ? "" : "s");
        if (exit) {
            sb.append(", then halting the process with status ").append(FailurePolicy.EXIT_STATUS)
                    .append(" (the exit policy)");
        } else {
            boolean one = watched.size() == 1;
            sb.append(", then failing ").append(watched.size()).append(one ? " watched communicator without aborting it"
                    : " watched communicators without aborting them").append(" (the stuck thread may be inside an NCCL "
                    + "call): ").append(one ? "its" : "their").append(" later calls, and waits that poll, throw "
                    + "WatchdogStuckException");
        }
        sb.append(". The watchdog thread's stack:");
        appendFrames(sb, stack);
        LOG.error(sb.toString());
        LOG.warn("nccl4j watchdog monitor: every thread's stack, as the watchdog was found stuck:\n{}", threadDump());

        Path[] traces = writeTraces(recorded, verdict);
        if (exit) {
            System.out.flush();
            System.err.flush();
            NcclLog.flush();   // halt runs no shutdown hook: NCCL's last lines first
            Runtime.getRuntime().halt(FailurePolicy.EXIT_STATUS);
        }
        long now = System.nanoTime();
        for (CommHealth c : watched) {
            fail(c, traces[recorded.indexOf(c)], stuckFor, where, verdict, now);
        }
    }

    /** Makes the monitor's failure {@code c}'s, tells its observer and calls its listener. */
    private void fail(CommHealth c, Path trace, Duration stuckFor, String where, String verdict, long now) {
        WatchSettings s = c.settings;
        FlightRecorder r = c.recorder;
        long seq = r == null ? 0 : r.oldestPending();
        TraceEntry e = seq > 0 ? r.entry(seq) : null;
        Duration elapsed = e == null ? Duration.ZERO : Duration.ofNanos(Math.max(0, now - r.enqueuedNanos(seq)));
        CommunicatorFailedException.Details d = new CommunicatorFailedException.Details(c.rankUnchecked(), c.size,
                s.commName(), e == null ? null : e.operation().name(), e == null ? 0 : e.sequence(),
                e == null ? 0 : e.count(), e == null ? null : e.dataType(), e == null ? null : e.reduceOp(),
                e == null || e.peer() == null ? -1 : e.peer(), e == null ? 0 : e.bytes(), e == null ? 0 : e.stream(),
                elapsed, s.timeout(), 0, null, trace, verdict, true, null);
        WatchdogStuckException failure = new WatchdogStuckException(d, stuckFor, where);
        if (!c.failedByMonitor(failure)) {
            return;   // closed meanwhile
        }
        LOG.warn("nccl4j watchdog monitor: {}", failure.getMessage());
        if (c.hooks().observed()) {
            try {
                c.hooks().failed(failure);
            } catch (RuntimeException | Error x) {
                LOG.error("nccl4j watchdog monitor: the observer of {} threw", c, x);
            }
        }
        if (s.policy() == FailurePolicy.CALLBACK && s.listener() != null) {
            try {
                c.hooks().tell(s.listener(), failure);
            } catch (RuntimeException | Error x) {
                LOG.error("nccl4j watchdog monitor: the failure listener of {} threw", c, x);
            }
        }
    }

    /**
     * Writes the flight records of {@code comms} on a thread of its own, waiting at most {@link #TRACE_WAIT}; the
     * files written, by index (null where none was written in time).
     */
    private static Path[] writeTraces(List<CommHealth> comms, String verdict) {
        AtomicReferenceArray<Path> written = new AtomicReferenceArray<>(comms.size());
        Thread writer = BoundedWait.run("nccl4j-watchdog-monitor-traces", TRACE_WAIT.toMillis(), () -> {
            for (int i = 0; i < comms.size(); i++) {
                CommHealth c = comms.get(i);
                try {
                    written.set(i, c.writeTrace(TraceDump.REASON_WATCHDOG_STUCK, verdict, null));
                } catch (IOException | RuntimeException x) {
                    LOG.warn("nccl4j watchdog monitor: could not write the trace of {}: {}", c, x.toString());
                }
            }
        });
        if (writer.isAlive()) {
            LOG.warn("nccl4j watchdog monitor: writing the flight records did not finish within {}; going on without "
                    + "the rest", Durations.format(TRACE_WAIT));
        }
        Path[] out = new Path[comms.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = written.get(i);
        }
        return out;
    }

    /** The top frame, and the innermost frame outside the JDK when that is another. */
    static String stuckIn(StackTraceElement[] stack) {
        if (stack.length == 0) {
            return "no stack (the thread has ended)";
        }
        String top = frame(stack[0]);
        for (StackTraceElement f : stack) {
            String c = f.getClassName();
            if (!c.startsWith("java.") && !c.startsWith("jdk.") && !c.startsWith("sun.")) {
                return f == stack[0] ? top : top + ", under " + frame(f);
            }
        }
        return top;
    }

    /** A frame as stack traces print it, without the module and class loader: {@code C.m(File.java:12)}. */
    static String frame(StackTraceElement f) {
        String at = f.isNativeMethod() ? "Native Method" : f.getFileName() == null ? "Unknown Source"
                : f.getLineNumber() >= 0 ? f.getFileName() + ":" + f.getLineNumber() : f.getFileName();
        return f.getClassName() + "." + f.getMethodName() + "(" + at + ")";
    }

    private static void appendFrames(StringBuilder sb, StackTraceElement[] stack) {
        for (StackTraceElement f : stack) {
            sb.append("\n\tat ").append(frame(f));
        }
    }

    /** Every live thread's stack with its state, the lock it waits for and the locks it holds. */
    static String threadDump() {
        StringBuilder sb = new StringBuilder();
        ThreadInfo[] infos;
        try {
            infos = ManagementFactory.getThreadMXBean().dumpAllThreads(true, true);
        } catch (RuntimeException x) {   // a VM without lock information: the stacks alone
            for (java.util.Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
                Thread t = e.getKey();
                sb.append('"').append(t.getName()).append("\" ").append(t.getState());
                appendFrames(sb, e.getValue());
                sb.append("\n\n");
            }
            return sb.toString();
        }
        for (ThreadInfo ti : infos) {
            if (ti == null) {
                continue;
            }
            sb.append('"').append(ti.getThreadName()).append("\" #").append(ti.getThreadId())
                    .append(ti.isDaemon() ? " daemon" : "").append(' ').append(ti.getThreadState());
            if (ti.getLockName() != null) {
                sb.append(" on ").append(ti.getLockName());
                if (ti.getLockOwnerName() != null) {
                    sb.append(" owned by \"").append(ti.getLockOwnerName()).append("\" #")
                            .append(ti.getLockOwnerId());
                }
            }
            StackTraceElement[] stack = ti.getStackTrace();
            MonitorInfo[] monitors = ti.getLockedMonitors();
            for (int i = 0; i < stack.length; i++) {
                sb.append("\n\tat ").append(frame(stack[i]));
                for (MonitorInfo m : monitors) {
                    if (m.getLockedStackDepth() == i) {
                        sb.append("\n\t- locked ").append(m);
                    }
                }
            }
            LockInfo[] synchronizers = ti.getLockedSynchronizers();
            if (synchronizers.length > 0) {
                sb.append("\n\tLocked synchronizers:");
                for (LockInfo l : synchronizers) {
                    sb.append("\n\t- ").append(l);
                }
            }
            sb.append("\n\n");
        }
        return sb.toString();
    }
}
