package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The core API in one process on one GPU: a one-rank communicator ({@code ncclCommInitAll} on device 0), the whole
 * collective matrix, PreMulSum, a group, CUDA graph capture and replay, and streams and events on a real device.
 * Runs on any machine with a GPU.
 */
@Tag("gpu")
class CoreOneGpuTest extends CommunicatorGpuSuite {
    @Override
    protected String label() {
        return "1 process x 1 GPU";
    }

    @Override
    protected int graphReplays() {
        return 4;
    }

    @BeforeAll
    void setUp() {
        GpuAssumptions.requireGpus(1);
        System.out.println(Nccl.library().report());
        comm = Communicator.initAll(0).get(0);
        stream = Stream.create(comm.device());
    }

    @Test
    void oneRankCommunicatorOnDeviceZero() {
        assertEquals(0, comm.rank());
        assertEquals(1, comm.size());
        assertEquals(0, comm.device());
        assertEquals(NcclResult.SUCCESS, comm.asyncError());
    }

    @Test
    void eventsOrderTwoStreamsAndTime() {
        int n = 1 << 20;
        float[] ones = new float[n];
        java.util.Arrays.fill(ones, 1.5f);
        try (Stream other = Stream.create(0);
             Event start = Event.create(0);
             Event done = Event.create(0);
             DeviceBuffer b = DeviceBuffer.allocate(0, n, DataType.FLOAT32).copyFrom(ones)) {
            start.record(stream);
            comm.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, stream);
            done.record(stream);
            other.waitFor(done);
            other.synchronize();
            done.synchronize();
            float ms = done.elapsedSince(start);
            assertTrue(ms >= 0 && ms < 10_000, "elapsed " + ms + " ms");
            float[] got = b.copyTo(new float[n]);
            assertEquals(1.5f, got[0]);
            assertEquals(1.5f, got[n - 1]);
        }
    }

}
