package org.nccl4j.tools.harness;

import org.nccl4j.examples.Args;
import org.nccl4j.examples.Examples;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;
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
 * fuzz              no departure: prints READY after step 1 and CLOSING before the close, for departures.sh's FUZZ
 *                   mode, which sends SIGTERM to a random rank at a random moment
 * none              no departure (a control run)
 * </pre>
 *
 * Every line the script reads is written to stdout in one write (mpirun --tag-output splits a line written in
 * pieces): {@code START rank=R t=<epoch ms> pid=P size=N device=D <scenario>} once the communicator is made,
 * {@code EVENT rank=R t=<epoch ms> <scenario>} at the moment of the event (for a signal, just before it is sent),
 * {@code READY}/{@code CLOSING} (fuzz), and at the end {@code RESULT rank=R t=<epoch ms> ok} or
 * {@code RESULT rank=R t=<epoch ms> <ExceptionClass>: <message on one line>}. The exception is then rethrown: it
 * leaves main, Java prints it and exits 1. Exit status: 0 ok, 1 an exception left main, 2 a refused command line;
 * a rank that signals itself ends as the signal ends it (137 for SIGKILL, 143 for SIGTERM), exit with 3.
 */
public final class DepartureScenarios {
    /** How long rank 0 and the others sleep inside step S of sigterm-launcher, after issuing the all-reduce. */
    static final long INSIDE_MILLIS = 200;

    private DepartureScenarios() {
    }

    /**
     * Runs one scenario as one rank; see the class documentation.
     *
     * @param args the scenario and its options ({@code --help} lists them)
     * @throws Exception what the scenario threw, after its RESULT line: it leaves main on purpose
     */
    public static void main(String[] args) throws Exception {
        Options o = Args.parseOrExit(new Options(), args);
        int me = launchRank();
        int eventRank;
        try {
            eventRank = o.eventRank(LaunchInfo.detect().worldSize());
        } catch (Args.UsageException e) {
            System.err.println("DepartureScenarios: " + e.getMessage());
            System.exit(Args.USAGE);
            return;
        }
        try {
            if (o.scenario == Scenario.THROW_OUTSIDE) {
                outside(o, eventRank);
            } else {
                inside(o, eventRank);
            }
        } catch (Exception | Error e) {
            line("RESULT rank=" + me + " t=" + System.currentTimeMillis() + " " + describe(e));
            throw e;
        }
        line("RESULT rank=" + me + " t=" + System.currentTimeMillis() + " ok");
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
        try (Communicator comm = Communicator.fromEnvironment();
             Stream stream = Stream.create(comm.device());
             DeviceBuffer buf = DeviceBuffer.allocate(comm.device(), o.elements, DataType.FLOAT32)) {
            steps(o, eventRank, comm, stream, buf);
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
        float expected = n * (n + 1) / 2f;
        float[] host = new float[Math.toIntExact(o.elements)];
        float[] back = new float[host.length];
        String scenario = o.scenario.label;
        line("START rank=" + me + " t=" + System.currentTimeMillis() + " pid=" + ProcessHandle.current().pid()
                + " size=" + n + " device=" + comm.device() + " " + scenario);
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
                        return;
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
            check(back, expected, n, step);
            if (o.scenario == Scenario.FUZZ && step == 1) {
                line("READY rank=" + me + " t=" + System.currentTimeMillis());
            }
            Thread.sleep(o.sleepMs);
        }
        if (o.scenario == Scenario.FUZZ) {
            line("CLOSING rank=" + me + " t=" + System.currentTimeMillis());
        }
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
        /** Many short steps for the SIGTERM fuzz. */
        FUZZ("fuzz"),
        /** No departure. */
        NONE("none");

        final String label;

        Scenario(String label) {
            this.label = label;
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

        /**
         * The rank that does the scenario in a world of {@code worldSize}, after checking the options against it.
         *
         * @throws Args.UsageException naming the option that does not fit, and the fix
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
                elements = Examples.parseCount(count);
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
                throw new Args.UsageException(String.join("; ", wrong));
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
