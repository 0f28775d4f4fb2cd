package org.nccl4j.tools.harness;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.JobLiveness;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;
import org.nccl4j.tools.cli.Programs;
import org.nccl4j.tools.cli.Tools;
import org.nccl4j.launch.LaunchInfo;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Every way a rank leaves a job, one per run, in the README's program shape, so that {@code scripts/departures.sh}
 * can time how soon every other rank knows. Each rank runs
 * {@code try (Communicator comm = Communicator.fromEnvironment(); Stream stream = ...; DeviceBuffer buf = ...)}
 * around a loop of steps (default 8); a step fills the buffer with rank + 1, all-reduces it in place, synchronizes
 * the stream, checks every element against the host's sum and sleeps 50 ms. At step S (default 3) rank R (default:
 * the last) does the scenario:
 *
 * <pre>
 * kill              SIGKILL to itself (kill -KILL pid)
 * stop              SIGSTOP to itself (frozen: its sockets stay open); the launcher or the script kills it
 * throw-inside      throws IllegalStateException("data loader failed on rank R") inside the try-with-resources
 * throw-outside     the same exception in a variant of the program whose communicator no try surrounds: it leaves
 *                   main without a close (every rank runs that variant)
 * exit              System.exit(3) mid-loop
 * abort-live        comm.abort(), says that it lives on, does CPU work for 30 s (--live-seconds) and exits 0
 * skip              skips step S (its all-reduce), completes the other steps and closes normally
 * count             all-reduces half the count at step S (the raw overload, explicit count)
 * type              all-reduces the same bytes as FLOAT16 with twice the count at step S
 * sigterm-rank      does not issue step S's all-reduce: SIGTERM to itself while the others are inside it
 * sigterm-launcher  rank 0 prints the EVENT line at step S; every rank sleeps 200 ms inside the step after issuing
 *                   its all-reduce, so that the SIGTERM that the script then sends the launcher finds them there
 * cpu-stuck         spins on the CPU for 60 s (--stuck-seconds) at step S without calling NCCL (run it with
 *                   NCCL4J_TIMEOUT=20s)
 * startup-rendezvous-kill, startup-rendezvous-term
 *                   rank R ends itself (SIGKILL, SIGTERM) while fromEnvironment exchanges the unique id: its main
 *                   thread in org.nccl4j.launch.Rendezvous.fetch (serve on rank 0), once this rank has joined rank
 *                   0's liveness channel (its thread nccl4j-liveness-connect-R has ended: the phase model puts the
 *                   join before the rendezvous)
 * startup-idtaken-kill, startup-idtaken-term
 *                   the same once the rendezvous has returned and before NCCL is called: the first look that finds
 *                   the main thread out of the rendezvous and not yet in ncclCommInitRank, in practice in
 *                   org.nccl4j.control.Liveness.awaitArrivals or in Bootstrap.create's org.nccl4j.Cuda.setDevice (the
 *                   CUDA context's creation, the longest step there); the rank then never reaches NCCL's bootstrap
 * startup-init-kill, startup-init-term, startup-init-exit
 *                   the same inside NCCL's initialization (org.nccl4j.jni.NcclNative.ncclCommInitRank or
 *                   ncclCommInitRankConfig); exit: System.exit(3) from a thread of its own
 * close-thread      at step S a second thread calls comm.close() while the main thread goes on issuing all-reduces;
 *                   the main thread's IllegalStateException (the communicator is being closed, or is closed) is the
 *                   expected end: its RESULT line names it and the rank exits 0
 * abort-thread      the same with comm.abort()
 * fuzz              no departure: prints READY after step 1 and CLOSING before the close, for departures.sh's FUZZ
 *                   mode, which sends SIGTERM to a random rank at a random moment
 * startup-fuzz      fuzz with the PHASE lines, for departures.sh's STARTUP_FUZZ mode, which sends SIGTERM to a random
 *                   rank at a random moment after its process started, start-up included; with --join-first the rank
 *                   calls JobLiveness.join() before anything else (the JOINFIRST line)
 * none              no departure (a control run)
 * </pre>
 *
 * <p>The start-up scenarios are placed by a daemon thread ({@link Watcher}) that reads the main thread's stack every
 * millisecond ({@link #WATCH_NANOS}) and, once it matches, prints the EVENT line and sends the signal with
 * {@code kill} from a shell started before {@code fromEnvironment} and waiting for a newline ({@link SelfSignal}: a
 * millisecond or two from the look to the signal, where starting {@code kill} then would take several). The main
 * thread goes on meanwhile, so the phase the signal finds may be the next one: the PHASE lines that follow the EVENT
 * line, and the phase that the survivors' message names, say where it landed. A scenario whose place the watcher
 * never saw (the main thread passed it between two looks) says {@code rank R: SCENARIO was not placed: ...} and runs
 * on as {@code none}, without an EVENT line.
 *
 * <p>Every line the script reads is written to stdout in one write (mpirun --tag-output splits a line written in
 * pieces): {@code START rank=R t=<epoch ms> pid=P size=N device=D <scenario>} once the communicator is made,
 * {@code EVENT rank=R t=<epoch ms> <scenario>[ (details)]} at the moment of the event (for a signal, just before it
 * is sent), {@code READY}/{@code CLOSING} (fuzz, startup-fuzz), {@code THROWN rank=R t=<epoch ms> <exception>} (an
 * exception left the loop of steps: when the program got it, before the close), {@code PHASE rank=R t=<epoch ms>
 * <phase>} (the start-up
 * scenarios and startup-fuzz, on every rank, each time the main thread moves on: launched, joining, rendezvous,
 * id-taken, set-device, nccl-init, ready, in-loop, closing, closed; see {@link Phase}), {@code JOINED rank=R
 * t=<epoch ms>} (the same ranks, once this rank has joined rank 0's liveness channel: see {@link Watcher#watchJoin}),
 * and at the end
 * {@code RESULT rank=R t=<epoch ms> ok} or {@code RESULT rank=R t=<epoch ms> <ExceptionClass>: <message on one line>}.
 * The exception is then rethrown: it leaves main, Java prints it and exits 1 (but the expected one of close-thread
 * and abort-thread). Exit status: 0 ok, 1 an exception left main, 2 a refused command line; a rank that signals
 * itself ends as the signal ends it (137 for SIGKILL, 143 for SIGTERM), exit with 3; a rank that nccl4j halts
 * because a peer was lost while its blocking NCCL initialization could not be abandoned ends with 70, without a
 * RESULT line (nccl4j's ERROR line says why).
 */
public final class DepartureScenarios {
    /** How long rank 0 and the others sleep inside step S of sigterm-launcher, after issuing the all-reduce. */
    static final long INSIDE_MILLIS = 200;
    /** How often the {@link Watcher} reads the main thread's stack. */
    static final long WATCH_NANOS = 1_000_000L;
    /** The name of close-thread's and abort-thread's closing thread. */
    static final String CLOSER_THREAD = "departures-closer";
    /** How long main waits for close-thread's (abort-thread's) closing thread before it says it has not returned. */
    static final long CLOSER_JOIN_MILLIS = 60_000;

    /** The watcher of this process's main thread (the start-up scenarios, startup-fuzz), or null. */
    static volatile Watcher watcher;
    /** The exception the scenario expects to leave main (close-thread, abort-thread): reported, then exit 0. */
    static volatile Throwable expected;
    /** The closing thread of close-thread and abort-thread, once started. */
    static volatile Closer closer;

    private DepartureScenarios() {
    }

    /**
     * Runs one scenario as one rank; see the class documentation.
     *
     * @param args the scenario and its options ({@code --help} lists them)
     * @throws Exception what the scenario threw, after its RESULT line: it leaves main on purpose
     */
    public static void main(String[] args) throws Exception {
        if (java.util.Arrays.asList(args).contains(JOIN_FIRST)) {   // JobLiveness's pattern: before anything else
            boolean joined = JobLiveness.join();
            line("JOINFIRST t=" + System.currentTimeMillis() + " " + joined);
        }
        Options o = Tools.parseOrExit(new Options(), args);
        int me = launchRank();
        int eventRank;
        try {
            eventRank = o.eventRank(LaunchInfo.detect().worldSize());
        } catch (Tools.UsageException e) {
            System.err.println("DepartureScenarios: " + e.getMessage());
            System.exit(Tools.USAGE);
            return;
        }
        if (o.scenario.watched()) {
            Scenario place = me == eventRank && o.scenario.at != null ? o.scenario : null;
            try {
                watcher = Watcher.start(Thread.currentThread(), me, place);
            } catch (IOException e) {
                System.err.println("DepartureScenarios: " + o.scenario.label + " cannot start /bin/sh to send its "
                        + "signal (" + e + "): run it where /bin/sh and kill are");
                System.exit(Tools.USAGE);
                return;
            }
        }
        try {
            if (o.scenario == Scenario.THROW_OUTSIDE) {
                outside(o, eventRank);
            } else {
                inside(o, eventRank);
            }
        } catch (Exception | Error e) {
            reportCloser(me);
            line("RESULT rank=" + me + " t=" + System.currentTimeMillis() + " " + describe(e));
            if (e == expected) {
                return;   // close-thread, abort-thread: the main thread's end that the scenario expects
            }
            throw e;
        }
        reportCloser(me);
        line("RESULT rank=" + me + " t=" + System.currentTimeMillis() + " ok");
    }

    /** close-thread, abort-thread: waits for the closing thread and says how its call ended. */
    private static void reportCloser(int me) throws InterruptedException {
        Closer c = closer;
        if (c != null) {
            line(c.report(me, CLOSER_JOIN_MILLIS));
        }
    }

    /** This process's launch rank, or -1 when the launch variables cannot be read (then fromEnvironment says why). */
    private static int launchRank() {
        try {
            return LaunchInfo.detect().rank();
        } catch (RuntimeException e) {
            return -1;
        }
    }

    /** The README's shape: the communicator, stream and buffer in one try-with-resources. */
    static void inside(Options o, int eventRank) throws IOException, InterruptedException {
        try (Communicator comm = fromEnvironment(o);
             Stream stream = Stream.create(comm.device());
             DeviceBuffer buf = DeviceBuffer.allocate(comm.device(), o.elements, DataType.FLOAT32)) {
            steps(o, eventRank, comm, stream, buf);
        }
        stage(Phase.CLOSED);
    }

    /**
     * {@link Communicator#fromEnvironment()}, then, for a start-up scenario whose place the watcher never saw, the line
     * that says so (the run goes on without a departure).
     */
    private static Communicator fromEnvironment(Options o) {
        Communicator comm = Communicator.fromEnvironment();
        stage(Phase.READY);
        Watcher w = watcher;
        String missed = w == null ? null : w.passed();
        if (missed != null) {
            line("rank " + comm.rank() + ": " + o.scenario.label + " was not placed: " + missed + "; the run goes on "
                    + "without a departure");
        }
        return comm;
    }

    /** Tells the watcher, if any, where the main thread is outside nccl4j's frames. */
    static void stage(Phase p) {
        Watcher w = watcher;
        if (w != null) {
            w.stage = p;
        }
    }

    /** throw-outside's variant: no try surrounds the communicator; it is closed only when the loop ends normally. */
    static void outside(Options o, int eventRank) throws IOException, InterruptedException {
        Communicator comm = Communicator.fromEnvironment();
        Stream stream = Stream.create(comm.device());
        DeviceBuffer buf = DeviceBuffer.allocate(comm.device(), o.elements, DataType.FLOAT32);
        steps(o, eventRank, comm, stream, buf);
        buf.close();
        stream.close();
        comm.close();
    }

    /** The loop of steps, with the scenario at step {@code o.step} on rank {@code eventRank}. */
    static void steps(Options o, int eventRank, Communicator comm, Stream stream, DeviceBuffer buf)
            throws IOException, InterruptedException {
        int me = comm.rank();
        int n = comm.size();
        float[] host = new float[Math.toIntExact(o.elements)];
        float[] back = new float[host.length];
        String scenario = o.scenario.label;
        line("START rank=" + me + " t=" + System.currentTimeMillis() + " pid=" + ProcessHandle.current().pid()
                + " size=" + n + " device=" + comm.device() + " " + scenario);
        stage(Phase.IN_LOOP);
        boolean fuzz = o.scenario == Scenario.FUZZ || o.scenario == Scenario.STARTUP_FUZZ;
        Closer started = null;
        try {
            started = loop(o, eventRank, comm, stream, buf, host, back, sum(n), fuzz);
        } catch (RuntimeException e) {
            // when the program got it: its RESULT line follows the try-with-resources' close, which may wait longer
            line("THROWN rank=" + me + " t=" + System.currentTimeMillis() + " " + e.getClass().getSimpleName());
            if (e instanceof IllegalStateException && closer != null && closer.comm == comm) {
                expected = e;   // the closing thread's call reached the main thread: the end the scenario expects
            }
            throw e;
        }
        if (fuzz) {
            line("CLOSING rank=" + me + " t=" + System.currentTimeMillis());
        }
        stage(Phase.CLOSING);
        if (started != null) {
            line("rank " + me + ": its main thread issued every step; " + started.call + " on thread \"" + CLOSER_THREAD
                    + "\" never stopped it");
        }
    }

    /** The sum every element must have after the all-reduce in a world of {@code n}. */
    private static float sum(int n) {
        return n * (n + 1) / 2f;
    }

    /** The steps themselves; returns the closing thread of close-thread and abort-thread, if it started. */
    private static Closer loop(Options o, int eventRank, Communicator comm, Stream stream, DeviceBuffer buf,
            float[] host, float[] back, float sum, boolean fuzz) throws IOException, InterruptedException {
        int me = comm.rank();
        int n = comm.size();
        String scenario = o.scenario.label;
        Closer started = null;
        for (int step = 1; step <= o.steps; step++) {
            boolean mine = me == eventRank && step == o.step;
            long count = o.elements;
            DataType type = DataType.FLOAT32;
            if (mine) {
                switch (o.scenario) {
                    case KILL:
                        event(me, scenario);
                        signalSelf("KILL");
                        Thread.sleep(60_000);
                        throw new IllegalStateException("kill -KILL of this process did not end it");
                    case STOP:
                        event(me, scenario);
                        signalSelf("STOP");
                        Thread.sleep(600_000);   // stopped: the launcher or the script kills it
                        throw new IllegalStateException("kill -STOP of this process did not stop it");
                    case THROW_INSIDE:
                    case THROW_OUTSIDE:
                        event(me, scenario);
                        throw new IllegalStateException("data loader failed on rank " + me);
                    case EXIT:
                        event(me, scenario);
                        System.exit(3);
                        break;
                    case ABORT_LIVE:
                        event(me, scenario);
                        comm.abort();
                        line("rank " + me + ": aborted its communicator and lives on: CPU work for " + o.liveSeconds
                                + " s, then exit 0");
                        spin(o.liveSeconds);
                        return started;
                    case SKIP:
                        event(me, scenario);
                        continue;
                    case COUNT:
                        count = o.elements / 2;
                        break;
                    case TYPE:
                        count = 2 * o.elements;
                        type = DataType.FLOAT16;
                        break;
                    case SIGTERM_RANK:
                        event(me, scenario);
                        signalSelf("TERM");
                        Thread.sleep(60_000);   // the JVM runs its shutdown hooks and halts meanwhile
                        throw new IllegalStateException("kill -TERM of this process did not end it");
                    case CPU_STUCK:
                        event(me, scenario);
                        spin(o.stuckSeconds);
                        break;
                    case CLOSE_THREAD:
                    case ABORT_THREAD:
                        started = Closer.start(me, comm, o.scenario == Scenario.ABORT_THREAD);
                        closer = started;
                        break;
                    default:
                        break;
                }
            }
            Arrays.fill(host, me + 1);
            buf.copyFrom(host);
            boolean terminate = o.scenario == Scenario.SIGTERM_LAUNCHER && step == o.step;
            if (terminate && me == 0) {
                event(me, scenario);
            }
            if (mine && (o.scenario == Scenario.COUNT || o.scenario == Scenario.TYPE)) {
                event(me, scenario + " (" + count + " x " + type + ")");
            }
            comm.allReduce(buf.address(), buf.address(), count, type, ReduceOp.SUM, stream);
            if (terminate) {
                Thread.sleep(INSIDE_MILLIS);
            }
            stream.synchronize();
            buf.copyTo(back);
            check(back, sum, n, step);
            if (fuzz && step == 1) {
                line("READY rank=" + me + " t=" + System.currentTimeMillis());
            }
            Thread.sleep(o.sleepMs);
        }
        return started;
    }

    /** Every element must be the sum of 1..n; the first that is not is thrown. */
    static void check(float[] got, float expected, int n, int step) {
        for (int i = 0; i < got.length; i++) {
            if (got[i] != expected) {
                throw new IllegalStateException("step " + step + ": element " + i + " is " + got[i] + ", expected "
                        + expected + " (the sum of 1.." + n + ")");
            }
        }
    }

    private static void event(int me, String what) {
        line("EVENT rank=" + me + " t=" + System.currentTimeMillis() + " " + what);
    }

    /** The RESULT text of a throwable: its class's simple name and its message on one line. */
    static String describe(Throwable t) {
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m.strip().replaceAll("\\s*[\\r\\n]+\\s*", " "));
    }

    /** CPU work, no NCCL, for {@code seconds}. */
    private static void spin(int seconds) {
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        double x = 1;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++) {
                x = Math.sqrt(x + i);
            }
        }
        if (x < 0) {
            System.out.println(x);   // never: keeps the loop from being optimized away
        }
    }

    /** Sends {@code signal} to this process with {@code kill -SIGNAL pid} and waits for kill to return. */
    private static void signalSelf(String signal) throws IOException, InterruptedException {
        System.out.flush();
        System.err.flush();
        new ProcessBuilder("kill", "-" + signal, Long.toString(ProcessHandle.current().pid())).inheritIO().start()
                .waitFor();
    }

    private static final FileOutputStream STDOUT = new FileOutputStream(FileDescriptor.out);
    /** Where {@link #line} writes: stdout, in one write per line ({@link #write}); the CPU tests collect the lines. */
    static volatile Consumer<String> sink = DepartureScenarios::write;

    /** Writes {@code text} as one line, to {@link #sink}. */
    static void line(String text) {
        sink.accept(text);
    }

    /** Writes {@code text} and a newline to stdout in one write, after whatever System.out holds. */
    private static synchronized void write(String text) {
        System.out.flush();
        try {
            STDOUT.write((text + "\n").getBytes(StandardCharsets.UTF_8));
            STDOUT.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Where a rank's main thread is, as the {@link Watcher} reads it from its stack and the marks of the program
     * ({@link #stage}): the names of the PHASE lines. The start-up phases follow nccl4j's own ({@code RankPhase}) as
     * far as the main thread's frames tell them apart.
     */
    enum Phase {
        /** Before {@code fromEnvironment} (the JVM's start, before the first PHASE line, is this phase too). */
        LAUNCHED("launched"),
        /** In {@code fromEnvironment} before the rendezvous: the liveness channel, loading NCCL. */
        JOINING("joining"),
        /** In {@code org.nccl4j.launch.Rendezvous.exchange} (fetch, serve): exchanging the unique id. */
        RENDEZVOUS("rendezvous"),
        /** The rendezvous returned: in {@code Liveness.awaitArrivals}, or between the rendezvous and NCCL. */
        ID_TAKEN("id-taken"),
        /** In {@code Bootstrap.create} before NCCL is called: {@code cudaSetDevice} (the CUDA context), checks. */
        SET_DEVICE("set-device"),
        /** In {@code ncclCommInitRank} or {@code ncclCommInitRankConfig}, and until fromEnvironment returns. */
        NCCL_INIT("nccl-init"),
        /** The communicator is made: the stream and the buffer. */
        READY("ready"),
        /** In the loop of steps. */
        IN_LOOP("in-loop"),
        /** After the loop, or in {@code Communicator.close} or {@code abort}. */
        CLOSING("closing"),
        /** The try-with-resources has closed everything. */
        CLOSED("closed");

        static final String NCCL_NATIVE = "org.nccl4j.jni.NcclNative";
        static final String BOOTSTRAP = "org.nccl4j.Bootstrap";
        static final String LIVENESS = "org.nccl4j.control.Liveness";
        static final String RENDEZVOUS_CLASS = "org.nccl4j.launch.Rendezvous";
        static final String COMMUNICATOR = "org.nccl4j.Communicator";
        static final String STARTUP_GUARD = "org.nccl4j.StartupGuard";

        final String label;

        Phase(String label) {
            this.label = label;
        }

        /**
         * The phase after {@code previous} that {@code stack} (the main thread's, top first) shows, with the program's
         * mark {@code stage}. Phases never go back: the later of what the stack shows and {@code previous} wins. In
         * {@code fromEnvironment}, a stack that shows nothing of the above is {@link #JOINING} before the rendezvous's
         * exchange and {@link #ID_TAKEN} right after it; one in {@code StartupGuard} (a failed step waiting for the
         * news that explains it) keeps {@code previous}.
         */
        static Phase next(StackTraceElement[] stack, Phase previous, Phase stage) {
            if (has(stack, STARTUP_GUARD, "explain", "watch", "lost")) {
                return previous;   // a failed step waiting for the news that explains it, or the guard's start
            }
            Phase p = shown(stack);
            if (p == null && starting(stack)) {
                p = previous == RENDEZVOUS ? ID_TAKEN : JOINING;
            }
            if (p == null || p.compareTo(stage) < 0) {
                p = stage;
            }
            return p.compareTo(previous) > 0 ? p : previous;
        }

        /** The phase the topmost frame of nccl4j that tells one shows, or null. */
        static Phase shown(StackTraceElement[] stack) {
            for (StackTraceElement f : stack) {
                String c = f.getClassName();
                String m = f.getMethodName();
                if (c.equals(NCCL_NATIVE) && (m.equals("ncclCommInitRank") || m.equals("ncclCommInitRankConfig"))) {
                    return NCCL_INIT;
                }
                if (c.equals(BOOTSTRAP) && m.equals("create")) {
                    return SET_DEVICE;
                }
                if (c.equals(LIVENESS) && m.equals("awaitArrivals")) {
                    return ID_TAKEN;
                }
                if (c.equals(RENDEZVOUS_CLASS) && (m.equals("exchange") || m.equals("awaitArrivals"))) {
                    return RENDEZVOUS;   // the exchange itself: not Rendezvous.forLaunch, which only builds it
                }
                if (c.equals(COMMUNICATOR) && (m.equals("close") || m.equals("abort"))) {
                    return CLOSING;
                }
            }
            return null;
        }

        /** Whether {@code stack} is inside {@code fromEnvironment}. */
        static boolean starting(StackTraceElement[] stack) {
            for (StackTraceElement f : stack) {
                if (f.getMethodName().equals("fromEnvironment")
                        && (f.getClassName().equals(COMMUNICATOR) || f.getClassName().equals(BOOTSTRAP))) {
                    return true;
                }
            }
            return false;
        }

        /** Whether {@code stack} has a frame of class {@code cls} in one of {@code methods}. */
        static boolean has(StackTraceElement[] stack, String cls, String... methods) {
            for (StackTraceElement f : stack) {
                if (f.getClassName().equals(cls) && Arrays.asList(methods).contains(f.getMethodName())) {
                    return true;
                }
            }
            return false;
        }

        /** The topmost frame of nccl4j (not of this harness) as {@code Class.method}; the top frame if none is. */
        static String top(StackTraceElement[] stack) {
            for (StackTraceElement f : stack) {
                String c = f.getClassName();
                if (c.startsWith("org.nccl4j.") && !c.startsWith("org.nccl4j.tools.")) {
                    return c + "." + f.getMethodName();
                }
            }
            return stack.length == 0 ? "an empty stack" : stack[0].getClassName() + "." + stack[0].getMethodName();
        }
    }

    /**
     * The daemon thread of the start-up scenarios and startup-fuzz: reads the main thread's stack every
     * {@link #WATCH_NANOS}, prints a PHASE line each time the {@link Phase} changes and, on the rank that leaves,
     * places the departure: once the stack matches the scenario's place ({@link #placed}), the EVENT line, then the
     * signal ({@link SelfSignal}) or {@code System.exit(3)} on a thread of its own. It goes on with the PHASE lines
     * after the EVENT, until the process ends.
     */
    static final class Watcher {
        private final Thread main;
        private final int rank;
        private final Scenario place;
        private final Runnable depart;
        private final SelfSignal signal;
        private final Thread thread;
        /** The program's mark, outside nccl4j's frames ({@link DepartureScenarios#stage}). */
        volatile Phase stage = Phase.LAUNCHED;
        private volatile Phase phase = Phase.LAUNCHED;
        private volatile boolean fired;
        private volatile String missed;
        /** The rendezvous was seen while this rank had not joined the liveness channel yet. */
        private volatile boolean sawUnjoined;
        /** The JOINED line is out. */
        private volatile boolean saidJoined;
        /** The thread that connects to rank 0's liveness channel was seen running. */
        private boolean joinBegun;

        /**
         * A watcher of {@code main} as {@code rank}, not started ({@link #begin}); {@code place}: the scenario to place
         * (null: PHASE and JOINED lines only), {@code depart}: how it leaves, {@code signal}: its armed shell, if any.
         */
        Watcher(Thread main, int rank, Scenario place, Runnable depart, SelfSignal signal) {
            this.main = main;
            this.rank = rank;
            this.place = place;
            this.depart = depart;
            this.signal = signal;
            this.thread = new Thread(this::run, "departures-watcher");
            thread.setDaemon(true);
        }

        /**
         * Starts watching {@code main}; on the rank that leaves ({@code place} not null) the shell that will send
         * the signal is started first.
         *
         * @throws IOException when /bin/sh cannot be started
         */
        static Watcher start(Thread main, int rank, Scenario place) throws IOException {
            SelfSignal s = place == null || place.way.equals("EXIT") ? null
                    : SelfSignal.arm(place.way, ProcessHandle.current().pid());
            Runnable depart = place == null ? null : s != null ? s::fire : () -> {
                Thread t = new Thread(() -> System.exit(3), "departures-exit");
                t.start();
            };
            return new Watcher(main, rank, place, depart, s).begin();
        }

        /** Starts the thread; returns this. */
        Watcher begin() {
            thread.start();
            return this;
        }

        private void run() {
            line("PHASE rank=" + rank + " t=" + System.currentTimeMillis() + " " + phase.label);
            while (main.isAlive()) {
                if (phase.compareTo(Phase.READY) < 0) {
                    watchJoin();
                }
                look(main.getStackTrace());
                LockSupport.parkNanos(WATCH_NANOS);
            }
        }

        /**
         * Prints {@code JOINED rank=R t=<epoch ms>} once this rank has joined rank 0's liveness channel (from then on
         * its loss is known to every rank that has joined too): its thread {@code nccl4j-liveness-connect-R} has
         * ended, and either its ping thread is there (ranks but 0) or the connecting thread was seen before.
         */
        void watchJoin() {
            if (saidJoined) {
                return;
            }
            int s = joinState(rank);
            if (s == JOIN_UNDER_WAY) {
                joinBegun = true;
            } else if (s == JOIN_DONE || joinBegun) {
                saidJoined = true;
                line("JOINED rank=" + rank + " t=" + System.currentTimeMillis());
            }
        }

        /** {@link #joinState}: no thread of the join is there (not begun; or rank 0's, done before it was seen). */
        static final int JOIN_NONE = 0;
        /** {@link #joinState}: the connecting thread runs. */
        static final int JOIN_UNDER_WAY = 1;
        /** {@link #joinState}: the connecting thread has ended and the ping thread runs. */
        static final int JOIN_DONE = 2;

        /** Where {@code rank}'s join of rank 0's liveness channel is, by the threads of this JVM. */
        static int joinState(int rank) {
            boolean connecting = false;
            boolean pinging = false;
            for (Thread t : threads()) {
                if (t.isAlive() && t.getName().equals("nccl4j-liveness-connect-" + rank)) {
                    connecting = true;
                } else if (t.isAlive() && t.getName().equals("nccl4j-liveness-ping-" + rank)) {
                    pinging = true;
                }
            }
            return connecting ? JOIN_UNDER_WAY : pinging ? JOIN_DONE : JOIN_NONE;
        }

        /** The live threads of this JVM. */
        private static List<Thread> threads() {
            ThreadGroup g = Thread.currentThread().getThreadGroup();
            while (g.getParent() != null) {
                g = g.getParent();
            }
            Thread[] all = new Thread[g.activeCount() + 16];
            int n = g.enumerate(all, true);
            return Arrays.asList(all).subList(0, n);
        }

        /** One look at the main thread's stack. */
        synchronized void look(StackTraceElement[] stack) {
            Phase now = Phase.next(stack, phase, stage);
            if (now != phase) {
                phase = now;
                line("PHASE rank=" + rank + " t=" + System.currentTimeMillis() + " " + now.label);
            }
            if (place == null || fired || missed != null) {
                return;
            }
            boolean joined = place.at != Phase.RENDEZVOUS || joined(rank);
            if (placed(place, now, stack, joined)) {
                fired = true;
                event(rank, place.label + " (main thread at " + at(place, stack) + "; liveness join "
                        + (joined(rank) ? "done" : "still under way") + ")");
                try {
                    depart.run();
                } catch (RuntimeException e) {
                    line("rank " + rank + ": " + place.label + " could not leave: " + describe(e));
                }
            } else if (now.compareTo(place.until()) > 0) {
                miss();
            } else if (place.at == Phase.RENDEZVOUS && !joined && now == Phase.RENDEZVOUS) {
                sawUnjoined = true;
            }
        }

        /**
         * Where the main thread was placed: the frame of the place ({@code Rendezvous.fetch} or {@code serve},
         * {@code NcclNative.ncclCommInitRank} or {@code ncclCommInitRankConfig}), or, for id-taken, nccl4j's
         * topmost frame.
         */
        static String at(Scenario scenario, StackTraceElement[] stack) {
            String cls = scenario.at == Phase.RENDEZVOUS ? Phase.RENDEZVOUS_CLASS
                    : scenario.at == Phase.NCCL_INIT ? Phase.NCCL_NATIVE : null;
            for (StackTraceElement f : stack) {
                if (f.getClassName().equals(cls) && PLACES.contains(f.getMethodName())) {
                    return cls + "." + f.getMethodName();
                }
            }
            return Phase.top(stack);
        }

        /** The methods of the places (their classes: {@link #at}). */
        private static final List<String> PLACES = List.of("fetch", "serve", "ncclCommInitRank",
                "ncclCommInitRankConfig");

        /** The departure will not be placed: says why, and ends the shell that would have sent the signal. */
        private void miss() {
            missed = place.at == Phase.RENDEZVOUS && sawUnjoined
                    ? "the main thread was in the rendezvous only while this rank had not joined rank 0's liveness"
                            + " channel yet"
                    : "the main thread was never seen " + where(place.at) + " (its stack read every "
                            + WATCH_NANOS / 1_000_000 + " ms)";
            if (signal != null) {
                signal.disarm();
            }
        }

        /** Why the departure was not placed, once the main thread is past its place without it; else null. */
        String notPlaced() {
            return fired ? null : missed;
        }

        /**
         * The main thread is past every place (fromEnvironment returned): why the departure was not placed, or null
         * when it was (or there is none). From here on the watcher places nothing.
         */
        synchronized String passed() {
            if (place == null || fired) {
                return null;
            }
            if (missed == null) {
                miss();
            }
            return missed;
        }

        /** Whether the departure was placed (its EVENT printed, its signal or exit under way). */
        boolean fired() {
            return fired;
        }

        /** The phase the last look found. */
        Phase phase() {
            return phase;
        }

        private static String where(Phase at) {
            switch (at) {
                case RENDEZVOUS:
                    return "in Rendezvous.fetch or serve";
                case ID_TAKEN:
                    return "between the rendezvous and NCCL (Liveness.awaitArrivals, Cuda.setDevice)";
                default:
                    return "in NcclNative.ncclCommInitRank or ncclCommInitRankConfig";
            }
        }

        /**
         * Whether {@code scenario}'s rank leaves now: the main thread, in phase {@code now} with {@code stack}, is at
         * its place (see the class documentation); {@code joined}: this rank has joined rank 0's liveness channel.
         */
        static boolean placed(Scenario scenario, Phase now, StackTraceElement[] stack, boolean joined) {
            switch (scenario.at) {
                case RENDEZVOUS:
                    return joined && now == Phase.RENDEZVOUS
                            && Phase.has(stack, Phase.RENDEZVOUS_CLASS, "fetch", "serve");
                case ID_TAKEN:
                    return now == Phase.ID_TAKEN || now == Phase.SET_DEVICE;
                case NCCL_INIT:
                    return Phase.has(stack, Phase.NCCL_NATIVE, "ncclCommInitRank", "ncclCommInitRankConfig");
                default:
                    return false;
            }
        }

        /**
         * Whether this rank has joined rank 0's liveness channel: its thread {@code nccl4j-liveness-connect-RANK}
         * (started before the rendezvous) has ended.
         */
        static boolean joined(int rank) {
            return joinState(rank) != JOIN_UNDER_WAY;
        }
    }

    /**
     * A signal to a process, ready to go: a shell started ahead ({@code /bin/sh -c 'read -r go && kill -SIG PID'})
     * that sends it with its {@code kill} once it reads a line, a millisecond or two after {@link #fire}, where
     * starting {@code kill} then would take several. Closing its input ({@link #disarm}, or this process's end)
     * ends the shell without the signal.
     */
    static final class SelfSignal {
        private final Process shell;
        private final OutputStream go;
        private final String signal;

        private SelfSignal(Process shell, String signal) {
            this.shell = shell;
            this.go = shell.getOutputStream();
            this.signal = signal;
        }

        /**
         * Starts the shell that sends {@code signal} ({@code TERM}, {@code KILL}) to {@code pid}.
         *
         * @throws IOException when /bin/sh cannot be started
         */
        static SelfSignal arm(String signal, long pid) throws IOException {
            if (!signal.matches("[A-Z]+")) {
                throw new IllegalArgumentException("signal " + signal + " is not a signal name such as TERM or KILL");
            }
            Process p = new ProcessBuilder("/bin/sh", "-c", "read -r go && kill -" + signal + " " + pid)
                    .redirectOutput(ProcessBuilder.Redirect.INHERIT).redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
            return new SelfSignal(p, signal);
        }

        /** Sends the signal (the shell's kill does, a moment later). */
        void fire() {
            System.out.flush();
            System.err.flush();
            try {
                go.write('\n');
                go.flush();
            } catch (IOException e) {
                throw new UncheckedIOException("the shell that sends SIG" + signal + " is gone", e);
            }
        }

        /** Ends the shell without the signal. */
        void disarm() {
            try {
                go.close();
            } catch (IOException e) {
                shell.destroy();
            }
        }

        /** The shell's process, for tests. */
        Process shell() {
            return shell;
        }
    }

    /**
     * close-thread's and abort-thread's second thread: the EVENT line, then {@code close()} or {@code abort()} of the
     * communicator that the main thread goes on issuing all-reduces on; {@link #report} says how the call ended.
     */
    static final class Closer {
        final Communicator comm;
        final String call;
        private final Thread thread;
        private volatile long millis = -1;
        private volatile Throwable failure;

        private Closer(Communicator comm, String call, int me, String label, boolean abort) {
            this.comm = comm;
            this.call = call;
            String issuer = Thread.currentThread().getName();
            this.thread = new Thread(() -> {
                event(me, label + " (" + call + " on thread \"" + CLOSER_THREAD + "\", while thread \"" + issuer
                        + "\" issues all-reduces)");
                long t0 = System.nanoTime();
                try {
                    if (abort) {
                        comm.abort();
                    } else {
                        comm.close();
                    }
                } catch (RuntimeException | Error e) {
                    failure = e;
                }
                millis = (System.nanoTime() - t0) / 1_000_000;
            }, CLOSER_THREAD);
            thread.setDaemon(true);
        }

        /** Starts the thread that closes ({@code abort}: aborts) {@code comm}. */
        static Closer start(int me, Communicator comm, boolean abort) {
            Closer c = new Closer(comm, abort ? "abort()" : "close()", me,
                    (abort ? Scenario.ABORT_THREAD : Scenario.CLOSE_THREAD).label, abort);
            c.thread.start();
            return c;
        }

        /**
         * Waits up to {@code waitMillis} for the call and says how it ended, as rank {@code me}.
         *
         * @return the line, e.g. {@code rank 1: close() on thread "departures-closer" returned after 12 ms}
         * @throws InterruptedException when the wait is interrupted
         */
        String report(int me, long waitMillis) throws InterruptedException {
            thread.join(waitMillis);
            String head = "rank " + me + ": " + call + " on thread \"" + CLOSER_THREAD + "\" ";
            if (thread.isAlive()) {
                return head + "has not returned after " + waitMillis + " ms";
            }
            Throwable f = failure;
            return head + (f == null ? "returned" : "threw " + describe(f)) + " after " + millis + " ms";
        }
    }

    /** The scenarios, by the names the command line takes. */
    enum Scenario {
        /** SIGKILL to itself. */
        KILL("kill"),
        /** SIGSTOP to itself. */
        STOP("stop"),
        /** An exception inside the try-with-resources. */
        THROW_INSIDE("throw-inside"),
        /** An exception where no try surrounds the communicator. */
        THROW_OUTSIDE("throw-outside"),
        /** System.exit(3). */
        EXIT("exit"),
        /** comm.abort(), then CPU work. */
        ABORT_LIVE("abort-live"),
        /** One all-reduce skipped. */
        SKIP("skip"),
        /** Half the count once. */
        COUNT("count"),
        /** FLOAT16 with twice the count once. */
        TYPE("type"),
        /** SIGTERM to itself instead of a collective. */
        SIGTERM_RANK("sigterm-rank"),
        /** SIGTERM to the launcher while every rank is inside a collective. */
        SIGTERM_LAUNCHER("sigterm-launcher"),
        /** CPU work without NCCL at step S. */
        CPU_STUCK("cpu-stuck"),
        /** SIGKILL to itself during the rendezvous. */
        STARTUP_RENDEZVOUS_KILL("startup-rendezvous-kill", Phase.RENDEZVOUS, "KILL"),
        /** SIGTERM to itself during the rendezvous. */
        STARTUP_RENDEZVOUS_TERM("startup-rendezvous-term", Phase.RENDEZVOUS, "TERM"),
        /** SIGKILL to itself after the rendezvous, before NCCL is called. */
        STARTUP_IDTAKEN_KILL("startup-idtaken-kill", Phase.ID_TAKEN, "KILL"),
        /** SIGTERM to itself after the rendezvous, before NCCL is called. */
        STARTUP_IDTAKEN_TERM("startup-idtaken-term", Phase.ID_TAKEN, "TERM"),
        /** SIGKILL to itself inside NCCL's initialization. */
        STARTUP_INIT_KILL("startup-init-kill", Phase.NCCL_INIT, "KILL"),
        /** SIGTERM to itself inside NCCL's initialization. */
        STARTUP_INIT_TERM("startup-init-term", Phase.NCCL_INIT, "TERM"),
        /** System.exit(3) from another thread inside NCCL's initialization. */
        STARTUP_INIT_EXIT("startup-init-exit", Phase.NCCL_INIT, "EXIT"),
        /** close() on a second thread while the main thread issues all-reduces. */
        CLOSE_THREAD("close-thread"),
        /** abort() on a second thread while the main thread issues all-reduces. */
        ABORT_THREAD("abort-thread"),
        /** Many short steps for the SIGTERM fuzz. */
        FUZZ("fuzz"),
        /** Fuzz with PHASE lines, for the start-up SIGTERM fuzz. */
        STARTUP_FUZZ("startup-fuzz"),
        /** No departure. */
        NONE("none");

        final String label;
        /** Where a start-up scenario's rank leaves; null for the others. */
        final Phase at;
        /** How it leaves: KILL, TERM (the signal) or EXIT; null for the others. */
        final String way;

        Scenario(String label) {
            this(label, null, null);
        }

        Scenario(String label, Phase at, String way) {
            this.label = label;
            this.at = at;
            this.way = way;
        }

        /** Whether every rank runs a {@link Watcher} (the start-up scenarios and startup-fuzz). */
        boolean watched() {
            return at != null || this == STARTUP_FUZZ;
        }

        /** The last phase in which a start-up scenario may still be placed: past it, it was not. */
        Phase until() {
            return at == Phase.ID_TAKEN ? Phase.SET_DEVICE : at;
        }

        /** The scenario of a command-line name. */
        static Scenario of(String name) {
            for (Scenario s : values()) {
                if (s.label.equals(name)) {
                    return s;
                }
            }
            throw new CommandLine.TypeConversionException("'" + name + "' is not one of " + names());
        }

        static String names() {
            return Arrays.stream(values()).map(s -> s.label).collect(Collectors.joining(", "));
        }
    }

    /** The scenarios' names, for --help. */
    static final class Names implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return Arrays.stream(Scenario.values()).map(s -> s.label).iterator();
        }
    }

    /** The option that makes the rank join the job's liveness channel first ({@link JobLiveness#join()}). */
    static final String JOIN_FIRST = "--join-first";

    /** The command line ({@code --help} lists it). */
    @Command(name = "DepartureScenarios", mixinStandardHelpOptions = true, versionProvider = Tools.Version.class,
            description = "Every way a rank leaves, one per run, for scripts/departures.sh (see the class"
                    + " documentation).")
    static final class Options {
        @Parameters(index = "0", paramLabel = "SCENARIO", converter = ScenarioConverter.class,
                completionCandidates = Names.class, description = "One of: ${COMPLETION-CANDIDATES}.")
        Scenario scenario;
        @Option(names = "--steps", paramLabel = "N", description = "Steps (default: ${DEFAULT-VALUE}).")
        int steps = 8;
        @Option(names = "--step", paramLabel = "S", description = "The step of the event (default: ${DEFAULT-VALUE}).")
        int step = 3;
        @Option(names = "--rank", paramLabel = "R", description = "The rank that does it (default: the last).")
        int rank = -1;
        @Option(names = "--count", paramLabel = "N", description = "Floats per all-reduce, with an optional k or M "
                + "suffix (default: ${DEFAULT-VALUE}).")
        String count = "1M";
        /** {@link #count} as a number, set by {@link #eventRank}. */
        long elements;
        @Option(names = "--sleep-ms", paramLabel = "MS", description = "Sleep after each step (default: "
                + "${DEFAULT-VALUE}).")
        int sleepMs = 50;
        @Option(names = "--stuck-seconds", paramLabel = "S", description = "cpu-stuck's CPU loop (default: "
                + "${DEFAULT-VALUE}).")
        int stuckSeconds = 60;
        @Option(names = "--live-seconds", paramLabel = "S", description = "abort-live's CPU work after the abort "
                + "(default: ${DEFAULT-VALUE}).")
        int liveSeconds = 30;
        @Option(names = JOIN_FIRST, description = "JobLiveness.join() first of all, before the command line is read "
                + "(prints JOINFIRST t=<epoch ms> <joined>): a rank that dies from then on is told to every rank.")
        boolean joinFirst;

        /**
         * The rank that does the scenario in a world of {@code worldSize}, after checking the options against it.
         *
         * @throws Tools.UsageException naming the option that does not fit, and the fix
         */
        int eventRank(int worldSize) {
            List<String> wrong = new java.util.ArrayList<>();
            if (worldSize < 2) {
                wrong.add("DepartureScenarios needs 2 or more ranks, and this is a world of " + worldSize
                        + ": launch it with nccl4j-run, mpirun or RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT");
            }
            if (steps < 1) {
                wrong.add("--steps " + steps + " is not a number of steps: use 1 or more");
            } else if (step < 1 || step > steps) {
                wrong.add("--step " + step + " is not one of the steps 1.." + steps + " (--steps " + steps + ")");
            }
            if (rank < -1 || (worldSize >= 2 && rank >= worldSize)) {
                wrong.add("--rank " + rank + " is not a rank of this world of " + worldSize + ": use 0.."
                        + (worldSize - 1) + ", or -1 for the last");
            }
            try {
                elements = Programs.parseCount(count);
            } catch (IllegalArgumentException e) {
                elements = -1;
            }
            if (elements < 2 || elements > Integer.MAX_VALUE / 2) {
                wrong.add("--count " + count + " is not a count of 2.." + Integer.MAX_VALUE / 2 + " floats (count "
                        + "halves it, type doubles it), such as 1024 or 1M");
            }
            if (sleepMs < 0 || stuckSeconds < 0 || liveSeconds < 0) {
                wrong.add("--sleep-ms, --stuck-seconds and --live-seconds cannot be negative");
            }
            if (!wrong.isEmpty()) {
                throw new Tools.UsageException(String.join("; ", wrong));
            }
            return rank == -1 ? worldSize - 1 : rank;
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%s --steps %d --step %d --rank %d --count %s", scenario.label, steps,
                    step, rank, count);
        }
    }

    /** A scenario's name, as {@link Scenario#of}. */
    static final class ScenarioConverter implements CommandLine.ITypeConverter<Scenario> {
        @Override
        public Scenario convert(String value) {
            return Scenario.of(value);
        }
    }
}
