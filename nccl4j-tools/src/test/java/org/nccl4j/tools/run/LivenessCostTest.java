package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import static org.nccl4j.tools.run.ScriptSandbox.env;
import static org.nccl4j.tools.run.ScriptKit.PYTHON_ENV;
import static org.nccl4j.tools.run.ScriptKit.ROOT;
import static org.nccl4j.tools.run.ScriptKit.VERSION;
import static org.nccl4j.tools.run.ScriptKit.assertLines;
import static org.nccl4j.tools.run.ScriptKit.assumeOnPath;
import static org.nccl4j.tools.run.ScriptKit.exec;
import static org.nccl4j.tools.run.ScriptKit.executable;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.tools.run.ScriptSandbox.SandboxOutcome;
import org.nccl4j.tools.run.ScriptKit.Outcome;

/**
 * scripts/bench/liveness-cost.sh and its helper scripts/bench/liveness_cost.py on the CPU. The report from hand-made
 * samples and departures.sh rows with known numbers (every figure worked out in the comments); the sampler on a
 * made-up /proc and on this JVM's own threads; the sides' jars; and the script in {@link ScriptSandbox} with
 * {@code liveness-cost-fake.sh} as the bundle's java (heartbeat ranks that name their process nccl4j-liveness, and
 * departures.sh's rows by {@code departures-fake.sh}): its refusals, the alternating runs, what each rank is given
 * and the report. Skipped where python3 is missing.
 */
@Timeout(180)
class LivenessCostTest {
    private static final Path HELPER = ROOT.resolve("scripts/bench/liveness_cost.py");
    /** departures.sh's TSV header. */
    private static final List<String> DEP_COLUMNS = List.of("row", "scenario", "launcher", "config", "framework",
            "ranks", "bound_s", "event_rank", "event_t", "r0", "r1", "r2", "r3", "end0", "end1", "end2", "end3",
            "measured", "worst", "exits", "traces", "trace_verdict", "hs_err", "left", "within", "seconds", "seen",
            "notes");
    private static final String GONE = "RemoteErrorException: rank 3 (gpu0, pid 9) is gone";

    @TempDir
    Path tmp;

    @BeforeEach
    void python() {
        assumeOnPath("python3");
    }

    private Outcome helper(Map<String, String> env, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("python3", HELPER.toString()));
        cmd.addAll(List.of(args));
        Map<String, String> e = new LinkedHashMap<>(PYTHON_ENV);
        e.putAll(env);
        return exec(tmp, e, cmd);
    }

    // ---------------------------------------------------------------- the report

    private static String thread(int tid, String comm, long us) {
        return "{\"tid\": " + tid + ", \"comm\": \"" + comm + "\", \"cpu_ns\": " + us * 1000 + "}";
    }

    private static String look(int pid, long seconds, long ticks, List<String> threads) {
        return "{\"pid\": " + pid + ", \"alive\": true, \"state\": \"S\", \"t_ns\": " + seconds * 1_000_000_000L
                + ", \"stat_ticks\": " + ticks + ", \"threads\": [" + String.join(", ", threads) + "]}";
    }

    /**
     * A heartbeat directory of 4 ranks looked at 20 s apart (t = 1 s and 21 s). Rank 0: liveness threads 10 and 11
     * (which took r0LiveUs - 600 us and 400 us in the window), 14 (at the first look only: gone, not counted) and 13
     * (at the second only: 200 us, counted from 0), and its main thread, which took r0MainUs; utime + stime 10
     * ticks. Rank r of 1-3: one liveness thread (tid 20) that took othersLiveUs[r - 1] and a main thread that took
     * 40 ms; 4 ticks. Every rank printed RESULT ok and exited 0.
     */
    private static void heartbeat(Path d, long r0LiveUs, long r0MainUs, long... othersLiveUs) throws IOException {
        Files.createDirectories(d);
        StringBuilder a = new StringBuilder("{\"clk_tck\": 100, \"ranks\": {");
        StringBuilder b = new StringBuilder("{\"clk_tck\": 100, \"ranks\": {");
        a.append("\"0\": ").append(look(100, 1, 100, List.of(thread(10, "nccl4j-liveness", 1000),
                thread(11, "nccl4j-liveness", 2000), thread(12, "java", 50_000), thread(14, "nccl4j-liveness", 5000))));
        b.append("\"0\": ").append(look(100, 21, 110, List.of(thread(10, "nccl4j-liveness", 1000 + r0LiveUs - 600),
                thread(11, "nccl4j-liveness", 2400), thread(12, "java", 50_000 + r0MainUs),
                thread(13, "nccl4j-liveness", 200))));
        for (int r = 1; r <= othersLiveUs.length; r++) {
            a.append(", \"").append(r).append("\": ").append(look(100 + r, 1, 100, List.of(thread(20, "nccl4j-liveness",
                    300), thread(21, "java", 10_000))));
            b.append(", \"").append(r).append("\": ").append(look(100 + r, 21, 104, List.of(thread(20,
                    "nccl4j-liveness", 300 + othersLiveUs[r - 1]), thread(21, "java", 50_000))));
        }
        Files.writeString(d.resolve("sample1.json"), a.append("}}\n").toString());
        Files.writeString(d.resolve("sample2.json"), b.append("}}\n").toString());
        for (int r = 0; r <= othersLiveUs.length; r++) {
            Files.writeString(d.resolve("rank" + r + ".log"), "START rank=" + r + " t=1 pid=" + (100 + r)
                    + " size=4 device=" + r + " none\nRESULT rank=" + r + " t=2 ok\n");
            Files.writeString(d.resolve("exit" + r), "0 2\n");
        }
    }

    /** departures.sh's TSV with a kill and a stop row: ranks 0-2 timed at the ends given, rank 3 left. */
    private static void departures(Path d, String[] kill, String[] stop) throws IOException {
        Files.createDirectories(d);
        StringBuilder s = new StringBuilder(String.join("\t", DEP_COLUMNS)).append('\n');
        int row = 0;
        for (String[] ends : List.of(kill, stop)) {
            row++;
            String sc = row == 1 ? "kill" : "stop";
            boolean waiting = ends[0].startsWith("still");
            s.append(String.join("\t", String.valueOf(row), sc, "java", "4gpu", "nccl4j", "4", row == 1 ? "2.00"
                    : "5.00", "3", "1795000000000", GONE, GONE, GONE, "killed", ends[0], ends[1], ends[2], "0.00",
                    "0 1 2", waiting ? ends[0] : ends[2], "r0=1 r1=1 r2=1 r3=137", "3", "nccl4j-trace: rank 3 left",
                    "0", "0", waiting ? "no" : "yes", "6.10", GONE, "")).append('\n');
        }
        Files.writeString(d.resolve("departures.tsv"), s.toString());
    }

    private static String[] t(String... ends) {
        return ends;
    }

    private Path outDir(String runs) throws IOException {
        Path out = Files.createDirectories(tmp.resolve("out"));
        Files.writeString(out.resolve("runs.tsv"), runs);
        Files.writeString(out.resolve("meta.tsv"), String.join("\n", "date\t2026-01-02 03:04 UTC", "host\tgpu0",
                "command\tscripts/bench/liveness-cost.sh bundle bundle-before-lib bundle-after-lib",
                "variables\tROUNDS=2 SIZE=4", "gpu\tGPU 0: Test GPU", "gpu\tGPU 1: Test GPU",
                "cpu\tTest CPU, 64 logical CPUs", "kernel\t6.1.0", "java\topenjdk version \"17.0.15\" 2025-04-15",
                "before\ta copy of bundle with the nccl4j jars of bundle-before-lib: auth=no core=aaaaaaaaaaaa "
                + "examples=bbbbbbbbbbbb native=cccccccccccc tools=gggggggggggg",
                "after\t/x/bundle: auth=yes core=dddddddddddd examples=eeeeeeeeeeee native=ffffffffffff "
                + "tools=hhhhhhhhhhhh",
                "secret\tNCCL4J_JOB_SECRET set", "size\t4", "config\t4gpu", "hb_steps\t560", "hb_sleep_ms\t50",
                "hb_count\t1024", "hb_settle\t5", "hb_window\t20") + "\n");
        return out;
    }

    private static final String RUNS = "1\tbefore\tr1-before/heartbeat\t\tr1-before/departures\t0\n"
            + "1\tafter\tr1-after/heartbeat\t\tr1-after/departures\t0\n"
            + "2\tbefore\tr2-before/heartbeat\t\tr2-before/departures\t0\n"
            + "2\tafter\tr2-after/heartbeat\t\tr2-after/departures\t0\n";

    @Test
    void theReportHasEachRoundsFiguresTheirMediansAndTheDifference() throws Exception {
        Path out = outDir(RUNS);
        // Liveness CPU in the 20 s window, us/s: rank 0 r0LiveUs / 20; ranks 1-3 othersLiveUs / 20, then their mean.
        // Process CPU, ms/s: rank 0 (r0LiveUs + r0MainUs) / 20 / 1000; ranks 1-3 (live + 40000) / 20 / 1000.
        heartbeat(out.resolve("r1-before/heartbeat"), 2200, 100_000, 600, 800, 1000);   // 110.0; 30, 40, 50: 40.0
        heartbeat(out.resolve("r1-after/heartbeat"), 2400, 100_000, 700, 900, 1100);    // 120.0; 45.0
        heartbeat(out.resolve("r2-before/heartbeat"), 2000, 120_600, 600, 600, 600);    // 100.0; 30.0
        heartbeat(out.resolve("r2-after/heartbeat"), 2600, 100_200, 800, 800, 800);     // 130.0; 40.0
        departures(out.resolve("r1-before/departures"), t("0.40", "0.50", "0.60"), t("4.20", "4.30", "4.40"));
        departures(out.resolve("r1-after/departures"), t("0.45", "0.55", "0.65"), t("4.25", "4.35", "4.45"));
        departures(out.resolve("r2-before/departures"), t("0.30", "0.40", "0.50"), t("4.10", "4.20", "4.30"));
        departures(out.resolve("r2-after/departures"), t("0.35", "0.45", "0.55"), t("4.15", "4.25", "4.35"));
        Outcome r = helper(Map.of(), "report", out.toString());
        assertEquals(0, r.status(), r.out());
        String md = Files.readString(out.resolve("liveness-cost.md"));
        assertEquals(md, r.out(), "it prints the report it writes");
        assertLines(md, "# Liveness channel: its cost before and after", "",
                "2026-01-02 03:04 UTC on gpu0. 2 round(s), each the before side, then the after side; 4 ranks, one per "
                        + "GPU (plain `java`, as departures.sh's java launcher).", "",
                "- Command: `scripts/bench/liveness-cost.sh bundle bundle-before-lib bundle-after-lib`",
                "- Variables: ROUNDS=2 SIZE=4",
                "- GPUs: GPU 0: Test GPU; GPU 1: Test GPU",
                "- CPU: Test CPU, 64 logical CPUs; kernel 6.1.0; Java: openjdk version \"17.0.15\" 2025-04-15",
                "- before: a copy of bundle with the nccl4j jars of bundle-before-lib; the job secret's "
                        + "authentication: no; sha256 of the jars: core aaaaaaaaaaaa, examples bbbbbbbbbbbb, "
                        + "native cccccccccccc, tools gggggggggggg",
                "- after: /x/bundle; the job secret's authentication: yes; sha256 of the jars: core dddddddddddd, "
                        + "examples eeeeeeeeeeee, native ffffffffffff, tools hhhhhhhhhhhh",
                "- Job secret: NCCL4J_JOB_SECRET set");
        // medians of two rounds; spread: the larger side's range; within: |after - before| <= spread
        assertLines(md, "| measure | before | after | after - before | rounds' spread | within it |",
                "|---|---:|---:|---:|---:|---|",
                // before 110, 100: 105.0 (range 10); after 120, 130: 125.0 (range 10)
                "| heartbeat CPU, rank 0 (liveness threads, us/s) | 105.0 | 125.0 | +20.0 | 10.0 | no |",
                // before 40, 30: 35.0 (10); after 45, 40: 42.5 (5)
                "| heartbeat CPU, ranks 1-3 mean (liveness threads, us/s) | 35.0 | 42.5 | +7.5 | 10.0 | yes |",
                // before 102.2 / 20 = 5.11, 122.6 / 20 = 6.13: 5.62 (1.02); after 102.4 / 20 = 5.12, 5.14: 5.13
                "| process CPU, rank 0 (all threads, ms/s) | 5.62 | 5.13 | -0.49 | 1.02 | yes |");
        assertLines(md,
                // the last of ranks 0-2: before 0.60, 0.50; after 0.65, 0.55
                "| kill: the last rank's end after the SIGKILL (s) | 0.55 | 0.60 | +0.05 | 0.10 | yes |",
                // the mean of ranks 0-2: before 0.50, 0.40; after 0.55, 0.45
                "| kill: the ranks' mean end after the SIGKILL (s) | 0.45 | 0.50 | +0.05 | 0.10 | yes |",
                "| stop: the last rank's end after the SIGSTOP (s) | 4.35 | 4.40 | +0.05 | 0.10 | yes |",
                "| stop: the ranks' mean end after the SIGSTOP (s) | 4.25 | 4.30 | +0.05 | 0.10 | yes |");
        assertLines(md, "| measure | side | round 1 | round 2 | median |", "|---|---|---:|---:|---:|",
                "| heartbeat CPU, rank 0 (liveness threads, us/s) | before | 110.0 | 100.0 | 105.0 |",
                "|  | after | 120.0 | 130.0 | 125.0 |",
                "| heartbeat CPU, ranks 1-3 mean (liveness threads, us/s) | before | 40.0 | 30.0 | 35.0 |",
                "|  | after | 45.0 | 40.0 | 42.5 |");
        assertLines(md, "| kill: the last rank's end after the SIGKILL (s) | before | 0.60 | 0.50 | 0.55 |",
                "|  | after | 0.65 | 0.55 | 0.60 |");
        // rank 0: threads 10, 11, 13 at the second look (13 appeared, 14 gone); utime + stime: 10 ticks of 10 ms
        // in 20 s = 5.0 ms/s, ranks 1-3: 4 ticks = 2.0
        assertTrue(md.contains("\n| 1 | before | 20.00 | 110.0 / 30.0 / 40.0 / 50.0 | 3 / 1 / 1 / 1 | 1, 1 / 0, 0 / 0, "
                + "0 / 0, 0 | 5.0 / 2.0 / 2.0 / 2.0 | r0=0 r1=0 r2=0 r3=0 | ok |\n"), md);
        assertTrue(md.contains("\n| 2 | after | stop | yes | r0 4.15, r1 4.25, r2 4.35 (r3 left: not timed) | "
                + "r0=1 r1=1 r2=1 r3=137 | " + GONE + " |\n"), md);
        assertFalse(md.contains("## Problems"), md);
        List<String> tsv = Files.readAllLines(out.resolve("liveness-cost.tsv"));
        assertEquals("measure\tround\tside\tvalue", tsv.get(0));
        assertEquals(1 + 8 * 4, tsv.size(), tsv.toString());
        assertTrue(tsv.containsAll(List.of("hb_r0_liveness\t1\tbefore\t110", "hb_r0_liveness\t2\tafter\t130",
                "hb_others_liveness\t1\tafter\t45", "hb_r0_process\t2\tbefore\t6.13",
                // ranks 1-3 in round 1 before: (0.6, 0.8, 1.0 + 40) ms / 20 s = 2.03, 2.04, 2.05
                "hb_others_process\t1\tbefore\t2.04", "kill_last\t1\tbefore\t0.6",
                "stop_mean\t2\tafter\t4.25")), tsv.toString());
    }

    @Test
    void aRunWithoutItsFiguresIsNamedUnderProblemsAndTheReportExits1() throws Exception {
        Path out = outDir("1\tbefore\tr1-before/heartbeat\trank 2 exited with status 3\tr1-before/departures\t1\n"
                + "1\tafter\tr1-after/heartbeat\t\tr1-after/departures\t0\n");
        Path hb = out.resolve("r1-before/heartbeat");
        heartbeat(hb, 2200, 100_000, 600, 800, 1000);
        // rank 1's liveness thread is not there; rank 2's process is gone by the second look
        Files.writeString(hb.resolve("sample2.json"), Files.readString(hb.resolve("sample2.json"))
                .replace("{\"tid\": 20, \"comm\": \"nccl4j-liveness\", \"cpu_ns\": 900000}, ", "")
                .replaceFirst("\\{\"pid\": 102, \"alive\": true", "{\"pid\": 102, \"alive\": false"));
        Files.writeString(hb.resolve("exit2"), "3 2\n");
        heartbeat(out.resolve("r1-after/heartbeat"), 2400, 100_000, 700, 900, 1100);
        departures(out.resolve("r1-before/departures"), t("0.40", "0.50", "0.60"),
                t("still waiting at 30 s", "still waiting at 30 s", "still waiting at 30 s"));
        departures(out.resolve("r1-after/departures"), t("0.45", "0.55", "0.65"), t("4.25", "4.35", "4.45"));
        Outcome r = helper(Map.of(), "report", out.toString());
        assertEquals(1, r.status(), r.out());
        String md = Files.readString(out.resolve("liveness-cost.md"));
        assertLines(md, "## Problems", "",
                "- round 1 before: heartbeat: rank 2 exited with status 3",
                "- round 1 before: heartbeat: rank 1: no thread named nccl4j-liveness* (threads: java)",
                "- round 1 before: heartbeat: rank 2: its process (pid 102) was gone at the second sample",
                "- round 1 before: departures: stop: rank 0 has no time (still waiting at 30 s)",
                "- round 1 before: departures: stop: not within its bound (no; worst still waiting at 30 s)");
        // one round: no spread; the before side has no heartbeat figures
        assertLines(md, "| heartbeat CPU, rank 0 (liveness threads, us/s) | n/a | 120.0 | n/a | n/a | n/a |");
        assertLines(md, "| heartbeat CPU, rank 0 (liveness threads, us/s) | before | n/a | n/a |",
                "|  | after | 120.0 | 120.0 |");
        assertLines(md, "| kill: the last rank's end after the SIGKILL (s) | 0.60 | 0.65 | +0.05 | n/a | n/a |");
        assertTrue(md.contains("\n| 1 | before | n/a | - | - | - | - | r0=0 r1=0 r2=3 r3=0 | ok |\n"), md);
    }

    /** Where the kernel has no schedstat (gVisor), the threads' utime + stime stand in, and the report says so. */
    @Test
    void withoutSchedstatTheTicksStandInAndTheReportSaysTheyAreCoarse() throws Exception {
        Path out = outDir("1\tbefore\tr1-before/heartbeat\t\t\t0\n");
        Path hb = Files.createDirectories(out.resolve("r1-before/heartbeat"));
        // rank 0: its liveness thread 1 -> 3 ticks (20 ms in 20 s: 1000 us/s), main 5 -> 9; rank 1: 0 -> 1 (500)
        String a = "{\"clk_tck\": 100, \"ranks\": {\"0\": " + look(100, 1, 6, List.of(ticks(10, "nccl4j-liveness", 1),
                ticks(12, "java", 5))) + ", \"1\": " + look(101, 1, 0, List.of(ticks(20, "nccl4j-liveness", 0))) + "}}";
        String b = "{\"clk_tck\": 100, \"ranks\": {\"0\": " + look(100, 21, 12, List.of(ticks(10, "nccl4j-liveness", 3),
                ticks(12, "java", 9))) + ", \"1\": " + look(101, 21, 1, List.of(ticks(20, "nccl4j-liveness", 1)))
                + "}}";
        Files.writeString(hb.resolve("sample1.json"), a);
        Files.writeString(hb.resolve("sample2.json"), b);
        Outcome r = helper(Map.of(), "report", out.toString());
        assertEquals(1, r.status(), r.out());
        String md = Files.readString(out.resolve("liveness-cost.md"));
        assertLines(md, "| heartbeat CPU, rank 0 (liveness threads, us/s) | before | 1000.0 | 1000.0 |");
        // rank 0: (2 + 4) ticks of 10 ms in 20 s
        assertLines(md, "| process CPU, rank 0 (all threads, ms/s) | before | 3.00 | 3.00 |");
        assertTrue(md.contains("\n- round 1 before: heartbeat: no /proc/PID/task/TID/schedstat here (rank 0, 1): CPU "
                + "times are utime + stime in clock ticks of 10 ms, too coarse for the liveness threads\n"), md);
        assertTrue(md.contains("\n- round 1 before: departures: not run\n"), md);
    }

    private static String ticks(int tid, String comm, int ticks) {
        return "{\"tid\": " + tid + ", \"comm\": \"" + comm + "\", \"cpu_ns\": null, \"ticks\": " + ticks + "}";
    }

    @Test
    void theReportNeedsItsRuns() throws Exception {
        Outcome r = helper(Map.of(), "report", tmp.resolve("none").toString());
        assertEquals(2, r.status(), r.out());
        assertTrue(r.out().startsWith("liveness_cost.py report: cannot read " + tmp.resolve("none")
                + "/runs.tsv: No such file or directory"), r.out());
        r = helper(Map.of(), "sample");
        assertEquals(2, r.status(), r.out());
        assertEquals("usage: liveness_cost.py sample FILE RANK:PID... | side DIR | report OUT_DIR\n", r.out());
    }

    // ---------------------------------------------------------------- the sampler

    @Test
    void aSampleReadsEveryThreadsNameAndCpuTimeAndTheProcessTicks() throws Exception {
        Path proc = tmp.resolve("proc");
        Path p = Files.createDirectories(proc.resolve("4242"));
        // the process name may hold spaces and parentheses; utime (field 14) 7, stime (15) 3
        Files.writeString(p.resolve("stat"), "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 "
                + "40 0 100 1000 10 18446744073709551615\n");
        thread(p, 4242, "java", "123456789 1000 40\n", 12);
        thread(p, 4250, "nccl4j-liveness", "777000 10 3\n", 0);
        thread(p, 4251, "nccl4j-liveness", null, 3);   // a kernel without schedstat: its ticks stand in
        Path zombie = Files.createDirectories(proc.resolve("4300"));
        Files.writeString(zombie.resolve("stat"), "4300 (java) Z 1 4300 4300 0 -1 0 0 0 0 0 9 9 0 0 20 0 1 0 0 0 0\n");
        Files.createDirectories(zombie.resolve("task"));
        Path file = tmp.resolve("s.json");
        Outcome r = helper(Map.of("LIVENESS_COST_PROC", proc.toString()), "sample", file.toString(), "0:4242", "1:4300",
                "2:99999");
        assertEquals(0, r.status(), r.out());
        String json = Files.readString(file).replaceAll("\\s+", " ");
        assertTrue(json.matches(".*\"clk_tck\": \\d+, \"ranks\": \\{ \"0\": \\{ \"pid\": 4242, \"alive\": true, "
                + "\"state\": \"S\", \"t_ns\": \\d+, \"stat_ticks\": 10, \"threads\": \\[ \\{ \"tid\": 4242, \"comm\": "
                + "\"java\", \"cpu_ns\": 123456789, \"ticks\": 12 }, \\{ \"tid\": 4250, \"comm\": \"nccl4j-liveness\", "
                + "\"cpu_ns\": 777000, \"ticks\": 0 }, \\{ \"tid\": 4251, \"comm\": \"nccl4j-liveness\", \"cpu_ns\": "
                + "null, \"ticks\": 3 } ] }, \"1\": \\{ "
                + "\"pid\": 4300, \"alive\": false, \"state\": \"Z\", \"t_ns\": \\d+, \"stat_ticks\": 18, \"threads\": "
                + "\\[] }, \"2\": \\{ \"pid\": 99999, \"alive\": false, \"t_ns\": \\d+ } } } "), json);
    }

    /** A thread of a made-up /proc/PID: its comm, schedstat (null: none) and stat with utime + stime = ticks. */
    private static void thread(Path p, int tid, String comm, String schedstat, int ticks) throws IOException {
        Path t = Files.createDirectories(p.resolve("task").resolve(String.valueOf(tid)));
        Files.writeString(t.resolve("comm"), comm + "\n");
        if (schedstat != null) {
            Files.writeString(t.resolve("schedstat"), schedstat);
        }
        Files.writeString(t.resolve("stat"), tid + " (" + comm + ") S 1 1 1 0 -1 0 0 0 0 0 " + (ticks - ticks / 2) + " "
                + ticks / 2 + " 0 0 20 0 1 0\n");
    }

    /** On this JVM's own /proc: a thread named nccl4j-liveness-... reads nccl4j-liveness, with the CPU it spent. */
    @Test
    void aSampleOfThisJvmFindsItsLivenessNamedThreadAndItsCpuTime() throws Exception {
        long pid = ProcessHandle.current().pid();
        assumeTrue(Files.exists(Path.of("/proc/" + pid + "/task/" + pid + "/schedstat")), "no schedstat here");
        Object lock = new Object();
        java.util.concurrent.CountDownLatch spun = new java.util.concurrent.CountDownLatch(1);
        Thread spin = new Thread(() -> {
            // 300 ms of its own CPU time (not wall time: on a loaded machine the thread may get a fraction)
            java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
            long cpu0 = mx.getCurrentThreadCpuTime();
            long giveUp = System.nanoTime() + 20_000_000_000L;
            long x = 0;
            while (mx.getCurrentThreadCpuTime() - cpu0 < 300_000_000L && System.nanoTime() < giveUp) {
                x++;
            }
            spun.countDown();
            synchronized (lock) {
                try {
                    lock.wait(60_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (x == 42) {
                System.out.print("");
            }
        }, "nccl4j-liveness-ping-7");
        spin.setDaemon(true);
        spin.start();
        try {
            assertTrue(spun.await(30, java.util.concurrent.TimeUnit.SECONDS), "the thread spun");
            Path file = tmp.resolve("self.json");
            Outcome r = helper(Map.of(), "sample", file.toString(), "0:" + pid);
            assertEquals(0, r.status(), r.out());
            String json = Files.readString(file).replaceAll("\\s+", " ");
            Matcher m = Pattern.compile("\"comm\": \"nccl4j-liveness\", \"cpu_ns\": (\\d+)").matcher(json);
            assertTrue(m.find(), json);
            long ns = Long.parseLong(m.group(1));
            // it spun for 300 ms of its own CPU time, then waited: the sample reads at least that, and not much more
            assertTrue(ns >= 280_000_000L && ns <= 1_500_000_000L, ns + " ns");
            assertFalse(m.find(), "one such thread: " + json);
            assertTrue(json.contains("\"pid\": " + pid + ", \"alive\": true"), json);
        } finally {
            spin.interrupt();
        }
    }

    // ---------------------------------------------------------------- the sides

    /** A jar (a zip) holding the entries named. */
    private static Path jar(Path p, String... entries) throws IOException {
        Files.createDirectories(p.getParent());
        try (OutputStream o = Files.newOutputStream(p); ZipOutputStream z = new ZipOutputStream(o)) {
            for (String e : entries) {
                z.putNextEntry(new ZipEntry(e));
                z.write(e.getBytes());
                z.closeEntry();
            }
        }
        return p;
    }

    private static String sha12(Path p) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)))
                .substring(0, 12);
    }

    /**
     * The four nccl4j jars of a side in dir, each naming the side in an entry, core holding JobSecret when auth;
     * returns what liveness_cost.py side says of them.
     */
    private static String sideJars(Path dir, String side, boolean auth) throws Exception {
        if (auth) {
            jar(dir.resolve("nccl4j-core-" + VERSION + ".jar"), "side-" + side, "org/nccl4j/launch/JobSecret.class");
        } else {
            jar(dir.resolve("nccl4j-core-" + VERSION + ".jar"), "side-" + side);
        }
        jar(dir.resolve("nccl4j-examples-" + VERSION + ".jar"), "side-" + side, "x");
        jar(dir.resolve("nccl4j-native-" + VERSION + ".jar"), "side-" + side, "n");
        jar(dir.resolve("nccl4j-tools-" + VERSION + ".jar"), "side-" + side, "h");
        return "auth=" + (auth ? "yes" : "no") + " " + hashes(dir);
    }

    /** "core=SHA examples=SHA native=SHA tools=SHA" of the jars in dir (sha256, the first 12 hex digits). */
    private static String hashes(Path dir) throws Exception {
        return "core=" + sha12(dir.resolve("nccl4j-core-" + VERSION + ".jar")) + " examples="
                + sha12(dir.resolve("nccl4j-examples-" + VERSION + ".jar")) + " native="
                + sha12(dir.resolve("nccl4j-native-" + VERSION + ".jar")) + " tools="
                + sha12(dir.resolve("nccl4j-tools-" + VERSION + ".jar"));
    }

    /** hashes(dir) as the report says it: "core SHA, examples SHA, native SHA, tools SHA". */
    private static String reported(Path dir) throws Exception {
        return hashes(dir).replace("=", " ").replace(" examples", ", examples").replace(" native", ", native")
                .replace(" tools", ", tools");
    }

    @Test
    void aSideIsItsJarsHashesAndWhetherCoreHoldsTheJobSecret() throws Exception {
        Path lib = tmp.resolve("lib");
        String line = sideJars(lib, "after", true);
        jar(lib.resolve("nccl4j-core-" + VERSION + "-tests.jar"), "t");   // not the side's: left out
        jar(lib.resolve("nccl4j-native-" + VERSION + "-linux-x86_64.jar"), "so");
        Outcome r = helper(Map.of(), "side", lib.toString());
        assertEquals(0, r.status(), r.out());
        assertEquals(line + "\n", r.out());
        Files.move(lib, Files.createDirectories(tmp.resolve("bundle")).resolve("lib"));
        r = helper(Map.of(), "side", tmp.resolve("bundle").toString());   // a bundle: its lib/
        assertEquals(line + "\n", r.out());
        Path before = tmp.resolve("before");
        assertTrue(sideJars(before, "before", false).startsWith("auth=no core="));
        Files.delete(before.resolve("nccl4j-examples-" + VERSION + ".jar"));
        r = helper(Map.of(), "side", before.toString());
        assertEquals(1, r.status(), r.out());
        assertEquals("liveness_cost.py side: " + before + " holds no single nccl4j-examples-*.jar\n", r.out());
    }

    // ---------------------------------------------------------------- the script

    /** The python3 that runs the tests (the sandbox's python3 is a fake): its executable. */
    private static String realPython() throws Exception {
        Outcome r = exec(null, Map.of(), 30, List.of("python3", "-c", "import sys; print(sys.executable)"));
        assertEquals(0, r.status(), r.out());
        return r.out().strip();
    }

    private ScriptSandbox box;
    private Path beforeLib;

    /**
     * A sandbox in tmp/name: its bundle's java liveness-cost-fake.sh, departures-fake.sh for the rows, the bundle's
     * nccl4j jars of side afterSide (with JobSecret when afterAuth), beforeLib with the jars of side "before".
     */
    private ScriptSandbox sandbox(String name, String afterSide, boolean afterAuth) throws Exception {
        box = new ScriptSandbox(Files.createDirectories(tmp.resolve(name)));
        copy("liveness-cost-fake.sh", box.bundle.resolve("jre/bin/java"));
        copy("departures-fake.sh", box.base.resolve("dfake/java"));
        for (String n : List.of("core", "examples", "native", "tools")) {
            Files.delete(box.bundle.resolve("lib/nccl4j-" + n + "-" + VERSION + ".jar"));
        }
        sideJars(box.bundle.resolve("lib"), afterSide, afterAuth);
        beforeLib = box.base.resolve("before-lib");
        sideJars(beforeLib, "before", false);
        return box;
    }

    private static void copy(String resource, Path to) throws IOException {
        Files.createDirectories(to.getParent());
        try (InputStream in = LivenessCostTest.class.getResourceAsStream(resource)) {
            Files.copy(in, to, StandardCopyOption.REPLACE_EXISTING);
        }
        executable(to);
    }

    private SandboxOutcome script(int gpus, String... kvAndArgs) throws Exception {
        int split = List.of(kvAndArgs).indexOf("--");
        Map<String, String> e = new LinkedHashMap<>(env("FAKE_GPUS", Integer.toString(gpus), "PYTHON", realPython(),
                "FAKE_DEPARTURES_JAVA", box.base.resolve("dfake/java").toString(), "PYTHONIOENCODING", "utf-8"));
        e.putAll(env(List.of(kvAndArgs).subList(0, split).toArray(new String[0])));
        return box.run(box.root.resolve("scripts/bench/liveness-cost.sh"), e,
                List.of(kvAndArgs).subList(split + 1, kvAndArgs.length).toArray(new String[0]));
    }

    @Test
    void itRefusesFewerGpusThanRanksAndSidesThatAreNotWhatTheyShouldBe() throws Exception {
        sandbox("a", "after", true);
        String bundle = box.bundle.toString();
        SandboxOutcome r = script(2, "--", bundle, beforeLib.toString());
        assertEquals(2, r.status(), r.toString());
        assertEquals("liveness-cost.sh: SIZE=4 needs 4 GPUs (one rank per GPU), and this machine has 2 (nvidia-smi "
                + "-L): run with SIZE=2 or on a machine with 4 GPUs\n", r.err());
        r = script(0, "--", bundle, beforeLib.toString());
        assertEquals(2, r.status(), r.toString());
        assertEquals("liveness-cost.sh: no GPU found (nvidia-smi -L lists none)\n", r.err());
        r = script(4, "--", bundle);
        assertEquals("liveness-cost.sh: usage: liveness-cost.sh BUNDLE BEFORE [AFTER] (--help)\n", r.err());
        r = script(4, "SIZE", "3", "--", bundle, beforeLib.toString());
        assertEquals("liveness-cost.sh: SIZE=3: 2 or 4 ranks (departures.sh's configs 2gpu and 4gpu)\n", r.err());
        r = script(4, "ROUNDS", "two", "--", bundle, beforeLib.toString());
        assertEquals("liveness-cost.sh: ROUNDS=two is not a whole number\n", r.err());
        // the before side is the after side's jars
        r = script(4, "--", bundle, bundle);
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().startsWith("liveness-cost.sh: the before side (" + bundle + ") has the job secret already "
                + "(org/nccl4j/launch/JobSecret.class): give BEFORE, the jars built from before the authentication "
                + "(37d34d2), or CHECK_SIDES=0"), r.err());
        // a before directory without its native jar
        Path partial = Files.createDirectories(box.base.resolve("partial"));
        for (String n : List.of("core", "examples")) {
            String j = "nccl4j-" + n + "-" + VERSION + ".jar";
            Files.copy(beforeLib.resolve(j), partial.resolve(j));
        }
        r = script(4, "--", bundle, partial.toString());
        assertEquals("liveness-cost.sh: before: " + partial + " holds no single nccl4j-native-*.jar (it needs "
                + "nccl4j-core, nccl4j-examples, nccl4j-native and nccl4j-tools, one of each)\n", r.err());
        // ... and without its tools jar, which holds the harness
        Files.copy(beforeLib.resolve("nccl4j-native-" + VERSION + ".jar"),
                partial.resolve("nccl4j-native-" + VERSION + ".jar"));
        r = script(4, "--", bundle, partial.toString());
        assertEquals("liveness-cost.sh: before: " + partial + " holds no single nccl4j-tools-*.jar (it needs "
                + "nccl4j-core, nccl4j-examples, nccl4j-native and nccl4j-tools, one of each)\n", r.err());
        // an after side built before the secret (a stale bundle)
        sandbox("b", "stale", false);
        r = script(4, "--", box.bundle.toString(), beforeLib.toString());
        assertEquals(2, r.status(), r.toString());
        assertEquals("liveness-cost.sh: the after side (" + box.bundle + ") has no job secret: its nccl4j-core jar "
                + "holds no org/nccl4j/launch/JobSecret.class, so it was built before the authentication (a bundle "
                + "made before commit 0cbe747?): give AFTER, a directory of the jars built from the commit to measure, "
                + "or CHECK_SIDES=0\n", r.err());
        assertEquals(List.of(), leftovers(), "no temporary bundle is left");
    }

    private List<Path> leftovers() throws IOException {
        try (Stream<Path> s = Files.list(box.base.resolve("tmp"))) {
            return s.filter(p -> p.getFileName().toString().startsWith("liveness-cost.")).collect(Collectors.toList());
        }
    }

    /** The processes that carry a heartbeat job's marker (none may outlive the script); only those of this test's directory. */
    private List<String> marked() throws Exception {
        Outcome r = exec(null, Map.of(), 30, List.of("sh", "-c", "pgrep -af 'nccl4j\\.row=lc' || true"));
        // this test's own: another build running tests on the machine has processes with the same markers
        String own = tmp.toString();
        String ownReal = tmp.toRealPath().toString();
        return r.out().lines().filter(l -> !l.contains("pgrep") && (l.contains(own) || l.contains(ownReal)))
                .collect(Collectors.toList());
    }

    @Test
    void eachRoundRunsBeforeThenAfterWithTheSidesJarsAndTheReportHasEveryFigure() throws Exception {
        sandbox("a", "after", true);
        Path out = box.base.resolve("out");
        Path afterLib = box.base.resolve("after-lib");
        String afterInfo = sideJars(afterLib, "new", true);
        SandboxOutcome r = script(4, "OUT_DIR", out.toString(), "HB_SETTLE", "1", "HB_WINDOW", "1", "HB_STEPS", "60", "--",
                box.bundle.toString(), beforeLib.toString(), afterLib.toString());
        assertEquals(0, r.status(), r.toString());
        List<String> lines = r.outLines();
        assertEquals("== 2 round(s) x (before, after), 4 ranks: about 220 s; OUT_DIR=" + out, lines.get(0));
        String beforeInfo = "auth=no " + hashes(beforeLib);
        assertTrue(lines.get(1).matches("   before: " + Pattern.quote(box.base.resolve("tmp").toString())
                + "/liveness-cost\\.\\w+/before: " + Pattern.quote(beforeInfo)), lines.get(1));
        assertTrue(lines.get(2).matches("   after: " + Pattern.quote(box.base.resolve("tmp").toString())
                + "/liveness-cost\\.\\w+/after: " + Pattern.quote(afterInfo)), lines.get(2));
        String[] order = {"round 1 before", "round 1 after", "round 2 before", "round 2 after"};
        for (int k = 1; k <= 4; k++) {
            assertTrue(lines.get(2 + k).startsWith("[" + k + "/4] " + order[k - 1] + ": heartbeat ok; departures: 2 "
                    + "rows, 2 with every rank ended within its bound, hs_err files 0, processes left 0; "),
                    lines.get(2 + k));
        }
        assertEquals("report: " + out.resolve("liveness-cost.md"), lines.get(lines.size() - 1));
        assertEquals(List.of("1\tbefore\tr1-before/heartbeat\t\tr1-before/departures\t0",
                "1\tafter\tr1-after/heartbeat\t\tr1-after/departures\t0",
                "2\tbefore\tr2-before/heartbeat\t\tr2-before/departures\t0",
                "2\tafter\tr2-after/heartbeat\t\tr2-after/departures\t0"), Files.readAllLines(out.resolve("runs.tsv")));
        // run k: the heartbeat job on MASTER_PORT 21000 + 1000 k + 500, departures.sh's rows on 21000 + 1000 k + 100 n
        for (int k = 1; k <= 4; k++) {
            String run = "r" + ((k + 1) / 2) + "-" + (k % 2 == 1 ? "before" : "after");
            String side = k % 2 == 1 ? "side-before" : "side-new";
            for (int rank = 0; rank < 4; rank++) {
                String log = Files.readString(out.resolve(run + "/heartbeat/rank" + rank + ".log"));
                assertTrue(log.startsWith("LCENV rank=" + rank + " WORLD_SIZE=4 LOCAL_RANK=" + rank
                        + " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + (21000 + 1000 * k + 500) + " NCCL_NVLS_ENABLE=0 "
                        + "secret=64 core="), log);
                assertTrue(log.contains(" " + side + " tools=" + side + " args=none --steps 60 --step 1 --sleep-ms 50 --count 1024\nSTART "
                        + "rank=" + rank + " "), log);
                assertTrue(log.contains("\nRESULT rank=" + rank + " "), log);
            }
            for (String[] row : List.of(new String[] {"001-kill", "100"}, new String[] {"002-stop", "200"})) {
                String log = Files.readString(out.resolve(run + "/departures/" + row[0] + "-java-4gpu/rank0.log"));
                assertTrue(log.startsWith("LCENV rank=0 WORLD_SIZE=4 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT="
                        + (21000 + 1000 * k + Integer.parseInt(row[1])) + " NCCL_NVLS_ENABLE=0 secret=64 core="), log);
                assertTrue(log.contains(" " + side + " tools=" + side + " args=\n"), log);
            }
        }
        String md = Files.readString(out.resolve("liveness-cost.md"));
        assertTrue(r.out().contains(md), "it prints the report");
        assertLines(md, "- Command: `" + box.root.resolve("scripts/bench/liveness-cost.sh") + " " + box.bundle + " "
                + beforeLib + " " + afterLib + "`",
                "- Variables: ROUNDS=2 SIZE=4 HB_SETTLE=1 HB_WINDOW=1 HB_SLEEP_MS=50 HB_COUNT=1024 HB_STEPS=60 "
                        + "DEP_STEPS=4 ROW_LIMIT=30 PORT=21000 SECRET=1 CHECK_SIDES=1 JAVA_OPTS=",
                "- GPUs: GPU 0: Fake GPU; GPU 1: Fake GPU; GPU 2: Fake GPU; GPU 3: Fake GPU");
        assertTrue(md.contains("; Java: openjdk version \"17.0.99\" (fake)\n"), md);
        assertLines(md, "- before: a copy of " + box.bundle + " with the nccl4j jars of " + beforeLib + "; the job "
                + "secret's authentication: no; sha256 of the jars: " + reported(beforeLib),
                "- after: a copy of " + box.bundle + " with the nccl4j jars of " + afterLib + "; the job secret's "
                        + "authentication: yes; sha256 of the jars: " + reported(afterLib),
                "- Job secret: NCCL4J_JOB_SECRET set to a random 64-hex-digit value for both sides (code from before "
                        + "the secret ignores it)");
        // every measure has a figure on both sides; each fake rank is one thread named nccl4j-liveness
        for (String m : List.of("heartbeat CPU, rank 0 (liveness threads, us/s)", "heartbeat CPU, ranks 1-3 mean "
                + "(liveness threads, us/s)", "process CPU, rank 0 (all threads, ms/s)", "kill: the last rank's end "
                + "after the SIGKILL (s)", "stop: the ranks' mean end after the SIGSTOP (s)")) {
            assertTrue(Pattern.compile("\n\\| " + Pattern.quote(m) + " \\| \\d+\\.\\d+ \\| \\d+\\.\\d+ \\| "
                    + "[+-]\\d+\\.\\d+ \\| \\d+\\.\\d+ \\| (yes|no) \\|\n").matcher(md).find(), m + "\n" + md);
        }
        assertTrue(Pattern.compile("\n\\| 2 \\| after \\| \\d\\.\\d\\d \\| [\\d. /]+ \\| 1 / 1 / 1 / 1 \\| "
                + "0, 0 / 0, 0 / 0, 0 / 0, 0 \\| [\\d. /]+ \\| r0=0 r1=0 r2=0 r3=0 \\| ok \\|\n").matcher(md).find(),
                md);
        assertFalse(md.contains("## Problems"), md);
        assertEquals(1 + 8 * 4, Files.readAllLines(out.resolve("liveness-cost.tsv")).size());
        assertEquals(List.of(), marked());
        assertEquals(List.of(), leftovers(), "the temporary bundles are removed");
    }

    @Test
    void twoRanksOneRoundNoSecretAndTheBundleAsTheAfterSide() throws Exception {
        sandbox("a", "stale", false);
        Path out = box.base.resolve("out");
        SandboxOutcome r = script(2, "OUT_DIR", out.toString(), "ROUNDS", "1", "SIZE", "2", "SECRET", "0", "CHECK_SIDES", "0",
                "NCCL4J_JOB_SECRET", "a-secret-of-the-caller", "HB_SETTLE", "1", "HB_WINDOW", "1", "HB_STEPS", "50",
                "--", box.bundle.toString(), beforeLib.toString());
        assertEquals(0, r.status(), r.toString());
        assertEquals("   after: " + box.bundle + ": auth=no " + hashes(box.bundle.resolve("lib")), r.outLines().get(2));
        for (String run : List.of("r1-before", "r1-after")) {
            String log = Files.readString(out.resolve(run + "/heartbeat/rank1.log"));
            assertTrue(log.startsWith("LCENV rank=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="
                    + (run.endsWith("before") ? 22500 : 23500) + " NCCL_NVLS_ENABLE=0 secret=none core="), log);
            assertTrue(Files.isRegularFile(out.resolve(run + "/departures/002-stop-java-2gpu/rank1.log")), run);
        }
        String md = Files.readString(out.resolve("liveness-cost.md"));
        assertLines(md, "- Job secret: none (SECRET=0): the after side runs unauthenticated");
        assertLines(md, "- after: " + box.bundle + "; the job secret's authentication: no; sha256 of the jars: "
                + reported(box.bundle.resolve("lib")));
        assertTrue(Pattern.compile("\n\\| heartbeat CPU, rank 1 \\(liveness threads, us/s\\) \\| \\d+\\.\\d \\| "
                + "\\d+\\.\\d \\| [+-]\\d+\\.\\d \\| n/a \\| n/a \\|\n").matcher(md).find(), md);
        assertTrue(md.contains("`scripts/departures.sh` with `SCENARIOS=\"kill stop\" LAUNCHERS=java "
                + "CONFIGS=2gpu`"), md);
        assertTrue(md.contains("\n| 1 | after | kill | yes | r0 "), md);
        assertEquals(List.of(), marked());
    }
}
