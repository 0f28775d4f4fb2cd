package org.nccl4j.examples;

import org.nccl4j.diagnostics.ExitStatus;
import picocli.CommandLine.Option;
import picocli.CommandLine.Command;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;

/**
 * Data-parallel training reduced to one number: the {@code ddp_simple.py} toy of the GPU MODE NCCL lecture,
 * with nccl4j doing what PyTorch's DDP does for it.
 *
 * <p>The model has one parameter, {@code w = 5}, and computes {@code y = w * 7 * x}. Rank r feeds
 * {@code x = r}, so its local gradient is {@code dy/dw = 7 * x}: 0 on rank 0, 7 on rank 1. The gradients are
 * averaged across ranks on the GPUs as float32, and every rank must then hold the mean,
 * {@code 7 * (n - 1) / 2} for n ranks (3.5 for two). Every rank then takes the same SGD step,
 * {@code w = w - lr * grad}, and an all-gather of {@code w} checks that all replicas still agree.
 *
 * <p>How the mean is taken, by {@code --average}:
 * <ul>
 *   <li>{@code sum} (default): {@code ncclAllReduce} with {@link ReduceOp#SUM} on the GPU, then a division by
 *       the world size on the host, which is what {@code ddp_simple.py} describes ("sum + divide by 2"). The sum of the
 *       integers 7r is exact in float32, so the result must equal the expected mean exactly;</li>
 *   <li>{@code avg}: {@code ncclAllReduce} with {@link ReduceOp#AVG} (NCCL 2.10+): NCCL divides. Its float
 *       arithmetic may round differently, so the check allows a few units in the last place.</li>
 * </ul>
 *
 * <pre>
 * DdpSimple [--average sum|avg] [--lr 0.1]
 * scripts/nccl4j-run -np 2 DdpSimple        one process per rank (also under mpirun, srun, torchrun)
 * java -cp ... org.nccl4j.examples.DdpSimple   one process driving every local GPU, rank i on GPU i
 * </pre>
 * Prints, for each rank, the forward pass, the local gradient, the averaged gradient (expected vs got), the
 * SGD step and the replicas' {@code w} (expected vs got). Exits 0 when every check passed, 1 when one failed,
 * 2 when there is no GPU or NCCL.
 */
public final class DdpSimple {
    /** The parameter's initial value. */
    static final float W0 = 5.0f;
    /** The learning rate when {@code --lr} is not given. */
    static final float DEFAULT_LR = 0.1f;

    private DdpSimple() {
    }

    /**
     * Runs the example.
     *
     * @param args see the class documentation
     */
    public static void main(String[] args) {
        Options o = Args.parseOrExit(new Options(), args);
        System.exit(ExitStatus.of("DdpSimple", () -> run(o.average == Average.avg, o.lr)));
    }

    // ---- the model and its expected values (pure; tested on the CPU in DdpSimpleTest)

    /** The input of rank {@code rank}: {@code x = rank}. */
    static float input(int rank) {
        return rank;
    }

    /** The forward pass, {@code y = w * 7 * x}. */
    static float forward(float w, float x) {
        return w * 7.0f * x;
    }

    /** The local gradient, {@code dy/dw = 7 * x}. */
    static float localGradient(float x) {
        return 7.0f * x;
    }

    /** The mean of the local gradients of {@code n} ranks: {@code 7 * (n - 1) / 2}, exact in float32. */
    static float expectedGradient(int n) {
        return 7.0f * (n - 1) / 2.0f;
    }

    /** One SGD step: {@code w - lr * grad}. */
    static float sgdStep(float w, float lr, float grad) {
        return w - lr * grad;
    }

    /**
     * How far the averaged gradient may be from {@link #expectedGradient}: 0 for SUM then host division (the
     * float32 sum of small integers and one correctly rounded division are exact); for NCCL's AVG, which may
     * pre-multiply each input by 1/n, one rounding per rank of the largest input (7 (n-1)) and of the sum.
     */
    static float tolerance(int n, boolean avg) {
        return avg ? (n + 1) * Math.ulp(7.0f * Math.max(1, n - 1)) : 0.0f;
    }

    static boolean matches(float expected, float got, float tolerance) {
        return Math.abs(got - expected) <= tolerance;
    }

    // ---- the run

    static int run(boolean avg, float lr) {
        List<Communicator> comms = Examples.communicators();
        if (comms.isEmpty()) {
            System.err.println("DdpSimple: no CUDA device found.");
            return 2;
        }
        int bad = 0;
        try (Examples.Closer closer = new Examples.Closer()) {
            closer.addAll(comms);
            int n = comms.get(0).size();
            List<Stream> streams = new ArrayList<>();
            List<DeviceBuffer> grads = new ArrayList<>();
            List<DeviceBuffer> ws = new ArrayList<>();
            List<DeviceBuffer> replicas = new ArrayList<>();
            for (Communicator c : comms) {
                streams.add(closer.add(Stream.create(c.device())));
                grads.add(closer.add(DeviceBuffer.allocate(c.device(), 1, DataType.FLOAT32)));
                ws.add(closer.add(DeviceBuffer.allocate(c.device(), 1, DataType.FLOAT32)));
                replicas.add(closer.add(DeviceBuffer.allocate(c.device(), n, DataType.FLOAT32)));
            }
            if (comms.get(0).rank() == 0) {
                System.out.println("DdpSimple: " + n + " ranks; averaging the gradient with "
                        + (avg ? "all-reduce AVG of float32 on the GPU"
                               : "all-reduce SUM of float32 on the GPU, then / " + n + " on the host"));
            }
            // forward and backward, each rank on its own input
            for (int k = 0; k < comms.size(); k++) {
                Communicator c = comms.get(k);
                float x = input(c.rank());
                System.out.println(Examples.who(c) + "y=w*7*x: " + forward(W0, x) + "=" + W0 + "*7*" + x);
                System.out.println(Examples.who(c) + "dy/dw=7*x: " + localGradient(x));
                grads.get(k).copyFrom(new float[] {localGradient(x)});
            }
            // what DDP does after backward: average the gradient across ranks
            ReduceOp op = avg ? ReduceOp.AVG : ReduceOp.SUM;
            Examples.grouped(comms, k -> comms.get(k).allReduce(grads.get(k), DataType.FLOAT32, op, streams.get(k)));
            float expected = expectedGradient(n);
            float tol = tolerance(n, avg);
            float[] newW = new float[comms.size()];
            for (int k = 0; k < comms.size(); k++) {
                Communicator c = comms.get(k);
                streams.get(k).synchronize();
                float reduced = grads.get(k).copyTo(new float[1])[0];
                float got = avg ? reduced : reduced / n;
                boolean ok = matches(expected, got, tol);
                bad += ok ? 0 : 1;
                System.out.println(Examples.who(c) + "reduced dy/dw: expected " + expected + ", got " + got
                        + (avg ? "" : " (sum " + reduced + " / " + n + ")") + (ok ? "" : "  WRONG"));
                // the optimizer step, the same on every rank because the gradient is
                newW[k] = sgdStep(W0, lr, got);
                System.out.println(Examples.who(c) + "SGD step: w = " + W0 + " - " + lr + " * " + got + " = "
                        + newW[k]);
                ws.get(k).copyFrom(new float[] {newW[k]});
            }
            // every replica must hold the same w: gather them all
            Examples.grouped(comms, k -> comms.get(k).allGather(ws.get(k), replicas.get(k), DataType.FLOAT32,
                    streams.get(k)));
            float expectedW = sgdStep(W0, lr, expected);
            float tolW = Math.abs(lr) * tol + (tol > 0 ? Math.ulp(W0) : 0);
            for (int k = 0; k < comms.size(); k++) {
                Communicator c = comms.get(k);
                streams.get(k).synchronize();
                float[] all = replicas.get(k).copyTo(new float[n]);
                boolean ok = true;
                for (float v : all) {
                    ok &= matches(expectedW, v, tolW) && v == all[0];
                }
                bad += ok ? 0 : 1;
                System.out.println(Examples.who(c) + "w of every rank after the step: expected " + expectedW
                        + " on all " + n + ", got " + Arrays.toString(all) + (ok ? "" : "  WRONG"));
            }
        }
        for (Communicator c : comms) {
            System.out.println(Examples.who(c) + (bad == 0 ? "DdpSimple: PASSED" : "DdpSimple: FAILED"));
        }
        return bad == 0 ? 0 : 1;
    }

    /** How the gradients are averaged. */
    enum Average {
        /** a sum, divided on the host */
        sum,
        /** NCCL's AVG */
        avg
    }

    /** The command line ({@code --help} lists it). */
    @Command(name = "DdpSimple", mixinStandardHelpOptions = true, versionProvider = Args.Version.class,
            description = "The seed's two-layer DDP example, launched per rank; checks the averaged gradients.")
    static final class Options {
        @Option(names = "--average", paramLabel = "sum|avg", description = "Average with a sum divided on the host, "
                + "or NCCL's AVG (default: ${DEFAULT-VALUE}).")
        Average average = Average.sum;
        @Option(names = "--lr", paramLabel = "X", description = "Learning rate (default: ${DEFAULT-VALUE}).")
        float lr = DEFAULT_LR;
    }
}
