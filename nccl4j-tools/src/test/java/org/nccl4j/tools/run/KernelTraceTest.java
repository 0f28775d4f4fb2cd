package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.tools.run.ScriptKit.PYTHON_ENV;
import static org.nccl4j.tools.run.ScriptKit.ROOT;
import static org.nccl4j.tools.run.ScriptKit.assumeOnPath;
import static org.nccl4j.tools.run.ScriptKit.exec;
import static org.nccl4j.tools.run.ScriptKit.executable;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.tools.run.ScriptKit.Outcome;

/**
 * The CUPTI kernel tracer of {@code scripts/bench/perf-timeline.sh}, on the CPU: {@code scripts/bench/native/kernel_trace.c} checked
 * with gcc against a mock {@code cupti.h} (test resources, {@code mock-cupti/}: the names and signatures of CUPTI's
 * activity API, no NVIDIA header), {@code scripts/bench/native/build.sh} building it against that header and a stub libcupti
 * ({@code mock-cupti/cupti_stub.c}, which hands the tracer a few kernel and API records and says which kinds were
 * enabled and which names were asked for) with a fake nvcc, the tracer run by a stand-in for the CUDA driver's injection
 * ({@code mock-cupti/injector.c}), with and without {@code KERNEL_TRACE_API=1}, and {@code scripts/bench/timeline_report.py
 * --cupti [--api]} on synthetic traces with known kernel durations and gaps and known API calls per operation.
 * Skipped where gcc or python3 is missing.
 */
@Timeout(120)
class KernelTraceTest {
    private static final Path TRACER = ROOT.resolve("scripts/bench/native/kernel_trace.c");
    private static final Path REPORT = ROOT.resolve("scripts/bench/timeline_report.py");
    private static final String NCCL = "_Z40ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";

    @TempDir
    Path tmp;

    private static String ok(Path dir, String... command) throws Exception {
        Outcome r = exec(dir, Map.of(), List.of(command));
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

    // ---------------------------------------------------------------- kernel_trace.c and build.sh

    @Test
    void theTracerCompilesAgainstCuptisActivityApiWithEachKernelRecordType() throws Exception {
        assumeOnPath("gcc");
        Path inc = resource("cupti.h", tmp.resolve("include")).getParent();
        List<String> gcc = List.of("gcc", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I" + inc);
        for (String krec : new String[] {null, "CUpti_ActivityKernel10", "CUpti_ActivityKernel9"}) {
            List<String> cmd = new ArrayList<>(gcc);
            if (krec != null) {
                cmd.add("-DKREC=" + krec);
            }
            cmd.add(TRACER.toString());
            Outcome r = exec(tmp, Map.of(), cmd);
            assertEquals(0, r.status(), cmd + "\n" + r.out());
            assertEquals("", r.out(), cmd.toString());
        }
        // a record type this CUPTI does not have (the mock, as CUDA 13.0's CUPTI, stops at 10): build.sh goes on
        List<String> cmd = new ArrayList<>(gcc);
        cmd.addAll(List.of("-DKREC=CUpti_ActivityKernel11", TRACER.toString()));
        Outcome r = exec(tmp, Map.of(), cmd);
        assertNotEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("CUpti_ActivityKernel11"), r.out());
    }

    /** A copy of scripts/bench/native (build.sh, kernel_trace.c) and a CUDA_HOME with a fake nvcc; cupti: the mock CUPTI too. */
    private Path nativeTree(boolean cupti) throws Exception {
        Path nat = Files.createDirectories(tmp.resolve("checkout/perf/native"));
        Files.copy(ROOT.resolve("scripts/bench/native/build.sh"), nat.resolve("build.sh"), StandardCopyOption.COPY_ATTRIBUTES);
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

    private Outcome build(Path nat) throws Exception {
        return exec(tmp, Map.of("CUDA_HOME", tmp.resolve("cuda").toString(), "NVCC", tmp.resolve("cuda/bin/nvcc").toString(),
                "CC", "gcc"),
                List.of(nat.resolve("build.sh").toString()));
    }

    @Test
    void buildShBuildsTheTracerWithTheNewestRecordTypeThatCompilesAndTheTracerWritesItsCsv() throws Exception {
        assumeOnPath("gcc");
        Path nat = nativeTree(true);
        Outcome r = build(nat);
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
        Path injector = injector();
        Path traces = Files.createDirectories(tmp.resolve("traces"));
        Path calls = tmp.resolve("cupti.log");
        // without KERNEL_TRACE_API (or with another value than 1) the API kinds are not enabled and no -api.csv
        for (Map<String, String> env : List.of(Map.<String, String>of(), Map.of("KERNEL_TRACE_API", "0"))) {
            Map<String, String> e = new HashMap<>(env);
            e.putAll(Map.of("KERNEL_TRACE_DIR", traces.toString(), "STUB_CUPTI_LOG", calls.toString()));
            Outcome t = exec(tmp, e, List.of(injector.toString(), so.toString()));
            assertEquals(0, t.status(), t.out());
            assertEquals("InitializeInjection: 1\n", t.out());
            List<Path> csv = files(traces);
            assertEquals(1, csv.size(), csv.toString());
            assertTrue(csv.get(0).getFileName().toString().matches("trace-\\d+\\.csv"), csv.toString());
            // the memcpy record is left out; a name with commas stays whole as the last field; no name: "?"
            assertEquals(KERNELS, Files.readString(csv.get(0)), env.toString());
            assertEquals("enable 10\n", Files.readString(calls), env.toString());
            Files.delete(csv.get(0));
            Files.delete(calls);
        }

        // CUPTI refuses: a note in the trace and on stderr, and InitializeInjection says 0
        Outcome t = exec(tmp, Map.of("KERNEL_TRACE_DIR", traces.toString(), "STUB_CUPTI_FAIL", "1", "KERNEL_TRACE_API", "1"),
                List.of(injector.toString(), so.toString()));
        assertEquals(0, t.status(), t.out());
        assertTrue(t.out().contains("kernel_trace: CUPTI activity setup failed: no kernel trace in " + traces + "/trace-"),
                t.out());
        assertTrue(t.out().endsWith("InitializeInjection: 0\n"), t.out());
        List<Path> csv = files(traces);
        assertEquals(1, csv.size(), csv.toString());
        assertEquals("# CUPTI activity setup failed\n", Files.readString(csv.get(0)));

        // no KERNEL_TRACE_DIR to write to
        t = exec(tmp, Map.of("KERNEL_TRACE_DIR", tmp.resolve("missing").toString()), List.of(injector.toString(), so.toString()));
        assertTrue(t.out().contains("kernel_trace: cannot write " + tmp.resolve("missing") + "/trace-"), t.out());
        assertTrue(t.out().endsWith("InitializeInjection: 0\n"), t.out());
    }

    /** The kernel CSV that the tracer writes of the stub's records. */
    private static final String KERNELS = "1000000,1300000,1,13,41,ncclDevKernel_AllReduce_Sum_f32_RING_LL\n"
            + "1302500,1602000,1,13,42,kernel<a, b>(int)\n"
            + "2000000,2000500,0,7,43,?\n"
            + "# dropped 2\n";

    /** mock-cupti/injector.c built in tmp. */
    private Path injector() throws Exception {
        Path injector = tmp.resolve("injector");
        ok(tmp, "gcc", "-Wall", "-Werror", "-o", injector.toString(), resource("injector.c", tmp.resolve("src")).toString(),
                "-ldl");
        return injector;
    }

    private static List<Path> files(Path dir) throws IOException {
        try (var s = Files.list(dir)) {
            return s.sorted().collect(Collectors.toList());
        }
    }

    @Test
    void withKernelTraceApiTheTracerWritesTheDriverAndRuntimeCallsWithTheirNames() throws Exception {
        assumeOnPath("gcc");
        Path nat = nativeTree(true);
        Outcome r = build(nat);
        assertEquals(0, r.status(), r.out());
        Path so = nat.resolve("build/libkernel_trace.so");
        Path injector = injector();
        Path traces = Files.createDirectories(tmp.resolve("traces"));
        Path log = tmp.resolve("cupti.log");
        Outcome t = exec(tmp, Map.of("KERNEL_TRACE_DIR", traces.toString(), "KERNEL_TRACE_API", "1", "STUB_CUPTI_LOG",
                log.toString()), List.of(injector.toString(), so.toString()));
        assertEquals(0, t.status(), t.out());
        assertEquals("InitializeInjection: 1\n", t.out());
        List<Path> csv = files(traces);
        assertEquals(2, csv.size(), csv.toString());
        String pid = csv.get(1).getFileName().toString().replaceAll("^trace-(\\d+)\\.csv$", "$1");
        assertEquals("trace-" + pid + "-api.csv", csv.get(0).getFileName().toString(), csv.toString());
        assertTrue(pid.matches("\\d+"), csv.toString());
        // the kernels as without KERNEL_TRACE_API; the API calls in the order the stub hands them over: the kind, the
        // cbid, the thread, the correlation id (a kernel's is its launch's), the name by domain and cbid (17 is
        // cudaGetDevice in the runtime's, cuCtxSynchronize in the driver's); no name: "?"
        assertEquals(KERNELS, Files.readString(csv.get(1)));
        assertEquals("990000,993000,driver,652,7001,41,cuLaunchKernelEx\n"
                + "994000,997500,runtime,211,7002,42,cudaLaunchKernel_v7000\n"
                + "995000,997000,driver,307,7002,42,cuLaunchKernel\n"
                + "998000,998200,runtime,17,7001,44,cudaGetDevice_v3020\n"
                + "998500,1100000,driver,17,7001,45,cuCtxSynchronize\n"
                + "999000,999800,driver,652,7002,46,cuLaunchKernelEx\n"
                + "1200000,1200100,driver,9999,7001,47,?\n"
                + "# dropped 2\n", Files.readString(csv.get(0)));
        // the kernels' kind first, then the API's; each (domain, cbid) asked once: cuLaunchKernelEx's name is cached
        assertEquals("enable 10\nenable 4\nenable 5\n"
                + "name 1 652\nname 2 211\nname 1 307\nname 2 17\nname 1 17\nname 1 9999\n", Files.readString(log));
        for (Path p : csv) {
            Files.delete(p);
        }

        // CUPTI refuses the runtime API kind (after the driver's): a note in the -api.csv and on stderr; the kernels
        // are traced all the same, and the driver records that come are written nowhere
        t = exec(tmp, Map.of("KERNEL_TRACE_DIR", traces.toString(), "KERNEL_TRACE_API", "1", "STUB_CUPTI_FAIL_RUNTIME", "1"),
                List.of(injector.toString(), so.toString()));
        assertEquals(0, t.status(), t.out());
        csv = files(traces);
        assertEquals(2, csv.size(), csv.toString());
        assertEquals("kernel_trace: CUPTI API activity setup failed: no API trace in " + csv.get(0) + "\n"
                + "InitializeInjection: 1\n", t.out());
        assertEquals("# CUPTI API activity setup failed\n", Files.readString(csv.get(0)));
        assertEquals(KERNELS, Files.readString(csv.get(1)));
    }

    @Test
    void buildShWithoutCuptiBuildsTheBaselineAloneAndSaysSo() throws Exception {
        Path nat = nativeTree(false);
        Outcome r = build(nat);
        assertEquals(0, r.status(), r.out());
        assertTrue(Files.exists(nat.resolve("build/nccl_perf_baseline")), r.out());
        assertFalse(Files.exists(nat.resolve("build/libkernel_trace.so")), r.out());
        Path cuda = tmp.resolve("cuda");
        assertTrue(r.out().contains("build.sh: no cupti.h in " + cuda + "/targets/x86_64-linux/include or " + cuda
                + "/extras/CUPTI/include (CUDA_HOME): no kernel tracer"), r.out());
    }

    @Test
    void buildShWhenNoRecordTypeCompilesSaysSoAndLeavesNoTracer() throws Exception {
        assumeOnPath("gcc");
        Path nat = nativeTree(true);
        // a CUPTI in extras/CUPTI (older CUDA layouts) whose header has no kernel record types at all
        Path cuda = tmp.resolve("cuda");
        Files.delete(cuda.resolve("targets/x86_64-linux/include/cupti.h"));
        Path inc = Files.createDirectories(cuda.resolve("extras/CUPTI/include"));
        Files.writeString(inc.resolve("cupti.h"), "#include <stdint.h>\ntypedef int CUptiResult;\n");
        Files.createFile(Files.createDirectories(nat.resolve("build")).resolve("libkernel_trace.so"));  // an older build's
        Outcome r = build(nat);
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

    /** A kernel of a synthetic trace: op is its index in its timed loop, -1 outside one. */
    private record Kernel(long start, long end, int device, int stream, String name, int op) {
    }

    /**
     * One timed loop of 100 kernels from t (ns), appended to kernels: durations 11 x 290, 78 x 300, 11 x 310 us, gaps
     * 10 x 1, 79 x 2, 10 x 4 us, each plus the given extra; so start to start is 302 us plus both extras. Returns
     * the end of the last kernel.
     */
    private static long loop(long t, int device, double extraDuration, double extraGap, List<Kernel> kernels) {
        for (int i = 0; i < 100; i++) {
            long d = Math.round(((i < 11 ? 290 : i < 89 ? 300 : 310) + extraDuration) * 1000);
            kernels.add(new Kernel(t, t + d, device, 13, NCCL, i));
            t += d;
            if (i < 99) {
                t += Math.round(((i < 10 ? 1 : i < 89 ? 2 : 4) + extraGap) * 1000);
            }
        }
        return t;
    }

    /**
     * The kernels of a process, in the order it launched them: a run of 99 short NCCL kernels 1 us apart (a warm-up:
     * too short to count), 50 us later a small NCCL kernel (a barrier) and, exactly 20 us after its end, loops timed
     * loops 150 us apart, all on stream 13; last, a kernel of another library on stream 7, which ran during the
     * warm-up.
     */
    private static List<Kernel> kernels(long t0, int device, int loops, double extraDuration, double extraGap) {
        List<Kernel> kernels = new ArrayList<>();
        long t = t0;
        for (int i = 0; i < 99; i++) {
            kernels.add(new Kernel(t, t + 10_000, device, 13, NCCL, -1));
            t += 11_000;
        }
        t += 50_000;
        kernels.add(new Kernel(t, t + 5_000, device, 13, "ncclDevKernel_AllReduce_Sum_u8_RING_LL(int, char)", -1));
        t += 25_000;
        for (int l = 0; l < loops; l++) {
            t = loop(t, device, extraDuration, extraGap, kernels) + 150_000;
        }
        kernels.add(new Kernel(t0 + 400_000, t0 + 401_000, device, 7, "void vectorAdd<float>(float*, int)", -1));
        return kernels;
    }

    /**
     * How a process launches its NCCL kernels, on thread `thread`, after `setup` calls of cuDeviceGetAttribute: for
     * each kernel the `before` calls, the launch (cuLaunchKernelEx, launchNs long), the `after` calls and, for every
     * `every`-th operation of a timed loop (its kernel's op % every == 0, the first included), one call of `extra`.
     */
    private record Host(int thread, int setup, List<String> before, long launchNs, List<String> after, String extra,
            int every) {
    }

    /** The CUPTI callback ids of the functions of the synthetic API traces (CUDA 13's); "cuda...": the runtime's. */
    private static final Map<String, Integer> CBID = Map.of("cuDeviceGetAttribute", 9, "cuEventRecord", 119,
            "cuEventQuery", 120, "cuStreamQuery", 125, "cuStreamWaitEvent", 295, "cuCtxGetCurrent", 304,
            "cuLaunchKernelEx", 652, "cudaGetDevice_v3020", 17, "cudaLaunchKernel_v7000", 211);

    /** C: launch, record an event; now and then a cuStreamQuery (4 times in a loop's 99 operations: 0.04 each). */
    private static Host cHost(int thread, int setup) {
        return new Host(thread, setup, List.of(), 3_000, List.of("cuEventRecord"), "cuStreamQuery", 25);
    }

    /** Java: as C, but a cuStreamWaitEvent before the launch, 2 cudaGetDevice after it, a slower launch, and now and
     * then a cuCtxGetCurrent (10 times in a loop's 99 operations: 0.10 each). */
    private static Host javaHost(int thread, int setup) {
        return new Host(thread, setup, List.of("cuStreamWaitEvent"), 3_500,
                List.of("cuEventRecord", "cudaGetDevice_v3020", "cudaGetDevice_v3020"), "cuCtxGetCurrent", 10);
    }

    private static String call(long start, long ns, String name, long thread, long correlation) {
        String kind = name.startsWith("cuda") ? "runtime" : "driver";
        return start + "," + (start + ns) + "," + kind + "," + CBID.get(name) + "," + thread + "," + correlation + "," + name;
    }

    /**
     * A trace as kernel_trace.c writes it (in no particular order) of a process that ran kernels (see kernels()), and
     * a note; with host, with correlation ids, and its -api.csv (in no particular order either); without, in the
     * format of the older kernel_trace.c, without correlation ids. The host runs ahead of the GPU: from 400 us
     * before the first kernel starts, it launches the NCCL kernels 12 us apart (the calls of each within that, 1 us
     * long but the launch, 1.5 us apart), each call taking the next correlation id (the setup calls first), and a
     * kernel's id is its launch's. Another thread launches the vectorAdd kernel (cudaLaunchKernel) while the first
     * timed loop is launched, and a third calls cuEventQuery every 50 us: neither launched a timed loop, so their
     * calls do not count.
     */
    private static void trace(Path file, List<Kernel> kernels, Host host) throws IOException {
        List<String> lines = new ArrayList<>();
        List<String> api = new ArrayList<>();
        long h0 = kernels.get(0).start() - 500_000;
        long t = h0 + 100_000;
        long corr = 0;
        for (int i = 0; host != null && i < host.setup(); i++) {
            api.add(call(h0 + i * 2_000, 1_000, "cuDeviceGetAttribute", host.thread(), ++corr));
        }
        for (Kernel k : kernels) {
            String id = "";
            if (host != null && k.stream() != 13) {
                id = "900000,";
                api.add(call(h0 + 2_000_000, 4_000, "cudaLaunchKernel_v7000", host.thread() + 1, 900_000));
            } else if (host != null) {
                for (int i = 0; i < host.before().size(); i++) {
                    api.add(call(t - 1_500 * (host.before().size() - i), 1_000, host.before().get(i), host.thread(), ++corr));
                }
                id = ++corr + ",";
                api.add(call(t, host.launchNs(), "cuLaunchKernelEx", host.thread(), corr));
                List<String> after = new ArrayList<>(host.after());
                if (k.op() >= 0 && k.op() % host.every() == 0) {
                    after.add(host.extra());
                }
                for (int i = 0; i < after.size(); i++) {
                    api.add(call(t + 4_000 + 1_500 * i, 1_000, after.get(i), host.thread(), ++corr));
                }
                t += 12_000;
            }
            lines.add(k.start() + "," + k.end() + "," + k.device() + "," + k.stream() + "," + id + k.name());
        }
        lines.add("# dropped 3");
        Collections.reverse(lines);
        Files.createDirectories(file.getParent());
        Files.writeString(file, String.join("\n", lines) + "\n");
        if (host != null) {
            for (long q = h0; q < t; q += 50_000) {
                api.add(call(q, 500, "cuEventQuery", host.thread() + 2, 800_000 + (q - h0) / 50_000));
            }
            Collections.reverse(api);
            Files.writeString(apiCsv(file), String.join("\n", api) + "\n");
        }
    }

    private static Path apiCsv(Path trace) {
        return trace.resolveSibling(trace.getFileName().toString().replace(".csv", "-api.csv"));
    }

    private Outcome report(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("python3", REPORT.toString(), "--cupti"));
        cmd.addAll(List.of(args));
        return exec(tmp, PYTHON_ENV, cmd);
    }

    /**
     * The traces of two runs: C, where rank 1's process (pid 1000, 7 setup calls) started first and ran two timed
     * loops; Java, kernels 0.5 and 1.5 us longer, gaps 1 us longer. All with correlation ids and -api.csv files.
     */
    private void traces() throws IOException {
        trace(tmp.resolve("c/trace-200.csv"), kernels(1_000_000_000L, 0, 1, 0, 0), cHost(200, 0));
        trace(tmp.resolve("c/trace-1000.csv"), kernels(999_999_900L, 1, 2, 0, 0), cHost(1000, 7));
        trace(tmp.resolve("java/trace-300.csv"), kernels(2_000_000_000L, 0, 1, 0.5, 1), javaHost(317, 3));
        trace(tmp.resolve("java/trace-301.csv"), kernels(2_000_000_005L, 1, 1, 1.5, 1), javaHost(342, 0));
    }

    /** The report of traces() without the API calls; -api.csv files beside the traces are no traces. */
    private static final String LOOPS = String.join("\n",
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
            "");

    @Test
    void timelineReportTakesTheTimedLoopsOutOfCuptiTraces() throws Exception {
        assumeOnPath("python3");
        traces();
        Outcome r = report(tmp.resolve("c").toString(), tmp.resolve("java").toString());
        assertEquals(0, r.status(), r.out());
        assertEquals(LOOPS, r.out());

        // the same from the traces of the older kernel_trace.c, without correlation ids (Java's here)
        trace(tmp.resolve("java/trace-300.csv"), kernels(2_000_000_000L, 0, 1, 0.5, 1), null);
        trace(tmp.resolve("java/trace-301.csv"), kernels(2_000_000_005L, 1, 1, 1.5, 1), null);
        assertTrue(Files.readString(tmp.resolve("java/trace-300.csv")).contains(
                ",0,13,ncclDevKernel_AllReduce_Sum_u8_RING_LL(int, char)\n"));
        r = report(tmp.resolve("c").toString(), tmp.resolve("java").toString());
        assertEquals(0, r.status(), r.out());
        assertEquals(LOOPS, r.out());

        // the warm-up run of 99 counts as a loop when 99 is enough
        r = report(tmp.resolve("c").toString(), tmp.resolve("java").toString(), "--min-run", "99");
        assertEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("| c | trace-200.csv | 0 | 2 | 199 | "), r.out());
        // a gap of exactly 20 us ends a loop; with a larger limit, the barrier kernel before it joins it (its name,
        // with a comma, read whole in either format)
        r = report(tmp.resolve("c").toString(), tmp.resolve("java").toString(), "--max-gap-us", "20.5");
        assertEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("| c | trace-200.csv | 0 | 1 | 101 | "), r.out());
        assertTrue(r.out().contains("| java | trace-300.csv | 0 | 1 | 101 | "), r.out());
        assertTrue(r.out().startsWith("Timed loops: runs of at least 100 NCCL kernels, each starting less than 20.5 us "), r.out());
    }

    /** The beginning of the --api part of the report. */
    private static final String API = String.join("\n",
            "",
            "API calls per operation (--api): on the thread that launched a timed loop's first kernel, the calls that "
                    + "start from that launch on and before the launch of its last kernel, over the loop's kernels - 1; "
                    + "the mean over the timed loops of a side's traces.",
            "", "");

    @Test
    void timelineReportWithApiCountsTheCallsPerOperationOnTheThreadThatLaunchedEachTimedLoop() throws Exception {
        assumeOnPath("python3");
        traces();
        Outcome r = report(tmp.resolve("c").toString(), tmp.resolve("java").toString(), "--api");
        assertEquals(0, r.status(), r.out());
        // per loop of 100 kernels, 99 operations: C launches and records an event (each 99 times, 1.00 per
        // operation), calls cuStreamQuery 4 times (0.04); Java also waits for an event before each launch and asks
        // for the device twice after, and calls cuCtxGetCurrent 10 times (0.10); neither the other threads' calls
        // (cuEventQuery, cudaLaunchKernel) nor the setup calls count. The same in each of the 3 C and 2 Java loops.
        assertEquals(LOOPS + API + String.join("\n",
                "c: API calls of 3 timed loops",
                "",
                "| kind | name | calls per operation | time per operation (us) |",
                "|---|---|---:|---:|",
                "| driver | cuEventRecord | 1.00 | 1.00 |",
                "| driver | cuLaunchKernelEx | 1.00 | 3.00 |",
                "| driver | cuStreamQuery | 0.04 | 0.04 |",
                "| | all | 2.04 | 4.04 |",
                "",
                "java: API calls of 2 timed loops",
                "",
                "| kind | name | calls per operation | time per operation (us) |",
                "|---|---|---:|---:|",
                "| runtime | cudaGetDevice_v3020 | 2.00 | 2.00 |",
                "| driver | cuEventRecord | 1.00 | 1.00 |",
                "| driver | cuLaunchKernelEx | 1.00 | 3.50 |",
                "| driver | cuStreamWaitEvent | 1.00 | 1.00 |",
                "| driver | cuCtxGetCurrent | 0.10 | 0.10 |",
                "| | all | 5.10 | 7.60 |",
                "",
                "C vs Java: the calls whose number per operation differs by 0.05 or more",
                "",
                "| kind | name | c | java | java - c |",
                "|---|---|---:|---:|---:|",
                "| runtime | cudaGetDevice_v3020 | 0.00 | 2.00 | +2.00 |",
                "| driver | cuStreamWaitEvent | 0.00 | 1.00 | +1.00 |",
                "| driver | cuCtxGetCurrent | 0.00 | 0.10 | +0.10 |",
                "",
                "API time per operation (sum of end - start): c 4.04 us, java 7.60 us, Java - C +3.56 us",
                ""), r.out());
    }

    /** The correlation id of the last NCCL kernel of a trace (the last one of its last timed loop). */
    private static String lastLaunch(Path trace) throws IOException {
        return Files.readAllLines(trace).stream().filter(l -> l.contains(NCCL)).map(l -> l.split(","))
                .max((a, b) -> Long.compare(Long.parseLong(a[0]), Long.parseLong(b[0]))).orElseThrow()[4];
    }

    /** The lines of an -api.csv with the given correlation id, rewritten by edit (null: removed). */
    private static void editApi(Path trace, String correlation, java.util.function.UnaryOperator<String> edit)
            throws IOException {
        List<String> lines = new ArrayList<>();
        for (String l : Files.readAllLines(apiCsv(trace))) {
            String e = l.split(",")[5].equals(correlation) ? edit.apply(l) : l;
            if (e != null) {
                lines.add(e);
            }
        }
        Files.writeString(apiCsv(trace), String.join("\n", lines) + "\n");
    }

    @Test
    void timelineReportWithApiLeavesOutTheLoopsWhoseLaunchesItCannotFindAndSaysWhy() throws Exception {
        assumeOnPath("python3");
        traces();
        // C: the launch record of the last kernel of trace-1000's second loop is missing (dropped); that of
        // trace-200's loop is on another thread than its first kernel's; trace-1000's first loop is left
        Path c1000 = tmp.resolve("c/trace-1000.csv");
        String missing = lastLaunch(c1000);
        editApi(c1000, missing, l -> null);
        Path c200 = tmp.resolve("c/trace-200.csv");
        String other = lastLaunch(c200);
        editApi(c200, other, l -> l.replace(",200," + other + ",", ",201," + other + ","));
        // Java: trace-300 from the older tracer, trace-301 without its -api.csv
        trace(tmp.resolve("java/trace-300.csv"), kernels(2_000_000_000L, 0, 1, 0.5, 1), null);
        Files.delete(apiCsv(tmp.resolve("java/trace-301.csv")));
        Outcome r = report(tmp.resolve("c").toString(), tmp.resolve("java").toString(), "--api");
        assertEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("- c trace-1000.csv: the timed loop of device 1, stream 13 starting at "), r.out());
        assertTrue(r.out().contains(": no API record of the launch of its first or last kernel (correlation ids "), r.out());
        assertTrue(r.out().contains(", " + missing + "): left out of the API calls\n"), r.out());
        assertTrue(r.out().contains("- c trace-200.csv: the timed loop of device 0, stream 13 starting at "), r.out());
        assertTrue(r.out().contains(": its first and last kernels were launched on different threads (200, 201): left out of "
                + "the API calls\n"), r.out());
        assertTrue(r.out().contains("- java trace-300.csv: the timed loop of device 0, stream 13 starting at "), r.out());
        assertTrue(r.out().contains(": no correlation ids in the trace (a kernel_trace.c older than KERNEL_TRACE_API): left "
                + "out of the API calls\n"), r.out());
        assertTrue(r.out().contains("- java trace-301.csv: no trace-301-api.csv (KERNEL_TRACE_API=1 writes it): no API "
                + "calls\n"), r.out());
        assertTrue(r.out().endsWith(API + String.join("\n",
                "c: API calls of 1 timed loop",
                "",
                "| kind | name | calls per operation | time per operation (us) |",
                "|---|---|---:|---:|",
                "| driver | cuEventRecord | 1.00 | 1.00 |",
                "| driver | cuLaunchKernelEx | 1.00 | 3.00 |",
                "| driver | cuStreamQuery | 0.04 | 0.04 |",
                "| | all | 2.04 | 4.04 |",
                "",
                "java: API calls of 0 timed loops",
                "")), r.out());
        // without --api, none of it
        r = report(tmp.resolve("c").toString(), tmp.resolve("java").toString());
        assertEquals(0, r.status(), r.out());
        assertFalse(r.out().contains("API"), r.out());
    }

    @Test
    void timelineReportCuptiNeedsTracesOfBothSidesAndSaysWhichHaveNoLoop() throws Exception {
        assumeOnPath("python3");
        traces();
        Path empty = Files.createDirectories(tmp.resolve("empty"));
        Outcome r = report(tmp.resolve("c").toString(), empty.toString());
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
