package org.nccl4j.tools.doctor;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.Pointer;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.Nccl;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;

/**
 * The doctor's measurements: copy bandwidth for each GPU pair ({@code cudaMemcpyPeer}, 256 MiB, 1 warm-up and 5
 * timed) against its path's expectation, and an all-reduce's bus bandwidth over all local GPUs (one process,
 * {@code ncclCommInitAll}, 256 MiB float sum, nccl-tests' busbw) against the slowest path's; {@link Paths} judges
 * both. On one GPU: the device-local copy bandwidth, for information.
 */
final class Measure {
    static final long BYTES = 256L << 20;
    private static final int ITERS = 5;

    private Measure() {
    }

    static List<Finding> run(Machine m) {
        List<Finding> out = new ArrayList<>();
        int n = m.gpus().size();
        if (n == 0) {
            return out;
        }
        if (n == 1) {
            double gbps = copy(0, 0);
            out.add(Finding.info("bandwidth", "GPU 0", String.format(Locale.ROOT, "one GPU: no pair to measure; "
                    + "device-local copy %.0f GB/s (256 MiB cudaMemcpy, read + write)", gbps)));
            out.add(Finding.info("bandwidth", "all-reduce", "one GPU: a one-rank all-reduce has no bus to measure"));
            return out;
        }
        List<Paths.Path> paths = Paths.all(m);
        for (Paths.Path p : paths) {
            out.add(Paths.judgeCopy(p, copy(p.from(), p.to())));
        }
        out.add(Paths.judgeAllReduce(allReduce(n), n, paths));
        return out;
    }

    private static double copy(int src, int dst) {
        try (DeviceBuffer a = DeviceBuffer.allocate(src, BYTES); DeviceBuffer b = DeviceBuffer.allocate(dst, BYTES)) {
            if (src != dst) {
                cudart.cudaSetDevice(src);
                cudart.cudaDeviceEnablePeerAccess(dst, 0);
                cudart.cudaSetDevice(dst);
                cudart.cudaDeviceEnablePeerAccess(src, 0);
                cudart.cudaGetLastError();   // "already enabled" is not an error here
            }
            Pointer to = at(b.address());
            Pointer from = at(a.address());
            check(copyOnce(to, dst, from, src), "the first copy");
            check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
            long t0 = System.nanoTime();
            for (int k = 0; k < ITERS; k++) {
                check(copyOnce(to, dst, from, src), "a timed copy");
            }
            cudart.cudaSetDevice(dst);
            check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
            cudart.cudaSetDevice(src);
            check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
            double seconds = (System.nanoTime() - t0) / 1e9 / ITERS;
            return BYTES / seconds / 1e9;
        }
    }

    /** One copy: {@code cudaMemcpyPeer} between two GPUs, {@code cudaMemcpy} device to device on one. */
    private static int copyOnce(Pointer to, int dst, Pointer from, int src) {
        if (src == dst) {
            cudart.cudaSetDevice(src);
            return cudart.cudaMemcpy(to, from, BYTES, cudart.cudaMemcpyDeviceToDevice);
        }
        return cudart.cudaMemcpyPeer(to, dst, from, src, BYTES);
    }

    private static void check(int rc, String what) {
        if (rc != 0) {
            throw new IllegalStateException(what + " failed: " + cudart.cudaGetErrorName(rc).getString() + " ("
                    + cudart.cudaGetErrorString(rc).getString() + ")");
        }
    }

    /** A JavaCPP pointer at a device address (the parameter must not be named address: the field would win). */
    private static Pointer at(long where) {
        return new Pointer() {
            {
                this.address = where;
            }
        };
    }

    private static double allReduce(int n) {
        int[] devices = new int[n];
        for (int i = 0; i < n; i++) {
            devices[i] = i;
        }
        List<Communicator> comms = Communicator.initAll(devices);
        List<AutoCloseable> open = new ArrayList<>(comms);
        try {
            Stream[] streams = new Stream[n];
            DeviceBuffer[] bufs = new DeviceBuffer[n];
            for (int i = 0; i < n; i++) {
                streams[i] = Stream.create(i);
                open.add(streams[i]);
                bufs[i] = DeviceBuffer.allocate(i, BYTES / 4, DataType.FLOAT32);
                open.add(bufs[i]);
            }
            long t0 = 0;
            for (int k = -1; k < ITERS; k++) {
                if (k == 0) {
                    for (Stream s : streams) {
                        s.synchronize();
                    }
                    t0 = System.nanoTime();
                }
                Nccl.groupStart();
                for (int i = 0; i < n; i++) {
                    comms.get(i).allReduce(bufs[i], DataType.FLOAT32, ReduceOp.SUM, streams[i]);
                }
                Nccl.groupEnd();
            }
            for (Stream s : streams) {
                s.synchronize();
            }
            double seconds = (System.nanoTime() - t0) / 1e9 / ITERS;
            return BYTES / seconds / 1e9 * 2.0 * (n - 1) / n;
        } finally {
            for (int i = open.size() - 1; i >= 0; i--) {
                try {
                    open.get(i).close();
                } catch (Exception e) {
                    // the measurement is over
                }
            }
        }
    }
}
