package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.control.Durations;
import org.nccl4j.control.Liveness;
import org.nccl4j.trace.TraceDump;

/**
 * A rank that its peers left behind while it was stuck in its own code is ended ({@link LeftBehindExit}), against the
 * stub NCCL, FakeCuda and a liveness channel on loopback; a rank that calls in time, one that is only slower than
 * its peers and one whose peers leave after the same collective are not. The end is recorded ({@link #ENDINGS}), not done.
 */
class LeftBehindExitTest extends StubFixture {
    private static final String HOST = TraceDump.localHost();
    private static final long PID = ProcessHandle.current().pid();

    @BeforeEach
    void shortCloseDeadline() {
        System.setProperty(Teardown.TIMEOUT_PROPERTY, "3s");
        ENDINGS.clear();
    }

    @AfterEach
    void defaults() {
        System.clearProperty(Teardown.TIMEOUT_PROPERTY);
        System.clearProperty(LeftBehindExit.PROPERTY);
    }

    private Communicator rank(int r, Liveness l, Duration timeout) {
        Communicator c = later(Communicator.create(r, 2, testId(), 0, CommConfig.builder().watchdog(true)
                .timeout(timeout).commName("behind").build()));
        c.health().attachChannel(l);
        return c;
    }

    /** Two ranks on a channel with their streams and buffers. */
    private record Pair(Communicator c0, Communicator c1, Stream s0, Stream s1, DeviceBuffer b0, DeviceBuffer b1) {
    }

    /**
     * Both ranks complete allReduce #1; rank 0 then issues #2, which rank 1 never issues, on a stalled stream, where
     * it times out after {@code timeout}.
     */
    private Pair rankZeroWaitsInTheSecond(Duration timeout) throws Exception {
        Liveness[] ch = DepartingTest.channel(2);
        Pair p = new Pair(rank(0, ch[0], timeout), rank(1, ch[1], timeout), stream(0), stream(0),
                buffer(0, 8, DataType.FLOAT32), buffer(0, 8, DataType.FLOAT32));
        p.c0().allReduce(p.b0(), DataType.FLOAT32, ReduceOp.SUM, p.s0());
        p.c1().allReduce(p.b1(), DataType.FLOAT32, ReduceOp.SUM, p.s1());
        p.s0().synchronize();
        p.s1().synchronize();
        cuda.stall(p.s0().handle());
        p.c0().allReduce(p.b0(), DataType.FLOAT32, ReduceOp.SUM, p.s0());
        return p;
    }

    /** As {@link #rankZeroWaitsInTheSecond}, rank 1 issuing nothing more; once rank 1's watchdog failed it. */
    private Communicator[] rankOneLeftBehind(Duration timeout) throws Exception {
        Pair p = rankZeroWaitsInTheSecond(timeout);
        within(10_000, () -> p.c1().health().failure, "rank 1's watchdog failure (without telling the program)");
        cuda.release(p.s0().handle());
        return new Communicator[] {p.c0(), p.c1()};
    }

    @Test
    void aRankStuckInItsOwnCodeWhenItsPeerGaveUpIsEndedAfterTheTimeoutAndTheGraceNamingWhereItIs() throws Exception {
        long t0 = System.nanoTime();
        Communicator[] c = rankOneLeftBehind(Duration.ofSeconds(1));
        String end = within(5000, () -> ENDINGS.isEmpty() ? null : ENDINGS.get(0), "the end of the stuck rank");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertEquals(1, ENDINGS.size(), ENDINGS.toString());
        assertTrue(end.startsWith(FailurePolicy.EXIT_STATUS + " nccl4j: rank 1 of 2 was left behind and is stuck in "
                + "its own code: no collective can complete any more: rank 0 (" + HOST + ", pid " + PID + ") failed "
                + "after allReduce #2, its last (CollectiveTimeoutException: "), end);
        assertTrue(end.contains("; it has issued no operation on the communicator for "), end);
        assertTrue(end.contains("and no thread took the failure within 500 ms; its thread \""
                + Thread.currentThread().getName() + "\" is at "), end);
        assertTrue(end.endsWith("Halting the process with status 70 (NCCL4J_LEFT_BEHIND_EXIT=off lets it run on until "
                + "its next nccl4j call, which throws)"), end);
        assertTrue(ms >= 1500, "ended " + ms + " ms after the start: before rank 1 was silent for its timeout "
                + "(1 s after #1) and the grace (500 ms after the failure, itself 1 s after #2)");
        assertTrue(ms < 6000, "ended " + ms + " ms after the start");
        assertTrue(c[1].health().failure instanceof PeerDepartedException, String.valueOf(c[1].health().failure));
    }

    @Test
    void aRankThatCallsWithinTheGraceIsToldByItsExceptionAndNotEnded() throws Exception {
        Communicator[] c = rankOneLeftBehind(Duration.ofSeconds(1));
        Stream s = stream(0);
        PeerDepartedException e = assertThrows(PeerDepartedException.class,
                () -> c[1].allReduce(buffer(0, 8, DataType.FLOAT32), DataType.FLOAT32, ReduceOp.SUM, s));
        assertTrue(e.getMessage().contains("failed after allReduce #2, its last"), e.getMessage());
        Thread.sleep(2000);   // past the timeout since #1 and the grace since the failure
        assertEquals(List.of(), ENDINGS);
    }

    @Test
    void aRankThatAsksForItsFailureOrClosesIsNotEnded() throws Exception {
        Communicator[] c = rankOneLeftBehind(Duration.ofSeconds(1));
        assertNotNull(c[1].failure(), "the program asks");
        Thread.sleep(2500);
        assertEquals(List.of(), ENDINGS);
    }

    @Test
    void aRankThatIssuedWithinItsTimeoutIsNotStuckUntilItHasBeenSilentForIt() throws Exception {
        long t0 = System.nanoTime();
        Pair p = rankZeroWaitsInTheSecond(Duration.ofSeconds(3));
        Communicator c1 = p.c1();
        Thread.sleep(2000);
        c1.send(p.b1(), DataType.FLOAT32, 0, p.s1());   // rank 1 is busy, only behind (a send is no collective)
        p.s1().synchronize();
        long sent = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        within(10_000, () -> c1.health().failure, "rank 1's watchdog failure");   // about 3 s after #2
        cuda.release(p.s0().handle());
        while (TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0) < sent + 2700) {
            assertEquals(List.of(), ENDINGS, "ended before rank 1 was silent for its timeout since its send at "
                    + sent + " ms");
            Thread.sleep(50);
        }
        String end = within(2000, () -> ENDINGS.isEmpty() ? null : ENDINGS.get(0), "the end, once silent for 3 s");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms >= sent + 3000 && ms < sent + 4500, "ended at " + ms + " ms, the send at " + sent + " ms");
        assertTrue(end.contains("it has issued no operation on the communicator for 3."), end);
    }

    @Test
    void offKeepsTheRankRunning() throws Exception {
        // the watchdog reads the grace once per process: the decision is LeftBehindExit.watch's, given null
        assertNull(LeftBehindExit.watch(null, null, System.nanoTime(), Duration.ofSeconds(1), null));
        System.setProperty(LeftBehindExit.PROPERTY, "off");
        assertNull(LeftBehindExit.grace());
        System.setProperty(LeftBehindExit.PROPERTY, "false");
        assertNull(LeftBehindExit.grace());
    }

    @Test
    void theGraceIsHalfASecondUnlessSetAndABadValueIsRefusedNamingItAndTheForms() {
        assertEquals(Duration.ofMillis(500), LeftBehindExit.grace());
        System.setProperty(LeftBehindExit.PROPERTY, "250ms");
        assertEquals(Duration.ofMillis(250), LeftBehindExit.grace());
        System.setProperty(LeftBehindExit.PROPERTY, "soon");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, LeftBehindExit::grace);
        assertEquals("nccl4j.leftBehindExit=soon is not a duration: use " + Durations.FORMS + "; or off to let a rank "
                + "that its peers left behind run on until its next nccl4j call (default: 500ms)", e.getMessage());
        System.setProperty(LeftBehindExit.PROPERTY, "-1s");
        e = assertThrows(IllegalArgumentException.class, LeftBehindExit::grace);
        assertTrue(e.getMessage().startsWith("nccl4j.leftBehindExit=-1s is not a duration"), e.getMessage());
    }

    @Test
    void whereNamesTheFirstFrameOfTheProgramsOwnCode() throws Exception {
        Object lock = new Object();
        Thread t = new Thread(() -> {
            synchronized (lock) {
                try {
                    lock.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }, "spinner");
        t.setDaemon(true);
        t.start();
        within(3000, () -> t.getState() == Thread.State.WAITING ? true : null, "the thread waits");
        String w = LeftBehindExit.where(t);
        t.interrupt();
        assertTrue(w.startsWith("org.nccl4j.LeftBehindExitTest.lambda$"), w);
    }
}
