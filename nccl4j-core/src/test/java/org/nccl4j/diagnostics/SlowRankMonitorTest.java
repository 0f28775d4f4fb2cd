package org.nccl4j.diagnostics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.nccl4j.Communicator;
import org.nccl4j.StubFixture;
import org.nccl4j.trace.TraceDump;

/** The slow-rank verdict on synthetic timings, the bandwidth arithmetic, the cadence and the argument checks. */
class SlowRankMonitorTest extends StubFixture {
    private static SlowRankMonitor.Report judge(double factor, double minExcess, float... computeWait) {
        int n = computeWait.length / 2;
        String[] hosts = new String[n];
        long[] pids = new long[n];
        int[] devices = new int[n];
        for (int r = 0; r < n; r++) {
            hosts[r] = "node" + r;
            pids[r] = 100 + r;
            devices[r] = r % 2;
        }
        return SlowRankMonitor.judge(40, computeWait, factor, minExcess, hosts, pids, devices, new float[n]);
    }

    private static List<Integer> slow(SlowRankMonitor.Report r) {
        return r.slow().stream().map(SlowRankMonitor.RankTimes::rank).toList();
    }

    @Test
    void theRankThatSleepsBeforeEachCollectiveIsNamedAndTheOthersWaitForIt() {
        // rank 1 computes 50 ms more; ranks 0 and 2 wait for it inside the all-reduce
        SlowRankMonitor.Report r = judge(2.0, 5.0, 1.2f, 51.0f, 51.3f, 0.9f, 1.1f, 50.8f);
        assertEquals(1.2, r.medianComputeMillis(), 1e-6);
        assertEquals(List.of(1), slow(r));
        SlowRankMonitor.RankTimes t = r.slow().get(0);
        assertEquals("node1", t.host());
        assertEquals(101, t.pid());
        assertEquals(1, t.device());
        assertEquals("rank 1 (node1, pid 101, GPU 1): compute 51.30 ms, wait 0.90 ms", t.toString());
        assertEquals(3, r.all().size());
        assertEquals(40, r.step());
    }

    @Test
    void nobodyIsNamedWhenAllAreAlikeOrTheExcessIsNoise() {
        assertEquals(List.of(), slow(judge(2.0, 5.0, 10f, 1f, 10.5f, 1f, 9.8f, 1f)), "alike");
        assertEquals(List.of(), slow(judge(2.0, 5.0, 0.1f, 5f, 0.9f, 5f, 0.1f, 5f)), "9 x the median, but 0.8 ms");
        assertEquals(List.of(), slow(judge(2.0, 5.0, 60f, 1f, 60f, 1f, 61f, 1f)), "all slow: the median is slow too");
        assertEquals(List.of(), slow(judge(2.0, 0.0, 70f, 1f)), "one rank: no one to compare with");
    }

    @Test
    void anEvenNumberOfRanksTakesTheMeanOfTheMiddleTwoAndTiesAreKept() {
        SlowRankMonitor.Report r = judge(2.0, 1.0, 2f, 0f, 4f, 0f, 20f, 0f, 20f, 0f);
        assertEquals(12.0, r.medianComputeMillis(), 1e-6);
        assertEquals(List.of(), slow(r), "20 is not above 2 x 12");
        r = judge(1.5, 1.0, 2f, 0f, 2f, 0f, 2f, 0f, 9f, 0f, 9f, 0f);
        assertEquals(List.of(3, 4), slow(r), "two alike stragglers are both named");
    }

    @Test
    void theBusBandwidthIsNcclTestsFormula() {
        SlowRankMonitor.Bandwidth b = SlowRankMonitor.bandwidth(256L << 20, 0.001, 4, 500);
        assertEquals(268.435456, b.algorithmGBps(), 1e-6);
        assertEquals(268.435456 * 1.5, b.busGBps(), 1e-6);
        assertTrue(b.belowThreshold());
        assertTrue(!SlowRankMonitor.bandwidth(256L << 20, 0.001, 4, 0).belowThreshold(), "no threshold set");
        assertEquals(0, SlowRankMonitor.bandwidth(1024, 0.001, 1, 10).busGBps(), "one rank: no bus");
    }

    @Test
    void theExchangeComesEveryNStepsAndNamesThisRanksHost() {
        Communicator c = comm(0, 1);
        try (SlowRankMonitor m = SlowRankMonitor.builder(c).every(3).build()) {
            SlowRankMonitor.Report r = null;
            for (int step = 1; step <= 6; step++) {
                m.beginCollective();
                r = m.endCollective();
                if (step % 3 != 0) {
                    assertNull(r, "step " + step);
                } else {
                    assertNotNull(r, "step " + step);
                    assertEquals(step, r.step());
                }
            }
            SlowRankMonitor.RankTimes me = r.all().get(0);
            assertEquals(org.nccl4j.trace.TraceDump.localHost(), me.host());
            assertEquals(ProcessHandle.current().pid(), me.pid());
            assertEquals(List.of(), r.slow());
        }
    }

    @Test
    void eachRankSendsItsIdentityFromItsOwnPlaceInTheGather() {
        Communicator c = comm(1, 2);   // the stub's all-gather moves nothing: what rank 1 put at its offset stays
        try (SlowRankMonitor m = SlowRankMonitor.builder(c).every(1).build()) {
            m.beginCollective();
            SlowRankMonitor.Report r = m.endCollective();
            assertEquals(org.nccl4j.trace.TraceDump.localHost(), r.all().get(1).host());
            assertEquals(ProcessHandle.current().pid(), r.all().get(1).pid());
            assertEquals("", r.all().get(0).host(), "rank 0's part came from no one here");
        }
    }

    @Test
    void badSettingsAreRefusedNamingTheSetting() {
        Communicator c = comm(0, 1);
        assertEquals("every must be at least 1 step, got 0", assertThrows(IllegalArgumentException.class,
                () -> SlowRankMonitor.builder(c).every(0)).getMessage());
        assertEquals("factor must be a finite number greater than 1 (a rank k times slower than the median), got 1.0",
                assertThrows(IllegalArgumentException.class, () -> SlowRankMonitor.builder(c).factor(1.0)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> SlowRankMonitor.builder(c).factor(Double.NaN));
        assertEquals("minExcessMillis must be a finite number >= 0, got -1.0", assertThrows(
                IllegalArgumentException.class, () -> SlowRankMonitor.builder(c).minExcessMillis(-1)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> SlowRankMonitor.builder(c).minBusGBps(-0.5));
        assertEquals("comm must not be null", assertThrows(NullPointerException.class,
                () -> SlowRankMonitor.builder(null)).getMessage());
        try (SlowRankMonitor m = SlowRankMonitor.builder(c).build()) {
            assertEquals("bytes must be a positive multiple of 4 (float32 elements), got 6",
                    assertThrows(IllegalArgumentException.class, () -> m.probeBandwidth(6)).getMessage());
        }
    }
}
