package org.nccl4j.tools.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.StubFixture;
import org.nccl4j.jni.StubNccl;

/**
 * The start-up scenarios whole, on the CPU: two JVMs ({@link StubRank}) run {@link DepartureScenarios} as ranks 0 and
 * 1 of one job on the stub NCCL (loopback, MASTER_ADDR and MASTER_PORT), the stub holds them where the scenario
 * places the departure (a sleep in {@code ncclCommInitRank}, or in rank 0's {@code ncclGetUniqueId} so that rank 1
 * waits in the rendezvous), and rank 1's watcher leaves there by itself: its EVENT line, then the signal its armed
 * shell sends, or System.exit(3). Rank 0 must end within 2 s of the EVENT with what the scenario's RESULT or nccl4j's
 * ERROR line says. What the GPU runs of scripts/departures.sh time, without NCCL's own bootstrap.
 */
@Timeout(120)
class StartupScenariosOnStubTest {
    /** The bound: every other rank has ended within 2 s of the EVENT. */
    static final long BOUND_MILLIS = 2000;
    private static final Pattern EVENT = Pattern.compile("EVENT rank=1 t=(\\d{13}) (.*)");

    @TempDir
    Path dir;

    private int port;
    private final AtomicLong[] ended = {new AtomicLong(), new AtomicLong()};
    private final Process[] ranks = new Process[2];

    @AfterEach
    void endTheRanks() {
        for (Process p : ranks) {
            if (p != null) {
                p.destroyForcibly();
            }
        }
    }

    private Process rank(int rank, String scenario, Map<String, String> env) throws IOException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        ProcessBuilder pb = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
                "-Dnccl4j.library=" + StubNccl.full(), "-Dnccl4j.test.stubDir=" + StubNccl.dir(),
                "-XX:ErrorFile=" + dir.resolve("hs_err_%p.log"), StubRank.class.getName(), scenario, "--count", "16")
                .redirectErrorStream(true).redirectOutput(dir.resolve("out" + rank + ".txt").toFile());
        Map<String, String> e = pb.environment();
        e.put("MASTER_ADDR", "127.0.0.1");
        e.put("MASTER_PORT", Integer.toString(port));
        e.put("RANK", Integer.toString(rank));
        e.put("WORLD_SIZE", "2");
        e.put("LOCAL_RANK", Integer.toString(rank));
        e.put("LOCAL_WORLD_SIZE", "2");
        e.put("NCCL4J_DEVICE", "0");
        e.put("NCCL4J_TRACE_DIR", dir.toString());
        e.put("NCCL_STUB_LOG", dir.resolve("stub" + rank + ".log").toString());
        e.putAll(env);
        Process p = pb.start();
        ranks[rank] = p;
        p.onExit().thenRun(() -> ended[rank].set(System.currentTimeMillis()));
        return p;
    }

    private String out(int rank) throws IOException {
        return Files.readString(dir.resolve("out" + rank + ".txt"), StandardCharsets.UTF_8);
    }

    /** What the job did: both ranks' output, exit statuses, and rank 0's end in ms after rank 1's EVENT. */
    private record Job(String out0, String out1, int status0, int status1, long millis, String event) {
    }

    private Job job(String scenario, Map<String, String> env0, Map<String, String> env1) throws Exception {
        port = StubFixture.freePort();
        Process r0 = rank(0, scenario, env0);
        Process r1 = rank(1, scenario, env1);
        assertTrue(r1.waitFor(60, TimeUnit.SECONDS), "rank 1 did not leave");
        assertTrue(r0.waitFor(30, TimeUnit.SECONDS), "rank 0 did not end: " + out(0));
        long end0 = StubFixture.within(5000, () -> ended[0].get() == 0 ? null : ended[0].get(), "rank 0's end");
        String out1 = out(1);
        Matcher m = EVENT.matcher(out1);
        assertTrue(m.find(), "no EVENT line: " + out1);
        try (var files = Files.list(dir)) {
            assertFalse(files.anyMatch(f -> f.getFileName().toString().startsWith("hs_err")), "a JVM crashed");
        }
        return new Job(out(0), out1, r0.exitValue(), r1.exitValue(), end0 - Long.parseLong(m.group(1)), m.group(2));
    }

    /** The names of rank {@code rank}'s PHASE lines, in order. */
    private static List<String> phases(String out, int rank) {
        return out.lines().filter(l -> l.startsWith("PHASE rank=" + rank + " ")).map(l -> l.replaceAll(".* ", ""))
                .collect(Collectors.toList());
    }

    private static final Map<String, String> HELD_IN_INIT = Map.of("NCCL_STUB_SLEEP_MS_ncclCommInitRank", "60000");

    @Test
    void startupInitTermLeavesInsideNcclInitAndHaltsRankZeroWhoseBlockingInitCannotBeAbandoned() throws Exception {
        Job j = job("startup-init-term", HELD_IN_INIT, HELD_IN_INIT);
        assertEquals("startup-init-term (main thread at org.nccl4j.jni.NcclNative.ncclCommInitRank; liveness join "
                + "done)", j.event());
        assertEquals(143, j.status1(), j.out1());
        assertFalse(j.out1().contains("RESULT "), "the SIGTERM ended it in NCCL's initialization: " + j.out1());
        List<String> p1 = phases(j.out1(), 1);
        assertEquals("launched", p1.get(0), p1.toString());
        assertTrue(p1.indexOf("rendezvous") > 0 && p1.indexOf("nccl-init") > p1.indexOf("rendezvous"), p1.toString());
        assertTrue(j.out1().indexOf("PHASE rank=1") < j.out1().indexOf("EVENT"), j.out1());
        assertTrue(j.millis() >= 0 && j.millis() < BOUND_MILLIS, "rank 0 ended " + j.millis() + " ms after the EVENT: "
                + j.out0());
        assertEquals(70, j.status0(), j.out0());
        assertTrue(j.out0().contains("nccl4j: rank 0 of 2: rank 1 (" + org.nccl4j.trace.TraceDump.localHost() + ", pid "
                + ranks[1].pid() + ") was lost during NCCL initialization (SIGTERM); the communicator was not made (NCCL "
                + "initialization could not be abandoned)"), j.out0());
        assertTrue(j.out0().contains("Halting the process with status 70"), j.out0());
        assertTrue(phases(j.out0(), 0).contains("nccl-init"), "every rank says its phases: " + j.out0());
        assertFalse(j.out0().contains("RESULT "), "a halt leaves no RESULT line: nccl4j's ERROR line says why");
    }

    @Test
    void startupRendezvousKillLeavesWhileRankZeroMakesTheIdAndRankZerosStartUpThrows() throws Exception {
        // rank 0 takes 1.5 s to make the id: rank 1 waits for it in Rendezvous.fetch, joined
        Job j = job("startup-rendezvous-kill", Map.of("NCCL_STUB_SLEEP_MS_ncclGetUniqueId", "1500"), Map.of());
        assertEquals("startup-rendezvous-kill (main thread at org.nccl4j.launch.Rendezvous.fetch; liveness join done)",
                j.event());
        assertEquals(137, j.status1(), j.out1());
        assertEquals("rendezvous", phases(j.out1(), 1).get(phases(j.out1(), 1).size() - 1), j.out1());
        int joined = j.out1().indexOf("\nJOINED rank=1 t=");
        assertTrue(joined > 0 && joined < j.out1().indexOf("\nEVENT "), "placed once it had joined: " + j.out1());
        assertTrue(j.millis() >= 0 && j.millis() < BOUND_MILLIS, "rank 0 ended " + j.millis() + " ms after the EVENT: "
                + j.out0());
        assertEquals(1, j.status0(), j.out0());
        assertTrue(j.out0().matches("(?s).*\nRESULT rank=0 t=\\d{13} PeerLostDuringStartupException: rank 0 of 2: rank 1 "
                + "\\(" + Pattern.quote(org.nccl4j.trace.TraceDump.localHost()) + ", pid " + ranks[1].pid() + "\\) was "
                + "lost during the rendezvous \\(its connection ended without a goodbye\\); the communicator was not made"
                + ".*"), j.out0());
    }

    @Test
    void startupInitExitLeavesBySystemExitFromAnotherThread() throws Exception {
        Job j = job("startup-init-exit", HELD_IN_INIT, HELD_IN_INIT);
        assertEquals("startup-init-exit (main thread at org.nccl4j.jni.NcclNative.ncclCommInitRank; liveness join "
                + "done)", j.event());
        // the stub's initialization never returns: 1 s after System.exit(3) nccl4j ends the process with _exit (the
        // C runtime's exit would crash libnccl under the initializing thread), whose status is then 1
        assertEquals(1, j.status1(), j.out1());
        assertTrue(j.out1().contains("NCCL's initialization was still under way 1000 ms after the exit began"),
                j.out1());
        assertTrue(j.millis() >= 0 && j.millis() < BOUND_MILLIS, "rank 0 ended " + j.millis() + " ms after the EVENT: "
                + j.out0());
        assertEquals(70, j.status0(), j.out0());
        assertTrue(j.out0().contains(") was lost during NCCL initialization (System.exit"), j.out0());
    }
}
