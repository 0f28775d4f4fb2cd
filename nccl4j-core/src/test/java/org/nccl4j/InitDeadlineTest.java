package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.control.Channels;
import org.nccl4j.control.Liveness;
import org.nccl4j.control.RankProcess;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.trace.TraceDump;

/**
 * The deadline of initialization: a communicator that NCCL does not finish making (a rank never came) is aborted at
 * the deadline and every waiting rank throws, naming the ranks that never said hello on the liveness channel.
 */
class InitDeadlineTest extends StubFixture {
    @AfterEach
    void stubDone() {
        stub.asyncError(0);
        stub.result(NcclFunction.ncclCommInitRankConfig, 0);
    }


    @Test
    void aNonblockingInitStillInProgressAtTheDeadlineIsAbortedAndThrowsNamingWhatWasWaitedFor() {
        stub.result(NcclFunction.ncclCommInitRankConfig, 7);   // under way...
        stub.asyncError(7);                                     // ...and never done
        List<String> open = Nccl.openResources();
        mark();
        long t0 = System.nanoTime();
        InitTimeoutException e = assertThrows(InitTimeoutException.class, () -> Communicator.create(1, 4, testId(), 0,
                CommConfig.builder().blocking(false).initTimeout(Duration.ofMillis(300)).build()));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= 300 && ms < 5000, "gave up after " + ms + " ms");
        assertEquals("rank 1 of 4: ncclCommInitRankConfig did not finish within 300 ms: a rank never arrived, or the "
                + "ranks cannot reach each other (NCCL_SOCKET_IFNAME, firewall); nccl4j aborted the half-made "
                + "communicator. Raise NCCL4J_INIT_TIMEOUT (or CommConfig.Builder.initTimeout) if initialization is "
                + "only slow", e.getMessage());
        assertEquals(NcclResult.IN_PROGRESS, e.result());
        assertEquals(1, e.rank());
        assertEquals(Duration.ofMillis(300), e.timeout());
        assertEquals(List.of(), e.missingRanks());
        List<String> names = newCallNames();
        assertEquals("ncclCommAbort", names.get(names.size() - 1), names.toString());
        assertEquals(open, Nccl.openResources(), "nothing left open");
    }

    @Test
    void aNonblockingInitThatFinishesBeforeTheDeadlineGivesItsCommunicator() {
        stub.result(NcclFunction.ncclCommInitRankConfig, 7);
        stub.asyncError(0);
        Communicator c = later(Communicator.create(0, 2, testId(), 0,
                CommConfig.builder().blocking(false).initTimeout(Duration.ofSeconds(5)).build()));
        assertTrue(!c.isBlocking());
        assertEquals(2, c.size());
    }

    @Test
    void theRosterNamesTheRanksThatNeverArrived() throws Exception {
        int port = StubFixture.freePort();
        Liveness r0 = Channels.rankZero(port);
        Liveness r2 = Channels.join(2, port);
        long deadline = System.nanoTime() + 5_000_000_000L;
        Liveness r1 = Liveness.joinLater(null, 1, "127.0.0.1", port, deadline);
        try {
            within(5000, () -> r1.roster().size() == 3 && r0.roster().size() == 3 && r2.roster().size() == 3 ? true
                    : null, "every roster");
            assertEquals(List.of(3), r1.neverArrived(4));
            assertEquals(List.of(3), r2.neverArrived(4), "rank 2 learnt of rank 1, who came after it");
            Map<Integer, RankProcess> roster = r2.roster();
            assertEquals(ProcessHandle.current().pid(), roster.get(1).pid());
            assertEquals(org.nccl4j.trace.TraceDump.localHost(), roster.get(0).host());

            stub.result(NcclFunction.ncclCommInitRankConfig, 7);
            stub.asyncError(7);
            InitTimeoutException e = expire(r1);
            assertEquals(List.of(3), e.missingRanks());
            String host = org.nccl4j.trace.TraceDump.localHost();
            long pid = ProcessHandle.current().pid();
            assertTrue(e.getMessage().startsWith("rank 1 of 4: ncclCommInitRankConfig did not finish within 200 ms: "
                    + "ranks [3] never arrived (joined: 0 (" + host + ", pid " + pid + "), 1 (" + host + ", pid " + pid
                    + "), 2 (" + host + ", pid " + pid + ")); start them"), e.getMessage());
        } finally {
            r1.close();
            r2.close();
            r0.close();
        }
    }

    /** What fromEnvironment does with the channel it joined: the create waits with the roster at hand. */
    private InitTimeoutException expire(Liveness live) {
        try {
            Bootstrap.create(1, 4, testId(), 0, CommConfig.builder().blocking(false).build(),
                    new InitDeadline(Duration.ofMillis(200), 1, 4, live));
        } catch (InitTimeoutException e) {
            return e;
        }
        throw new AssertionError("no timeout");
    }

    @Test
    void theArrivalWaitEndsWhenAllHaveComeAndFailsAtTheDeadlineWhenOneNeverDoes() throws Exception {
        int port = StubFixture.freePort();
        Liveness r0 = Channels.rankZero(port);
        Liveness r1 = Channels.join(1, port);
        try {
            assertTrue(r1.awaitArrivals(2, System.nanoTime() + 5_000_000_000L, true), "both came");
            long t0 = System.nanoTime();
            assertTrue(!r1.awaitArrivals(3, t0 + 300_000_000L, true), "rank 2 never comes");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms >= 300 && ms < 3000, "gave up after " + ms + " ms");
            assertEquals(List.of(2), r1.neverArrived(3));
        } finally {
            r1.close();
            r0.close();
        }
        int nobody = StubFixture.freePort();
        Liveness lone = Liveness.joinLater(null, 1, "127.0.0.1", nobody, System.nanoTime() + 200_000_000L);
        try {
            assertTrue(!lone.awaitArrivals(2, System.nanoTime() + 400_000_000L, true),
                    "NCCL_COMM_ID: an unreachable rank 0 is a failure");
            assertTrue(lone.awaitArrivals(2, System.nanoTime() + 5_000_000_000L, false),
                    "after a rendezvous with rank 0: go on without the channel");
        } finally {
            lone.close();
        }
    }

    @Test
    void withoutRankZerosChannelTheMessageSaysSo() throws Exception {
        int port = StubFixture.freePort();   // nobody serves it
        Liveness r1 = Liveness.joinLater(null, 1, "127.0.0.1", port, System.nanoTime() + 100_000_000L);
        try {
            within(5000, () -> r1.failedToConnect(), "the background join giving up");
            stub.result(NcclFunction.ncclCommInitRankConfig, 7);
            stub.asyncError(7);
            InitTimeoutException e = expire(r1);
            assertEquals(List.of(), e.missingRanks());
            assertTrue(e.getMessage().contains(": rank 0's liveness channel at 127.0.0.1:" + port + " did not answer ("),
                    e.getMessage());
            assertTrue(e.getMessage().contains("rank 0 may not have started, or may not be reachable from here"),
                    e.getMessage());
        } finally {
            r1.close();
        }
    }

    @Test
    void badDeadlinesAreRefusedNamingTheSetting() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CommConfig.builder().initTimeout(Duration.ZERO));
        assertEquals("initTimeout must be longer than zero, got PT0S: e.g. Duration.ofMinutes(5)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> WatchdogConfig.from(
                Map.of(WatchdogConfig.INIT_TIMEOUT, "soon"), new java.util.Properties()));
        assertTrue(e.getMessage().startsWith("NCCL4J_INIT_TIMEOUT=soon"), e.getMessage());
        assertEquals(Duration.ofSeconds(90), WatchdogConfig.from(Map.of(WatchdogConfig.INIT_TIMEOUT, "90s"),
                new java.util.Properties()).initTimeout());
        assertEquals(WatchdogConfig.DEFAULT_INIT_TIMEOUT, WatchdogConfig.from(Map.of(), new java.util.Properties())
                .initTimeout());
        assertEquals(Duration.ofMinutes(5), WatchdogConfig.DEFAULT_INIT_TIMEOUT);
        assertEquals("CommConfig[initTimeout=2 min]",
                CommConfig.builder().initTimeout(Duration.ofMinutes(2)).build().toString());
    }
}
