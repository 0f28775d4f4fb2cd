package org.nccl4j.trace;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.DataType;
import org.nccl4j.ReduceOp;

/**
 * {@link TraceDump}: a recorder's dump written and read back equal (every field, a wrapped ring, odd streams and
 * texts, thread stacks), the file's name and permissions, and reading: fields it does not know ignored, a dump
 * written before thread stacks existed (a resource) read as one without them, each malformed field refused with a
 * message that names the source and the field.
 */
class TraceDumpTest {
    private static final int AR = TraceOperation.allReduce.code();
    private static final int F32 = DataType.FLOAT32.code();
    private static final int SUM = ReduceOp.SUM.code();

    @TempDir
    Path dir;

    /** A dump as a reader might find it: every field, two entries, one completed and one enqueued. */
    private static final String GOOD = """
            {
              "format": "nccl4j-trace",
              "version": 1,
              "host": "node7",
              "pid": 4242,
              "rank": 1,
              "size": 4,
              "communicator": "dp",
              "ncclVersion": "2.28.3",
              "dumpedAt": "2025-01-31T12:00:00.123456Z",
              "reason": "timeout",
              "failure": null,
              "capacity": 2000,
              "lastEnqueued": 7,
              "lastCompleted": 6,
              "environment": {"NCCL_DEBUG": "WARN", "NCCL4J_TRACE_BUFFER": "2000"},
              "entries": [
                {"seq": 6, "operation": "broadcast", "count": 10, "dataType": "ncclInt32", "reduceOp": null,
                 "peer": 0, "bytes": 40, "stream": "0x7f3a2c000b40", "enqueuedAt": "2025-01-31T11:59:59.876543Z",
                 "state": "COMPLETED", "completedAfterMicros": 12},
                {"seq": 7, "operation": "allReduce", "count": 1024, "dataType": "ncclFloat32", "reduceOp": "ncclSum",
                 "peer": null, "bytes": 4096, "stream": "0x7f3a2c000b40", "enqueuedAt": "2025-01-31T11:59:59.900000Z",
                 "state": "ENQUEUED", "completedAfterMicros": null}
              ]
            }
            """;

    private static TraceFormatException refused(String json) {
        return assertThrows(TraceFormatException.class, () -> TraceDump.parse(json, "d.json"));
    }

    private static void assertRefused(String json, String field, String problem) {
        TraceFormatException e = refused(json);
        assertEquals(field, e.field(), e.getMessage());
        assertEquals(problem, e.problem(), e.getMessage());
        assertEquals("d.json", e.source());
        assertEquals("d.json: " + (field == null ? "" : "field \"" + field + "\": ") + problem, e.getMessage());
    }

    // ---------------------------------------------------------------- round trip

    @Test
    void aRecordersDumpIsWrittenAndReadBackEqual() throws IOException {
        FlightRecorder r = new FlightRecorder(8);
        r.record(AR, 1024, F32, SUM, -1, 4096, 0x7f3a2c000b40L);
        r.record(TraceOperation.broadcast.code(), 7, DataType.BFLOAT16.code(), -1, 3, 14, 0x10);
        r.record(TraceOperation.send.code(), 9, DataType.INT8.code(), -1, 2, 9, -1L);   // a stream of all ones
        r.record(TraceOperation.reduce.code(), 1, DataType.UINT8.code(), 6, 0, 1, 0);   // ncclPreMulSum(6)
        r.record(TraceOperation.group.code(), 2, -1, -1, -1, 0, 0);
        r.completed(1);
        r.failed(2);
        r.completed(4);
        Map<String, String> env = Map.of("NCCL_DEBUG", "INFO", "NCCL4J_TRACE_DIR", "/x", "PATH", "/bin", "HOME", "/h",
                "NCCL4J_JOB_SECRET", "0123456789abcdef-the-secret", "NCCL4J_JOB_SECRET_FILE", "/run/secrets/job",
                "NCCL4J_RENDEZVOUS_TOKEN", "t0ken-value");
        TraceDump d = TraceDump.capture(r, 3, 4, "dp \"main\"", "2.28.3", TraceDump.REASON_ERROR,
                "ncclInternalError: line one\nline two, \u00e9t\u00e9 \u2713", env);
        assertEquals(Map.of("NCCL_DEBUG", "INFO", "NCCL4J_TRACE_DIR", "/x", "NCCL4J_JOB_SECRET", "(set, not shown)",
                "NCCL4J_JOB_SECRET_FILE", "/run/secrets/job", "NCCL4J_RENDEZVOUS_TOKEN", "(set, not shown)"),
                d.environment(), "a dump records that a secret is set, never its value");
        assertEquals(5, d.lastEnqueued());
        assertEquals(1, d.lastCompleted());
        assertEquals(ProcessHandle.current().pid(), d.pid());
        assertEquals(TraceDump.localHost(), d.host());

        Path file = d.write(dir);
        assertEquals(dir.resolve(d.fileName()), file);
        TraceDump back = TraceDump.read(file);
        assertEquals(d, back);
        assertEquals(d.toJson(), back.toJson());
        List<TraceEntry> e = back.entries();
        assertEquals(List.of(TraceEntry.State.COMPLETED, TraceEntry.State.FAILED, TraceEntry.State.ENQUEUED,
                TraceEntry.State.COMPLETED, TraceEntry.State.ENQUEUED), e.stream().map(TraceEntry::state).toList());
        assertEquals(-1L, e.get(2).stream());
        assertEquals("0xffffffffffffffff", e.get(2).streamHex());
        assertEquals("ncclPreMulSum(6)", e.get(3).reduceOp());
        assertNull(e.get(4).dataType());
        assertTrue(d.toJson().contains("\"stream\" : \"0xffffffffffffffff\""), d.toJson());
        // written atomically: nothing else left in the directory, readable by all
        try (Stream<Path> s = Files.list(dir)) {
            assertEquals(List.of(file), s.collect(Collectors.toList()));
        }
        assertEquals("rw-r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        // a second dump of the same process replaces the first
        r.completed(3);
        TraceDump later = TraceDump.capture(r, 3, 4, "dp \"main\"", "2.28.3", TraceDump.REASON_EXIT, null, env);
        assertEquals(file, later.write(dir));
        assertEquals(later, TraceDump.read(file));
    }

    @Test
    void aWrappedRingDumpsItsLastCapacityEntries() throws IOException {
        FlightRecorder r = new FlightRecorder(4);
        for (int i = 1; i <= 10; i++) {
            r.record(AR, 100 * i, F32, SUM, -1, 400 * i, 0x20);
        }
        for (int i = 1; i <= 8; i++) {
            r.completed(i);
        }
        TraceDump d = TraceDump.capture(r, 0, 2, null, "2.28.3", TraceDump.REASON_TIMEOUT, null, Map.of());
        assertEquals(4, d.capacity());
        assertEquals(10, d.lastEnqueued());
        assertEquals(8, d.lastCompleted());
        assertEquals(List.of(7L, 8L, 9L, 10L), d.entries().stream().map(TraceEntry::sequence).toList());
        TraceDump back = TraceDump.read(d.write(dir));
        assertEquals(d, back);
        assertEquals(List.of(700L, 800L, 900L, 1000L), back.entries().stream().map(TraceEntry::count).toList());
        assertEquals(List.of(TraceEntry.State.COMPLETED, TraceEntry.State.COMPLETED, TraceEntry.State.ENQUEUED,
                TraceEntry.State.ENQUEUED), back.entries().stream().map(TraceEntry::state).toList());
        assertNull(back.communicator());
    }

    @Test
    void anEmptyRecordersDumpHasNoEntries() throws IOException {
        TraceDump d = TraceDump.capture(new FlightRecorder(1), 0, 1, null, "2.28.3", TraceDump.REASON_ON_DEMAND, null,
                Map.of());
        assertEquals(List.of(), d.entries());
        assertEquals(0, d.lastEnqueued());
        assertEquals(d, TraceDump.read(d.write(dir.resolve("made/on/write"))));
    }

    @Test
    void theFileNameHasTheRankTheHostMadeSafeAndThePid() throws IOException {
        TraceDump d = TraceDump.parse(GOOD.replace("\"node7\"", "\"node 7/a:b.example-x_y\""), "d.json");
        assertEquals("nccl4j-trace-rank1-node_7_a_b.example-x_y-4242.json", d.fileName());
    }

    // ---------------------------------------------------------------- thread stacks

    @Test
    void aThreadsStackIsTakenWithItsStateAndFramesAsStackTraceElementWritesThem() throws Exception {
        CountDownLatch parked = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Thread t = new Thread(() -> {
            parked.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "issuer \"0\"");
        t.start();
        try {
            parked.await();
            TraceDump.ThreadStack s = TraceDump.ThreadStack.of(t);
            for (int i = 0; i < 100 && !s.state().equals("WAITING"); i++) {   // until it waits in await()
                Thread.sleep(10);
                s = TraceDump.ThreadStack.of(t);
            }
            assertEquals("issuer \"0\"", s.name());
            assertEquals(t.getId(), s.id());
            assertEquals("WAITING", s.state());
            // as StackTraceElement.toString() writes them: "java.base/" or "java.base@17.0.15/", "app//" or not
            assertTrue(s.frames().stream().anyMatch(f -> f.matches("java\\.base(@[^/]*)?/java\\.util\\.concurrent"
                    + "\\.CountDownLatch\\.await\\(CountDownLatch\\.java:\\d+\\)")), s.frames().toString());
            assertTrue(s.frames().stream().anyMatch(f -> f.contains("org.nccl4j.trace.TraceDumpTest.lambda$")),
                    s.frames().toString());
            List<String> frames = s.frames();
            assertThrows(UnsupportedOperationException.class, () -> frames.add("x"));
        } finally {
            release.countDown();
            t.join();
        }
        TraceDump.ThreadStack ended = TraceDump.ThreadStack.of(t);
        assertEquals("TERMINATED", ended.state());
        assertEquals(List.of(), ended.frames());
        TraceDump.ThreadStack self = TraceDump.ThreadStack.of(Thread.currentThread());
        assertEquals("RUNNABLE", self.state());
        assertTrue(self.frames().size() <= TraceDump.ThreadStack.MAX_FRAMES);
        assertTrue(self.frames().stream().anyMatch(f -> f.contains("org.nccl4j.trace.TraceDumpTest"
                + ".aThreadsStackIsTakenWithItsStateAndFramesAsStackTraceElementWritesThem(TraceDumpTest.java:")),
                self.frames().toString());
    }

    @Test
    void aDumpWithThreadsIsWrittenAndReadBackEqual() throws IOException {
        FlightRecorder r = new FlightRecorder(4);
        r.record(AR, 1024, F32, SUM, -1, 4096, 0x10);
        TraceDump plain = TraceDump.capture(r, 0, 2, "dp", "2.28.3", TraceDump.REASON_TIMEOUT, null, Map.of());
        assertEquals(List.of(), plain.threads());
        assertTrue(plain.toJson().contains("\"threads\" : [ ]"), plain.toJson());
        List<TraceDump.ThreadStack> stacks = List.of(
                new TraceDump.ThreadStack("main", 1, "RUNNABLE", List.of("com.example.Loader.next(Loader.java:42)",
                        "com.example.Train.main(Train.java:7)")),
                TraceDump.ThreadStack.of(Thread.currentThread()),
                new TraceDump.ThreadStack("gone \u00e9", 77, "TERMINATED", List.of()));
        TraceDump d = plain.withThreads(stacks);
        assertEquals(stacks, d.threads());
        assertEquals(plain.entries(), d.entries());
        assertEquals(plain, d.withThreads(List.of()));
        TraceDump back = TraceDump.read(d.write(dir));
        assertEquals(d, back);
        assertEquals(d.toJson(), back.toJson());
        assertThrows(UnsupportedOperationException.class, () -> back.threads().clear());
        assertThrows(NullPointerException.class, () -> plain.withThreads(null));
    }

    @Test
    void aDumpWrittenBeforeThreadStacksExistedReadsWithoutThem() throws IOException, java.net.URISyntaxException {
        Path old = Path.of(TraceDumpTest.class.getResource("nccl4j-trace-rank1-node7-4242-before-threads.json")
                .toURI());
        String text = Files.readString(old);
        assertFalse(text.contains("threads"), text);
        TraceDump d = TraceDump.read(old);
        assertEquals(List.of(), d.threads());
        assertEquals(1, d.rank());
        assertEquals(3, d.entries().size());
        assertEquals(TraceEntry.State.ENQUEUED, d.entries().get(2).state());
        assertEquals("allReduce #3 did not complete within 10 s", d.failure());
        // written again, it gains the empty array and reads back equal
        assertEquals(d, TraceDump.parse(d.toJson(), "again.json"));
        // a null reads as none, as an absent field does
        assertEquals(List.of(), TraceDump.parse(GOOD.replace("\"entries\": [", "\"threads\": null, \"entries\": ["),
                "d.json").threads());
    }

    @Test
    void eachMalformedThreadFieldIsNamed() {
        String one = "{\"name\": \"main\", \"id\": 1, \"state\": \"RUNNABLE\", \"frames\": [\"a.B.c(B.java:1)\"]}";
        String good = GOOD.replace("\"entries\": [", "\"threads\": [" + one + "], \"entries\": [");
        assertEquals(List.of(new TraceDump.ThreadStack("main", 1, "RUNNABLE", List.of("a.B.c(B.java:1)"))),
                assertDoesNotThrow(() -> TraceDump.parse(good, "d.json")).threads());
        assertRefused(GOOD.replace("\"entries\": [", "\"threads\": {}, \"entries\": ["), "threads",
                "expected an array, found an object");
        assertRefused(GOOD.replace("\"entries\": [", "\"threads\": [\"main\"], \"entries\": ["), "threads[0]",
                "expected an object, found a string (\"main\")");
        assertRefused(good.replace("\"name\": \"main\", ", ""), "threads[0].name", "missing field");
        assertRefused(good.replace("\"id\": 1", "\"id\": -1"), "threads[0].id",
                "expected a whole number >= 0, found -1");
        assertRefused(good.replace("\"RUNNABLE\"", "\"RUNNING\""), "threads[0].state",
                "unknown thread state \"RUNNING\" (one of " + List.of(Thread.State.values()) + ")");
        assertRefused(good.replace("[\"a.B.c(B.java:1)\"]", "[\"a.B.c(B.java:1)\", 7]"), "threads[0].frames[1]",
                "expected a string, found the number 7");
        assertRefused(good.replace("[\"a.B.c(B.java:1)\"]", "\"a.B.c(B.java:1)\""), "threads[0].frames",
                "expected an array, found a string (\"a.B.c(B.java:1)\")");
    }

    @Test
    void theThreadStackConstructorChecksWhatTheReaderChecks() {
        assertThrows(IllegalArgumentException.class, () -> new TraceDump.ThreadStack("main", 1, "running", List.of()));
        assertThrows(IllegalArgumentException.class, () -> new TraceDump.ThreadStack("main", -1, "NEW", List.of()));
        assertThrows(NullPointerException.class, () -> new TraceDump.ThreadStack(null, 1, "NEW", List.of()));
        assertThrows(NullPointerException.class, () -> new TraceDump.ThreadStack("main", 1, "NEW",
                java.util.Arrays.asList("a", null)));
    }

    // ---------------------------------------------------------------- reading

    @Test
    void aHandWrittenDumpIsReadFieldByField() throws IOException {
        TraceDump d = TraceDump.parse(GOOD, "d.json");
        assertEquals("node7", d.host());
        assertEquals(4242, d.pid());
        assertEquals(1, d.rank());
        assertEquals(4, d.size());
        assertEquals("dp", d.communicator());
        assertEquals("2.28.3", d.ncclVersion());
        assertEquals(Instant.parse("2025-01-31T12:00:00.123456Z"), d.dumpedAt());
        assertEquals("timeout", d.reason());
        assertNull(d.failure());
        assertEquals(2000, d.capacity());
        assertEquals(7, d.lastEnqueued());
        assertEquals(6, d.lastCompleted());
        assertEquals(List.of("NCCL4J_TRACE_BUFFER", "NCCL_DEBUG"), List.copyOf(d.environment().keySet()));
        TraceEntry b = d.entries().get(0);
        assertEquals(new TraceEntry(6, TraceOperation.broadcast, 10, "ncclInt32", null, 0, 40, 0x7f3a2c000b40L,
                Instant.parse("2025-01-31T11:59:59.876543Z"), TraceEntry.State.COMPLETED, 12L), b);
        TraceEntry a = d.entries().get(1);
        assertEquals(new TraceEntry(7, TraceOperation.allReduce, 1024, "ncclFloat32", "ncclSum", null, 4096,
                0x7f3a2c000b40L, Instant.parse("2025-01-31T11:59:59.900Z"), TraceEntry.State.ENQUEUED, null), a);
    }

    @Test
    void fieldsItDoesNotKnowAreIgnored() throws IOException {
        String more = GOOD.replace("\"version\": 1,", "\"version\": 1, \"gpu\": {\"name\": \"H100\", \"ids\": [0, 1]},"
                + " \"note\": null, \"weight\": 1.5,")
                .replace("\"seq\": 7,", "\"seq\": 7, \"kernel\": \"ring\", \"algo\": [\"tree\"], \"chunks\": 4,");
        assertEquals(TraceDump.parse(GOOD, "d.json"), TraceDump.parse(more, "d.json"));
        // optional texts may be left out: they read as null
        String without = GOOD.replace("\"communicator\": \"dp\",", "").replace("\"failure\": null,", "");
        TraceDump d = TraceDump.parse(without, "d.json");
        assertNull(d.communicator());
        assertNull(d.failure());
    }

    @Test
    void malformedFilesAsAWholeAreRefusedNamingTheSource() {
        assertRefused("", null, "empty file: no JSON in it");
        assertRefused("[1, 2]", null, "expected a JSON object at the top, found an array");
        assertRefused(GOOD + "{}", null, refused(GOOD + "{}").problem());
        assertTrue(refused(GOOD + "{}").problem().startsWith("not valid JSON: more after the top-level value, at line"));
        TraceFormatException e = refused("{\"format\": \"nccl4j-trace\", ");
        assertNull(e.field());
        assertTrue(e.getMessage().startsWith("d.json: not valid JSON: "), e.getMessage());
        e = refused(GOOD.replace("\"pid\": 4242,", "\"pid\": 4242, \"pid\": 1,"));
        assertTrue(e.getMessage().startsWith("d.json: not valid JSON: Duplicate field 'pid'"), e.getMessage());
    }

    @Test
    void eachMalformedFieldIsNamed() {
        assertRefused(GOOD.replace("\"format\": \"nccl4j-trace\",", ""), "format",
                "missing field (not an nccl4j trace dump)");
        assertRefused(GOOD.replace("\"nccl4j-trace\"", "\"chrome-trace\""), "format",
                "expected \"nccl4j-trace\", found a string (\"chrome-trace\") (not an nccl4j trace dump)");
        assertRefused(GOOD.replace("\"version\": 1", "\"version\": 2"), "version",
                "version 2 is not supported: this reader reads version 1 (written by a newer nccl4j?)");
        assertRefused(GOOD.replace("\"host\": \"node7\",", ""), "host", "missing field");
        assertRefused(GOOD.replace("\"pid\": 4242", "\"pid\": \"4242\""), "pid",
                "expected a whole number >= 0, found a string (\"4242\")");
        assertRefused(GOOD.replace("\"rank\": 1", "\"rank\": 4"), "rank", "expected a whole number from 0 to 3, found 4");
        assertRefused(GOOD.replace("\"size\": 4", "\"size\": 0"), "size",
                "expected a whole number from 1 to 2147483647, found 0");
        assertRefused(GOOD.replace("\"communicator\": \"dp\"", "\"communicator\": 5"), "communicator",
                "expected a string or null, found the number 5");
        assertRefused(GOOD.replace("\"dumpedAt\": \"2025-01-31T12:00:00.123456Z\"", "\"dumpedAt\": \"yesterday\""),
                "dumpedAt", "expected an ISO-8601 instant such as \"2025-01-31T12:00:00.123456Z\", found \"yesterday\"");
        assertRefused(GOOD.replace("\"capacity\": 2000", "\"capacity\": 1"), "entries",
                "holds 2 entries, more than the capacity 1");
        assertRefused(GOOD.replace("\"lastCompleted\": 6", "\"lastCompleted\": 8"), "lastCompleted",
                "expected a whole number from 0 to 7, found 8");
        assertRefused(GOOD.replace("\"lastEnqueued\": 7", "\"lastEnqueued\": 7.0"), "lastEnqueued",
                "expected a whole number from 0 to 2305843009213693951, found the number 7.0");
        assertRefused(GOOD.replace("\"NCCL_DEBUG\": \"WARN\"", "\"NCCL_DEBUG\": true"), "environment.NCCL_DEBUG",
                "expected a string, found true");
        assertRefused(GOOD.replace("\"entries\": [", "\"entries\": [1, "), "entries[0]", "expected an object, found the"
                + " number 1");
    }

    @Test
    void eachMalformedEntryFieldIsNamedWithItsIndex() {
        assertRefused(GOOD.replace("\"count\": 1024", "\"count\": \"12\""), "entries[1].count",
                "expected a whole number >= 0, found a string (\"12\")");
        assertRefused(GOOD.replace("\"count\": 10,", "\"count\": -1,"), "entries[0].count",
                "expected a whole number >= 0, found -1");
        assertRefused(GOOD.replace("\"seq\": 7", "\"seq\": 6"), "entries[1].seq",
                "6 does not follow the previous entry's 6 (entries go in increasing sequence order)");
        assertRefused(GOOD.replace("\"seq\": 7", "\"seq\": 9"), "entries[1].seq", "9 is beyond lastEnqueued (7)");
        assertRefused(GOOD.replace("\"operation\": \"allReduce\"", "\"operation\": \"allreduce\""),
                "entries[1].operation", "unknown operation \"allreduce\" (one of " + List.of(TraceOperation.values()) + ")");
        assertRefused(GOOD.replace("\"ncclFloat32\"", "\"float\""), "entries[1].dataType",
                "unknown data type \"float\" (one of " + TraceNames.DATA_TYPES + ", or null)");
        assertRefused(GOOD.replace("\"ncclSum\"", "\"ncclPreMulSum(2)\""), "entries[1].reduceOp",
                "unknown reduction operator \"ncclPreMulSum(2)\" (one of " + TraceNames.REDUCE_OPS
                        + ", ncclPreMulSum(N) with N >= 5, or null)");
        assertRefused(GOOD.replace("\"peer\": 0,", "\"peer\": -1,"), "entries[0].peer",
                "expected a whole number from 0 to 2147483647, found -1");
        assertRefused(GOOD.replace("\"stream\": \"0x7f3a2c000b40\", \"enqueuedAt\": \"2025-01-31T11:59:59.9",
                "\"stream\": \"7f3a\", \"enqueuedAt\": \"2025-01-31T11:59:59.9"), "entries[1].stream",
                "expected a handle in hexadecimal such as \"0x7f3a2c000b40\", found \"7f3a\"");
        assertRefused(GOOD.replace("\"0x7f3a2c000b40\", \"enqueuedAt\": \"2025-01-31T11:59:59.8",
                "\"0x1ffffffffffffffff\", \"enqueuedAt\": \"2025-01-31T11:59:59.8"), "entries[0].stream",
                "expected a handle in hexadecimal such as \"0x7f3a2c000b40\", found \"0x1ffffffffffffffff\"");
        assertRefused(GOOD.replace("\"ENQUEUED\"", "\"PENDING\""), "entries[1].state",
                "unknown state \"PENDING\" (one of [ENQUEUED, COMPLETED, FAILED])");
        assertRefused(GOOD.replace("\"completedAfterMicros\": null", "\"completedAfterMicros\": 5"),
                "entries[1].completedAfterMicros", "must be null for an operation still ENQUEUED, found 5");
        assertRefused(GOOD.replace("\"enqueuedAt\": \"2025-01-31T11:59:59.900000Z\",", ""), "entries[1].enqueuedAt",
                "missing field");
    }

    @Test
    void aFileThatCannotBeOpenedIsNamed() {
        Path missing = dir.resolve("nccl4j-trace-rank0-x-1.json");
        IOException e = assertThrows(IOException.class, () -> TraceDump.read(missing));
        assertTrue(e.getMessage().startsWith(missing + ": cannot be read: "), e.getMessage());
    }

    @Test
    void aMalformedFileIsNamedByItsPath() throws IOException {
        Path f = Files.writeString(dir.resolve("nccl4j-trace-rank1-node7-4242.json"),
                GOOD.replace("\"count\": 1024", "\"count\": \"x\""));
        TraceFormatException e = assertThrows(TraceFormatException.class, () -> TraceDump.read(f));
        assertEquals(f + ": field \"entries[1].count\": expected a whole number >= 0, found a string (\"x\")",
                e.getMessage());
        assertEquals(f.toString(), e.source());
    }

    @Test
    void theConstructorChecksWhatTheReaderChecks() throws IOException {
        TraceDump d = TraceDump.parse(GOOD, "d.json");
        assertThrows(IllegalArgumentException.class, () -> new TraceDump(d.host(), d.pid(), 4, 4, null, d.ncclVersion(),
                d.dumpedAt(), d.reason(), null, d.capacity(), d.environment(), d.lastEnqueued(), d.lastCompleted(),
                d.entries()));
        assertThrows(IllegalArgumentException.class, () -> new TraceDump(d.host(), d.pid(), 1, 4, null, d.ncclVersion(),
                d.dumpedAt(), d.reason(), null, d.capacity(), d.environment(), 6, 6, d.entries()));
        assertThrows(IllegalArgumentException.class, () -> new TraceDump(d.host(), d.pid(), 1, 4, null, d.ncclVersion(),
                d.dumpedAt(), d.reason(), null, d.capacity(), d.environment(), 7, 6, List.of(d.entries().get(1),
                        d.entries().get(0))));
        assertThrows(NullPointerException.class, () -> new TraceDump(null, d.pid(), 1, 4, null, d.ncclVersion(),
                d.dumpedAt(), d.reason(), null, d.capacity(), d.environment(), 7, 6, d.entries()));
        assertThrows(UnsupportedOperationException.class, () -> d.environment().put("A", "B"));
    }
}
