package org.nccl4j.examples;

import org.nccl4j.diagnostics.ExitStatus;
import picocli.CommandLine.Option;
import picocli.CommandLine.Command;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.Locale;
import java.util.zip.CRC32;
import org.nccl4j.CommConfig;
import org.nccl4j.Communicator;
import org.nccl4j.CommunicatorFailedException;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.Event;
import org.nccl4j.FailurePolicy;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;

/**
 * Data-parallel training that survives a lost rank: each rank fits a linear model to its own shard of data,
 * all-reduces the gradient (SUM, then / the world size on the host) and takes the same SGD step. At step
 * {@code --kill-step} each rank of {@code --kill-rank} halts abruptly ({@code kill -9} of its own process; a list
 * such as {@code 2,3} loses a whole host of a two-host job at once). The survivors'
 * watchdog (policy {@link FailurePolicy#RECOVER}) delivers the failure to their wait; they
 * {@link Communicator#recover recover} a communicator without the lost rank (a shrink, or where NCCL refuses to
 * shrink after a lost peer, a new communicator of the survivors), abort the old one, redo the step over the new world
 * size, and finish. Each survivor prints the detection time (the failed step's all-reduce
 * enqueued to the exception), the recovery time (the exception to the first all-reduce completed on the new
 * communicator), the loss, and a CRC32 of its final weights, which must be the same on every survivor.
 *
 * <p>Which ranks were lost comes from {@link Communicator#lostRanks(Duration)}, which nccl4j's liveness channel
 * fills when {@code MASTER_ADDR} and {@code MASTER_PORT} are set, as under {@code scripts/nccl4j-run}; every survivor
 * gets the same set. Only when it names none are the ranks of {@code --kill-rank} taken instead, and said so.
 *
 * <pre>
 * scripts/nccl4j-run --elastic --share-gpu -np 3 ElasticDdp --steps 200 --kill-rank 1 --kill-step 60
 * scripts/nccl4j-run --elastic --hosts 2 -np 2 ElasticDdp --steps 200 --kill-rank 0,1 --kill-step 60
 * </pre>
 */
public final class ElasticDdp {
    private static final int DIM = 256;
    private static final int BATCH = 16;

    private ElasticDdp() {
    }

    /**
     * Runs the example.
     *
     * @param args {@code [--steps N] [--kill-rank R[,R...]] [--kill-step K] [--lr X]}
     */
    public static void main(String[] args) {
        Options o = Args.parseOrExit(new Options(), args);
        String bad = o.check();
        if (bad != null) {
            System.err.println("ElasticDdp: " + bad);
            System.exit(Args.USAGE);
        }
        System.exit(ExitStatus.of("ElasticDdp", () -> run(o.steps, o.killRanks, o.killStep, o.lr)));
    }

    /** The weights every rank tries to learn. */
    static float target(int j) {
        return (float) Math.sin(0.1 * j + 1);
    }

    /** Sample {@code b} of {@code rank}'s shard at {@code step}, component {@code j}: deterministic, in [-1, 1). */
    static float input(int rank, int step, int b, int j) {
        long h = (((long) rank * 1_000_003 + step) * 131 + b) * 8191 + j;
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        return (float) ((h >>> 40) / (double) (1L << 24) * 2 - 1);
    }

    /** The gradient of rank {@code rank}'s mean squared error at {@code step} into {@code grad}; returns the loss. */
    static double gradient(float[] w, int rank, int step, float[] grad) {
        java.util.Arrays.fill(grad, 0f);
        double loss = 0;
        float[] x = new float[DIM];
        for (int b = 0; b < BATCH; b++) {
            double pred = 0;
            double y = 0;
            for (int j = 0; j < DIM; j++) {
                x[j] = input(rank, step, b, j);
                pred += w[j] * x[j];
                y += target(j) * x[j];
            }
            double err = pred - y;
            loss += err * err / 2 / BATCH;
            for (int j = 0; j < DIM; j++) {
                grad[j] += (float) (err * x[j] / BATCH);
            }
        }
        return loss;
    }

    private static int run(int steps, int[] killRanks, int killStep, float lr) {
        try (Communicator first = Communicator.fromEnvironment(CommConfig.builder().commName("elastic")
                .onFailure(FailurePolicy.RECOVER).timeout(Duration.ofSeconds(10)).build())) {
            return train(first, steps, killRanks, killStep, lr);
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static int train(Communicator first, int steps, int[] killRanks, int killStep, float lr)
            throws IOException, InterruptedException {
        int me = first.rank();   // this rank's shard, whatever its rank after a shrink
        for (int r : killRanks) {
            if (r >= first.size()) {
                throw new IllegalArgumentException("--kill-rank " + r + " is not a rank of this job of "
                        + first.size() + " ranks; give ranks in [0, " + first.size() + ")");
            }
        }
        boolean killed = java.util.Arrays.stream(killRanks).anyMatch(r -> r == me);
        String lostList = java.util.Arrays.toString(killRanks);
        String who = "rank " + me + ": ";
        Communicator comm = first;
        float[] w = new float[DIM];
        float[] grad = new float[DIM];
        double firstLoss = Double.NaN;
        double loss = 0;
        try (Stream stream = Stream.create(comm.device());
             Event done = Event.create(comm.device());
             DeviceBuffer buf = DeviceBuffer.allocate(comm.device(), DIM, DataType.FLOAT32)) {
            System.out.println(who + comm.size() + " ranks, " + steps + " steps"
                    + (killRanks.length == 0 ? "" : "; rank" + (killRanks.length > 1 ? "s " + lostList + " are"
                    : " " + killRanks[0] + " is") + " lost at step " + killStep));
            for (int step = 0; step < steps; step++) {
                if (killed && step == killStep) {
                    System.out.println(who + "kill -9 at step " + step);
                    System.out.flush();
                    Examples.killSelf();
                }
                loss = gradient(w, me, step, grad);
                buf.copyFrom(grad);
                long enqueued = System.nanoTime();
                try {
                    comm.allReduce(buf, DataType.FLOAT32, ReduceOp.SUM, stream);
                    done.record(stream).synchronize();
                } catch (CommunicatorFailedException e) {
                    long detected = System.nanoTime();
                    System.out.println(who + "step " + step + ": " + e.getClass().getSimpleName() + " "
                            + ms(detected - enqueued) + " after the all-reduce was enqueued: " + e.verdict());
                    int[] named = comm.lostRanks(Duration.ofMillis(300));   // the set every survivor agrees on
                    int[] lost = named.length > 0 ? named : killRanks;
                    System.out.println(who + (named.length > 0 ? "the lost ranks every survivor agrees on (lostRanks): "
                            + java.util.Arrays.toString(named) : "no rank named; taking --kill-rank " + lostList));
                    Communicator smaller = comm.recover(null, lost);
                    comm.abort();
                    if (comm != first) {
                        comm.close();
                    }
                    comm = smaller;
                    loss = gradient(w, me, step, grad);   // the step again, over the survivors
                    buf.copyFrom(grad);
                    comm.allReduce(buf, DataType.FLOAT32, ReduceOp.SUM, stream);
                    done.record(stream).synchronize();
                    System.out.println(who + "a new communicator without rank" + (lost.length > 1 ? "s " : " ")
                            + java.util.Arrays.toString(lost) + ": now rank " + comm.rank() + " of "
                            + comm.size() + "; recovered " + ms(System.nanoTime() - detected)
                            + " after the detection (the new communicator and the step's all-reduce on it)");
                }
                float[] sum = buf.copyTo(new float[DIM]);
                for (int j = 0; j < DIM; j++) {
                    w[j] -= lr * sum[j] / comm.size();
                }
                if (Double.isNaN(firstLoss)) {
                    firstLoss = loss;
                }
                if (step % 50 == 0 || step == steps - 1) {
                    System.out.println(String.format(Locale.ROOT, "%sstep %d: loss %.6f on %d ranks", who, step,
                            loss, comm.size()));
                }
            }
            CRC32 crc = new CRC32();
            ByteBuffer bytes = ByteBuffer.allocate(4 * DIM).order(ByteOrder.LITTLE_ENDIAN);
            for (float v : w) {
                bytes.putFloat(v);
            }
            crc.update(bytes.array());
            boolean falling = loss < firstLoss;
            // one write per line: a launcher that tags each write (mpirun --tag-output) keeps the line whole
            System.out.println(String.format(Locale.ROOT, "%sfinal weights crc32 %08x; loss %.6f -> %.6f (%s)", who,
                    crc.getValue(), firstLoss, loss, falling ? "falling" : "NOT falling"));
            return falling ? 0 : 1;
        } finally {
            if (comm != first) {
                comm.close();
            }
        }
    }

    private static String ms(long nanos) {
        return String.format(Locale.ROOT, "%.0f ms", nanos / 1e6);
    }

    /** The command line ({@code --help} lists it). */
    @Command(name = "ElasticDdp", mixinStandardHelpOptions = true, versionProvider = Args.Version.class,
            description = "Data-parallel training that survives a lost rank: detect, agree, recover, go on.")
    static final class Options {
        @Option(names = "--steps", paramLabel = "N", description = "Training steps (default: ${DEFAULT-VALUE}).")
        int steps = 200;
        @Option(names = "--kill-rank", paramLabel = "R", split = ",", description = "The rank that halts abruptly; "
                + "a list (2,3) halts them all at the same step, e.g. every rank of one host (default: none).")
        int[] killRanks = {};
        @Option(names = "--kill-step", paramLabel = "K", description = "The step at which it halts.")
        int killStep = -1;
        @Option(names = "--lr", paramLabel = "X", description = "Learning rate (default: ${DEFAULT-VALUE}).")
        float lr = 0.05f;

        /** @return what is wrong with these options, naming the option and the fix, or null */
        String check() {
            if (steps < 1) {
                return "--steps must be >= 1; got " + steps;
            }
            if (!(lr > 0)) {
                return "--lr must be > 0; got " + lr;
            }
            if (killRanks.length == 0) {
                return killStep >= 0 ? "--kill-step " + killStep + " needs --kill-rank R[,R...]: the ranks to halt"
                        : null;
            }
            if (killStep < 0 || killStep >= steps) {
                return "--kill-rank needs --kill-step K with 0 <= K < --steps (" + steps + "); got " + killStep;
            }
            java.util.Set<Integer> seen = new java.util.HashSet<>();
            for (int r : killRanks) {
                if (r < 0 || !seen.add(r)) {
                    return "--kill-rank " + r + (r < 0 ? " is negative" : " is given twice")
                            + "; give distinct ranks, e.g. --kill-rank 2,3";
                }
            }
            return null;
        }
    }
}
