package org.nccl4j.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;
import org.nccl4j.diagnostics.ExitStatus;
import org.nccl4j.diagnostics.SlowRankMonitor;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The slow-rank monitor at work, launched per rank: a training-like loop of a little compute and a 1 MiB all-reduce,
 * where rank {@code --sleep-rank} sleeps {@code --sleep-ms} before each all-reduce (a compute straggler).
 *
 * <pre>
 * SlowRank [--sleep-rank R] [--sleep-ms 50] [--steps 40] [--every 5]
 * scripts/nccl4j-run --share-gpu -np 3 SlowRank --sleep-rank 1        rank 1 must be named within 20 steps
 * scripts/nccl4j-run --share-gpu -np 3 SlowRank                       no one must be named
 * </pre>
 * Each rank prints its verdict (PASSED/FAILED, the step of the first report, who was named) and the bus bandwidth
 * that {@link SlowRankMonitor#probeBandwidth(long)} measured at 64 MiB; exits 0 when the expectation held, 1 when
 * not.
 */
public final class SlowRank {
    private SlowRank() {
    }

    /**
     * Runs the loop.
     *
     * @param args see the class documentation
     */
    public static void main(String[] args) {
        Options o = Args.parseOrExit(new Options(), args);
        if (o.steps < 1 || o.every < 1 || o.sleepMs < 0) {
            System.err.println("SlowRank: --steps and --every must be >= 1 and --sleep-ms >= 0; got steps " + o.steps
                    + ", every " + o.every + ", sleep-ms " + o.sleepMs);
            System.exit(Args.USAGE);
        }
        System.exit(ExitStatus.of("SlowRank", () -> {
            try {
                return run(o.sleepRank, o.sleepMs, o.steps, o.every);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }));
    }

    static int run(int sleepRank, long sleepMs, int steps, int every) throws InterruptedException {
        List<SlowRankMonitor.Report> reports = new ArrayList<>();
        try (Communicator comm = Communicator.fromEnvironment();
             Stream stream = Stream.create(comm.device());
             DeviceBuffer grads = DeviceBuffer.allocate(comm.device(), 1 << 18, DataType.FLOAT32);
             SlowRankMonitor monitor = SlowRankMonitor.builder(comm).every(every).listener(reports::add).build()) {
            String who = "rank " + comm.rank() + ": ";
            for (int step = 0; step < steps; step++) {
                if (comm.rank() == sleepRank) {
                    Thread.sleep(sleepMs);
                }
                monitor.beginCollective();
                comm.allReduce(grads, DataType.FLOAT32, ReduceOp.SUM, stream);
                stream.synchronize();
                monitor.endCollective();
            }
            SlowRankMonitor.Bandwidth bw = monitor.probeBandwidth(64L << 20);
            List<Integer> named = reports.stream().flatMap(rep -> rep.slow().stream())
                    .map(SlowRankMonitor.RankTimes::rank).distinct().sorted().toList();
            long first = reports.isEmpty() ? -1 : reports.get(0).step();
            boolean ok = sleepRank < 0 ? named.isEmpty()
                    : named.equals(List.of(sleepRank)) && first > 0 && first <= 20;
            System.out.println(who + (ok ? "PASSED" : "FAILED") + ": " + (sleepRank < 0 ? "no rank sleeps"
                    : "rank " + sleepRank + " sleeps " + sleepMs + " ms per step") + "; named " + named
                    + (first > 0 ? " first after step " + first + ": " + reports.get(0).slow() : "") + "; "
                    + String.format(Locale.ROOT, "bus bandwidth %.2f GB/s at 64 MiB over %d ranks", bw.busGBps(),
                    comm.size()));
            return ok ? 0 : 1;
        }
    }

    /** The command line ({@code --help} lists it). */
    @Command(name = "SlowRank", mixinStandardHelpOptions = true, versionProvider = Args.Version.class,
            description = "The slow-rank monitor at work: one rank sleeps before each all-reduce and is named.")
    static final class Options {
        @Option(names = "--sleep-rank", paramLabel = "R", description = "The rank that sleeps (default: none).")
        int sleepRank = -1;
        @Option(names = "--sleep-ms", paramLabel = "MS",
                description = "Its sleep per step (default: ${DEFAULT-VALUE}).")
        long sleepMs = 50;
        @Option(names = "--steps", paramLabel = "N", description = "Steps (default: ${DEFAULT-VALUE}).")
        int steps = 40;
        @Option(names = "--every", paramLabel = "N", description = "Steps per exchange (default: ${DEFAULT-VALUE}).")
        int every = 5;
    }
}
