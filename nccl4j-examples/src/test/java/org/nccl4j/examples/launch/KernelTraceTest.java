package org.nccl4j.examples.launch;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CUPTI kernel tracer of {@code scripts/perf-timeline.sh}, on the CPU: {@code perf/native/kernel_trace.c} checked
 * with gcc against a mock {@code cupti.h} (test resources, {@code mock-cupti/}: the names and signatures of CUPTI's
 * activity API, no NVIDIA header), {@code perf/native/build.sh} building it against that header and a stub libcupti
 * ({@code mock-cupti/cupti_stub.c}, which hands the tracer a few records) with a fake nvcc, the tracer run by a
 * stand-in for the CUDA driver's injection ({@code mock-cupti/injector.c}), and {@code perf/timeline_report.py
 * --cupti} on synthetic traces with known kernel durations and gaps. Skipped where gcc or python3 is missing.
 */
@Timeout(120)
class KernelTraceTest {
    private static final Path ROOT = Path.of("").toAbsolutePath().getParent();
    private static final Path TRACER = ROOT.resolve("perf/native/kernel_trace.c");
    private static final Path REPORT = ROOT.resolve("perf/timeline_report.py");
    private static final String NCCL = "_Z40ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";

    @TempDir
    Path tmp;

    private record Run(int status, String out) {
    }

    private static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    private static Run exec(Path dir, Map<String, String> env, List<String> command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().putAll(env);
        pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), UTF_8);
        assertTrue(p.waitFor(90, TimeUnit.SECONDS), String.join(" ", command) + " timed out");
        return new Run(p.exitValue(), out);
    }

    private static String ok(Path dir, String... command) throws Exception {
        Run r = exec(dir, Map.of(), List.of(command));
        assertEquals(0, r.status(), String.join(" ", command) + " failed:\n" + r.out());
        return r.out();
    }

    /** A file of mock-cupti/ copied to dir. */
    private static Path resource(String name, Path dir) throws IOException {
        Files.createDirectories(dir);
        try (InputStream in = KernelTraceTest.class.getResourceAsStream("mock-cupti/" + name)) {
            assertTrue(in != null, "no resource mock-cupti/" + name);
            Path p = dir.resolve(name);
            Files.copy(in, p, StandardCopyOption.REPLACE_EXISTING);
            return p;
        }
    }

    private static void executable(Path p, String text) throws IOException {
        Files.createDirectories(p.getParent());
        Files.writeString(p, text);
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    // ---------------------------------------------------------------- kernel_trace.c and build.sh

    @Test
    void theTracerCompilesAgainstCuptisActivityApiWithEachKernelRecordType() throws Exception {
        assumeTrue(onPath("gcc"), "gcc is not on the PATH");
        Path inc = resource("cupti.h", tmp.resolve("include")).getParent();
        List<String> gcc = List.of("gcc", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I" + inc);
        for (String krec : new String[] {null, "CUpti_ActivityKernel10", "CUpti_ActivityKernel9"}) {
            List<String> cmd = new ArrayList<>(gcc);
            if (krec != null) {
                cmd.add("-DKREC=" + krec);
            }
            cmd.add(TRACER.toString());
            Run r = exec(tmp, Map.of(), cmd);
            assertEquals(0, r.status(), cmd + "\n" + r.out());
            assertEquals("", r.out(), cmd.toString());
        }
        // a record type this CUPTI does not have (the mock, as CUDA 13.0's CUPTI, stops at 10): build.sh goes on
        List<String> cmd = new ArrayList<>(gcc);
        cmd.addAll(List.of("-DKREC=CUpti_ActivityKernel11", TRACER.toString()));
        Run r = exec(tmp, Map.of(), cmd);
        assertNotEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("CUpti_ActivityKernel11"), r.out());
    }

    /** A copy of perf/native (build.sh, kernel_trace.c) and a CUDA_HOME with a fake nvcc; cupti: the mock CUPTI too. */
    private Path nativeTree(boolean cupti) throws Exception {
        Path nat = Files.createDirectories(tmp.resolve("checkout/perf/native"));
        Files.copy(ROOT.resolve("perf/native/build.sh"), nat.resolve("build.sh"), StandardCopyOption.COPY_ATTRIBUTES);
        Files.copy(TRACER, nat.resolve("kernel_trace.c"));
        Path cuda = tmp.resolve("cuda");
        // the fake nvcc creates what -o names
        executable(cuda.resolve("bin/nvcc"), "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && : > \"$2\"; shift; done\n");
        if (cupti) {
            Path inc = resource("cupti.h", cuda.resolve("targets/x86_64-linux/include")).getParent();
            Path lib = Files.createDirectories(cuda.resolve("targets/x86_64-linux/lib"));
            Path stub = resource("cupti_stub.c", tmp.resolve("src"));
            ok(tmp, "gcc", "-shared", "-fPIC", "-Wall", "-Werror", "-I" + inc, "-o", lib.resolve("libcupti.so").toString(),
                    stub.toString());
        }
        return nat;
    }

    private Run build(Path nat) throws Exception {
        return exec(tmp, Map.of("CUDA_HOME", tmp.resolve("cuda").toString(), "NVCC", tmp.resolve("cuda/bin/nvcc").toString(),
                "CC", "gcc"),
                List.of(nat.resolve("build.sh").toString()));
    }

    @Test
    void buildShBuildsTheTracerWithTheNewestRecordTypeThatCompilesAndTheTracerWritesItsCsv() throws Exception {
        assumeTrue(onPath("gcc"), "gcc is not on the PATH");
        Path nat = nativeTree(true);
        Run r = build(nat);
        assertEquals(0, r.status(), r.out());
        Path so = nat.resolve("build/libkernel_trace.so");
        assertTrue(Files.exists(nat.resolve("build/nccl_perf_baseline")), r.out());
        assertTrue(Files.exists(so), r.out());
        assertTrue(r.out().contains("build.sh: kernel tracer " + so + " (KREC=CUpti_ActivityKernel10, "
                + tmp.resolve("cuda/targets/x86_64-linux/include/cupti.h") + ")"), r.out());
        String log = Files.readString(nat.resolve("build/kernel_trace.log"));
        assertTrue(log.startsWith("== KREC=CUpti_ActivityKernel11\n"), log);
        assertTrue(log.contains("CUpti_ActivityKernel11"), log);
        assertTrue(log.contains("== KREC=CUpti_ActivityKernel10\n"), log);
        assertFalse(log.contains("== KREC=CUpti_ActivityKernel9"), log);

        // loaded as the CUDA driver loads CUDA_INJECTION64_PATH, against the stub libcupti
        Path injector = tmp.resolve("injector");
        ok(tmp, "gcc", "-Wall", "-Werror", "-o", injector.toString(), resource("injector.c", tmp.resolve("src")).toString(),
                "-ldl");
        Path traces = Files.createDirectories(tmp.resolve("traces"));
        Run t = exec(tmp, Map.of("KERNEL_TRACE_DIR", traces.toString()), List.of(injector.toString(), so.toString()));
        assertEquals(0, t.status(), t.out());
        assertEquals("InitializeInjection: 1\n", t.out());
        List<Path> csv;
        try (var s = Files.list(traces)) {
            csv = s.collect(Collectors.toList());
        }
        assertEquals(1, csv.size(), csv.toString());
        assertTrue(csv.get(0).getFileName().toString().matches("trace-\\d+\\.csv"), csv.toString());
        // the memcpy record is left out; a name with commas stays whole as the last field; no name: "?"
        assertEquals("1000000,1300000,1,13,ncclDevKernel_AllReduce_Sum_f32_RING_LL\n"
                + "1302500,1602000,1,13,kernel<a, b>(int)\n"
                + "2000000,2000500,0,7,?\n"
                + "# dropped 2\n", Files.readString(csv.get(0)));
        Files.delete(csv.get(0));

        // CUPTI refuses: a note in the trace and on stderr, and InitializeInjection says 0
        t = exec(tmp, Map.of("KERNEL_TRACE_DIR", traces.toString(), "STUB_CUPTI_FAIL", "1"),
                List.of(injector.toString(), so.toString()));
        assertEquals(0, t.status(), t.out());
        assertTrue(t.out().contains("kernel_trace: CUPTI activity setup failed: no kernel trace in " + traces + "/trace-"),
                t.out());
        assertTrue(t.out().endsWith("InitializeInjection: 0\n"), t.out());
        try (var s = Files.list(traces)) {
            csv = s.collect(Collectors.toList());
        }
        assertEquals("# CUPTI activity setup failed\n", Files.readString(csv.get(0)));

        // no KERNEL_TRACE_DIR to write to
        t = exec(tmp, Map.of("KERNEL_TRACE_DIR", tmp.resolve("missing").toString()), List.of(injector.toString(), so.toString()));
        assertTrue(t.out().contains("kernel_trace: cannot write " + tmp.resolve("missing") + "/trace-"), t.out());
        assertTrue(t.out().endsWith("InitializeInjection: 0\n"), t.out());
    }

    @Test
    void buildShWithoutCuptiBuildsTheBaselineAloneAndSaysSo() throws Exception {
        Path nat = nativeTree(false);
        Run r = build(nat);
        assertEquals(0, r.status(), r.out());
        assertTrue(Files.exists(nat.resolve("build/nccl_perf_baseline")), r.out());
        assertFalse(Files.exists(nat.resolve("build/libkernel_trace.so")), r.out());
        Path cuda = tmp.resolve("cuda");
        assertTrue(r.out().contains("build.sh: no cupti.h in " + cuda + "/targets/x86_64-linux/include or " + cuda
                + "/extras/CUPTI/include (CUDA_HOME): no kernel tracer"), r.out());
    }

    @Test
    void buildShWhenNoRecordTypeCompilesSaysSoAndLeavesNoTracer() throws Exception {
        assumeTrue(onPath("gcc"), "gcc is not on the PATH");
        Path nat = nativeTree(true);
        // a CUPTI in extras/CUPTI (older CUDA layouts) whose header has no kernel record types at all
        Path cuda = tmp.resolve("cuda");
        Files.delete(cuda.resolve("targets/x86_64-linux/include/cupti.h"));
        Path inc = Files.createDirectories(cuda.resolve("extras/CUPTI/include"));
        Files.writeString(inc.resolve("cupti.h"), "#include <stdint.h>\ntypedef int CUptiResult;\n");
        Files.createFile(Files.createDirectories(nat.resolve("build")).resolve("libkernel_trace.so"));  // an older build's
        Run r = build(nat);
        assertEquals(0, r.status(), r.out());
        assertTrue(Files.exists(nat.resolve("build/nccl_perf_baseline")), r.out());
        assertFalse(Files.exists(nat.resolve("build/libkernel_trace.so")), r.out());
        assertTrue(r.out().contains("build.sh: kernel_trace.c did not build against " + inc.resolve("cupti.h")
                + " with CUpti_ActivityKernel11, 10 or 9 (see " + nat.resolve("build/kernel_trace.log") + "): no kernel tracer"),
                r.out());
        String log = Files.readString(nat.resolve("build/kernel_trace.log"));
        for (String k : new String[] {"11", "10", "9"}) {
            assertTrue(log.contains("== KREC=CUpti_ActivityKernel" + k + "\n"), log);
        }
    }

    // ---------------------------------------------------------------- timeline_report.py --cupti

    /**
     * One timed loop of 100 kernels from t (ns), appended to lines: durations 11 x 290, 78 x 300, 11 x 310 us, gaps
     * 10 x 1, 79 x 2, 10 x 4 us, each plus the given extra; so start to start is 302 us plus both extras. Returns
     * the end of the last kernel.
     */
    private static long loop(long t, int device, double extraDuration, double extraGap, List<String> lines) {
        for (int i = 0; i < 100; i++) {
            long d = Math.round(((i < 11 ? 290 : i < 89 ? 300 : 310) + extraDuration) * 1000);
            lines.add(t + "," + (t + d) + "," + device + ",13," + NCCL);
            t += d;
            if (i < 99) {
                t += Math.round(((i < 10 ? 1 : i < 89 ? 2 : 4) + extraGap) * 1000);
            }
        }
        return t;
    }

    /**
     * A trace as kernel_trace.c writes it (in no particular order): a run of 99 short NCCL kernels 1 us apart (a
     * warm-up: too short to count), 50 us later a small NCCL kernel (a barrier) and, exactly 20 us after its end,
     * loops timed loops 150 us apart; a kernel of another library on another stream, and a note.
     */
    private static void trace(Path file, long t0, int device, int loops, double extraDuration, double extraGap)
            throws IOException {
        List<String> lines = new ArrayList<>();
        long t = t0;
        for (int i = 0; i < 99; i++) {
            lines.add(t + "," + (t + 10_000) + "," + device + ",13," + NCCL);
            t += 11_000;
        }
        t += 50_000;
        lines.add(t + "," + (t + 5_000) + "," + device + ",13,ncclDevKernel_AllReduce_Sum_u8_RING_LL(int, char)");
        t += 25_000;
        for (int l = 0; l < loops; l++) {
            t = loop(t, device, extraDuration, extraGap, lines) + 150_000;
        }
        lines.add((t0 + 400_000) + "," + (t0 + 401_000) + "," + device + ",7,void vectorAdd<float>(float*, int)");
        lines.add("# dropped 3");
        Collections.reverse(lines);
        Files.createDirectories(file.getParent());
        Files.writeString(file, String.join("\n", lines) + "\n");
    }

    private Run report(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("python3", REPORT.toString(), "--cupti"));
        cmd.addAll(List.of(args));
        return exec(tmp, Map.of("PYTHONIOENCODING", "utf-8"), cmd);
    }

    private void traces() throws IOException {
        // C: rank 1's process (pid 1000) started first, and ran two timed loops
        trace(tmp.resolve("c/trace-200.csv"), 1_000_000_000L, 0, 1, 0, 0);
        trace(tmp.resolve("c/trace-1000.csv"), 999_999_900L, 1, 2, 0, 0);
        // Java: kernels 0.5 and 1.5 us longer, gaps 1 us longer
        trace(tmp.resolve("java/trace-300.csv"), 2_000_000_000L, 0, 1, 0.5, 1);
        trace(tmp.resolve("java/trace-301.csv"), 2_000_000_005L, 1, 1, 1.5, 1);
    }

    @Test
    void timelineReportTakesTheTimedLoopsOutOfCuptiTraces() throws Exception {
        assumeTrue(onPath("python3"), "python3 is not on the PATH");
        traces();
        Run r = report(tmp.resolve("c").toString(), tmp.resolve("java").toString());
        assertEquals(0, r.status(), r.out());
        assertEquals(String.join("\n",
                "Timed loops: runs of at least 100 NCCL kernels, each starting less than 20 us after the previous one ends.",
                "",
                "| side | trace | device | timed loops | kernels | kernel duration, median (us) | gap between kernels, median (us) "
                        + "| start to start, mean (us) |",
                "|---|---|---|---:|---:|---|---|---:|",
                "| c | trace-1000.csv | 1 | 2 | 200 | 300.00 (p10 290.00, p90 310.00) | 2.00 (p10 1.00, p90 4.00) | 302.00 |",
                "| c | trace-200.csv | 0 | 1 | 100 | 300.00 (p10 290.00, p90 310.00) | 2.00 (p10 1.00, p90 4.00) | 302.00 |",
                "| java | trace-300.csv | 0 | 1 | 100 | 300.50 (p10 290.50, p90 310.50) | 3.00 (p10 2.00, p90 5.00) | 303.50 |",
                "| java | trace-301.csv | 1 | 1 | 100 | 301.50 (p10 291.50, p90 311.50) | 3.00 (p10 2.00, p90 5.00) | 304.50 |",
                "",
                "- c trace-1000.csv: CUPTI dropped 3 records: kernels are missing",
                "- c trace-200.csv: CUPTI dropped 3 records: kernels are missing",
                "- java trace-300.csv: CUPTI dropped 3 records: kernels are missing",
                "- java trace-301.csv: CUPTI dropped 3 records: kernels are missing",
                "",
                "Java - C, medians over all ranks: kernel +1.00 us, gap +1.00 us; start to start, mean: +2.00 us",
                ""), r.out());

        // the warm-up run of 99 counts as a loop when 99 is enough
        r = report(tmp.resolve("c").toString(), tmp.resolve("java").toString(), "--min-run", "99");
        assertEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("| c | trace-200.csv | 0 | 2 | 199 | "), r.out());
        // a gap of exactly 20 us ends a loop; with a larger limit, the barrier kernel before it joins it
        r = report(tmp.resolve("c").toString(), tmp.resolve("java").toString(), "--max-gap-us", "20.5");
        assertEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("| c | trace-200.csv | 0 | 1 | 101 | "), r.out());
        assertTrue(r.out().startsWith("Timed loops: runs of at least 100 NCCL kernels, each starting less than 20.5 us "), r.out());
    }

    @Test
    void timelineReportCuptiNeedsTracesOfBothSidesAndSaysWhichHaveNoLoop() throws Exception {
        assumeTrue(onPath("python3"), "python3 is not on the PATH");
        traces();
        Path empty = Files.createDirectories(tmp.resolve("empty"));
        Run r = report(tmp.resolve("c").toString(), empty.toString());
        assertEquals(2, r.status(), r.out());
        assertTrue(r.out().contains("timeline_report: no trace-*.csv in " + empty), r.out());
        assertTrue(r.out().contains("| c | trace-200.csv | 0 | 1 | 100 | "), r.out());
        assertFalse(r.out().contains("Java - C"), r.out());

        // a trace without NCCL kernels (CUPTI refused), one with too short a loop
        Files.writeString(empty.resolve("trace-7.csv"), "# CUPTI activity setup failed\n");
        r = report(tmp.resolve("c").toString(), empty.toString(), "--min-run", "300");
        assertEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("| c | trace-200.csv | — | 0 | 0 | — | — | — |"), r.out());
        assertTrue(r.out().contains("| java | trace-7.csv | — | 0 | 0 | — | — | — |"), r.out());
        assertTrue(r.out().contains("- c trace-200.csv: no timed loop (200 NCCL kernels)"), r.out());
        assertTrue(r.out().contains("- java trace-7.csv: no timed loop (0 NCCL kernels)"), r.out());
        assertTrue(r.out().contains("- java trace-7.csv: CUPTI activity setup failed"), r.out());
        assertFalse(r.out().contains("Java - C"), r.out());
    }
}
