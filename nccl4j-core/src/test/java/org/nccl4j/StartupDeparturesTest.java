package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.jni.StubNccl;

/**
 * A rank lost while the communicator is being made ends every other rank's start-up within 2 s, naming the rank, its
 * host and pid, the phase it was in and how it left: two child JVMs ({@link #main}) run
 * {@link Communicator#fromEnvironment} as ranks 0 and 1 of one job on the stub NCCL (loopback, MASTER_ADDR and
 * MASTER_PORT), the stub holds them in a phase (a sleep in {@code ncclCommInitRank} or {@code ncclGetUniqueId}), the
 * test ends one of them one way, and the other must end within the bound with the facts. The cells of the phase model
 * that the stub can hold a rank in; docs/reliability.md has the whole table.
 */
class StartupDeparturesTest {
    /** The bound of the issue: every other rank knows, and has ended, within 2 s. */
    static final long BOUND_MILLIS = 2000;

    @TempDir
    Path dir;

    private int port;

    private Process rank(int rank, String mode, Map<String, String> env) throws IOException {
        return rank(rank, mode, env, "");
    }

    /** Rank {@code rank} of a job whose output files end in {@code run} (several jobs in one test). */
    private Process rank(int rank, String mode, Map<String, String> env, String run) throws IOException {
        return rank(rank, mode, env, run, null);
    }

    /** As {@link #rank(int, String, Map, String)}; with {@code go}, the rank starts once that file exists. */
    private Process rank(int rank, String mode, Map<String, String> env, String run, Path go) throws IOException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> command = new java.util.ArrayList<>(List.of(java.toString(), "-cp",
                System.getProperty("java.class.path"), "-Dnccl4j.library=" + StubNccl.full(),
                "-Dnccl4j.test.stubDir=" + StubNccl.dir(), "-XX:ErrorFile=" + dir.resolve("hs_err_%p.log"),
                StartupDeparturesTest.class.getName(), mode));
        if (go != null) {
            command.add(go.toString());
        }
        ProcessBuilder pb = new ProcessBuilder(command)
                .redirectErrorStream(true).redirectOutput(dir.resolve("out" + rank + run + ".txt").toFile());
        Map<String, String> e = pb.environment();
        e.put("MASTER_ADDR", "127.0.0.1");
        e.put("MASTER_PORT", Integer.toString(port));
        e.put("RANK", Integer.toString(rank));
        e.put("WORLD_SIZE", "2");
        e.put("LOCAL_RANK", Integer.toString(rank));
        e.put("LOCAL_WORLD_SIZE", "2");
        e.put("NCCL4J_DEVICE", "0");
        e.put("NCCL4J_TRACE_DIR", dir.toString());
        e.put("NCCL_STUB_LOG", dir.resolve("stub" + rank + run + ".log").toString());
        e.putAll(env);
        return pb.start();
    }

    private String out(int rank) throws IOException {
        return out(rank, "");
    }

    private String out(int rank, String run) throws IOException {
        Path f = dir.resolve("out" + rank + run + ".txt");
        return Files.exists(f) ? Files.readString(f, StandardCharsets.UTF_8) : "";
    }

    /** Waits until rank {@code rank}'s output has {@code marker} (its main thread has reached a step). */
    private void awaitMarker(int rank, String marker) {
        awaitMarker(rank, marker, "");
    }

    private void awaitMarker(int rank, String marker, String run) {
        StubFixture.within(30_000, () -> {
            try {
                return out(rank, run).contains(marker) ? true : null;
            } catch (IOException e) {
                return null;
            }
        }, "rank " + rank + " at " + marker);
    }

    /** Sends {@code SIG<name>} to {@code p} (the shell's kill: no kill binary needed). */
    private static void signal(String name, Process p) throws Exception {
        assertEquals(0, new ProcessBuilder("sh", "-c", "kill -" + name + " " + p.pid()).start().waitFor());
    }

    private record Outcome(int status, long millis, String out) {
    }

    /** What rank {@code survivor} of 2 says of rank {@code lost} (process {@code p}): lost {@code how}. */
    private static String lostLine(int survivor, int lost, Process p, String how) {
        return "PeerLostDuringStartupException: rank " + survivor + " of 2: rank " + lost + " ("
                + org.nccl4j.trace.TraceDump.localHost() + ", pid " + p.pid() + ") was lost " + how;
    }

    /** Ends {@code victim} ({@code kill}: SIGKILL, else SIGTERM) and waits for {@code survivor}. */
    private Outcome end(Process victim, boolean kill, Process survivor, int survivorRank) throws Exception {
        long t0 = System.nanoTime();
        if (kill) {
            victim.destroyForcibly();
        } else {
            victim.destroy();
        }
        return ended(t0, victim, survivor, survivorRank);
    }

    /** Waits for {@code survivor}, timed from {@code t0}, then for {@code victim}; no JVM may have crashed. */
    private Outcome ended(long t0, Process victim, Process survivor, int survivorRank) throws Exception {
        boolean ended = survivor.waitFor(30, TimeUnit.SECONDS);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        if (!ended) {
            survivor.destroyForcibly();
        }
        victim.waitFor(30, TimeUnit.SECONDS);
        String out = out(survivorRank);
        assertTrue(ended, "the survivor did not end: " + out);
        try (var files = Files.list(dir)) {
            assertTrue(files.noneMatch(f -> f.getFileName().toString().startsWith("hs_err")), "a JVM crashed");
        }
        return new Outcome(survivor.exitValue(), ms, out);
    }

    /** A new job whose two ranks are both held inside the stub's blocking {@code ncclCommInitRank} ({@code env}). */
    private Process[] bothInInit(Map<String, String> env) throws Exception {
        port = StubFixture.freePort();
        Process[] r = {rank(0, "blocking", env), rank(1, "blocking", env)};
        awaitMarker(0, "AT ncclCommInitRank");
        awaitMarker(1, "AT ncclCommInitRank");
        return r;
    }

    private static final Map<String, String> HELD_IN_INIT = Map.of("NCCL_STUB_SLEEP_MS_ncclCommInitRank", "60000",
            "NCCL_STUB_SLEEP_MS_ncclCommInitRankConfig", "60000");

    @Test
    void aRankKilledDuringNcclInitEndsItsPeerWhoseBlockingInitCannotBeAbandoned() throws Exception {
        Process[] r = bothInInit(HELD_IN_INIT);
        Process r0 = r[0];
        Process r1 = r[1];
        Outcome o = end(r1, true, r0, 0);
        assertEquals(FailurePolicy.EXIT_STATUS, o.status(), o.out());
        assertTrue(o.millis() < BOUND_MILLIS, "ended after " + o.millis() + " ms: " + o.out());
        assertTrue(o.out().contains("rank 0 of 2: rank 1 (" + org.nccl4j.trace.TraceDump.localHost() + ", pid "
                + r1.pid() + ") was lost during NCCL initialization (its connection ended without a goodbye); the "
                + "communicator was not made (NCCL initialization could not be abandoned)"), o.out());
        assertTrue(o.out().contains("is at org.nccl4j.jni.NcclNative.ncclCommInitRank("), o.out());
        assertTrue(o.out().contains("Halting the process with status 70"), o.out());
    }

    @Test
    void aRankLostWhileNcclMadeThePeersCommunicatorIsThrownAndItsExitWaitsForThatAbortOneSecond() throws Exception {
        port = StubFixture.freePort();
        // rank 0's NCCL makes its communicator in 1 s, and aborting it takes 3 s; the guard's halt is put off
        Process r0 = rank(0, "blocking", Map.of("NCCL_STUB_SLEEP_MS_ncclCommInitRank", "1000",
                "NCCL_STUB_SLEEP_MS_ncclCommAbort", "3000", "NCCL4J_LEFT_BEHIND_EXIT", "10s"));
        Process r1 = rank(1, "blocking", HELD_IN_INIT);
        awaitMarker(0, "AT ncclCommInitRank");
        awaitMarker(1, "AT ncclCommInitRank");
        long t0 = System.nanoTime();
        r1.destroyForcibly();
        awaitMarker(0, lostLine(0, 1, r1, "during NCCL initialization (its connection ended without a goodbye); the "
                + "communicator was not made (the communicator NCCL made is aborted)"));
        long toldMs = (System.nanoTime() - t0) / 1_000_000;
        Outcome o = ended(t0, r1, r0, 0);
        assertEquals(1, o.status(), o.out());   // the exception left main
        assertTrue(toldMs < BOUND_MILLIS, "told after " + toldMs + " ms, not after the abort's 3 s: " + o.out());
        // the exit waits for the abort under way 1 s, then ends with the status it knows (main's exception: 1)
        long afterMs = o.millis() - toldMs;
        assertTrue(afterMs >= 800 && afterMs < 2500, "the exit waited 1 s for the abort under way, not its 3 s: "
                + "ended " + afterMs + " ms after the exception: " + o.out());
        assertTrue(o.out().contains("an NCCL teardown was still under way after 1000 ms at exit "
                + "(PeerLostDuringStartupException: rank 0 of 2: rank 1 ("), o.out());
        assertTrue(o.out().contains("ending the process with status 1 without the C runtime's exit handlers"),
                o.out());
        assertTrue(Files.readString(dir.resolve("stub0.log")).contains("ncclCommAbort"), "the abort ran");
    }

    @Test
    void aRankTerminatedDuringNcclInitIsNamedWithItsSignalAndANonblockingPeerThrows() throws Exception {
        port = StubFixture.freePort();
        Map<String, String> inProgress = Map.of("NCCL_STUB_RESULT_ncclCommInitRankConfig", "7",
                "NCCL_STUB_ASYNC_ERROR", "7");
        Process r0 = rank(0, "nonblocking", inProgress);
        Process r1 = rank(1, "blocking", HELD_IN_INIT);
        awaitMarker(0, "AT InitDeadline.waitWhileInProgress");
        awaitMarker(1, "AT ncclCommInitRank");
        Outcome o = end(r1, false, r0, 0);
        assertEquals(1, o.status(), o.out());   // the exception left main
        assertTrue(o.millis() < BOUND_MILLIS, "ended after " + o.millis() + " ms: " + o.out());
        assertTrue(o.out().contains("org.nccl4j.PeerLostDuringStartupException: rank 0 of 2: rank 1 ("
                + org.nccl4j.trace.TraceDump.localHost() + ", pid " + r1.pid() + ") was lost during NCCL "
                + "initialization (SIGTERM); the communicator was not made (NCCL initialization abandoned)"), o.out());
        assertTrue(Files.readString(dir.resolve("stub0.log")).contains("ncclCommAbort"), "what NCCL half made is "
                + "aborted");
    }

    @Test
    void rankZeroTerminatedDuringNcclInitIsNamedByTheOthers() throws Exception {
        Process[] r = bothInInit(HELD_IN_INIT);
        Process r0 = r[0];
        Process r1 = r[1];
        Outcome o = end(r0, false, r1, 1);
        assertEquals(FailurePolicy.EXIT_STATUS, o.status(), o.out());
        assertTrue(o.millis() < BOUND_MILLIS, "ended after " + o.millis() + " ms: " + o.out());
        assertTrue(o.out().contains("rank 1 of 2: rank 0 (" + org.nccl4j.trace.TraceDump.localHost() + ", pid "
                + r0.pid() + ") was lost during NCCL initialization (SIGTERM)"), o.out());
    }

    @Test
    void aRankWhoseOwnStartUpFailsIsNamedWithItsException() throws Exception {
        port = StubFixture.freePort();
        Process r0 = rank(0, "blocking", HELD_IN_INIT);
        Process r1 = rank(1, "blocking", Map.of("NCCL_STUB_RESULT_ncclCommInitRank", "5"));
        assertTrue(r1.waitFor(30, TimeUnit.SECONDS), out(1));
        long t0 = System.nanoTime();   // rank 1 told its failure, then ended
        assertTrue(r0.waitFor(30, TimeUnit.SECONDS), out(0));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        String out = out(0);
        assertEquals(1, r1.exitValue(), out(1));
        assertTrue(out(1).contains("org.nccl4j.NcclException: ncclCommInitRank failed: "), out(1));
        assertEquals(FailurePolicy.EXIT_STATUS, r0.exitValue(), out);
        assertTrue(ms < BOUND_MILLIS, "ended " + ms + " ms after rank 1: " + out);
        assertTrue(out.contains("rank 0 of 2: rank 1 (" + org.nccl4j.trace.TraceDump.localHost() + ", pid "
                + r1.pid() + ") was lost during NCCL initialization (NcclException: ncclCommInitRank failed: "),
                out);
    }

    @Test
    void aRankKilledDuringTheRendezvousEndsRankZerosRendezvous() throws Exception {
        port = StubFixture.freePort();
        // rank 0 takes 1.5 s to make the id: rank 1 waits for it, connected to the rendezvous
        Process r0 = rank(0, "blocking", Map.of("NCCL_STUB_SLEEP_MS_ncclGetUniqueId", "1500"));
        Process r1 = rank(1, "blocking", Map.of());
        awaitMarker(1, "AT Rendezvous.fetch");
        Thread.sleep(300);   // connected and waiting for the id
        Outcome o = end(r1, true, r0, 0);
        assertEquals(1, o.status(), o.out());
        assertTrue(o.millis() < BOUND_MILLIS, "ended after " + o.millis() + " ms: " + o.out());
        assertTrue(o.out().contains("PeerLostDuringStartupException: rank 0 of 2: rank 1 ("
                + org.nccl4j.trace.TraceDump.localHost() + ", pid " + r1.pid() + ") was lost during the rendezvous "
                + "(its connection ended without a goodbye)"), o.out());
    }

    @Test
    void rankZeroTerminatedDuringTheRendezvousEndsTheOthers() throws Exception {
        port = StubFixture.freePort();
        Process r0 = rank(0, "blocking", Map.of("NCCL_STUB_SLEEP_MS_ncclGetUniqueId", "20000"));
        Process r1 = rank(1, "blocking", Map.of());
        awaitMarker(0, "AT ncclGetUniqueId");
        awaitMarker(1, "AT Rendezvous.fetch");
        Outcome o = end(r0, false, r1, 1);
        assertEquals(1, o.status(), o.out());
        assertTrue(o.millis() < BOUND_MILLIS, "ended after " + o.millis() + " ms: " + o.out());
        assertTrue(o.out().contains("PeerLostDuringStartupException: rank 1 of 2: rank 0 ("
                + org.nccl4j.trace.TraceDump.localHost() + ", pid " + r0.pid() + ") was lost during the rendezvous "
                + "(SIGTERM)"), o.out());
    }

    @Test
    void aRankTerminatedWhileJoiningJoinsToSaySoWhenRankZerosChannelComesUp() throws Exception {
        port = StubFixture.freePort();
        Path go = dir.resolve("go0");
        Process r0 = rank(0, "blocking", Map.of(), "", go);   // its JVM up, its start-up not begun
        Process r1 = rank(1, "blocking", Map.of());
        awaitMarker(0, "WAITING");
        awaitMarker(1, "AT Liveness.awaitJoined");   // rank 0's channel is not there: rank 1 keeps trying
        long t0 = System.nanoTime();
        signal("TERM", r1);
        Thread.sleep(200);
        Files.writeString(go, "");   // rank 0 starts: its channel comes up while rank 1 is exiting
        Outcome o = ended(t0, r1, r0, 0);
        assertEquals(143, r1.exitValue(), out(1));
        assertEquals(1, o.status(), o.out());
        // rank 0's own start (its classes, the logging backend) is inside the time measured here: 1 s more
        assertTrue(o.millis() < BOUND_MILLIS + 1000, "ended after " + o.millis() + " ms: " + o.out());
        assertTrue(o.out().contains(lostLine(0, 1, r1, "before it joined the job (SIGTERM)")), o.out());
    }

    @Test
    void aRankTerminatedInsideFromEnvironmentBeforeItHasAChannelIsStillNamed() throws Exception {
        port = StubFixture.freePort();
        Process r0 = rank(0, "blocking", Map.of());
        // rank 1 is held 800 ms in the device count, inside fromEnvironment, before its channel exists
        Process r1 = rank(1, "blocking", Map.of("NCCL4J_DEVICE", "", "FAKE_CUDA_COUNT_DELAY_MS", "800"));
        awaitMarker(0, "AT Rendezvous.serve");
        awaitMarker(1, "AT Cuda.deviceCount");
        long t0 = System.nanoTime();
        signal("TERM", r1);
        Outcome o = ended(t0, r1, r0, 0);
        assertEquals(143, r1.exitValue(), out(1));
        assertEquals(1, o.status(), o.out());
        // the exit waits for the channel the main thread goes on to make: the rest of the 800 ms, then the join
        assertTrue(o.millis() < BOUND_MILLIS + 1000, "ended after " + o.millis() + " ms: " + o.out());
        assertTrue(o.out().contains(lostLine(0, 1, r1, "before it joined the job (SIGTERM)")), o.out());
    }

    private static final Map<String, String> EARLY = Map.of("NCCL4J_TEST_EARLY", "1");

    /** Waits until rank {@code rank} has called JobLiveness.join(), then long enough for its background join. */
    private void joinedEarly(int rank) throws Exception {
        awaitMarker(rank, "JOINED EARLY true");
        Thread.sleep(1500);   // the background join: well within this on a loaded machine
    }

    @Test
    void aRankKilledWhilePreparingAfterJobLivenessJoinEndsTheOthersStartUp() throws Exception {
        port = StubFixture.freePort();
        Path go = dir.resolve("go1");
        Process r0 = rank(0, "blocking", Map.of());
        Process r1 = rank(1, "blocking", EARLY, "", go);   // joined, then preparing until killed
        awaitMarker(0, "AT Rendezvous.serve");
        joinedEarly(1);
        Outcome o = end(r1, true, r0, 0);
        assertEquals(1, o.status(), o.out());
        assertTrue(o.millis() < BOUND_MILLIS, "ended after " + o.millis() + " ms: " + o.out());
        assertTrue(o.out().contains(lostLine(0, 1, r1, "after joining the job, before the rendezvous (its connection "
                + "ended without a goodbye)")), o.out());
    }

    @Test
    void anOutOfMemoryErrorWhilePreparingIsNamedToTheOthers() throws Exception {
        port = StubFixture.freePort();
        Path go = dir.resolve("go1");
        Map<String, String> env = new java.util.HashMap<>(EARLY);
        env.put("NCCL4J_TEST_AFTER_WAIT", "oom");
        Process r0 = rank(0, "blocking", Map.of());
        Process r1 = rank(1, "blocking", env, "", go);
        awaitMarker(0, "AT Rendezvous.serve");
        joinedEarly(1);
        long t0 = System.nanoTime();
        Files.writeString(go, "");   // the model does not fit
        Outcome o = ended(t0, r1, r0, 0);
        assertEquals(1, r1.exitValue(), out(1));
        assertTrue(out(1).contains("java.lang.OutOfMemoryError: Java heap space"), out(1));
        assertEquals(1, o.status(), o.out());
        assertTrue(o.millis() < BOUND_MILLIS, "ended after " + o.millis() + " ms: " + o.out());
        assertTrue(o.out().contains(lostLine(0, 1, r1, "after joining the job, before the rendezvous "
                + "(OutOfMemoryError: Java heap space)")), o.out());
    }

    @Test
    void aRankStillPreparingLearnsOfRankZerosEndFromCheck() throws Exception {
        port = StubFixture.freePort();
        Path go0 = dir.resolve("go0");
        Path go1 = dir.resolve("go1");
        Map<String, String> env = new java.util.HashMap<>(EARLY);
        env.put("NCCL4J_TEST_AFTER_WAIT", "check");
        Process r0 = rank(0, "blocking", EARLY, "", go0);
        Process r1 = rank(1, "blocking", env, "", go1);
        joinedEarly(0);
        joinedEarly(1);
        signal("TERM", r0);
        assertTrue(r0.waitFor(30, TimeUnit.SECONDS), out(0));
        assertEquals(143, r0.exitValue(), out(0));
        Files.writeString(go1, "");   // rank 1's preparation ends: it checks before going on
        assertTrue(r1.waitFor(30, TimeUnit.SECONDS), "rank 1 did not end: " + out(1));
        assertEquals(1, r1.exitValue(), out(1));
        assertTrue(!out(1).contains("CHECKED"), out(1));
        assertTrue(out(1).contains(lostLine(1, 0, r0, "after joining the job, before the rendezvous (SIGTERM); the "
                + "communicator was not made (the job cannot start without it)")), out(1));
    }

    @Test
    void rankZeroTerminatedBeforeRankOneArrivedIsToldToItOnArrival() throws Exception {
        port = StubFixture.freePort();
        Path go = dir.resolve("go1");
        Process r0 = rank(0, "blocking", Map.of());
        Process r1 = rank(1, "blocking", Map.of(), "", go);
        awaitMarker(1, "WAITING");
        awaitMarker(0, "AT Rendezvous.serve");   // serving the id, rank 1 not arrived
        long t0 = System.nanoTime();
        signal("TERM", r0);
        Thread.sleep(300);
        Files.writeString(go, "");   // rank 1 comes after rank 0 began to exit
        Outcome o = ended(t0, r0, r1, 1);
        assertEquals(143, r0.exitValue(), out(0));
        assertEquals(1, o.status(), o.out());
        // rank 1's own start (its classes, the logging backend) is inside the time measured here: 1 s more
        assertTrue(o.millis() < BOUND_MILLIS + 1000, "ended after " + o.millis() + " ms: " + o.out());
        assertTrue(o.out().contains(lostLine(1, 0, r0, "during the rendezvous (SIGTERM)")), o.out());
    }

    @Test
    void sigintAndSystemExitFromAnotherThreadDuringNcclInitAreNamed() throws Exception {
        Process[] r = bothInInit(HELD_IN_INIT);
        Process r0 = r[0];
        Process r1 = r[1];
        long t0 = System.nanoTime();
        signal("INT", r1);
        assertTrue(r0.waitFor(30, TimeUnit.SECONDS), out(0));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(FailurePolicy.EXIT_STATUS, r0.exitValue(), out(0));
        assertTrue(ms < BOUND_MILLIS, "ended after " + ms + " ms: " + out(0));
        assertTrue(out(0).contains("was lost during NCCL initialization (SIGINT)"), out(0));

        port = StubFixture.freePort();
        Process q0 = rank(0, "blocking", HELD_IN_INIT, "0");
        Process q1 = rank(1, "exit-in-init", HELD_IN_INIT, "1");
        awaitMarker(0, "AT ncclCommInitRank", "0");
        assertTrue(q1.waitFor(30, TimeUnit.SECONDS), out(1, "1"));
        // the stub's initialization never returns: 1 s after System.exit(3) the exit ends the process with _exit, as
        // the C runtime's exit handlers would crash libnccl under the initializing thread (the status is then 1)
        assertEquals(1, q1.exitValue(), out(1, "1"));
        assertTrue(out(1, "1").contains("NCCL's initialization was still under way 1000 ms after the exit began "
                + "(System.exit at org.nccl4j.StartupDeparturesTest"), out(1, "1"));
        assertTrue(out(1, "1").contains("ending the process with status 1 without the C runtime's exit handlers"),
                out(1, "1"));
        long t1 = System.nanoTime();
        assertTrue(q0.waitFor(30, TimeUnit.SECONDS), out(0, "0"));
        long ms1 = (System.nanoTime() - t1) / 1_000_000;
        String out = out(0, "0");
        assertTrue(ms1 < BOUND_MILLIS, "ended " + ms1 + " ms after rank 1: " + out);
        assertTrue(out.contains("was lost during NCCL initialization (System.exit at org.nccl4j.StartupDeparturesTest"),
                out);
    }

    @Test
    void aStoppedRankDuringNcclInitIsLostAtTheLivenessTimeout() throws Exception {
        Map<String, String> env = new java.util.HashMap<>(HELD_IN_INIT);
        env.put("NCCL4J_LIVENESS_TIMEOUT", "2s");
        Process[] r = bothInInit(env);
        Process r0 = r[0];
        Process r1 = r[1];
        long t0 = System.nanoTime();
        signal("STOP", r1);
        try {
            assertTrue(r0.waitFor(30, TimeUnit.SECONDS), out(0));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(FailurePolicy.EXIT_STATUS, r0.exitValue(), out(0));
            assertTrue(ms < 2000 + BOUND_MILLIS, "the liveness timeout (2 s), then within the bound: " + ms + " ms");
            assertTrue(out(0).contains("was lost during NCCL initialization (it sent nothing for 2000 ms"), out(0));
        } finally {
            r1.destroyForcibly();
        }
    }

    /** Frames of the main thread that mark the steps a test waits for, and what to print. */
    private static final String[][] MARKERS = {
        {"org.nccl4j.jni.NcclNative", "ncclCommInitRank", "AT ncclCommInitRank"},
        {"org.nccl4j.jni.NcclNative", "ncclCommInitRankConfig", "AT ncclCommInitRank"},
        {"org.nccl4j.InitDeadline", "waitWhileInProgress", "AT InitDeadline.waitWhileInProgress"},
        {"org.nccl4j.jni.NcclNative", "ncclGetUniqueId", "AT ncclGetUniqueId"},
        {"org.nccl4j.launch.Rendezvous", "fetch", "AT Rendezvous.fetch"},
        {"org.nccl4j.control.Liveness", "awaitJoined", "AT Liveness.awaitJoined"},
        {"org.nccl4j.launch.Rendezvous", "serve", "AT Rendezvous.serve"},
        {"org.nccl4j.FakeCuda", "getDeviceCount", "AT Cuda.deviceCount"},
    };

    /**
     * A rank: {@code Communicator.fromEnvironment}, blocking or nonblocking ({@code args[0]}), then a minute's sleep;
     * a thread prints {@code AT <step>} when the main thread reaches one of {@link #MARKERS}.
     *
     * @param args {@code blocking}, {@code nonblocking}, or {@code exit-in-init} (blocking; {@code System.exit(3)} from
     *        the watcher thread once main is inside NCCL's initialization); then, optionally, a file whose existence
     *        the rank waits for (printing {@code WAITING}) before it starts (its JVM is up: no start-up in the bound)
     * @throws Exception the start-up's failure leaves main, as in a program
     */
    public static void main(String[] args) throws Exception {
        FakeCuda.install(1);
        Thread main = Thread.currentThread();
        Thread watcher = new Thread(() -> {
            java.util.Set<String> said = new java.util.HashSet<>();
            while (true) {
                for (StackTraceElement f : main.getStackTrace()) {
                    for (String[] m : MARKERS) {
                        if (f.getClassName().equals(m[0]) && f.getMethodName().equals(m[1]) && said.add(m[2])) {
                            System.out.println(m[2]);
                            System.out.flush();
                            if (args[0].equals("exit-in-init") && m[2].equals("AT ncclCommInitRank")) {
                                System.exit(3);   // from this thread, while main is inside NCCL
                            }
                        }
                    }
                }
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "marker");
        watcher.setDaemon(true);
        watcher.start();
        if (System.getenv("NCCL4J_TEST_EARLY") != null) {   // JobLiveness.join() first, then the preparation
            System.out.println("JOINED EARLY " + JobLiveness.join());
            System.out.flush();
        }
        if (args.length > 1) {
            System.out.println("WAITING");
            System.out.flush();
            while (!java.nio.file.Files.exists(java.nio.file.Path.of(args[1]))) {
                Thread.sleep(5);
            }
        }
        String after = System.getenv("NCCL4J_TEST_AFTER_WAIT");
        if ("oom".equals(after)) {
            throw new OutOfMemoryError("Java heap space");   // as a model too big to load
        }
        if ("check".equals(after)) {
            JobLiveness.check();
            System.out.println("CHECKED");
        }
        CommConfig config = args[0].equals("nonblocking") ? CommConfig.builder().blocking(false).build() : null;
        Communicator c = Communicator.fromEnvironment(config);
        System.out.println("READY rank " + c.rank());
        Thread.sleep(60_000);
        c.close();
    }
}
