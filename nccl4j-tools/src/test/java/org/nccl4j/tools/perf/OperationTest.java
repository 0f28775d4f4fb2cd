package org.nccl4j.tools.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class OperationTest {
    @Test
    void busBandwidthFactors() {
        int[] ns = {2, 4, 8};
        double[] allReduce = {1.0, 1.5, 1.75};
        double[] nMinus1OverN = {0.5, 0.75, 0.875};
        for (int i = 0; i < ns.length; i++) {
            int n = ns[i];
            assertEquals(allReduce[i], Operation.ALL_REDUCE.busFactor(n), 1e-12, "all_reduce n=" + n);
            for (Operation o : new Operation[] {Operation.ALL_GATHER, Operation.REDUCE_SCATTER, Operation.ALLTOALL,
                Operation.GATHER, Operation.SCATTER}) {
                assertEquals(nMinus1OverN[i], o.busFactor(n), 1e-12, o + " n=" + n);
            }
            for (Operation o : new Operation[] {Operation.BROADCAST, Operation.REDUCE, Operation.SENDRECV}) {
                assertEquals(1.0, o.busFactor(n), 0, o + " n=" + n);
            }
        }
    }

    @Test
    void countsFollowNcclTests() {
        // all_reduce: the whole size on every rank
        assertEquals(new Operation.Counts(2, 2, 2, 0, 0), Operation.ALL_REDUCE.counts(8, 4, 2));
        // all_gather 1 MiB of float over 4 ranks: 65536 elements per rank; size column = total output
        Operation.Counts ag = Operation.ALL_GATHER.counts(1 << 20, 4, 4);
        assertEquals(new Operation.Counts(65536, 262144, 65536, 65536, 0), ag);
        assertEquals(1 << 20, ag.sizeBytes(4));
        // per-rank counts are rounded down to 16 bytes: 8 B of float over 2 ranks is nothing
        assertEquals(new Operation.Counts(0, 0, 0, 0, 0), Operation.ALL_GATHER.counts(8, 4, 2));
        assertEquals(new Operation.Counts(8, 4, 4, 0, 4), Operation.REDUCE_SCATTER.counts(32, 4, 2));
        assertEquals(new Operation.Counts(8, 8, 4, 0, 0), Operation.ALLTOALL.counts(40, 4, 2));
        assertEquals(new Operation.Counts(4, 8, 4, 4, 0), Operation.GATHER.counts(32, 4, 2));
        assertEquals(new Operation.Counts(8, 4, 4, 0, 4), Operation.SCATTER.counts(32, 4, 2));
        assertEquals(new Operation.Counts(3, 3, 3, 0, 0), Operation.SENDRECV.counts(12, 4, 8));
        assertEquals(new Operation.Counts(10, 10, 10, 0, 0), Operation.BROADCAST.counts(10, 1, 8));
        assertEquals(new Operation.Counts(5, 5, 5, 0, 0), Operation.REDUCE.counts(40, 8, 8));
        // 8-byte types: per-rank counts even
        assertEquals(new Operation.Counts(2, 6, 2, 2, 0), Operation.ALL_GATHER.counts(7 * 8, 8, 3));
    }

    @Test
    void namesAndKinds() {
        assertEquals("all_reduce", Operation.ALL_REDUCE.perfName());
        assertEquals(Operation.SENDRECV, Operation.byName("SendRecv"));
        assertEquals(Operation.ALLTOALL, Operation.byName("alltoall_perf"));
        assertEquals(null, Operation.byName("bisection"));
        assertEquals(true, Operation.REDUCE.rooted() && Operation.REDUCE.reduces());
        assertEquals(false, Operation.ALL_GATHER.rooted() || Operation.ALL_GATHER.reduces());
    }
}
