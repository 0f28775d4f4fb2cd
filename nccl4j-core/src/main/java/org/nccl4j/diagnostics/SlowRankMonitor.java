package org.nccl4j.diagnostics;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;
import org.nccl4j.trace.TraceDump;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the rank that holds the others back, step after step: the per-rank timed all-reduce one writes when debugging,
 * made continuous. Each rank measures, per step, its <b>compute</b> time (from the end of its previous step's
 * collective to the start of this step's) and its <b>wait</b> (the collective itself, until its result is there).
 * Every {@link Builder#every N} steps one small all-gather ({@code ncclAllGather} of two floats per rank, on the
 * monitor's own stream) shares the window's means; a rank whose compute time is above {@link Builder#factor k} times
 * the median (and at least {@link Builder#minExcessMillis} above it) is a straggler: the monitor logs one WARN naming
 * its rank, host, process and GPU, and hands a {@link Report} to the {@link Listener}. A compute straggler makes the
 * others wait inside the collective; a rank with low compute and a long wait is waiting for someone.
 *
 * <pre>{@code
 * try (SlowRankMonitor monitor = SlowRankMonitor.builder(comm).every(10).build()) {
 *     for (int step = 0; step < steps; step++) {
 *         forwardBackward();                 // compute
 *         monitor.beginCollective();
 *         comm.allReduce(grads, DataType.FLOAT32, ReduceOp.SUM, stream);
 *         stream.synchronize();
 *         monitor.endCollective();           // every 10th call: the exchange, and a report if someone is slow
 *     }
 * }
 * }</pre>
 *
 * <p>Every rank must call {@link #endCollective()} the same number of times (the exchange is a collective). Cost:
 * per step two {@link System#nanoTime()} reads and a few array stores, no allocation; per exchange one all-gather of
 * {@code 8 x size} bytes, a synchronize of the monitor's stream, and the statistics (a sort of {@code size} floats
 * and two small native copies, which allocate a few dozen bytes). {@link #probeBandwidth(long)} measures the bus
 * bandwidth across the communicator.
 */
public final class SlowRankMonitor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SlowRankMonitor.class);
    private static final int ID_BYTES = 96;

    /** Receives each report that names at least one straggler (on every rank, with the same content). */
    @FunctionalInterface
    public interface Listener {
        /**
         * A window's verdict.
         *
         * @param report the stragglers and the window's statistics
         */
        void slowRanks(Report report);
    }

    /**
     * A rank's identity and its means over a window.
     *
     * @param rank the rank
     * @param host its host
     * @param pid its process id
     * @param device its CUDA device ordinal
     * @param computeMillis its mean compute time per step
     * @param waitMillis its mean wait inside the collective per step
     */
    public record RankTimes(int rank, String host, long pid, int device, double computeMillis, double waitMillis) {
        @Override
        public String toString() {
            return String.format(java.util.Locale.ROOT, "rank %d (%s, pid %d, GPU %d): compute %.2f ms, wait %.2f ms",
                    rank, host, pid, device, computeMillis, waitMillis);
        }
    }

    /**
     * One window's verdict.
     *
     * @param step the number of steps measured so far (the window ends here)
     * @param medianComputeMillis the median over ranks of the mean compute time
     * @param slow the stragglers, by rank
     * @param all every rank's times
     */
    public record Report(long step, double medianComputeMillis, List<RankTimes> slow, List<RankTimes> all) {
    }

    /**
     * A measured bus bandwidth ({@link #probeBandwidth(long)}).
     *
     * @param bytes the all-reduce's size
     * @param seconds the mean time of one all-reduce
     * @param algorithmGBps bytes / time
     * @param busGBps algorithmic bandwidth x 2(n-1)/n, as nccl-tests reports it
     * @param belowThreshold whether it is below {@link Builder#minBusGBps}
     */
    public record Bandwidth(long bytes, double seconds, double algorithmGBps, double busGBps,
            boolean belowThreshold) {
    }

    private final Communicator comm;
    private final int every;
    private final double factor;
    private final double minExcessMillis;
    private final double minBusGBps;
    private final Listener listener;
    private final Stream stream;
    private final DeviceBuffer exchange;
    /** This rank's slot of {@link #exchange}. */
    private final DeviceBuffer mineSlot;
    private final float[] mine = new float[2];
    private final float[] gathered;
    private final float[] sorted;
    private final String[] hosts;
    private final long[] pids;
    private final int[] devices;
    private long lastEnd;
    private long begin;
    private long computeNanos;
    private long waitNanos;
    private int inWindow;
    private long steps;
    private boolean closed;

    private SlowRankMonitor(Builder b) {
        this.comm = b.comm;
        this.every = b.every;
        this.factor = b.factor;
        this.minExcessMillis = b.minExcessMillis;
        this.minBusGBps = b.minBusGBps;
        this.listener = b.listener;
        int n = comm.size();
        this.gathered = new float[2 * n];
        this.sorted = new float[n];
        this.hosts = new String[n];
        this.pids = new long[n];
        this.devices = new int[n];
        this.stream = Stream.create(comm.device());
        DeviceBuffer ex = null;
        DeviceBuffer ids = null;
        try {
            ex = DeviceBuffer.allocate(comm.device(), 2L * n, DataType.FLOAT32);
            ids = DeviceBuffer.allocate(comm.device(), (long) ID_BYTES * n, DataType.INT8);
            byte[] id = Arrays.copyOf((org.nccl4j.trace.TraceDump.localHost() + " " + ProcessHandle.current().pid()
                    + " " + comm.device()).getBytes(StandardCharsets.UTF_8), ID_BYTES);
            byte[] mineAt = new byte[ID_BYTES * n];   // in place: this rank's part at its offset
            System.arraycopy(id, 0, mineAt, comm.rank() * ID_BYTES, ID_BYTES);
            ids.copyFrom(mineAt);
            comm.allGather(ids.address() + (long) comm.rank() * ID_BYTES, ids.address(), ID_BYTES, DataType.INT8,
                    stream);
            stream.synchronize();
            byte[] all = ids.copyTo(new byte[ID_BYTES * n]);
            for (int r = 0; r < n; r++) {
                String[] f = new String(all, r * ID_BYTES, ID_BYTES, StandardCharsets.UTF_8).trim().split(" ");
                hosts[r] = f.length > 0 ? f[0] : "?";
                pids[r] = f.length > 1 ? parseLong(f[1]) : -1;
                devices[r] = f.length > 2 ? (int) parseLong(f[2]) : -1;
            }
        } catch (RuntimeException | Error e) {
            if (ex != null) {
                ex.close();
            }
            stream.close();
            throw e;
        } finally {
            if (ids != null) {
                ids.close();
            }
        }
        this.exchange = ex;
        this.mineSlot = ex.slice((long) comm.rank() * 8, 8);
        this.lastEnd = System.nanoTime();
    }

    private static long parseLong(String s) {
        try {
            return Long.parseLong(s.trim().replace("\0", ""));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * A builder for a monitor of {@code comm}.
     *
     * @param comm the communicator whose steps are timed; the monitor's exchange runs on it
     * @return the builder
     */
    public static Builder builder(Communicator comm) {
        if (comm == null) {
            throw new NullPointerException("comm must not be null");
        }
        return new Builder(comm);
    }

    /** Marks the end of this step's compute: the collective is about to be enqueued. No allocation. */
    public void beginCollective() {
        begin = System.nanoTime();
        computeNanos += begin - lastEnd;
    }

    /**
     * Marks the end of this step's collective (call it once its result is there: after the stream's or event's
     * synchronize). Every {@link Builder#every N}th call exchanges the window's means across the communicator and
     * reports stragglers. No allocation except at an exchange.
     *
     * @return the window's report at an exchange step, else null
     * @throws IllegalStateException when the monitor is closed
     */
    public Report endCollective() {
        long now = System.nanoTime();
        waitNanos += now - begin;
        inWindow++;
        steps++;
        Report r = null;
        if (inWindow == every) {
            r = exchange();
            inWindow = 0;
            computeNanos = 0;
            waitNanos = 0;
        }
        lastEnd = System.nanoTime();   // the exchange is not the next step's compute
        return r;
    }

    private Report exchange() {
        if (closed) {
            throw new IllegalStateException("SlowRankMonitor is closed");
        }
        mine[0] = (float) (computeNanos / 1e6 / inWindow);
        mine[1] = (float) (waitNanos / 1e6 / inWindow);
        mineSlot.copyFrom(mine);
        comm.allGather(exchange, DataType.FLOAT32, stream);
        stream.synchronize();
        exchange.copyTo(gathered);
        Report r = judge(steps, gathered, factor, minExcessMillis, hosts, pids, devices, sorted);
        if (!r.slow().isEmpty()) {
            if (comm.rank() == r.slow().get(0).rank() || comm.rank() == lowestNotSlow(r)) {
                LOG.warn("nccl4j: slow rank{} after step {} (median compute {} ms per step): {}",
                        r.slow().size() > 1 ? "s" : "", r.step(), String.format(java.util.Locale.ROOT, "%.2f",
                                r.medianComputeMillis()), r.slow());
            }
            if (listener != null) {
                listener.slowRanks(r);
            }
        }
        return r;
    }

    private static int lowestNotSlow(Report r) {
        for (RankTimes t : r.all()) {
            if (!r.slow().contains(t)) {
                return t.rank();
            }
        }
        return 0;
    }

    /**
     * The verdict on one window: every rank's means ({@code times[2r]} compute, {@code times[2r+1]} wait, in ms),
     * the median compute, and the ranks above {@code factor} x median and at least {@code minExcess} ms above it.
     */
    static Report judge(long step, float[] times, double factor, double minExcess, String[] hosts, long[] pids,
            int[] devices, float[] scratch) {
        int n = times.length / 2;
        for (int r = 0; r < n; r++) {
            scratch[r] = times[2 * r];
        }
        Arrays.sort(scratch, 0, n);
        double median = n % 2 == 1 ? scratch[n / 2] : (scratch[n / 2 - 1] + scratch[n / 2]) / 2.0;
        List<RankTimes> all = new ArrayList<>(n);
        List<RankTimes> slow = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            RankTimes t = new RankTimes(r, hosts[r], pids[r], devices[r], times[2 * r], times[2 * r + 1]);
            all.add(t);
            if (n > 1 && t.computeMillis() > factor * median && t.computeMillis() - median >= minExcess) {
                slow.add(t);
            }
        }
        return new Report(step, median, List.copyOf(slow), List.copyOf(all));
    }

    /**
     * Measures the bus bandwidth across the communicator: 2 warm-up and 5 timed all-reduces of {@code bytes} (float
     * sum) on the monitor's stream; every rank must call it. Logs a WARN when the bus bandwidth is below
     * {@link Builder#minBusGBps}.
     *
     * @param bytes the size, a positive multiple of 4
     * @return the measurement
     * @throws IllegalArgumentException for a size that is not a positive multiple of 4
     */
    public Bandwidth probeBandwidth(long bytes) {
        if (bytes <= 0 || bytes % 4 != 0) {
            throw new IllegalArgumentException("bytes must be a positive multiple of 4 (float32 elements), got "
                    + bytes);
        }
        if (closed) {
            throw new IllegalStateException("SlowRankMonitor is closed");
        }
        try (DeviceBuffer b = DeviceBuffer.allocate(comm.device(), bytes / 4, DataType.FLOAT32)) {
            for (int i = 0; i < 2; i++) {
                comm.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, stream);
            }
            stream.synchronize();
            int iters = 5;
            long t0 = System.nanoTime();
            for (int i = 0; i < iters; i++) {
                comm.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, stream);
            }
            stream.synchronize();
            double seconds = (System.nanoTime() - t0) / 1e9 / iters;
            Bandwidth bw = bandwidth(bytes, seconds, comm.size(), minBusGBps);
            if (bw.belowThreshold()) {
                LOG.warn("nccl4j: rank {} of {}: all-reduce bus bandwidth {} GB/s at {} bytes is below the threshold "
                        + "{} GB/s: check the links (scripts/nccl4j-doctor)", comm.rank(), comm.size(),
                        String.format(java.util.Locale.ROOT, "%.1f", bw.busGBps()), bytes, minBusGBps);
            }
            return bw;
        }
    }

    /** nccl-tests' figures for one all-reduce of {@code bytes} taking {@code seconds} over {@code n} ranks. */
    static Bandwidth bandwidth(long bytes, double seconds, int n, double minBusGBps) {
        double alg = bytes / seconds / 1e9;
        double bus = n > 1 ? alg * 2.0 * (n - 1) / n : 0;
        return new Bandwidth(bytes, seconds, alg, bus, minBusGBps > 0 && bus < minBusGBps);
    }

    /** Frees the monitor's stream and buffer (the communicator stays open). Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        exchange.close();
        stream.close();
    }

    /** Builds a {@link SlowRankMonitor}; each setter checks its value. */
    public static final class Builder {
        private final Communicator comm;
        private int every = 10;
        private double factor = 2.0;
        private double minExcessMillis = 5.0;
        private double minBusGBps;
        private Listener listener;

        private Builder(Communicator comm) {
            this.comm = comm;
        }

        /**
         * How many steps a window has: the exchange and the verdict come every {@code n} steps (default 10).
         *
         * @param n at least 1
         * @return this builder
         */
        public Builder every(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("every must be at least 1 step, got " + n);
            }
            this.every = n;
            return this;
        }

        /**
         * k: a rank is slow when its compute time is above k x the median (default 2).
         *
         * @param k greater than 1
         * @return this builder
         */
        public Builder factor(double k) {
            if (!(k > 1.0) || Double.isInfinite(k)) {
                throw new IllegalArgumentException("factor must be a finite number greater than 1 (a rank k times"
                        + " slower than the median), got " + k);
            }
            this.factor = k;
            return this;
        }

        /**
         * How far above the median a slow rank's compute time must also be (default 5 ms), so that noise on steps of
         * almost no compute names no one.
         *
         * @param millis zero or more
         * @return this builder
         */
        public Builder minExcessMillis(double millis) {
            if (!(millis >= 0) || Double.isInfinite(millis)) {
                throw new IllegalArgumentException("minExcessMillis must be a finite number >= 0, got " + millis);
            }
            this.minExcessMillis = millis;
            return this;
        }

        /**
         * The bus bandwidth below which {@link #probeBandwidth} warns (0, the default: never).
         *
         * @param gbps GB/s, zero or more
         * @return this builder
         */
        public Builder minBusGBps(double gbps) {
            if (!(gbps >= 0) || Double.isInfinite(gbps)) {
                throw new IllegalArgumentException("minBusGBps must be a finite number >= 0, got " + gbps);
            }
            this.minBusGBps = gbps;
            return this;
        }

        /**
         * Who hears of stragglers besides the log.
         *
         * @param listener called on the exchanging thread with each report naming a straggler, or null
         * @return this builder
         */
        public Builder listener(Listener listener) {
            this.listener = listener;
            return this;
        }

        /**
         * Makes the monitor: a stream and two small buffers on the communicator's device, and one all-gather of each
         * rank's host, process and GPU (every rank must build its monitor).
         *
         * @return the monitor
         */
        public SlowRankMonitor build() {
            return new SlowRankMonitor(this);
        }
    }
}
