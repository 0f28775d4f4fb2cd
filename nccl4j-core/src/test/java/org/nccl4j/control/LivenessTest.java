package org.nccl4j.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.nccl4j.CommConfig;
import org.nccl4j.Communicator;
import org.nccl4j.CommunicatorFailedException;
import org.nccl4j.RemoteErrorException;
import org.nccl4j.StubFixture;
import org.nccl4j.trace.TraceDump;

/** The liveness channel over loopback, and the watchdog failing a communicator whose peer is gone. */
class LivenessTest extends StubFixture {

    @Test
    void aRankThatDiesIsNamedToEveryOtherAndOneThatLeavesIsNot() throws Exception {
        Liveness[] ranks = channel(4, null);
        Liveness r0 = ranks[0], r1 = ranks[1], r2 = ranks[2], r3 = ranks[3];
        try {
            Thread.sleep(100);   // the hellos arrive
            r3.close();          // leaves on purpose
            r2.dropWithoutGoodbye();
            within(5000, () -> r1.anyLost() && r0.anyLost() ? true : null, "rank 2's loss reaching ranks 0 and 1");
            Thread.sleep(100);
            List<RankProcess> seen = r1.lost();
            assertEquals(1, seen.size(), seen.toString());
            assertEquals(2, seen.get(0).rank());
            assertEquals(ProcessHandle.current().pid(), seen.get(0).pid());
            assertEquals(TraceDump.localHost(), seen.get(0).host());
            assertEquals(List.of(2), r0.lost().stream().map(RankProcess::rank).toList(), "rank 3 said goodbye");
        } finally {
            r1.close();
            r0.close();
        }
    }

    @Test
    void whenRankZeroDiesEveryRankSeesItAndWhenItLeavesNoneDoes() throws Exception {
        Liveness[] ranks = channel(2, null);
        Liveness r0 = ranks[0], r1 = ranks[1];
        Thread.sleep(100);
        r0.dropWithoutGoodbye();
        within(5000, () -> r1.anyLost() ? true : null, "rank 0's loss reaching rank 1");
        assertEquals("rank 0 (" + TraceDump.localHost() + ", pid " + ProcessHandle.current().pid()
                + ")", r1.lost().get(0).toString(), "named with its host and pid from the roster");
        r1.close();

        Liveness[] second = channel(2, null);
        Liveness s0 = second[0], s1 = second[1];
        Thread.sleep(100);
        s0.depart(Departures.Kind.CLOSE, 0, 0, "none", null);   // leaves on purpose: says so, then closes
        s0.close();
        Thread.sleep(300);
        assertTrue(!s1.anyLost(), "rank 0 left on purpose: " + s1.lost());
        s1.close();
    }

    @Test
    void theWatchdogFailsACommunicatorWhosePeerIsGoneAndNamesIt() throws Exception {
        Liveness[] ranks = channel(2, null);
        Liveness r0 = ranks[0], r1 = ranks[1];
        Communicator c = later(Communicator.create(0, 2, testId(), 0,
                CommConfig.builder().watchdog(true).timeout(Duration.ofMinutes(1)).build()));
        StubFixture.attachChannel(c, r0);
        Thread.sleep(100);
        r1.dropWithoutGoodbye();
        within(5000, c::failure, "the watchdog failing the communicator");
        CommunicatorFailedException f = c.failure();
        assertTrue(f instanceof RemoteErrorException, f.toString());
        assertTrue(f.verdict().startsWith("peer lost: rank 1 (" + TraceDump.localHost() + ", pid "
                + ProcessHandle.current().pid() + ") is gone (its connection to the liveness channel ended without a "
                + "goodbye, or went silent)"), f.verdict());
        assertEquals(1, f.lostRanks().length);
        assertEquals(1, f.lostRanks()[0]);
    }

    @Test
    void lostRanksWaitsForTheNewsToSettle() throws Exception {
        Liveness[] ranks = channel(4, null);
        Liveness r0 = ranks[0], r1 = ranks[1], r2 = ranks[2], r3 = ranks[3];
        Communicator c = later(Communicator.create(1, 4, testId(), 0, CommConfig.builder().watchdog(false).build()));
        StubFixture.attachChannel(c, r1);
        try {
            Thread.sleep(100);
            r3.dropWithoutGoodbye();
            r2.dropWithoutGoodbye();
            assertEquals(List.of(2, 3), java.util.Arrays.stream(c.lostRanks(Duration.ofMillis(300))).boxed().toList());
            assertEquals(0, comm(0, 2).lostRanks(Duration.ZERO).length, "no channel: none known");
            IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    () -> c.lostRanks(Duration.ofMillis(-1)));
            assertEquals("settle must be zero or longer, got PT-0.001S", e.getMessage());
        } finally {
            r0.close();
        }
    }

    @Test
    void aRankThatGoesSilentIsLostAfterTheHeartbeatTimeoutAndNamedToEveryOther() throws Exception {
        int port = StubFixture.freePort();
        Duration t = Duration.ofSeconds(2);
        Liveness r0 = Liveness.join(Liveness.serve(port, t), 0, "127.0.0.1", port);
        Liveness r1 = Liveness.join(null, 1, "127.0.0.1", port);
        Liveness r2 = Liveness.join(null, 2, "127.0.0.1", port);
        try {
            Thread.sleep(2500);   // heartbeats keep everyone
            assertTrue(!r0.anyLost() && !r1.anyLost(), r0.lost() + " " + r1.lost());
            long t0 = System.nanoTime();
            r2.freeze();          // a SIGSTOP: the connection stays open, nothing is sent
            within(6000, () -> r1.anyLost() ? true : null, "rank 2's silence reaching rank 1");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms >= 1500 && ms < 4500, "found after " + ms + " ms");
            assertEquals(List.of(2), r1.lost().stream().map(RankProcess::rank).toList());
            assertEquals(ProcessHandle.current().pid(), r1.lost().get(0).pid());
        } finally {
            r1.close();
            r0.close();
        }
    }

    @Test
    void whenRankZeroGoesSilentEveryRankNamesItFromTheRoster() throws Exception {
        Liveness[] ranks = channel(2, Duration.ofSeconds(2));
        Liveness r0 = ranks[0], r1 = ranks[1];
        try {
            within(3000, () -> r1.roster().containsKey(0) ? true : null, "rank 0 in the roster");
            r0.freeze();
            within(8000, () -> r1.anyLost() ? true : null, "rank 0's silence reaching rank 1");
            assertEquals("rank 0 (" + TraceDump.localHost() + ", pid " + ProcessHandle.current().pid()
                    + ")", r1.lost().get(0).toString());
        } finally {
            r1.close();
            r0.dropWithoutGoodbye();
        }
    }

    @Test
    void afterARecoveryRanksAreRenumberedAndTheRanksLeftOutAreNoLongerReported() throws Exception {
        Liveness[] ranks = channel(4, null);
        Liveness r0 = ranks[0], r1 = ranks[1], r2 = ranks[2], r3 = ranks[3];
        try {
            within(3000, () -> r2.roster().size() == 4 ? true : null, "the roster");
            r1.dropWithoutGoodbye();
            within(3000, () -> r2.anyLost() ? true : null, "rank 1's loss");
            r2.renumber(new int[] {1});   // ranks 0, 2, 3 become 0, 1, 2
            assertTrue(!r2.anyLost(), "rank 1 left the communicator: " + r2.lost());
            assertEquals(2, r2.launchRank(1));
            assertEquals(3, r2.launchRank(2));
            r3.dropWithoutGoodbye();
            within(3000, () -> r2.anyLost() ? true : null, "launch rank 3's loss");
            assertEquals(List.of(2), r2.lost().stream().map(RankProcess::rank).toList(), "now rank 2");
            r2.renumber(new int[] {2});
            assertEquals(List.of(), r2.lost());
            assertEquals(2, r2.launchRank(1), "this rank, launch rank 2, is rank 1 still");
            assertEquals(-1, r2.launchRank(2));
        } finally {
            r2.close();
            r0.close();
        }
    }

    @Test
    void aLivenessTimeoutShorterThanTwoHeartbeatsIsRefused() {
        String before = org.nccl4j.jni.NcclNative.getenv(Liveness.TIMEOUT_VARIABLE);
        org.nccl4j.jni.NcclNative.setenv(Liveness.TIMEOUT_VARIABLE, "1s", 1);
        try {
            IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    Liveness::configuredTimeout);
            assertEquals("NCCL4J_LIVENESS_TIMEOUT=1s is shorter than two heartbeats (2000 ms): use 2s or more, e.g. "
                    + "4s (the default) or 30s for long pauses", e.getMessage());
            org.nccl4j.jni.NcclNative.setenv(Liveness.TIMEOUT_VARIABLE, "12s", 1);
            assertEquals(Duration.ofSeconds(12), Liveness.configuredTimeout());
        } finally {
            if (before == null) {
                org.nccl4j.jni.NcclNative.unsetenv(Liveness.TIMEOUT_VARIABLE);
            } else {
                org.nccl4j.jni.NcclNative.setenv(Liveness.TIMEOUT_VARIABLE, before, 1);
            }
        }
    }

    /**
     * A liveness channel of {@code ranks} ranks on a free local port, rank 0 serving; silence taken for a loss after
     * {@code timeout} (null: the default).
     */
    private static Liveness[] channel(int ranks, Duration timeout) throws Exception {
        int port = StubFixture.freePort();
        Liveness[] joined = new Liveness[ranks];
        joined[0] = Liveness.join(timeout == null ? Liveness.serve(port) : Liveness.serve(port, timeout), 0,
                "127.0.0.1", port);
        for (int r = 1; r < ranks; r++) {
            joined[r] = Liveness.join(null, r, "127.0.0.1", port);
        }
        return joined;
    }
}
