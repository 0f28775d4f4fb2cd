package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicTest;

/**
 * GPU checks beyond {@link CollectiveMatrix}, on the communicators this process drives (one rank per process, or
 * several under one group): PreMulSum with host and device scalars, several collectives in one group, a collective
 * captured in a CUDA graph and replayed, and a split by parity. Every result is checked element by element against
 * values computed on the host.
 */
final class CommunicatorChecks {
    private final List<Communicator> comms;
    private final List<Stream> streams;
    private final int size;

    CommunicatorChecks(List<Communicator> comms, List<Stream> streams) {
        this.comms = comms;
        this.streams = streams;
        this.size = comms.get(0).size();
    }

    /** PreMulSum over every type it supports here, with a host and a device scalar. */
    List<DynamicTest> preMulSumTests(String mode) {
        List<DynamicTest> tests = new ArrayList<>();
        for (DataType t : new DataType[] {DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16,
            DataType.INT32, DataType.INT64, DataType.UINT8}) {
            for (boolean device : new boolean[] {false, true}) {
                tests.add(DynamicTest.dynamicTest(mode + " PreMulSum " + t + (device ? " device" : " host") + " scalar",
                        () -> preMulSum(t, device)));
            }
        }
        return tests;
    }

    private void preMulSum(DataType t, boolean deviceScalar) {
        double scalar = t.isFloating() ? 0.5 : 3;
        int n = 1001;
        List<ReduceOp.PreMulSum> ops = new ArrayList<>();
        List<DeviceBuffer> bufs = new ArrayList<>();
        List<DeviceBuffer> scalars = new ArrayList<>();
        try {
            for (Communicator c : comms) {
                double[] v = new double[n];
                for (int i = 0; i < n; i++) {
                    v[i] = HostData.input(t, c.rank(), i) * 2;
                }
                bufs.add(DeviceBuffer.allocate(c.device(), n, t).copyFrom(HostData.encode(t, v)));
                if (deviceScalar) {
                    DeviceBuffer s = DeviceBuffer.allocate(c.device(), 1, t).copyFrom(HostData.encode(t, new double[] {scalar}));
                    scalars.add(s);
                    ops.add(c.createPreMulSum(s, t));
                } else {
                    ops.add(c.createPreMulSum(scalar, t));
                }
            }
            try (Group g = Nccl.group()) {
                for (int k = 0; k < comms.size(); k++) {
                    comms.get(k).allReduce(bufs.get(k), t, ops.get(k), streams.get(k));
                }
            }
            for (int k = 0; k < comms.size(); k++) {
                streams.get(k).synchronize();
                ByteBuffer got = bufs.get(k).toByteBuffer();
                for (int i = 0; i < n; i++) {
                    double expected = 0;
                    for (int r = 0; r < size; r++) {
                        expected += HostData.input(t, r, i) * 2 * scalar;
                    }
                    assertEquals(expected, HostData.get(got, t, i), "rank " + comms.get(k).rank() + " element " + i);
                }
            }
        } finally {
            ops.forEach(ReduceOp.PreMulSum::close);
            bufs.forEach(DeviceBuffer::close);
            scalars.forEach(DeviceBuffer::close);
        }
    }

    /**
     * An all-reduce (MAX, int64), a broadcast from the last rank (float64) and an all-gather (int32) issued in one
     * group on every communicator, checked after one synchronize.
     */
    void threeCollectivesInOneGroup() {
        int n = 2053;
        int last = size - 1;
        List<DeviceBuffer> all = new ArrayList<>();
        try {
            List<DeviceBuffer[]> per = new ArrayList<>();
            for (Communicator c : comms) {
                int r = c.rank();
                DeviceBuffer max = DeviceBuffer.allocate(c.device(), n, DataType.INT64)
                        .copyFrom(HostData.encode(DataType.INT64, values(n, i -> HostData.input(DataType.INT64, r, i))));
                DeviceBuffer bc = DeviceBuffer.allocate(c.device(), n, DataType.FLOAT64)
                        .copyFrom(HostData.encode(DataType.FLOAT64, values(n, i -> r == last ? i * 0.25 : -1)));
                DeviceBuffer part = DeviceBuffer.allocate(c.device(), n, DataType.INT32)
                        .copyFrom(HostData.encode(DataType.INT32, values(n, i -> r * 100_000 + i)));
                DeviceBuffer gathered = DeviceBuffer.allocate(c.device(), (long) n * size, DataType.INT32).fill(0);
                DeviceBuffer[] b = {max, bc, part, gathered};
                per.add(b);
                all.addAll(List.of(b));
            }
            try (Group g = Nccl.group()) {
                for (int k = 0; k < comms.size(); k++) {
                    Communicator c = comms.get(k);
                    DeviceBuffer[] b = per.get(k);
                    c.allReduce(b[0], DataType.INT64, ReduceOp.MAX, streams.get(k));
                    c.broadcast(b[1], DataType.FLOAT64, last, streams.get(k));
                    c.allGather(b[2], b[3], DataType.INT32, streams.get(k));
                }
            }
            for (int k = 0; k < comms.size(); k++) {
                streams.get(k).synchronize();
                DeviceBuffer[] b = per.get(k);
                String who = "rank " + comms.get(k).rank() + " ";
                long[] max = b[0].copyTo(new long[n]);
                double[] bc = b[1].copyTo(new double[n]);
                int[] gathered = b[3].copyTo(new int[n * size]);
                for (int i = 0; i < n; i++) {
                    double m = Double.NEGATIVE_INFINITY;
                    for (int r = 0; r < size; r++) {
                        m = Math.max(m, HostData.input(DataType.INT64, r, i));
                    }
                    assertEquals((long) m, max[i], who + "allReduce MAX element " + i);
                    assertEquals(i * 0.25, bc[i], who + "broadcast element " + i);
                }
                for (int j = 0; j < n * size; j++) {
                    assertEquals((j / n) * 100_000 + j % n, gathered[j], who + "allGather element " + j);
                }
            }
        } finally {
            all.forEach(DeviceBuffer::close);
        }
    }

    /**
     * An in-place int32 SUM all-reduce captured into a CUDA graph on each communicator's stream, replayed
     * {@code replays} times: each replay multiplies every element by the world size. One communicator per
     * process (a capture per process).
     */
    void allReduceCapturedInAGraphAndReplayed(int replays) {
        Communicator c = comms.get(0);
        Stream s = streams.get(0);
        int n = 1537;
        int[] start = new int[n];
        for (int i = 0; i < n; i++) {
            start[i] = (c.rank() == 0 ? 1 : 0) + i % 7; // the sum over ranks is (1 + size * (i % 7))
        }
        try (DeviceBuffer b = DeviceBuffer.allocate(c.device(), n, DataType.INT32).copyFrom(start)) {
            s.beginCapture();
            CudaGraph graph;
            try {
                c.allReduce(b, DataType.INT32, ReduceOp.SUM, s);
            } finally {
                graph = s.endCapture();
            }
            try (CudaGraph g = graph) {
                int[] untouched = b.copyTo(new int[n]);
                assertEquals(start[5], untouched[5], "a captured all-reduce must not run before a launch");
                for (int k = 0; k < replays; k++) {
                    g.launch(s);
                }
                s.synchronize();
            }
            int[] got = b.copyTo(new int[n]);
            long factor = 1;
            for (int k = 1; k < replays; k++) {
                factor *= size;
            }
            for (int i = 0; i < n; i++) {
                assertEquals((1 + size * (i % 7)) * factor, got[i], "rank " + c.rank() + " element " + i + " after "
                        + replays + " replays");
            }
        }
    }

    /**
     * {@code split(rank % 2, rank)}: two communicators, the even and the odd ranks, each all-reducing its own
     * members' values. One communicator per process.
     */
    void splitByParity() {
        Communicator c = comms.get(0);
        int parity = c.rank() % 2;
        int members = (size - parity + 1) / 2;
        try (Communicator child = c.split(parity, c.rank());
             DeviceBuffer b = DeviceBuffer.allocate(c.device(), 999, DataType.FLOAT64)) {
            assertEquals(members, child.size(), "ranks of parity " + parity);
            assertEquals(c.rank() / 2, child.rank());
            b.copyFrom(values(999, i -> c.rank() * 1000.0 + i));
            child.allReduce(b, DataType.FLOAT64, ReduceOp.SUM, streams.get(0));
            streams.get(0).synchronize();
            double[] got = b.copyTo(new double[999]);
            for (int i = 0; i < 999; i++) {
                double sum = 0;
                for (int r = parity; r < size; r += 2) {
                    sum += r * 1000.0 + i;
                }
                assertEquals(sum, got[i], "rank " + c.rank() + " (child rank " + child.rank() + ") element " + i);
            }
        }
    }

    private static double[] values(int n, java.util.function.IntToDoubleFunction f) {
        double[] d = new double[n];
        for (int i = 0; i < n; i++) {
            d[i] = f.applyAsDouble(i);
        }
        return d;
    }
}
