package org.nccl4j.tools.harness;

import org.nccl4j.diagnostics.ExitStatus;
import org.nccl4j.diagnostics.StepStats;
import org.nccl4j.tools.cli.Programs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicReference;
import org.nccl4j.CollectiveMismatchException;
import org.nccl4j.CollectiveTimeoutException;
import org.nccl4j.CommConfig;
import org.nccl4j.Communicator;
import org.nccl4j.CommunicatorFailedException;
import org.nccl4j.CudaGraph;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.Event;
import org.nccl4j.InitTimeoutException;
import org.nccl4j.Nccl;
import org.nccl4j.RanksDivergedException;
import org.nccl4j.ReduceOp;
import org.nccl4j.RemoteErrorException;
import org.nccl4j.Stream;
import org.nccl4j.UniqueId;
import org.nccl4j.WatchdogConfig;
import org.nccl4j.tools.cli.Tools;
import org.nccl4j.launch.RendezvousException;
import picocli.CommandLine.Command;

/**
 * The failures the watchdog is for, made on purpose, one per run; launched per rank (mpirun,
 * {@code scripts/nccl4j-run}, or plain {@code java} with {@code RANK}/{@code WORLD_SIZE}/{@code MASTER_ADDR}/
 * {@code MASTER_PORT}). Each prints what the user sees (the exception's message) and how long detection took, checks
 * it against what the watchdog promises, and exits 0 when it held, 1 when it did not.
 *
 * <pre>
 * HangScenarios skip       rank 1 skips the 3rd of 6 all-reduces (counts 1000, 2000, ... 6000 floats, each waited
 *                          for on an Event by the main thread) while a second thread waits in Stream.synchronize():
 *                          both threads must get a RanksDivergedException naming collective #3 within 2 s (rank 0
 *                          compares the fingerprints of the ranks' collectives); with HANG_FINGERPRINT=off (the
 *                          fingerprint turned off) a CollectiveTimeoutException naming allReduce #3 within timeout
 *                          + 2 s
 * HangScenarios kill       all-reduces of 1 Mi floats in a loop; rank 1 SIGKILLs itself at step 50: the others must
 *                          get a CommunicatorFailedException (a RemoteErrorException) within 5 s of the kill
 * HangScenarios stop       as kill, but rank 1 SIGSTOPs itself (a frozen process or host: its sockets stay open):
 *                          the others must get a RemoteErrorException naming rank 1 within 5 s, from the liveness
 *                          channel's heartbeats (NCCL itself sees nothing)
 * HangScenarios sendrecv   a ring exchange of 1 Mi floats in a group of send/recv per step; rank 1 SIGKILLs itself
 *                          at step 50: the others must get a RemoteErrorException within 5 s
 * HangScenarios init       Communicator.fromEnvironment where the last rank of WORLD_SIZE is never started: every
 *                          started rank must throw, naming that rank, within NCCL4J_INIT_TIMEOUT + 2 s (a
 *                          RendezvousException over MASTER_ADDR, an InitTimeoutException with NCCL_COMM_ID)
 * HangScenarios halfcount  4 all-reduces of 1024 floats; rank 1 passes 512 at the 2nd. With
 *                          NCCL4J_CHECK_COLLECTIVES=1 every rank must throw CollectiveMismatchException naming both
 *                          counts; without it, whatever NCCL does (a timeout, or a silent wrong result), every rank
 *                          writes its trace for scripts/nccl4j-trace
 * HangScenarios cost       one process, one GPU: 8-byte all-reduces on one-rank communicators with the watchdog on,
 *                          off (recorder on), off without recorder, and with the collective check; eager and CUDA-graph
 *                          replay, alternating rounds; host time per operation and Java heap bytes per operation
 * </pre>
 * The timeout is {@code NCCL4J_TIMEOUT} (10 s when unset, for these scenarios); traces go to {@code NCCL4J_TRACE_DIR}.
 */
public final class HangScenarios {
    private static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);

    private HangScenarios() {
    }

    /**
     * Runs one scenario.
     *
     * @param args the scenario's name: skip, kill, stop, sendrecv, init, halfcount or cost
     */
    public static void main(String[] args) {
        Options o = Tools.parseOrExit(new Options(), args);
        System.exit(ExitStatus.of("HangScenarios", () -> {
            try {
                switch (o.scenario.name()) {
                    case "skip":
                        return skip();
                    case "kill":
                        return kill("kill");
                    case "stop":
                        return kill("stop");
                    case "sendrecv":
                        return kill("sendrecv");
                    case "init":
                        return init();
                    case "halfcount":
                        return halfCount();
                    default:
                        return cost();
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }));
    }

    private static Duration timeout() {
        String v = System.getenv(WatchdogConfig.TIMEOUT);
        return v == null || v.isBlank() ? DEFAULT_TIMEOUT : WatchdogConfig.fromEnvironment().timeout();
    }

    private static void say(Communicator comm, String line) {
        System.out.println("rank " + comm.rank() + ": " + line);
        System.out.flush();
    }

    private static String text(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }

    private static String seconds(long nanos) {
        return String.format(Locale.ROOT, "%.2f s", nanos / 1e9);
    }

    // ---------------------------------------------------------------- (a) a skipped all-reduce, (d) waiting threads

    static int skip() throws InterruptedException {
        Duration timeout = timeout();
        boolean fingerprint = !"off".equals(System.getenv("HANG_FINGERPRINT"));
        try (Communicator comm = Communicator.fromEnvironment(CommConfig.builder().commName("skip")
                .timeout(timeout).fingerprint(fingerprint).build());
             Stream stream = Stream.create(comm.device());
             Event done = Event.create(comm.device());
             DeviceBuffer buf = DeviceBuffer.allocate(comm.device(), 6000, DataType.FLOAT32)) {
            say(comm, "6 all-reduces of 1000, 2000, ... 6000 floats" + (comm.rank() == 1 ? ", skipping the 3rd" : "")
                    + ", each waited for on an Event; a second thread waits in Stream.synchronize(); timeout "
                    + text(timeout));
            AtomicReference<Throwable> waiter = new AtomicReference<>();
            long[] waiterAt = new long[1];
            Thread second = new Thread(() -> {
                try {
                    while (true) {
                        stream.synchronize();
                        Thread.sleep(20);
                    }
                } catch (Throwable t) {
                    waiter.set(t);
                }
                waiterAt[0] = System.nanoTime();
            }, "waiter");
            second.setDaemon(true);
            second.start();
            Throwable main = null;
            long enqueuedAt = 0;
            int step = 0;
            try {
                for (step = 1; step <= 6; step++) {
                    if (comm.rank() == 1 && step == 3) {
                        continue;
                    }
                    enqueuedAt = System.nanoTime();
                    comm.allReduce(buf.address(), buf.address(), 1000L * step, DataType.FLOAT32, ReduceOp.SUM,
                            stream);
                    done.record(stream).synchronize();
                }
            } catch (Throwable t) {
                main = t;
            }
            long mainAt = System.nanoTime();
            second.join(30_000);
            say(comm, "main thread, in Event.synchronize() at step " + step + ", " + seconds(mainAt - enqueuedAt)
                    + " after enqueuing: " + main);
            say(comm, "second thread, in Stream.synchronize(), " + seconds(waiterAt[0] - enqueuedAt)
                    + " after that enqueue: " + (waiter.get() == null ? "returned normally" : waiter.get().getClass()
                    .getSimpleName() + " (same message)"));
            Class<?> expected = fingerprint ? RanksDivergedException.class : CollectiveTimeoutException.class;
            long limit = (fingerprint ? Duration.ofSeconds(2) : timeout.plusSeconds(2)).toNanos();
            boolean ok = expected.isInstance(main) && expected.isInstance(waiter.get())
                    && mainAt - enqueuedAt <= limit && waiterAt[0] - enqueuedAt <= limit
                    && ((CommunicatorFailedException) main).sequence() == 3
                    && (!fingerprint || main.getMessage().contains("collective #3 differs between ranks"));
            String promise = fingerprint ? "a RanksDivergedException naming collective #3 within 2 s"
                    : "a CollectiveTimeoutException naming allReduce #3 within timeout + 2 s";
            say(comm, ok ? "as promised: both threads got " + promise : "NOT as promised: expected " + promise
                    + " in both threads");
            return ok ? 0 : 1;
        }
    }

    // ---------------------------------------------------------------- (b) a peer killed mid-loop

    static int kill(String how) throws IOException, InterruptedException {
        Path dir = WatchdogConfig.fromEnvironment().trace().directory();
        Files.createDirectories(dir);
        Path killedAt = dir.resolve("killed-at-ms");
        boolean stop = how.equals("stop");
        boolean ring = how.equals("sendrecv");
        try (Communicator comm = Communicator.fromEnvironment(CommConfig.builder().commName(how)
                .timeout(timeout()).build());
             Stream stream = Stream.create(comm.device());
             DeviceBuffer buf = DeviceBuffer.allocate(comm.device(), 1 << 20, DataType.FLOAT32);
             DeviceBuffer in = DeviceBuffer.allocate(comm.device(), 1 << 20, DataType.FLOAT32)) {
            say(comm, (ring ? "a ring of send/recv of 1 Mi floats in a group" : "all-reduces of 1 Mi floats")
                    + ", each waited for; rank 1 is " + (stop ? "SIGSTOPped" : "SIGKILLed") + " at step 50; timeout "
                    + text(timeout()));
            int next = (comm.rank() + 1) % comm.size();
            int prev = (comm.rank() + comm.size() - 1) % comm.size();
            for (int step = 1; step <= 100_000; step++) {
                if (comm.rank() == 1 && step == 50) {
                    Files.writeString(killedAt, Long.toString(System.currentTimeMillis()));
                    say(comm, "kill -" + (stop ? "STOP " : "9 ") + ProcessHandle.current().pid() + " at step 50");
                    if (stop) {
                        Programs.stopSelf();
                    } else {
                        Programs.killSelf();
                    }
                }
                try {
                    if (ring) {
                        org.nccl4j.Nccl.groupStart();
                        try {
                            comm.send(buf, DataType.FLOAT32, next, stream);
                            comm.recv(in, DataType.FLOAT32, prev, stream);
                        } finally {
                            org.nccl4j.Nccl.groupEnd();
                        }
                    } else {
                        comm.allReduce(buf, DataType.FLOAT32, ReduceOp.SUM, stream);
                    }
                    stream.synchronize();
                } catch (CommunicatorFailedException e) {
                    long now = System.currentTimeMillis();
                    long killed = Long.parseLong(Files.readString(killedAt).trim());
                    long ms = now - killed;
                    say(comm, "step " + step + ": " + e.getClass().getSimpleName() + " " + ms + " ms after the kill: "
                            + e.getMessage());
                    boolean ok = e instanceof RemoteErrorException && ms <= 5000;
                    say(comm, ok ? "as promised: a RemoteErrorException within 5 s of the kill; exiting cleanly"
                            : "NOT as promised: expected a RemoteErrorException within 5 s of the kill");
                    return ok ? 0 : 1;
                }
            }
            say(comm, "NOT as promised: the loop ended without a failure");
            return 1;
        }
    }

    // ---------------------------------------------------------------- (e) a rank that never starts

    static int init() {
        String world = System.getenv("WORLD_SIZE");
        int size = world == null ? -1 : Integer.parseInt(world.trim());
        String missing = "[" + (size - 1) + "]";
        Duration deadline = WatchdogConfig.fromEnvironment().initTimeout();
        long t0 = System.nanoTime();
        String rank = System.getenv("RANK");
        try (Communicator comm = Communicator.fromEnvironment()) {
            System.out.println("rank " + rank + ": NOT as promised: the communicator was made without rank "
                    + (size - 1));
            return 1;
        } catch (RendezvousException | InitTimeoutException e) {
            long ns = System.nanoTime() - t0;
            System.out.println("rank " + rank + ": " + e.getClass().getSimpleName() + " after " + seconds(ns)
                    + " (deadline " + text(deadline) + "): " + e.getMessage());
            boolean named = e.getMessage().contains(missing) || e.getMessage().contains("rank " + (size - 1) + " ");
            boolean inTime = ns <= deadline.toNanos() + 2_000_000_000L;
            System.out.println("rank " + rank + ": " + (named && inTime ? "as promised: rank " + (size - 1)
                    + " named within the deadline + 2 s" : "NOT as promised: " + (named ? "" : "rank " + (size - 1)
                    + " not named; ") + (inTime ? "" : "later than the deadline + 2 s")));
            return named && inTime ? 0 : 1;
        }
    }

    // ---------------------------------------------------------------- (c) a count that differs

    static int halfCount() throws IOException {
        boolean check = WatchdogConfig.fromEnvironment().checkCollectives();
        try (Communicator comm = Communicator.fromEnvironment(CommConfig.builder().commName("halfcount")
                .timeout(timeout()).build());
             Stream stream = Stream.create(comm.device());
             DeviceBuffer buf = DeviceBuffer.allocate(comm.device(), 1024, DataType.FLOAT32)) {
            say(comm, "4 all-reduces of 1024 floats" + (comm.rank() == 1 ? ", 512 at the 2nd" : "")
                    + "; collective check " + (check ? "on" : "off"));
            try {
                for (int i = 1; i <= 4; i++) {
                    long count = comm.rank() == 1 && i == 2 ? 512 : 1024;
                    comm.allReduce(buf.address(), buf.address(), count, DataType.FLOAT32, ReduceOp.SUM, stream);
                    stream.synchronize();
                }
            } catch (CollectiveMismatchException e) {
                say(comm, "CollectiveMismatchException: " + e.getMessage());
                boolean ok = check && e.sequence() == 2 && "count".equals(e.field());
                say(comm, ok ? "as promised: the check named both counts at allReduce #2"
                        : "NOT as promised: expected the check to name the counts at allReduce #2");
                return ok ? 0 : 1;
            } catch (CommunicatorFailedException e) {
                say(comm, e.getClass().getSimpleName() + ": " + e.getMessage());
                say(comm, check ? "NOT as promised: the check should have caught the count first"
                        : "the watchdog caught it; trace: " + e.trace());
                return check ? 1 : 0;
            }
            if (check) {
                say(comm, "NOT as promised: the check did not catch the count");
                return 1;
            }
            Path trace = comm.dumpTrace();
            say(comm, "NCCL completed all 4 without an error; trace written for nccl4j-trace: " + trace);
            return 0;
        }
    }

    // ---------------------------------------------------------------- the cost

    private static final int ROUNDS = 30;
    private static final int OPS = 10_000;
    private static final int GRAPH_OPS = 100;
    private static final int LAUNCHES = 100;

    static int cost() {
        String[] names = {"watchdog on", "watchdog off", "off, no recorder", "collective check"};
        CommConfig[] configs = {
            CommConfig.builder().watchdog(true).build(),
            CommConfig.builder().watchdog(false).build(),
            CommConfig.builder().watchdog(false).traceBuffer(0).build(),
            CommConfig.builder().watchdog(true).checkCollectives(true).build(),
        };
        List<AutoCloseable> open = new ArrayList<>();
        try {
            Communicator[] comms = new Communicator[configs.length];
            for (int i = 0; i < comms.length; i++) {
                comms[i] = Communicator.create(0, 1, UniqueId.generate(), 0, configs[i]);
                open.add(comms[i]);
            }
            Stream stream = Stream.create(0);
            open.add(stream);
            DeviceBuffer buf = DeviceBuffer.allocate(0, 2, DataType.FLOAT32);
            open.add(buf);
            CudaGraph[] graphs = new CudaGraph[3];
            for (int i = 0; i < graphs.length; i++) {
                stream.beginCapture();
                for (int k = 0; k < GRAPH_OPS; k++) {
                    comms[i].allReduce(buf, DataType.FLOAT32, ReduceOp.SUM, stream);
                }
                graphs[i] = stream.endCapture().instantiate();
                open.add(graphs[i]);
            }
            double[][] replay = new double[graphs.length][ROUNDS];
            int[] ops = {OPS, OPS, OPS, OPS / 20};   // the check waits at every operation: fewer of them
            EagerRounds.RoundCosts r = EagerRounds.time(comms, ops, buf, stream, ROUNDS, 3, (i, round) -> {
                if (i < graphs.length) {
                    long g0 = System.nanoTime();
                    for (int k = 0; k < LAUNCHES; k++) {
                        graphs[i].launch(stream);
                    }
                    stream.synchronize();
                    long g1 = System.nanoTime();
                    if (round >= 0) {
                        replay[i][round] = (g1 - g0) / 1e3 / (LAUNCHES * GRAPH_OPS);
                    }
                }
            });
            double[][] eager = r.microsPerOp();
            long[] bytes = r.heapBytes();
            System.out.printf(Locale.ROOT, "%-18s %12s %12s %16s %18s%n", "8 B all-reduce", "eager us/op",
                    "vs off", "heap B/op", "graph replay us/op");
            for (int i = 0; i < configs.length; i++) {
                double m = StepStats.median(eager[i]);
                String g = i < graphs.length ? String.format(Locale.ROOT, "%.3f", StepStats.median(replay[i])) : "-";
                System.out.printf(Locale.ROOT, "%-18s %12.3f %+12.3f %16.4f %18s%n", names[i], m,
                        m - StepStats.median(eager[1]), bytes[i] / (double) ((long) ops[i] * ROUNDS), g);
            }
            System.out.printf(Locale.ROOT, "eager: median of %d rounds of %d operations (the check: %d), each round "
                    + "alternating the communicators in a turning order; replay: %d launches of a graph of %d%n",
                    ROUNDS, OPS, OPS / 20, LAUNCHES, GRAPH_OPS);
            System.out.println("watchdog on - off, per round: " + Arrays.toString(diffs(eager[0], eager[1])));
            long sink = 0;
            long n0 = System.nanoTime();
            for (int k = 0; k < 10_000_000; k++) {
                sink += System.nanoTime();
            }
            long n1 = System.nanoTime();
            System.out.printf(Locale.ROOT, "System.nanoTime(), which the flight recorder calls once per operation: "
                    + "%.1f ns per call (%d)%n", (n1 - n0) / 1e7, sink & 1);
            return 0;
        } finally {
            for (int i = open.size() - 1; i >= 0; i--) {
                try {
                    open.get(i).close();
                } catch (Exception e) {
                    throw e instanceof IOException ? new UncheckedIOException((IOException) e)
                            : new IllegalStateException(e);
                }
            }
        }
    }

    private static String[] diffs(double[] a, double[] b) {
        String[] out = new String[a.length];
        for (int i = 0; i < a.length; i++) {
            out[i] = String.format(Locale.ROOT, "%+.3f", a[i] - b[i]);
        }
        return out;
    }

    /** The scenarios. */
    enum Scenario {
        /** a skipped all-reduce */
        skip,
        /** a peer SIGKILLed */
        kill,
        /** a peer SIGSTOPped */
        stop,
        /** a peer SIGKILLed during a group of send/recv */
        sendrecv,
        /** a rank never started */
        init,
        /** a count that differs */
        halfcount,
        /** the watchdog's cost */
        cost
    }

    /** The command line ({@code --help} lists it). */
    @Command(name = "HangScenarios", mixinStandardHelpOptions = true, versionProvider = Tools.Version.class,
            description = "The failures the watchdog is for, made on purpose, one per run (see the class"
                    + " documentation).")
    static final class Options {
        @picocli.CommandLine.Parameters(index = "0", paramLabel = "SCENARIO",
                description = "One of: ${COMPLETION-CANDIDATES}.")
        Scenario scenario;
    }
}
