package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.jni.StubNccl;
import org.nccl4j.trace.TraceDump;

/**
 * The exit policy of the watchdog's monitor halts the process: run in a child JVM ({@link #main}) against the stub
 * NCCL and the fake CUDA, whose {@code cudaEventQuery} hangs, so that the process's watchdog gets stuck and the
 * process's monitor (started with it, {@code NCCL4J_WATCHDOG_STUCK_TIMEOUT=1s}) finds it. The child must halt with
 * {@link FailurePolicy#EXIT_STATUS} after the ERROR line and the trace, and never reach the line after its sleep.
 */
class WatchdogMonitorExitTest {
    @TempDir
    Path traces;

    @Test
    void aStuckWatchdogUnderTheExitPolicyLogsWritesTheTraceAndHaltsWithStatus70() throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        ProcessBuilder pb = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
                "-Dnccl4j.library=" + StubNccl.full(), "-Dnccl4j.test.stubDir=" + StubNccl.dir(),
                WatchdogMonitorExitTest.class.getName()).redirectErrorStream(true);
        pb.environment().put("NCCL4J_TRACE_DIR", traces.toString());
        pb.environment().put("NCCL4J_ON_FAILURE", "exit");
        pb.environment().put("NCCL4J_WATCHDOG_STUCK_TIMEOUT", "1s");
        long t0 = System.nanoTime();
        Process p = pb.start();
        boolean ended = p.waitFor(60, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly();   // first: reading the output waits for its end
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(ended, "the child did not end: " + out);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertEquals(FailurePolicy.EXIT_STATUS, p.exitValue(), out);
        assertTrue(ms < 30_000, "ended after " + ms + " ms, before its 30 s sleep: " + out);
        assertTrue(out.contains("the watchdog's query hangs from now on"), out);
        assertTrue(out.contains("ERROR org.nccl4j.WatchdogMonitor -- nccl4j watchdog monitor: the nccl4j watchdog "
                + "thread made no progress for "), out);
        assertTrue(out.contains(" (stuck in: java.lang.Object.wait(Native Method), under "
                + "org.nccl4j.FakeCuda.eventQuery(FakeCuda.java:"), out);
        assertTrue(out.contains("(NCCL4J_WATCHDOG_STUCK_TIMEOUT 1 s): hangs and failures are no longer detected. "
                + "Writing the flight records of 1 communicator, then halting the process with status 70 (the exit "
                + "policy). The watchdog thread's stack:\n\tat java.lang.Object.wait(Native Method)"), out);
        assertTrue(out.contains("nccl4j watchdog monitor: every thread's stack, as the watchdog was found stuck:"),
                out);
        assertTrue(!out.contains("the sleep ended"), out);
        List<Path> files;
        try (var s = Files.list(traces)) {
            files = s.toList();
        }
        assertEquals(1, files.size(), files.toString());
        TraceDump d = TraceDump.read(files.get(0));
        assertEquals(TraceDump.REASON_WATCHDOG_STUCK, d.reason());
        assertTrue(d.failure().startsWith("the nccl4j watchdog thread made no progress for "), d.failure());
        assertEquals(1, d.lastEnqueued());
    }

    /**
     * The child: a watched communicator whose watchdog hangs in {@code cudaEventQuery}, and a sleep.
     *
     * @param args none
     * @throws InterruptedException never (the process halts first)
     */
    public static void main(String[] args) throws InterruptedException {
        FakeCuda cuda = FakeCuda.install(1);
        Stream s = Stream.create(0);
        DeviceBuffer b = DeviceBuffer.allocate(0, 4, DataType.FLOAT32);
        Communicator c = Communicator.create(0, 2, UniqueId.of(new byte[UniqueId.BYTES]), 0,
                CommConfig.builder().watchdog(true).build());
        cuda.hangEventQueries();
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        System.out.println("the watchdog's query hangs from now on");
        Thread.sleep(Duration.ofSeconds(30).toMillis());
        System.out.println("the sleep ended");
    }
}
