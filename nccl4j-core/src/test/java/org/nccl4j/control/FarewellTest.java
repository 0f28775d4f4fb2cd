package org.nccl4j.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.CommConfig;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.FakeCuda;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;
import org.nccl4j.StubFixture;
import org.nccl4j.UniqueId;
import org.nccl4j.jni.StubNccl;
import org.nccl4j.launch.JobSecret;

/**
 * How a process ends reaches its peers: a child JVM ({@link #main}) is rank 1 of a liveness channel served here (rank 0,
 * no communicator), with a communicator of the stub NCCL and two completed all-reduces, and then ends one way or
 * another. Rank 0 must hear how (exit or close), after which collective, and why: the uncaught exception's class and
 * message, SIGTERM, or the line that called System.exit; the child's own exception is printed as the JVM would, its
 * status is the JVM's, and its communicator is aborted at exit.
 */
class FarewellTest {
    @TempDir
    Path dir;

    private Liveness rank0;
    private int port;

    @BeforeEach
    void serve() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        rank0 = Liveness.join(Liveness.serve(port), 0, "127.0.0.1", port);
    }

    @AfterEach
    void close() {
        rank0.close();
    }

    private Process child(String mode) throws IOException {
        return child(mode, Map.of());
    }

    private Process child(String mode, Map<String, String> env) throws IOException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        ProcessBuilder pb = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
                "-Dnccl4j.library=" + StubNccl.full(), "-Dnccl4j.test.stubDir=" + StubNccl.dir(),
                "-Dnccl4j.closeTimeout=1s", FarewellTest.class.getName(), mode, Integer.toString(port))
                .redirectErrorStream(true).redirectOutput(dir.resolve("out.txt").toFile());
        pb.environment().put("NCCL_STUB_LOG", dir.resolve("stub.log").toString());
        pb.environment().put("NCCL4J_TRACE_DIR", dir.toString());
        pb.environment().putAll(env);
        String secret = org.nccl4j.launch.ProcessEnvironment.liveOrJvmCopy().get(JobSecret.VARIABLE);
        if (secret != null) {   // the child is a rank of this job: it has its secret (set here after the JVM began too)
            pb.environment().put(JobSecret.VARIABLE, secret);
        }
        return pb.start();
    }

    private record Outcome(int status, String out, Departures.Departure departure) {
    }

    private Outcome run(String mode, boolean terminate) throws Exception {
        return run(mode, terminate, Map.of(), new long[1]);
    }

    /** Runs the child in {@code mode} with {@code env}; {@code endedMs[0]}: from the SIGTERM (or the start) to its end. */
    private Outcome run(String mode, boolean terminate, Map<String, String> env, long[] endedMs) throws Exception {
        Process p = child(mode, env);
        long t0 = System.nanoTime();
        if (terminate) {
            StubFixture.within(20_000, () -> rank0.roster().size() == 2 ? true : null, "the child's hello");
            Thread.sleep(1500);   // its all-reduces, then its sleep
            t0 = System.nanoTime();
            p.destroy();   // SIGTERM
        }
        boolean ended = p.waitFor(60, TimeUnit.SECONDS);
        endedMs[0] = (System.nanoTime() - t0) / 1_000_000;
        if (!ended) {
            p.destroyForcibly();
        }
        String out = Files.readString(dir.resolve("out.txt"), StandardCharsets.UTF_8);
        assertTrue(ended, "the child did not end: " + out);
        Departures.Departure d = StubFixture.within(3000, () -> {
            Departures.Departure x = rank0.departures().of(0).get(1);
            return x != null && x.cause() != null ? x : null;
        }, "rank 1's departure with its cause, as rank 0 heard it; the child printed: " + out);
        return new Outcome(p.exitValue(), out, d);
    }

    @Test
    void anUncaughtExceptionIsPrintedAsTheJvmWouldAndItsPeersHearItWithTheLastCollective() throws Exception {
        Outcome e = run("uncaught", false);
        assertEquals(1, e.status(), e.out());
        assertTrue(e.out().contains("Exception in thread \"main\" java.lang.IllegalStateException: data loader failed "
                + "on rank 1"), e.out());
        assertEquals(Departures.Kind.EXIT, e.departure().kind());
        assertEquals(2, e.departure().last());
        assertEquals("allReduce #2", e.departure().lastName());
        assertEquals("IllegalStateException: data loader failed on rank 1", e.departure().cause());
        assertTrue(Files.readString(dir.resolve("stub.log")).contains("ncclCommAbort"), "aborted at exit");
        try (var files = Files.list(dir)) {
            org.nccl4j.trace.TraceDump d = org.nccl4j.trace.TraceDump.read(files
                    .filter(f -> f.getFileName().toString().startsWith("nccl4j-trace-rank1-")).findFirst()
                    .orElseThrow());
            assertEquals(org.nccl4j.trace.TraceDump.REASON_DEPARTED, d.reason());
            assertEquals("rank 1 exited with its communicator open after allReduce #2 (IllegalStateException: data "
                    + "loader failed on rank 1)", d.failure());
        }
    }

    @Test
    void anExceptionLeavingTryWithResourcesClosesPromptlyAndItsCauseFollowsTheClose() throws Exception {
        Outcome e = run("inside", false);
        assertEquals(1, e.status(), e.out());
        assertTrue(e.out().contains("Exception in thread \"main\" java.lang.IllegalStateException: data loader failed "
                + "on rank 1"), e.out());
        assertEquals(Departures.Kind.CLOSE, e.departure().kind(), "close() told it first");
        assertEquals(2, e.departure().last());
        assertEquals("IllegalStateException: data loader failed on rank 1", e.departure().cause());
        assertTrue(e.out().contains("aborts its communicator instead of finalizing it: the close deadline (1 s"),
                "rank 0 never closes: rank 1 aborts at the deadline: " + e.out());
    }

    @Test
    void sigtermIsNamedAndTheCommunicatorAbortedBeforeTheProcessEnds() throws Exception {
        Outcome e = run("sleep", true);
        assertEquals(143, e.status(), e.out());
        assertEquals(Departures.Kind.EXIT, e.departure().kind());
        assertEquals("SIGTERM", e.departure().cause());
        assertTrue(Files.readString(dir.resolve("stub.log")).contains("ncclCommAbort"), "aborted at exit");
    }

    /**
     * NCCL's abort at exit takes 3 s (as an abort whose peer is gone took up to 1.9 s on H200s, 3.6 s on a loaded
     * machine): the exit, which knows its status (SIGTERM: 143), waits for it 1 s and ends the process with
     * {@code _exit}, saying so, instead of waiting up to {@link Farewell#ABORT_WAIT_MILLIS}.
     */
    @Test
    void sigtermWithASlowAbortEndsTheProcessOneSecondIntoTheAbortWithItsStatus() throws Exception {
        long[] ms = new long[1];
        Outcome e = run("sleep", true, Map.of("NCCL_STUB_SLEEP_MS_ncclCommAbort", "3000"), ms);
        assertEquals(143, e.status(), e.out());
        assertEquals("SIGTERM", e.departure().cause());
        assertTrue(e.out().contains("aborting the communicators at exit was still under way after 1000 ms at exit "
                + "(SIGTERM): ending the process with status 143 without the C runtime's exit handlers"), e.out());
        assertTrue(ms[0] >= 1000 && ms[0] < 2800, "ended " + ms[0] + " ms after the SIGTERM: " + e.out());
        assertTrue(Files.readString(dir.resolve("stub.log")).contains("ncclCommAbort"), "aborted at exit");
    }

    @Test
    void sigtermWhileMainIssuesTellsTheLastCollectiveReallyIssued() throws Exception {
        Outcome e = run("loop", true);
        assertEquals(Departures.Kind.EXIT, e.departure().kind());
        assertEquals("SIGTERM", e.departure().cause());
        try (var files = Files.list(dir)) {
            org.nccl4j.trace.TraceDump d = org.nccl4j.trace.TraceDump.read(files
                    .filter(f -> f.getFileName().toString().startsWith("nccl4j-trace-rank1-")).findFirst()
                    .orElseThrow());
            // the exit stopped the issuing before it read the last collective: the record written after it agrees
            assertTrue(d.lastEnqueued() > 2, "the loop ran: " + d.lastEnqueued());
            assertEquals(d.lastEnqueued(), e.departure().last(), "told " + e.departure().last() + ", issued "
                    + d.lastEnqueued());
        }
        assertTrue(e.out().contains("is being closed: the process is exiting (SIGTERM)"), e.out());
    }

    @Test
    void systemExitIsNamedWithTheLineThatCalledIt() throws Exception {
        Outcome e = run("exit3", false);
        assertEquals(3, e.status(), e.out());
        assertEquals(Departures.Kind.EXIT, e.departure().kind());
        assertNotNull(e.departure().cause());
        assertTrue(e.departure().cause().startsWith(
                "System.exit at org.nccl4j.control.FarewellTest.main(FarewellTest.java:"), e.departure().cause());
    }

    /** The child's stream and buffer, reachable until it ends. */
    private static Object[] keep;

    /**
     * The child: rank 1 of the channel at {@code args[1]}, two all-reduces, then {@code args[0]}: uncaught (the
     * exception leaves main with the communicator open), inside (it leaves a try-with-resources around the
     * communicator), sleep (until SIGTERM), loop (all-reduces until SIGTERM), exit3 ({@code System.exit(3)}).
     *
     * @param args the mode and the port
     * @throws Exception never on purpose
     */
    public static void main(String[] args) throws Exception {
        FakeCuda.install(1);
        Liveness l = Liveness.join(null, 1, "127.0.0.1", Integer.parseInt(args[1]));
        Communicator c = Communicator.create(1, 2, UniqueId.of(new byte[UniqueId.BYTES]), 0,
                CommConfig.builder().watchdog(true).build());
        StubFixture.attachChannel(c, l);
        Stream s = Stream.create(0);
        DeviceBuffer b = DeviceBuffer.allocate(0, 4, DataType.FLOAT32);
        // Held until the process ends: once main's frame is gone the buffer would be unreachable, and the leak
        // warning of a Cleaner could land in the middle of the JVM's printing of the uncaught exception.
        keep = new Object[] {s, b};
        for (int i = 0; i < 2; i++) {
            c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        }
        s.synchronize();
        switch (args[0]) {
            case "uncaught":
                throw new IllegalStateException("data loader failed on rank 1");
            case "inside":
                try (Communicator comm = c) {
                    throw new IllegalStateException("data loader failed on rank 1");
                }
            case "sleep":
                Thread.sleep(60_000);
                return;
            case "loop":   // all-reduces until the exit refuses the next one
                while (true) {
                    c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
                }
            default:
                System.exit(3);
        }
    }
}
