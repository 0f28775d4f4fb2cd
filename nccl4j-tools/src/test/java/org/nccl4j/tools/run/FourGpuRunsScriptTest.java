package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.tools.run.ScriptSandbox.env;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** scripts/four-gpu-runs.sh in the sandbox: the parts' commands and settings, the skips and the refusals. */
class FourGpuRunsScriptTest {
    @TempDir
    Path tmp;
    private ScriptSandbox box;

    @BeforeEach
    void sandbox() throws Exception {
        box = new ScriptSandbox(tmp);
    }

    private ScriptSandbox.SandboxOutcome run(String... more) throws Exception {
        Map<String, String> e = env("FAKE_GPUS", "4", "OUT_DIR", tmp.resolve("out").toString());
        e.putAll(env(more));
        return box.run(box.root.resolve("scripts/four-gpu-runs.sh"), e, box.bundle.toString());
    }

    @Test
    void eachPartIsOneOfTheProjectsScriptsWithTheIssuesSettings() throws Exception {
        ScriptSandbox.SandboxOutcome r = run("DRY_RUN", "1");
        assertEquals(0, r.status(), r.toString());
        String s = box.root.resolve("scripts").toString();
        String b = box.bundle.toString();
        StringBuilder every = new StringBuilder();
        for (String op : List.of("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "alltoall",
                "gather", "scatter", "sendrecv")) {
            every.append(every.length() == 0 ? "" : ";").append(op).append("_perf -b 64M -e 256M -f 4 -n 20 -w 5 -c 0");
        }
        String small = "all_reduce_perf -b 8 -e 64K -f 2 -n 2000 -w 500 -c 0";
        String libs = "LIBS=system=/usr/lib/x86_64-linux-gnu/libnccl.so.2";
        assertEquals(List.of(
                "every operation, 64-256 MiB, -R 0 1 2: NPS=4 REGS=0 1 2 ROUNDS=3 " + libs + " CASES=" + every + " bash " + s
                        + "/bench/frontier.sh " + b,
                "small all-reduces, 4 cores a rank: NPS=4 REGS=0 2 ROUNDS=3 MAP_BY=slot:PE=4 BIND=core " + libs
                        + " CASES=" + small
                        + " bash " + s + "/bench/frontier.sh " + b,
                "small all-reduces, 1 core a rank: NPS=4 REGS=0 2 ROUNDS=3 MAP_BY=slot:PE=1 BIND=core " + libs
                        + " CASES=" + small
                        + " bash " + s + "/bench/frontier.sh " + b,
                "NCCL's choices where runs took two levels, 64-256 MiB: NPS=4 REGS=1 2 ROUNDS=6 " + libs + LOGGED
                        + " CASES=broadcast_perf -b 64M -e 256M -f 4 -n 200 -w 20 -c 0;all_reduce_perf -b 64M -e 256M"
                        + " -f 4 -n 200 -w 20 -c 0 bash " + s + "/bench/frontier.sh " + b,
                "NCCL's choices in the small all-reduces at -R 2: NPS=4 REGS=2 ROUNDS=3 MAP_BY=slot:PE=4 BIND=core "
                        + libs + LOGGED + " CASES=all_reduce_perf -b 8 -e 2K -f 2 -n 200 -w 50 -c 0 bash " + s
                        + "/bench/frontier.sh " + b,
                "sharded training against FSDP2, 80 layers: NP=4 LAYERS=80 ROUNDS=2 bash " + s
                        + "/bench/sharded-compare.sh " + b,
                "the phase matrix, 4 ranks on 4 GPUs: CONFIGS=4gpu BUDGET=510 bash " + s + "/departures.sh " + b,
                "the start-up SIGTERM fuzz, 4 ranks on 4 GPUs: STARTUP_FUZZ=200 FUZZ_RANKS=4 FUZZ_CONFIG=gpus JOBS=4"
                        + " BUDGET=510 bash " + s + "/departures.sh " + b,
                "two rehearsed hosts, every part: PARTS=launchers ops ddp elastic bash " + s + "/two-hosts.sh " + b),
                r.outLines(), r.toString());
        r = run("DRY_RUN", "1", "PARTS", "phases", "PART_TIMEOUT", "300");
        assertEquals(List.of("the phase matrix, 4 ranks on 4 GPUs: CONFIGS=4gpu BUDGET=270 bash " + s + "/departures.sh "
                + b), r.outLines(), "the matrix's budget follows the part's time");
        r = run("DRY_RUN", "1", "PARTS", "ops fuzz", "OPS_REGS", "2", "LIBS", "torch=/t/libnccl.so.2", "FUZZ_RUNS", "50");
        assertEquals(List.of("every operation, 64-256 MiB, -R 2: NPS=4 REGS=2 ROUNDS=3 LIBS=torch=/t/libnccl.so.2 CASES="
                + every + " bash " + s + "/bench/frontier.sh " + b,
                "the start-up SIGTERM fuzz, 4 ranks on 4 GPUs: STARTUP_FUZZ=50 FUZZ_RANKS=4 FUZZ_CONFIG=gpus JOBS=4"
                        + " BUDGET=510 bash " + s + "/departures.sh " + b), r.outLines(),
                "OPS_REGS, LIBS and FUZZ_RUNS reach their parts");
        r = run("DRY_RUN", "1", "PARTS", "causes", "CAUSE_ROUNDS", "10");
        assertTrue(r.outLines().get(0).startsWith("NCCL's choices where runs took two levels, 64-256 MiB: NPS=4 "
                + "REGS=1 2 ROUNDS=10 "), r.toString());
        assertTrue(r.outLines().get(1).startsWith("NCCL's choices in the small all-reduces at -R 2: NPS=4 REGS=2 "
                + "ROUNDS=3 "), "CAUSE_ROUNDS is the large cells' alone\n" + r);
    }

    /** The NCCL log settings of the causes parts, as the dry run prints them. */
    private static final String LOGGED = " NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING,REG NCCL4J_NCCL_LOG=off";

    @Test
    void thePartsThatNeedNcclTestsAreSkippedWithoutThemSayingSo() throws Exception {
        ScriptSandbox.SandboxOutcome r = run("PARTS", "ops small causes");
        assertEquals(0, r.status(), r.toString());
        List<String> lines = r.outLines();
        assertEquals("SKIPPED ops (no NCCL_TESTS_SRC or NCCL_TESTS_BIN)", lines.get(lines.size() - 3), r.toString());
        assertEquals("SKIPPED small (no NCCL_TESTS_SRC or NCCL_TESTS_BIN)", lines.get(lines.size() - 2), r.toString());
        assertEquals("SKIPPED causes (no NCCL_TESTS_SRC or NCCL_TESTS_BIN)", lines.get(lines.size() - 1), r.toString());
        assertTrue(r.of("timeout").isEmpty(), "nothing ran: " + r);
    }

    @Test
    void aBadPartFewerThanFourGpusOrABadTimeoutAreRefused() throws Exception {
        ScriptSandbox.SandboxOutcome r = run("PARTS", "sharded bogus");
        assertEquals(2, r.status());
        assertEquals("four-gpu-runs: PARTS: ops small causes sharded phases fuzz hosts (got 'bogus')",
                r.err().strip());
        r = run("FAKE_GPUS", "2", "PARTS", "sharded");
        assertEquals(2, r.status());
        assertEquals("four-gpu-runs: 4 GPUs needed, nvidia-smi lists 2", r.err().strip());
        r = run("PART_TIMEOUT", "10m");
        assertEquals(2, r.status());
        assertEquals("four-gpu-runs: PART_TIMEOUT takes whole seconds (got '10m')", r.err().strip());
        r = run("OPS_REGS", "0 3");
        assertEquals(2, r.status());
        assertEquals("four-gpu-runs: OPS_REGS: -R values 0, 1 and 2 (got '3')", r.err().strip());
        r = run("FUZZ_RUNS", "0");
        assertEquals(2, r.status());
        assertEquals("four-gpu-runs: FUZZ_RUNS takes a whole number above 0 (got '0')", r.err().strip());
        r = run("CAUSE_ROUNDS", "three");
        assertEquals(2, r.status());
        assertEquals("four-gpu-runs: CAUSE_ROUNDS takes a whole number above 0 (got 'three')", r.err().strip());
    }
}
