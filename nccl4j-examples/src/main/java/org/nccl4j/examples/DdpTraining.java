package org.nccl4j.examples;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.bytedeco.cuda.global.cublas;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.cuda.global.curand;
import org.bytedeco.cuda.global.nvrtc;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;
import org.nccl4j.CommConfig;
import org.nccl4j.Communicator;
import org.nccl4j.Cuda;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.Event;
import org.nccl4j.GradientBuckets;
import org.nccl4j.Nccl;
import org.nccl4j.Stream;
import org.nccl4j.diagnostics.StepStats;
import org.nccl4j.jni.NcclUnavailableException;
import org.nccl4j.launch.LaunchInfo;

/**
 * The training loop of GPU MODE lecture 17's {@code ddp_example.py} in Java: data-parallel SGD of
 * {@code Linear(4000, 4000) -> ReLU -> Linear(4000, 4000) -> ReLU -> Linear(4000, 4000)} (float32, TF32 off)
 * with MSE loss against random labels, batch 1000 per rank, lr 0.001, fresh inputs and labels drawn on the GPU
 * each step. One process per rank ({@link Communicator#fromEnvironment()}: mpirun, Slurm, torchrun-style
 * variables); {@code --no-comm} runs the same loop on one GPU without any communication, as the baseline.
 *
 * <pre>
 * mpirun -np 2 --bind-to none -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE \
 *     java -cp "$CP" org.nccl4j.examples.DdpTraining [--steps 30] [--bucket-cap-mb 25] [--trace FILE] [--seed N]
 *     [--symmetric] [--cta-policy default|efficiency|zero] [--comm-priority high] [--overlap-optimizer]
 *     [--split-last K]
 * java -cp "$CP" org.nccl4j.examples.DdpTraining --no-comm
 * </pre>
 * {@code --symmetric} puts the buckets in symmetric windows ({@link GradientBuckets.Builder#symmetric}) and sums
 * them (NCCL's symmetric kernels take sum only), folding 1/ranks into the step size; {@code --cta-policy} sets the
 * communicator's CTA policy ({@link CommConfig.Builder#ctaPolicy(org.nccl4j.CtaPolicy)}); {@code --comm-priority high}
 * runs the all-reduces on a stream of CUDA's greatest priority, so that NCCL's blocks are scheduled before the
 * backward GEMMs' waiting ones; {@code --overlap-optimizer} updates each bucket's parameters once its all-reduce is
 * done ({@link GradientBuckets#await}); {@code --split-last K} computes dW1, the last gradient of backward and so the
 * all-reduce that no GEMM hides, in K column chunks, each its own bucket ({@link Mlp}), so that only the last chunk's
 * all-reduce is left after backward.
 *
 * <h2>What runs where</h2>
 * Forward and backward are cuBLAS calls and three small NVRTC-compiled kernels, the data comes from cuRAND
 * ({@link GpuOps}); the model's math and GEMM shapes are documented in {@link Mlp}. All of that is enqueued on
 * one compute stream. The weights are drawn from the same seed on every rank and then broadcast from rank 0,
 * as DDP does. The six gradients (dW1, db1, dW2, db2, dW3, db3, registered in forward order) live in
 * {@link GradientBuckets}: in backward, layer 3 first, each layer writes dW and db into their bucket views
 * and marks them ready, which launches a bucket's all-reduce (average) on the communication stream as soon as
 * its last gradient is written; then the layer computes the gradient of its input, the GEMM the all-reduce
 * overlaps. {@code finish} makes the compute stream wait for every all-reduce before the SGD update.
 *
 * <h2>What it prints</h2>
 * Per step (rank 0): loss and step time from CUDA events. Then the median step time over steps 3..N, the
 * fraction of all-reduce time hidden behind backward (per measured step and bucket, the part of the
 * all-reduce interval before the end of backward, over the total all-reduce time), each bucket's start
 * relative to the end of backward, a weight checksum per rank (FNV-1a of the weights' bits), all-gathered
 * and compared ("expected ... got ..."), and one line {@code RESULT impl=nccl4j mode=ddp|single ...} for
 * scripts. Each rank writes a Chrome/Perfetto trace of the measured steps (forward, backward per layer,
 * optimizer on the "compute" track, each bucket's all-reduce on the "nccl" track).
 *
 * <p>Exit status: 0 when every loss is finite and every rank holds bit-identical weights; 1 otherwise; 2 when
 * there is no GPU, CUDA library or NCCL; 2 also for a bad command line.
 */
public final class DdpTraining {
    private static final String[] PARAM_NAMES = {"W1", "b1", "W2", "b2", "W3", "b3"};

    // the events of a step, recorded on the compute stream in this order
    private static final int E_START = 0;
    private static final int E_DATA = 1;
    private static final int E_FORWARD = 2;
    private static final int E_BWD3 = 3;
    private static final int E_BWD2 = 4;
    private static final int E_BWD1 = 5;
    private static final int E_OPT = 6;
    private static final int E_END = 7;
    private static final int EVENTS = 8;

    private static final int ALIGN_FLOATS = 64; // 256 bytes between parameters in the flat weight buffer

    private final DdpOptions o;
    private final Examples.Closer resources = new Examples.Closer();

    private DdpTraining(DdpOptions o) {
        this.o = o;
    }

    /**
     * Runs the training.
     *
     * @param args see the class documentation
     */
    public static void main(String[] args) {
        DdpOptions options;
        try {
            options = DdpOptions.parse(args);   // --help and --version answered there
        } catch (IllegalArgumentException e) {
            System.err.println("DdpTraining: " + e.getMessage());
            System.exit(2);
            return;
        }
        int status;
        try {
            status = new DdpTraining(options).run();
        } catch (NcclUnavailableException e) {
            System.err.println("DdpTraining: NCCL is not available on this machine.\n" + e.getMessage());
            status = 2;
        } catch (LibraryUnavailable e) {
            System.err.println("DdpTraining: " + e.getMessage());
            status = 2;
        } catch (Throwable t) {
            // a rank that fails must end its process, so that the launcher ends the others instead of leaving
            // them waiting in a collective
            System.err.println("DdpTraining failed:");
            t.printStackTrace();
            status = 1;
        }
        System.out.flush();
        System.exit(status);
    }

    /** A CUDA library (or the GPU itself) is missing: exit status 2, like the other examples. */
    static final class LibraryUnavailable extends RuntimeException {
        LibraryUnavailable(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Loads the JNI libraries of cudart, cuBLAS, cuRAND and NVRTC now, before NCCL is initialized, so that a
     * missing library stops every rank at once with a clear message instead of a rank hanging in a collective.
     */
    static void loadCudaLibraries() {
        for (Class<?> c : new Class<?>[] {cudart.class, cublas.class, curand.class, nvrtc.class}) {
            try {
                Loader.load(c);
            } catch (UnsatisfiedLinkError | NoClassDefFoundError | ExceptionInInitializerError e) {
                throw new LibraryUnavailable("cannot load the JavaCPP bindings of " + c.getSimpleName() + ": " + e
                        + "\nDdpTraining needs an NVIDIA driver and, from CUDA 13, libcudart.so.13, libcublas.so.13,"
                        + " libcublasLt.so.13, libcurand.so.10 and libnvrtc.so.13 on LD_LIBRARY_PATH (for example"
                        + " /usr/local/cuda/lib64), and the JNI libraries libjnicudart.so, libjnicublas.so,"
                        + " libjnicurand.so and libjninvrtc.so in the CUDA presets jar (scripts/gpu-bundle.sh keeps"
                        + " them).", e);
            }
        }
    }

    private <T extends AutoCloseable> T track(T resource) {
        return resources.add(resource);
    }

    /** A pointer at an address (device or host), owning nothing. */
    private static final class Address extends Pointer {
        Address(long address) {
            this.address = address;
        }
    }

    private static void deviceSynchronize() {
        int rc = cudart.cudaDeviceSynchronize();
        if (rc != 0) {
            throw new IllegalStateException("cudaDeviceSynchronize failed: cudaError " + rc + " ("
                    + cudart.cudaGetErrorString(rc).getString() + ")");
        }
    }

    private int run() {
        loadCudaLibraries();
        LaunchInfo launch = LaunchInfo.detect();
        Communicator comm = null;
        boolean failed = false;
        try {
            int rank;
            int world;
            int device;
            if (o.noComm) {
                rank = launch.rank();
                world = 1;
                device = launch.device();
                Cuda.setDevice(device);
            } else {
                comm = track(o.ctaPolicy == null ? Communicator.fromEnvironment()
                        : Communicator.fromEnvironment(CommConfig.builder().ctaPolicy(o.ctaPolicy).build()));
                rank = comm.rank();
                world = comm.size();
                device = comm.device();
            }
            return train(comm, rank, world, device);
        } catch (Throwable t) {
            failed = true;
            // peers may be waiting in a collective: abort (no waiting) rather than close, and leave the rest to
            // the process exit, as freeing memory would wait for kernels that may never end
            if (comm != null) {
                try {
                    comm.abort();
                } catch (Throwable s) {
                    t.addSuppressed(s);
                }
            }
            throw t;
        } finally {
            if (!failed) {
                closeAll();
            }
        }
    }

    private void closeAll() {
        resources.closeAfter(DdpTraining::deviceSynchronize);
    }

    private int train(Communicator comm, int rank, int world, int device) {
        final boolean ddp = comm != null;
        final boolean lead = rank == 0;
        final int[] dims = {o.size, o.size, o.size, o.size};
        final int batch = o.batch;
        final int steps = o.steps;
        String mode = ddp ? "ddp" : "single";
        if (lead) {
            System.out.printf(Locale.ROOT, "DdpTraining: mode %s, %d rank(s), model Linear(%d,%d)-ReLU-Linear(%d,%d)"
                    + "-ReLU-Linear(%d,%d) float32 (TF32 off), batch %d per rank, MSE, SGD lr %s, %d steps, %s%n",
                    mode, world, dims[0], dims[1], dims[1], dims[2], dims[2], dims[3], batch, o.lr, steps,
                    ddp ? "bucket cap " + o.bucketCapMB + " MB" + (o.symmetric ? ", symmetric buckets (sum, lr / ranks)"
                    : "") + (o.ctaPolicy == null ? "" : ", CTA policy " + o.ctaPolicy) + (o.commPriority.equals("high")
                    ? ", all-reduce stream at high priority" : "") + (o.overlapOptimizer ? ", optimizer per bucket"
                    : "") + (o.splitLast > 1 ? ", dW1 in " + o.splitLast + " chunks" : "") : "no communication");
            if (ddp) {
                System.out.println("NCCL " + Nccl.version() + " (" + Nccl.library().path() + ")");
            }
        }
        System.out.println("[rank " + rank + "] device " + device);

        // ---- buffers
        Stream compute = track(Stream.create(device));
        long[] off = Mlp.paramOffsets(dims, ALIGN_FLOATS);
        DeviceBuffer weights = track(DeviceBuffer.allocate(device, off[Mlp.PARAMS], DataType.FLOAT32));
        long[] params = new long[Mlp.PARAMS];
        final int chunks = ddp ? o.splitLast : 1;   // dW1's column chunks, gradients 0..chunks-1 (Mlp)
        long[] grads = new long[Mlp.PARAMS + chunks - 1];
        for (int i = 0; i < Mlp.PARAMS; i++) {
            params[i] = weights.address() + 4 * off[i];
        }
        GradientBuckets buckets = null;
        if (ddp) {
            GradientBuckets.Builder b = GradientBuckets.builder(comm).bucketCapMB(o.bucketCapMB);
            if (o.symmetric) {
                b.symmetric(true).average(false);   // symmetric kernels sum only: 1/ranks goes into the step size
            }
            if (o.commPriority.equals("high")) {
                b.stream(prioritized(device));
            }
            for (int j = 0; j < chunks; j++) {
                b.add((long) Mlp.chunkColumns(dims[0], chunks, j) * dims[1]);
            }
            for (int i = 1; i < Mlp.PARAMS; i++) {
                b.add(Mlp.paramCount(dims, i));
            }
            buckets = track(b.build());
            for (int g = 0; g < grads.length; g++) {
                grads[g] = buckets.gradient(g).address();
            }
        } else {
            DeviceBuffer g = track(DeviceBuffer.allocate(device, off[Mlp.PARAMS], DataType.FLOAT32));
            for (int i = 0; i < Mlp.PARAMS; i++) {
                grads[i] = g.address() + 4 * off[i];
            }
        }
        long[] act = new long[Mlp.LAYERS + 1];
        for (int l = 0; l <= Mlp.LAYERS; l++) {
            act[l] = track(DeviceBuffer.allocate(device, (long) dims[l] * batch, DataType.FLOAT32)).address();
        }
        long scratch1 = track(DeviceBuffer.allocate(device, (long) dims[1] * batch, DataType.FLOAT32)).address();
        long scratch2 = track(DeviceBuffer.allocate(device, (long) dims[2] * batch, DataType.FLOAT32)).address();
        long labels = track(DeviceBuffer.allocate(device, (long) dims[3] * batch, DataType.FLOAT32)).address();
        DeviceBuffer onesBuf = track(DeviceBuffer.allocate(device, batch, DataType.FLOAT32));
        float[] onesHost = new float[batch];
        Arrays.fill(onesHost, 1f);
        onesBuf.copyFrom(onesHost);
        long normDevice = track(DeviceBuffer.allocate(device, 1, DataType.FLOAT32)).address();
        Address normDevicePtr = new Address(normDevice);
        FloatPointer normHost = track(new FloatPointer(1));
        // cudaMemcpy from pageable memory may return before the copy lands, and runs on the legacy stream,
        // which the (non-blocking) compute stream does not wait for: wait here, once.
        deviceSynchronize();

        Mlp mlp = new Mlp(dims, batch, params, grads, act, scratch1, scratch2, labels, onesBuf.address(), normDevice);
        GpuOps ops = track(new GpuOps(device, compute.handle(), Seeds.weights(o.seed), Seeds.data(o.seed, rank)));
        if (lead) {
            System.out.println("kernels: " + ops.kernelTarget());
        }

        // ---- identical weights everywhere: same seed, then rank 0's copy broadcast, as DDP does
        mlp.initWeights(ops);
        if (ddp) {
            comm.broadcast(weights, DataType.FLOAT32, 0, compute);
        }
        compute.synchronize();

        String[] bucketNames = new String[0];
        if (ddp) {
            bucketNames = new String[buckets.bucketCount()];
            for (int k = 0; k < bucketNames.length; k++) {
                List<String> members = new ArrayList<>();
                for (int g = 0; g < grads.length; g++) {
                    if (buckets.bucketOf(g) == k) {
                        int p = mlp.paramOf(g);
                        members.add("d" + PARAM_NAMES[p] + (p == 0 && chunks > 1 ? "[" + g + "/" + chunks + "]" : ""));
                    }
                }
                bucketNames[k] = String.format(Locale.ROOT, "bucket %d: %s (%.2f MiB)", k, String.join("+", members),
                        buckets.bucketBytes(k) / 1048576.0);
                if (lead) {
                    System.out.println("all-reduce " + bucketNames[k]);
                }
            }
        }

        // ---- the loop
        final float stepSize = ddp && o.symmetric ? o.lr / world : o.lr;   // summed gradients: the mean's step
        Event[] ev = new Event[EVENTS];
        for (int e = 0; e < EVENTS; e++) {
            ev[e] = track(Event.create(device));
        }
        Event origin = track(Event.create(device));
        final int first = DdpOptions.FIRST_MEASURED_STEP;
        final int measured = Math.max(0, steps - first + 1);
        final int nb = bucketNames.length;
        double[] stepMs = new double[steps];
        double[] loss = new double[steps];
        double[][] t = new double[measured][EVENTS];      // event times from origin, measured steps
        double[][] arStart = new double[measured][nb];    // all-reduce intervals from origin
        double[][] arEnd = new double[measured][nb];
        final GradientBuckets gb = buckets;
        Mlp.GradientReady ready = ddp ? i -> gb.ready(i, compute) : i -> { };

        for (int s = 0; s < steps; s++) {
            int m = s - (first - 1); // index among measured steps, < 0 before
            if (m == 0) {
                origin.record(compute);
            }
            ev[E_START].record(compute);
            mlp.generateBatch(ops);
            ev[E_DATA].record(compute);
            mlp.forward(ops);
            mlp.loss(ops);
            ev[E_FORWARD].record(compute);
            for (int l = Mlp.LAYERS; l >= 1; l--) {
                mlp.backward(ops, l, ready);
                ev[E_BWD3 + (Mlp.LAYERS - l)].record(compute);
            }
            if (ddp && o.overlapOptimizer) {
                ev[E_OPT].record(compute);   // the optimizer starts with the first bucket's wait
                for (int k = 0; k < gb.bucketCount(); k++) {
                    gb.await(k, compute);
                    for (int g = 0; g < mlp.gradientCount(); g++) {
                        if (gb.bucketOf(g) == k) {
                            mlp.sgd(ops, g, stepSize);
                        }
                    }
                }
                gb.finish(compute);
            } else {
                if (ddp) {
                    gb.finish(compute);
                }
                ev[E_OPT].record(compute);
                mlp.sgd(ops, stepSize);
            }
            ev[E_END].record(compute);
            ev[E_END].synchronize();

            stepMs[s] = ev[E_END].elapsedSince(ev[E_START]);
            check(cudart.cudaMemcpy(normHost, normDevicePtr, 4, cudart.cudaMemcpyDeviceToHost), "cudaMemcpy(loss)");
            loss[s] = mlp.lossFromNorm(normHost.get(0));
            if (m >= 0) {
                for (int e = 0; e < EVENTS; e++) {
                    t[m][e] = ev[e].elapsedSince(origin);
                }
                for (int k = 0; k < nb; k++) {
                    float[] se = gb.timing(k, origin);
                    arStart[m][k] = se[0];
                    arEnd[m][k] = se[1];
                }
            }
            if (lead) {
                System.out.printf(Locale.ROOT, "step %3d/%d  loss %.6f  %8.3f ms%s%n", s + 1, steps, loss[s], stepMs[s],
                        m >= 0 ? "" : "  (warm-up, not in the median)");
            }
        }
        compute.synchronize();
        if (ddp) {
            gb.communicationStream().synchronize();
            comm.checkAsyncError();
        }

        // ---- results
        double median = StepStats.medianFrom(stepMs, first);
        double[] bwdEnd = new double[measured];
        for (int m = 0; m < measured; m++) {
            bwdEnd[m] = t[m][E_BWD1];
        }
        double hidden = ddp ? Overlap.hiddenFraction(arStart, arEnd, bwdEnd) : Double.NaN;
        if (lead) {
            if (measured > 0) {
                System.out.printf(Locale.ROOT, "median step time over steps %d..%d: %.3f ms (%s)%n", first, steps,
                        median, breakdown(t));
            } else {
                System.out.printf(Locale.ROOT, "median step time: n/a (fewer than %d steps)%n", first);
            }
            if (ddp && measured > 0) {
                System.out.printf(Locale.ROOT, "fraction of all-reduce time hidden behind backward: %.3f%n", hidden);
                for (int k = 0; k < nb; k++) {
                    double rel = Overlap.medianStartRelative(arStart, bwdEnd, k);
                    System.out.printf(Locale.ROOT, "  %s: starts %.3f ms %s backward end, takes %.3f ms (medians)%n",
                            bucketNames[k], Math.abs(rel), rel <= 0 ? "before" : "after",
                            Overlap.medianDuration(arStart, arEnd, k));
                }
            }
        }
        writeTrace(rank, world, ddp, t, arStart, arEnd, bucketNames);

        boolean finite = true;
        for (double l : loss) {
            finite &= Double.isFinite(l);
        }
        if (!finite) {
            System.out.println("[rank " + rank + "] FAILED: a loss is not finite: " + Arrays.toString(loss));
        }

        // ---- every rank must hold the same weights, bit for bit
        long own = weightChecksum(weights, off, dims);
        boolean identical = true;
        if (ddp) {
            DeviceBuffer send = track(DeviceBuffer.allocate(device, 1, DataType.INT64));
            DeviceBuffer recv = track(DeviceBuffer.allocate(device, world, DataType.INT64));
            send.copyFrom(new long[] {own});
            deviceSynchronize();
            comm.allGather(send, recv, DataType.INT64, compute);
            compute.synchronize();
            long[] all = recv.copyTo(new long[world]);
            StringBuilder list = new StringBuilder();
            for (int r = 0; r < world; r++) {
                identical &= all[r] == all[0];
                list.append(r == 0 ? "" : ", ").append(Checksum.hex(all[r]));
            }
            identical &= all[rank] == own;
            System.out.printf(Locale.ROOT, "[rank %d] weights checksum: expected %s (rank 0), got %s; all ranks [%s]:"
                    + " %s%n", rank, Checksum.hex(all[0]), Checksum.hex(own), list,
                    identical ? "identical" : "DIFFERENT");
        } else {
            System.out.println("[rank " + rank + "] weights checksum: " + Checksum.hex(own) + " (one GPU, nothing to"
                    + " compare)");
        }
        if (lead) {
            System.out.printf(Locale.ROOT, "RESULT impl=nccl4j mode=%s ranks=%d steps=%d median_ms=%.3f"
                    + " hidden_fraction=%s buckets=%d loss_first=%.6f loss_last=%.6f weights=%s%n", mode, world, steps,
                    median, ddp ? String.format(Locale.ROOT, "%.3f", hidden) : "na", nb, loss[0], loss[steps - 1],
                    !ddp ? "single" : identical ? "identical" : "different");
        }
        return finite && identical ? 0 : 1;
    }

    /**
     * A non-blocking stream at CUDA's greatest priority ({@code cudaStreamCreateWithPriority}), for the all-reduces:
     * a block of NCCL's kernel is then scheduled before the waiting blocks of the backward GEMMs.
     */
    private Stream prioritized(int device) {
        int[] least = new int[1];
        int[] greatest = new int[1];
        check(cudart.cudaDeviceGetStreamPriorityRange(least, greatest), "cudaDeviceGetStreamPriorityRange");
        org.bytedeco.cuda.cudart.CUstream_st s = new org.bytedeco.cuda.cudart.CUstream_st();
        check(cudart.cudaStreamCreateWithPriority(s, cudart.cudaStreamNonBlocking, greatest[0]),
                "cudaStreamCreateWithPriority");
        resources.add(() -> check(cudart.cudaStreamDestroy(s), "cudaStreamDestroy"));   // after its users
        return Stream.wrap(s.address(), device);
    }

    private static void check(int cudaStatus, String what) {
        if (cudaStatus != 0) {
            throw new IllegalStateException(what + " failed: cudaError " + cudaStatus + " ("
                    + cudart.cudaGetErrorString(cudaStatus).getString() + ")");
        }
    }

    /** Medians of the phases of the measured steps. */
    private static String breakdown(double[][] t) {
        String[] names = {"data", "forward+loss", "backward L3", "backward L2", "backward L1", "wait all-reduce",
            "optimizer"};
        StringBuilder sb = new StringBuilder();
        for (int p = 0; p < names.length; p++) {
            double[] d = new double[t.length];
            for (int m = 0; m < t.length; m++) {
                d[m] = t[m][p + 1] - t[m][p];
            }
            sb.append(p == 0 ? "" : ", ").append(names[p]).append(' ')
                    .append(String.format(Locale.ROOT, "%.3f", StepStats.median(d)));
        }
        return sb.append(" ms").toString();
    }

    private void writeTrace(int rank, int world, boolean ddp, double[][] t, double[][] arStart, double[][] arEnd,
            String[] bucketNames) {
        ChromeTrace trace = new ChromeTrace(rank, (ddp ? "nccl4j DDP rank " : "nccl4j single GPU rank ") + rank);
        for (int m = 0; m < t.length; m++) {
            int step = m + DdpOptions.FIRST_MEASURED_STEP;
            double[] e = t[m];
            trace.complete("data (cuRAND)", "compute", e[E_START], e[E_DATA], step);
            trace.complete("forward + loss", "compute", e[E_DATA], e[E_FORWARD], step);
            trace.complete("backward layer 3", "compute", e[E_FORWARD], e[E_BWD3], step);
            trace.complete("backward layer 2", "compute", e[E_BWD3], e[E_BWD2], step);
            trace.complete("backward layer 1", "compute", e[E_BWD2], e[E_BWD1], step);
            if (ddp) {
                trace.complete("wait for all-reduce", "compute", e[E_BWD1], e[E_OPT], step);
            }
            trace.complete("optimizer (SGD)", "compute", e[E_OPT], e[E_END], step);
            for (int k = 0; k < bucketNames.length; k++) {
                trace.complete("all-reduce " + bucketNames[k], "nccl", arStart[m][k], arEnd[m][k], step);
            }
        }
        Path file = Path.of(o.traceFile(rank, world));
        try {
            trace.write(file);
            System.out.println("[rank " + rank + "] trace: " + file.toAbsolutePath() + " (" + trace.events()
                    + " events, steps " + DdpOptions.FIRST_MEASURED_STEP + ".." + o.steps + ")");
        } catch (IOException e) {
            System.err.println("[rank " + rank + "] could not write the trace " + file + ": " + e);
        }
    }

    /** FNV-1a over the bits of the six parameters, in order, as they lie in device memory. */
    private static long weightChecksum(DeviceBuffer weights, long[] off, int[] dims) {
        ByteBuffer host = weights.toByteBuffer();
        long h = Checksum.OFFSET_BASIS;
        for (int i = 0; i < Mlp.PARAMS; i++) {
            int from = Math.toIntExact(4 * off[i]);
            int to = Math.toIntExact(4 * (off[i] + Mlp.paramCount(dims, i)));
            h = Checksum.update(h, host.duplicate().limit(to).position(from));
        }
        return h;
    }
}
