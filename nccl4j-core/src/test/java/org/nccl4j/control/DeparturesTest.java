package org.nccl4j.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.nccl4j.DataType;
import org.nccl4j.trace.FlightRecorder;
import org.nccl4j.trace.TraceOperation;

/**
 * What the liveness channel knows of departures and agreement, unit by unit: {@link Departures}' verdict on this
 * rank's pending collectives for each way a peer leaves (and when it leaves this rank behind), rank 0's comparison of
 * the fingerprints ({@link Agreement}) and the {@link Ledger} they are taken from. End to end, through communicators
 * and their close, in {@code org.nccl4j.DepartingTest}.
 */
class DeparturesTest {

    static Departures.Departure departure(int rank, Departures.Kind kind, long last, String cause,
            long heardAgoMillis) {
        return new Departures.Departure(rank, "h1", 7, kind, 0, last, last == 0 ? "none" : "allReduce #" + last,
                cause, System.nanoTime() - heardAgoMillis * 1_000_000L);
    }

    /** A ledger and recorder with {@code issued} all-reduces, the first {@code completed} of them completed. */
    static Object[] issued(int issued, int completed) {
        Ledger ledger = new Ledger();
        FlightRecorder rec = new FlightRecorder(64);
        for (int i = 1; i <= issued; i++) {
            long t = rec.record(TraceOperation.allReduce.code(), 1024, DataType.FLOAT32.code(), 0, -1, 4096, 1);
            ledger.issued(TraceOperation.allReduce.code(), 1024, DataType.FLOAT32.code(), 0, -1, t);
        }
        if (completed > 0) {
            rec.completedThrough(completed);
        }
        return new Object[] {ledger, rec};
    }

    static Departures.Verdict verdict(Departures d, Object[] state) {
        return d.verdict(0, (Ledger) state[0], (FlightRecorder) state[1], 0, r -> r, System.nanoTime());
    }

    @Test
    void aCollectiveTheClosedRankNeverIssuedCannotCompleteAndTheMessageSaysWhy() {
        Departures d = new Departures();
        d.heard(departure(1, Departures.Kind.CLOSE, 3, "IllegalStateException: data loader failed on rank 1", 0));
        Departures.Verdict v = verdict(d, issued(4, 3));
        assertNotNull(v);
        assertEquals("allReduce #4 cannot complete: rank 1 (h1, pid 7) closed its communicator after allReduce #3, "
                + "its last (IllegalStateException: data loader failed on rank 1)", v.text());
        assertFalse(v.mismatch());
        assertEquals(1, v.ranks()[0]);
    }

    @Test
    void aCollectiveTheDepartedRankNeverIssuedThatEndedAnywayFailsAndAWaitOverItIsRefused() {
        Departures d = new Departures();
        assertFalse(d.any());
        d.heard(departure(1, Departures.Kind.CLOSE, 3, "IllegalStateException: data loader failed on rank 1", 0));
        assertTrue(d.any());
        Object[] s = issued(4, 4);   // #4 ended: an abort elsewhere in the middle of it let it end
        String says = "rank 1 (h1, pid 7) closed its communicator after allReduce #3, its last (IllegalStateException: "
                + "data loader failed on rank 1)";
        assertEquals("allReduce #4 ended without the part of a rank that left: " + says, verdict(d, s).text());
        Ledger ledger = (Ledger) s[0];
        assertEquals("allReduce #4 ended without rank 1's part: " + says, d.endedWithout(0, ledger, 4, 0, r -> r));
        assertNull(d.endedWithout(0, ledger, 3, 0, r -> r), "a wait over #1..#3: rank 1 issued each of them");
        assertNull(d.endedWithout(0, ledger, 4, 1, r -> r), "news of generation 0 says nothing of generation 1");
        assertNull(d.endedWithout(0, ledger, 4, 0, r -> r == 1 ? -1 : r), "rank 1 is not in this communicator");
        assertNull(d.endedWithout(1, ledger, 4, 0, r -> r), "its own departure");
    }

    @Test
    void aCloseWithoutItsCauseWaitsAMomentForItThenFailsWithout() {
        Departures d = new Departures();
        d.heard(departure(1, Departures.Kind.CLOSE, 3, null, 0));
        assertNull(verdict(d, issued(4, 3)), "the cause may follow the close within the wait");
        d.cause(1, "IllegalStateException: late");
        assertTrue(verdict(d, issued(4, 3)).text().endsWith("its last (IllegalStateException: late)"));
        Departures e = new Departures();
        e.heard(departure(1, Departures.Kind.CLOSE, 3, null, Departures.CAUSE_WAIT_NANOS / 1_000_000 + 50));
        assertEquals("allReduce #4 cannot complete: rank 1 (h1, pid 7) closed its communicator after allReduce #3, "
                + "its last", verdict(e, issued(4, 3)).text());
    }

    @Test
    void aPeerWhoseCollectivesTheClosedRankIssuedIsNotDisturbed() {
        Departures d = new Departures();
        d.heard(departure(1, Departures.Kind.CLOSE, 4, null, 5000));
        assertNull(verdict(d, issued(4, 3)), "#4 is pending, but rank 1 issued it and finalizes it");
        assertNull(verdict(d, issued(4, 4)));
    }

    @Test
    void afterAnAbortPendingCollectivesItIssuedFailOnlyAfterTheGrace() {
        Departures d = new Departures();
        d.heard(departure(1, Departures.Kind.ABORT, 4, null, 10));
        assertNull(verdict(d, issued(4, 3)), "within the grace the pending #4 may still complete");
        Departures late = new Departures();
        late.heard(departure(1, Departures.Kind.ABORT, 4, null, Departures.GRACE_NANOS / 1_000_000 + 100));
        assertEquals("allReduce #4 cannot complete: rank 1 (h1, pid 7) aborted its communicator after allReduce #4, "
                + "its last", verdict(late, issued(4, 3)).text());
        assertEquals("no collective can complete any more: rank 1 (h1, pid 7) aborted its communicator after "
                + "allReduce #4, its last", verdict(late, issued(4, 4)).text(), "nothing pending: it fails at once");
        Departures now = new Departures();
        now.heard(departure(1, Departures.Kind.ABORT, 4, null, 0));
        assertNotNull(verdict(now, issued(4, 4)), "nothing pending: no grace to wait for");
    }

    @Test
    void anExitOrFailurePastTheLastCollectiveFailsAtOnceWithItsCause() {
        Departures d = new Departures();
        d.heard(departure(2, Departures.Kind.EXIT, 2, "SIGTERM", 0));
        assertEquals("allReduce #3 cannot complete: rank 2 (h1, pid 7) is exiting after allReduce #2, its last "
                + "(SIGTERM)", verdict(d, issued(3, 2)).text());
        Departures f = new Departures();
        f.heard(departure(1, Departures.Kind.FAILURE, 0, "CollectiveTimeoutException: x", 0));
        assertEquals("allReduce #1 cannot complete: rank 1 (h1, pid 7) failed before its first collective "
                + "(CollectiveTimeoutException: x)", verdict(f, issued(1, 0)).text());
    }

    @Test
    void newsOfAnotherGenerationOrOfRanksLeftOutIsIgnored() {
        Departures d = new Departures();
        d.heard(new Departures.Departure(1, "h1", 7, Departures.Kind.EXIT, 1, 0, "none", null, 0));
        assertNull(verdict(d, issued(3, 0)), "a departure of generation 1 does not touch generation 0");
        Departures left = new Departures();
        left.heard(departure(1, Departures.Kind.EXIT, 0, null, 0));
        Object[] s = issued(3, 0);
        assertNull(left.verdict(0, (Ledger) s[0], (FlightRecorder) s[1], 0, r -> r == 1 ? -1 : r,
                System.nanoTime()), "rank 1 was left out by a recovery");
    }

    @Test
    void aCauseHeardBeforeItsDepartureIsKept() {
        Departures d = new Departures();
        d.cause(1, "IllegalStateException: early");
        d.heard(departure(1, Departures.Kind.EXIT, 1, null, 0));
        assertEquals("IllegalStateException: early", d.of(0).get(1).cause());
    }

    // ------------------------------------------------------------------ the comparison

    @Test
    void rankZeroNamesTheFirstCollectiveThatDiffersAndEveryDifferingField() {
        List<String> sent = new ArrayList<>();
        List<String> found = new ArrayList<>();
        Agreement a = new Agreement((r, line) -> sent.add(r + " " + line.trim()), found::add);
        java.util.Set<Integer> ranks = java.util.Set.of(0, 1);
        a.reported(0, 0, 5);
        a.tick(ranks, 10_000);
        assertEquals(List.of(), sent, "rank 1 has not reported yet");
        a.reported(1, 0, 6);
        a.tick(ranks, 10_000);
        assertEquals(List.of("-1 CHECK 0 5"), sent);
        a.fingerprint(0, 0, 5, "aa");
        a.fingerprint(1, 0, 5, "bb");
        assertEquals("-1 DESCRIBE 0 1 5", sent.get(1));
        String same = TraceOperation.allReduce.code() + ":1048576:" + DataType.FLOAT32.code() + ":0:-1";
        String half = TraceOperation.allReduce.code() + ":2097152:" + DataType.FLOAT16.code() + ":0:-1";
        a.shapes(0, 0, 1, 5, new String[] {same, same, same, same, same});
        assertEquals(List.of(), found, "rank 1 has not answered");
        a.shapes(1, 0, 1, 5, new String[] {same, same, same, half, "?"});
        assertEquals(List.of("0 collective #4 differs between ranks: rank 0 allReduce count 1048576 ncclFloat32 ncclSum, "
                + "rank 1 allReduce count 2097152 ncclFloat16 ncclSum (count and data type differ)"), found);
    }

    @Test
    void agreeingFingerprintsMoveTheComparisonOnAndARankThatLeavesIsNotWaitedFor() {
        List<String> sent = new ArrayList<>();
        List<String> found = new ArrayList<>();
        Agreement a = new Agreement((r, line) -> sent.add(line.trim()), found::add);
        java.util.Set<Integer> ranks = java.util.Set.of(0, 1, 2);
        for (int r = 0; r < 3; r++) {
            a.reported(r, 0, 3);
        }
        a.tick(ranks, 1000);
        for (int r = 0; r < 3; r++) {
            a.fingerprint(r, 0, 3, "cafe");
        }
        for (int r = 0; r < 3; r++) {
            a.reported(r, 0, 9);
        }
        a.tick(ranks, 1100);
        assertEquals(List.of("CHECK 0 3"), sent, "at most one comparison every 200 ms");
        a.tick(ranks, 1300);
        assertEquals(List.of("CHECK 0 3", "CHECK 0 9"), sent);
        a.fingerprint(0, 0, 9, "beef");
        a.fingerprint(1, 0, 9, "beef");
        a.left(2);
        a.tick(java.util.Set.of(0, 1), 1600);
        assertEquals(List.of(), found);
        assertEquals(2, sent.size(), "agreed through 9 without rank 2: nothing new to compare");
    }

    @Test
    void differencesNameOperationRootAndOperatorToo() {
        Map<Integer, Ledger.Shape> at = new TreeMap<>();
        at.put(0, new Ledger.Shape(7, TraceOperation.broadcast.code(), 10, DataType.INT32.code(), -1, 0));
        at.put(1, new Ledger.Shape(7, TraceOperation.broadcast.code(), 10, DataType.INT32.code(), -1, 1));
        at.put(2, new Ledger.Shape(7, TraceOperation.reduce.code(), 10, DataType.INT32.code(), 2, 0));
        assertEquals("collective #7 differs between ranks: rank 0 broadcast count 10 ncclInt32 root 0, rank 1 "
                + "broadcast count 10 ncclInt32 root 1, rank 2 reduce count 10 ncclInt32 ncclMax root 0 (operation "
                + "and reduction operator and root differ)", Agreement.differences(7, at));
        at.remove(2);
        at.put(1, at.get(0));
        assertNull(Agreement.differences(7, at));
    }

    @Test
    void theLedgerKeepsShapesFingerprintsAndTheIssuingThreadWithoutSendAndRecv() {
        Ledger a = new Ledger();
        Ledger b = new Ledger();
        a.issued(TraceOperation.allReduce.code(), 8, DataType.FLOAT32.code(), 0, -1, 1);
        b.issued(TraceOperation.allReduce.code(), 8, DataType.FLOAT32.code(), 0, -1, 5);
        assertEquals(a.fingerprintAt(1), b.fingerprintAt(1), "the same shapes, the same fingerprint");
        a.issued(TraceOperation.allReduce.code(), 8, DataType.FLOAT32.code(), 0, -1, 2);
        b.issued(TraceOperation.allReduce.code(), 4, DataType.FLOAT64.code(), 0, -1, 6);
        assertFalse(a.fingerprintAt(2).equals(b.fingerprintAt(2)));
        assertEquals(2, a.last());
        assertEquals("allReduce #2", a.describe(2));
        assertEquals("none", a.describe(0));
        assertEquals(6, b.traceSeq(2));
        assertEquals(Thread.currentThread(), a.issuer());
        assertEquals("0:4:" + DataType.FLOAT64.code() + ":0:-1",
                b.shape(2).wire().replaceFirst("^[0-9]+", "0"));
        for (int i = 0; i < Ledger.CAPACITY; i++) {
            a.issued(TraceOperation.allReduce.code(), 8, DataType.FLOAT32.code(), 0, -1, 3 + i);
        }
        assertNull(a.fingerprintAt(2), "out of the ring");
        assertNull(a.shape(2));
        assertEquals(0, a.traceSeq(2));
    }

    // ------------------------------------------------------------------ left behind: the verdict's part

    @Test
    void aPeerThatFailedAbortedOrExitedAfterACollectiveThisRankNeverIssuedLeavesItBehind() {
        for (Departures.Kind k : new Departures.Kind[] {Departures.Kind.FAILURE, Departures.Kind.ABORT,
            Departures.Kind.EXIT}) {
            Departures d = new Departures();
            d.heard(departure(1, k, 3, "CollectiveTimeoutException: allReduce #3", 0));
            Departures.Verdict v = verdict(d, issued(2, 2));
            assertNotNull(v, k.toString());
            assertTrue(v.leftBehind(), k + ": " + v);
        }
    }

    @Test
    void peersThatLeaveAfterTheSameCollectiveOrCloseCleanlyDoNotLeaveItBehind() {
        Departures same = new Departures();   // a rank writing a checkpoint: its peers' close deadline passed
        same.heard(departure(1, Departures.Kind.ABORT, 2, null, 0));
        Departures.Verdict v = verdict(same, issued(2, 2));
        assertNotNull(v, "the communicator cannot go on");
        assertFalse(v.leftBehind(), v.toString());
        Departures closed = new Departures();   // went further and closed: its finalize completes what it issued
        closed.heard(departure(1, Departures.Kind.CLOSE, 3, null, 0));
        assertNull(verdict(closed, issued(2, 2)));
        Departures ahead = new Departures();   // this rank is the one ahead
        ahead.heard(departure(1, Departures.Kind.FAILURE, 1, "x", 0));
        Departures.Verdict a = verdict(ahead, issued(2, 1));
        assertNotNull(a);
        assertFalse(a.leftBehind(), a.toString());
    }
}
