package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.tools.run.ScriptSandbox.env;
import static org.nccl4j.tools.run.ScriptKit.assertLines;
import static org.nccl4j.tools.run.ScriptKit.executable;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * scripts/bench/frontier.sh on the CPU, in the script sandbox: a stand-in for nccl-tests' all_reduce_perf that prints
 * nccl-tests' lines (its times depend on -R), the fake mpirun and java; the runs' order, the library each side gets,
 * the TSV's out-of-place and in-place columns, the report's medians and differences in both placements, the summary's
 * least ratio over both placements, and the usage errors.
 */
class FrontierScriptTest {
    @TempDir
    Path tmp;
    private ScriptSandbox box;
    private Path tests;

    @BeforeEach
    void sandbox() throws Exception {
        box = new ScriptSandbox(tmp);
        tests = Files.createDirectories(tmp.resolve("nccl-tests"));
        // rank 0 prints a size line: out of place 6.5 us (-R 0) or 5.5 us (-R 2), bus bandwidth 1.25; in place 6.0 us
        // (-R 0) or 5.0 us (-R 2), bus bandwidth 1.00
        executable(tests.resolve("all_reduce_perf"), String.join("\n", "#!/usr/bin/env bash",
                "[ \"${OMPI_COMM_WORLD_RANK:-0}\" = 0 ] || exit 0",
                "reg=0; while [ $# -gt 0 ]; do [ \"$1\" = -R ] && reg=$2; shift; done",
                "t=6.50 i=6.00; [ \"$reg\" = 2 ] && t=5.50 i=5.00",
                "echo '#       size         count      type   redop    root     time   algbw   busbw  #wrong'",
                "printf '%12d  %12d  %8s  %6s  %6d  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\\n' 8 2 float sum -1 "
                        + "\"$t\" 0.00 1.25 0 \"$i\" 0.00 1.00 0",
                ""));
    }

    private ScriptSandbox.SandboxOutcome run(Map<String, String> extra) throws Exception {
        Map<String, String> e = env("NCCL_TESTS_BIN", tests.toString(), "LIBS", "sys=/opt/nccl/libnccl.so.2",
                "NPS", "2", "REGS", "0 2", "ROUNDS", "2", "OUT_DIR", tmp.resolve("out").toString(),
                "FAKE_JAVA_OUT_RANK", "           8             2     float     sum      -1     6.40    0.00    1.50"
                        + "    N/A     6.10    0.00    1.10    N/A\\n");
        e.putAll(extra);
        return box.run(box.root.resolve("scripts/bench/frontier.sh"), e, box.bundle.toString());
    }

    @Test
    void runsBothSidesAlternatelyOnTheirLibraryAndReportsMediansAndDifferences() throws Exception {
        ScriptSandbox.SandboxOutcome r = run(Map.of());
        assertEquals(0, r.status(), r.toString());
        List<ScriptSandbox.Call> mpi = r.of("mpirun");
        assertEquals(8, mpi.size(), "2 -R values x 2 rounds x 2 sides\n" + r);
        List<String> sides = mpi.stream().map(c -> c.args().contains("NCCL4J_LIBRARY=/opt/nccl/libnccl.so.2")
                ? "java" : "c").collect(Collectors.toList());
        assertEquals(List.of("c", "java", "java", "c", "c", "java", "java", "c"), sides, "C first in odd rounds");
        for (ScriptSandbox.Call c : mpi) {
            assertEquals("0", c.env("NCCL_NVLS_ENABLE"));
            assertTrue(c.args().contains("NCCL_NVLS_ENABLE"), c.args().toString());
            assertEquals("2", c.args().get(c.args().indexOf("-np") + 1), c.args().toString());
            if (!c.args().contains("NCCL4J_LIBRARY=/opt/nccl/libnccl.so.2")) {
                assertTrue(c.args().stream().anyMatch(a -> a.startsWith("LD_LIBRARY_PATH=/opt/nccl:")),
                        c.args().toString());
            }
            // each rank's command is in the script mpirun runs: nccl4j-perf reads the clock as nccl-tests does
            String rank = Files.readString(Path.of(c.args().get(c.args().size() - 1)));
            assertEquals(c.args().contains("NCCL4J_LIBRARY=/opt/nccl/libnccl.so.2"), rank.contains(" --timer host"),
                    rank);
        }
        Path tsv = tmp.resolve("out/frontier.tsv");
        List<String> rows = Files.readAllLines(tsv);
        assertEquals("lib\tnp\treg\tcase\tround\tside\tsize\ttime_us\tbusbw\tin_place_time_us\tin_place_busbw",
                rows.get(0));
        String c = "all_reduce_perf -b 8 -e 64K -f 2 -n 2000 -w 500 -c 0";
        assertTrue(rows.contains("sys\t2\t2\t" + c + "\t2\tc\t8\t5.50\t1.25\t5.00\t1.00"), rows.toString());
        assertTrue(rows.contains("sys\t2\t0\t" + c + "\t1\tjava\t8\t6.40\t1.50\t6.10\t1.10"), rows.toString());
        // the sandbox's python3 is a fake: the report, from the real one
        ScriptKit.assumeOnPath("python3");
        ScriptKit.Outcome rep = ScriptKit.exec(null, ScriptKit.PYTHON_ENV, List.of("python3",
                box.root.resolve("scripts/bench/frontier_report.py").toString(), tsv.toString()));
        assertEquals(0, rep.status(), rep.out());
        String md = rep.out();
        assertLines(md, "| size | C us | Java us | Java - C us | Java / C | C busbw | Java busbw | busbw J / C "
                + "| rounds J - C |", "|---|---|---|---|---|---|---|---|---|",
                "| 8 | 6.50 | 6.40 | -0.10 | 0.985 | 1.25 | 1.50 | 1.2000 | -0.10 -0.10 |");
        assertLines(md, "| 8 | 5.50 | 6.40 | +0.90 | 1.164 | 1.25 | 1.50 | 1.2000 | +0.90 +0.90 |");
        // in place, in a table of its own after each out-of-place one: -R 0, then -R 2
        assertLines(md, "| 8 | 6.50 | 6.40 | -0.10 | 0.985 | 1.25 | 1.50 | 1.2000 | -0.10 -0.10 |", "", "In place:", "",
                "| size | C us | Java us | Java - C us | Java / C | C busbw | Java busbw | busbw J / C "
                        + "| rounds J - C |", "|---|---|---|---|---|---|---|---|---|",
                "| 8 | 6.00 | 6.10 | +0.10 | 1.017 | 1.00 | 1.10 | 1.1000 | +0.10 +0.10 |");
        assertLines(md, "| 8 | 5.00 | 6.10 | +1.10 | 1.220 | 1.00 | 1.10 | 1.1000 | +1.10 +1.10 |");
        assertTrue(md.contains("## sys, 2 GPUs, -R 0: `all_reduce_perf -b 8 -e 64K -f 2 -n 2000 -w 500 -c 0`"), md);
        assertTrue(md.contains("## sys, 2 GPUs, -R 2: "), md);
        assertTrue(r.out().contains("== runs took "), r.out());
        assertEquals(List.of(box.root.resolve("scripts/bench/frontier_report.py").toString(), tsv.toString(), "--json",
                tmp.resolve("out/frontier.json").toString()), r.first("python3").args(), "the summary is asked for");
    }

    @Test
    void ncclsLogSettingsReachBothProgramsAndTheChoicesAreReported() throws Exception {
        ScriptSandbox.SandboxOutcome r = run(Map.of("NCCL_DEBUG", "INFO", "NCCL_DEBUG_SUBSYS", "INIT,TUNING",
                "NCCL4J_NCCL_LOG", "off"));
        assertEquals(0, r.status(), r.toString());
        for (ScriptSandbox.Call c : r.of("mpirun")) {
            for (String v : List.of("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL4J_NCCL_LOG")) {
                assertTrue(c.args().contains(v), v + " forwarded: " + c.args());
            }
            assertEquals("INIT,TUNING", c.env("NCCL_DEBUG_SUBSYS"));
        }
        assertEquals(List.of(box.root.resolve("scripts/bench/nccl_choices.py").toString(),
                tmp.resolve("out").toString()), r.of("python3").get(1).args(), "the choices, after the report");
        assertTrue(r.out().contains("== what NCCL chose: " + tmp.resolve("out/choices.md")), r.out());
        // without NCCL_DEBUG: nothing forwarded, no choices
        ScriptSandbox.SandboxOutcome plain = run(Map.of());
        assertTrue(plain.of("mpirun").stream().noneMatch(c -> c.args().contains("NCCL_DEBUG")), plain.toString());
        assertEquals(1, plain.of("python3").size(), plain.toString());
    }

    @Test
    void theChoicesTellTwoLevelsApartByWhatNcclDidOrSayNothingDoes() throws Exception {
        ScriptKit.assumeOnPath("python3");
        Path raw = Files.createDirectories(tmp.resolve("choices/raw"));
        // -R 1 broadcast at 64 MiB, 4 ranks: round 1 of both programs on 16 channels at 247-248 us, round 2 on 32 at
        // 235-236 us; all_gather at 64 MiB: one level's worth of spread, its tuning lines with one rank's part
        for (String[] v : new String[][] {{"c", "1", "247.50", "16"}, {"java", "1", "248.00", "16"},
            {"c", "2", "235.70", "32"}, {"java", "2", "236.30", "32"}}) {
            String name = "sys-np4-R1-case0-" + v[0] + "-" + v[1];
            Files.writeString(raw.resolve(name + ".rank.sh"), "#!/usr/bin/env bash\nexec " + (v[0].equals("c")
                    ? "/b/nccl-tests/broadcast_perf" : "/r/scripts/nccl4j-perf broadcast_perf")
                    + " -b 64M -e 64M -n 200 -R 1" + (v[0].equals("c") ? "" : " --timer host") + "\n");
            int last = Integer.parseInt(v[3]) - 1;
            Files.writeString(raw.resolve(name + ".log"), String.join("\n",
                    "[1,0]<stdout>:vm:11:11 [0] NCCL INFO " + v[3] + " coll channels, " + v[3] + " collnet channels, 0 "
                            + "nvls channels, 32 p2p channels, 32 p2p channels per peer",
                    "[1,1]<stdout>:vm:12:12 [1] NCCL INFO " + v[3] + " coll channels, " + v[3] + " collnet channels, 0 "
                            + "nvls channels, 32 p2p channels, 32 p2p channels per peer",
                    "[1,0]<stdout>:vm:11:11 [0] NCCL INFO Pattern 4, crossNic 0, nChannels " + v[3] + ", bw "
                            + "40.000000/40.000000, type NVL/PIX, sameChannels 1",
                    "[1,0]<stdout>:vm:11:11 [0] NCCL INFO Channel 00/" + v[3] + " :    0   1   2   3",
                    "[1,0]<stdout>:vm:11:11 [0] NCCL INFO Broadcast: 67108864 Bytes -> Algo RING proto SIMPLE "
                            + "channel{Lo..Hi}={0.." + last + "}",
                    "[1,0]<stdout>:vm:11:11 [0] NCCL INFO Broadcast: 67108864 Bytes -> Algo RING proto SIMPLE "
                            + "channel{Lo..Hi}={0.." + last + "}",
                    "[1,0]<stdout>:vm:11:11 [0] NCCL INFO register comm 0x5e00 buffer 0x7f00 size 67108864",
                    "[1,0]<stdout>:vm:11:11 [0] NCCL INFO rank 0 - IPC register buffer 0x7f00 size 67108864 (baseAddr "
                            + "0x7f00 size 67108864) to peer 1 regAddr 0x7e00 offsetOut 0",
                    "[1,0]<stdout>:    67108864      16777216     float    none       0   " + v[2] + "  271.1  271.89    N/A"
                            + "   " + v[2] + "  271.1  271.89    N/A", ""));
            name = "sys-np4-R1-case1-" + v[0] + "-" + v[1];
            Files.writeString(raw.resolve(name + ".rank.sh"), "exec /b/nccl-tests/all_gather_perf -b 64M -R 1\n");
            Files.writeString(raw.resolve(name + ".log"), String.join("\n",
                    "vm:11:11 [0] NCCL INFO AllGather: 16777216 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..23}",
                    "    67108864      4194304     float    none      -1   " + (v[1].equals("1") ? "180.00" : "181.00")
                            + "  1  2  0   170.00  1  2  0", ""));
        }
        ScriptKit.Outcome o = ScriptKit.exec(null, ScriptKit.PYTHON_ENV, List.of("python3",
                box.root.resolve("scripts/bench/nccl_choices.py").toString(), tmp.resolve("choices").toString()));
        assertEquals(0, o.status(), o.out());
        String md = o.out();
        assertLines(md, "## 4 ranks, -R 1, `broadcast_perf -b 64M -e 64M -n 200`, 67108864 B, out of place", "",
                "| run | time us | busbw | channels | graph | rings | choice | registrations |",
                "|---|---:|---:|---|---|---|---|---|",
                "| c 2 | 235.70 | 271.89 | 32 coll, 0 nvls, 32 p2p | pattern 4, 32 ch, bw 40/40, NVL/PIX | 1 "
                        + "| RING/SIMPLE ch 0-31 x2 | registered 1, IPC register 1 |",
                "| java 2 | 236.30 | 271.89 | 32 coll, 0 nvls, 32 p2p | pattern 4, 32 ch, bw 40/40, NVL/PIX | 1 "
                        + "| RING/SIMPLE ch 0-31 x2 | registered 1, IPC register 1 |",
                "| c 1 | 247.50 | 271.89 | 16 coll, 0 nvls, 32 p2p | pattern 4, 16 ch, bw 40/40, NVL/PIX | 1 "
                        + "| RING/SIMPLE ch 0-15 x2 | registered 1, IPC register 1 |");
        assertTrue(md.contains("levels: 2 faster (235.70-236.30 us), 2 slower (247.50-248.00 us; c 1 of 2, java 1 of "
                + "2); they differ in channels (slower: 16 coll, 0 nvls, 32 p2p; faster: 32 coll, 0 nvls, 32 p2p); graph "
                + "(slower: pattern 4, 16 ch, bw 40/40, NVL/PIX; faster: pattern 4, 32 ch, bw 40/40, NVL/PIX); rings (no "
                + "slower run has a faster run's ring orders); choice (slower: RING/SIMPLE ch 0-15 x2; faster: "
                + "RING/SIMPLE ch 0-31 x2)\n"), md);
        // all_gather: 180 and 181 us are one level; its tuning line has one rank's part (64 MiB / 4)
        assertTrue(md.contains("| c 1 | 180.00 | 2 | - | - | 0 | RING/SIMPLE ch 0-23 x1 | - |"), md);
        assertTrue(md.contains("one level: the times are within 1.5 % of each other"), md);
        // in place, the same runs at one level: 170 us each
        assertTrue(md.contains("## 4 ranks, -R 1, `all_gather_perf -b 64M`, 67108864 B, in place"), md);
        // the same runs where nothing logged differs: the levels are named, and that no fact tells them apart
        ScriptKit.Outcome wide = ScriptKit.exec(null, ScriptKit.PYTHON_ENV, List.of("python3",
                box.root.resolve("scripts/bench/nccl_choices.py").toString(), tmp.resolve("choices").toString(),
                "--tolerance", "0.1"));
        assertTrue(wide.out().contains("levels: 2 faster (180.00-180.00 us), 2 slower (181.00-181.00 us; c 1 of 2, "
                + "java 1 of 2); no logged NCCL fact tells the levels apart"), wide.out());
        assertEquals(2, ScriptKit.exec(null, ScriptKit.PYTHON_ENV, List.of("python3",
                box.root.resolve("scripts/bench/nccl_choices.py").toString(), tmp.resolve("none").toString()))
                .status());
    }

    @Test
    void theSummaryHasTheIssuesFieldsFromTheMediansOfTheRun() throws Exception {
        ScriptKit.assumeOnPath("python3");
        String small = "all_reduce_perf -b 8 -e 64K -f 2";
        String large = "all_gather_perf -b 64M -e 128M -f 2";
        StringBuilder t = new StringBuilder(HEADER + "\tin_place_time_us\tin_place_busbw\n");
        // -R 2, 2 ranks, library a: sizes 8 and 16 B (and 1 MiB, above the small range), two rounds each side; in
        // place 1 us on every row, which the small figures (out of place) must not take
        for (String[] v : new String[][] {{"8", "5.0", "6.0", "5.2", "6.2"}, {"16", "5.4", "6.4", "5.6", "6.6"},
            {"1048576", "50", "60", "50", "60"}}) {
            t.append(row("a", 2, 2, small, 1, "java", v[0], v[1], "1", "1", "1"))
                    .append(row("a", 2, 2, small, 1, "c", v[0], v[2], "1", "1", "1"))
                    .append(row("a", 2, 2, small, 2, "java", v[0], v[3], "1", "1", "1"))
                    .append(row("a", 2, 2, small, 2, "c", v[0], v[4], "1", "1", "1"));
        }
        // 4 ranks at 64 and 128 MiB: library a out of place 0.99 and 0.98 of C, in place 0.96 and 1.00 (its least, in
        // place); library b out of place 0.97 at -R 1 (its least), in place 0.99
        t.append(row("a", 4, 0, large, 1, "c", "67108864", "100", "300", "100", "300"))
                .append(row("a", 4, 0, large, 1, "java", "67108864", "101", "297", "104", "288"));
        t.append(row("a", 4, 0, large, 1, "c", "134217728", "200", "300", "200", "300"))
                .append(row("a", 4, 0, large, 1, "java", "134217728", "204", "294", "200", "300"));
        t.append(row("b", 4, 1, large, 1, "c", "67108864", "100", "300", "100", "300"))
                .append(row("b", 4, 1, large, 1, "java", "67108864", "103", "291", "101", "297"));
        t.append(row("b", 4, 1, large, 1, "c", "33554432", "50", "300", "50", "300"))
                .append(row("b", 4, 1, large, 1, "java", "33554432", "60", "150", "150", "100"));   // below 64 MiB
        Path tsv = tmp.resolve("summary.tsv");
        Files.writeString(tsv, t.toString());
        String j = summaryOf(tsv);
        // the medians over the rounds: 8 B java 5.1, c 6.1; 16 B java 5.5, c 6.5: over the sizes java 5.3, c 6.3
        assertTrue(j.endsWith("\"library\": \"a\", \"min_busbw_ratio_64MiB_up_4gpu\": 0.96, "
                + "\"min_busbw_ratio_64MiB_up_4gpu_at\": \"a -R 0 all_gather 67108864 in place\", "
                + "\"nccl_tests_symmetric_small_us\": 6.3, \"symmetric_small_us\": 5.3 } "), j);
        assertTrue(j.contains("\"a\": { \"min_busbw_ratio_64MiB_up_4gpu\": 0.96, \"min_busbw_ratio_64MiB_up_4gpu_at\": "
                + "\"a -R 0 all_gather 67108864 in place\", \"nccl_tests_symmetric_small_us\": 6.3, "
                + "\"symmetric_small_us\": 5.3 }"), j);
        assertTrue(j.contains("\"b\": { \"min_busbw_ratio_64MiB_up_4gpu\": 0.97, \"min_busbw_ratio_64MiB_up_4gpu_at\": "
                + "\"b -R 1 all_gather 67108864 out of place\", \"nccl_tests_symmetric_small_us\": null, "
                + "\"symmetric_small_us\": null }"), j);
        String md = ScriptKit.exec(null, ScriptKit.PYTHON_ENV, List.of("python3",
                box.root.resolve("scripts/bench/frontier_report.py").toString(), tsv.toString())).out();
        assertLines(md, "| 67108864 | 100.00 | 104.00 | +4.00 | 1.040 | 300.00 | 288.00 | 0.9600 | +4.00 |",
                "| 134217728 | 200.00 | 200.00 | +0.00 | 1.000 | 300.00 | 300.00 | 1.0000 | +0.00 |");
        assertEquals(2, ScriptKit.exec(null, ScriptKit.PYTHON_ENV, List.of("python3",
                box.root.resolve("scripts/bench/frontier_report.py").toString(), tsv.toString(), "--jsn", "x"))
                .status());
    }

    @Test
    void aTsvFromBeforeTheInPlaceColumnsGivesTheOutOfPlaceFiguresAlone() throws Exception {
        ScriptKit.assumeOnPath("python3");
        String large = "all_gather_perf -b 64M -e 128M -f 2";
        Path tsv = tmp.resolve("old.tsv");
        Files.writeString(tsv, HEADER + "\n"
                + String.join("\t", "b", "4", "1", large, "1", "c", "67108864", "100", "300") + "\n"
                + String.join("\t", "b", "4", "1", large, "1", "java", "67108864", "103", "291") + "\n");
        String j = summaryOf(tsv);
        assertTrue(j.contains("\"min_busbw_ratio_64MiB_up_4gpu\": 0.97, \"min_busbw_ratio_64MiB_up_4gpu_at\": "
                + "\"b -R 1 all_gather 67108864 out of place\""), j);
        ScriptKit.Outcome rep = ScriptKit.exec(null, ScriptKit.PYTHON_ENV, List.of("python3",
                box.root.resolve("scripts/bench/frontier_report.py").toString(), tsv.toString()));
        assertEquals(0, rep.status(), rep.out());
        assertLines(rep.out(), "| 67108864 | 100.00 | 103.00 | +3.00 | 1.030 | 300.00 | 291.00 | 0.9700 | +3.00 |");
        assertTrue(!rep.out().contains("In place"), rep.out());
    }

    private static final String HEADER = "lib\tnp\treg\tcase\tround\tside\tsize\ttime_us\tbusbw";

    /** frontier_report.py's --json of the TSV, its white space made single spaces. */
    private String summaryOf(Path tsv) throws Exception {
        Path json = tmp.resolve(tsv.getFileName() + ".json");
        ScriptKit.Outcome rep = ScriptKit.exec(null, ScriptKit.PYTHON_ENV, List.of("python3",
                box.root.resolve("scripts/bench/frontier_report.py").toString(), tsv.toString(), "--json",
                json.toString()));
        assertEquals(0, rep.status(), rep.out());
        return Files.readString(json).replaceAll("\\s+", " ");
    }

    private static String row(String lib, int np, int reg, String c, int round, String side, String size, String us,
            String busbw, String inPlaceUs, String inPlaceBusbw) {
        return String.join("\t", lib, Integer.toString(np), Integer.toString(reg), c, Integer.toString(round), side,
                size, us, busbw, inPlaceUs, inPlaceBusbw) + "\n";
    }

    @Test
    void usageErrorsNameTheVariable() throws Exception {
        ScriptSandbox.SandboxOutcome r = run(Map.of("ROUNDS", "0"));
        assertEquals(2, r.status(), r.toString());
        assertEquals("frontier.sh: ROUNDS=0 is not a whole number above 0\n", r.err());
        r = run(Map.of("NCCL_TESTS_BIN", "", "NCCL_TESTS_SRC", tmp.resolve("none").toString()));
        assertEquals(2, r.status(), r.toString());
        assertEquals("frontier.sh: NCCL_TESTS_SRC must name a copy of NVIDIA/nccl-tests' source (it has "
                + "src/common.cu)\n", r.err());
        r = run(Map.of("NPS", "", "FAKE_GPUS", "1"));
        assertEquals(2, r.status(), r.toString());
        assertEquals("frontier.sh: no two GPUs here (nvidia-smi -L lists 1)\n", r.err());
        assertEquals(List.of(), r.of("mpirun"));
    }
}
