package org.nccl4j.tools.analyze;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link TraceAnalyzer} on hand-written dumps (JSON text blocks written into a temporary directory): each verdict
 * (consistent, skipped, added, shifted, count/type/operator/root/operation mismatches, missing ranks, the rank
 * everyone waits for), communicators grouped, {@code --communicator}, {@code --json} read back with jackson-core, and
 * the refusals with exit status 2 (unreadable file, empty directory, missing path, usage errors).
 */
class TraceAnalyzerTest {
    private static final String AR1000 = "allReduce 1000 ncclFloat32 ncclSum -";
    private static final String AR3000 = "allReduce 3000 ncclFloat32 ncclSum -";
    private static final String BC10 = "broadcast 10 ncclFloat32 - 0";

    @TempDir
    Path dir;

    /** A finished run: exit status, stdout, stderr. */
    private record Outcome(int status, String out, String err) {
        String firstLine() {
            return out.lines().findFirst().orElse("");
        }

        @Override
        public String toString() {
            return "status " + status + "\n--- out\n" + out + "--- err\n" + err;
        }
    }

    private static Outcome run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = TraceAnalyzer.execute(args, new PrintWriter(out), new PrintWriter(err));
        return new Outcome(status, out.toString(), err.toString());
    }

    /**
     * One entry's JSON. spec: {@code "operation count dataType reduceOp peer"}, "-" for null.
     */
    private static String entry(long seq, String spec, boolean completed) {
        String[] f = spec.split(" ");
        return """
                {"seq": %d, "operation": "%s", "count": %s, "dataType": %s, "reduceOp": %s, "peer": %s,
                 "bytes": %s, "stream": "0x7f3a2c000b40", "enqueuedAt": "2025-01-31T11:59:59.%06dZ",
                 "state": "%s", "completedAfterMicros": %s}"""
                .formatted(seq, f[0], f[1], quoted(f[2]), quoted(f[3]), f[4].equals("-") ? "null" : f[4], f[1], seq,
                        completed ? "COMPLETED" : "ENQUEUED", completed ? "42" : "null");
    }

    private static String quoted(String s) {
        return s.equals("-") ? "null" : "\"" + s + "\"";
    }

    /**
     * Writes the dump of one rank: operations #1.. as the specs say, the first {@code completed} of them completed,
     * the rest still enqueued.
     */
    private Path dump(Path in, String communicator, int rank, int size, int completed, String... specs)
            throws IOException {
        return dumpFrom(in, communicator, rank, size, 1, completed, specs);
    }

    /** As {@link #dump(Path, String, int, int, int, String...)}, the ring's first entry being #first (it wrapped). */
    private Path dumpFrom(Path in, String communicator, int rank, int size, long first, int completed, String... specs)
            throws IOException {
        List<String> entries = new ArrayList<>();
        for (int i = 0; i < specs.length; i++) {
            entries.add(entry(first + i, specs[i], i < completed));
        }
        String json = """
                {
                  "format": "nccl4j-trace",
                  "version": 1,
                  "host": "node%d",
                  "pid": %d,
                  "rank": %d,
                  "size": %d,
                  "communicator": %s,
                  "ncclVersion": "2.28.3",
                  "dumpedAt": "2025-01-31T12:00:00.123456Z",
                  "reason": "timeout",
                  "failure": null,
                  "capacity": 2000,
                  "lastEnqueued": %d,
                  "lastCompleted": %d,
                  "environment": {"NCCL_DEBUG": "WARN"},
                  "entries": [%s]
                }
                """.formatted(rank, 4200 + rank, rank, size, communicator == null ? "null" : "\"" + communicator + "\"",
                first - 1 + specs.length, first - 1 + completed, String.join(",\n", entries));
        Files.createDirectories(in);
        return Files.writeString(in.resolve("nccl4j-trace-rank" + rank + "-node" + rank + "-" + (4200 + rank)
                + (communicator == null ? "" : "-" + communicator) + ".json"), json);
    }

    private Path dump(int rank, int size, int completed, String... specs) throws IOException {
        return dump(dir, null, rank, size, completed, specs);
    }

    // ---------------------------------------------------------------- consistent

    @Test
    void ranksThatAgreeAreConsistentWithStatus0() throws IOException {
        for (int r = 0; r < 3; r++) {
            dump(r, 3, 4, AR1000, AR1000, BC10, AR3000);
        }
        Outcome run = run(dir.toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals("nccl4j-trace: consistent: all 3 ranks agree (#1 to #4); nothing pending", run.firstLine());
        assertTrue(run.out().contains("unnamed communicator (3 ranks): 3 of 3 dumps; reference: rank 0 (every rank has"
                + " the same collectives)"), run.out());
        assertEquals("", run.err());
    }

    @Test
    void ranksThatAllWaitInTheSameOperationAreConsistentToo() throws IOException {
        for (int r = 0; r < 2; r++) {
            dump(r, 2, 2, AR1000, AR1000, AR3000);
        }
        Outcome run = run(dir.toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals("nccl4j-trace: consistent: all 2 ranks agree (#1 to #3); ranks 0, 1 wait in allReduce #3 (every"
                + " rank enqueued it)", run.firstLine());
    }

    @Test
    void sendsAndReceivesAreNotCompared() throws IOException {
        dump(0, 2, 3, AR1000, "send 64 ncclInt8 - 1", "recv 32 ncclInt8 - 1");
        dump(1, 2, 3, AR1000, "recv 64 ncclInt8 - 0", "send 32 ncclInt8 - 0");
        Outcome run = run(dir.toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals("nccl4j-trace: consistent: all 2 ranks agree (#1 to #3); nothing pending", run.firstLine());
        assertTrue(run.out().contains("sends and receives are not compared (their peers and counts differ by design):"
                + " collectives are compared in their order among collectives"), run.out());
    }

    @Test
    void pipelineStagesWithDifferentSendsAndReceivesAgreeOnTheirCollectives() throws IOException {
        // three stages: the first only sends, the last only receives; each all-reduces twice
        dump(0, 3, 4, AR1000, "send 64 ncclFloat32 - 1", "send 64 ncclFloat32 - 1", AR3000);
        dump(1, 3, 6, AR1000, "recv 64 ncclFloat32 - 0", "send 64 ncclFloat32 - 2", "recv 64 ncclFloat32 - 0",
                "send 64 ncclFloat32 - 2", AR3000);
        dump(2, 3, 4, AR1000, "recv 64 ncclFloat32 - 1", "recv 64 ncclFloat32 - 1", AR3000);
        Outcome run = run(dir.toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals("nccl4j-trace: consistent: all 3 ranks agree (#1 to #6); nothing pending", run.firstLine());
        // the same collectives, numbered differently: a difference is named by each rank's own number
        dump(1, 3, 5, AR1000, "recv 64 ncclFloat32 - 0", "send 64 ncclFloat32 - 2", "recv 64 ncclFloat32 - 0",
                "send 64 ncclFloat32 - 2", "allReduce 3000 ncclFloat32 ncclMax -");
        run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: allReduce #4 (rank 1's #6) differs: op (ranks 0, 2: sum; rank 1: max); rank 1 waits"
                + " in allReduce #6", run.firstLine());
    }

    // ---------------------------------------------------------------- skipped, added, shifted

    @Test
    void aRankThatSkippedAnOperationIsNamedWithTheOperation() throws IOException {
        for (int r : new int[] {0, 2, 3}) {
            dump(r, 4, 2, AR1000, AR1000, AR3000, BC10);
        }
        dump(1, 4, 2, AR1000, AR1000, BC10);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: rank 1 issued 3 collectives, ranks 0, 2, 3 issued 4: rank 1 skipped rank 0's"
                + " allReduce #3 (count 3000 float32 sum), between its allReduce #2 and broadcast #3; ranks 0, 2, 3 wait"
                + " in allReduce #3; rank 1 waits in broadcast #3", run.firstLine());
        assertTrue(run.out().contains("reference: rank 0 (the majority: it agrees with the most ranks over the most"
                + " collectives)"), run.out());
        assertTrue(run.out().contains("problems:\n  rank 1 issued 3 collectives, ranks 0, 2, 3 issued 4: rank 1 skipped"
                + " rank 0's allReduce #3 (count 3000 float32 sum), between its allReduce #2 and broadcast #3: from #3"
                + " on, its collectives match rank 0's from #4 on\n"), run.out());
        // the table: last enqueued, last completed, oldest pending
        assertTrue(run.out().lines().anyMatch(l -> l.matches(" +1 +3 +2 +broadcast #3 +timeout +.*rank1-node1-4201"
                + "\\.json \\(node1, pid 4201\\)")), run.out());
        assertTrue(run.out().lines().anyMatch(l -> l.matches(" +0 +4 +2 +allReduce #3 +timeout +.*")), run.out());
    }

    @Test
    void withTwoRanksTheOneThatIssuedMoreIsTheReferenceSoTheOtherSkipped() throws IOException {
        dump(0, 2, 2, AR1000, AR1000, AR3000, BC10);
        dump(1, 2, 2, AR1000, AR1000, BC10);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: rank 1 issued 3 collectives, rank 0 issued 4: rank 1 skipped rank 0's allReduce #3"
                + " (count 3000 float32 sum), between its allReduce #2 and broadcast #3; rank 0 waits in allReduce #3;"
                + " rank 1 waits in broadcast #3", run.firstLine());
        assertTrue(run.out().contains("reference: rank 0 (no majority: of the ranks that agree with the most ranks, the"
                + " one that issued the most collectives, then the lowest)"), run.out());
        // the other way round: rank 0 skipped, not rank 1 added
        dump(0, 2, 2, AR1000, AR1000, BC10);
        dump(1, 2, 2, AR1000, AR1000, AR3000, BC10);
        run = run(dir.toString());
        assertEquals("nccl4j-trace: rank 0 issued 3 collectives, rank 1 issued 4: rank 0 skipped rank 1's allReduce #3"
                + " (count 3000 float32 sum), between its allReduce #2 and broadcast #3; rank 0 waits in broadcast #3;"
                + " rank 1 waits in allReduce #3", run.firstLine());
        assertTrue(run.out().contains("reference: rank 1 (no majority"), run.out());
    }

    @Test
    void aRankThatSkippedTwoOperationsIsNamedWithBoth() throws IOException {
        for (int r = 0; r < 3; r++) {
            if (r != 2) {
                dump(r, 3, 1, AR1000, AR3000, BC10, "allGather 5 ncclInt32 - -");
            }
        }
        dump(2, 3, 1, AR1000, "allGather 5 ncclInt32 - -");
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertTrue(run.firstLine().startsWith("nccl4j-trace: rank 2 issued 2 collectives, ranks 0, 1 issued 4: rank 2"
                + " skipped rank 0's allReduce #2 (count 3000 float32 sum) and broadcast #3 (count 10 float32 root 0),"
                + " between its allReduce #1 and allGather #2; "), run.firstLine());
    }

    @Test
    void aRankThatAddedAnOperationIsNamedWithIt() throws IOException {
        dump(0, 3, 3, AR1000, AR1000, AR3000);
        dump(1, 3, 3, AR1000, AR1000, AR3000);
        dump(2, 3, 4, AR1000, "reduce 7 ncclInt64 ncclMax 1", AR1000, AR3000);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: rank 2 issued 4 collectives, ranks 0, 1 issued 3: rank 2 added reduce #2 (count 7"
                + " int64 max root 1), between rank 0's allReduce #1 and #2", run.firstLine());
        assertTrue(run.out().contains("rank 2 added reduce #2 (count 7 int64 max root 1), between rank 0's allReduce #1"
                + " and #2: from #3 on, its collectives match rank 0's from #2 on"), run.out());
    }

    @Test
    void aShiftAmongRepeatingOperationsFitsBothWaysAndSaysSo() throws IOException {
        String loss = "allReduce 1 ncclFloat32 ncclSum -";
        dump(0, 3, 2, AR1000, loss, AR1000, loss, AR1000, loss);
        dump(1, 3, 2, AR1000, loss, AR1000, loss, AR1000, loss);
        dump(2, 3, 1, AR1000, AR1000, loss, AR1000, loss);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertTrue(run.firstLine().startsWith("nccl4j-trace: rank 2 issued 5 collectives, ranks 0, 1 issued 6: rank 2"
                + " skipped rank 0's allReduce #2 (count 1 float32 sum) or added its allReduce #2 (count 1000 float32"
                + " sum); "), run.firstLine());
        assertTrue(run.out().contains("the collectives that follow repeat, so both fit"), run.out());
    }

    // ---------------------------------------------------------------- mismatches

    @Test
    void aCountMismatchNamesEachRanksCount() throws IOException {
        dump(0, 3, 3, AR1000, AR3000, BC10);
        dump(1, 3, 3, AR1000, "allReduce 2000 ncclFloat32 ncclSum -", BC10);
        dump(2, 3, 3, AR1000, AR3000, BC10);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: allReduce #2 differs: count (ranks 0, 2: 3000; rank 1: 2000)", run.firstLine());
        assertTrue(run.out().contains("problems:\n  allReduce #2 differs: count (ranks 0, 2: 3000; rank 1: 2000): every"
                + " rank must issue the same collective with the same count, type, operator and root\n"), run.out());
    }

    @Test
    void typeOperatorAndRootMismatchesNameEachRanksValues() throws IOException {
        dump(0, 4, 3, AR1000, BC10, "reduceScatter 8 ncclBfloat16 ncclAvg -");
        dump(1, 4, 3, "allReduce 1000 ncclFloat16 ncclMax -", BC10, "reduceScatter 8 ncclBfloat16 ncclAvg -");
        dump(2, 4, 3, AR1000, "broadcast 10 ncclFloat32 - 2", "reduceScatter 8 ncclBfloat16 ncclAvg -");
        dump(3, 4, 3, AR1000, BC10, "reduceScatter 8 ncclBfloat16 ncclPreMulSum(5) -");
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: allReduce #1 differs: type (ranks 0, 2, 3: float32; rank 1: float16), op (ranks 0,"
                + " 2, 3: sum; rank 1: max); broadcast #2 differs: root (ranks 0, 1, 3: 0; rank 2: 2); reduceScatter #3"
                + " differs: op (ranks 0-2: avg; rank 3: preMulSum(5))", run.firstLine());
    }

    @Test
    void aDifferentOperationAtOneSequenceNumberNamesBoth() throws IOException {
        dump(0, 3, 3, AR1000, AR3000, BC10);
        dump(1, 3, 3, AR1000, "reduce 3000 ncclFloat32 ncclSum 0", BC10);
        dump(2, 3, 3, AR1000, AR3000, BC10);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: #2 is allReduce (count 3000 float32 sum) on ranks 0, 2 but reduce (count 3000"
                + " float32 sum root 0) on rank 1", run.firstLine());
    }

    // ---------------------------------------------------------------- missing ranks, waiting for a rank

    @Test
    void ranksWithoutADumpAreLostOrNotDumped() throws IOException {
        for (int r : new int[] {0, 1, 3}) {
            dump(r, 6, 2, AR1000, AR1000, AR3000);
        }
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: ranks 2, 4, 5 have no dump (lost or not dumped); ranks 0, 1, 3 wait in allReduce"
                + " #3", run.firstLine());
        assertTrue(run.out().contains("unnamed communicator (6 ranks): 3 of 6 dumps"), run.out());
        assertTrue(run.out().contains("ranks 2, 4, 5 have no dump (lost or not dumped): 3 of 6 ranks dumped"), run.out());
    }

    @Test
    void theRankEveryoneWaitsForIsNamed() throws IOException {
        for (int r : new int[] {0, 2, 3}) {
            dump(r, 4, 4, AR1000, AR1000, AR1000, AR1000, AR3000);
        }
        dump(1, 4, 3, AR1000, AR1000, AR1000, AR1000);   // its #4 not yet marked completed: not known to have left
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: everyone waits for rank 1: ranks 0, 2, 3 wait in allReduce #5, which rank 1 has not"
                + " enqueued (last enqueued #4); rank 1 waits in allReduce #4", run.firstLine());
        assertTrue(run.out().contains("waiting:\n  rank 1 waits in allReduce #4\n  ranks 0, 2, 3 wait in allReduce #5\n"),
                run.out());
    }

    @Test
    void someRanksWaitForOthersWhenNotAllDumped() throws IOException {
        dump(0, 4, 1, AR1000, AR3000);
        dump(1, 4, 1, AR1000);
        dump(2, 4, 1, AR1000);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: rank 3 has no dump (lost or not dumped); rank 0 waits for ranks 1, 2 in allReduce #2,"
                + " which ranks 1, 2 have not enqueued (last enqueued: rank 1 #1, rank 2 #1)", run.firstLine());
    }

    @Test
    void wrappedRingsAreComparedWhereBothHoldEntries() throws IOException {
        // rank 0's ring holds #7 to #10, rank 1's #5 to #10, rank 2's #8 to #10: #8 differs on rank 1
        dumpFrom(dir, null, 0, 3, 7, 3, AR1000, AR1000, AR1000, AR3000);
        dumpFrom(dir, null, 1, 3, 5, 5, AR1000, AR1000, AR1000, "allReduce 1000 ncclInt32 ncclSum -", AR1000, AR3000);
        dumpFrom(dir, null, 2, 3, 8, 2, AR1000, AR1000, AR3000);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: allReduce #8 differs: type (ranks 0, 2: float32; rank 1: int32); ranks 0-2 wait in"
                + " allReduce #10 (every rank enqueued it)", run.firstLine());
        assertTrue(run.out().lines().anyMatch(l -> l.matches(" +1 +10 +9 +allReduce #10 .*")), run.out());
    }

    @Test
    void ringsWithNothingInCommonAreNotComparedAndSaySo() throws IOException {
        dumpFrom(dir, null, 0, 2, 1, 2, AR1000, AR1000);
        dumpFrom(dir, null, 1, 2, 5, 2, AR3000, AR3000);
        Outcome run = run(dir.toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals("nccl4j-trace: consistent: all 2 ranks agree (#1 to #6); nothing pending", run.firstLine());
        assertTrue(run.out().contains("notes:\n  rank 0 holds #1 to #2, rank 1 (the reference) #5 to #6: no collective in"
                + " common to compare\n"), run.out());
    }

    @Test
    void failuresAndFailedOperationsAreInTheNotes() throws IOException {
        dump(0, 2, 1, AR1000, AR3000);
        Path one = dump(1, 2, 1, AR1000, AR3000);
        Files.writeString(one, Files.readString(one)
                .replace("\"failure\": null", "\"failure\": \"ncclRemoteError: peer 0 went away\"")
                .replace("\"reason\": \"timeout\"", "\"reason\": \"remote error\"")
                .replace("\"state\": \"ENQUEUED\", \"completedAfterMicros\": null",
                        "\"state\": \"FAILED\", \"completedAfterMicros\": 900"));
        Outcome run = run(dir.toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals("nccl4j-trace: consistent: all 2 ranks agree (#1 to #2); rank 0 waits in allReduce #2",
                run.firstLine());
        assertTrue(run.out().contains("notes:\n  rank 1 (remote error): ncclRemoteError: peer 0 went away\n"
                + "  rank 1: allReduce #2 (count 3000 float32 sum) FAILED after 900 us\n"), run.out());
    }

    // ---------------------------------------------------------------- the rank that diverged, all ranks dumped

    private static final String AR1M = "allReduce 1048576 ncclFloat32 ncclSum -";
    private static final String BC4K = "broadcast 4096 ncclFloat32 - 0";

    /** Puts thread stacks into a dump: each thread as {@code name state frame frame ...}, split at '|'. */
    private static void threads(Path dump, String... threads) throws IOException {
        List<String> objects = new ArrayList<>();
        long id = 1;
        for (String t : threads) {
            String[] f = t.split("\\|");
            List<String> frames = new ArrayList<>();
            for (int i = 2; i < f.length; i++) {
                frames.add("\"" + f[i] + "\"");
            }
            objects.add("{\"name\": \"" + f[0] + "\", \"id\": " + id++ + ", \"state\": \"" + f[1] + "\", \"frames\": ["
                    + String.join(", ", frames) + "]}");
        }
        Files.writeString(dump, Files.readString(dump).replace("\"entries\": [", "\"threads\": ["
                + String.join(",\n", objects) + "],\n  \"entries\": ["));
    }

    /** Frames of a thread stuck in the program's own code (CPU work before its next collective). */
    private static final String IN_OWN_CODE = "main|RUNNABLE|app//com.example.Loader.next(Loader.java:42)"
            + "|app//com.example.Train.step(Train.java:60)|app//com.example.Train.main(Train.java:12)";
    /** Frames of a thread waiting in NCCL, called from the program through nccl4j. */
    private static final String IN_NCCL = "main|RUNNABLE|app//org.nccl4j.jni.NcclNative.ncclGroupEnd(Native Method)"
            + "|app//org.nccl4j.Communicator.collective(Communicator.java:1190)"
            + "|app//org.nccl4j.Communicator.broadcast(Communicator.java:1402)"
            + "|app//com.example.Train.step(Train.java:64)|app//com.example.Train.main(Train.java:12)";

    @Test
    void aRankThatIssuedOneLessOfIdenticalCollectivesSkippedOne() throws IOException {
        dump(0, 2, 5, AR1000, AR1000, AR1000, AR1000, AR1000, AR1000);
        dump(1, 2, 5, AR1000, AR1000, AR1000, AR1000, AR1000);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: rank 1 issued 5 collectives, rank 0 issued 6: rank 1 skipped one (rank 0's allReduce"
                + " #6 has no partner)", run.firstLine());
        assertTrue(run.out().contains("problems:\n  rank 1 issued 5 collectives, rank 0 issued 6: rank 1 skipped one (rank"
                + " 0's allReduce #6 has no partner): its collectives all completed and it issued no more; allReduce #6"
                + " (count 1000 float32 sum) is like allReduce #5 before it, so where cannot be told (or rank 1 stopped"
                + " before the last) (rank 1's dump holds no thread stacks: jstack shows where it is)\n"), run.out());
        assertTrue(run.out().contains("waiting:\n  rank 0 waits in allReduce #6\n"), run.out());

        // whichever rank is short, and among more ranks
        for (int r = 0; r < 4; r++) {
            if (r == 2) {
                dump(r, 4, 5, AR1000, AR1000, AR1000, AR1000, AR1000);
            } else {
                dump(r, 4, 5, AR1000, AR1000, AR1000, AR1000, AR1000, AR1000);
            }
        }
        run = run(dir.toString());
        assertEquals("nccl4j-trace: rank 2 issued 5 collectives, ranks 0, 1, 3 issued 6: rank 2 skipped one (allReduce"
                + " #6 of ranks 0, 1, 3 has no partner)", run.firstLine());

        Map<String, Object> f = object(list(object(list(object(parse(run("--json", dir.toString()).out()))
                .get("communicators")).get(0)).get("findings")).get(0));
        assertEquals("skipped", f.get("kind"));
        assertEquals(List.of(2L), f.get("ranks"));
        assertEquals(6L, f.get("seq"));
    }

    @Test
    void aSkipAmongCollectivesOfDifferentShapesIsLocated() throws IOException {
        // rank 0: AR(1M) AR(1M) BC(4K) AR(1M); rank 1: AR(1M) AR(1M) AR(1M): rank 1 skipped the broadcast
        dump(0, 2, 2, AR1M, AR1M, BC4K, AR1M);
        dump(1, 2, 2, AR1M, AR1M, AR1M);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: rank 1 issued 3 collectives, rank 0 issued 4: rank 1 skipped rank 0's broadcast #3"
                + " (count 4096 float32 root 0), between its allReduce #2 and #3; rank 0 waits in broadcast #3; rank 1"
                + " waits in allReduce #3", run.firstLine());

        // sends and receives between them, different on each rank, change nothing but the numbers
        dump(0, 2, 3, AR1M, "send 64 ncclInt8 - 1", AR1M, BC4K, AR1M);
        dump(1, 2, 3, "recv 64 ncclInt8 - 0", AR1M, AR1M, "send 8 ncclInt8 - 0", AR1M);
        run = run(dir.toString());
        assertEquals("nccl4j-trace: rank 1 issued 3 collectives, rank 0 issued 4: rank 1 skipped rank 0's broadcast #4"
                + " (count 4096 float32 root 0), between its allReduce #3 and #5; rank 0 waits in broadcast #4; rank 1"
                + " waits in send #4 to rank 0", run.firstLine());
    }

    @Test
    void aCountAndATypeMismatchAtOneCollectiveNameEachFieldPerRank() throws IOException {
        dump(0, 3, 1, AR1000, "allReduce 2048 ncclFloat32 ncclSum -", BC10);
        dump(1, 3, 1, AR1000, "allReduce 1024 ncclFloat32 ncclSum -", BC10);
        dump(2, 3, 1, AR1000, "allReduce 2048 ncclBfloat16 ncclSum -", BC10);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: allReduce #2 differs: count (ranks 0, 2: 2048; rank 1: 1024), type (ranks 0, 1:"
                + " float32; rank 2: bfloat16); ranks 0-2 wait in allReduce #2 (every rank enqueued it)", run.firstLine());
        // both on one rank, with the operator and the root
        dump(0, 2, 1, AR1000, "reduce 100 ncclFloat32 ncclSum 0");
        dump(1, 2, 1, AR1000, "reduce 50 ncclInt32 ncclMax 1");
        Files.delete(dir.resolve("nccl4j-trace-rank2-node2-4202.json"));
        run = run(dir.toString());
        assertEquals("nccl4j-trace: reduce #2 differs: count (rank 0: 100; rank 1: 50), type (rank 0: float32; rank 1:"
                + " int32), op (rank 0: sum; rank 1: max), root (rank 0: 0; rank 1: 1); ranks 0, 1 wait in reduce #2"
                + " (every rank enqueued it)", run.firstLine());
        Map<String, Object> f = object(list(object(list(object(parse(run("--json", dir.toString()).out()))
                .get("communicators")).get(0)).get("findings")).get(0));
        assertEquals("mismatch", f.get("kind"));
        assertEquals(2L, f.get("seq"));
        Map<String, Object> d = object(f.get("differences"));
        assertEquals(List.of("count", "type", "op", "root"), List.copyOf(d.keySet()));
        assertEquals(Map.of("100", List.of(0L), "50", List.of(1L)), d.get("count"));
        assertEquals(Map.of("float32", List.of(0L), "int32", List.of(1L)), d.get("type"));
    }

    @Test
    void aRankThatLeftEarlyIsTheOneToLookAtWithItsThreadsUserFrame() throws IOException {
        dump(0, 2, 3, AR1M, AR1M, AR1M, BC4K);
        Path one = dump(1, 2, 3, AR1M, AR1M, AR1M);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: rank 1 issued 3 collectives, rank 0 issued 4: rank 1 left early: its collectives all"
                + " completed, and rank 0's broadcast #4 has no partner", run.firstLine());
        assertTrue(run.out().contains(": rank 0 waits in broadcast #4 (count 4096 float32 root 0), which rank 1 has not"
                + " issued: it left early, skipped it, or is busy before it (rank 1's dump holds no thread stacks:"
                + " jstack shows where it is)\n"), run.out());

        threads(one, IN_OWN_CODE, "watchdog|TIMED_WAITING|java.base/java.lang.Thread.sleep(Native Method)"
                + "|app//org.nccl4j.Watchdog.run(Watchdog.java:300)|java.base/java.lang.Thread.run(Thread.java:840)");
        threads(dir.resolve("nccl4j-trace-rank0-node0-4200.json"), IN_NCCL);
        run = run(dir.toString());
        assertEquals("nccl4j-trace: rank 1 issued 3 collectives, rank 0 issued 4: rank 1 left early: its collectives all"
                + " completed, and rank 0's broadcast #4 has no partner; look at rank 1: thread \"main\" RUNNABLE in its"
                + " own code at com.example.Loader.next(Loader.java:42)", run.firstLine());
        assertTrue(run.out().contains("threads:\n"
                + "  rank 0: thread \"main\" (id 1) RUNNABLE in NCCL (native code) at org.nccl4j.jni.NcclNative"
                + ".ncclGroupEnd(Native Method), called from com.example.Train.step(Train.java:64)\n"
                + "      at org.nccl4j.jni.NcclNative.ncclGroupEnd(Native Method)\n"
                + "      at org.nccl4j.Communicator.collective(Communicator.java:1190)\n"
                + "      at org.nccl4j.Communicator.broadcast(Communicator.java:1402)\n"
                + "      at com.example.Train.step(Train.java:64)\n"
                + "      at com.example.Train.main(Train.java:12)\n"
                + "  rank 1: thread \"main\" (id 1) RUNNABLE in its own code at com.example.Loader.next(Loader.java:42)\n"
                + "      at com.example.Loader.next(Loader.java:42)\n"
                + "      at com.example.Train.step(Train.java:60)\n"
                + "      at com.example.Train.main(Train.java:12)\n"
                + "  rank 1: thread \"watchdog\" (id 2) TIMED_WAITING in nccl4j at org.nccl4j.Watchdog.run(Watchdog"
                + ".java:300)\n"), run.out());

        Map<String, Object> c = object(list(object(parse(run("--json", dir.toString()).out())).get("communicators"))
                .get(0));
        Map<String, Object> f = object(list(c.get("findings")).get(0));
        assertEquals("leftEarly", f.get("kind"));
        assertEquals(List.of(1L), f.get("ranks"));
        assertEquals(4L, f.get("seq"));
        Map<String, Object> r1 = object(list(c.get("ranks")).get(1));
        assertEquals(3L, r1.get("collectives"));
        Map<String, Object> main = object(list(r1.get("threads")).get(0));
        assertEquals("main", main.get("name"));
        assertEquals(1L, main.get("id"));
        assertEquals("RUNNABLE", main.get("state"));
        assertEquals("user", main.get("location"));
        assertEquals("com.example.Loader.next(Loader.java:42)", main.get("at"));
        assertEquals("com.example.Loader.next(Loader.java:42)", main.get("userFrame"));
        assertEquals(3, list(main.get("frames")).size());
        Map<String, Object> r0 = object(list(object(list(c.get("ranks")).get(0)).get("threads")).get(0));
        assertEquals("nccl", r0.get("location"));
        assertEquals("com.example.Train.step(Train.java:64)", r0.get("userFrame"));
    }

    @Test
    void dumpsTakenFromRecordersWithAThreadsStackAreAnalyzed() throws Exception {
        // rank 1's issuing thread waits (in this test's code, which is nccl4j's package) while rank 0 waits in #6
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        Thread issuer = new Thread(() -> {
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "issuer");
        issuer.start();
        try {
            for (int rank = 0; rank < 2; rank++) {
                org.nccl4j.trace.FlightRecorder r = new org.nccl4j.trace.FlightRecorder(16);
                for (int i = 0; i < 6 - rank; i++) {
                    r.record(org.nccl4j.trace.TraceOperation.allReduce.code(), 1000, 7, 0, -1, 4000, 0x10);
                }
                r.completedThrough(5);
                org.nccl4j.trace.TraceDump d = org.nccl4j.trace.TraceDump.capture(r, rank, 2, null, "2.28.3",
                        org.nccl4j.trace.TraceDump.REASON_TIMEOUT, null, Map.of());
                for (int i = 0; i < 1000 && issuer.getState() != Thread.State.WAITING; i++) {
                    Thread.sleep(5);
                }
                (rank == 1 ? d.withThreads(List.of(org.nccl4j.trace.TraceDump.ThreadStack.of(issuer))) : d).write(dir);
            }
        } finally {
            release.countDown();
            issuer.join();
        }
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertTrue(run.firstLine().startsWith("nccl4j-trace: rank 1 issued 5 collectives, rank 0 issued 6: rank 1"
                + " skipped one (rank 0's allReduce #6 has no partner); look at rank 1: thread \"issuer\" WAITING in"
                + " nccl4j at org.nccl4j.tools.analyze.TraceAnalyzerTest.lambda$"), run.firstLine());
        assertTrue(run.out().contains("threads:\n  rank 1: thread \"issuer\" (id " + issuer.getId() + ") WAITING in"
                + " nccl4j at org.nccl4j.tools.analyze.TraceAnalyzerTest.lambda$"), run.out());
        assertTrue(run.out().contains("      at jdk.internal.misc.Unsafe.park(Native Method)\n"), run.out());
    }

    @Test
    void aRankWaitingInASendWaitsForAPeerWithNothingPending() throws IOException {
        dump(0, 2, 2, AR1000, "send 64 ncclInt8 - 1", "send 64 ncclInt8 - 1");
        dump(1, 2, 2, AR1000, "recv 64 ncclInt8 - 0");
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: rank 0 waits for rank 1 in send #3 (count 64 int8 to rank 1), and rank 1 has nothing"
                + " pending (last enqueued #2)", run.firstLine());
        assertTrue(run.out().contains("rank 1 did not post the matching recv"), run.out());
    }

    @Test
    void aRankMissingKeepsItsMessageAndTheOthersAreNotSaidToHaveLeftEarly() throws IOException {
        dump(0, 3, 2, AR1000, AR1000, AR3000);
        dump(1, 3, 2, AR1000, AR1000);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: rank 2 has no dump (lost or not dumped); rank 0 waits for rank 1 in allReduce #3,"
                + " which rank 1 has not enqueued (last enqueued #2)", run.firstLine());
    }

    // ---------------------------------------------------------------- communicators

    @Test
    void dumpsOfTwoCommunicatorsAreAnalyzedApartAndOneCanBePicked() throws IOException {
        dump(dir, "dp", 0, 2, 2, AR1000, AR1000);
        dump(dir, "dp", 1, 2, 2, AR1000, AR1000);
        dump(dir, "tp", 0, 2, 1, BC10, AR1000);
        dump(dir, "tp", 1, 2, 1, BC10, AR3000);
        Outcome run = run(dir.toString());
        assertEquals(1, run.status(), run.toString());
        assertEquals("nccl4j-trace: communicator \"dp\" (2 ranks): consistent: all 2 ranks agree (#1 to #2); nothing"
                + " pending | communicator \"tp\" (2 ranks): allReduce #2 differs: count (rank 0: 1000; rank 1: 3000);"
                + " ranks 0, 1 wait in allReduce #2 (every rank enqueued it)", run.firstLine());
        assertTrue(run.out().contains("\ncommunicator \"dp\" (2 ranks): 2 of 2 dumps"), run.out());
        assertTrue(run.out().contains("\ncommunicator \"tp\" (2 ranks): 2 of 2 dumps"), run.out());

        Outcome dp = run("--communicator", "dp", dir.toString());
        assertEquals(0, dp.status(), dp.toString());
        assertEquals("nccl4j-trace: consistent: all 2 ranks agree (#1 to #2); nothing pending", dp.firstLine());
        assertFalse(dp.out().contains("tp"), dp.out());

        Outcome none = run("--communicator", "pp", dir.toString());
        assertEquals(2, none.status(), none.toString());
        assertEquals("nccl4j-trace: no dumps of communicator \"pp\" (communicators found: \"dp\" (2 ranks), \"tp\" (2"
                + " ranks))\n", none.err());
        assertEquals("", none.out());
    }

    @Test
    void sameNameDifferentSizeAreTwoCommunicatorsAndUnnamedOnesArePickedByEmptyName() throws IOException {
        dump(dir, null, 0, 1, 1, AR1000);
        dump(dir, "x", 0, 2, 1, AR1000);
        dump(dir, "x", 1, 2, 1, AR1000);
        Outcome run = run("--communicator=", dir.toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals("nccl4j-trace: consistent: rank 0 alone (#1 to #1); nothing pending", run.firstLine());
        assertTrue(run.out().contains("unnamed communicator (1 rank): 1 of 1 dump\n"), run.out());
    }

    @Test
    void ofTwoDumpsOfOneRankTheLatestIsUsedAndTheOtherNamed() throws IOException {
        dump(0, 2, 1, AR1000);
        dump(1, 2, 1, AR1000);
        Path old = dir.resolve("nccl4j-trace-rank1-node1-999.json");
        Files.writeString(old, Files.readString(dump(1, 2, 1, AR1000))
                .replace("\"dumpedAt\": \"2025-01-31T12:00:00.123456Z\"", "\"dumpedAt\": \"2025-01-30T12:00:00Z\"")
                .replace("\"pid\": 4201", "\"pid\": 999"));
        Outcome run = run(dir.toString());
        assertEquals(0, run.status(), run.toString());
        assertTrue(run.out().contains("rank 1 has 2 dumps: used the latest, " + dir.resolve("nccl4j-trace-rank1-node1-4201"
                + ".json") + " (dumped at 2025-01-31T12:00:00.123456Z); ignored " + old + " (dumped at 2025-01-30T12:00:00Z)"),
                run.out());
    }

    @Test
    void filesAndDirectoriesMayBeMixedAndEachFileCountsOnce() throws IOException {
        Path a = dump(dir.resolve("node0"), null, 0, 2, 1, AR1000);
        dump(dir.resolve("node1"), null, 1, 2, 1, AR1000);
        Files.createDirectories(dir.resolve("node2"));
        Files.writeString(dir.resolve("node1/notes.txt"), "not a dump");
        Outcome run = run(a.toString(), dir.resolve("node0").toString(), dir.resolve("node1").toString(),
                dir.resolve("node2").toString());
        assertEquals(0, run.status(), run.toString());
        assertEquals("nccl4j-trace: consistent: all 2 ranks agree (#1 to #1); nothing pending", run.firstLine());
        assertTrue(run.out().contains("note: " + dir.resolve("node2") + " holds no trace dumps\n"), run.out());
    }

    // ---------------------------------------------------------------- refusals

    @Test
    void anUnreadableDumpIsRefusedWithStatus2NamingTheFileAndTheField() throws IOException {
        dump(0, 2, 1, AR1000);
        Path bad = dump(1, 2, 1, AR1000);
        Files.writeString(bad, Files.readString(bad).replace("\"count\": 1000", "\"count\": \"1000\""));
        Outcome run = run(dir.toString());
        assertEquals(2, run.status(), run.toString());
        assertEquals("nccl4j-trace: " + bad + ": field \"entries[0].count\": expected a whole number >= 0, found a string"
                + " (\"1000\")\n", run.err());
        assertEquals("", run.out());

        Files.writeString(bad, "{\"format\": \"nccl4j-trace\", ");
        run = run(bad.toString());
        assertEquals(2, run.status(), run.toString());
        assertTrue(run.err().startsWith("nccl4j-trace: " + bad + ": not valid JSON: "), run.err());
        assertFalse(run.err().contains("\tat "), run.err());
    }

    @Test
    void anEmptyDirectoryIsRefusedWithStatus2() throws IOException {
        Path empty = Files.createDirectories(dir.resolve("empty"));
        Outcome run = run(empty.toString());
        assertEquals(2, run.status(), run.toString());
        assertEquals("nccl4j-trace: no trace dumps (nccl4j-trace-rank*.json) in " + empty + ": nothing to analyze (dumps"
                + " go to NCCL4J_TRACE_DIR, by default ${java.io.tmpdir}/nccl4j-trace)\n", run.err());
    }

    @Test
    void aMissingPathIsRefusedWithStatus2() {
        Outcome run = run(dir.resolve("nope").toString());
        assertEquals(2, run.status(), run.toString());
        assertEquals("nccl4j-trace: " + dir.resolve("nope") + ": no such file or directory\n", run.err());
    }

    @Test
    void usageErrorsArePicocliMessagesWithAPointerToHelpAndStatus2() {
        Outcome run = run();
        assertEquals(2, run.status(), run.toString());
        assertEquals("nccl4j-trace: Missing required parameter: 'DIR'\nTry 'nccl4j-trace --help' for the options.\n",
                run.err());
        run = run("--frobnicate", dir.toString());
        assertEquals(2, run.status(), run.toString());
        assertTrue(run.err().startsWith("nccl4j-trace: Unknown option: '--frobnicate'\n"), run.err());
        run = run("--communicator");
        assertEquals(2, run.status(), run.toString());
        assertFalse(run.err().contains("\tat "), run.err());
    }

    @Test
    void helpPrintsTheUsageWithStatus0() {
        Outcome run = run("--help");
        assertEquals(0, run.status(), run.toString());
        assertTrue(run.out().startsWith("Usage: nccl4j-trace [--json] [--communicator NAME] DIR...\n"), run.out());
        assertTrue(run.out().contains("Exit status:\n  0   the dumps agree\n  1   a problem was found\n"), run.out());
    }

    @Test
    void versionNamesNccl4jAndTheNcclLoadedOrWhyNone() {
        Outcome run = run("--version");
        assertEquals(0, run.status(), run.toString());
        String[] lines = run.out().split("\n");
        assertTrue(lines[0].startsWith("nccl4j-trace (nccl4j "), run.out());
        assertTrue(lines[1].startsWith("NCCL "), run.out());
        assertTrue(lines[2].startsWith("Java 17") || lines[2].startsWith("Java "), run.out());
    }

    // ---------------------------------------------------------------- --json

    @Test
    void jsonReportReadsBackWithTheSameVerdict() throws IOException {
        for (int r : new int[] {0, 2, 3}) {
            dump(r, 5, 2, AR1000, AR1000, AR3000, BC10);
        }
        dump(1, 5, 2, AR1000, "allReduce 1000 ncclFloat16 ncclSum -", AR3000, BC10);
        Outcome text = run(dir.toString());
        Outcome run = run("--json", dir.toString());
        assertEquals(1, run.status(), run.toString());
        Map<String, Object> top = object(parse(run.out()));
        assertEquals(text.firstLine(), "nccl4j-trace: " + top.get("verdict"));
        assertEquals("nccl4j-trace-report", top.get("format"));
        assertEquals(1L, top.get("version"));
        assertEquals(false, top.get("consistent"));
        assertEquals(1L, top.get("exitStatus"));
        List<Object> comms = list(top.get("communicators"));
        assertEquals(1, comms.size());
        Map<String, Object> c = object(comms.get(0));
        assertEquals(null, c.get("communicator"));
        assertEquals(5L, c.get("size"));
        assertEquals(0L, c.get("reference"));
        assertEquals(List.of(4L), c.get("missingRanks"));
        List<Object> findings = list(c.get("findings"));
        assertEquals(2, findings.size(), findings.toString());
        Map<String, Object> missing = object(findings.get(0));
        assertEquals("missing", missing.get("kind"));
        assertEquals(List.of(4L), missing.get("ranks"));
        assertEquals(null, missing.get("seq"));
        Map<String, Object> type = object(findings.get(1));
        assertEquals("mismatch", type.get("kind"));
        assertEquals(List.of(1L), type.get("ranks"));
        assertEquals(2L, type.get("seq"));
        assertEquals("allReduce #2 differs: type (ranks 0, 2, 3: float32; rank 1: float16)", type.get("summary"));
        Map<String, Object> values = new LinkedHashMap<>();
        values.put("float32", List.of(0L, 2L, 3L));
        values.put("float16", List.of(1L));
        assertEquals(Map.of("type", values), type.get("differences"));
        List<Object> ranks = list(c.get("ranks"));
        assertEquals(4, ranks.size());
        Map<String, Object> r1 = object(ranks.get(1));
        assertEquals(1L, r1.get("rank"));
        assertEquals(4L, r1.get("lastEnqueued"));
        assertEquals(2L, r1.get("lastCompleted"));
        assertEquals("node1", r1.get("host"));
        assertEquals(4201L, r1.get("pid"));
        assertEquals("timeout", r1.get("reason"));
        assertEquals(dir.resolve("nccl4j-trace-rank1-node1-4201.json").toString(), r1.get("file"));
        Map<String, Object> pending = object(r1.get("oldestPending"));
        assertEquals(3L, pending.get("seq"));
        assertEquals("allReduce", pending.get("operation"));
        assertEquals(3000L, pending.get("count"));
        assertEquals("ncclFloat32", pending.get("dataType"));
        assertEquals(List.of("ranks 0-3 wait in allReduce #3"), c.get("waiting"));
        assertEquals("", run.err());
    }

    @Test
    void jsonOfAConsistentRunHasStatus0AndNoFindings() throws IOException {
        dump(0, 2, 1, AR1000);
        dump(1, 2, 1, AR1000);
        Outcome run = run("--json", dir.toString());
        assertEquals(0, run.status(), run.toString());
        Map<String, Object> top = object(parse(run.out()));
        assertEquals(true, top.get("consistent"));
        assertEquals(0L, top.get("exitStatus"));
        Map<String, Object> c = object(list(top.get("communicators")).get(0));
        assertEquals(true, c.get("consistent"));
        assertEquals(List.of(), c.get("findings"));
        assertEquals(null, object(list(c.get("ranks")).get(0)).get("oldestPending"));
    }

    // ---------------------------------------------------------------- reading JSON back (jackson-core)

    /** The report as plain maps, lists, longs and strings (Jackson; whole numbers as Long). */
    private static Object parse(String json) throws IOException {
        return new com.fasterxml.jackson.databind.ObjectMapper()
                .enable(com.fasterxml.jackson.databind.DeserializationFeature.USE_LONG_FOR_INTS)
                .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                .readValue(json, Object.class);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> object(Object o) {
        assertTrue(o instanceof Map, String.valueOf(o));
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object o) {
        assertTrue(o instanceof List, String.valueOf(o));
        return (List<Object>) o;
    }
}
