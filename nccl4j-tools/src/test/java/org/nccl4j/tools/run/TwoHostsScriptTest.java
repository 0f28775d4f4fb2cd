package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.tools.run.ScriptSandbox.env;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** scripts/two-hosts.sh against the fake bundle: what it runs, what it checks, what it refuses. */
class TwoHostsScriptTest {
    private static final String SURVIVORS = "[0] rank 0: final weights crc32 dd4193cc; loss 89.0 -> 0.003 (falling)\\n"
            + "[1] rank 1: final weights crc32 dd4193cc; loss 113.7 -> 0.014 (falling)";
    @TempDir
    Path tmp;
    private ScriptSandbox box;

    @BeforeEach
    void sandbox() throws Exception {
        box = new ScriptSandbox(tmp);
    }

    private ScriptSandbox.SandboxOutcome run(String... more) throws Exception {
        Map<String, String> e = env("FAKE_GPUS", "4", "LOG_DIR", tmp.resolve("logs").toString());
        e.putAll(env(more));
        return box.run(box.root.resolve("scripts/two-hosts.sh"), e, box.bundle.toString());
    }

    /** The launcher's arguments of each run (what nccl4j-run passed on to its java). */
    private static List<List<String>> launches(ScriptSandbox.SandboxOutcome r) {
        return r.of("timeout").stream().map(c -> c.args().subList(3, c.args().size())).collect(Collectors.toList());
    }

    @Test
    void losesEachHostInTurnAndPassesWhenBothSurvivorsAgree() throws Exception {
        ScriptSandbox.SandboxOutcome r = run("PARTS", "elastic", "FAKE_JAVA_OUT", SURVIVORS);
        assertEquals(0, r.status(), r.toString());
        String runner = box.bundle.resolve("nccl4j-run").toString();
        assertEquals(List.of(
                List.of(runner, "--elastic", "--hosts", "2", "-np", "2", "ElasticDdp", "--steps", "200", "--kill-rank",
                        "2,3", "--kill-step", "60"),
                List.of(runner, "--elastic", "--hosts", "2", "-np", "2", "ElasticDdp", "--steps", "200", "--kill-rank",
                        "0,1", "--kill-step", "60")), launches(r), r.toString());
        assertEquals(List.of("-s", "KILL", "180"), r.first("timeout").args().subList(0, 3));
        List<String> lines = r.outLines();
        assertEquals("PASSED  two hosts: ElasticDdp losing host1 (ranks 2,3) at once", lines.get(0), r.toString());
        assertTrue(lines.contains("PASSED  two hosts: ElasticDdp losing host0 (ranks 0,1) at once"), r.toString());
        assertTrue(lines.get(lines.size() - 1).startsWith("2 passed, 0 failed (logs: "), r.toString());
    }

    @Test
    void survivorsThatDisagreeOrALauncherThatFailsIsAFailure() throws Exception {
        ScriptSandbox.SandboxOutcome r = run("PARTS", "elastic", "FAKE_JAVA_OUT", SURVIVORS.replace("dd4193cc; loss 113",
                "0000beef; loss 113"));
        assertEquals(1, r.status(), r.toString());
        assertTrue(r.outLines().get(0).matches("FAILED  two hosts: ElasticDdp losing host1 \\(ranks 2,3\\) at once "
                + "\\(exit 0, 2 survivors' weights, 2 different, 2 falling, log .*1-elastic-host1\\.log\\)"),
                r.toString());
        r = run("PARTS", "elastic", "FAKE_JAVA_OUT", SURVIVORS, "FAKE_JAVA_STATUS", "1");
        assertEquals(1, r.status());
        assertTrue(r.out().contains("0 passed, 2 failed"), r.toString());
    }

    @Test
    void everyOperationRunsAcrossAndInsideAndItsBandwidthIsTabled() throws Exception {
        ScriptSandbox.SandboxOutcome r = run("PARTS", "ops", "FAKE_JAVA_OUT",
                "[0]      1048576        262144     float     sum      -1   657.94    1.59    2.39       0   672.32"
                        + "    1.56    2.34       0");
        assertEquals(0, r.status(), r.toString());
        List<List<String>> l = launches(r);
        assertEquals(18, l.size(), r.toString());
        assertEquals(List.of("--hosts", "2", "-np", "2", "org.nccl4j.tools.perf.Perf", "all_reduce_perf", "-b", "1M",
                "-e", "64M", "-f", "8", "-n", "10", "-w", "3", "-c", "1"), l.get(0).subList(1, l.get(0).size()));
        assertEquals(List.of("-np", "4", "org.nccl4j.tools.perf.Perf", "sendrecv_perf"), l.get(17).subList(1, 5));
        assertTrue(r.outLines().contains("all_reduce         1048576      2.39      2.39"), r.toString());
        assertTrue(r.outLines().contains("sendrecv           1048576      2.39      2.39"), r.toString());
        assertTrue(r.out().contains("18 passed, 0 failed"), r.toString());
    }

    @Test
    void fewerThanFourGpusIsRefused() throws Exception {
        ScriptSandbox.SandboxOutcome r = run("FAKE_GPUS", "2");
        assertEquals(2, r.status(), r.toString());
        assertEquals("two-hosts.sh: two hosts of 2 GPUs need 4 GPUs; this machine has 2", r.err().strip());
        assertTrue(r.of("timeout").isEmpty());
    }
}
