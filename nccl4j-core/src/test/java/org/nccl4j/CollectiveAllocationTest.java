package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.jni.StubNccl;

/**
 * A collective call through the idiomatic API (checks, then one JNI call, then the flight recorder's array stores)
 * allocates nothing on the Java heap, with the watchdog on.
 *
 * <p>Runs against the stub NCCL (with its call log off, so it does no I/O) and a fake CUDA runtime, and counts
 * the bytes this thread allocates with HotSpot's per-thread counter (com.sun.management.ThreadMXBean). Any
 * object per call would show as at least 16 bytes x 100,000 calls = 1.6 MB; the bound of 1 KiB per loop leaves
 * room only for the noise of the measurement. The JMH benchmark CollectiveAllocationBenchmark (nccl4j-examples,
 * test sources) reports the same as gc.alloc.rate.norm.
 */
class CollectiveAllocationTest {
    static final int CALLS = 100_000;

    @AfterEach
    void restore() {
        CudaCalls.useBackend(null);
        StubNccl.useFull();
    }

    @Test
    void idiomaticCollectivesAllocateNothing() {
        FakeCuda.install(1);
        StubNccl.useFull();
        NcclNative.unsetenv("NCCL_STUB_LOG");
        com.sun.management.ThreadMXBean bean = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assumeTrue(bean.isThreadAllocatedMemorySupported(), "this JVM cannot count allocated bytes per thread");
        bean.setThreadAllocatedMemoryEnabled(true);
        assumeTrue(bean.isThreadAllocatedMemoryEnabled(), "per-thread allocation counting could not be enabled");

        // with the watchdog on (it runs on its own thread) and the flight recorder recording every call
        try (Communicator comm = Communicator.create(0, 1, UniqueId.of(new byte[UniqueId.BYTES]), 0,
                CommConfig.builder().watchdog(true).build());
             Stream stream = Stream.create(0);
             DeviceBuffer send = DeviceBuffer.allocate(0, 1 << 20);
             DeviceBuffer recv = DeviceBuffer.allocate(0, 1 << 20);
             Window window = Window.allocate(comm, 1 << 20)) {
            DeviceBuffer symmetric = window.buffer();
            Loop[] loops = {
                n -> {
                    for (int i = 0; i < n; i++) {
                        comm.allReduce(send, recv, DataType.FLOAT32, ReduceOp.SUM, stream);
                    }
                },
                n -> {
                    for (int i = 0; i < n; i++) {
                        comm.broadcast(send, recv, DataType.FLOAT32, 0, stream);
                    }
                },
                n -> {
                    for (int i = 0; i < n; i++) {
                        comm.allGather(send, recv, DataType.BFLOAT16, stream);
                    }
                },
                n -> {
                    for (int i = 0; i < n; i++) {
                        comm.send(send, DataType.INT8, 0, stream);
                        comm.recv(recv, DataType.INT8, 0, stream);
                    }
                },
                n -> {
                    for (int i = 0; i < n; i++) {
                        comm.allReduce(symmetric, DataType.FLOAT32, ReduceOp.SUM, stream);
                    }
                },
                n -> {
                    for (int i = 0; i < n; i++) {
                        Nccl.groupStart();
                        try {
                            comm.send(send, DataType.INT8, 0, stream);
                            comm.recv(recv, DataType.INT8, 0, stream);
                        } finally {
                            Nccl.groupEnd();
                        }
                    }
                },
            };
            String[] names = {"allReduce", "broadcast", "allGather", "send+recv", "allReduce(symmetric window)",
                "groupStart+send+recv+groupEnd"};
            for (int round = 0; round < 3; round++) { // warm up: JNI linking and JIT compilation happen here
                for (Loop l : loops) {
                    l.run(CALLS);
                }
            }
            long empty0 = bean.getCurrentThreadAllocatedBytes();
            long overhead = bean.getCurrentThreadAllocatedBytes() - empty0;
            for (int k = 0; k < loops.length; k++) {
                long before = bean.getCurrentThreadAllocatedBytes();
                loops[k].run(CALLS);
                long bytes = bean.getCurrentThreadAllocatedBytes() - before - overhead;
                assertTrue(bytes < 1024, CALLS + " " + names[k] + " calls allocated " + bytes + " bytes");
            }
            assertEquals(3L * CALLS * 8 + 8L * CALLS, comm.operationsEnqueued());
        }
    }

    @FunctionalInterface
    private interface Loop {
        void run(int n);
    }
}
