package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.control.Durations;
import org.nccl4j.trace.TraceDump;
import org.nccl4j.trace.TraceEntry;
import org.nccl4j.trace.TraceOperation;

/**
 * The watchdog against the stub NCCL and the fake CUDA: a stalled stream stands for a collective whose peer never
 * comes (its events stay pending, synchronize blocks until released), the stub's programmed async error for a lost
 * peer.
 */
class WatchdogTest extends StubFixture {
    @TempDir
    Path traces;

    private CommConfig.Builder watched(Duration timeout) {
        return CommConfig.builder().watchdog(true).timeout(timeout).commName("wd-test");
    }

    private Communicator watchedComm(CommConfig config) {
        return later(Communicator.create(0, 2, testId(), 0, config));
    }

    @Test
    void aStalledCollectiveTimesOutAndTheBlockedThreadGetsTheFailure() throws Exception {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 16, DataType.FLOAT32);
        AtomicReference<CommunicatorFailedException> heard = new AtomicReference<>();
        Communicator c = watchedComm(watched(Duration.ofMillis(400)).onFailure((comm, f) -> {
            heard.set(f);
            cuda.release(s.handle());   // what ncclCommAbort does to the kernels on a GPU
        }).build());
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);     // #1 completes
        s.synchronize();
        within(2000, () -> c.health().recorder.lastCompleted() == 1 ? true : null, "completion of allReduce #1");
        cuda.stall(s.handle());
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);     // #2 never completes
        long t0 = System.nanoTime();
        CompletableFuture<Throwable> waiter = CompletableFuture.supplyAsync(() -> {
            try {
                s.synchronize();
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        Throwable t = waiter.get(5, TimeUnit.SECONDS);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(t instanceof CollectiveTimeoutException, "got " + t);
        assertTrue(ms >= 350 && ms < 2400, "released after " + ms + " ms; timeout 400 ms");
        CollectiveTimeoutException e = (CollectiveTimeoutException) t;
        assertSame(heard.get(), e.getCause(), "the waiter's exception has the watchdog's as its cause");
        assertEquals("allReduce", e.pendingOperation());
        assertEquals(2, e.sequence());
        assertEquals(16, e.count());
        assertEquals("ncclFloat32", e.dataType());
        assertEquals("ncclSum", e.reduceOp());
        assertEquals(64, e.bytes());
        assertEquals(s.handle(), e.stream());
        assertEquals(0, e.rank());
        assertEquals(2, e.size());
        assertEquals("wd-test", e.communicator());
        assertEquals(Duration.ofMillis(400), e.timeout());
        String m = e.getMessage();
        assertTrue(m.startsWith("rank 0 of 2 (communicator \"wd-test\"): allReduce #2 did not complete within 400 ms: "
                + "a peer never joined it"), m);
        assertTrue(m.contains("Operation: allReduce #2, count 16 ncclFloat32 ncclSum, 64 bytes, stream 0x"
                + Long.toHexString(s.handle())), m);
        assertTrue(m.contains("(timeout 400 ms). NCCL: ncclSuccess (0)"), m);
        assertTrue(m.contains("The communicator was aborted. Trace: " + e.trace()), m);
        assertEquals(1, stub.calls("ncclCommAbort").size(), "the watchdog aborted the communicator once");

        // the trace: written before the abort, reason timeout, #1 completed, #2 still enqueued
        assertTrue(Files.isRegularFile(e.trace()), e.trace().toString());
        TraceDump dump = TraceDump.read(e.trace());
        assertEquals(TraceDump.REASON_TIMEOUT, dump.reason());
        assertEquals("wd-test", dump.communicator());
        assertEquals(2, dump.entries().size());
        assertEquals(TraceEntry.State.COMPLETED, dump.entries().get(0).state());
        assertEquals(TraceEntry.State.ENQUEUED, dump.entries().get(1).state());
        assertEquals(e.verdict(), dump.failure());

        // later calls throw the same failure, as a new exception of the same class
        CollectiveTimeoutException later = assertThrows(CollectiveTimeoutException.class,
                () -> c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s));
        assertEquals(m, later.getMessage());
        assertSame(heard.get(), later.getCause());
        assertThrows(CollectiveTimeoutException.class, s::synchronize);
        assertSame(heard.get(), c.failure());
        assertTrue(c.isClosed());
        c.close();   // still safe, and does not destroy an aborted communicator again
        assertEquals(List.of(), stub.calls("ncclCommDestroy"));
    }

    @Test
    void throwPolicyDeliversToTheNextWaitAndEventWaits() throws Exception {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 4, DataType.INT32);
        Event ev = later(Event.create(0));
        Communicator c = watchedComm(watched(Duration.ofMillis(200)).build());
        cuda.stall(s.handle());
        c.allGather(b, buffer(0, 8, DataType.INT32), DataType.INT32, s);
        ev.record(s);
        CommunicatorFailedException f = within(3000, c::failure, "the timeout");
        cuda.release(s.handle());
        assertTrue(f instanceof CollectiveTimeoutException, f.toString());
        assertEquals("allGather", f.pendingOperation());
        CollectiveTimeoutException w = assertThrows(CollectiveTimeoutException.class, ev::synchronize);
        assertSame(f, w.getCause());
        assertThrows(CollectiveTimeoutException.class, s::synchronize);
        assertThrows(CollectiveTimeoutException.class, c::handle);
    }

    @Test
    void aRemoteErrorFailsTheCommunicatorWithinAPoll() {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 8, DataType.FLOAT64);
        Communicator c = watchedComm(watched(Duration.ofMinutes(10)).build());
        c.broadcast(b, b, DataType.FLOAT64, 1, s);
        long t0 = System.nanoTime();
        stub.asyncError(6);
        CommunicatorFailedException f = within(3000, c::failure, "the remote error");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        stub.asyncError(0);
        assertTrue(f instanceof RemoteErrorException, f.toString());
        assertTrue(ms < 2000, "found after " + ms + " ms (a poll is 100 ms)");
        assertEquals(6, f.code());
        assertEquals(NcclResult.REMOTE_ERROR, f.result());
        assertTrue(f.getMessage().startsWith("rank 0 of 2 (communicator \"wd-test\"): peer lost: remote error"),
                f.getMessage());
        assertTrue(f.getMessage().contains("NCCL: ncclRemoteError (6), last error: stub last error after"),
                f.getMessage());
        assertTrue(f.getMessage().contains("(timeout 10 min)"), f.getMessage());
        assertEquals(1, stub.calls("ncclCommAbort").size());
        assertThrows(RemoteErrorException.class, () -> c.broadcast(b, b, DataType.FLOAT64, 1, s));
    }

    @Test
    void completedOperationsNeverTimeOut() throws Exception {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 8, DataType.FLOAT32);
        Communicator c = watchedComm(watched(Duration.ofMillis(300)).build());
        for (int i = 0; i < 5; i++) {
            c.allReduce(b, DataType.FLOAT32, ReduceOp.MAX, s);
        }
        within(2000, () -> c.health().recorder.lastCompleted() == 5 ? true : null, "completion of 5 operations");
        Thread.sleep(700);   // past the timeout: nothing pending, nothing fires
        assertNull(c.failure());
        assertEquals(List.of(), stub.calls("ncclCommAbort"));
        Path file = c.dumpTrace(traces);
        TraceDump d = TraceDump.read(file);
        assertEquals(TraceDump.REASON_ON_DEMAND, d.reason());
        assertEquals(5, d.lastCompleted());
        assertEquals(5, d.entries().size());
        for (TraceEntry e : d.entries()) {
            assertEquals(TraceOperation.allReduce, e.operation());
            assertEquals("ncclMax", e.reduceOp());
            assertEquals(TraceEntry.State.COMPLETED, e.state());
        }
    }

    @Test
    void operationsInsideAGroupArePublishedAtItsEnd() {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 8, DataType.FLOAT32);
        Communicator c = watchedComm(watched(Duration.ofMinutes(1)).build());
        Nccl.groupStart();
        c.send(b, DataType.FLOAT32, 1, s);
        c.recv(b, DataType.FLOAT32, 1, s);
        assertEquals(2, c.health().recorder.lastEnqueued());
        assertEquals(0, c.health().published(), "nothing launched before ncclGroupEnd");
        Nccl.groupEnd();
        assertEquals(2, c.health().published());
    }

    @Test
    void closeAndAbortStaySafeWhileTheWatchdogRuns() {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 8, DataType.FLOAT32);
        List<Communicator> comms = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            Communicator c = Communicator.create(0, 2, testId(), 0, watched(Duration.ofMillis(50)).build());
            c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
            comms.add(c);
        }
        for (int i = 0; i < comms.size(); i++) {
            if (i % 2 == 0) {
                comms.get(i).close();
            } else {
                comms.get(i).abort();
            }
        }
        for (Communicator c : comms) {
            assertNull(c.failure(), "a closed communicator is not declared failed");
        }
    }

    @Test
    void aWatchdogTurnedOffStillRecordsAndABufferOfZeroRecordsNothing() throws Exception {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 8, DataType.FLOAT32);
        Communicator off = later(Communicator.create(0, 2, testId(), 0, CommConfig.builder().watchdog(false).build()));
        off.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        assertEquals(1, off.health().recorder.lastEnqueued());
        assertEquals(1, TraceDump.read(off.dumpTrace(traces)).entries().size());
        Communicator none = later(Communicator.create(0, 2, testId(), 0,
                CommConfig.builder().watchdog(false).traceBuffer(0).build()));
        none.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        assertNull(none.health().recorder);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> none.dumpTrace(traces));
        assertTrue(e.getMessage().contains("traceBuffer(0)"), e.getMessage());
    }

    @Test
    void badSettingsNameTheSettingAndTheFix() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CommConfig.builder().traceBuffer(0).build());
        assertTrue(e.getMessage().contains("also set watchdog(false)"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CommConfig.builder().timeout(Duration.ZERO));
        assertTrue(e.getMessage().startsWith("timeout must be longer than zero"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CommConfig.builder().traceBuffer(-1));
        assertTrue(e.getMessage().contains("from 0 to 10000000"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CommConfig.builder().onFailure(FailurePolicy.CALLBACK));
        assertTrue(e.getMessage().contains("give the listener"), e.getMessage());
        assertThrows(NullPointerException.class, () -> CommConfig.builder().onFailure((FailureListener) null));
        assertEquals("CommConfig[commName=x, watchdog=on, timeout=30 s, onFailure=EXIT, traceBuffer=10, "
                + "checkCollectives=true]", CommConfig.builder().commName("x").watchdog(true)
                .timeout(Duration.ofSeconds(30)).onFailure(FailurePolicy.EXIT).traceBuffer(10).checkCollectives(true)
                .build().toString());
    }

    @Test
    void settingsComeFromPropertiesThenVariablesThenDefaults() {
        java.util.Properties none = new java.util.Properties();
        WatchdogConfig d = WatchdogConfig.from(java.util.Map.of(), none);
        assertTrue(d.enabled());
        assertEquals(Duration.ofMinutes(10), d.timeout());
        assertEquals(FailurePolicy.THROW, d.policy());
        assertEquals(Duration.ofMillis(100), d.poll());
        assertEquals(false, d.checkCollectives());
        assertEquals(2000, d.trace().bufferSize());

        WatchdogConfig v = WatchdogConfig.from(java.util.Map.of("NCCL4J_TIMEOUT", "30s", "NCCL4J_WATCHDOG", "off",
                "NCCL4J_ON_FAILURE", "exit", "NCCL4J_WATCHDOG_POLL", "250ms", "NCCL4J_CHECK_COLLECTIVES", "1",
                "NCCL4J_TRACE_BUFFER", "64"), none);
        assertEquals(Duration.ofSeconds(30), v.timeout());
        assertEquals(false, v.enabled());
        assertEquals(FailurePolicy.EXIT, v.policy());
        assertEquals(Duration.ofMillis(250), v.poll());
        assertTrue(v.checkCollectives());
        assertEquals(64, v.trace().bufferSize());

        java.util.Properties p = new java.util.Properties();
        p.setProperty("nccl4j.timeout", "1h");
        p.setProperty("nccl4j.watchdog", "on");
        WatchdogConfig both = WatchdogConfig.from(java.util.Map.of("NCCL4J_TIMEOUT", "30s", "NCCL4J_WATCHDOG", "off"), p);
        assertEquals(Duration.ofHours(1), both.timeout(), "the property wins");
        assertTrue(both.enabled());
        assertEquals(Duration.ofMinutes(10), WatchdogConfig.from(java.util.Map.of("NCCL4J_TIMEOUT", "10m"), none).timeout());
        assertEquals(Duration.ofMinutes(10), WatchdogConfig.from(java.util.Map.of("NCCL4J_TIMEOUT", "PT10M"), none).timeout());
    }

    @Test
    void badValuesNameTheVariableAndTheAcceptedForms() {
        java.util.Properties none = new java.util.Properties();
        String[][] cases = {
            {"NCCL4J_TIMEOUT", "30", "NCCL4J_TIMEOUT=30 is not a duration: use a whole number with a unit: 500ms, 30s, 10m, 1h"},
            {"NCCL4J_TIMEOUT", "ten minutes", "NCCL4J_TIMEOUT=ten minutes is not a duration"},
            {"NCCL4J_TIMEOUT", "0s", "NCCL4J_TIMEOUT=0s must be longer than zero"},
            {"NCCL4J_WATCHDOG", "maybe", "NCCL4J_WATCHDOG=maybe is not on or off: use on or off"},
            {"NCCL4J_ON_FAILURE", "retry", "NCCL4J_ON_FAILURE=retry is not a failure policy: use throw"},
            {"NCCL4J_WATCHDOG_POLL", "-5ms", "NCCL4J_WATCHDOG_POLL=-5ms is not a duration"},
            {"NCCL4J_CHECK_COLLECTIVES", "2", "NCCL4J_CHECK_COLLECTIVES=2 is not on or off"},
            {"NCCL4J_TRACE_BUFFER", "lots", "NCCL4J_TRACE_BUFFER=lots is not a whole number"},
        };
        for (String[] c : cases) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> WatchdogConfig.from(java.util.Map.of(c[0], c[1]), none), c[0] + "=" + c[1]);
            assertTrue(e.getMessage().startsWith(c[2]), e.getMessage());
        }
        java.util.Properties p = new java.util.Properties();
        p.setProperty("nccl4j.timeout", "soon");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> WatchdogConfig.from(java.util.Map.of(), p));
        assertTrue(e.getMessage().startsWith("nccl4j.timeout=soon is not a duration"), e.getMessage());
    }

    @Test
    void durationsPrintAsPeopleWriteThem() {
        assertEquals("400 ms", Durations.format(Duration.ofMillis(400)));
        assertEquals("10 s", Durations.format(Duration.ofSeconds(10)));
        assertEquals("1.5 s", Durations.format(Duration.ofMillis(1500)));
        assertEquals("10 min", Durations.format(Duration.ofMinutes(10)));
        assertEquals("2 h", Durations.format(Duration.ofHours(2)));
        assertNotNull(Durations.parse("X", "500ms"));
    }

    @Test
    void theCollectiveCheckGathersAFingerprintFirstAndNamesEveryRanksValue() {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 10, DataType.FLOAT32);
        Communicator c = later(Communicator.create(1, 3, testId(), 0,
                CommConfig.builder().checkCollectives(true).commName("ck").build()));
        mark();
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        List<String> calls = newCallNames();
        assertEquals(List.of("ncclAllGather", "ncclAllReduce"), calls, "the fingerprint's all-gather comes first");
        assertEquals("6", stub.calls("ncclAllGather").isEmpty() ? null
                : org.nccl4j.jni.StubNccl.parse(stub.calls("ncclAllGather").get(0)).get("count"));
        assertTrue(cuda.calls("streamSynchronize").size() >= 1, "and is waited for");

        // the comparison: this rank, then ranks 0, 1, 2; rank 2 passes half the count at #2
        long[] all = {2, 0, 10, 7, 0, -1,   2, 0, 10, 7, 0, -1,   2, 0, 10, 7, 0, -1,   2, 0, 5, 7, 0, -1};
        assertEquals(2, CollectiveCheck.firstDifference(all, 3));
        all[20] = 10;
        assertEquals(-1, CollectiveCheck.firstDifference(all, 3));
        all[19] = 1;
        assertEquals(1, CollectiveCheck.firstDifference(all, 3));
        CollectiveCheck check = new CollectiveCheck(c.health());
        CollectiveMismatchException e = check.mismatch(TraceOperation.allReduce, 2, 2, new long[] {10, 10, 5});
        assertEquals("rank 1 of 3 (communicator \"ck\"): the ranks called different collectives at allReduce #2: "
                + "count differs: rank 0 10, rank 1 10, rank 2 5. NCCL4J_CHECK_COLLECTIVES compared sequence, "
                + "operation, count, type, operator and root before enqueuing it; no rank enqueued it. Make every "
                + "rank call the same collectives in the same order with the same arguments", e.getMessage());
        assertEquals("count", e.field());
        assertEquals(5, e.values()[2]);
        assertEquals(NcclResult.INVALID_USAGE, e.result());
        assertTrue(check.mismatch(TraceOperation.reduce, 4, 3, new long[] {7, 8, 7}).getMessage()
                .contains("type differs: rank 0 ncclFloat32, rank 1 ncclFloat64, rank 2 ncclFloat32"));
        assertTrue(check.mismatch(TraceOperation.reduce, 4, 1, new long[] {2, 0, 2}).getMessage()
                .contains("operation differs: rank 0 reduce, rank 1 allReduce, rank 2 reduce"));
        all[19] = 0;
        assertNull(check.compare(TraceOperation.allReduce, 2, all, 3), "identical fingerprints: no exception");
        all[20] = 5;
        CollectiveMismatchException one = check.compare(TraceOperation.allReduce, 2, all, 3);
        assertEquals(e.getMessage(), one.getMessage(), "one differing field: the message as before");
        assertEquals(List.of("count"), one.fields());
    }

    private static final String CHECK_TAIL = ". NCCL4J_CHECK_COLLECTIVES compared sequence, operation, count, type, "
            + "operator and root before enqueuing it; no rank enqueued it. Make every rank call the same collectives "
            + "in the same order with the same arguments";

    @Test
    void theCollectiveCheckNamesBothCountAndTypeWhenBothDiffer() {
        // rank 1 passes the same bytes as half-precision: twice the count, FLOAT16 for FLOAT32
        Communicator c = later(Communicator.create(0, 2, testId(), 0,
                CommConfig.builder().checkCollectives(true).build()));
        long[] all = {4, 0, 1048576, 7, 0, -1,   4, 0, 1048576, 7, 0, -1,   4, 0, 2097152, 6, 0, -1};
        assertEquals(2, CollectiveCheck.firstDifference(all, 2));
        assertArrayEquals(new int[] {2, 3}, CollectiveCheck.differences(all, 2));
        CollectiveMismatchException e = new CollectiveCheck(c.health()).compare(TraceOperation.allReduce, 4, all, 2);
        assertEquals("rank 0 of 2: the ranks called different collectives at allReduce #4: count differs: rank 0 "
                + "1048576, rank 1 2097152; type differs: rank 0 ncclFloat32, rank 1 ncclFloat16" + CHECK_TAIL,
                e.getMessage());
        assertEquals(List.of("count", "type"), e.fields());
        assertEquals("count", e.field(), "field() stays the first");
        assertArrayEquals(new long[] {1048576, 2097152}, e.values(), "values() stay the first field's");
        assertArrayEquals(new long[] {1048576, 2097152}, e.values("count"));
        assertArrayEquals(new long[] {7, 6}, e.values("type"));
        assertEquals(4, e.sequence());
        assertEquals("allReduce", e.pendingOperation());
        IllegalArgumentException wrong = assertThrows(IllegalArgumentException.class, () -> e.values("root"));
        assertEquals("field \"root\" did not differ; the fields that differ are [count, type]: pass one of them",
                wrong.getMessage());
        e.values("count")[0] = 0;
        assertEquals(1048576, e.values("count")[0], "values are copies");
        assertThrows(UnsupportedOperationException.class, () -> e.fields().add("root"));
    }

    @Test
    void theCollectiveCheckNamesThreeDifferingFieldsEachOnEveryRank() {
        Communicator c = later(Communicator.create(2, 3, testId(), 0,
                CommConfig.builder().checkCollectives(true).commName("tp").build()));
        // this rank (2), then ranks 0, 1, 2: rank 1 calls reduce(SUM, root 0) where ranks 0 and 2 call
        // reduce(MAX, root 1) on the same count; rank 2 passes float64 where ranks 0 and 1 pass float32
        long[] all = {9, 2, 64, 8, 2, 1,   9, 2, 64, 7, 2, 1,   9, 2, 64, 7, 0, 0,   9, 2, 64, 8, 2, 1};
        assertArrayEquals(new int[] {3, 4, 5}, CollectiveCheck.differences(all, 3));
        CollectiveMismatchException e = new CollectiveCheck(c.health()).compare(TraceOperation.reduce, 9, all, 3);
        assertEquals("rank 2 of 3 (communicator \"tp\"): the ranks called different collectives at reduce #9: type "
                + "differs: rank 0 ncclFloat32, rank 1 ncclFloat32, rank 2 ncclFloat64; op differs: rank 0 MAX, "
                + "rank 1 SUM, rank 2 MAX; root differs: rank 0 1, rank 1 0, rank 2 1" + CHECK_TAIL, e.getMessage());
        assertEquals(List.of("type", "op", "root"), e.fields());
        assertEquals("type", e.field());
        assertArrayEquals(new long[] {7, 7, 8}, e.values());
        assertArrayEquals(new long[] {2, 0, 2}, e.values("op"));
        assertArrayEquals(new long[] {1, 0, 1}, e.values("root"));
        // every field at once: a different operation at a different sequence number
        long[] every = {9, 2, 64, 7, 2, 1,   9, 2, 64, 7, 2, 1,   8, 0, 32, 8, 0, -1,   9, 2, 64, 7, 2, 1};
        assertEquals(List.of("sequence", "operation", "count", "type", "op", "root"),
                new CollectiveCheck(c.health()).compare(TraceOperation.reduce, 9, every, 3).fields());
    }

    @Test
    void operationsEnqueuedTogetherAreNamedAsARange() {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 16, DataType.FLOAT32);
        Communicator c = watchedComm(watched(Duration.ofMillis(300)).build());
        cuda.stall(s.handle());
        Nccl.groupStart();   // published together at the group's end: no poll can fall between them
        for (int i = 0; i < 3; i++) {
            c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        }
        Nccl.groupEnd();
        CommunicatorFailedException f = within(3000, c::failure, "the timeout");
        cuda.release(s.handle());
        assertEquals(1, f.sequence());
        assertTrue(f.verdict().startsWith("allReduce #1 did not complete within 300 ms (or a later one up to #3: they "
                + "were enqueued together, before the watchdog could tell them apart): a peer never joined it"),
                f.verdict());
    }

    @Test
    void aTimeoutNamesTheCollectiveStillRunningNotOneCompletedOnAnotherStream() throws Exception {
        Stream done = stream(0);
        Stream stuck = stream(0);
        DeviceBuffer b = buffer(0, 16, DataType.FLOAT32);
        Communicator c = watchedComm(watched(Duration.ofMillis(300)).build());
        cuda.stall(stuck.handle());
        Nccl.groupStart();   // published together: one marker covers both, on both streams
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, done);    // #1 completes
        c.broadcast(b, DataType.FLOAT32, 0, stuck);              // #2 never does
        Nccl.groupEnd();
        within(2000, () -> c.health().recorder.lastCompleted() == 1 ? true : null,
                "#1 marked completed while #2 still runs on the other stream");
        CommunicatorFailedException f = within(3000, c::failure, "the timeout");
        cuda.release(stuck.handle());
        assertEquals(2, f.sequence());
        assertEquals("broadcast", f.pendingOperation());
        assertEquals(stuck.handle(), f.stream());
        assertTrue(f.verdict().startsWith("broadcast #2 did not complete within 300 ms: a peer never joined it"),
                f.verdict());
        TraceDump dump = TraceDump.read(f.trace());
        assertEquals(TraceEntry.State.COMPLETED, dump.entries().get(0).state());
        assertEquals(TraceEntry.State.ENQUEUED, dump.entries().get(1).state());
    }

    @Test
    void aReturnedWaitTellsTheWatchdogWhatCompleted() {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 16, DataType.FLOAT32);
        Communicator c = watchedComm(watched(Duration.ofMinutes(1)).build());
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        s.synchronize();
        assertEquals(2, c.health().syncedThrough());
        Event e = later(Event.create(0));
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        e.record(s);
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);   // after the record: not covered by the event
        e.synchronize();
        assertEquals(3, c.health().syncedThrough());
        within(2000, () -> c.health().recorder.lastCompleted() >= 3 ? true : null, "the watchdog marking #3");
    }

    @Test
    void theRecoverPolicyReleasesWaitsWithoutAbortingAndLeavesTheCommunicatorToShrink() throws Exception {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 16, DataType.FLOAT32);
        Event ev = later(Event.create(0));
        Communicator c = watchedComm(watched(Duration.ofMillis(300)).onFailure(FailurePolicy.RECOVER).build());
        cuda.stall(s.handle());   // and never released: the kernels stay hung until the shrink aborts them
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        ev.record(s);
        assertTrue(!ev.isDone(), "the all-reduce hangs");
        CompletableFuture<Throwable> streamWaiter = CompletableFuture.supplyAsync(() -> {
            try {
                s.synchronize();
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        CompletableFuture<Throwable> eventWaiter = CompletableFuture.supplyAsync(() -> {
            try {
                ev.synchronize();
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        assertTrue(streamWaiter.get(5, TimeUnit.SECONDS) instanceof CollectiveTimeoutException);
        assertTrue(eventWaiter.get(5, TimeUnit.SECONDS) instanceof CollectiveTimeoutException);
        assertEquals(List.of(), stub.calls("ncclCommAbort"), "kept: not aborted");
        assertTrue(c.failure().getMessage().contains("The communicator was kept for recovery: recover or shrink it, "
                + "then abort it. Trace: "), c.failure().getMessage());
        assertTrue(c.isClosed(), "closed for calls");
        assertThrows(CollectiveTimeoutException.class, () -> c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s));
        Communicator survivors = later(c.shrink(1));
        assertEquals("1", stub.last("ncclCommShrink").get("flags"), "NCCL_SHRINK_ABORT for the failed parent");
        assertEquals(1, survivors.size());
        c.abort();
        assertEquals(1, stub.calls("ncclCommAbort").size());
        c.close();
        c.abort();
        assertEquals(1, stub.calls("ncclCommAbort").size(), "once");
        cuda.release(s.handle());
    }
}
