package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.control.Channels;
import org.nccl4j.control.Departures;
import org.nccl4j.control.Liveness;
import org.nccl4j.control.Survivors;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.trace.TraceDump;

/**
 * Departures and agreement over the liveness channel (loopback), end to end through communicators of the stub NCCL and
 * FakeCuda (the departure reports of {@link CommHealth}, {@link Teardown}, the watchdog's verdicts): every way a rank leaves reaches its
 * peers with its facts, a peer waiting in a collective the departed rank never issued fails at once naming it, one
 * whose collectives it did issue is left alone, close() finalizes only with every peer closing and aborts otherwise,
 * and rank 0 names the first collective whose shape differs between ranks. The verdicts unit by unit are
 * {@code org.nccl4j.control.DeparturesTest}'s.
 */
class DepartingTest extends StubFixture {
    private static final String HOST = TraceDump.localHost();
    private static final long PID = ProcessHandle.current().pid();

    @BeforeEach
    void shortCloseDeadline() {
        System.setProperty(Teardown.TIMEOUT_PROPERTY, "3s");   // also for the fixture's closing after each test
    }

    @AfterAll
    static void defaultCloseDeadline() {
        System.clearProperty(Teardown.TIMEOUT_PROPERTY);
    }

    /** Waits for the watchdog's failure of {@code c}; returns it with the milliseconds since {@code t0}. */
    private static CommunicatorFailedException failed(Communicator c, long t0, long[] ms) {
        CommunicatorFailedException f = within(5000, c::failure, "the watchdog's failure of " + c);
        ms[0] = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        return f;
    }

    static Liveness[] channel(int ranks) throws Exception {
        int port = StubFixture.freePort();
        Liveness[] joined = new Liveness[ranks];
        joined[0] = Channels.rankZero(port);
        for (int r = 1; r < ranks; r++) {
            joined[r] = Channels.join(r, port);
        }
        within(3000, () -> joined[ranks - 1].roster().size() == ranks ? true : null, "every hello");
        return joined;
    }

    private Communicator rank(int r, int size, Liveness l) {
        Communicator c = later(Communicator.create(r, size, testId(), 0, CommConfig.builder().watchdog(true)
                .timeout(Duration.ofMinutes(1)).commName("departures").build()));
        c.health().attachChannel(l);
        return c;
    }

    /** What rank 1 heard of rank 0's close, and how many steps rank 0's trainer had made by then. */
    private record HeardClose(Departures.Departure departure, long steps) {
    }

    /**
     * A thread "trainer" runs {@code step} until it throws; after 2000 steps a thread "shutdown-hook" closes
     * {@code c0}. Asserts that the trainer stops with the close's {@code IllegalStateException} and that {@code peer}
     * hears the close within 2 s, naming both threads.
     */
    private static HeardClose closedByAHookWhileATrainerRuns(Communicator c0, Liveness peer, Runnable step)
            throws Exception {
        java.util.concurrent.atomic.AtomicReference<Throwable> stopped = new java.util.concurrent.atomic
                .AtomicReference<>();
        java.util.concurrent.atomic.AtomicLong steps = new java.util.concurrent.atomic.AtomicLong();
        Thread trainer = new Thread(() -> {
            try {
                while (true) {
                    step.run();
                    steps.incrementAndGet();
                }
            } catch (Throwable t) {
                stopped.set(t);
            }
        }, "trainer");
        trainer.start();
        within(5000, () -> steps.get() > 2000 ? true : null, "the trainer's steps");
        Thread hook = new Thread(c0::close, "shutdown-hook");
        long t0 = System.nanoTime();
        hook.start();
        trainer.join(5000);
        assertFalse(trainer.isAlive(), "the trainer's steps went on after the close");
        Departures.Departure d = within(2000, () -> peer.departures().of(c0.health().generation).get(0),
                "rank 0's close, as rank 1 heard it");
        assertTrue(System.nanoTime() - t0 < 2_000_000_000L, "heard within 2 s");
        assertEquals(Departures.Kind.CLOSE, d.kind());
        assertEquals("close() on thread \"shutdown-hook\", while thread \"trainer\" issued the collectives",
                d.cause());
        Throwable t = stopped.get();
        assertTrue(t instanceof IllegalStateException, String.valueOf(t));
        assertTrue(t.getMessage().startsWith("this Communicator (rank 0 of 2) is being closed: close() on thread "
                + "\"shutdown-hook\"") || t.getMessage().startsWith("this Communicator (rank 0 of 2) is closed"),
                t.getMessage());
        hook.join(10_000);
        assertFalse(hook.isAlive());
        return new HeardClose(d, steps.get());
    }

    /** Rank 0 of two on one channel (rank 1 its peer, made and left alone), with a stream and a buffer of 4 floats. */
    private record RankZero(Liveness peer, Communicator c0, Stream s, DeviceBuffer b) {
    }

    private RankZero rankZeroWithAPeer() throws Exception {
        Liveness[] l = channel(2);
        Communicator c0 = rank(0, 2, l[0]);
        rank(1, 2, l[1]);
        return new RankZero(l[1], c0, later(Stream.create(0)), later(DeviceBuffer.allocate(0, 4, DataType.FLOAT32)));
    }

    @Test
    void aCloseOnAnotherThreadTellsThePeersTheLastCollectiveTheIssuingThreadReallyIssued() throws Exception {
        RankZero z = rankZeroWithAPeer();
        HeardClose h = closedByAHookWhileATrainerRuns(z.c0(), z.peer(), () -> z.c0().allReduce(z.b(), DataType.FLOAT32,
                ReduceOp.SUM, z.s()));
        assertEquals(z.c0().operationsEnqueued(), h.departure().last(),
                "the last all-reduce the trainer issued, not one read before");
    }

    @Test
    void aCloseOnAnotherThreadDuringGraphReplaysStopsTheReplaysAndTellsThePeers() throws Exception {
        RankZero z = rankZeroWithAPeer();
        Stream s = z.s();
        s.beginCapture();
        CudaGraph g;
        try {
            z.c0().allReduce(z.b(), DataType.FLOAT32, ReduceOp.SUM, s);
        } finally {
            g = later(s.endCapture());
        }
        HeardClose h = closedByAHookWhileATrainerRuns(z.c0(), z.peer(), () -> g.launch(s));
        assertEquals(h.steps(), cuda.calls("graphLaunch").size(), "every launch that reached CUDA returned");
        IllegalStateException later = assertThrows(IllegalStateException.class, () -> g.launch(s));
        assertEquals("this Communicator (rank 0 of 2) is closed", later.getMessage());
        assertEquals(h.steps(), cuda.calls("graphLaunch").size(), "a launch after the close reached CUDA");
    }

    /** Two ranks on one channel, each with its stream and buffer, after two all-reduces that both issued. */
    private record TwoRanks(Liveness[] ch, Communicator c0, Communicator c1, Stream s0, DeviceBuffer b0) {
    }

    private TwoRanks twoRanksAfterTwoAllReduces() throws Exception {
        Liveness[] ch = channel(2);
        Communicator c0 = rank(0, 2, ch[0]);
        Communicator c1 = rank(1, 2, ch[1]);
        Stream s0 = stream(0);
        Stream s1 = stream(0);
        DeviceBuffer b0 = buffer(0, 16, DataType.FLOAT32);
        DeviceBuffer b1 = buffer(0, 16, DataType.FLOAT32);
        for (int i = 0; i < 2; i++) {
            c0.allReduce(b0, DataType.FLOAT32, ReduceOp.SUM, s0);
            c1.allReduce(b1, DataType.FLOAT32, ReduceOp.SUM, s1);
        }
        s0.synchronize();
        s1.synchronize();
        return new TwoRanks(ch, c0, c1, s0, b0);
    }

    /**
     * Two ranks on one channel, and a communicator of rank 0's alone ({@code alone}) that will share rank 0's stream
     * {@code shared}; rank 1 issues on {@code s1}. Nothing issued yet.
     */
    private record SharedStream(Liveness[] ch, Communicator c0, Communicator c1, Communicator alone, Stream shared,
            Stream s1, DeviceBuffer b0, DeviceBuffer b1) {
    }

    private SharedStream rankZeroSharingAStream() throws Exception {
        Liveness[] ch = channel(2);
        Communicator c0 = rank(0, 2, ch[0]);
        Communicator c1 = rank(1, 2, ch[1]);
        Communicator alone = later(Communicator.create(0, 1, testId(), 0, CommConfig.builder().watchdog(true)
                .timeout(Duration.ofMinutes(1)).commName("alone").build()));
        return new SharedStream(ch, c0, c1, alone, stream(0), stream(0), buffer(0, 16, DataType.FLOAT32),
                buffer(0, 16, DataType.FLOAT32));
    }

    /** Two ranks on one channel; rank 0 has issued all-reduce #1 on a stalled stream of its own, rank 1 nothing. */
    private TwoRanks rankZeroWaitingInItsFirstAllReduce() throws Exception {
        Liveness[] ch = channel(2);
        Communicator c0 = rank(0, 2, ch[0]);
        Communicator c1 = rank(1, 2, ch[1]);
        Stream s0 = stream(0);
        cuda.stall(s0.handle());
        DeviceBuffer b0 = buffer(0, 8, DataType.FLOAT32);
        c0.allReduce(b0, DataType.FLOAT32, ReduceOp.SUM, s0);
        return new TwoRanks(ch, c0, c1, s0, b0);
    }

    // ------------------------------------------------------------------ end to end over loopback

    @Test
    void aRankThatClosesAfterFewerCollectivesFailsItsPeerAtOnceAndAbortsItself() throws Exception {
        TwoRanks two = twoRanksAfterTwoAllReduces();
        Liveness[] ch = two.ch();
        Communicator c0 = two.c0();
        Communicator c1 = two.c1();
        Stream s0 = two.s0();
        DeviceBuffer b0 = two.b0();
        cuda.stall(s0.handle());
        c0.allReduce(b0, DataType.FLOAT32, ReduceOp.SUM, s0);   // #3: rank 1 never issues it
        within(3000, () -> c0.health().ledger.last() == 3 ? true : null, "rank 0's #3");
        long t0 = System.nanoTime();
        c1.close();   // as when rank 1's own code throws inside try-with-resources
        long closeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(closeMs < 2500, "close returned after " + closeMs + " ms");
        assertTrue(stub.calls("ncclCommAbort").size() >= 1, "rank 1 aborted: " + stub.calls());
        assertTrue(c1.health().traceDumped(), "rank 1 left while rank 0 went on: its flight record is written too");
        Channels.cause(ch[1], "IllegalStateException: data loader failed on rank 1");   // what the uncaught handler sends
        long[] ms = new long[1];
        Throwable t = failed(c0, t0, ms);
        cuda.release(s0.handle());
        assertTrue(t instanceof PeerDepartedException, "got " + t);
        assertTrue(ms[0] < 2000, "rank 0 failed " + ms[0] + " ms after rank 1's close");
        PeerDepartedException e = (PeerDepartedException) t;
        assertTrue(e.getMessage().startsWith("rank 0 of 2 (communicator \"departures\"): allReduce #3 cannot "
                + "complete: rank 1 (" + HOST + ", pid " + PID + ") closed its communicator after allReduce #2, its last "
                + "(IllegalStateException: data loader failed on rank 1). Operation: allReduce #3"), e.getMessage());
        assertEquals("allReduce", e.pendingOperation());
        assertEquals(3, e.sequence());
        assertNotNull(e.trace());
        assertTrue(Files.readString(e.trace()).contains(TraceDump.REASON_PEER_DEPARTED), "the dump's reason");
    }

    @Test
    void ranksThatCloseAfterTheSameCollectiveFinalizeAndNobodyFails() throws Exception {
        Liveness[] ch = channel(3);
        Communicator[] c = new Communicator[3];
        for (int r = 0; r < 3; r++) {
            c[r] = rank(r, 3, ch[r]);
            Stream s = stream(0);
            c[r].allReduce(buffer(0, 8, DataType.FLOAT32), DataType.FLOAT32, ReduceOp.SUM, s);
            s.synchronize();
        }
        mark();
        List<CompletableFuture<Void>> closing = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            Communicator x = c[r];
            closing.add(CompletableFuture.runAsync(x::close));
            Thread.sleep(150);   // they arrive at different moments
        }
        for (CompletableFuture<Void> f : closing) {
            f.get(5, TimeUnit.SECONDS);
        }
        assertEquals(3, newCalls().stream().filter(l -> l.startsWith("ncclCommFinalize ")).count(), newCalls()
                .toString());
        assertEquals(3, newCalls().stream().filter(l -> l.startsWith("ncclCommDestroy ")).count());
        assertEquals(0, newCalls().stream().filter(l -> l.startsWith("ncclCommAbort ")).count());
        for (Communicator x : c) {
            assertNull(x.failure());
        }
    }

    @Test
    void aRankWhosePeersNeverCloseAbortsAtTheCloseDeadline() throws Exception {
        System.setProperty(Teardown.TIMEOUT_PROPERTY, "1s");
        Liveness[] ch = channel(2);
        rank(0, 2, ch[0]);
        Communicator c1 = rank(1, 2, ch[1]);
        mark();
        long t0 = System.nanoTime();
        c1.close();
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms >= 900 && ms < 2500, "closed after " + ms + " ms; deadline 1 s");
        assertEquals(1, newCalls().stream().filter(l -> l.startsWith("ncclCommAbort ")).count(), newCalls()
                .toString());
        assertEquals(0, newCalls().stream().filter(l -> l.startsWith("ncclCommDestroy ")).count());
    }

    @Test
    void afterARecoveryWithoutRankZeroACloseDoesNotWaitForClosesNobodyRelays() throws Exception {
        System.setProperty(Teardown.TIMEOUT_PROPERTY, "20s");
        try {
            Liveness[] ch = channel(3);
            within(3000, () -> ch[2].roster().size() == 3 ? true : null, "every rank in the roster");
            Channels.dropWithoutGoodbye(ch[0]);   // rank 0, the channel's hub, is lost
            within(5000, () -> ch[1].anyLost() && ch[2].anyLost() ? true : null, "rank 0's loss reaching 1 and 2");
            ch[1].renumber(new int[] {0});   // as Communicator.recover does for the survivors' new communicator
            ch[2].renumber(new int[] {0});
            Communicator c1 = rank(0, 2, ch[1]);
            rank(1, 2, ch[2]);
            mark();
            long t0 = System.nanoTime();
            c1.close();
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms < 2500, "closed after " + ms + " ms, not at the 20 s deadline");
            assertEquals(1, newCalls().stream().filter(l -> l.startsWith("ncclCommAbort ")).count(), newCalls()
                    .toString());
            assertTrue(Survivors.hubGone(ch[1]));
        } finally {
            System.setProperty(Teardown.TIMEOUT_PROPERTY, "3s");
        }
    }

    @Test
    void anAbortThatLivesOnFailsAPeerWaitingInACollectiveItNeverIssued() throws Exception {
        TwoRanks r = rankZeroWaitingInItsFirstAllReduce();
        Communicator c0 = r.c0();
        Communicator c1 = r.c1();
        Stream s0 = r.s0();
        long t0 = System.nanoTime();
        c1.abort();
        long[] ms = new long[1];
        Throwable t = failed(c0, t0, ms);
        cuda.release(s0.handle());
        assertTrue(t instanceof PeerDepartedException, "got " + t);
        assertTrue(ms[0] < 2000, "failed after " + ms[0] + " ms");
        assertTrue(t.getMessage().contains("allReduce #1 cannot complete: rank 1 (" + HOST + ", pid " + PID
                + ") aborted its communicator before its first collective"), t.getMessage());
    }

    @Test
    void aWaitOverACollectiveTheClosedRankNeverIssuedThrowsThoughTheStreamFinished() throws Exception {
        TwoRanks r = twoRanksAfterTwoAllReduces();
        Thread closer = new Thread(r.c1()::close, "closer");   // waits for rank 0's close, then gives up: it went on
        closer.start();
        within(3000, () -> r.ch()[0].departures().any() ? true : null, "rank 1's close, as rank 0 heard it");
        // #3, which rank 1 never issues, ends on the stub at once: as a collective an abort elsewhere let end, with
        // rank 0's data only. Its wait must not return as if every rank's data had been reduced.
        r.c0().allReduce(r.b0(), DataType.FLOAT32, ReduceOp.SUM, r.s0());
        PeerDepartedException e = assertThrows(PeerDepartedException.class, r.s0()::synchronize);
        assertTrue(e.getMessage().startsWith("rank 0 of 2 (communicator \"departures\"): allReduce #3 "), e.getMessage());
        assertTrue(e.getMessage().contains("rank 1 (" + HOST + ", pid " + PID + ") closed its communicator after "
                + "allReduce #2, its last"), e.getMessage());
        assertEquals(3, e.sequence());
        closer.join(10_000);
    }

    /**
     * As above, where rank 0's communicator issues on two streams, and the stream it waits on is shared with another
     * communicator of its own: the wait still throws, on the stream and on an event recorded on it.
     */
    @Test
    void aWaitOnAStreamSharedWithAnotherCommunicatorStillRefusesACollectiveTheClosedRankNeverIssued()
            throws Exception {
        for (boolean onAnEvent : new boolean[] {false, true}) {
            SharedStream r = rankZeroSharingAStream();
            Liveness[] ch = r.ch();
            Communicator c0 = r.c0();
            Communicator c1 = r.c1();
            Communicator alone = r.alone();
            Stream shared = r.shared();
            Stream other = stream(0);
            Stream s1 = r.s1();
            DeviceBuffer b0 = r.b0();
            DeviceBuffer b1 = r.b1();
            c0.allReduce(b0, DataType.FLOAT32, ReduceOp.SUM, shared);   // #1 on the shared stream, #2 on another
            c0.allReduce(b0, DataType.FLOAT32, ReduceOp.SUM, other);
            alone.allReduce(b0, DataType.FLOAT32, ReduceOp.SUM, shared);
            for (int i = 0; i < 2; i++) {
                c1.allReduce(b1, DataType.FLOAT32, ReduceOp.SUM, s1);
            }
            shared.synchronize();
            other.synchronize();
            s1.synchronize();
            assertNull(shared.soleUser(), "two communicators use the shared stream");
            Thread closer = new Thread(c1::close, "closer");
            closer.start();
            within(3000, () -> ch[0].departures().any() ? true : null, "rank 1's close, as rank 0 heard it");
            c0.allReduce(b0, DataType.FLOAT32, ReduceOp.SUM, shared);   // #3: rank 1 never issues it; it ends at once
            Event done = onAnEvent ? later(Event.create(0)).record(shared) : null;
            PeerDepartedException e = assertThrows(PeerDepartedException.class,
                    onAnEvent ? done::synchronize : shared::synchronize, onAnEvent ? "on an event" : "on the stream");
            assertTrue(e.getMessage().startsWith("rank 0 of 2 (communicator \"departures\"): allReduce #3 cannot "
                    + "complete: rank 1 (" + HOST + ", pid " + PID + ") closed its communicator after allReduce #2"),
                    (onAnEvent ? "on an event: " : "on the stream: ") + e.getMessage());
            assertEquals(3, e.sequence(), "the collective it names, though #1 may not be seen complete yet: "
                    + e.getMessage());
            closer.join(10_000);
            alone.close();
        }
    }

    /**
     * As above, where the news comes after the event was recorded on the shared stream, or while a thread waits on
     * the stream itself (what each communicator had published was not taken, since nothing had been heard): the wait
     * still throws instead of returning the result of a collective the closed rank never issued.
     */
    @Test
    void aWaitOnASharedStreamRefusesWhenTheNewsComesAfterTheRecordOrDuringTheWait() throws Exception {
        for (boolean onAnEvent : new boolean[] {true, false}) {
            String how = onAnEvent ? "an event recorded before the news" : "a wait under way when the news came";
            SharedStream r = rankZeroSharingAStream();
            Liveness[] ch = r.ch();
            Communicator c0 = r.c0();
            Communicator c1 = r.c1();
            Communicator alone = r.alone();
            Stream shared = r.shared();
            Stream s1 = r.s1();
            DeviceBuffer b0 = r.b0();
            DeviceBuffer b1 = r.b1();
            for (int i = 0; i < 2; i++) {
                c0.allReduce(b0, DataType.FLOAT32, ReduceOp.SUM, shared);
                c1.allReduce(b1, DataType.FLOAT32, ReduceOp.SUM, s1);
            }
            alone.allReduce(b0, DataType.FLOAT32, ReduceOp.SUM, shared);
            shared.synchronize();
            s1.synchronize();
            assertNull(shared.soleUser(), "two communicators use the shared stream");
            if (!onAnEvent) {
                cuda.stall(shared.handle());
            }
            c0.allReduce(b0, DataType.FLOAT32, ReduceOp.SUM, shared);   // #3: rank 1 never issues it
            Event done = onAnEvent ? later(Event.create(0)).record(shared) : null;
            CompletableFuture<Void> waited = onAnEvent ? null : CompletableFuture.runAsync(shared::synchronize);
            Thread closer = new Thread(c1::close, "closer");
            closer.start();
            within(3000, () -> ch[0].departures().any() ? true : null, "rank 1's close, as rank 0 heard it");
            Throwable t;
            if (onAnEvent) {
                t = assertThrows(PeerDepartedException.class, done::synchronize, how);
            } else {
                cuda.release(shared.handle());   // #3 ends at once, before the watchdog's look: the wait returns
                java.util.concurrent.ExecutionException x = assertThrows(java.util.concurrent.ExecutionException.class,
                        () -> waited.get(10, TimeUnit.SECONDS), how);
                t = x.getCause();
            }
            assertTrue(t instanceof PeerDepartedException, how + ": " + t);
            assertTrue(t.getMessage().startsWith("rank 0 of 2 (communicator \"departures\"): allReduce #3 "),
                    how + ": " + t.getMessage());
            closer.join(10_000);
            alone.close();
        }
    }

    /**
     * A rank that is lost (stopped, killed: its connection ended without a goodbye, or went silent) says nothing of
     * what it issued. A wait that returns after rank 0 heard of the loss, over a collective not yet known complete
     * then, throws the watchdog's failure instead of returning its result; one over a collective the watchdog had seen
     * complete before the news returns. Seen on 4 x H200: a stopped rank's all-reduce ended on a third rank with two
     * ranks' sum once another survivor aborted. The watchdog is held off rank 0 (its lifecycle lock) until the wait
     * has returned, as a watchdog between two looks.
     */
    @Test
    void aWaitThatReturnsAfterTheNewsOfALossThrowsTheFailureInsteadOfItsResult() throws Exception {
        TwoRanks r = twoRanksAfterTwoAllReduces();
        Communicator c0 = r.c0();
        c0.allReduce(r.b0(), DataType.FLOAT32, ReduceOp.SUM, r.s0());   // #3: complete before the loss, and seen so
        within(3000, () -> c0.health().recorder.lastCompleted() >= 3 ? true : null, "the watchdog seeing #3 end");
        java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch letGo = new java.util.concurrent.CountDownLatch(1);
        Thread holder = new Thread(() -> {
            c0.health().lifecycle.lock();
            held.countDown();
            try {
                letGo.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                c0.health().lifecycle.unlock();
            }
        }, "watchdog-holder");
        holder.start();
        held.await();
        try {
            Channels.dropWithoutGoodbye(r.ch()[1]);
            within(5000, () -> r.ch()[0].anyLost() ? true : null, "rank 1's loss, as rank 0 heard it");
            r.s0().synchronize();   // over #3 only: known complete before the news
            // #4 ends on the stub at once: as a collective that another survivor's abort let end without rank 1
            c0.allReduce(r.b0(), DataType.FLOAT32, ReduceOp.SUM, r.s0());
            CompletableFuture.runAsync(letGo::countDown,   // the watchdog's next look finds the loss
                    CompletableFuture.delayedExecutor(200, TimeUnit.MILLISECONDS));
            RemoteErrorException e = assertThrows(RemoteErrorException.class, r.s0()::synchronize);
            assertTrue(e.getMessage().startsWith("rank 0 of 2 (communicator \"departures\"): peer lost: rank 1 ("
                    + HOST + ", pid " + PID + ") is gone"), e.getMessage());
        } finally {
            letGo.countDown();
            holder.join(10_000);
        }
    }

    @Test
    void aThreadHeldInsideAnEnqueueDelaysTheWatchdogsAbortAQuarterOfASecondNotTwo() throws Exception {
        TwoRanks r = rankZeroWaitingInItsFirstAllReduce();
        Communicator c0 = r.c0();
        Communicator c1 = r.c1();
        Stream s0 = r.s0();
        // as rank 0's first collective making its connections to a peer that is gone: inside NCCL, never leaving
        c0.health().enterCall();
        int aborts = stub.calls("ncclCommAbort").size();
        long t0 = System.nanoTime();
        try {
            c1.abort();
            int mine = aborts + 1;   // rank 1's own
            within(5000, () -> stub.calls("ncclCommAbort").size() > mine ? true : null, "rank 0's abort");
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms >= CommHealth.WATCHDOG_CALL_LEAVE_NANOS / 1_000_000, "aborted after " + ms
                    + " ms: the thread inside was given its time to leave first");
            assertTrue(ms < 1500, "aborted after " + ms + " ms: a call that waits for a gone peer never leaves");
            assertTrue(c0.failure() instanceof PeerDepartedException, String.valueOf(c0.failure()));
        } finally {
            c0.health().leaveCall();
            cuda.release(s0.handle());
        }
    }

    @Test
    void aFailureAnywhereMakesEveryLiveRankWriteItsFlightRecord() throws Exception {
        Liveness[] ch = channel(3);
        Communicator c0 = rank(0, 3, ch[0]);
        Communicator c1 = rank(1, 3, ch[1]);
        Communicator c2 = rank(2, 3, ch[2]);
        Stream s2 = stream(0);
        c2.allReduce(buffer(0, 8, DataType.FLOAT32), DataType.FLOAT32, ReduceOp.SUM, s2);
        s2.synchronize();
        Stream s1 = stream(0);
        c1.allReduce(buffer(0, 8, DataType.FLOAT32), DataType.FLOAT32, ReduceOp.SUM, s1);   // from this thread
        s1.synchronize();
        Stream s0 = stream(0);
        c0.allReduce(buffer(0, 8, DataType.FLOAT32), DataType.FLOAT32, ReduceOp.SUM, s0);   // every rank issued #1
        s0.synchronize();
        // rank 2's watchdog fails its communicator (here: NCCL's asynchronous error on every communicator of the stub)
        c2.health().announceFailure(new CommunicatorFailedException(
                new CommunicatorFailedException.Details(2, 3, null, "allReduce", 2, 8, "ncclFloat32", "ncclSum", -1, 32, 0, Duration.ofSeconds(1), Duration.ofMinutes(1),
                0, null, null, "allReduce #2 did not complete within 1m", false, null)));
        within(3000, () -> c0.health().traceDumped() && c1.health().traceDumped() ? true : null, "the dumps of ranks 0, 1");
        within(3000, () -> c0.failure() != null && c1.failure() != null ? true : null, "ranks 0 and 1 failed");
        String dump = Files.readString(org.nccl4j.trace.TraceConfig.fromEnvironment().directory()
                .resolve("nccl4j-trace-rank1-" + HOST + "-" + PID + ".json"));
        assertTrue(dump.contains(TraceDump.REASON_PEER_FAILED) || dump.contains(TraceDump.REASON_PEER_DEPARTED), dump);
        assertTrue(dump.contains("rank 2 (" + HOST + ", pid " + PID + ") failed after allReduce #1, its last "
                + "(CommunicatorFailedException: allReduce #2 did not complete within 1m)")
                || dump.contains("rank 2 failed: CommunicatorFailedException: allReduce #2 did not complete"), dump);
        org.nccl4j.trace.TraceDump read = org.nccl4j.trace.TraceDump.read(org.nccl4j.trace.TraceConfig
                .fromEnvironment().directory().resolve("nccl4j-trace-rank1-" + HOST + "-" + PID + ".json"));
        assertEquals(1, read.threads().size(), "the stack of the thread that issued rank 1's operations");
        assertEquals(Thread.currentThread().getName(), read.threads().get(0).name());
        assertTrue(read.threads().get(0).frames().stream().anyMatch(f -> f.contains("DepartingTest")),
                read.threads().get(0).frames().toString());
        for (Communicator c : new Communicator[] {c0, c1}) {
            assertTrue(c.failure() instanceof PeerDepartedException, String.valueOf(c.failure()));
            assertTrue(c.failure().verdict().startsWith("no collective can complete any more: rank 2 ("),
                    c.failure().verdict());
        }
    }

    @Test
    void ranksThatIssueDifferentCollectivesAllFailWithinTwoSecondsNamingEveryField() throws Exception {
        Liveness[] ch = channel(2);
        Communicator c0 = rank(0, 2, ch[0]);
        Communicator c1 = rank(1, 2, ch[1]);
        Stream s0 = stream(0);
        Stream s1 = stream(0);
        DeviceBuffer b = buffer(0, 64, DataType.FLOAT32);
        c0.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s0);
        c1.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s1);
        long t0 = System.nanoTime();
        c0.allReduce(b.address(), b.address(), 64, DataType.FLOAT32, ReduceOp.SUM, s0);
        c1.allReduce(b.address(), b.address(), 128, DataType.FLOAT16, ReduceOp.SUM, s1);   // the same bytes
        within(3000, () -> c0.failure() != null && c1.failure() != null ? true : null, "both ranks' failures");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms < 2000, "found after " + ms + " ms");
        for (Communicator c : new Communicator[] {c0, c1}) {
            CommunicatorFailedException f = c.failure();
            assertTrue(f instanceof RanksDivergedException, f.toString());
            assertTrue(f.verdict().equals("collective #2 differs between ranks: rank 0 allReduce count 64 ncclFloat32 "
                    + "ncclSum, rank 1 allReduce count 128 ncclFloat16 ncclSum (count and data type differ)"),
                    f.verdict());
        }
    }

    @Test
    void withoutAChannelAFinalizeThatNeverReturnsEndsCloseAtTheDeadline() {
        System.setProperty(Teardown.TIMEOUT_PROPERTY, "500ms");
        Communicator c = Communicator.create(1, 2, testId(), 0);
        stub.sleep(NcclFunction.ncclCommDestroy, 1500);
        long t0 = System.nanoTime();
        CloseTimeoutException e = assertThrows(CloseTimeoutException.class, c::close);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms >= 450 && ms < 1500, "close returned after " + ms + " ms");
        assertTrue(e.getMessage().startsWith("rank 1: ncclCommFinalize/ncclCommDestroy did not return within the "
                + "close deadline (500 ms, NCCL4J_CLOSE_TIMEOUT)"), e.getMessage());
        assertEquals(Duration.ofMillis(500), e.timeout());
        assertTrue(c.isClosed());
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("nccl4j-close")) {
                assertTrue(t.isDaemon(), "the teardown thread does not keep the JVM alive");
                try {
                    t.join(3000);
                } catch (InterruptedException x) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    @Test
    void aCloseDeadlineThatIsNotADurationIsRefusedNamingTheVariable() {
        System.setProperty(Teardown.TIMEOUT_PROPERTY, "soon");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, Teardown::timeout);
        assertTrue(e.getMessage().contains(Teardown.TIMEOUT_PROPERTY), e.getMessage());
        System.setProperty(Teardown.TIMEOUT_PROPERTY, "0s");
        e = assertThrows(IllegalArgumentException.class, Teardown::timeout);
        assertTrue(e.getMessage().contains("must be longer than zero"), e.getMessage());
    }

    @Test
    void anAbortWaitsForAThreadInsideAnEnqueueToLeaveItAndLaterCallsAreRefused() throws Exception {
        Communicator c = Communicator.create(0, 2, testId(), 0);
        Stream st = stream(0);
        DeviceBuffer b = buffer(0, 8, DataType.FLOAT32);
        stub.sleep(NcclFunction.ncclAllReduce, 600);
        long[] callEnded = new long[1];
        Thread issuer = new Thread(() -> {
            c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, st);
            callEnded[0] = System.nanoTime();
        });
        issuer.start();
        within(3000, () -> stub.calls("ncclAllReduce").isEmpty() ? null : true, "the call inside the stub");
        long t0 = System.nanoTime();
        c.abort();
        long abortEnded = System.nanoTime();
        issuer.join(3000);
        assertTrue(callEnded[0] != 0, "the call returned");
        // the stub's call sleeps 600 ms from its entry, seen before t0: the abort waited for it to leave
        assertTrue(TimeUnit.NANOSECONDS.toMillis(abortEnded - t0) >= 300, "the abort waited for the call");
        List<String> order = stub.calls().stream().map(l -> l.split(" ")[0])
                .filter(f -> f.equals("ncclAllReduce") || f.equals("ncclCommAbort")).toList();
        assertEquals(List.of("ncclAllReduce", "ncclCommAbort"), order);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, st));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertEquals(1, stub.calls("ncclAllReduce").size(), "the refused call never reached NCCL");
    }

    @Test
    void anAbortHeardWithNothingPendingFailsTheCommunicatorAtOnceAndTheNextCallThrowsIt() throws Exception {
        Liveness[] ch = channel(2);
        Communicator c0 = rank(0, 2, ch[0]);
        Communicator c1 = rank(1, 2, ch[1]);
        c1.abort();
        within(3000, () -> ch[0].departures().of(0).isEmpty() ? null : true, "rank 1's departure at rank 0");
        long t0 = System.nanoTime();
        long[] ms = new long[1];
        CommunicatorFailedException f = failed(c0, t0, ms);
        assertTrue(f instanceof PeerDepartedException, f.toString());
        assertTrue(ms[0] < 1000, "failed " + ms[0] + " ms after the news, with nothing pending");
        Stream s0 = stream(0);
        RuntimeException later = assertThrows(RuntimeException.class,
                () -> c0.allReduce(buffer(0, 8, DataType.FLOAT32), DataType.FLOAT32, ReduceOp.SUM, s0));
        assertTrue(later.getMessage().contains("aborted its communicator before its first collective"),
                later.getMessage());
    }

    @Test
    void aCleanCloseAfterTheLastCollectiveLeavesAPeerThatCompletedItAlone() throws Exception {
        Liveness[] ch = channel(2);
        Communicator c0 = rank(0, 2, ch[0]);
        Communicator c1 = rank(1, 2, ch[1]);
        Stream s0 = stream(0);
        Stream s1 = stream(0);
        c0.allReduce(buffer(0, 8, DataType.FLOAT32), DataType.FLOAT32, ReduceOp.SUM, s0);
        c1.allReduce(buffer(0, 8, DataType.FLOAT32), DataType.FLOAT32, ReduceOp.SUM, s1);
        s0.synchronize();
        s1.synchronize();
        CompletableFuture<Void> closing = CompletableFuture.runAsync(c1::close);
        within(3000, () -> ch[0].departures().of(0).isEmpty() ? null : true, "rank 1's departure at rank 0");
        Thread.sleep(Channels.DEPARTURE_GRACE_NANOS / 1_000_000 + 300);
        assertNull(c0.failure(), "rank 0 completed what rank 1 issued: it is not disturbed");
        c0.close();
        closing.get(5, TimeUnit.SECONDS);
        assertEquals(2, stub.calls("ncclCommFinalize").size(), "both finalized: " + stub.calls());
    }

    @Test
    void rankZeroThatFailsAndEndsAtOnceStillReachesARankWaitingInClose() throws Exception {
        Liveness[] ch = channel(2);
        Communicator c0 = rank(0, 2, ch[0]);
        Communicator c1 = rank(1, 2, ch[1]);
        mark();
        long t0 = System.nanoTime();
        CompletableFuture<Void> closing = CompletableFuture.runAsync(c1::close);   // waits for rank 0 to close too
        Thread.sleep(200);
        c0.health().announceFailure(new CommunicatorFailedException(
                new CommunicatorFailedException.Details(0, 2, null, null, 0, 0, null, null, -1, 0, 0, Duration.ZERO, Duration.ofMinutes(1), 0, null, null, "it failed", false,
                null)));
        ch[0].close();   // its process ends right after (seen on 2 x H100: rank 1 waited for the close deadline)
        closing.get(5, TimeUnit.SECONDS);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms < 1500, "rank 1's close returned after " + ms + " ms");
        assertEquals(1, newCalls().stream().filter(l -> l.startsWith("ncclCommAbort ")).count(), newCalls()
                .toString());
        Departures.Departure d = ch[1].departures().of(0).get(0);
        assertNotNull(d, "rank 0's failure reached rank 1 before its channel closed");
        assertEquals(Departures.Kind.FAILURE, d.kind());
    }

    @Test
    void aRankZeroThatEndsWithoutADepartureIsALossNotAGoodbye() throws Exception {
        Liveness[] ch = channel(2);
        ch[0].close();   // no departure told: as a crash of rank 0 would look
        within(3000, () -> ch[1].anyLost() ? true : null, "rank 0's loss at rank 1");
        ch[1].close();
    }

    @Test
    void ncclsRemoteErrorNamesTheDepartureTheChannelToldOf() throws Exception {
        Liveness[] ch = channel(2);
        Communicator c0 = rank(0, 2, ch[0]);
        Communicator c1 = rank(1, 2, ch[1]);
        stub.asyncError(6);   // ncclRemoteError: NCCL saw the peer's sockets close
        c1.abort();
        CommunicatorFailedException f = within(3000, c0::failure, "rank 0's failure");
        assertTrue(f instanceof RemoteErrorException, f.toString());
        assertTrue(f.verdict().startsWith("peer lost: remote error (rank 1 (" + HOST + ", pid " + PID
                + ") aborted its communicator before its first collective") || f instanceof PeerDepartedException,
                f.verdict());
    }

    @Test
    void ranksThatCloseAfterTheSameNumberOfDifferentCollectivesAbortAndNameTheFirstDifference() throws Exception {
        Liveness[] ch = channel(2);
        Communicator c0 = rank(0, 2, ch[0]);
        Communicator c1 = rank(1, 2, ch[1]);
        Stream s0 = stream(0);
        Stream s1 = stream(0);
        DeviceBuffer b = buffer(0, 64, DataType.FLOAT32);
        c0.allReduce(b.address(), b.address(), 64, DataType.FLOAT32, ReduceOp.SUM, s0);
        c1.allReduce(b.address(), b.address(), 128, DataType.FLOAT16, ReduceOp.SUM, s1);   // the same bytes
        s0.synchronize();
        s1.synchronize();
        mark();
        CompletableFuture<Void> a = CompletableFuture.runAsync(c0::close);   // at once: before rank 0 compares
        CompletableFuture<Void> z = CompletableFuture.runAsync(c1::close);
        a.get(5, TimeUnit.SECONDS);
        z.get(5, TimeUnit.SECONDS);
        assertEquals(2, newCalls().stream().filter(l -> l.startsWith("ncclCommAbort ")).count(), newCalls()
                .toString());
        assertEquals(0, newCalls().stream().filter(l -> l.startsWith("ncclCommDestroy ")).count());
        assertTrue(c0.health().traceDumped() && c1.health().traceDumped(), "both recorded it for the analyzer");
        org.nccl4j.trace.TraceDump d = org.nccl4j.trace.TraceDump.read(org.nccl4j.trace.TraceConfig.fromEnvironment()
                .directory().resolve("nccl4j-trace-rank1-" + HOST + "-" + PID + ".json"));
        // named exactly, as the analyzer names it, though both closed before any heartbeat's comparison
        assertTrue(d.failure().contains("collective #1 differs between ranks: rank 0 allReduce count 64 "),
                d.failure());
        assertTrue(d.failure().contains(", rank 1 allReduce count 128 "), d.failure());
        assertTrue(d.failure().endsWith("(count and data type differ)"), d.failure());
        assertTrue(d.threads().isEmpty() || !d.threads().get(0).frames().get(0).contains("writeTrace"),
                "the issuing thread's stack starts where it was, not in the writing of the dump");
    }
}
