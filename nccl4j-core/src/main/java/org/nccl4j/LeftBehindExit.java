package org.nccl4j;

import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import org.nccl4j.control.Durations;
import org.nccl4j.control.Farewell;
import org.nccl4j.launch.ProcessEnvironment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends the process of a rank that its peers left behind and that cannot be told: under the {@code throw} policy a
 * failure reaches the program as an exception in a thread that waits on the communicator or calls it next, but a
 * rank stuck in its own code (a CPU loop, a deadlock, a data loader that never returns) makes no such call. Its peers
 * time out waiting for the collective it never issued and end; a launcher then stops it, but a rank started as plain
 * {@code java} would run on, holding its GPU, until it calls nccl4j again, possibly never.
 *
 * <p>A rank is left behind when the watchdog fails its communicator because every way on is closed: a peer failed,
 * aborted or exited after issuing an operation this rank has not issued ({@code Departures.Verdict.leftBehind}).
 * It is stuck when, besides, it has issued nothing on that communicator for the operation timeout (the standard its
 * peers used to give up on it) and the program has been told of no failure since its last operation. Then, after a
 * grace for a thread that is just about to call ({@code NCCL4J_LEFT_BEHIND_EXIT}, 500 ms by default), this class logs
 * one ERROR line (what happened, where the issuing thread is) and halts the process with
 * {@link FailurePolicy#EXIT_STATUS}, as the {@code exit} policy and as a launcher would. Its flight record was written
 * when the communicator failed. {@code NCCL4J_LEFT_BEHIND_EXIT=off} keeps such a rank running until its next call,
 * which throws. The {@code recover} policy is left alone: an elastic launcher decides there.
 *
 * <p>A rank merely slower than its peers is not stuck (it issued within the timeout), nor one whose peers close or
 * abort after the same last operation (the close deadline of a rank writing a checkpoint, say): it is not behind.
 */
final class LeftBehindExit {
    private static final Logger LOG = LoggerFactory.getLogger(LeftBehindExit.class);
    /** The variable of the grace; {@code off} turns the exit off. */
    static final String VARIABLE = "NCCL4J_LEFT_BEHIND_EXIT";
    /** The system property of the grace (wins over the variable). */
    static final String PROPERTY = "nccl4j.leftBehindExit";
    /**
     * The grace when none is set: 500 ms. The rank has by then been silent for its whole operation timeout; the grace
     * only lets a thread that is on its way to a call (microseconds away) take the failure as an exception, and it
     * keeps the stuck rank's end within 2 s of its peers' timeout (measured: 0.2-0.3 s for the news, then the grace).
     */
    static final Duration DEFAULT_GRACE = Duration.ofMillis(500);

    /** How the process ends: the ERROR line, then a halt. */
    interface Ending {
        /**
         * Ends the process.
         *
         * @param status the exit status
         * @param line what to log first
         */
        void end(int status, String line);
    }

    /** The ending; tests replace it. */
    static volatile Ending ending = (status, line) -> {
        LOG.error(line);
        System.out.flush();
        System.err.flush();
        NcclLog.flush();   // halt runs no shutdown hook: NCCL's last lines first
        Runtime.getRuntime().halt(status);
    };

    private LeftBehindExit() {
    }

    /**
     * The grace: the property, else the variable, else {@link #DEFAULT_GRACE}; null when {@code off}.
     *
     * @throws IllegalArgumentException naming the variable or property, the value and the accepted forms
     */
    static Duration grace() {
        String p = System.getProperty(PROPERTY);
        boolean property = p != null && !p.isBlank();
        String name = property ? PROPERTY : VARIABLE;
        String v = property ? p : ProcessEnvironment.liveOrJvmCopy().get(VARIABLE);
        if (v == null || v.isBlank()) {
            return DEFAULT_GRACE;
        }
        String t = v.trim().toLowerCase(Locale.ROOT);
        if (t.equals("off") || t.equals("false") || t.equals("0")) {
            return null;
        }
        try {
            return Durations.parse(name, v);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(e.getMessage() + "; or off to let a rank that its peers left behind "
                    + "run on until its next nccl4j call (default: 500ms)", e);
        }
    }

    /**
     * The watchdog failed {@code comm} with {@code failure}, which leaves it behind its peers: ends the process once
     * the rank is stuck (see the class's description), from a thread of its own, unless the exit is off.
     *
     * @param comm the communicator
     * @param failure its failure, as the watchdog made it
     * @param lastIssuedNanos when this rank last issued an operation on it ({@link System#nanoTime}); its creation
     *        when it never did
     * @param timeout the communicator's operation timeout
     * @param grace the grace ({@link #grace()}); null: off
     * @return the thread that waits, or null when the exit is off
     */
    static Thread watch(CommHealth comm, CommunicatorFailedException failure, long lastIssuedNanos,
            Duration timeout, Duration grace) {
        if (grace == null) {
            return null;
        }
        long start = System.nanoTime();
        long due = Math.max(start + grace.toNanos(), lastIssuedNanos + timeout.toNanos());
        Thread t = new Thread(() -> {
            for (long left = due - System.nanoTime(); left > 0; left = due - System.nanoTime()) {
                LockSupport.parkNanos(left);
            }
            if (CommunicatorFailedException.toldSince(lastIssuedNanos) || Farewell.exiting()) {
                return;   // the program knows (it called, queried, closed), or the process is ending anyway
            }
            end(comm, failure, System.nanoTime() - lastIssuedNanos, grace);
        }, "nccl4j-left-behind");
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static void end(CommHealth comm, CommunicatorFailedException failure, long silentNanos,
            Duration grace) {
        StringBuilder sb = new StringBuilder("nccl4j: rank ").append(failure.rank()).append(" of ")
                .append(failure.size()).append(" was left behind and is stuck in its own code: ")
                .append(failure.verdict()).append("; it has issued no operation on the communicator for ")
                .append(String.format(java.util.Locale.ROOT, "%.1f s", silentNanos / 1e9))
                .append(" and no thread took the failure within ").append(Durations.format(grace));
        Thread issuer = comm.ledger.issuer();
        if (issuer != null) {
            sb.append("; its thread \"").append(issuer.getName()).append("\" is at ").append(where(issuer));
        }
        sb.append(". Halting the process with status ").append(FailurePolicy.EXIT_STATUS).append(" (")
                .append(VARIABLE).append("=off lets it run on until its next nccl4j call, which throws)");
        ending.end(FailurePolicy.EXIT_STATUS, sb.toString());
    }

    /** The thread's first frame outside the JDK (in a CPU loop, the program's own code), else its top frame. */
    static String where(Thread t) {
        StackTraceElement[] frames = t.getStackTrace();
        for (StackTraceElement f : frames) {
            String c = f.getClassName();
            if (!c.startsWith("java.") && !c.startsWith("jdk.") && !c.startsWith("sun.")) {
                return frame(f);
            }
        }
        return frames.length == 0 ? "(no frame: " + t.getState() + ")" : frame(frames[0]);
    }

    /** {@code pkg.Class.method(File.java:12)}, without the class loader's and module's names. */
    private static String frame(StackTraceElement f) {
        return f.getClassName() + "." + f.getMethodName() + "(" + (f.getFileName() == null ? "Unknown Source"
                : f.getFileName() + (f.getLineNumber() >= 0 ? ":" + f.getLineNumber() : "")) + ")";
    }
}
