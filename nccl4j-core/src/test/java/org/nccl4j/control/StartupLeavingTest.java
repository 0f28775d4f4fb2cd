package org.nccl4j.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.RankPhase;
import org.nccl4j.StubFixture;
import org.nccl4j.trace.TraceDump;

/**
 * The edges of start-up that a departure must still cross: a rank that leaves while it is still joining rank 0's
 * channel joins to say so; a rank that arrives after another left hears of it with the roster; rank 0 that leaves
 * before every rank has arrived keeps its channel open for them. Over loopback, in one JVM (the process-level cases,
 * with signals, are in StartupDeparturesTest).
 */
class StartupLeavingTest {
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private int port;

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
    }

    private <T extends AutoCloseable> T closing(T c) {
        toClose.add(c);
        return c;
    }

    /** Rank 0 of {@code size} ranks, joined to itself. */
    private Liveness serve(int size) throws IOException {
        Liveness served = Liveness.serve(port, Liveness.DEFAULT_TIMEOUT, size, null, null);
        return closing(Liveness.join(served, 0, "127.0.0.1", port));
    }

    private Liveness joinLater(int rank) {
        return closing(Liveness.joinLater(null, rank, "127.0.0.1", port, System.nanoTime() + 30_000_000_000L, null));
    }

    private static String named(int rank) {
        return "rank " + rank + " (" + TraceDump.localHost() + ", pid " + ProcessHandle.current().pid() + ")";
    }

    @Test
    void aRankThatLeavesWhileStillJoiningJoinsToSaySoAndIsNamedAsBeforeItJoined() throws Exception {
        port = StubFixture.freePort();
        Liveness r1 = joinLater(1);   // rank 0's channel is not up yet: rank 1 keeps trying
        CompletableFuture<Boolean> leaving = CompletableFuture.supplyAsync(() -> {
            boolean joined = r1.awaitJoinedToLeave(Liveness.LEAVING_WAIT_MILLIS);   // what the exit does
            r1.departDuringStartUp(Departures.Kind.EXIT, "SIGTERM");
            return joined;
        });
        Thread.sleep(300);
        assertFalse(leaving.isDone(), "it waits for its join");
        long t0 = System.nanoTime();
        Liveness r0 = serve(2);
        Liveness.Loss loss = StubFixture.within(2000, () -> r0.startupLoss(2), "rank 1's departure at rank 0");
        assertTrue(leaving.get(1, TimeUnit.SECONDS), "joined to leave");
        assertTrue((System.nanoTime() - t0) / 1_000_000 < 1000, "told within a second of rank 0's channel coming up");
        assertEquals(1, loss.rank());
        assertEquals(RankPhase.LAUNCHED, loss.phase());
        assertEquals("SIGTERM", loss.how());
        assertEquals(named(1) + " was lost before it joined the job (SIGTERM)", loss.says());
    }

    @Test
    void aRankLeavingWhileJoiningGivesUpAfterTheWaitWhenRankZeroNeverComes() throws Exception {
        port = StubFixture.freePort();
        Liveness r1 = joinLater(1);
        long t0 = System.nanoTime();
        assertFalse(r1.awaitJoinedToLeave(300), "no rank 0");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= 290 && ms < 1000, "waited its bound, then no more: " + ms + " ms");
        r1.departDuringStartUp(Departures.Kind.EXIT, "SIGTERM");   // not connected: nothing to tell, no exception
        assertTrue(serve(2).stayForLateRanks(0), "rank 0 of 2 with rank 1 missing: it would stay");
    }

    @Test
    void aRankArrivingAfterAStartUpDepartureHearsItWithTheRoster() throws Exception {
        port = StubFixture.freePort();
        Liveness r0 = serve(3);
        Liveness r1 = joinLater(1);
        StubFixture.within(5000, () -> r0.arrivals() == 2 && r1.connected() ? true : null, "rank 1's hello, both ways");
        r1.phase(RankPhase.RENDEZVOUS);
        Thread.sleep(100);
        r1.departDuringStartUp(Departures.Kind.EXIT, "SIGTERM");
        StubFixture.within(2000, () -> r0.startupLoss(3), "rank 1's departure at rank 0");
        Liveness r2 = joinLater(2);   // comes after rank 1 left
        Liveness.Loss loss = StubFixture.within(2000, () -> r2.startupLoss(3), "rank 1's departure at rank 2");
        assertEquals(named(1) + " was lost during the rendezvous (SIGTERM)", loss.says());
    }

    @Test
    void aLossBeforeARankArrivedReachesIt() throws Exception {
        port = StubFixture.freePort();
        Liveness r0 = serve(3);
        Liveness r1 = joinLater(1);
        StubFixture.within(5000, () -> r0.arrivals() == 2 && r1.connected() ? true : null, "rank 1's hello, both ways");
        r1.dropWithoutGoodbye();   // its pings stop: lost by the heartbeat's silence
        Liveness.Loss atZero = StubFixture.within(8000, () -> r0.startupLoss(3), "rank 1's loss at rank 0");
        Liveness r2 = joinLater(2);
        Liveness.Loss loss = StubFixture.within(2000, () -> r2.startupLoss(3), "rank 1's loss at rank 2");
        assertTrue(loss.says().startsWith(named(1) + " was lost after joining the job, before the rendezvous ("), loss.says());
        assertEquals(atZero.how(), loss.how(), "the same news as rank 0's");
    }

    @Test
    void rankZeroLeavingBeforeEveryRankArrivedStaysForThemAndTheyHearWhy() throws Exception {
        port = StubFixture.freePort();
        Liveness r0 = serve(2);
        r0.phase(RankPhase.RENDEZVOUS);
        r0.departDuringStartUp(Departures.Kind.EXIT, "SIGTERM");
        long t0 = System.nanoTime();
        CompletableFuture<Boolean> stay = CompletableFuture.supplyAsync(() ->
                r0.stayForLateRanks(Liveness.LEAVING_WAIT_MILLIS));
        Thread.sleep(300);
        assertFalse(stay.isDone(), "rank 1 has not arrived: rank 0 stays");
        Liveness r1 = joinLater(1);
        Liveness.Loss loss = StubFixture.within(2000, () -> r1.startupLoss(2), "rank 0's departure at rank 1");
        assertTrue(stay.get(2, TimeUnit.SECONDS), "it stayed");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms < 1500, "it stays until the last rank arrives, not its whole bound: " + ms + " ms");
        assertEquals(0, loss.rank());
        assertEquals(named(0) + " was lost during the rendezvous (SIGTERM)", loss.says());
    }

    @Test
    void rankZeroDoesNotStayWhenEveryRankIsThereAndNoOtherRankStays() throws Exception {
        port = StubFixture.freePort();
        Liveness r0 = serve(2);
        Liveness r1 = joinLater(1);
        StubFixture.within(5000, () -> r0.arrivals() == 2 && r1.connected() ? true : null, "rank 1's hello, both ways");
        long t0 = System.nanoTime();
        assertFalse(r0.stayForLateRanks(Liveness.LEAVING_WAIT_MILLIS));
        assertFalse(r1.stayForLateRanks(Liveness.LEAVING_WAIT_MILLIS), "not rank 0");
        assertTrue((System.nanoTime() - t0) / 1_000_000 < 100);
        assertTrue(r1.awaitJoinedToLeave(0), "joined: nothing to wait for");
        assertNull(r1.startupLoss(2));
    }
}
