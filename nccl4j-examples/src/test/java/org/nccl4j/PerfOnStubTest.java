package org.nccl4j;

import org.nccl4j.examples.cli.JsonDocs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.examples.perf.Perf;
import org.nccl4j.examples.perf.PerfArgs;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.jni.StubNccl;

/**
 * nccl4j-perf end to end on the CPU: the stub NCCL answers every call at once and the fake CUDA runtime reports
 * 1 ms between any two events, so the numbers mean nothing, but every path runs: one process driving 2 "GPUs",
 * every operation, eager and CUDA graph, in and out of place, the report, -J and --plot. (Which calls reach NCCL
 * is the core tests' business; the data check needs real GPUs.)
 */
class PerfOnStubTest {
    private FakeCuda cuda;

    @BeforeEach
    void fake() {
        cuda = FakeCuda.install(2).elapsedMs(1.0f);
        StubNccl.useFull();
        NcclNative.unsetenv("NCCL_STUB_LOG");
    }

    @AfterEach
    void restore() {
        Cuda.useBackend(null);
    }

    private static String run(int expectedStatus, String... argv) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int status = Perf.run(PerfArgs.parse(argv), new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(expectedStatus, status, out);
        return out;
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyOperationEagerWithJsonAndPlot(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("r.json");
        Path png = dir.resolve("r.png");
        String out = run(0, "-t", "all", "-b", "8", "-e", "1K", "-f", "4", "-n", "10", "-w", "1", "-c", "0", "-g", "2",
                "-J", json.toString(), "--plot", png.toString());
        assertTrue(out.contains("# Collective test starting: all_reduce"), out);
        assertTrue(out.contains("# Collective test concluded: scatter"), out);
        assertTrue(out.contains("#  Rank  1 Group  0"), out);
        // sizes 8, 32, 128, 512; 1 ms per 10 iterations = 100 us; 512 B all_reduce: algbw 512 B / 100 us
        assertTrue(out.contains("         512           128     float     sum      -1   100.00    0.01    0.01    N/A"
                + "   100.00    0.01    0.01    N/A"), out);
        Map<String, Object> doc = (Map<String, Object>) JsonDocs.read(Files.readString(json));
        assertEquals("nccl4j-perf", doc.get("format"));
        assertEquals(1.0, doc.get("version"), "the results format's version (docs/formats.md)");
        assertEquals("single-process", doc.get("mode"));
        assertEquals(2.0, doc.get("ranks"));
        List<Object> results = (List<Object>) doc.get("results");
        assertEquals(9 * 4 * 2, results.size(), "9 operations x 4 sizes x 2 placements");
        Map<String, Object> r = (Map<String, Object>) results.get(0);
        assertEquals(100.0, (Double) r.get("time_us"), 1e-6);
        assertTrue(r.containsKey("alloc_bytes"), r.toString());
        assertTrue(Files.size(png) > 1000);
    }

    @Test
    void cudaGraphRunsCaptureAndReplay() {
        int before = cuda.calls().size();
        String out = run(0, "-t", "all_reduce,sendrecv", "-b", "1K", "-e", "1K", "-n", "5", "-G", "4", "-c", "0", "-g", "2");
        List<String> all = cuda.calls();
        List<String> calls = all.subList(before, all.size());
        long launches = calls.stream().filter(c -> c.startsWith("graphLaunch ")).count();
        // 2 operations x 2 placements x 4 launches x 2 GPUs
        assertEquals(32, launches, calls.toString());
        assertEquals(8, calls.stream().filter(c -> c.startsWith("streamBeginCapture ")).count());
        // 1 ms over 5 iterations x 4 launches = 50 us
        assertTrue(out.contains("    50.00"), out);
        assertEquals(0, Capture.active());
    }

    @Test
    void checkedRunsReportWrongElementsOnTheFake() {
        // the fake CUDA runtime copies nothing, so the check must find wrong elements and fail the run
        String out = run(1, "-t", "broadcast", "-b", "1K", "-e", "1K", "-n", "2", "-c", "1", "-g", "2", "-r", "0");
        assertTrue(out.contains("FAILED"), out);
    }
}
