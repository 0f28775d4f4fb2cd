package org.nccl4j.examples;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.SizeTPointer;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.Event;
import org.nccl4j.Nccl;
import org.nccl4j.ParameterShards;
import org.nccl4j.Stream;
import org.nccl4j.diagnostics.StepStats;
import org.nccl4j.jni.NcclUnavailableException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Fully sharded data-parallel training ({@link ParameterShards}, ZeRO-3 as PyTorch's FSDP2) of N x
 * {@code Linear(H, H) + ReLU} (float32, TF32 off) with MSE loss and Adam run as a device kernel, launched per rank as
 * {@link DdpTraining} is. The defaults, 80 layers of 8192 (5.37 B parameters: 86 GB of parameters, gradients and Adam
 * state in float32), exceed one 80 GB GPU; sharded over 2 ranks each holds half of it.
 *
 * <pre>
 * mpirun -np 2 --bind-to none -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE \
 *     java -cp "$CP" org.nccl4j.examples.ShardedTraining [--layers 80] [--size 8192] [--batch 1024] [--steps 20]
 *     [--lr 0.0001] [--seed N] [--mode zero3|zero2|zero1] [--gathered-buffers K] [--gradient-buffers K]
 *     [--no-optimizer-overlap] [--trace FILE] [--no-checksum]
 * </pre>
 *
 * <h2>The model and the step</h2>
 * Layer l (groups 0..N-1, one {@link ParameterShards} group each) holds W_l [H x H] (column-major, as cuBLAS) then
 * b_l [H]: {@code A_(l+1) = relu(W_l A_l + b_l)}, A_0 = X ~ N(0, 1) [H x B], fresh each step; labels Y ~ N(0.5, 0.25^2)
 * fresh each step; loss {@code |A_N - Y|^2 / (H B)}. Forward gathers each layer's parameters
 * ({@link ParameterShards#gather}, prefetching the next); backward gathers again in reverse, writes dW and db into
 * the layer's full gradient buffer and reduce-scatters it (average over ranks) before computing the gradient of the
 * layer's input, which the reduce-scatter overlaps. Adam (lr, betas 0.9 and 0.999, eps 1e-8, as torch.optim.Adam)
 * updates each layer's shard on the communication stream right behind the layer's reduce-scatter, so the updates
 * overlap the rest of backward too ({@link ParameterShards.Builder#overlapOptimizer}); with
 * {@code --no-optimizer-overlap}, {@link ParameterShards#finish} runs them after backward instead. The weights
 * are drawn as nn.Linear draws them, U(-1/sqrt(H), 1/sqrt(H)), from one seed on every rank; each rank keeps its shard.
 *
 * <h2>Modes</h2>
 * {@code zero3} (default): 2 gathered-parameter buffers, 2 full-gradient buffers. {@code zero2}: as many gathered
 * buffers as layers (full parameters kept through the step; gradients and Adam state sharded). {@code zero1}: full
 * parameters and full gradients kept; only Adam state sharded. {@code --gathered-buffers} and
 * {@code --gradient-buffers} override the mode's counts. {@code ddp}, the baseline: nothing sharded
 * ({@link ReplicatedLayers}): every rank holds the whole model, its gradients and Adam state, and each layer's
 * gradient is all-reduced (average) as backward makes it, Adam following it as in the other modes.
 *
 * <h2>What it prints</h2>
 * Every line of a rank starts with {@code [rank r]}. Per step (each rank): its loss and step time. At the end, per
 * rank: the median step time over steps 3..N and its parts, the fraction of communication time hidden behind compute
 * (1 - the time the compute stream waited for a gather, a gradient buffer or a reduce-scatter, over the time the
 * all-gathers and reduce-scatters took), the device memory (the bytes this rank allocated, at their peak, and
 * cudaMemGetInfo's used memory of the device), a checksum of the whole model gathered on every rank (FNV-1a over
 * 64-bit words; all-gathered and compared), and one line for scripts:
 * {@code [rank r] RESULT impl=nccl4j mode=zero3 rank=r ranks=n ... median_ms=X ... peak_alloc_gib=X ...}.
 *
 * <p>Exit status: 0 when every loss is finite and every rank gathered the same weights; 1 otherwise; 2 when there is
 * no GPU, CUDA library or NCCL, or for a bad command line.
 */
public final class ShardedTraining {
    /** The forms of sharding, chosen by {@code --mode}. */
    enum Mode { ZERO3, ZERO2, ZERO1, DDP }

    static final float BETA1 = 0.9f;
    static final float BETA2 = 0.999f;
    static final float EPS = 1e-8f;

    private final Options o;
    private final Examples.Closer resources = new Examples.Closer();
    private long allocated;
    private long peakAllocated;
    private String tag = "";

    private ShardedTraining(Options o) {
        this.o = o;
    }

    /**
     * Runs the training.
     *
     * @param args see the class documentation
     */
    public static void main(String[] args) {
        Options options = Args.parseOrExit(new Options(), args);
        try {
            options.check();
        } catch (Args.UsageException e) {
            System.err.println("ShardedTraining: " + e.getMessage());
            System.exit(Args.USAGE);
            return;
        }
        int status;
        try {
            status = new ShardedTraining(options).run();
        } catch (NcclUnavailableException e) {
            System.err.println("ShardedTraining: NCCL is not available on this machine.\n" + e.getMessage());
            status = 2;
        } catch (DdpTraining.LibraryUnavailable e) {
            System.err.println("ShardedTraining: " + e.getMessage());
            status = 2;
        } catch (Throwable t) {
            System.err.println("ShardedTraining failed:");
            t.printStackTrace();
            status = 1;
        }
        System.out.flush();
        System.exit(status);
    }

    // ---------------------------------------------------------------- pure helpers (tested on the CPU)

    /**
     * @param mode the form of sharding
     * @param layers the layers (groups)
     * @param override a count from the command line, 0 for the mode's
     * @return the gathered-parameter buffers
     */
    static int gatheredBuffers(Mode mode, int layers, int override) {
        return override > 0 ? override : mode == Mode.ZERO3 ? Math.min(2, layers) : layers;
    }

    /**
     * @param mode the form of sharding
     * @param layers the layers (groups)
     * @param override a count from the command line, 0 for the mode's
     * @return the full-gradient buffers
     */
    static int gradientBuffers(Mode mode, int layers, int override) {
        return override > 0 ? override : mode == Mode.ZERO1 ? layers : Math.min(2, layers);
    }

    /**
     * The part of the communication time that the compute stream did not wait for.
     *
     * @param commMs the summed durations of the all-gathers and reduce-scatters
     * @param waitedMs the summed time the compute stream waited for them
     * @return {@code 1 - waited / comm}, clamped to [0, 1]; NaN without communication
     */
    static double hiddenFraction(double commMs, double waitedMs) {
        if (!(commMs > 0)) {
            return Double.NaN;
        }
        return Math.max(0, Math.min(1, 1 - waitedMs / commMs));
    }

    /**
     * FNV-1a over 64-bit little-endian words (a trailing part of a word is zero-extended), continuing {@code h}.
     *
     * @param h the hash so far ({@link Checksum#OFFSET_BASIS} to start)
     * @param data the bytes from position to limit (position unchanged)
     * @return the new hash
     */
    static long wordChecksum(long h, ByteBuffer data) {
        ByteBuffer b = data.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        while (b.remaining() >= 8) {
            h = (h ^ b.getLong()) * 0x100000001b3L;
        }
        if (b.hasRemaining()) {
            long w = 0;
            for (int shift = 0; b.hasRemaining(); shift += 8) {
                w |= (b.get() & 0xffL) << shift;
            }
            h = (h ^ w) * 0x100000001b3L;
        }
        return h;
    }

    // ---------------------------------------------------------------- the run

    private <T extends AutoCloseable> T track(T resource) {
        return resources.add(resource);
    }

    private DeviceBuffer allocate(int device, long floats) {
        DeviceBuffer b = track(DeviceBuffer.allocate(device, floats, DataType.FLOAT32));
        allocated += b.bytes();
        peakAllocated = Math.max(peakAllocated, allocated);
        return b;
    }

    private void free(DeviceBuffer b) {
        resources.forget(b);
        allocated -= b.bytes();
        b.close();
    }

    private void say(String format, Object... args) {
        System.out.println(tag + String.format(Locale.ROOT, format, args));
    }

    private int run() {
        DdpTraining.loadCudaLibraries();
        Communicator comm = null;
        boolean failed = false;
        try {
            comm = track(Communicator.fromEnvironment());
            return train(comm);
        } catch (Throwable t) {
            failed = true;
            if (comm != null) {
                try {
                    comm.abort();   // peers may wait in a collective: do not wait for them
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
        resources.closeAfter(() -> check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
    }

    /** A pointer at an address (device or host), owning nothing. */
    private static final class Address extends Pointer {
        Address(long address) {
            this.address = address;
        }
    }

    /** A cudaStream_t made by the runtime ({@link Stream}), owning nothing. */
    private static final class StreamRef extends org.bytedeco.cuda.cudart.CUstream_st {
        StreamRef(long handle) {
            this.address = handle;
        }
    }

    private static void check(int cudaStatus, String what) {
        if (cudaStatus != 0) {
            throw new IllegalStateException(what + " failed: cudaError " + cudaStatus + " ("
                    + cudart.cudaGetErrorString(cudaStatus).getString() + ")");
        }
    }

    // the events of a step on the compute stream
    private static final int E_START = 0;
    private static final int E_FORWARD = 1;
    private static final int E_BACKWARD = 2;
    private static final int E_END = 3;

    private int train(Communicator comm) {
        final int rank = comm.rank();
        final int world = comm.size();
        final int device = comm.device();
        tag = "[rank " + rank + "] ";
        final int layers = o.layers;
        final int h = o.size;
        final int batch = o.batch;
        final int steps = o.steps;
        final long weights = (long) h * h;
        final long groupCount = weights + h;
        final int gathered = gatheredBuffers(o.mode, layers, o.gatheredBuffers);
        final int gradBuffers = gradientBuffers(o.mode, layers, o.gradientBuffers);
        final String mode = o.mode.name().toLowerCase(Locale.ROOT);
        final boolean ddp = o.mode == Mode.DDP;
        if (rank == 0) {
            say("ShardedTraining: %s, %d rank(s), %d x (Linear(%d,%d) + ReLU) float32 (TF32 off), %.3f B parameters"
                    + " (%.1f GB of parameters, gradients and Adam state), batch %d per rank, MSE, Adam lr %s,"
                    + " %d steps, %s, optimizer %s", mode, world, layers, h, h,
                    layers * groupCount / 1e9, 16.0 * layers * groupCount / 1e9, batch, o.lr, steps,
                    ddp ? "nothing sharded" : gathered + " gathered and " + gradBuffers + " gradient buffers",
                    o.optimizerOverlap ? "overlapping backward" : "after backward");
            say("NCCL %s (%s)", Nccl.version(), Nccl.library().path());
        }
        say("device %d", device);

        Stream compute = track(Stream.create(device));
        float[] adamStep = new float[2];   // bc1, bc2 of the current step, read by the hook
        GpuOps ops = track(new GpuOps(device, compute.handle(), Seeds.weights(o.seed), Seeds.data(o.seed, rank)));
        DeviceBuffer[] moments = new DeviceBuffer[2];
        Event[] hookBefore = new Event[layers];
        Event[] hookAfter = new Event[layers];
        for (int l = 0; l < layers; l++) {
            hookBefore[l] = track(Event.create(device));
            hookAfter[l] = track(Event.create(device));
        }
        final float lr = o.lr;
        ParameterShards.Builder builder = ParameterShards.builder(comm).gatheredBuffers(gathered)
                .gradientBuffers(gradBuffers).overlapOptimizer(o.optimizerOverlap);
        for (int l = 0; l < layers; l++) {
            builder.add(groupCount);
        }
        long[] base = new long[2];   // the flat parameters and gradients the updates read
        ParameterShards.ShardUpdate adam = (group, offset, count, st) -> {
            hookBefore[group].record(st);
            long p = base[0] + 4 * offset;
            long g = base[1] + 4 * offset;
            ops.adam(st.handle(), p, g, moments[0].address() + 4 * offset, moments[1].address() + 4 * offset, count,
                    lr, BETA1, BETA2, EPS, adamStep[0], adamStep[1]);
            hookAfter[group].record(st);
        };
        ParameterShards shards = ddp ? null : track(builder.optimizer(adam).build());
        ReplicatedLayers replicas = ddp ? track(new ReplicatedLayers(comm, layers, groupCount, o.optimizerOverlap,
                adam)) : null;
        base[0] = ddp ? replicas.parameters().address() : shards.parameterShards().address();
        base[1] = ddp ? replicas.gradients().address() : shards.gradientShards().address();
        final long storeBytes = ddp ? replicas.deviceBytes() : shards.deviceBytes();
        allocated += storeBytes;
        peakAllocated = allocated;
        long stateElements = ddp ? (long) layers * groupCount : shards.shardElements();
        moments[0] = allocate(device, stateElements).fill(0);
        moments[1] = allocate(device, stateElements).fill(0);

        long[] act = new long[layers + 1];
        for (int l = 0; l <= layers; l++) {
            act[l] = allocate(device, (long) h * batch).address();
        }
        long labels = allocate(device, (long) h * batch).address();
        long[] scratch = {allocate(device, (long) h * batch).address(), allocate(device, (long) h * batch).address()};
        DeviceBuffer onesBuf = allocate(device, batch);
        float[] onesHost = new float[batch];
        Arrays.fill(onesHost, 1f);
        onesBuf.copyFrom(onesHost);
        long ones = onesBuf.address();
        long normDevice = allocate(device, 1).address();
        Address normPtr = new Address(normDevice);
        FloatPointer normHost = track(new FloatPointer(1));

        // ---- the same initial weights on every rank: each layer drawn whole from the common seed, the shard kept
        DeviceBuffer full = allocate(device, ddp ? 2 : shards.paddedCount(0)).fill(0);
        float bound = (float) (1.0 / Math.sqrt(h));
        for (int l = 0; l < layers; l++) {
            if (ddp) {   // the whole layer kept
                long at = replicas.layer(l).address();
                ops.uniform(at, weights, bound);
                ops.uniform(at + 4 * weights, h, bound);
                continue;
            }
            ops.uniform(full.address(), weights, bound);
            ops.uniform(full.address() + 4 * weights, h, bound);
            long shardBytes = 4 * shards.shardCount(l);
            check(cudart.cudaMemcpyAsync(new Address(shards.parameterShard(l).address()),
                    new Address(full.address() + rank * shardBytes), shardBytes, cudart.cudaMemcpyDeviceToDevice,
                    new StreamRef(compute.handle())), "cudaMemcpyAsync");
        }
        compute.synchronize();
        free(full);

        // ---- the loop
        Event[] ev = new Event[4];
        for (int e = 0; e < ev.length; e++) {
            ev[e] = track(Event.create(device));
        }
        Event origin = track(Event.create(device));
        int positions = 2 * layers;
        Event[] waitFrom = new Event[positions];
        Event[] waitTo = new Event[positions];
        for (int p = 0; p < positions; p++) {
            waitFrom[p] = track(Event.create(device));
            waitTo[p] = track(Event.create(device));
        }
        final int first = DdpOptions.FIRST_MEASURED_STEP;
        double[] stepMs = new double[steps];
        double[] fwdMs = new double[steps];
        double[] bwdMs = new double[steps];
        double[] optMs = new double[steps];
        double[] hidden = new double[steps];
        double[] commMsPerStep = new double[steps];
        double[] loss = new double[steps];
        final int n = Math.multiplyExact(h, batch);
        for (int s = 0; s < steps; s++) {
            double bc1 = 1 - Math.pow(BETA1, s + 1);
            double bc2 = 1 - Math.pow(BETA2, s + 1);
            adamStep[0] = (float) bc1;
            adamStep[1] = (float) bc2;
            origin.record(compute);
            ev[E_START].record(compute);
            ops.normal(act[0], n);
            ops.normal(labels, n);
            ops.affine(labels, n, 0.25f, 0.5f);
            for (int l = 0; l < layers; l++) {
                waitFrom[l].record(compute);
                long w = ddp ? replicas.layer(l).address() : shards.gather(l, compute).address();
                waitTo[l].record(compute);
                ops.gemm(false, false, h, batch, h, 1f, w, h, act[l], h, 0f, act[l + 1], h);
                ops.biasAct(act[l + 1], w + 4 * weights, h, n, true);
            }
            // loss: labels <- Y - A_N; |.| ; labels <- 2 (A_N - Y) / n = dA_N
            ops.axpy(n, -1f, act[layers], labels);
            ops.nrm2(n, labels, normDevice);
            ops.scal(n, (float) (-2.0 / n), labels);
            ev[E_FORWARD].record(compute);
            long dz = labels;
            for (int l = layers - 1; l >= 0; l--) {
                int p = 2 * layers - 1 - l;
                waitFrom[p].record(compute);
                long w = ddp ? replicas.layer(l).address() : shards.gather(l, compute).address();
                long g = ddp ? replicas.gradient(l) : shards.gradient(l, compute).address();
                waitTo[p].record(compute);
                ops.reluBackward(dz, act[l + 1], n);                                    // dZ_l
                ops.gemm(false, true, h, h, batch, 1f, dz, h, act[l], h, 0f, g, h);     // dW_l = dZ A_l^T
                ops.gemv(h, batch, 1f, dz, h, ones, 0f, g + 4 * weights);               // db_l = dZ 1
                if (ddp) {
                    replicas.allReduce(l, compute);
                } else {
                    shards.reduceScatter(l, compute);
                }
                if (l > 0) {
                    long next = scratch[l % 2];
                    ops.gemm(true, false, h, batch, h, 1f, w, h, dz, h, 0f, next, h);   // dA_l = W^T dZ
                    dz = next;
                }
                if (ddp) {
                    replicas.weightsRead(l, compute);   // overlapped: W_l's update may follow its all-reduce now
                }
            }
            ev[E_BACKWARD].record(compute);
            if (ddp) {
                replicas.finish(compute);
            } else {
                shards.finish(compute);   // Adam per layer through the hook, behind or after each reduce-scatter
            }
            ev[E_END].record(compute);
            ev[E_END].synchronize();

            stepMs[s] = ev[E_END].elapsedSince(ev[E_START]);
            fwdMs[s] = ev[E_FORWARD].elapsedSince(ev[E_START]);
            bwdMs[s] = ev[E_BACKWARD].elapsedSince(ev[E_FORWARD]);
            optMs[s] = ev[E_END].elapsedSince(ev[E_BACKWARD]);
            double waited = 0;
            for (int p = 0; p < positions; p++) {
                waited += waitTo[p].elapsedSince(waitFrom[p]);
            }
            if (o.optimizerOverlap) {   // after backward: the wait for the last reduce-scatter and update
                waited += ev[E_END].elapsedSince(ev[E_BACKWARD]);
            } else {
                Event previous = ev[E_BACKWARD];
                for (int l = layers - 1; l >= 0; l--) {   // the hook's order: the wait for each reduce-scatter
                    waited += hookBefore[l].elapsedSince(previous);
                    previous = hookAfter[l];
                }
            }
            double comm0 = 0;
            for (int p = 0; p < positions; p++) {
                if (!ddp && shards.gathersAt(p)) {
                    float[] t = shards.gatherTiming(p, origin);
                    comm0 += t[1] - t[0];
                }
            }
            for (int l = 0; l < layers; l++) {
                float[] t = ddp ? replicas.timing(l, origin) : shards.reduceScatterTiming(l, origin);
                comm0 += t[1] - t[0];
            }
            commMsPerStep[s] = comm0;
            hidden[s] = hiddenFraction(comm0, waited);
            if (o.trace != null && s == steps - 1) {
                ChromeTrace trace = new ChromeTrace(rank, "nccl4j ShardedTraining " + mode + " rank " + rank);
                int step = s + 1;
                for (int p = 0; p < positions; p++) {
                    int l = p < layers ? p : positions - 1 - p;
                    double from = waitTo[p].elapsedSince(origin);
                    double waitedFrom = waitFrom[p].elapsedSince(origin);
                    if (from - waitedFrom >= 0.001) {
                        trace.complete("wait (" + (ddp ? "gradient" : "gather") + ")", "compute", waitedFrom, from,
                                step);
                    }
                    Event end = p == layers - 1 ? ev[E_FORWARD] : p == positions - 1 ? ev[E_BACKWARD] : waitFrom[p + 1];
                    trace.complete((p < layers ? "forward " : "backward ") + l + (p == layers - 1 ? " + loss" : ""),
                            "compute", from, end.elapsedSince(origin), step);
                    if (!ddp && shards.gathersAt(p)) {
                        float[] t = shards.gatherTiming(p, origin);
                        trace.complete("all-gather " + l, "nccl", t[0], t[1], step);
                    }
                }
                for (int l = 0; l < layers; l++) {
                    float[] t = ddp ? replicas.timing(l, origin) : shards.reduceScatterTiming(l, origin);
                    trace.complete((ddp ? "all-reduce " : "reduce-scatter ") + l, "nccl", t[0], t[1], step);
                    trace.complete("Adam " + l, o.optimizerOverlap ? "nccl" : "compute",
                            hookBefore[l].elapsedSince(origin), hookAfter[l].elapsedSince(origin), step);
                }
                trace.complete(o.optimizerOverlap ? "wait for the last update" : "wait + Adam", "compute",
                        ev[E_BACKWARD].elapsedSince(origin), ev[E_END].elapsedSince(origin), step);
                Path file = Path.of(DdpOptions.perRankFile(o.trace, rank, world));
                try {
                    trace.write(file);
                    say("trace: %s (%d events, step %d)", file.toAbsolutePath(), trace.events(), step);
                } catch (IOException e) {
                    say("could not write the trace %s: %s", file, e);
                }
            }
            check(cudart.cudaMemcpy(normHost, normPtr, 4, cudart.cudaMemcpyDeviceToHost), "cudaMemcpy(loss)");
            float norm = normHost.get(0);
            loss[s] = (double) norm * norm / n;
            say("step %3d/%d  loss %.6f  %9.3f ms%s", s + 1, steps, loss[s], stepMs[s],
                    s + 1 >= first ? "" : "  (warm-up, not in the median)");
        }
        compute.synchronize();
        (ddp ? replicas.communicationStream() : shards.communicationStream()).synchronize();
        comm.checkAsyncError();

        double median = StepStats.medianFrom(stepMs, first);
        double hiddenMedian = StepStats.medianFrom(hidden, first);
        long[] mem = memInfo();
        double gib = 1024.0 * 1024 * 1024;
        say("median step time over steps %d..%d: %.3f ms (forward %.3f, backward %.3f, wait + Adam %.3f ms;"
                + " communication %.3f ms, hidden %.3f)", first, steps, median, StepStats.medianFrom(fwdMs, first),
                StepStats.medianFrom(bwdMs, first), StepStats.medianFrom(optMs, first),
                StepStats.medianFrom(commMsPerStep, first), hiddenMedian);
        say("device memory: %.3f GiB allocated by this rank at the peak (%s %.3f GiB, Adam state %.3f GiB);"
                + " device used %.3f of %.3f GiB (cudaMemGetInfo, every process on the device)", peakAllocated / gib,
                ddp ? "parameters and gradients" : "shards", storeBytes / gib, 2.0 * moments[0].bytes() / gib,
                (mem[1] - mem[0]) / gib, mem[1] / gib);

        boolean finite = true;
        for (double l : loss) {
            finite &= Double.isFinite(l);
        }
        if (!finite) {
            say("FAILED: a loss is not finite: %s", Arrays.toString(loss));
        }
        boolean falling = steps > 1 && loss[steps - 1] < loss[0];

        // ---- every rank gathers the whole model and hashes it: the hashes must agree
        long own = Checksum.OFFSET_BASIS;
        boolean identical = true;
        String sum = "skipped";
        if (o.checksum) {
            DeviceBuffer whole = ddp ? null : allocate(device, shards.paddedCount(0));
            ByteBuffer host = ByteBuffer.allocateDirect(Math.toIntExact(ddp ? 4 * groupCount : whole.bytes()));
            for (int l = 0; l < layers; l++) {
                if (ddp) {   // every rank holds the whole layer
                    compute.synchronize();
                    replicas.layer(l).copyTo(host.clear());
                } else {
                    shards.gatherTo(l, whole, compute);
                    compute.synchronize();
                    whole.copyTo(host.clear());
                }
                own = wordChecksum(own, host.duplicate().position(0).limit(Math.toIntExact(4 * groupCount)));
            }
            DeviceBuffer send = track(DeviceBuffer.allocate(device, 1, DataType.INT64));
            DeviceBuffer recv = track(DeviceBuffer.allocate(device, world, DataType.INT64));
            send.copyFrom(new long[] {own});
            comm.allGather(send, recv, DataType.INT64, compute);
            compute.synchronize();
            long[] all = recv.copyTo(new long[world]);
            StringBuilder list = new StringBuilder();
            for (int r = 0; r < world; r++) {
                identical &= all[r] == all[0];
                list.append(r == 0 ? "" : ", ").append(Checksum.hex(all[r]));
            }
            identical &= all[rank] == own;
            sum = Checksum.hex(own);
            say("weights checksum (whole model, gathered): %s; all ranks [%s]: %s", sum, list,
                    identical ? "identical" : "DIFFERENT");
        }
        say("RESULT impl=nccl4j mode=%s rank=%d ranks=%d layers=%d size=%d batch=%d steps=%d median_ms=%.3f"
                + " forward_ms=%.3f backward_ms=%.3f optimizer_ms=%.3f comm_ms=%.3f hidden_fraction=%.3f"
                + " peak_alloc_gib=%.3f device_used_gib=%.3f gathered_buffers=%d gradient_buffers=%d"
                + " loss_first=%.6f loss_last=%.6f loss_falling=%s weights=%s checksum=%s optimizer_overlap=%s", mode,
                rank, world,
                layers, h, batch, steps, median, StepStats.medianFrom(fwdMs, first), StepStats.medianFrom(bwdMs, first),
                StepStats.medianFrom(optMs, first), StepStats.medianFrom(commMsPerStep, first), hiddenMedian,
                peakAllocated / gib, (mem[1] - mem[0]) / gib, gathered, gradBuffers, loss[0], loss[steps - 1],
                falling ? "yes" : "no", !o.checksum ? "unchecked" : identical ? "identical" : "different", sum,
                o.optimizerOverlap ? "yes" : "no");
        return finite && identical ? 0 : 1;
    }

    /** {free, total} bytes of the current device (cudaMemGetInfo). */
    private static long[] memInfo() {
        try (SizeTPointer free = new SizeTPointer(1); SizeTPointer total = new SizeTPointer(1)) {
            check(cudart.cudaMemGetInfo(free, total), "cudaMemGetInfo");
            return new long[] {free.get(), total.get()};
        }
    }

    /** The command line ({@code --help} lists it). */
    @Command(name = "ShardedTraining", mixinStandardHelpOptions = true, versionProvider = Args.Version.class,
            sortOptions = false, usageHelpWidth = 100,
            description = "Fully sharded data-parallel training (ZeRO-3, as FSDP2) of N x (Linear(H,H) + ReLU) with"
                    + " Adam, launched per rank, timed per step.")
    static final class Options {
        @Option(names = "--layers", paramLabel = "N", description = "Layers (default: ${DEFAULT-VALUE}).")
        int layers = 80;
        @Option(names = "--size", paramLabel = "H", description = "Layer width (default: ${DEFAULT-VALUE}).")
        int size = 8192;
        @Option(names = "--batch", paramLabel = "B", description = "Batch per rank (default: ${DEFAULT-VALUE}).")
        int batch = 1024;
        @Option(names = "--steps", paramLabel = "N", description = "Training steps (default: ${DEFAULT-VALUE}).")
        int steps = 20;
        @Option(names = "--lr", paramLabel = "X", description = "Adam's learning rate (default: ${DEFAULT-VALUE}).")
        float lr = 0.0001f;
        @Option(names = "--seed", paramLabel = "N", description = "Random seed (default: ${DEFAULT-VALUE}).")
        long seed = 1234;
        @Option(names = "--mode", paramLabel = "M", converter = ModeConverter.class, description = "zero3: "
                + "parameters, gradients and Adam state sharded (default); zero2: full parameters through the step; "
                + "zero1: full parameters and gradients, Adam state sharded; ddp: nothing sharded, gradients"
                + " all-reduced (the baseline).")
        Mode mode = Mode.ZERO3;
        @Option(names = "--gathered-buffers", paramLabel = "K", description = "Gathered-parameter buffers (default: "
                + "the mode's: 2 for zero3, the layers otherwise).")
        int gatheredBuffers;
        @Option(names = "--gradient-buffers", paramLabel = "K", description = "Full-gradient buffers (default: the "
                + "mode's: the layers for zero1, 2 otherwise).")
        int gradientBuffers;
        @Option(names = "--trace", paramLabel = "FILE", description = "Write the last step's timeline (compute,"
                + " gathers, reduce-scatters, Adam) as a Chrome trace; {rank} is replaced by the rank.")
        String trace;
        @Option(names = "--no-optimizer-overlap", negatable = false, description = "Run Adam after backward, on the"
                + " compute stream, instead of behind each layer's reduce-scatter on the communication stream.")
        void noOptimizerOverlap(boolean off) {
            optimizerOverlap = !off;
        }

        boolean optimizerOverlap = true;
        @Option(names = "--no-checksum", negatable = false, description = "Skip gathering and hashing the whole model"
                + " at the end.")
        void noChecksum(boolean skip) {
            checksum = !skip;
        }

        boolean checksum = true;

        /**
         * Checks the values picocli cannot.
         *
         * @throws Args.UsageException naming the option and what it takes
         */
        void check() {
            positive("--layers", layers);
            positive("--size", size);
            positive("--batch", batch);
            positive("--steps", steps);
            if (!(lr > 0) || Float.isInfinite(lr)) {
                throw new Args.UsageException("Invalid value for option '--lr': " + lr + " (a rate greater than 0)");
            }
            if (((long) size * batch) % 2 != 0) {
                throw new Args.UsageException("--size x --batch must be even (cuRAND draws normals in pairs), got "
                        + size + " x " + batch);
            }
            if ((long) size * size > Integer.MAX_VALUE || (long) size * batch > Integer.MAX_VALUE) {
                throw new Args.UsageException("--size " + size + " with --batch " + batch
                        + " makes a matrix of more than 2^31-1 elements (cuBLAS' 32-bit API)");
            }
            if (gatheredBuffers < 0 || gatheredBuffers > layers) {
                throw new Args.UsageException("Invalid value for option '--gathered-buffers': " + gatheredBuffers
                        + " (1 to --layers, " + layers + "; 0 for the mode's)");
            }
            if (gradientBuffers < 0 || gradientBuffers > layers) {
                throw new Args.UsageException("Invalid value for option '--gradient-buffers': " + gradientBuffers
                        + " (1 to --layers, " + layers + "; 0 for the mode's)");
            }
        }

        private static void positive(String flag, int v) {
            if (v <= 0) {
                throw new Args.UsageException("Invalid value for option '" + flag + "': " + v
                        + " (a whole number greater than 0)");
            }
        }
    }

    /** zero3, zero2 or zero1, in any case. */
    static final class ModeConverter implements picocli.CommandLine.ITypeConverter<Mode> {
        @Override
        public Mode convert(String value) {
            try {
                return Mode.valueOf(value.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new picocli.CommandLine.TypeConversionException("'" + value + "' is not one of zero3, zero2,"
                        + " zero1, ddp");
            }
        }
    }
}
