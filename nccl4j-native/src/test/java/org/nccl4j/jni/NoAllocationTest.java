package org.nccl4j.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A raw collective call allocates nothing on the Java heap: primitives in, an int out, one JNI transition.
 *
 * <p>Measured with the per-thread allocation counter of HotSpot (com.sun.management.ThreadMXBean), which
 * counts every byte the thread allocates on the heap. Any object per call would show as at least 16 bytes x
 * 100,000 calls = 1.6 MB; the bound of 1 KiB for the whole loop leaves room only for noise of the
 * measurement itself. The stub's own work (getenv, snprintf) is native memory, which this counter does not
 * see; with NCCL_STUB_LOG unset the stub does no file I/O either.
 */
class NoAllocationTest {
    static final int CALLS = 100_000;
    static final long SEND = 0x7f00_1234_5678L, RECV = 0x7f00_8765_4320L, COMM = 0x5555_0000_1000L,
            STREAM = 0x7f11_2233_4450L;

    @AfterEach
    void restore() {
        StubNccl.useFull();
    }

    private static int allReduces(int n) {
        int failures = 0;
        for (int i = 0; i < n; i++) {
            failures += NcclNative.ncclAllReduce(SEND, RECV, 1L << 20, 7, 0, COMM, STREAM);
        }
        return failures;
    }

    private static int sends(int n) {
        int failures = 0;
        for (int i = 0; i < n; i++) {
            failures += NcclNative.ncclSend(SEND, i, 7, 1, COMM, STREAM);
        }
        return failures;
    }

    @Test
    void rawCollectiveCallsAllocateNoJavaHeap() {
        StubNccl.useFull();
        NcclNative.unsetenv("NCCL_STUB_LOG");
        com.sun.management.ThreadMXBean bean = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assumeTrue(bean.isThreadAllocatedMemorySupported(), "this JVM cannot count allocated bytes per thread");
        bean.setThreadAllocatedMemoryEnabled(true);
        assumeTrue(bean.isThreadAllocatedMemoryEnabled(), "per-thread allocation counting could not be enabled");

        // warm up: JNI linking and JIT compilation of the loops happen here, not in the measured part
        for (int round = 0; round < 3; round++) {
            assertEquals(0, allReduces(CALLS));
            assertEquals(0, sends(CALLS));
        }

        long empty0 = bean.getCurrentThreadAllocatedBytes();
        long empty1 = bean.getCurrentThreadAllocatedBytes();
        long overhead = empty1 - empty0; // what reading the counter itself costs, if anything

        long before = bean.getCurrentThreadAllocatedBytes();
        int failures = allReduces(CALLS);
        long afterAllReduce = bean.getCurrentThreadAllocatedBytes();
        failures += sends(CALLS);
        long afterSend = bean.getCurrentThreadAllocatedBytes();

        assertEquals(0, failures);
        long allReduceBytes = afterAllReduce - before - overhead;
        long sendBytes = afterSend - afterAllReduce - overhead;
        assertTrue(allReduceBytes < 1024, CALLS + " ncclAllReduce calls allocated " + allReduceBytes + " bytes");
        assertTrue(sendBytes < 1024, CALLS + " ncclSend calls allocated " + sendBytes + " bytes");
    }
}
