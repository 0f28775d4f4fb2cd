package org.nccl4j.control;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The end of a process, told to its peers: every way a JVM ends that Java can see (the end of main,
 * {@code System.exit}, an uncaught exception, SIGTERM, SIGINT or SIGHUP) sends each open liveness channel's departure
 * ({@code exit}) with its cause before the process goes, and aborts the channel's communicator when no thread is
 * closing it, so that NCCL's threads are stopped before the C runtime's exit handlers run (an NCCL proxy thread that
 * outlives them can crash the process). Installed once, with the first channel:
 * <ul>
 *   <li>a shutdown hook ({@code nccl4j-farewell});</li>
 *   <li>a default uncaught-exception handler that records the exception's class and message, tells the channels at
 *       once (the cause of a departure already announced by {@code close()}, as when the exception leaves a
 *       try-with-resources), then does what was done before: the previous default handler, or the JVM's own
 *       printing ({@code Exception in thread "main" ...});</li>
 *   <li>handlers of SIGTERM, SIGINT and SIGHUP (through {@code sun.misc.Signal}, when present) that record the
 *       signal's name and hand it on to the handler that was there (the JVM's, which starts the shutdown).</li>
 * </ul>
 * During start-up a rank whose join of rank 0's channel is still under way waits for it (at most
 * {@link Liveness#LEAVING_WAIT_MILLIS} ms) to say how it leaves, and rank 0 keeps its channel open as long for the
 * ranks that have not arrived yet, which then hear why it went instead of waiting for the init timeout.
 * A SIGKILL gives no chance: rank 0 sees the connection end and names the rank lost, with no departure.
 */
public final class Farewell {
    /**
     * The logger, got when first needed: loading it first initializes the logging backend, which in a cold JVM takes
     * a few hundred milliseconds that the hook must not wait for ({@link #startupBegins} installs it first of all).
     */
    private static Logger log() {
        return LoggerFactory.getLogger(Farewell.class);
    }
    /**
     * How long the hook waits for a communicator's lifecycle (a close or the watchdog's abort under way), for the
     * aborts, and then for every NCCL teardown under way in the process: the C runtime's exit handlers must not run
     * while NCCL is tearing a communicator down (its threads would use what they free).
     */
    public static final long ABORT_WAIT_MILLIS = 5000;
    private static final Set<Liveness> OPEN = ConcurrentHashMap.newKeySet();
    private static volatile boolean installed;
    private static volatile String uncaught;
    /** The program's main thread ended with an uncaught exception: the JVM ends with status 1. */
    private static volatile boolean mainThrew;
    private static volatile String signal;
    private static volatile boolean exiting;

    /**
     * NCCL's side of the exit, which the core above the control plane supplies ({@link #install(NcclUnderWay)}): the
     * NCCL calls the exit waits for, and the end of a process that the C runtime's exit would crash. Part of nccl4j's
     * internals, not of its API.
     */
    public interface NcclUnderWay {
        /**
         * Blocking NCCL initializations under way in this process.
         *
         * @return how many
         */
        int initsUnderWay();

        /**
         * NCCL teardown calls (abort, finalize, destroy) under way in this process.
         *
         * @return how many
         */
        int teardownsUnderWay();

        /**
         * Flushes what Java and NCCL have to say, then ends the process with {@code _exit(status)}.
         *
         * @param status the exit status
         */
        void exitNow(int status);

        /**
         * The exit has waited for what was under way: no NCCL teardown or initialization starts from now on (one that
         * a thread begins, e.g. a {@code close()} on the main thread, is skipped), since the C runtime's exit handlers
         * are about to run and libnccl would crash under a thread inside it.
         */
        void endCalls();
    }

    /** Before the core supplies its own: nothing of NCCL under way, and a halt. */
    private static final NcclUnderWay NONE = new NcclUnderWay() {
        @Override
        public int initsUnderWay() {
            return 0;
        }

        @Override
        public int teardownsUnderWay() {
            return 0;
        }

        @Override
        public void exitNow(int status) {
            Runtime.getRuntime().halt(status);
        }

        @Override
        public void endCalls() {
        }
    };
    private static volatile NcclUnderWay nccl = NONE;
    /** Start-ups under way whose channel is not registered yet ({@link #startupBegins}): the exit waits for them. */
    private static final java.util.concurrent.atomic.AtomicInteger STARTING =
            new java.util.concurrent.atomic.AtomicInteger();

    private Farewell() {
    }

    /**
     * Installs the hook and handlers, once, and tells {@code l}'s departure when the process ends, until it closes.
     *
     * @param l a channel
     */
    public static void register(Liveness l) {
        install();
        if (OPEN.add(l)) {
            l.whenClosed(() -> unregister(l));
        }
    }

    static void unregister(Liveness l) {
        OPEN.remove(l);
    }

    /**
     * Installs the hook and handlers, once, and has the exit wait for {@code calls}: the core's NCCL initializations
     * and teardowns (with the first communicator, or its first channel).
     *
     * @param calls what of NCCL is under way
     */
    public static void install(NcclUnderWay calls) {
        nccl = calls;
        install();
    }

    /**
     * A start-up begins ({@code fromEnvironment}): installs the hook and handlers now, so that a signal or an exit from
     * here on is told, and has the exit wait (at most {@link Liveness#LEAVING_WAIT_MILLIS} ms) for this start-up's
     * channel to be registered, or for {@link #startupEnds}, before it says how the process ended.
     *
     * @param calls what of NCCL is under way
     */
    public static void startupBegins(NcclUnderWay calls) {
        install(calls);   // first: when the process is already exiting, it throws, and nothing is counted
        STARTING.incrementAndGet();
    }

    /** The start-up begun by {@link #startupBegins} has registered its channel, or will have none. */
    public static void startupEnds() {
        STARTING.decrementAndGet();
    }

    /** Installs the hook and handlers, once (with the first channel). */
    static void install() {
        if (!installed) {
            install0();
        }
    }

    private static synchronized void install0() {
        if (installed) {
            return;
        }
        installed = true;
        Runtime.getRuntime().addShutdownHook(new Thread(Farewell::atExit, "nccl4j-farewell"));
        Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((t, e) -> {
            String cause = describe(e);
            uncaught = cause;
            if (t.getName().equals("main")) {
                mainThrew = true;
            }
            for (Liveness l : OPEN) {
                l.cause(cause);
            }
            if (previous != null) {
                previous.uncaughtException(t, e);
            } else {
                System.err.print("Exception in thread \"" + t.getName() + "\" ");
                e.printStackTrace(System.err);
            }
        });
        for (String name : new String[] {"TERM", "INT", "HUP"}) {
            watchSignal(name);
        }
    }

    /**
     * An exception as a departure's cause names it.
     *
     * @param e the exception
     * @return {@code IllegalStateException: data loader failed}: the class's simple name and the message
     */
    public static String describe(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    /** Records the signal's name, then hands it to the handler that was there; nothing when sun.misc is absent. */
    private static void watchSignal(String name) {
        try {
            Class<?> signalClass = Class.forName("sun.misc.Signal");
            Class<?> handlerClass = Class.forName("sun.misc.SignalHandler");
            Object sig = signalClass.getConstructor(String.class).newInstance(name);
            Method handle = signalClass.getMethod("handle", signalClass, handlerClass);
            Method handleOne = handlerClass.getMethod("handle", signalClass);
            Object[] previous = new Object[1];
            InvocationHandler ours = (proxy, m, args) -> {
                if (m.getName().equals("handle")) {
                    signal = "SIG" + name;
                    Object p = previous[0];
                    if (p != null && handlerClass.isInstance(p)) {
                        handleOne.invoke(p, args[0]);
                    }
                    return null;
                }
                return m.getName().equals("hashCode") ? System.identityHashCode(proxy)
                        : m.getName().equals("equals") ? proxy == args[0] : "nccl4j signal handler";
            };
            Object proxy = Proxy.newProxyInstance(Farewell.class.getClassLoader(), new Class<?>[] {handlerClass},
                    ours);
            previous[0] = handle.invoke(null, sig, proxy);
            if (isIgnoreOrDefault(previous[0], handlerClass)) {
                handle.invoke(null, sig, previous[0]);   // ignored or left to the OS (e.g. nohup): leave it so
            }
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            log().debug("nccl4j: SIG{} is not watched ({})", name, e.toString());
        }
    }

    private static boolean isIgnoreOrDefault(Object handler, Class<?> handlerClass)
            throws ReflectiveOperationException {
        Object ign = handlerClass.getField("SIG_IGN").get(null);
        Object dfl = handlerClass.getField("SIG_DFL").get(null);
        return handler == ign || handler == dfl;
    }

    /** The shutdown hook: the departures first (news travels while the rest is done), then the aborts. */
    private static void atExit() {
        exiting = true;
        long startups = System.nanoTime() + Liveness.LEAVING_WAIT_MILLIS * 1_000_000L;
        while (STARTING.get() > 0 && System.nanoTime() - startups < 0) {   // a channel on its way: wait for it
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
        }
        String cause = uncaught != null ? uncaught : signal != null ? signal : exitCaller();
        if (OPEN.isEmpty()) {
            endCalls(cause);
            return;
        }
        for (Liveness l : OPEN) {
            Attached c = l.owner();
            if (c == null && !l.departed()) {   // during start-up: no communicator yet; its phase says where
                l.awaitJoinedToLeave(Liveness.LEAVING_WAIT_MILLIS);   // still joining: joins to say so
                l.departDuringStartUp(Departures.Kind.EXIT, cause);
            } else if (c != null && !l.departed()) {
                // no operation is taken from now on, whatever the program's threads do while the hooks run: the
                // last collective told is the last one issued, so a peer waiting beyond it fails at once
                c.stopIssuing("the process is exiting (" + cause + ")");
                Ledger ledger = c.ledger();
                l.depart(Departures.Kind.EXIT, c.generation(), ledger.last(), ledger.describe(ledger.last()), cause);
                c.recordDeparture("exited with its communicator open after " + ledger.describe(ledger.last()) + " ("
                        + cause + ")");
            } else {
                l.exitAfterFailure(cause);   // a failed rank now leaves for good
                if (uncaught == null && !cause.equals("the program ended")) {
                    l.cause(cause);   // a departure announced by close(): how the process then ended
                }
            }
        }
        for (Liveness l : OPEN) {   // rank 0 during start-up: the ranks still to come hear why it went
            l.stayForLateRanks(Liveness.LEAVING_WAIT_MILLIS);
        }
        awaitInits(cause);
        awaitOwnOperations();
        int status = knownStatus();
        boolean known = status >= 0;
        Thread aborts = BoundedWait.run("nccl4j-farewell-abort", known ? KNOWN_STATUS_WAIT_MILLIS : ABORT_WAIT_MILLIS,
                () -> {
            for (Liveness l : OPEN) {
                Attached c = l.owner();
                if (c != null) {
                    c.abortAtExit(cause);
                }
            }
        });
        if (aborts.isAlive()) {
            if (known) {
                endNow(stillUnderWay("aborting the communicators at exit"), cause, status);
            }
            log().warn("nccl4j: aborting the communicators at exit took longer than {} ms; exiting without waiting",
                    ABORT_WAIT_MILLIS);
        }
        endCalls(cause);
        for (Liveness l : OPEN) {
            l.close();
        }
    }

    /**
     * No NCCL initialization or teardown starts from now on ({@link NcclUnderWay#endCalls}); then waits for those
     * under way, one that began just before included (each counts itself before it looks at the end).
     */
    private static void endCalls(String cause) {
        nccl.endCalls();
        awaitInits(cause);
        awaitTeardowns(cause);
    }

    /** How long the exit waits for the collectives its communicators have in flight before it aborts them. */
    static final long OPERATIONS_WAIT_MILLIS = 1000;

    /**
     * Waits (at most {@link #OPERATIONS_WAIT_MILLIS}) until the operations this process issued have completed, before
     * the aborts: an abort in the middle of a collective can let a peer's half of it complete with data that is not
     * the reduction (seen on 2 x H200 with NCCL 2.28.3: a peer's in-place all-reduce returned with the element of one
     * rank only), while a collective every rank issued completes within milliseconds when left to run.
     */
    private static void awaitOwnOperations() {
        long end = System.nanoTime() + OPERATIONS_WAIT_MILLIS * 1_000_000L;
        for (Liveness l : OPEN) {
            Attached c = l.owner();
            while (c != null && c.ownOperationsPending() && System.nanoTime() - end < 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
            }
        }
    }

    /** How long the exit waits for a blocking NCCL initialization under way to return. */
    static final long INIT_WAIT_MILLIS = 1000;

    /**
     * A thread is inside NCCL's blocking initialization, which cannot be abandoned: the departure told, waits (at most
     * {@link #INIT_WAIT_MILLIS}) for it to return (its peers, told, give up theirs, so it usually fails within a
     * second; one that made its communicator aborts it at once, seeing the exit); when it has not, ends the process
     * with {@code _exit}, since the C runtime's exit handlers would crash libnccl under that thread. The status is the
     * signal's (128 + its number) or 1.
     */
    private static void awaitInits(String cause) {
        long end = System.nanoTime() + INIT_WAIT_MILLIS * 1_000_000L;
        while (nccl.initsUnderWay() > 0) {
            if (System.nanoTime() - end >= 0) {
                endNow("NCCL's initialization was still under way " + INIT_WAIT_MILLIS + " ms after the exit began",
                        cause, signalStatus());
            }
            java.util.concurrent.locks.LockSupport.parkNanos(2_000_000L);
        }
    }

    /** The exit status a JVM ends with on the signal recorded (128 + its number), else 1. */
    static int signalStatus() {
        String s = signal;
        return "SIGTERM".equals(s) ? 143 : "SIGINT".equals(s) ? 130 : "SIGHUP".equals(s) ? 129 : 1;
    }

    /** @return whether the process is ending: nccl4j's shutdown hook has started */
    public static boolean exiting() {
        return exiting;
    }

    /**
     * How long the exit waits for NCCL's teardowns (the aborts at exit, an abort the watchdog or a start-up given up
     * began) when it knows the status the process ends with ({@link #knownStatus}); then it ends the process with
     * {@code _exit} and that status. NCCL's abort of a communicator whose peer is gone took 0.2-1.9 s on H200s (up to
     * 3.6 s on a loaded machine), time in which the peers already know and the process does nothing of its own; the
     * C runtime's exit handlers, which libnccl would crash in under an abort, do not run.
     */
    static final long KNOWN_STATUS_WAIT_MILLIS = 1000;

    /**
     * The status the process is about to end with, when nccl4j knows it: the signal's (128 + its number), or 1 when
     * the program's main thread ended with an uncaught exception and no thread is in {@code System.exit}; else -1.
     */
    static int knownStatus() {
        if (signal != null) {
            return signalStatus();
        }
        return mainThrew && exitCaller().equals("the program ended") ? 1 : -1;
    }

    /** {@code what} was still under way after {@link #KNOWN_STATUS_WAIT_MILLIS} at exit, in those words. */
    private static String stillUnderWay(String what) {
        return what + " was still under way after " + KNOWN_STATUS_WAIT_MILLIS + " ms at exit";
    }

    /**
     * Ends the process now with {@code _exit(status)}, saying {@code why} (what was still under way) and the exit's
     * cause: the C runtime's exit handlers would crash libnccl under the NCCL call still running.
     */
    private static void endNow(String why, String cause, int status) {
        log().warn("nccl4j: {} ({}): ending the process with status {} without the C runtime's exit handlers, which "
                + "libnccl would crash in", why, cause, status);
        nccl.exitNow(status);
    }

    /**
     * Waits until no NCCL teardown is under way in the process: at most {@link #KNOWN_STATUS_WAIT_MILLIS} when the
     * process's status is known (then it ends the process with it), else {@link #ABORT_WAIT_MILLIS}.
     */
    private static void awaitTeardowns(String cause) {
        long begin = System.nanoTime();
        long end = begin + ABORT_WAIT_MILLIS * 1_000_000L;
        long known = begin + KNOWN_STATUS_WAIT_MILLIS * 1_000_000L;
        while (nccl.teardownsUnderWay() > 0) {
            long now = System.nanoTime();
            int status = now - known >= 0 ? knownStatus() : -1;   // asked once a look: it may walk every thread
            if (status >= 0) {
                endNow(stillUnderWay("an NCCL teardown"), cause, status);
            }
            if (now - end >= 0) {
                log().warn("nccl4j: an NCCL teardown was still under way after {} ms at exit", ABORT_WAIT_MILLIS);
                return;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
        }
    }

    /**
     * {@code System.exit at Main.run(Main.java:42)} when a thread is in {@code System.exit} or {@code Runtime.exit},
     * else {@code the program ended}.
     */
    static String exitCaller() {
        for (java.util.Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            StackTraceElement[] frames = e.getValue();
            for (int i = 0; i < frames.length; i++) {
                StackTraceElement f = frames[i];
                if (f.getClassName().equals("java.lang.Runtime") && f.getMethodName().equals("exit")) {
                    for (int j = i + 1; j < frames.length; j++) {
                        if (!frames[j].getClassName().startsWith("java.lang.")) {
                            StackTraceElement c = frames[j];
                            return "System.exit at " + c.getClassName() + "." + c.getMethodName() + "("
                                    + c.getFileName() + ":" + c.getLineNumber() + ")";
                        }
                    }
                    return "System.exit";
                }
                if (f.getClassName().equals("java.lang.Runtime") && f.getMethodName().equals("halt")) {
                    return "Runtime.halt";
                }
            }
        }
        return "the program ended";
    }
}
