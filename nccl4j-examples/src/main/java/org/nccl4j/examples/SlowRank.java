package org.nccl4j.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.ReduceOp;
import org.nccl4j.SlowRankMonitor;
import org.nccl4j.Stream;

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
        int sleepRank = -1;
        long sleepMs = 50;
        int steps = 40;
        int every = 5;
        for (int i = 0; i < args.length; i++) {
            String v = i + 1 < args.length ? args[i + 1] : null;
            if (v == null || !v.matches("-?[0-9]{1,6}")) {
                System.err.println("SlowRank: " + args[i] + " needs a whole number; usage: SlowRank [--sleep-rank R] "
                        + "[--sleep-ms MS] [--steps N] [--every N]");
                System.exit(2);
            }
            switch (args[i++]) {
                case "--sleep-rank" -> sleepRank = Integer.parseInt(v);
                case "--sleep-ms" -> sleepMs = Long.parseLong(v);
                case "--steps" -> steps = Integer.parseInt(v);
                case "--every" -> every = Integer.parseInt(v);
                default -> {
                    System.err.println("SlowRank: unknown option " + args[i - 1] + "; usage: SlowRank [--sleep-rank R] "
                            + "[--sleep-ms MS] [--steps N] [--every N]");
                    System.exit(2);
                }
            }
        }
        int r = sleepRank;
        long ms = sleepMs;
        int n = steps;
        int w = every;
        System.exit(Examples.exitStatus("SlowRank", () -> {
            try {
                return run(r, ms, n, w);
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
}
