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
 * The exit policy halts the process: run in a child JVM ({@link #main}) against the stub NCCL and the fake CUDA,
 * whose stalled stream never completes a collective. The child must halt with {@link FailurePolicy#EXIT_STATUS}
 * after the log line and the trace, and never reach the line after its wait.
 */
class WatchdogExitPolicyTest {
    @TempDir
    Path traces;

    private Process child(String mode, String policy) throws IOException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        ProcessBuilder pb = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
                "-Dnccl4j.library=" + StubNccl.full(), "-Dnccl4j.test.stubDir=" + StubNccl.dir(),
                WatchdogExitPolicyTest.class.getName(), mode).redirectErrorStream(true);
        pb.environment().put("NCCL4J_TRACE_DIR", traces.toString());
        pb.environment().put("NCCL4J_ON_FAILURE", policy);
        pb.environment().put("NCCL4J_TIMEOUT", "300ms");
        return pb.start();
    }

    /** The child's status and output, once it has ended (killed and failed after 60 s). */
    private record Outcome(int status, String out) {
    }

    private Outcome finish(Process p) throws IOException, InterruptedException {
        boolean ended = p.waitFor(60, TimeUnit.SECONDS);
        if (!ended) {
            p.destroyForcibly();   // first: reading the output waits for its end
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(ended, "the child did not end: " + out);
        return new Outcome(p.exitValue(), out);
    }

    @Test
    void afterAFailureEveryOtherCommunicatorIsDumpedAtExit() throws IOException, InterruptedException {
        Outcome e = finish(child("exit-dump", "throw"));
        String out = e.out();
        assertEquals(0, e.status(), out);
        assertTrue(out.contains("the failure: org.nccl4j.CollectiveTimeoutException"), out);
        List<String> reasons = new java.util.ArrayList<>();
        try (var s = Files.list(traces)) {
            for (Path f : s.sorted().toList()) {
                TraceDump d = TraceDump.read(f);
                reasons.add(d.communicator() + ": " + d.reason());
            }
        }
        reasons.sort(null);
        assertEquals(List.of("failed: timeout", "other: exit"), reasons);
    }

    @Test
    void theExitPolicyLogsWritesTheTraceAndHaltsWithStatus70() throws IOException, InterruptedException {
        Outcome e = finish(child("stall", "exit"));
        String out = e.out();
        assertEquals(FailurePolicy.EXIT_STATUS, e.status(), out);
        assertTrue(out.contains("nccl4j watchdog: rank 0 of 2: allReduce #1 did not complete within 300 ms"), out);
        assertTrue(out.contains("halting the process with status 70 (the exit policy, NCCL4J_ON_FAILURE=exit)"), out);
        assertTrue(!out.contains("the wait returned"), out);
        List<Path> files;
        try (var s = Files.list(traces)) {
            files = s.toList();
        }
        assertEquals(1, files.size(), files.toString());
        assertEquals(TraceDump.REASON_TIMEOUT, TraceDump.read(files.get(0)).reason());
    }

    /**
     * The child: a watched communicator whose all-reduce never completes, and a wait on it.
     *
     * @param args none
     */
    public static void main(String[] args) {
        if (args.length == 1 && args[0].equals("exit-dump")) {
            exitDump();
            return;
        }
        FakeCuda cuda = FakeCuda.install(1);
        Stream s = Stream.create(0);
        DeviceBuffer b = DeviceBuffer.allocate(0, 4, DataType.FLOAT32);
        Communicator c = Communicator.create(0, 2, UniqueId.of(new byte[UniqueId.BYTES]), 0,
                CommConfig.builder().watchdog(true).build());
        cuda.stall(s.handle());
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        try {
            s.synchronize();
        } catch (RuntimeException e) {
            System.out.println("the wait threw " + e);
        }
        System.out.println("the wait returned");
        try {
            Thread.sleep(Duration.ofSeconds(30).toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Two communicators of rank 0 and 1 of other groups; the first fails; the process then exits normally. */
    private static void exitDump() {
        FakeCuda cuda = FakeCuda.install(1);
        Stream s = Stream.create(0);
        Stream quiet = Stream.create(0);
        DeviceBuffer b = DeviceBuffer.allocate(0, 4, DataType.FLOAT32);
        Communicator failing = Communicator.create(0, 2, UniqueId.of(new byte[UniqueId.BYTES]), 0,
                CommConfig.builder().watchdog(true).commName("failed").build());
        Communicator other = Communicator.create(1, 2, UniqueId.of(new byte[UniqueId.BYTES]), 0,
                CommConfig.builder().watchdog(true).commName("other").build());
        other.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, quiet);
        cuda.stall(s.handle());
        failing.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (failing.failure() == null && System.nanoTime() < end) {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        System.out.println("the failure: " + failing.failure());
        System.exit(0);
    }
}
