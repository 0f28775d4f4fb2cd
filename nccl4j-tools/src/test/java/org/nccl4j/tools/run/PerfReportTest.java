package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.tools.run.ScriptKit.PYTHON_ENV;
import static org.nccl4j.tools.run.ScriptKit.ROOT;
import static org.nccl4j.tools.run.ScriptKit.assertLines;
import static org.nccl4j.tools.run.ScriptKit.assumeOnPath;
import static org.nccl4j.tools.run.ScriptKit.exec;
import static org.nccl4j.tools.run.ScriptKit.result;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.tools.run.ScriptKit.Outcome;

/**
 * {@code scripts/bench/perf_report.py}, the report of {@code scripts/bench/perf-compare.sh}, on synthetic JSON in nccl4j-perf's -J
 * shape with known numbers: every key of benchmark-latest.json and the key lines of the markdown, worked out by hand in the
 * comments. Times are multiples of 0.5 us (medians of two: of 0.25 us) so that every figure is exact in binary and
 * no printed value sits on a rounding tie. Skipped where python3 is missing.
 */
@Timeout(120)
class PerfReportTest {
    private static final Path REPORT = ROOT.resolve("scripts/bench/perf_report.py");
    /** The small sizes of every fixture: times are given as {at 8 B, at 1 KiB}. */
    private static final long[] SIZES = {8, 1024};
    private static final long MIB = 1 << 20;

    @TempDir
    Path tmp;

    @BeforeEach
    void python() {
        assumeOnPath("python3");
    }

    /** perf_report.py on json, writing to docs; returns the markdown (benchmark-latest.json is left in docs). */
    private String report(Path json, Path docs, String... extra) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("python3", REPORT.toString(), "--json-dir", json.toString(), "--docs",
                docs.toString(), "--date", "2026-01-02", "--machine", "2 x Test GPU"));
        cmd.addAll(List.of(extra));
        Outcome r = exec(tmp, PYTHON_ENV, cmd);
        assertEquals(0, r.status(), String.join(" ", cmd) + " failed:\n" + r.out());
        // it prints latest.json as it writes it
        assertEquals(Files.readString(docs.resolve("benchmark-latest.json")), r.out());
        return Files.readString(docs.resolve("2026-01-02-benchmark.md"));
    }

    // ---------------------------------------------------------------- fixture writing (the -J schema)

    private static double[] t(double... v) {
        return v;
    }

    /** A document as nccl_perf_baseline, nccl4j-perf or torch_allreduce.py write it; repeats: init_repeat_ms or null. */
    private static void doc(Path dir, String name, double initMs, double[] repeats, List<String> results) throws IOException {
        boolean c = name.startsWith("c-");
        boolean g = name.startsWith("java-g-");
        StringBuilder s = new StringBuilder("{\"tool\": \"")
                .append(c ? "nccl_perf_baseline" : name.startsWith("torch") ? "torch.distributed" : "nccl4j-perf")
                .append("\", \"tool_version\": \"1\", \"date\": \"2026-01-02T00:00:00Z\", \"hostname\": \"test\", ")
                .append("\"nccl_version\": \"2.99.1\", \"nccl_version_code\": 29901, \"ranks\": 2, \"processes\": ")
                .append(g ? 1 : 2).append(", \"gpus_per_process\": ").append(g ? 2 : 1).append(", \"mode\": \"")
                .append(g ? "single-process" : "process-per-gpu").append("\", \"init_ms\": ").append(initMs);
        if (repeats != null) {
            s.append(", \"init_repeat_ms\": [");
            for (int i = 0; i < repeats.length; i++) {
                s.append(i > 0 ? ", " : "").append(repeats[i]);
            }
            s.append("]");
        }
        s.append(", \"config\": {\"iters\": 1000, \"warmup_iters\": 1000}, \"results\": [\n  ")
                .append(String.join(",\n  ", results)).append("\n]}\n");
        Files.writeString(dir.resolve(name + ".json"), s.toString());
    }

    /**
     * A small all_reduce run: oop and ip are the times at 8 B and 1 KiB out of place and in place (ip null: no
     * in-place results); alloc: the Java runs' alloc_bytes (null: none, as C writes).
     */
    private static void small(Path dir, String name, double initMs, double[] oop, double[] ip, Double alloc)
            throws IOException {
        String extra = "\"wrong\": null" + (alloc == null ? "" : ", \"alloc_bytes\": " + alloc);
        boolean graph = name.contains("-graph-");
        List<String> rs = new ArrayList<>();
        for (int i = 0; i < SIZES.length; i++) {
            rs.add(result("all_reduce", SIZES[i], "out-of-place", graph, oop[i], SIZES[i] / oop[i] / 1000, extra));
            if (ip != null) {
                rs.add(result("all_reduce", SIZES[i], "in-place", graph, ip[i], SIZES[i] / ip[i] / 1000, extra));
            }
        }
        doc(dir, name, initMs, null, rs);
    }

    /** A large-message run: bus bandwidths of all_reduce 32 MiB, 64 MiB out of place and in place, 1 GiB, broadcast 64 MiB. */
    private static void large(Path dir, String name, double initMs, double ar32, double ar64, double ar64ip, Double ar1g,
            double bc64) throws IOException {
        List<String> rs = new ArrayList<>();
        rs.add(result("all_reduce", 32 * MIB, "out-of-place", false, 300.0, ar32, "\"wrong\": null"));
        rs.add(result("all_reduce", 64 * MIB, "out-of-place", false, 300.0, ar64, "\"wrong\": null"));
        rs.add(result("all_reduce", 64 * MIB, "in-place", false, 300.0, ar64ip, "\"wrong\": null"));
        if (ar1g != null) {
            rs.add(result("all_reduce", 1024 * MIB, "out-of-place", false, 4000.0, ar1g, "\"wrong\": null"));
        }
        rs.add(result("broadcast", 64 * MIB, "out-of-place", false, 200.0, bc64, "\"wrong\": null"));
        doc(dir, name, initMs, null, rs);
    }

    /** An --init_repeats run: its first init and the re-created communicators' times. */
    private static void init(Path dir, String name, double initMs, double... repeats) throws IOException {
        doc(dir, name, initMs, repeats, List.of(result("all_reduce", 8, "out-of-place", false, 20.0, 0.0004, "\"wrong\": null")));
    }

    /**
     * Every file perf-compare.sh writes, 4 C and 4 Java small runs with a clear fast (~6 us) and slow (~9.5 us)
     * state: c-3 falls into the slow state after 8 B, java-np-4 leaves it after 8 B.
     */
    private Path fullSet() throws IOException {
        Path d = Files.createDirectories(tmp.resolve("json"));
        //                                          out of place    in place
        //                                          8 B   1 KiB     8 B   1 KiB
        small(d, "c-eager-small-1", 300, t(6.0, 6.5), t(6.0, 6.0), null);
        small(d, "c-eager-small-2", 310, t(9.0, 9.5), t(9.0, 9.0), null);
        small(d, "c-eager-small-3", 320, t(6.5, 9.5), t(6.5, 6.5), null);
        small(d, "c-eager-small-4", 330, t(6.5, 6.5), t(7.0, 9.0), null);
        small(d, "java-np-eager-small-1", 340, t(7.0, 7.0), t(6.5, 6.5), 0.0);
        small(d, "java-np-eager-small-2", 350, t(9.5, 10.0), t(9.5, 9.5), 0.25);
        small(d, "java-np-eager-small-3", 360, t(6.0, 6.5), t(6.5, 7.0), 0.0);
        small(d, "java-np-eager-small-4", 370, t(10.0, 7.0), t(9.0, 9.0), 0.0);
        small(d, "java-g-eager-small-1", 500, t(11.0, 11.5), t(11.0, 11.0), 0.0);
        small(d, "java-g-eager-small-2", 510, t(12.0, 12.5), t(12.0, 12.0), 16.0);

        small(d, "c-graph-small-1", 340, t(5.0, 5.5), null, null);
        small(d, "c-graph-small-2", 350, t(5.5, 5.5), null, null);
        small(d, "c-graph-small-3", 360, t(6.0, 6.0), null, null);
        small(d, "java-np-graph-small-1", 380, t(5.5, 6.0), null, 0.0);
        small(d, "java-np-graph-small-2", 390, t(5.5, 5.75), null, 0.0);
        small(d, "java-np-graph-small-3", 400, t(7.0, 6.5), null, 0.0);
        small(d, "java-g-graph-small-1", 520, t(6.0, 6.25), null, 0.0);

        //                                         ar 32M  ar 64M  ip     ar 1G  bc 64M
        large(d, "c-eager-large-1", 370, 200.0, 200.0, 100.0, 256.0, 300.0);
        large(d, "c-eager-large-2", 380, 200.0, 200.0, 102.0, 256.0, 300.0);
        large(d, "c-eager-large-3", 390, 200.0, 200.0, 104.0, 256.0, 300.0);
        large(d, "java-np-eager-large-1", 410, 100.0, 200.0, 99.0, 257.0, 297.0);
        large(d, "java-np-eager-large-2", 420, 100.0, 200.0, 100.0, 256.0, 298.0);
        large(d, "java-np-eager-large-3", 430, 100.0, 200.0, 101.0, 258.0, 299.0);
        large(d, "java-g-eager-large-1", 530, 100.0, 199.0, 98.0, null, 297.5);

        init(d, "c-init-1", 400, 20.0, 22.0, 30.0);
        init(d, "c-init-2", 410, 21.0, 23.0);
        init(d, "java-np-init-1", 440, 25.0, 26.0, 40.0);
        init(d, "java-np-init-2", 450, 24.0, 27.0);
        init(d, "java-g-init-1", 540, 45.0, 47.0);

        // torch: in place, 3 repeats in one document
        List<String> torch = new ArrayList<>();
        double[][] tt = {{30.0, 40.0}, {31.0, 41.0}, {35.0, 42.0}};
        for (int rep = 0; rep < tt.length; rep++) {
            for (int i = 0; i < SIZES.length; i++) {
                torch.add(result("all_reduce", SIZES[i], "in-place", false, tt[rep][i], 0.001, "\"wrong\": null, \"repeat\": " + rep));
            }
        }
        doc(d, "torch-eager", 600.5, null, torch);

        doc(d, "c-check", 300, null, List.of(result("all_reduce", 1024, "out-of-place", false, 10.0, 0.1, "\"wrong\": 0"),
                result("broadcast", 1024, "in-place", false, 10.0, 0.1, "\"wrong\": 0")));
        doc(d, "java-np-check", 300, null, List.of(result("all_reduce", 1024, "out-of-place", false, 10.0, 0.1,
                "\"wrong\": 2, \"alloc_bytes\": 0.0"), result("broadcast", 1024, "in-place", false, 10.0, 0.1,
                "\"wrong\": 0, \"alloc_bytes\": 0.0")));
        // no java-g-check: that run failed
        return d;
    }

    // ---------------------------------------------------------------- a full set

    @Test
    void latestJsonHoldsEveryKeyFromAFullSet() throws Exception {
        Path docs = tmp.resolve("docs");
        report(fullSet(), docs, "--png", "x.png", "--failures", "0");
        // native_small_us: C at 8 B, out of place: 6.0 9.0 6.5 6.5 -> median (6.5 + 6.5) / 2 = 6.5
        // java_small_us: Java at 8 B: 7.0 9.5 6.0 10.0 -> sorted 6.0 7.0 9.5 10.0 -> (7.0 + 9.5) / 2 = 8.25
        // torch_small_us: 30.0 31.0 35.0 -> 31.0
        // small_overhead_us: max(8 B: 8.25 - 6.5 = 1.75; 1 KiB: C 6.5 9.5 9.5 6.5 -> 8.0, Java 7.0 10.0 6.5 7.0 -> 7.0,
        //   7.0 - 8.0 = -1.0) = 1.75
        // graph_overhead_us: C 8 B 5.0 5.5 6.0 -> 5.5, 1 KiB 5.5 5.5 6.0 -> 5.5; Java 8 B 5.5 5.5 7.0 -> 5.5, 1 KiB
        //   6.0 5.75 6.5 -> 6.0; max(0.0, 0.5) = 0.5
        // min_busbw_ratio_64MiB_up: all_reduce 64 MiB in place, Java 99 100 101 -> 100 over C 100 102 104 -> 102:
        //   0.98039 -> 0.9804 (32 MiB's 0.5 is below 64 MiB: left out; broadcast 298 / 300 = 0.9933; the rest >= 1)
        // init_overhead_ms: init_ms of every C process (small 300..330, graph 340..360, large 370..390, init 400 410:
        //   12 values 300..410 step 10) -> (350 + 360) / 2 = 355; Java (340..370, 380..400, 410..430, 440 450) -> 395;
        //   395 - 355 = 40
        // init_repeat_overhead_ms: C 20 22 30 21 23 -> 22; Java 25 26 40 24 27 -> 26; 26 - 22 = 4
        // alloc_bytes_per_call: the Java (one process per GPU) eager runs' max alloc_bytes: java-np-eager-small-2's 0.25
        // small_overhead_fast_us: the max of the fast-point Java - C below: max(-0.5, 0.5) = 0.5
        // native_graph_small_us, java_graph_small_us: the graph medians at 8 B above, 5.5 and 5.5
        // all_reduce 64 MiB out of place: C 200 200 200, Java 200 200 200 -> 200.0 and 200.0, ratio 1.0; in place
        //   100 / 102 = 0.9804, as above; no alltoall: the min without it is the min, 0.9804
        // all_reduce 1 GiB: C 256 256 256 -> 256.0, Java 257 256 258 -> 257.0, 257 / 256 = 1.00390625 -> 1.0039
        // native_init_ms, java_init_ms: the medians of init_overhead_ms above, 355 and 395; torch_init_ms: its 600.5
        // small_repeats, large_repeats: 4 C small runs, 3 C large ones
        String keys = """
                {
                  "date": "2026-01-02",
                  "machine": "2 x Test GPU",
                  "nccl_version": "2.99.1",
                  "ranks": 2,
                  "native_small_us": 6.5,
                  "java_small_us": 8.25,
                  "torch_small_us": 31.0,
                  "small_overhead_us": 1.75,
                  "graph_overhead_us": 0.5,
                  "min_busbw_ratio_64MiB_up": 0.9804,
                  "init_overhead_ms": 40.0,
                  "init_repeat_overhead_ms": 4.0,
                  "alloc_bytes_per_call": 0.25,
                  "small_overhead_fast_us": 0.5,
                  "native_graph_small_us": 5.5,
                  "java_graph_small_us": 5.5,
                  "native_busbw_64MiB_gbps": 200.0,
                  "java_busbw_64MiB_gbps": 200.0,
                  "busbw_ratio_64MiB": 1.0,
                  "busbw_ratio_64MiB_in_place": 0.9804,
                  "min_busbw_ratio_64MiB_up_but_alltoall": 0.9804,
                  "native_busbw_1GiB_gbps": 256.0,
                  "java_busbw_1GiB_gbps": 257.0,
                  "busbw_ratio_1GiB": 1.0039,
                  "native_init_ms": 355.0,
                  "java_init_ms": 395.0,
                  "torch_init_ms": 600.5,
                  "small_repeats": 4,
                  "large_repeats": 3,
                """;
        // every number is this run's report's
        assertEquals(keys + sources(keys, "2026-01-02-benchmark.md") + "}\n",
                Files.readString(docs.resolve("benchmark-latest.json")));
    }

    /** The "sources" object that names report for every number of keys (lines "  \"k\": v,"), and its comma. */
    private static String sources(String keys, String report) {
        StringBuilder s = new StringBuilder("  \"sources\": {\n");
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^  \"(\\w+)\": -?\\d").matcher(keys);
        List<String> lines = new ArrayList<>();
        while (m.find()) {
            lines.add("    \"" + m.group(1) + "\": \"" + report + "\"");
        }
        return s.append(String.join(",\n", lines)).append("\n  }\n").toString();
    }

    @Test
    void theFrontiersAndDdpsKeysInTheFileAreKeptAndNothingElseIs() throws Exception {
        Path docs = tmp.resolve("docs");
        Files.createDirectories(docs);
        Files.writeString(docs.resolve("benchmark-latest.json"), "{\"java_small_us\": 99.0, \"ddp_step_ms_4gpu\": 5.994, "
                + "\"symmetric_small_us\": 6.08, \"stale_key\": 1}\n");
        report(fullSet(), docs, "--png", "x.png", "--failures", "0");
        String json = Files.readString(docs.resolve("benchmark-latest.json"));
        assertTrue(json.contains("  \"java_small_us\": 8.25,\n"), "its own keys are its run's: " + json);
        assertTrue(json.contains("  \"large_repeats\": 3,\n  \"ddp_step_ms_4gpu\": 5.994,\n"
                + "  \"symmetric_small_us\": 6.08,\n  \"sources\": {\n"),
                "the other reports' keys follow, as they were: " + json);
        assertTrue(json.endsWith("    \"large_repeats\": \"2026-01-02-benchmark.md\"\n  }\n}\n"),
                "without a source in the file, they have none: " + json);
        assertTrue(!json.contains("stale_key"), json);
    }

    @Test
    void aKeyWhoseSourceIsAnotherReportStaysWithItAndTheReplacedReportsKeysGo() throws Exception {
        Path docs = tmp.resolve("docs");
        Files.createDirectories(docs);
        Files.writeString(docs.resolve("benchmark-latest.json"), """
                {"java_small_us": 99.0, "old_figure_us": 1.5, "sharded_step_ms_2gpu": 734.873, "ddp_step_ms_2gpu": 5.8,
                 "unsourced": 2, "sources": {"java_small_us": "old-benchmark.md", "native_small_us": "old-benchmark.md",
                 "old_figure_us": "old-benchmark.md", "sharded_step_ms_2gpu": "2026-11-28-sharded.md",
                 "ddp_step_ms_2gpu": "2026-11-26-frontier.md"}}
                """);
        report(fullSet(), docs, "--png", "x.png", "--failures", "0");
        String json = Files.readString(docs.resolve("benchmark-latest.json"));
        assertTrue(json.contains("  \"large_repeats\": 3,\n  \"sharded_step_ms_2gpu\": 734.873,\n"
                + "  \"ddp_step_ms_2gpu\": 5.8,\n  \"sources\": {\n"
                + "    \"ranks\": \"2026-01-02-benchmark.md\",\n"), json);
        assertTrue(json.endsWith("    \"large_repeats\": \"2026-01-02-benchmark.md\",\n"
                + "    \"sharded_step_ms_2gpu\": \"2026-11-28-sharded.md\",\n"
                + "    \"ddp_step_ms_2gpu\": \"2026-11-26-frontier.md\"\n  }\n}\n"), json);
        assertTrue(json.contains("  \"java_small_us\": 8.25,\n"), json);
        // the run before this one (old-benchmark.md, the source of native_small_us) is replaced: its other keys go
        assertFalse(json.contains("old_figure_us"), json);
        assertFalse(json.contains("old-benchmark.md"), json);
        assertFalse(json.contains("unsourced"), json);
    }

    @Test
    void theSmallMessageTablesModeSplitAndFastPoints() throws Exception {
        String md = report(fullSet(), tmp.resolve("docs"), "--png", "x.png", "--failures", "0");
        assertLines(md, "| native_small_us | 6.500 |", "| java_small_us | 8.250 |", "| torch_small_us | 31.000 |",
                "| small_overhead_us | 1.750 |");
        assertLines(md, "| small_overhead_fast_us | 0.500 |");
        // medians as in latestJsonHoldsEveryKeyFromAFullSet; Java / C: 8.25 / 6.5 = 1.2692, 7.0 / 8.0 = 0.875;
        // Java -g: 8 B 11.0 12.0 -> 11.5, 1 KiB 11.5 12.5 -> 12.0; torch 1 KiB: 40 41 42 -> 41
        assertLines(md, "## Small all_reduce, eager (float sum, out of place; median of 4 runs of 1000 iterations)", "",
                "| size | C (us) | Java (us) | Java - C (us) | Java / C | Java -g (us) | torch (us, in place) |",
                "|---:|---:|---:|---:|---:|---:|---:|",
                "| 8 B | 6.50 | 8.25 | 1.75 | 1.269 | 11.50 | 31.00 |",
                "| 1 KiB | 8.00 | 7.00 | -1.00 | 0.875 | 12.00 | 41.00 |", "",
                // diffs 1.75 and -1.0: mean = median = 0.375; -1.0 <= 0: 1 of 2
                "Over the 2 sizes: mean of Java - C +0.375 us, median +0.375 us; Java at or below C at 1 of 2 sizes.");
        // each run's median of its two out-of-place times: C (6.0+6.5)/2, (9.0+9.5)/2, (6.5+9.5)/2, (6.5+6.5)/2;
        // Java (7.0+7.0)/2, (9.5+10.0)/2, (6.0+6.5)/2, (10.0+7.0)/2
        assertLines(md, "Each run's median over 8 B..4 KiB (us), in run order; C: 6.25, 9.25, 8.00, 6.50; "
                + "Java: 7.00, 9.75, 6.25, 8.50.");
        // Otsu over 6.25 6.25 6.50 7.00 | 8.00 8.50 9.25 9.75: sums of squares within 0.375 + 1.8125 = 2.1875, less than
        // with the cut one lower (0.0417 + 4.625) or higher (2.175 + 0.7917); means 6.5 and 8.875 are >= 1 us apart;
        // cut (7.0 + 8.0) / 2 = 7.5. Fast: C 1, 4 and Java 1, 3; slow: C 2, 3 and Java 2, 4.
        // fast: C 8 B 6.0 6.5 -> 6.25, 1 KiB 6.5 6.5 -> 6.5; Java 8 B 7.0 6.0 -> 6.5, 1 KiB 7.0 6.5 -> 6.75:
        //   +0.25 +0.25, mean +0.25
        // slow: C 8 B 9.0 6.5 -> 7.75, 1 KiB 9.5 9.5 -> 9.5; Java 8 B 9.5 10.0 -> 9.75, 1 KiB 10.0 7.0 -> 8.5:
        //   +2.00 -1.00, mean +0.50
        assertLines(md, "Split at 7.50 us into the two modes (Otsu's threshold over the runs' medians), Java - C per size "
                + "within each mode:", "",
                "| mode | runs (C, Java) | Java - C per size, 8 B..64 KiB (us) | mean |",
                "|---|---|---|---:|",
                "| fast | 2, 2 | +0.25 +0.25 | +0.25 |",
                "| slow | 2, 2 | +2.00 -1.00 | +0.50 |");
        // fast points, out of place:
        //   8 B: fastest 6.0 -> below 7.0: C 6.0 6.5 6.5 (3, median 6.5), Java 6.0 (1: 7.0 is not below) -> -0.50
        //   1 KiB: fastest 6.5 -> below 7.5: C 6.5 6.5 (2, 6.5), Java 7.0 6.5 7.0 (3, 7.0) -> +0.50
        // in place:
        //   8 B: C 6.0 9.0 6.5 7.0, Java 6.5 9.5 6.5 9.0; below 7.0: C 6.0 6.5 (2, 6.25), Java 6.5 6.5 (2, 6.5) -> 0.25
        //   1 KiB: C 6.0 9.0 6.5 9.0, Java 6.5 9.5 7.0 9.0; below 7.0: C 6.0 6.5 (2, 6.25), Java 6.5 (1) -> 0.25
        assertLines(md, "Fast points only: at each size, a run's time counts when it is less than 1.0 us above the fastest "
                + "time of any C or Java run at that size, so that a run that was in the slow state (or fell into it "
                + "midway) drops out of the sizes it was slow at only; the columns are the medians of those times and how "
                + "many of the 4 Java and 4 C runs they are (small_overhead_fast_us: the largest Java - C out of place).", "",
                "| size | C fast (us) | Java fast (us) | Java - C (us) | fast points (Java / C) | in place: C fast (us) "
                        + "| Java fast (us) | Java - C (us) | fast points (Java / C) |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
                "| 8 B | 6.50 | 6.00 | -0.50 | 1 / 3 | 6.25 | 6.50 | 0.25 | 2 / 2 |",
                "| 1 KiB | 6.50 | 7.00 | 0.50 | 3 / 2 | 6.25 | 6.50 | 0.25 | 1 / 2 |", "",
                "In place (same runs):");
        // in place, all runs: 8 B C 6.0 6.5 7.0 9.0 -> 6.75, Java 6.5 6.5 9.0 9.5 -> 7.75; 1 KiB C 6.0 6.5 9.0 9.0 -> 7.75,
        // Java 6.5 7.0 9.0 9.5 -> 8.0; Java -g 11.0 12.0 -> 11.5
        assertLines(md, "| 8 B | 6.75 | 7.75 | 1.00 | 11.50 |", "| 1 KiB | 7.75 | 8.00 | 0.25 | 11.50 |");
        // CUDA graphs: medians as for graph_overhead_us; Java -g: its one run
        assertLines(md, "## Small all_reduce, CUDA graph (100 iterations captured, the graph launched 10 times; median of 3 runs)",
                "", "| size | C (us) | Java (us) | Java - C (us) | Java -g (us) |", "|---:|---:|---:|---:|---:|",
                "| 8 B | 5.50 | 5.50 | 0.00 | 6.00 |", "| 1 KiB | 5.50 | 6.00 | 0.50 | 6.25 |");
    }

    @Test
    void theLargeMessageInitAllocationAndCheckSections() throws Exception {
        String md = report(fullSet(), tmp.resolve("docs"), "--png", "x.png", "--failures", "0");
        assertFalse(md.contains("run(s) failed"), md);
        assertLines(md, "| min_busbw_ratio_64MiB_up | 0.980 |", "| init_overhead_ms | 40.000 |",
                "| init_repeat_overhead_ms | 4.000 |", "| alloc_bytes_per_call | 0.250 |");
        // medians of 3 runs; 32 MiB is below 64 MiB: no row; Java -g has no 1 GiB result: —
        // ratios 200/200 = 1.000, 100/102 = 0.980, 257/256 = 1.0039, 298/300 = 0.9933
        assertLines(md, "## Every operation at 64 MiB and up (bus bandwidth, GB/s; -n 100, median of 3 runs)", "",
                "| operation | size | placement | C | Java | Java -g | Java / C |",
                "|---|---:|---|---:|---:|---:|---:|",
                "| all_reduce | 64 MiB | out-of-place | 200.00 | 200.00 | 199.00 | 1.000 |",
                "| all_reduce | 64 MiB | in-place | 102.00 | 100.00 | 98.00 | 0.980 |",
                "| all_reduce | 1 GiB | out-of-place | 256.00 | 257.00 | — | 1.004 |",
                "| broadcast | 64 MiB | out-of-place | 300.00 | 298.00 | 297.50 | 0.993 |", "",
                // the two below 0.995, each run in file order
                "Every run of the cases below 0.995 (GB/s, in run order), to tell a per-run level from a steady gap. Where "
                        + "the runs of both sides fall into two levels at least 5% apart (Otsu's split over all of them), "
                        + "each level's medians are compared too:", "",
                // one level each: 99..104 and 297..300 lie within 5 %, so no sub-item
                "- all_reduce 64 MiB in-place: C 100.0 102.0 104.0; Java 99.0 100.0 101.0",
                "- broadcast 64 MiB out-of-place: C 300.0 300.0 300.0; Java 297.0 298.0 299.0", "",
                "## all_reduce bus bandwidth, 8 B to 1 GiB", "", "![all_reduce bus bandwidth](x.png)");
        // first: C 12 processes -> 355.0, Java 12 -> 395.0, 40.0; Java -g 500 510 520 530 540 -> 520.0; torch 600.5
        // re-created: 5 samples each, C 22.0, Java 26.0, 4.0; Java -g 45 47 -> 46.0
        assertLines(md, "| first (processes: C 12, Java 12) | 355.0 | 395.0 | 40.0 | 520.0 | 600.5 |",
                "| re-created (samples: C 5, Java 5) | 22.0 | 26.0 | 4.0 | 46.0 | |");
        // quartiles (statistics.quantiles, exclusive: positions 1.5, 3, 4.5 of 5): C 20 21 22 23 30 -> 20.5 22 26.5;
        // Java 24 25 26 27 40 -> 24.5 26 33.5
        assertLines(md, "Spread of the re-created times: C min 20.0, quartiles 20.5 / 22.0 / 26.5, max 30.0; Java min 24.0, "
                + "quartiles 24.5 / 26.0 / 33.5, max 40.0.");
        assertLines(md, "- one process per GPU (one `allReduce` call per iteration): max 0.250",
                "- one process, `-g 2` (`Nccl.groupStart()`, 2 `allReduce` calls, `Nccl.groupEnd()` per iteration): max 16.000");
        assertFalse(md.contains("JMH with `-prof gc`"), md);
        assertLines(md, "| run | wrong elements |", "|---|---:|", "| c-check | 0 |", "| java-np-check | 2 |",
                "| java-g-check | run missing |");
    }

    /**
     * A case whose runs sit at one of two levels, as NCCL's alltoall at 64 MiB in place does from process to process:
     * the medians of all runs compare one side's upper level with the other's lower one, so each level is compared
     * on its own as well. A level that one side never reached shows — for that side.
     */
    @Test
    void runsAtTwoLevelsAreComparedWithinEachLevel() throws Exception {
        Path d = fullSet();
        //                                         ar 32M  ar 64M  ip     ar 1G  bc 64M
        large(d, "c-eager-large-1", 370, 200.0, 200.0, 100.0, 256.0, 330.0);
        large(d, "c-eager-large-2", 380, 200.0, 200.0, 102.0, 256.0, 300.0);
        large(d, "c-eager-large-3", 390, 200.0, 200.0, 104.0, 256.0, 330.0);
        large(d, "java-np-eager-large-1", 410, 100.0, 200.0, 99.0, 257.0, 300.0);
        large(d, "java-np-eager-large-2", 420, 100.0, 200.0, 100.0, 256.0, 329.0);
        large(d, "java-np-eager-large-3", 430, 100.0, 200.0, 101.0, 258.0, 301.0);
        String md = report(d, tmp.resolve("docs"), "--failures", "0");
        // broadcast: C median 330, Java median 301 -> 0.912. Otsu over 300 300 301 329 330 330 splits after 301
        // (means 300.3 and 329.7, 8.9 % of the upper apart) at (301 + 329) / 2 = 315; above: C 330 330 -> 330.0,
        // Java 329 -> 329.0, 329 / 330 = 0.99697 -> 0.997; below: C 300 -> 300.0, Java 300 301 -> 300.5, 1.00167 -> 1.002
        assertLines(md, "| broadcast | 64 MiB | out-of-place | 330.00 | 301.00 | 297.50 | 0.912 |");
        assertLines(md, "- broadcast 64 MiB out-of-place: C 330.0 300.0 330.0; Java 300.0 329.0 301.0",
                "  - two levels, split at 315.0 GB/s: above it C 330.0 (2 runs) and Java 329.0 (1 run), Java / C 0.997; "
                        + "below it C 300.0 (1 run) and Java 300.5 (2 runs), Java / C 1.002", "");

        // Java never at the upper level: its side of that level is —, and so is the ratio
        large(d, "java-np-eager-large-2", 420, 100.0, 200.0, 100.0, 256.0, 299.0);
        md = report(d, tmp.resolve("docs2"), "--failures", "0");
        assertLines(md, "- broadcast 64 MiB out-of-place: C 330.0 300.0 330.0; Java 300.0 299.0 301.0",
                "  - two levels, split at 315.5 GB/s: above it C 330.0 (2 runs) and Java — (0 runs), Java / C —; "
                        + "below it C 300.0 (1 run) and Java 300.0 (3 runs), Java / C 1.000", "");
    }

    @Test
    void failedRunsAreNoticedAtTheTopAndChangeNoFigure() throws Exception {
        Path json = fullSet();
        String ok = report(json, tmp.resolve("ok"), "--png", "x.png", "--failures", "0");
        String md = report(json, tmp.resolve("failed"), "--png", "x.png", "--failures", "2");
        String notice = "**2 run(s) failed**: the tables below miss their figures (see the raw logs).";
        assertLines(md, "# nccl4j performance against C, 2026-01-02", "",
                "Machine: 2 x Test GPU. NCCL 2.99.1, 2 ranks. Made by `scripts/bench/perf-compare.sh` (raw logs and JSON in its "
                        + "output directory); every figure is a CUDA-event time over the timed loop, as nccl4j-perf and "
                        + "nccl_perf_baseline take it (see `scripts/bench/native/nccl_perf_baseline.cu`).", "", notice, "");
        assertEquals(ok, md.replace(notice + "\n\n", ""));
        assertEquals(Files.readString(tmp.resolve("ok/benchmark-latest.json")), Files.readString(tmp.resolve("failed/benchmark-latest.json")));
    }

    // ---------------------------------------------------------------- edge cases

    @Test
    void withoutSlowRunsThereIsNoModeSplitAndASizeWithoutAFastJavaPointIsLeftOut() throws Exception {
        Path d = Files.createDirectories(tmp.resolve("json"));
        // all runs in one state; only the small eager runs (no in-place results, no alloc_bytes), nothing else
        small(d, "c-eager-small-1", 300, t(6.0, 6.0), null, null);
        small(d, "c-eager-small-2", 310, t(6.5, 6.0), null, null);
        small(d, "c-eager-small-3", 320, t(6.0, 6.5), null, null);
        small(d, "java-np-eager-small-1", 350, t(7.0, 6.5), null, null);
        small(d, "java-np-eager-small-2", 360, t(7.5, 6.0), null, null);
        small(d, "java-np-eager-small-3", 370, t(7.0, 6.5), null, null);
        Path docs = tmp.resolve("docs");
        String md = report(d, docs, "--failures", "0");
        // native 8 B: 6.0 6.5 6.0 -> 6.0; Java 7.0 7.5 7.0 -> 7.0; small_overhead_us: max(1.0, 1 KiB 6.5 - 6.0 = 0.5)
        // init: C 300 310 320 -> 310, Java 350 360 370 -> 360: 50; no torch, graph, large, init-repeat or alloc figure
        //   (native_init_ms 310, java_init_ms 360; small_repeats 3 C runs, large_repeats 0); sources: the numbers only
        // small_overhead_fast_us: 8 B has no fast Java point (below 6.0 + 1.0: C 6.0 6.5 6.0, Java none), so only
        //   1 KiB counts: C 6.0 6.0 6.5 -> 6.0, Java 6.5 6.0 6.5 -> 6.5: 0.5
        assertEquals("""
                {
                  "date": "2026-01-02",
                  "machine": "2 x Test GPU",
                  "nccl_version": "2.99.1",
                  "ranks": 2,
                  "native_small_us": 6.0,
                  "java_small_us": 7.0,
                  "torch_small_us": null,
                  "small_overhead_us": 1.0,
                  "graph_overhead_us": null,
                  "min_busbw_ratio_64MiB_up": null,
                  "init_overhead_ms": 50.0,
                  "init_repeat_overhead_ms": null,
                  "alloc_bytes_per_call": null,
                  "small_overhead_fast_us": 0.5,
                  "native_graph_small_us": null,
                  "java_graph_small_us": null,
                  "native_busbw_64MiB_gbps": null,
                  "java_busbw_64MiB_gbps": null,
                  "busbw_ratio_64MiB": null,
                  "busbw_ratio_64MiB_in_place": null,
                  "min_busbw_ratio_64MiB_up_but_alltoall": null,
                  "native_busbw_1GiB_gbps": null,
                  "java_busbw_1GiB_gbps": null,
                  "busbw_ratio_1GiB": null,
                  "native_init_ms": 310.0,
                  "java_init_ms": 360.0,
                  "torch_init_ms": null,
                  "small_repeats": 3,
                  "large_repeats": 0,
                  "sources": {
                    "ranks": "2026-01-02-benchmark.md",
                    "native_small_us": "2026-01-02-benchmark.md",
                    "java_small_us": "2026-01-02-benchmark.md",
                    "small_overhead_us": "2026-01-02-benchmark.md",
                    "init_overhead_ms": "2026-01-02-benchmark.md",
                    "small_overhead_fast_us": "2026-01-02-benchmark.md",
                    "native_init_ms": "2026-01-02-benchmark.md",
                    "java_init_ms": "2026-01-02-benchmark.md",
                    "small_repeats": "2026-01-02-benchmark.md",
                    "large_repeats": "2026-01-02-benchmark.md"
                  }
                }
                """, Files.readString(docs.resolve("benchmark-latest.json")));
        // 7.0 / 6.0 = 1.1667, 6.5 / 6.0 = 1.0833
        assertLines(md, "| 8 B | 6.00 | 7.00 | 1.00 | 1.167 | — | — |", "| 1 KiB | 6.00 | 6.50 | 0.50 | 1.083 | — | — |");
        // run medians C 6.0 6.25 6.25, Java 6.75 6.75 6.75: the best split (between C and Java) leaves means
        // 6.1667 and 6.75, less than 1 us apart: one mode, no split
        assertLines(md, "Each run's median over 8 B..4 KiB (us), in run order; C: 6.00, 6.25, 6.25; Java: 6.75, 6.75, 6.75.",
                "", "Fast points only: at each size, a run's time counts when it is less than 1.0 us above the fastest "
                        + "time of any C or Java run at that size, so that a run that was in the slow state (or fell into it "
                        + "midway) drops out of the sizes it was slow at only; the columns are the medians of those times "
                        + "and how many of the 3 Java and 3 C runs they are (small_overhead_fast_us: the largest Java - C "
                        + "out of place).");
        assertFalse(md.contains("Split at"), md);
        assertFalse(md.contains("| mode |"), md);
        // no in-place results: no fast point on either side
        assertLines(md, "| 8 B | 6.00 | — | — | 0 / 3 | — | — | — | 0 / 0 |",
                "| 1 KiB | 6.00 | 6.50 | 0.50 | 3 / 3 | — | — | — | 0 / 0 |");
        assertLines(md, "| first (processes: C 3, Java 3) | 310.0 | 360.0 | 50.0 | — | — |",
                "| re-created (samples: C 0, Java 0) | — | — | — | — | |");
        assertFalse(md.contains("Every run of the cases below"), md);
        assertFalse(md.contains("## all_reduce bus bandwidth"), md);
        assertFalse(md.contains("Spread of the re-created times"), md);
        assertLines(md, "| c-check | run missing |", "| java-np-check | run missing |", "| java-g-check | run missing |");
    }

    @Test
    void theFastOverheadIsNullWhenNoSizeHasFastPointsOnBothSides() throws Exception {
        Path d = Files.createDirectories(tmp.resolve("json"));
        small(d, "c-eager-small-1", 300, t(6.0, 8.0), t(6.0, 6.0), null);
        small(d, "c-eager-small-2", 300, t(6.0, 8.0), t(6.0, 6.0), null);
        small(d, "java-np-eager-small-1", 300, t(7.5, 6.0), t(6.5, 6.5), 0.0);
        small(d, "java-np-eager-small-2", 300, t(7.5, 6.0), t(6.5, 6.5), 0.0);
        Path docs = tmp.resolve("docs");
        String md = report(d, docs);
        String latest = Files.readString(docs.resolve("benchmark-latest.json"));
        // 8 B: fastest 6.0, below 7.0: C 6.0 6.0, Java none (7.5); 1 KiB: fastest 6.0: Java 6.0 6.0, C none (8.0)
        assertTrue(latest.contains("\n  \"small_overhead_fast_us\": null,\n"), latest);
        // the medians over all runs are still there: max(7.5 - 6.0, 6.0 - 8.0) = 1.5
        assertTrue(latest.contains("\n  \"small_overhead_us\": 1.5,\n"), latest);
        assertLines(md, "| small_overhead_fast_us | None |");
        // in place: fastest 6.0 at both sizes, everything below 7.0: C 6.0, Java 6.5: 0.5
        assertLines(md, "| 8 B | 6.00 | — | — | 0 / 2 | 6.00 | 6.50 | 0.50 | 2 / 2 |",
                "| 1 KiB | — | 6.00 | — | 2 / 0 | 6.00 | 6.50 | 0.50 | 2 / 2 |");
        // run medians C 7.0 7.0, Java 6.75 6.75: one mode
        assertFalse(md.contains("Split at"), md);
    }
}
