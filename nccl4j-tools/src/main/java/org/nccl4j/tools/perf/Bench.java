package org.nccl4j.tools.perf;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.nccl4j.CommConfig;
import org.nccl4j.Communicator;
import org.nccl4j.Cuda;
import org.nccl4j.CudaGraph;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.Event;
import org.nccl4j.Nccl;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;
import org.nccl4j.UniqueId;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.launch.LaunchInfo;
import org.nccl4j.launch.Rendezvous;
import org.nccl4j.tools.cli.Programs;

/**
 * The measuring loop of nccl4j-perf, on the GPUs of this process: one (one process per GPU, launched by mpirun
 * or another launcher; {@link Communicator#fromEnvironment()}) or {@code -g} of them ({@link Communicator#initAll}
 * and a group around each iteration's calls).
 *
 * <p>One measurement, as nccl-tests takes it (after {@code --jit_quiet_ms}'s wait, so that the GPUs do not idle
 * between the untimed operation and the timed ones): one operation and a wait; a barrier; then the host's clock
 * is read, the {@code -n} iterations are issued (or, with {@code -G}, the iterations captured once as a CUDA graph
 * and the graph launched {@code -G} times), every stream of the process is waited for and the clock read again;
 * the time is the clock's difference over the number of operations, combined across processes as {@code -a} says.
 * That is nccl-tests' measure (its timer starts after the barrier and is read after the stream synchronization),
 * so it holds the first call's issue and the host seeing the last completion. {@code --timer events} measures as
 * before instead: a CUDA event on each stream before and after the iterations, the largest of this process's GPUs
 * (GPU wall time from the start event to the last completion; scripts/bench/native/nccl_perf_baseline.cu's
 * measure). With {@code -m M} each iteration is M operations in one NCCL group, and the time is over iterations x
 * M. In eager runs the Java heap bytes this thread allocated while issuing the iterations are counted too
 * (HotSpot's per-thread counter) and reported per iteration. The host's cost of issuing each call is inside the
 * measurement whenever it is the bottleneck; {@code -C} reports the host's time to issue instead (this process's
 * own).
 *
 * <p>Buffers, as nccl-tests makes them: from {@code ncclMemAlloc} where NCCL has it (2.19+), else {@code cudaMalloc};
 * {@code -u} pads them and starts the operations that many elements in; {@code -R 1} registers the send and
 * receive buffers with {@link Communicator#register}, {@code -R 2} as symmetric windows
 * ({@link Communicator#registerWindow}). Operation i of a measurement or of the warm-up starts
 * {@code i mod (-e / footprint)} footprints into both buffers (the footprint: the larger of the bytes it sends and
 * receives), as nccl-tests rotates them; the untimed operation and the check start at the buffers' start.
 * {@code -y 1} issues on the legacy default stream.
 */
final class Bench implements AutoCloseable {
    private static final int CHUNK_BYTES = 16 << 20;

    private final PerfArgs args;
    private final List<Communicator> comms;
    private final int local;
    private final int nranks;
    private final boolean perProcess;
    private final double initMs;
    private double[] initRepeatMs = new double[0];
    private final Stream[] streams;
    private final DeviceBuffer[] send;
    private final DeviceBuffer[] recv;
    private final DeviceBuffer[] scratch;
    /** -R: the registrations of the send and receive buffers, closed before them. */
    private final List<AutoCloseable> registrations = new ArrayList<>();
    /** Whether the buffers came from ncclMemAlloc. */
    private final boolean ncclMemory;
    private final Event[] start;
    private final Event[] stop;
    private final int[] rank;
    private final long[] sendAddr;
    private final long[] recvAddr;
    /**
     * nccl-tests' rotation of the buffers: operation i of a measurement starts {@code (i % shiftSteps) * shiftBytes}
     * into both buffers, one operation's footprint further each time, as many as fit in -e (set by {@link #place}).
     */
    private long shiftBytes;
    private long shiftSteps = 1;
    private final CudaGraph[] graphs;
    /** --op_times: an event per eager iteration on this process's first GPU, else null. */
    private final Event[] marks;
    private final ByteBuffer host;
    private final com.sun.management.ThreadMXBean threads;
    /** The JIT's compilation clock for --jit_quiet_ms, or null when it does not wait. */
    private final CompilationMXBean jit;
    private double jitWaitMs;
    /** -C: this process's host time to issue the last measurement's operations, per operation, in us. */
    private double cpuUs;

    private Bench(PerfArgs args, List<Communicator> comms, boolean perProcess, double initMs) {
        this.args = args;
        this.comms = comms;
        this.local = comms.size();
        this.nranks = comms.get(0).size();
        this.perProcess = perProcess;
        this.initMs = initMs;
        streams = new Stream[local];
        send = new DeviceBuffer[local];
        recv = new DeviceBuffer[local];
        scratch = new DeviceBuffer[local];
        start = new Event[local];
        stop = new Event[local];
        rank = new int[local];
        sendAddr = new long[local];
        recvAddr = new long[local];
        graphs = new CudaGraph[local];
        marks = args.opTimes != 0 ? new Event[args.iters] : null; // close() skips the ones not created
        long bytes = Math.max(args.maxBytes, 256) + 8L * args.unalign; // -u: room for the largest type's shift
        ncclMemory = PerfArgs.ncclMemAlloc(Nccl.library().versionCode());
        try {
            for (int k = 0; k < local; k++) {
                Communicator c = comms.get(k);
                rank[k] = c.rank();
                streams[k] = args.streamNull != 0 ? Stream.defaultStream(c.device()) : Stream.create(c.device());
                send[k] = buffer(c.device(), bytes).fill(0);
                recv[k] = buffer(c.device(), bytes).fill(0);
                scratch[k] = DeviceBuffer.allocate(c.device(), 64).fill(0);
                start[k] = Event.create(c.device());
                stop[k] = Event.create(c.device());
            }
            for (int k = 0; k < local && args.localRegister != 0; k++) {
                Communicator c = comms.get(k);
                for (DeviceBuffer b : new DeviceBuffer[] {send[k], recv[k]}) {
                    registrations.add(args.localRegister == 1 ? c.register(b) : c.registerWindow(b));
                }
            }
            for (int k = 0; k < local; k++) {
                Stream.defaultStream(comms.get(k).device()).synchronize(); // the fills above are done
            }
            for (int i = 0; marks != null && i < marks.length; i++) {
                marks[i] = Event.create(comms.get(0).device());
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        threads = allocationCounter();
        jit = args.jitQuietMs > 0 ? compilationClock() : null;
        host = args.check > 0
                ? ByteBuffer.allocateDirect((int) Math.min(CHUNK_BYTES, bytes)).order(ByteOrder.LITTLE_ENDIAN)
                : null;
    }

    /** A send or receive buffer: ncclMemAlloc where NCCL has it, as nccl-tests allocates them, else cudaMalloc. */
    private DeviceBuffer buffer(int device, long bytes) {
        return ncclMemory ? DeviceBuffer.allocateNccl(device, bytes) : DeviceBuffer.allocate(device, bytes);
    }

    /** @return "ncclMemAlloc" or "cudaMalloc", and the registration -R asked for, for the header */
    String bufferText() {
        String reg = args.localRegister == 1 ? ", registered (ncclCommRegister)"
                : args.localRegister == 2 ? ", symmetric windows (ncclCommWindowRegister)" : "";
        return (ncclMemory ? "ncclMemAlloc" : "cudaMalloc") + reg + (args.unalign > 0 ? ", unaligned by "
                + args.unalign + " elements" : "") + (args.streamNull != 0 ? ", legacy default stream" : "");
    }

    /** The JIT's total compilation time, where this JVM keeps it; else null (--jit_quiet_ms then waits for nothing). */
    private static CompilationMXBean compilationClock() {
        CompilationMXBean c = ManagementFactory.getCompilationMXBean();
        return c != null && c.isCompilationTimeMonitoringSupported() ? c : null;
    }

    /**
     * --jit_quiet_ms: waits until the JIT compiler has finished no compilation for that long (its total compilation
     * time stands still), at most {@link PerfArgs#MAX_JIT_WAIT_MS}. It spins rather than sleeps, so that the core that
     * issues the timed loop stays awake. Compilations that the warm-up queued would otherwise finish, and have their
     * code installed, during the first timed loop, which is host-bound for small sizes.
     *
     * @return the milliseconds waited
     */
    double jitQuiet() {
        if (jit == null) {
            return 0;
        }
        double ms = quietWait(jit::getTotalCompilationTime, System::nanoTime, args.jitQuietMs * 1_000_000L,
                PerfArgs.MAX_JIT_WAIT_MS * 1_000_000L) / 1e6;
        jitWaitMs += ms;
        return ms;
    }

    /**
     * Spins until {@code total} has stood still for {@code quietNanos} of {@code clock}, or {@code limitNanos} have
     * passed.
     *
     * @param total a running total (the JIT's compilation milliseconds)
     * @param clock nanoseconds
     * @param quietNanos how long {@code total} must stand still
     * @param limitNanos the longest wait
     * @return the nanoseconds waited
     */
    static long quietWait(LongSupplier total, LongSupplier clock, long quietNanos, long limitNanos) {
        long start = clock.getAsLong();
        long last = total.getAsLong();
        long since = start;
        while (true) {
            long now = clock.getAsLong();
            long t = total.getAsLong();
            if (t != last) {
                last = t;
                since = now;
            }
            if (now - since >= quietNanos || now - start >= limitNanos) {
                return now - start;
            }
            Thread.onSpinWait();
        }
    }

    /** @return the milliseconds that --jit_quiet_ms waits took so far */
    double jitWaitMs() {
        return jitWaitMs;
    }

    private static com.sun.management.ThreadMXBean allocationCounter() {
        if (ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean) {
            com.sun.management.ThreadMXBean t = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            if (t.isThreadAllocatedMemorySupported()) {
                t.setThreadAllocatedMemoryEnabled(true);
                if (t.isThreadAllocatedMemoryEnabled()) {
                    t.getCurrentThreadAllocatedBytes();   // the first reading is the slow one: not in a measurement
                    return t;
                }
                return null;
            }
        }
        return null;
    }

    /**
     * Makes the communicators: one per process when a launcher started this process as one of several ranks,
     * else one per GPU of {@code -g} in this process. The time of the communicator's creation is measured after
     * NCCL is loaded and the CUDA contexts exist, so it holds the id exchange and {@code ncclCommInitRank} (or
     * {@code ncclCommInitAll}) alone. With one process per rank, the ranks first meet in an untimed id exchange
     * (the route {@link Communicator#fromEnvironment()} takes), so that the clock starts when every process is up,
     * as the C baseline's {@code MPI_Barrier} does: the difference in JVM start-up between ranks is not init time.
     *
     * <p>{@code --init_repeats R} then times R more creations in the same process, each one after a barrier on the
     * first communicator and closed right after; the C baseline does the same with {@code MPI_Barrier}.
     */
    static Bench open(PerfArgs args) {
        NcclLibrary lib = Nccl.library();
        args.requireSupportedBy(lib.versionCode(), lib.version());
        CommConfig config = config(args);
        LaunchInfo launch = LaunchInfo.detect();
        if (launch.worldSize() > 1) { // launched per rank: more than one process in the launch
            if (args.gpus > 1) {
                throw PerfArgs.invalid("-g", Integer.toString(args.gpus), "is not supported with one process per rank "
                        + "(launched by mpirun or another launcher): use -g 1 there, or run one process with -g N");
            }
            Cuda.setDevice(launch.device()); // creates the CUDA context outside the measured init
            align(launch);
            long t0 = System.nanoTime();
            Communicator comm = Communicator.fromEnvironment(config);
            double ms = (System.nanoTime() - t0) / 1e6;
            Bench b = new Bench(args, List.of(comm), true, ms);
            b.repeatInit(() -> List.of(Communicator.fromEnvironment(config)));
            return b;
        }
        int visible = Cuda.deviceCount();
        if (args.gpus > visible) {
            throw PerfArgs.invalid("-g", Integer.toString(args.gpus), "is more than the " + visible
                    + " GPUs this process sees");
        }
        int[] devices = new int[args.gpus];
        for (int d = 0; d < args.gpus; d++) {
            devices[d] = d;
            Cuda.setDevice(d);
        }
        Cuda.setDevice(0);
        // -x and -T need a configuration, which ncclCommInitAll does not take (PerfArgs refuses them with -g > 1)
        Supplier<List<Communicator>> create = config == null ? () -> Communicator.initAll(devices)
                : () -> List.of(Communicator.create(0, 1, UniqueId.generate(), 0, config));
        long t0 = System.nanoTime();
        List<Communicator> comms = create.get();
        double ms = (System.nanoTime() - t0) / 1e6;
        Bench b = new Bench(args, comms, false, ms);
        b.repeatInit(create);
        return b;
    }

    /**
     * The communicators' configuration: -x sets the CTA policy, -T the watchdog's timeout of an operation; null
     * (NCCL's defaults, nccl4j's environment) when neither is given.
     */
    static CommConfig config(PerfArgs args) {
        if (args.ctaPolicy < 0 && args.timeoutSeconds == 0) {
            return null;
        }
        CommConfig.Builder b = CommConfig.builder();
        if (args.ctaPolicy >= 0) {
            b.ctaPolicy(args.ctaPolicy);
        }
        if (args.timeoutSeconds > 0) {
            b.timeout(java.time.Duration.ofSeconds(args.timeoutSeconds));
        }
        return b.build();
    }

    /**
     * Waits until every rank's process is up: an id exchange by the route {@link Communicator#fromEnvironment()}
     * will take (TCP or a shared file), whose id is thrown away. With {@code NCCL_COMM_ID} there is no exchange to
     * meet in, and the ranks start the clock unaligned.
     */
    private static void align(LaunchInfo launch) {
        if (launch.worldSize() == 1) {
            return;
        }
        Rendezvous r = Rendezvous.forLaunch(launch);
        if (r.route() != Rendezvous.Route.COMM_ID) {
            r.exchange(() -> new byte[Rendezvous.UNIQUE_ID_BYTES]);
        }
    }

    /** Times {@code args.initRepeats} creations of communicators like the first, each after a barrier. */
    private void repeatInit(Supplier<List<Communicator>> create) {
        initRepeatMs = new double[args.initRepeats];
        try {
            for (int r = 0; r < args.initRepeats; r++) {
                barrier();
                long t0 = System.nanoTime();
                List<Communicator> made = create.get();
                initRepeatMs[r] = (System.nanoTime() - t0) / 1e6;
                for (Communicator c : made) {
                    c.close();
                }
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    int nranks() {
        return nranks;
    }

    int localRanks() {
        return local;
    }

    int processes() {
        return nranks / local;
    }

    boolean perProcess() {
        return perProcess;
    }

    double initMs() {
        return initMs;
    }

    /** The times of the {@code --init_repeats} creations after the first, in ms (empty without the option). */
    double[] initRepeatMs() {
        return initRepeatMs.clone();
    }

    /** @return whether this process holds rank 0 (and prints) */
    boolean printer() {
        return rank[0] == 0;
    }

    List<Communicator> communicators() {
        return comms;
    }

    // ------------------------------------------------------------------ issuing

    /** Operation {@code index} of a measurement on local GPU k, at that index's place in the rotation. */
    private void issue(int k, Operation o, Operation.Counts c, DataType t, ReduceOp op, int root, long index) {
        Communicator comm = comms.get(k);
        Stream s = streams[k];
        long n = c.param();
        long shift = index % shiftSteps * shiftBytes;
        long sa = sendAddr[k] + shift;
        long ra = recvAddr[k] + shift;
        switch (o) {
            case ALL_REDUCE: comm.allReduce(sa, ra, n, t, op, s); break;
            case ALL_GATHER: comm.allGather(sa, ra, n, t, s); break;
            case REDUCE_SCATTER: comm.reduceScatter(sa, ra, n, t, op, s); break;
            case BROADCAST: comm.broadcast(sa, ra, n, t, root, s); break;
            case REDUCE: comm.reduce(sa, ra, n, t, op, root, s); break;
            case ALLTOALL: comm.alltoAll(sa, ra, n, t, s); break;
            case GATHER: comm.gather(sa, ra, n, t, root, s); break;
            case SCATTER: comm.scatter(sa, ra, n, t, root, s); break;
            case SENDRECV:
                comm.send(sa, n, t, (rank[k] + 1) % nranks, s);
                comm.recv(ra, n, t, (rank[k] - 1 + nranks) % nranks, s);
                break;
            default: throw new IllegalArgumentException(String.valueOf(o));
        }
    }

    /**
     * Operation {@code index} on every local rank, in a group when there are several (or for sendrecv); index 0 is
     * at the start of the buffers (the untimed call, the check).
     */
    private void issueAll(Operation o, Operation.Counts c, DataType t, ReduceOp op, int root, long index) {
        if (local == 1 && o != Operation.SENDRECV) {
            issue(0, o, c, t, op, root, index);
            return;
        }
        Nccl.groupStart(); // the allocation-free form of Nccl.group(), for the timed loop
        try {
            for (int k = 0; k < local; k++) {
                issue(k, o, c, t, op, root, index);
            }
        } finally {
            Nccl.groupEnd();
        }
    }

    /**
     * Timed iteration i: -m operations, in one NCCL group when more than one (nccl-tests' aggregation), operations
     * i x m to i x m + m - 1 of the rotation.
     */
    private void iteration(Operation o, Operation.Counts c, DataType t, ReduceOp op, int root, int i) {
        if (args.aggIters == 1) {
            issueAll(o, c, t, op, root, i);
            return;
        }
        Nccl.groupStart();
        try {
            for (int m = 0; m < args.aggIters; m++) {
                issueAll(o, c, t, op, root, (long) i * args.aggIters + m);
            }
        } finally {
            Nccl.groupEnd();
        }
    }

    private void syncAll() {
        for (int k = 0; k < local; k++) {
            streams[k].synchronize();
        }
    }

    /**
     * Every rank reaches this point before any leaves it: across processes, an all-reduce (MAX, in place) of the
     * 64-byte scratch buffers and a wait for the streams, nothing after it. Each process leaves as soon as it sees
     * the all-reduce done, as nccl-tests' ranks leave MPI_Barrier: no copy of a value to or from the GPU, whose
     * time would differ between processes and reach the timed loop's first operation, which waits for the last
     * process to start it.
     */
    void barrier() {
        if (processes() > 1) {
            Programs.grouped(comms, k -> comms.get(k).allReduce(scratch[k], DataType.FLOAT64, ReduceOp.MAX,
                    streams[k]));
        }
        syncAll();
    }

    /**
     * Combines one value per process across processes (an NCCL all-reduce of a double).
     *
     * @param v this process's value
     * @param op SUM, MIN or MAX
     * @return the combined value
     */
    double combine(double v, ReduceOp op) {
        if (processes() == 1) {
            return v;
        }
        double identity = op == ReduceOp.MIN ? Double.POSITIVE_INFINITY
                : op == ReduceOp.MAX ? Double.NEGATIVE_INFINITY : 0;
        for (int k = 0; k < local; k++) {
            scratch[k].copyFrom(new double[] {k == 0 ? v : identity}); // returns once the data has landed
        }
        Programs.grouped(comms, k -> comms.get(k).allReduce(scratch[k], DataType.FLOAT64, op, streams[k]));
        syncAll();
        return scratch[0].copyTo(new double[1])[0];
    }

    /** The time across processes as -a says: 0 rank 0's, 1 the average, 2 the minimum, 3 the maximum. */
    private double combineTime(double us) {
        switch (args.average) {
            case 0: return combine(rank[0] == 0 ? us : 0, ReduceOp.SUM);
            case 2: return combine(us, ReduceOp.MIN);
            case 3: return combine(us, ReduceOp.MAX);
            default: return combine(us, ReduceOp.SUM) / processes();
        }
    }

    // ------------------------------------------------------------------ measuring

    private Operation.Counts place(Operation o, DataType t, long size, boolean inPlace) {
        Operation.Counts c = o.counts(size, t.size(), nranks);
        long ws = t.size();
        long shift = args.unalign * ws; // -u
        for (int k = 0; k < local; k++) {
            if (inPlace) {
                long base = recv[k].address() + shift;
                sendAddr[k] = base + c.sendInPlaceOffset() * rank[k] * ws;
                recvAddr[k] = base + c.recvInPlaceOffset() * rank[k] * ws;
            } else {
                sendAddr[k] = send[k].address() + shift;
                recvAddr[k] = recv[k].address() + shift;
            }
        }
        shiftBytes = Math.max(c.send(), c.recv()) * ws; // nccl-tests: max(sendBytes, expectedBytes)
        shiftSteps = shiftBytes > 0 ? Math.max(1, args.maxBytes / shiftBytes) : 1;
        return c;
    }

    /**
     * The eager timed loop: {@code iters} iterations, an event after each into {@code events} when given, a wait after
     * each with -z. A method of its own so that {@link #jitWarmup} can have the JIT compile it whole before any size
     * is timed: inside {@link #measure} the loop was compiled on the fly (C1, then C2 at about the 8 KiB size of an
     * 8 B..64 KiB sweep), and on a rank pinned to one core the compilations took their time from the timed loop.
     */
    private void eagerLoop(Operation o, Operation.Counts c, DataType t, ReduceOp redop, int root, int iters,
            Event[] events) {
        for (int i = 0; i < iters; i++) {
            iteration(o, c, t, redop, root, i);
            if (events != null) {
                events[i].record(streams[0]);
            }
            if (args.blocking != 0) {
                syncAll();
                if (args.blocking == 1) {
                    barrier();
                }
            }
        }
    }

    /**
     * --jit_warmup: {@link #eagerLoop} called that many times with one iteration of at most 16 bytes a rank (the
     * smallest size when smaller), out of place and in place in turn, recording --op_times' first event when that is
     * on (the timed loop's branch), with a {@link #barrier} after every 16th, on every rank alike, so that the loop
     * and what it calls are compiled as whole methods, with the profile of the sweep, before any size is timed; then
     * a wait for the streams. The barrier matters: it is an all-reduce through the same dispatch as the measured
     * operation, and a dispatch compiled having seen only all-gathers was thrown away (deoptimized) at the first
     * barrier of the sweep and compiled again during the 64-128 MiB sizes, 20-180 us an operation late on a rank
     * pinned to one core. The code is the same at every size, and a sweep of large sizes is not preceded by seconds
     * of full-bandwidth traffic that nccl-tests does not send. Eager runs only (graph runs time launches, not this
     * loop).
     */
    void jitWarmup(Operation o, DataType t, ReduceOp op, int root) {
        if (!args.jitWarmsUp()) {
            return;
        }
        long bytes = Math.min(args.sizes().get(0), 16L * nranks);
        for (int i = 0; i < args.jitWarmup; i++) {
            Operation.Counts c = place(o, t, bytes, (i & 1) == 1);
            eagerLoop(o, c, t, op, root, 1, marks);   // --op_times: its first event, as the timed loop records it
            if (i % 16 == 15) {
                barrier();
            }
            if (i % 1000 == 999) {
                syncAll();   // the queue of launches stays short
            }
        }
        syncAll();
    }

    /** nccl-tests' warm-up: {@code -w} iterations at each size from -b doubling to -e, out of place. */
    void warmup(Operation o, DataType t, ReduceOp op, int root) {
        jitWarmup(o, t, op, root);
        if (args.warmup == 0) {
            return;
        }
        for (long size : args.warmupSizes()) {
            untimed(o, place(o, t, size, false), t, op, root, args.warmup);
        }
        syncAll();
    }

    /**
     * After a --jit_quiet_ms wait: the measured operation, -w times (at most -n), untimed, so that the GPUs come to
     * the timed loop from work, as in nccl-tests, where the warm-up or the previous measurement runs right before it,
     * and not from the wait's 20 ms or more of idle. Measured alone on 2 x H100 (2026-11-26) it changed nothing at
     * 64 MiB: the first operation's 100 us there were the allocation counter's first reading (see measure).
     */
    private void rewarm(Operation o, Operation.Counts c, DataType t, ReduceOp op, int root) {
        untimed(o, c, t, op, root, Math.min(args.warmup, args.iters));
    }

    /** Operations 0 to n - 1 of the rotation, untimed, on every local rank (the warm-ups). */
    private void untimed(Operation o, Operation.Counts c, DataType t, ReduceOp op, int root, int n) {
        for (int i = 0; i < n; i++) {
            issueAll(o, c, t, op, root, i);
        }
    }

    /**
     * Measures one size and placement.
     *
     * @param redop the reduction operator, or null for an operation that does not reduce
     * @return the result (time combined across processes; wrong summed over ranks)
     */
    PerfRow measure(Operation o, DataType t, ReduceOp redop, int root, long size, boolean inPlace) {
        double allocated = Double.NaN;
        boolean events = PerfArgs.TIMER_EVENTS.equals(args.timer);
        long hostNanos;
        long loopStart;
        Operation.Counts c = place(o, t, size, inPlace);
        int shownRoot = o.rooted() ? root : -1;
        if (jitQuiet() > 0) {
            rewarm(o, c, t, redop, root);   // the GPUs idled while it waited
        }
        issueAll(o, c, t, redop, root, 0);   // the untimed operation and the barrier right before the timed loop,
        syncAll();                           // as in nccl-tests
        barrier();

        double ms;
        if (args.graphLaunches > 0) {
            int begun = 0;
            try {
                for (; begun < local; begun++) {
                    streams[begun].beginCapture();
                }
                for (int i = 0; i < args.iters; i++) {
                    iteration(o, c, t, redop, root, i);
                }
            } finally {
                for (int k = 0; k < begun; k++) {
                    graphs[k] = streams[k].endCapture();
                }
            }
            for (int k = 0; k < local; k++) {
                graphs[k].instantiate(); // outside the timed launches (cudaGraphInstantiate takes ~100s of us)
            }
            barrier();
            loopStart = startTimer(events, false);
            for (int l = 0; l < args.graphLaunches; l++) {
                for (int k = 0; k < local; k++) {
                    graphs[k].launch(streams[k]);
                }
            }
            hostNanos = args.clock.getAsLong() - loopStart;
            ms = events ? stopEvents() : completedSince(loopStart);
        } else {
            // read before the timer starts: the process's first reading took about 100 us on 2 x H100, which the
            // first measurement's first operation then waited for (2026-11-26, found with --op_times' first)
            long before = threads == null ? 0 : threads.getCurrentThreadAllocatedBytes();
            loopStart = startTimer(events, marks != null);
            eagerLoop(o, c, t, redop, root, args.iters, marks);
            hostNanos = args.clock.getAsLong() - loopStart;
            if (threads != null && args.blocking == 0) {
                allocated = (double) (threads.getCurrentThreadAllocatedBytes() - before) / args.iters;
            }
            ms = events ? stopEvents() : completedSince(loopStart);
        }
        for (int k = 0; k < local; k++) {
            if (graphs[k] != null) {
                graphs[k].close();
                graphs[k] = null;
            }
        }
        double[] opTimes = marks != null ? opTimes(loopStart) : null; // PerfArgs refuses --op_times with -G
        double operations = (double) args.iters * args.aggIters * Math.max(1, args.graphLaunches);
        double us = combineTime(ms * 1000.0 / operations);
        cpuUs = hostNanos / 1000.0 / operations;
        long sizeBytes = c.sizeBytes(t.size());
        double algbw = us > 0 ? sizeBytes / (us * 1e-6) / 1e9 : 0;
        double busbw = algbw * o.busFactor(nranks);
        long wrong = -1;
        // NCCL defines no in-place send/recv or all-to-all (concurrent transfers read and write the same
        // buffer): those are timed but not checked, and print N/A, as in the C baseline.
        if (args.check > 0 && !(inPlace && (o == Operation.SENDRECV || o == Operation.ALLTOALL))) {
            wrong = 0;
            for (int rep = 0; rep < args.check; rep++) {
                wrong += check(o, c, t, redop, root);
            }
        }
        double shown = args.reportCputime != 0 ? cpuUs : us; // -C: the time column only; the bandwidths stay
        return new PerfRow(o, sizeBytes, c.param(), Elements.name(t), redop == null ? "none" : Elements.name(redop),
                shownRoot, inPlace, shown, algbw, busbw, wrong, allocated, opTimes);
    }

    /**
     * Starts the timed iterations' time: --timer host reads the clock from the barrier's end, as nccl-tests, then
     * records the start events when {@code withEvents} (--op_times' reference, inside the timed time as nccl-tests'
     * -I); --timer events records them first and reads the clock after, for the host's time to issue (-C).
     *
     * @return the clock's reading: where the host's time to issue, and --timer host's time, count from
     */
    private long startTimer(boolean events, boolean withEvents) {
        if (events) {
            recordStart();
            return args.clock.getAsLong();
        }
        long t0 = args.clock.getAsLong();
        if (withEvents) {
            recordStart();
        }
        return t0;
    }

    /** A start event on each stream (--timer events, and --op_times' reference). */
    private void recordStart() {
        for (int k = 0; k < local; k++) {
            start[k].record(streams[k]);
        }
    }

    /**
     * --timer events: a stop event on each stream, waited for.
     *
     * @return the largest start-to-stop time of this process's GPUs, in ms
     */
    private double stopEvents() {
        double ms = 0;
        for (int k = 0; k < local; k++) {
            stop[k].record(streams[k]);
        }
        for (int k = 0; k < local; k++) {
            stop[k].synchronize();
            ms = Math.max(ms, stop[k].elapsedSince(start[k]));
        }
        return ms;
    }

    /**
     * --timer host: waits for every stream of this process, then reads the clock, as nccl-tests reads its timer
     * after its stream synchronization.
     *
     * @param t0 the clock's reading when the timed iterations began
     * @return the time from {@code t0} to the streams' completion, in ms
     */
    private double completedSince(long t0) {
        syncAll();
        return (args.clock.getAsLong() - t0) / 1e6;
    }

    /**
     * This process's first GPU's per-operation times of the last eager loop, leaving out the first -K: p10, p50,
     * p90 and max, in us (an iteration's time over -m); then the first operation's time (from the start event,
     * -K or not), and the spread of the timed loop's start across processes: the latest process's start minus the
     * earliest's by the host's monotonic clock (0 with one process; meaningful on one host, where the processes
     * share that clock). A late process holds every other one's first operation back by about that much, which
     * their times then include: a first operation far above p50 with a spread near its excess is that, not NCCL.
     * The spread is taken with two combines after the loop, outside the timed window.
     */
    private double[] opTimes(long loopStart) {
        double[] t = new double[args.iters - args.perIterSkip];
        for (int i = args.perIterSkip; i < args.iters; i++) {
            t[i - args.perIterSkip] = 1000.0 * marks[i].elapsedSince(i == 0 ? start[0] : marks[i - 1])
                    / args.aggIters;
        }
        double first = 1000.0 * marks[0].elapsedSince(start[0]) / args.aggIters;
        double spread = (combine(loopStart, ReduceOp.MAX) - combine(loopStart, ReduceOp.MIN)) / 1000.0;
        double[] p = percentiles(t);
        return new double[] {p[0], p[1], p[2], p[3], first, spread};
    }

    /** p10, p50, p90 and the maximum of {@code values} (nearest rank), which it sorts. */
    static double[] percentiles(double[] values) {
        java.util.Arrays.sort(values);
        return new double[] {nearestRank(values, 10), nearestRank(values, 50), nearestRank(values, 90),
            values[values.length - 1]};
    }

    /** The {@code p}th percentile of sorted values, by nearest rank: the ceil(p/100 n)-th smallest. */
    private static double nearestRank(double[] sorted, int p) {
        int n = sorted.length;
        return sorted[Math.min(n - 1, Math.max(0, (int) Math.ceil(p / 100.0 * n) - 1))];
    }

    // ------------------------------------------------------------------ checking

    private DeviceBuffer owner(int k, long address) {
        return address >= recv[k].address() && address < recv[k].address() + recv[k].bytes() ? recv[k] : send[k];
    }

    /** Writes the input, runs the operation once, and counts the wrong elements of every rank's result. */
    private long check(Operation o, Operation.Counts c, DataType t, ReduceOp redop, int root) {
        int ws = t.size();
        int perChunk = host.capacity() / ws;
        for (int k = 0; k < local; k++) {
            DeviceBuffer b = owner(k, sendAddr[k]);
            long off = sendAddr[k] - b.address();
            for (long s = 0; s < c.send(); s += perChunk) {
                int n = (int) Math.min(perChunk, c.send() - s);
                host.clear();
                for (int i = 0; i < n; i++) {
                    Elements.put(host, t, Pattern.input(redop, rank[k], s + i));
                }
                host.flip();
                b.slice(off + s * ws, (long) n * ws).copyFrom(host); // returns once the data has landed
            }
        }
        issueAll(o, c, t, redop, root, 0);
        syncAll();
        long wrong = 0;
        for (int k = 0; k < local; k++) {
            if (!Pattern.checked(o, rank[k], root)) {
                continue;
            }
            DeviceBuffer b = owner(k, recvAddr[k]);
            long off = recvAddr[k] - b.address();
            for (long s = 0; s < c.recv(); s += perChunk) {
                int n = (int) Math.min(perChunk, c.recv() - s);
                host.clear();
                host.limit(n * ws);
                b.slice(off + s * ws, (long) n * ws).copyTo(host);
                for (int i = 0; i < n; i++) {
                    double want = Pattern.expected(o, redop, t, nranks, root, rank[k], c.param(), s + i);
                    double got = Elements.get(host, t, i * ws);
                    if (!(Math.abs(got - want) <= Pattern.tolerance(t, redop, want))) {
                        wrong++;
                    }
                }
            }
        }
        return Math.round(combine(wrong, ReduceOp.SUM));
    }

    @Override
    public void close() {
        List<RuntimeException> failures = new ArrayList<>();
        for (Object[] group : new Object[][] {registrations.toArray(), graphs, marks == null ? new Object[0] : marks,
            start, stop, scratch, recv, send, streams}) {
            for (Object r : group) {
                if (r != null) {
                    try {
                        ((AutoCloseable) r).close();
                    } catch (RuntimeException e) {
                        failures.add(e);
                    } catch (Exception e) {
                        failures.add(new IllegalStateException(e));
                    }
                }
            }
        }
        for (Communicator c : comms) {
            try {
                c.close();
            } catch (RuntimeException e) {
                failures.add(e);
            }
        }
        if (!failures.isEmpty()) {
            RuntimeException first = failures.get(0);
            failures.stream().skip(1).forEach(first::addSuppressed);
            throw first;
        }
    }
}
