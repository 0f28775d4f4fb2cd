package org.nccl4j.tools.harness;

import java.lang.management.ManagementFactory;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;

/**
 * The host cost of eager all-reduces on several communicators that differ in one setting, timed side by side:
 * round after round, each communicator issues its loop of in-place all-reduces on {@code buffer}, in an order that
 * turns every round so that no one always goes first. Records each round's microseconds per operation (the host's
 * time to issue, between two waits on the stream) and the heap bytes this thread allocated. The cost examples
 * ({@code HangScenarios cost}, {@code MetricsCost}) compare medians of these rounds.
 */
final class EagerRounds {
    /** Called after each communicator's loop: which communicator, and the round (negative while warming up). */
    interface AfterLoop {
        void after(int communicator, int round);
    }

    /**
     * What the rounds cost, communicator by communicator: the host's time per operation and the heap it allocated.
     *
     * @param microsPerOp microseconds per operation, by communicator and round
     * @param heapBytes heap bytes allocated while issuing, by communicator, over the measured rounds
     */
    record RoundCosts(double[][] microsPerOp, long[] heapBytes) {
    }

    private EagerRounds() {
    }

    /**
     * Runs {@code warmup} rounds that are not recorded, then {@code rounds} that are.
     *
     * @param comms the communicators compared, all on {@code stream}'s device
     * @param ops the operations per loop of each communicator
     * @param buffer the buffer reduced in place
     * @param stream the stream the operations are enqueued on
     * @param rounds the recorded rounds
     * @param warmup the rounds before them
     * @param after called after each loop (nothing when null)
     * @return the times and allocations
     */
    static RoundCosts time(Communicator[] comms, int[] ops, DeviceBuffer buffer, Stream stream, int rounds, int warmup,
            AfterLoop after) {
        com.sun.management.ThreadMXBean bean = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        bean.setThreadAllocatedMemoryEnabled(true);
        int n = comms.length;
        double[][] us = new double[n][rounds];
        long[] bytes = new long[n];
        for (int round = -warmup; round < rounds; round++) {
            for (int j = 0; j < n; j++) {
                int i = (j + Math.floorMod(round, n)) % n;   // the order turns
                stream.synchronize();
                long a0 = bean.getCurrentThreadAllocatedBytes();
                long t0 = System.nanoTime();
                for (int k = 0; k < ops[i]; k++) {
                    comms[i].allReduce(buffer, DataType.FLOAT32, ReduceOp.SUM, stream);
                }
                long t1 = System.nanoTime();
                long a1 = bean.getCurrentThreadAllocatedBytes();
                stream.synchronize();
                if (round >= 0) {
                    us[i][round] = (t1 - t0) / 1e3 / ops[i];
                    bytes[i] += a1 - a0;
                }
                if (after != null) {
                    after.after(i, round);
                }
            }
        }
        return new RoundCosts(us, bytes);
    }
}
