package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;

/**
 * The hot path of the idiomatic API: a collective call, checks included (the whole-element check of the count,
 * the liveness of a slice's parent), allocates nothing on the Java heap, on any kind of buffer (cudaMalloc, a slice,
 * a symmetric window's memory);
 * and the {@link OperationObserver} sees each enqueued operation once, in order.
 *
 * <p>Allocation is measured with HotSpot's per-thread counter (com.sun.management.ThreadMXBean), which counts
 * every byte this thread allocates on the heap. One object per call would show as at least 16 bytes x
 * 100,000 calls = 1.6 MB; the bound of 1 KiB per loop of 100,000 calls leaves room only for noise of the
 * measurement itself (a safepoint or a deoptimization allocating a few objects). The stub's own work is native
 * memory, which the counter does not see, and with NCCL_STUB_LOG unset it does no file I/O.
 */
class HotPathTest extends StubFixture {
    static final int CALLS = 100_000;
    static final long SEND = 0x7f00_1234_5600L;
    static final long RECV = 0x7f00_8765_4300L;

    private Communicator comm;
    private Stream stream;
    private DeviceBuffer small;
    private DeviceBuffer large;
    private DeviceBuffer slice;
    private ReduceOp.PreMulSum preMulSum;
    private Window window;

    @BeforeEach
    void setUp() {
        comm = comm(1, 4);
        stream = stream(0);
        small = buffer(0, 256, DataType.FLOAT32);
        large = buffer(0, 1024, DataType.FLOAT32);
        slice = large.slice(1024, 1024); // 256 floats, as small
        preMulSum = later(comm.createPreMulSum(0.5, DataType.FLOAT32));
        window = later(Window.allocate(comm, 256, DataType.FLOAT32));
    }

    interface Loop {
        void run(int n);
    }

    private long allocatedBy(com.sun.management.ThreadMXBean bean, Loop loop) {
        for (int round = 0; round < 3; round++) {
            loop.run(CALLS); // warm up: JNI linking and JIT compilation happen here
        }
        long overhead = -bean.getCurrentThreadAllocatedBytes() + bean.getCurrentThreadAllocatedBytes();
        long before = bean.getCurrentThreadAllocatedBytes();
        loop.run(CALLS);
        long after = bean.getCurrentThreadAllocatedBytes();
        return after - before - overhead;
    }

    @Test
    void collectivesAllocateNothingOnTheJavaHeap() {
        com.sun.management.ThreadMXBean bean = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assumeTrue(bean.isThreadAllocatedMemorySupported(), "this JVM cannot count allocated bytes per thread");
        bean.setThreadAllocatedMemoryEnabled(true);
        assumeTrue(bean.isThreadAllocatedMemoryEnabled(), "per-thread allocation counting could not be enabled");
        NcclNative.unsetenv("NCCL_STUB_LOG");

        List<String> report = new ArrayList<>();
        long[] results = {
            allocatedBy(bean, n -> {
                for (int i = 0; i < n; i++) {
                    comm.allReduce(small, DataType.FLOAT32, ReduceOp.SUM, stream);
                }
            }),
            allocatedBy(bean, n -> {
                for (int i = 0; i < n; i++) {
                    comm.allReduce(small, large, DataType.FLOAT32, ReduceOp.MAX, stream);
                }
            }),
            allocatedBy(bean, n -> {
                for (int i = 0; i < n; i++) {
                    comm.allReduce(SEND, RECV, i, DataType.FLOAT32, preMulSum, stream);
                }
            }),
            allocatedBy(bean, n -> {
                for (int i = 0; i < n; i++) {
                    comm.allGather(large, DataType.FLOAT32, stream);
                }
            }),
            allocatedBy(bean, n -> {
                for (int i = 0; i < n; i++) {
                    comm.send(SEND, i, DataType.FLOAT16, i & 3, stream);
                }
            }),
            allocatedBy(bean, n -> {
                for (int i = 0; i < n; i++) {
                    comm.allReduce(slice, small, DataType.FLOAT32, ReduceOp.SUM, stream);
                }
            }),
            allocatedBy(bean, n -> {
                DeviceBuffer w = window.buffer();
                for (int i = 0; i < n; i++) {
                    comm.allReduce(w, DataType.FLOAT32, ReduceOp.SUM, stream);
                }
            }),
        };
        String[] names = {"allReduce(in place)", "allReduce(send, recv)", "allReduce(raw, PreMulSum)",
            "allGather(in place)", "send(raw)", "allReduce(slice, recv)", "allReduce(symmetric window, in place)"};
        for (int i = 0; i < results.length; i++) {
            report.add(names[i] + ": " + results[i] + " bytes");
        }
        assertEquals(7 * 4L * CALLS, comm.operationsEnqueued(), "every call was enqueued: " + report);
        for (int i = 0; i < results.length; i++) {
            assertTrue(results[i] < 1024, CALLS + " calls allocated too much: " + report);
        }
    }

    @Test
    void theObserverSeesEveryOperationInOrder() {
        List<String> seen = new ArrayList<>();
        List<Communicator> comms = new ArrayList<>();
        comm.observe((c, seq, fn, bytes, st) -> {
            comms.add(c);
            seen.add(seq + " " + fn + " " + bytes + " " + hex(st));
        });
        String s = " " + hex(stream.handle());
        DeviceBuffer n = small; // 256 floats = 1024 bytes
        DeviceBuffer sn = large; // 1024 floats, 4 ranks x 256
        comm.allReduce(n, DataType.FLOAT32, ReduceOp.SUM, stream);
        comm.broadcast(n, DataType.FLOAT32, 0, stream);
        comm.reduce(n, DataType.FLOAT32, ReduceOp.SUM, 0, stream);
        comm.allGather(n, sn, DataType.FLOAT32, stream);
        comm.reduceScatter(sn, n, DataType.FLOAT32, ReduceOp.SUM, stream);
        comm.alltoAll(sn, sn, DataType.FLOAT32, stream);
        comm.gather(n, sn, DataType.FLOAT32, 1, stream);
        comm.scatter(sn, n, DataType.FLOAT32, 1, stream);
        comm.send(n, DataType.FLOAT32, 2, stream);
        comm.recv(SEND, 10, DataType.FLOAT64, 2, stream);
        Stream other = Stream.wrap(0xabc0, 0);
        comm.allReduce(SEND, RECV, 3, DataType.INT8, ReduceOp.SUM, other);
        assertEquals(List.of("1 ncclAllReduce 1024" + s, "2 ncclBroadcast 1024" + s, "3 ncclReduce 1024" + s,
                "4 ncclAllGather 1024" + s, "5 ncclReduceScatter 4096" + s, "6 ncclAlltoAll 4096" + s,
                "7 ncclGather 1024" + s, "8 ncclScatter 1024" + s, "9 ncclSend 1024" + s, "10 ncclRecv 80" + s,
                "11 ncclAllReduce 3 0xabc0"), seen);
        comms.forEach(c -> assertSame(comm, c));

        stub.result(NcclFunction.ncclAllReduce, 4);
        assertThrows(NcclException.class, () -> comm.allReduce(n, DataType.FLOAT32, ReduceOp.SUM, stream));
        assertThrows(IllegalArgumentException.class, () -> comm.send(n, DataType.FLOAT32, 9, stream));
        assertEquals(11, seen.size(), "failed and rejected operations are not observed");
        assertEquals(11, comm.operationsEnqueued());

        comm.observe(null);
        comm.send(n, DataType.FLOAT32, 2, stream);
        assertEquals(11, seen.size(), "observer removed");
        assertEquals(12, comm.operationsEnqueued());
    }

    @Test
    void eachCommunicatorCountsItsOwnSequence() {
        Communicator other = comm(2, 4);
        List<String> seen = new ArrayList<>();
        comm.observe((c, seq, fn, bytes, st) -> seen.add("a" + seq));
        other.observe((c, seq, fn, bytes, st) -> seen.add("b" + seq));
        comm.send(SEND, 1, DataType.INT8, 0, stream);
        other.send(SEND, 1, DataType.INT8, 0, stream);
        comm.send(SEND, 1, DataType.INT8, 0, stream);
        assertEquals(List.of("a1", "b1", "a2"), seen);
    }
}
