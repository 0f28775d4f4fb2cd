package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.tools.run.ScriptSandbox.env;
import static org.nccl4j.tools.run.ScriptKit.assumeOnPath;
import static org.nccl4j.tools.run.ScriptKit.exec;
import static org.nccl4j.tools.run.ScriptKit.executable;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.tools.run.ScriptSandbox.SandboxOutcome;
import org.nccl4j.tools.run.ScriptKit.Outcome;

/**
 * scripts/departures.sh on the CPU: the sandbox of {@link ScriptSandbox} with {@code departures-fake.sh} as the
 * bundle's java, mpirun, torchrun and python3. The fake ranks act the scenarios in a few hundred milliseconds with the
 * lines DepartureScenarios prints (START, EVENT, RESULT, READY, CLOSING), so that these tests check what the script
 * makes of them: the TSV's columns and the markdown report, the bound of each scenario, the time from the EVENT to
 * each rank's end, exit statuses, hs_err files, processes left running, a row past its limit, the SIGTERM to the
 * launcher, BUDGET, the torch rows, --merge and FUZZ. Also scripts/bench/torch_departures.py's argument handling with
 * the python3 on the PATH.
 */
@Timeout(180)
class DeparturesScriptTest {
    /** The TSV's columns, in order. */
    static final List<String> COLUMNS = List.of("row", "scenario", "launcher", "config", "framework", "ranks", "bound_s",
            "event_rank", "event_t", "r0", "r1", "r2", "r3", "end0", "end1", "end2", "end3", "measured", "worst", "exits",
            "traces", "trace_verdict", "hs_err", "left", "within", "seconds", "seen", "notes");

    @TempDir
    Path tmp;

    private ScriptSandbox box;
    private Path out;
    private Path args;

    @BeforeEach
    void sandbox() throws IOException {
        box = new ScriptSandbox(tmp);
        for (Path p : List.of(box.bundle.resolve("jre/bin/java"), box.bin.resolve("mpirun"), box.bin.resolve("torchrun"),
                box.bin.resolve("python3"))) {
            try (InputStream in = DeparturesScriptTest.class.getResourceAsStream("departures-fake.sh")) {
                Files.copy(in, p, StandardCopyOption.REPLACE_EXISTING);
            }
            executable(p);
        }
        out = box.base.resolve("out");
        args = Files.createDirectories(box.base.resolve("args"));
    }

    /** Runs departures.sh on FAKE_GPUS GPUs with the variables kv (OUT_DIR and FAKE_ARGS_DIR set), the bundle given. */
    private SandboxOutcome run(int gpus, String... kv) throws Exception {
        Map<String, String> e = new LinkedHashMap<>(env("OUT_DIR", out.toString(), "FAKE_ARGS_DIR", args.toString(),
                "FAKE_GPUS", Integer.toString(gpus), "ROW_LIMIT", "10"));
        e.putAll(env(kv));
        return box.run(box.root.resolve("scripts/departures.sh"), e, box.bundle.toString());
    }

    /** The TSV's rows as maps from column name to value. */
    private static List<Map<String, String>> rows(Path tsv) throws IOException {
        List<String> lines = Files.readAllLines(tsv);
        assertEquals(String.join("\t", COLUMNS), lines.get(0), "the TSV's header");
        List<Map<String, String>> rows = new ArrayList<>();
        for (String l : lines.subList(1, lines.size())) {
            String[] f = l.split("\t", -1);
            assertEquals(COLUMNS.size(), f.length, l);
            Map<String, String> m = new LinkedHashMap<>();
            for (int i = 0; i < f.length; i++) {
                m.put(COLUMNS.get(i), f[i]);
            }
            rows.add(m);
        }
        return rows;
    }

    private List<Map<String, String>> rows() throws IOException {
        return rows(out.resolve("departures.tsv"));
    }

    private static double secs(String end) {
        return Double.parseDouble(end);
    }

    /** The processes that still carry a row's marker (none may outlive the script); only those of this test's directory. */
    private List<String> marked() throws Exception {
        Outcome r = exec(null, Map.of(), 30, List.of("sh", "-c", "pgrep -af 'nccl4j\\.row=d|--row d' || true"));
        // this test's own: another build running tests on the machine has processes with the same markers
        String own = tmp.toString();
        String ownReal = tmp.toRealPath().toString();
        return r.out().lines().filter(l -> !l.contains("pgrep") && (l.contains(own) || l.contains(ownReal)))
                .collect(Collectors.toList());
    }

    private String rowLog(Map<String, String> row, String file) throws IOException {
        try (Stream<Path> s = Files.list(out)) {
            Path dir = s.filter(p -> p.getFileName().toString().startsWith(String.format("%03d-", Integer.parseInt(
                    row.get("row"))))).findFirst().orElseThrow();
            return Files.readString(dir.resolve(file));
        }
    }

    // ---------------------------------------------------------------- the matrix

    @Test
    void eachRowRecordsEveryRanksResultEndExitAndTheReportHasBothTables() throws Exception {
        SandboxOutcome r = run(2, "SCENARIOS", "kill stop", "LAUNCHERS", "java run mpirun", "CONFIGS", "2gpu");
        assertEquals(0, r.status(), r.toString());
        List<Map<String, String>> rows = rows();
        assertEquals(List.of("kill java", "stop java", "kill run", "stop run", "kill mpirun", "stop mpirun"),
                rows.stream().map(m -> m.get("scenario") + " " + m.get("launcher")).collect(Collectors.toList()));
        for (Map<String, String> m : rows) {
            assertEquals("2gpu", m.get("config"));
            assertEquals("nccl4j", m.get("framework"));
            assertEquals("2", m.get("ranks"));
            assertEquals("1", m.get("event_rank"), "the last rank leaves");
            assertTrue(m.get("event_t").matches("\\d{13}"), m.toString());
            assertEquals(m.get("scenario").equals("stop") ? "5.00" : "2.00", m.get("bound_s"));
            assertEquals("0", m.get("measured"), "the rank that leaves by a signal is not timed");
            assertEquals("yes", m.get("within"), m.toString());
            assertEquals("", m.get("r2") + m.get("r3") + m.get("end2") + m.get("end3"), "two ranks");
            assertEquals("0", m.get("hs_err"));
            assertEquals("0", m.get("left"));
            assertEquals("0", m.get("traces"));
            assertEquals("-", m.get("trace_verdict"));
            double end = secs(m.get("end0"));
            assertTrue(end >= 0 && end < 2, m.toString());
        }
        Map<String, String> kill = rows.get(0);
        assertEquals("RemoteErrorException: rank 1 (fake, pid 1) is gone", kill.get("r0"));
        assertEquals("killed", kill.get("r1"));
        assertEquals("r0=1 r1=137", kill.get("exits"));
        assertEquals("RemoteErrorException: rank 1 (fake, pid 1) is gone", kill.get("seen"));
        Map<String, String> stop = rows.get(1);
        assertEquals("stopped (killed by the script once the others had ended)", stop.get("r1"));
        assertEquals("r0=1 r1=137", stop.get("exits"));
        // under a launcher: its status, and the ranks' statuses it names
        assertEquals("run=137 r1=137", rows.get(2).get("exits"));
        assertEquals("nccl4j-run: rank 1 failed: exit status 137", rows.get(2).get("seen"));
        assertEquals("mpirun=137 r1=137", rows.get(4).get("exits"));
        assertEquals("mpirun noticed that process rank 1 with PID 0 on node fake exited on signal 9 (Killed).",
                rows.get(4).get("seen"));
        assertEquals("mpirun=1 r0=1", rows.get(5).get("exits"));
        // the report
        String md = Files.readString(out.resolve("departures.md"));
        ScriptKit.assertLines(md, "| scenario | config | nccl4j java | nccl4j run | nccl4j mpirun |", "|---|---|---|---|---|");
        assertTrue(md.contains("\n| kill | 2gpu | yes " + kill.get("worst") + " s · RemoteErrorException: rank 1 (fake, "
                + "pid 1) is gone | yes "), md);
        ScriptKit.assertLines(md, "| # | scenario | launcher | config | bound | event | r0 | r1 | r2 | r3 | exits | traces "
                + "| nccl4j-trace | hs_err | left | within | s |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        assertTrue(md.contains("\n| 1 | kill | nccl4j java | 2gpu | 2.00 s | r1 | +" + kill.get("end0") + " s · "
                + "RemoteErrorException: rank 1 (fake, pid 1) is gone | +" + kill.get("end1") + " s · killed |  |  | r0=1 "
                + "r1=137 | 0 | - | 0 | 0 | yes | "), md);
        assertTrue(md.contains(" 6 rows, 6 with every rank ended within its bound, hs_err files 0, processes left 0."),
                md);
        List<String> lines = r.outLines();
        assertEquals("== 6 rows (ROW_LIMIT=10 s), report in " + out.resolve("departures.md"), lines.get(0));
        assertTrue(lines.get(1).startsWith("[1/6] kill java 2gpu: within 2.00 s: yes (last timed end "), lines.get(1));
        assertEquals("departures: 6 rows, 6 with every rank ended within its bound, hs_err files 0, processes left 0",
                lines.get(lines.size() - 2));
        assertEquals("report: " + out.resolve("departures.md"), lines.get(lines.size() - 1));
        assertEquals(List.of(), marked());
    }

    @Test
    void eachLauncherGetsTheRowsEnvironmentAndTheJvmItsErrorFileAndMarker() throws Exception {
        SandboxOutcome r = run(1, "SCENARIOS", "cpu-stuck", "LAUNCHERS", "mpirun run java", "CONFIGS", "4share",
                "EVENT_RANK", "2", "COUNT", "4096", "PORT", "31000");
        assertEquals(0, r.status(), r.toString());
        List<Map<String, String>> rows = rows();
        assertEquals(3, rows.size());
        for (Map<String, String> m : rows) {
            assertEquals("22.00", m.get("bound_s"), "cpu-stuck: NCCL4J_TIMEOUT=20s + 2 s");
            assertEquals("2", m.get("event_rank"));
            assertEquals("0 1 2 3", m.get("measured"), "the stuck rank is timed too (nccl4j ends it)");
            String log = rowLog(m, m.get("launcher").equals("java") ? "rank3.log" : "run.log");
            String dir = out + "/" + String.format("%03d-cpu-stuck-%s-4share", Integer.parseInt(m.get("row")),
                    m.get("launcher"));
            assertTrue(log.contains("ENV rank=3 NCCL_NVLS_ENABLE=0 NCCL4J_DEVICE=0 NCCL_HOSTID=nccl4j-host3 "
                    + "NCCL_SOCKET_IFNAME=lo NCCL4J_TIMEOUT=20s NCCL4J_TRACE_DIR=" + dir + "/traces"), log);
        }
        String prog = "org.nccl4j.tools.harness.DepartureScenarios cpu-stuck --steps 8 --step 3 --count 4096 --rank 2";
        // mpirun: the variables go by -x, the JVM's options are in the rank's script, its NCCL_HOSTID from its rank
        List<String> mpirun = Files.readAllLines(args.resolve("mpirun.args"));
        String m = String.join(" ", mpirun);
        assertTrue(m.startsWith("--allow-run-as-root --bind-to none --tag-output -np 4 "), m);
        for (String v : List.of("NCCL_NVLS_ENABLE", "NCCL4J_TRACE_DIR", "NCCL4J_TIMEOUT", "NCCL4J_DEVICE",
                "NCCL_SOCKET_IFNAME")) {
            assertTrue(m.contains("-x " + v + " "), v + " in " + m);
        }
        assertTrue(m.endsWith(" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=31100 " + out
                + "/001-cpu-stuck-mpirun-4share/rank.sh"), m);
        String rankSh = rowLog(rows.get(0), "rank.sh");
        assertTrue(rankSh.startsWith("#!/usr/bin/env bash\nexport NCCL_HOSTID=nccl4j-host$OMPI_COMM_WORLD_RANK\nexec "
                + box.bundle + "/jre/bin/java -XX:ErrorFile=" + out + "/001-cpu-stuck-mpirun-4share/hs_err_%p.log "
                + "-Dnccl4j.row=d"), rankSh);
        assertTrue(rankSh.endsWith(" " + prog + "\n"), rankSh);
        // nccl4j-run: --share-gpu, the row's port, the class and its arguments
        assertEquals("--share-gpu --port 31200 -np 4 " + prog,
                String.join(" ", Files.readAllLines(args.resolve("launcher.args"))));
        // plain java: each rank its RANK, LOCAL_RANK and NCCL_HOSTID, the row's MASTER_PORT
        String rank0 = rowLog(rows.get(2), "rank0.log");
        assertTrue(rank0.contains("NCCL_HOSTID=nccl4j-host0 NCCL_SOCKET_IFNAME=lo NCCL4J_TIMEOUT=20s")
                && rank0.contains("MASTER_PORT=31300 LOCAL_RANK=0"), rank0);
    }

    @Test
    void theBoundIsTwoSecondsButForStopAndCpuStuck() throws Exception {
        SandboxOutcome r = run(2, "SCENARIOS", "kill stop cpu-stuck", "LAUNCHERS", "java", "CONFIGS", "2gpu",
                "FAKE_DETECT_MS", "2500", "NCCL4J_LIVENESS_TIMEOUT", "3s");
        assertEquals(1, r.status(), r.toString());
        List<Map<String, String>> rows = rows();
        assertEquals(List.of("2.00", "4.00", "22.00"), rows.stream().map(m -> m.get("bound_s"))
                .collect(Collectors.toList()));
        assertEquals(List.of("no", "yes", "yes"), rows.stream().map(m -> m.get("within")).collect(Collectors.toList()));
        for (Map<String, String> m : rows) {
            double end = secs(m.get("end0"));
            assertTrue(end >= 2.3 && end < 4, m.toString());   // rank 0 starts its 2.5 s a little before rank 1
            assertEquals(m.get("end0"), m.get("worst"));
        }
        assertTrue(r.out().contains("departures: 3 rows, 2 with every rank ended within its bound, hs_err files 0, "
                + "processes left 0\n"), r.out());
        // NCCL4J_LIVENESS_TIMEOUT as nccl4j reads it, or refused
        r = run(2, "SCENARIOS", "stop", "LAUNCHERS", "java", "CONFIGS", "2gpu", "NCCL4J_LIVENESS_TIMEOUT", "soon");
        assertEquals(2, r.status(), r.toString());
        assertEquals("departures.sh: NCCL4J_LIVENESS_TIMEOUT=soon is not a duration such as 4s or 4000ms",
                r.err().strip());
    }

    @Test
    void hsErrFilesAndProcessesLeftAreCountedAndTheLeftKilled() throws Exception {
        SandboxOutcome r = run(2, "SCENARIOS", "kill", "LAUNCHERS", "java", "CONFIGS", "2gpu", "FAKE_HS_ERR_RANK", "0",
                "FAKE_LEFTOVER_RANK", "0");
        assertEquals(1, r.status(), r.toString());
        Map<String, String> m = rows().get(0);
        assertEquals("1", m.get("hs_err"));
        assertEquals("1", m.get("left"));
        assertEquals("r0=134 r1=137", m.get("exits"));
        assertEquals("no line", m.get("r0"));
        assertTrue(m.get("notes").matches("left: r0( \\(a child\\))?:pid\\d+"), m.toString());
        assertEquals("yes", m.get("within"), "rank 0 ended (crashed) in time");
        try (Stream<Path> s = Files.list(out.resolve("001-kill-java-2gpu"))) {
            assertEquals(1, s.filter(p -> p.getFileName().toString().matches("hs_err_\\d+\\.log")).count());
        }
        assertTrue(r.out().contains("departures: 1 rows, 1 with every rank ended within its bound, hs_err files 1, "
                + "processes left 1\n"), r.out());
        assertEquals(List.of(), marked(), "the script killed what was left");
    }

    @Test
    void aRowPastItsLimitSaysStillWaitingAndKillsItsProcesses() throws Exception {
        // skip: the rank that skips ends with 0, so a launcher waits for the others, which never end
        SandboxOutcome r = run(2, "SCENARIOS", "skip", "LAUNCHERS", "java mpirun", "CONFIGS", "2gpu", "FAKE_HANG", "1",
                "ROW_LIMIT", "5");
        assertEquals(1, r.status(), r.toString());
        for (Map<String, String> m : rows()) {
            assertEquals("still waiting at 5 s", m.get("end0"), m.toString());
            assertEquals("still waiting at 5 s", m.get("worst"));
            assertEquals("no line (killed at the limit)", m.get("r0"));
            assertEquals("ok", m.get("r1"));
            assertEquals("0 1", m.get("measured"), "skip: every rank is timed");
            assertEquals("no", m.get("within"));
            assertEquals("0", m.get("left"));
            assertTrue(secs(m.get("seconds")) >= 5 && secs(m.get("seconds")) < 7, m.toString());
        }
        assertEquals("r0=137 r1=0", rows().get(0).get("exits"));
        assertEquals("mpirun=137 (killed at the limit)", rows().get(1).get("exits"));
        assertTrue(Files.readString(out.resolve("departures.md")).contains("| skip | 2gpu | NO still waiting at 5 s"));
        assertEquals(List.of(), marked());
    }

    /** A call's time limit (SIGTERM to the script) leaves no rank running. */
    @Test
    void aSigtermToTheScriptKillsTheRanksOfTheRowInProgress() throws Exception {
        Map<String, String> e = box.baseEnv();
        e.putAll(env("OUT_DIR", out.toString(), "FAKE_GPUS", "2", "SCENARIOS", "kill", "LAUNCHERS", "java mpirun",
                "CONFIGS", "4share", "FAKE_HANG", "1", "ROW_LIMIT", "60"));
        ProcessBuilder pb = new ProcessBuilder(box.root.resolve("scripts/departures.sh").toString(),
                box.bundle.toString()).redirectErrorStream(true).redirectOutput(box.base.resolve("sig.out").toFile());
        pb.environment().clear();
        pb.environment().putAll(e);
        Process p = pb.start();
        long end = System.nanoTime() + 20_000_000_000L;
        while (marked().size() < 3 && System.nanoTime() < end) {   // the three ranks that hang
            Thread.sleep(100);
        }
        assertTrue(marked().size() >= 3, marked().toString());
        p.destroy();   // SIGTERM to the script alone
        assertTrue(p.waitFor(20, java.util.concurrent.TimeUnit.SECONDS), "the script ended");
        assertEquals(143, p.exitValue(), Files.readString(box.base.resolve("sig.out")));
        assertTrue(Files.readString(box.base.resolve("sig.out")).contains(
                "departures.sh: stopped by a signal: killing this run's processes"));
        Thread.sleep(300);
        assertEquals(List.of(), marked());
    }

    @Test
    void sigtermLauncherSignalsTheLauncherOrWithoutOneEveryRank() throws Exception {
        SandboxOutcome r = run(2, "SCENARIOS", "sigterm-launcher", "LAUNCHERS", "java run torchrun", "CONFIGS", "2gpu");
        assertEquals(2, r.status(), "torchrun is a torch launcher: " + r);
        assertEquals("departures.sh: LAUNCHERS: unknown launcher torchrun (run, mpirun, java; with TORCH=1: python, "
                + "torchrun)", r.err().strip());
        r = run(2, "SCENARIOS", "sigterm-launcher", "LAUNCHERS", "java run", "CONFIGS", "2gpu");
        assertEquals(0, r.status(), r.toString());
        List<Map<String, String>> rows = rows();
        assertEquals("0", rows.get(0).get("event_rank"), "rank 0 marks the step");
        assertEquals("0 1", rows.get(0).get("measured"));
        assertEquals("r0=143 r1=143", rows.get(0).get("exits"));
        assertTrue(rows.get(0).get("notes").matches("SIGTERM to every rank at \\+0\\.\\d\\d s"), rows.get(0).toString());
        assertEquals("run=143", rows.get(1).get("exits"));
        assertTrue(rows.get(1).get("notes").matches("SIGTERM to the launcher at \\+0\\.\\d\\d s"), rows.get(1).toString());
        assertEquals("no line", rows.get(1).get("r0"));
    }

    @Test
    void budgetLeavesOutTheRowsThatCouldEndPastItAndSaysHowToRunThem() throws Exception {
        SandboxOutcome r = run(2, "SCENARIOS", "kill skip", "LAUNCHERS", "java", "CONFIGS", "2gpu", "ROW_LIMIT", "5",
                "BUDGET", "9");
        assertEquals(1, r.status(), r.toString());
        List<String> lines = r.outLines();
        assertEquals(List.of("== 2 rows (ROW_LIMIT=5 s, BUDGET=9 s), report in " + out.resolve("departures.md"),
                "[1/2] kill java 2gpu: not run (BUDGET=9 s): SCENARIOS=kill LAUNCHERS=java CONFIGS=2gpu",
                "[2/2] skip java 2gpu: not run (BUDGET=9 s): SCENARIOS=skip LAUNCHERS=java CONFIGS=2gpu",
                "departures: 0 rows, 0 with every rank ended within its bound, hs_err files 0, processes left 0, 2 not "
                        + "run (BUDGET)", "report: " + out.resolve("departures.md")), lines);
        assertEquals(List.of("not run", "not run"), rows().stream().map(m -> m.get("within"))
                .collect(Collectors.toList()));
        assertEquals("BUDGET=9 s reached; run it with SCENARIOS=kill LAUNCHERS=java CONFIGS=2gpu", rows().get(0)
                .get("notes"));
    }

    @Test
    void whatCannotRunIsRefusedOrSkippedSayingWhy() throws Exception {
        Map<String, String> cases = new LinkedHashMap<>();
        cases.put("SCENARIOS=dance", "departures.sh: SCENARIOS: unknown scenario dance (known: kill stop throw-inside "
                + "throw-outside exit abort-live skip count type sigterm-rank sigterm-launcher cpu-stuck "
                + "startup-rendezvous-kill startup-rendezvous-term startup-idtaken-kill startup-idtaken-term "
                + "startup-init-kill startup-init-term startup-init-exit close-thread abort-thread none)");
        cases.put("TORCH=1 SCENARIOS=close-thread", "departures.sh: SCENARIOS: close-thread has no torch counterpart (with "
                + "TORCH=1: kill stop throw-inside throw-outside exit abort-live skip count type sigterm-rank "
                + "sigterm-launcher cpu-stuck startup-init-term startup-init-term-lazy none)");
        cases.put("TORCH=1 SCENARIOS=startup-init-kill", "departures.sh: SCENARIOS: startup-init-kill has no torch "
                + "counterpart (with TORCH=1: kill stop throw-inside throw-outside exit abort-live skip count type "
                + "sigterm-rank sigterm-launcher cpu-stuck startup-init-term startup-init-term-lazy none)");
        cases.put("SCENARIOS=startup-init-term-lazy", "departures.sh: SCENARIOS: startup-init-term-lazy is a torch "
                + "scenario: run it with TORCH=1");
        cases.put("STARTUP_FUZZ=many", "departures.sh: STARTUP_FUZZ=many is not a whole number");
        cases.put("FUZZ=2 STARTUP_FUZZ=3", "departures.sh: FUZZ=2 and STARTUP_FUZZ=3: set one of them");
        cases.put("STARTUP_FUZZ=2 TORCH=1", "departures.sh: STARTUP_FUZZ runs nccl4j's ranks: leave TORCH unset");
        cases.put("STARTUP_FUZZ=2 JOBS=0", "departures.sh: JOBS=0: 1 or more");
        cases.put("STARTUP_FUZZ=2 FUZZ_CONFIG=ring", "departures.sh: FUZZ_CONFIG=ring: share or gpus");
        cases.put("STARTUP_FUZZ=2 FUZZ_STEPS=0", "departures.sh: FUZZ_STEPS=0: 1 or more");
        cases.put("STARTUP_FUZZ=2 FUZZ_WINDOW_MS=soon", "departures.sh: FUZZ_WINDOW_MS=soon is not a whole number");
        cases.put("STARTUP_FUZZ=2 FUZZ_WINDOW_MS=30000", "departures.sh: FUZZ_WINDOW_MS=30000 and FUZZ_LIMIT=20: a run "
                + "must last 2 s past the latest SIGTERM: raise FUZZ_LIMIT to 32 or more");
        cases.put("STARTUP_FUZZ=2 FUZZ_LIMIT=0", "departures.sh: FUZZ_LIMIT=0: give a run 1 s or more");
        cases.put("STARTUP_FUZZ=2 FUZZ_RANKS=1", "departures.sh: FUZZ_RANKS=1: 2 or more");
        cases.put("STARTUP_FUZZ=2 FUZZ_RANKS=four", "departures.sh: FUZZ_RANKS=four is not a whole number");
        cases.put("CONFIGS=8gpu", "departures.sh: CONFIGS: unknown config 8gpu (2gpu, 4gpu, 4share, 2share)");
        cases.put("TORCH=yes", "departures.sh: TORCH=yes: 1 runs the torch rows, 0 or unset the nccl4j ones");
        cases.put("ROW_LIMIT=1m", "departures.sh: ROW_LIMIT=1m is not a whole number");
        cases.put("ROW_LIMIT=2", "departures.sh: ROW_LIMIT=2: give a row 5 s or more");
        cases.put("TORCH=1 LAUNCHERS=run", "departures.sh: LAUNCHERS: with TORCH=1 the launchers are python and "
                + "torchrun, not run");
        cases.put("TORCH=1 PYTHON=/bin/false", "departures.sh: TORCH=1: /bin/false cannot import torch (set PYTHON)");
        cases.put("CONFIGS=4gpu", "departures.sh: no row to run (CONFIGS=4gpu on 2 GPU(s))");
        for (Map.Entry<String, String> c : cases.entrySet()) {
            List<String> kv = new ArrayList<>();
            for (String a : c.getKey().split(" ")) {
                kv.addAll(Arrays.asList(a.split("=", 2)));
            }
            SandboxOutcome r = run(2, kv.toArray(new String[0]));
            assertEquals(2, r.status(), c.getKey() + ": " + r);
            assertEquals(c.getValue(), r.err().strip(), c.getKey());
        }
        SandboxOutcome r = run(2, "CONFIGS", "4gpu", "SCENARIOS", "kill");
        assertEquals("== 4gpu: skipped: it needs 4 GPUs, and this machine has 2", r.outLines().get(0));
        r = box.run(box.root.resolve("scripts/departures.sh"), env("FAKE_GPUS", "2"), box.base.resolve("none").toString());
        assertEquals(2, r.status(), r.toString());
        assertEquals("departures.sh: no bundle at " + box.base.resolve("none") + " (scripts/gpu-bundle.sh)", r.err().strip());
    }

    // ---------------------------------------------------------------- start-up, close-thread, abort-thread

    @Test
    void startUpRowsTimeEveryRankButAKilledOneAndTakeNccl4jsHaltAsTheRanksEnd() throws Exception {
        SandboxOutcome r = run(2, "SCENARIOS", "startup-init-term startup-rendezvous-kill startup-init-exit close-thread "
                + "abort-thread", "LAUNCHERS", "java", "CONFIGS", "2gpu");
        assertEquals(0, r.status(), r.toString());
        List<Map<String, String>> rows = rows();
        assertEquals(List.of("startup-init-term", "startup-rendezvous-kill", "startup-init-exit", "close-thread",
                "abort-thread"), rows.stream().map(m -> m.get("scenario")).collect(Collectors.toList()));
        String halted = "halted with status 70: rank 0 of 2: rank 1 (fake, pid 1) was lost during NCCL initialization "
                + "(SIGTERM); the communicator was not made (NCCL initialization could not be abandoned)";
        Map<String, String> term = rows.get(0);
        assertEquals(halted, term.get("r0"), "nccl4j's ERROR line, short, stands for the RESULT a halt leaves out");
        assertEquals(halted, term.get("seen"));
        assertEquals("no line", term.get("r1"));
        assertEquals("r0=70 r1=143", term.get("exits"));
        assertEquals("0 1", term.get("measured"), "the rank that SIGTERMs itself is timed");
        Map<String, String> kill = rows.get(1);
        assertEquals("PeerLostDuringStartupException: rank 0 of 2: rank 1 (fake, pid 1) was lost during the rendezvous "
                + "(its connection ended without a goodbye); the communicator was not made (the rendezvous ended). "
                + "Restart the job", kill.get("r0"));
        assertEquals("killed", kill.get("r1"));
        assertEquals("r0=1 r1=137", kill.get("exits"));
        assertEquals("0", kill.get("measured"), "the killed rank is not timed");
        assertEquals("r0=70 r1=3", rows.get(2).get("exits"));
        assertEquals("0 1", rows.get(2).get("measured"));
        for (Map<String, String> m : rows.subList(3, 5)) {
            String call = m.get("scenario").equals("close-thread") ? "close()" : "abort()";
            assertEquals("IllegalStateException: this Communicator (rank 1 of 2) is being closed: " + call + " on thread "
                    + "\"departures-closer\", while thread \"main\" issued the collectives", m.get("r1"),
                    "the main thread's expected end");
            assertTrue(m.get("r0").startsWith("PeerDepartedException: rank 0 of 2: allReduce #4 cannot complete: "),
                    m.get("r0"));
            assertEquals("r0=1 r1=0", m.get("exits"));
            assertEquals("0 1", m.get("measured"));
        }
        for (Map<String, String> m : rows) {
            assertEquals("1", m.get("event_rank"), m.toString());
            assertEquals("2.00", m.get("bound_s"));
            assertEquals("yes", m.get("within"), m.toString());
            assertEquals("", m.get("notes"), m.toString());
            double end = secs(m.get("end0"));
            assertTrue(end >= 0.2 && end < 2, m.toString());
        }
        String md = Files.readString(out.resolve("departures.md"));
        assertTrue(md.contains("\n| startup-init-term | 2gpu | yes " + term.get("worst") + " s · " + halted.substring(0, 60)),
                md);
        String ev = rowLog(term, "rank1.log");
        assertTrue(ev.contains(" startup-init-term (main thread at org.nccl4j.jni.NcclNative.ncclCommInitRank; liveness "
                + "join done)"), ev);
        assertEquals(List.of(), marked());
    }

    @Test
    void aStartUpScenarioWhosePlaceWasNeverSeenRunsWithoutDepartureAndTheRowSaysSo() throws Exception {
        SandboxOutcome r = run(2, "SCENARIOS", "startup-idtaken-term", "LAUNCHERS", "java", "CONFIGS", "2gpu",
                "FAKE_NOT_PLACED", "1");
        assertEquals(1, r.status(), r.toString());
        Map<String, String> m = rows().get(0);
        assertEquals("no EVENT", m.get("within"));
        assertEquals("ok", m.get("r0"));
        assertEquals("ok", m.get("r1"));
        assertEquals("r0=0 r1=0", m.get("exits"));
        assertEquals("rank 1: startup-idtaken-term was not placed: the main thread was never seen in "
                + "NcclNative.ncclCommInitRank or ncclCommInitRankConfig (its stack read every 1 ms)", m.get("notes"));
        assertTrue(r.out().contains("[1/1] startup-idtaken-term java 2gpu: within 2.00 s: no EVENT "), r.out());
    }

    // ---------------------------------------------------------------- torch, --merge

    @Test
    void torchRowsMakeTheTorchColumnsAndMergeWithTheNccl4jRows() throws Exception {
        SandboxOutcome r = run(2, "TORCH", "1", "PYTHON", "python3", "SCENARIOS", "kill", "CONFIGS", "2gpu");
        assertEquals(0, r.status(), r.toString());
        List<Map<String, String>> torch = rows();
        assertEquals(List.of("python", "torchrun"), torch.stream().map(m -> m.get("launcher"))
                .collect(Collectors.toList()));
        for (Map<String, String> m : torch) {
            assertEquals("torch", m.get("framework"));
            assertEquals("-", m.get("trace_verdict"));
        }
        assertEquals("r0=1 r1=137", torch.get(0).get("exits"));
        assertEquals("torchrun=1 r1=137", torch.get(1).get("exits"), "torchrun's exitcode -9 is signal 9");
        String seen = torch.get(1).get("seen");   // torchrun's summary, unless rank 0 threw before torchrun stopped it
        assertTrue(seen.equals("exitcode  : -9 (pid: 1)") || seen.startsWith("RemoteErrorException: "), seen);
        String rankSh = rowLog(torch.get(1), "rank.sh");
        assertTrue(rankSh.matches("(?s)#!/usr/bin/env bash\nexec python3 -u " + box.root + "/scripts/bench/"
                + "torch_departures.py kill --steps 8 --step 3 --count 1048576 --log-dir " + out + "/002-kill-torchrun-2gpu "
                + "--row d\\d+r002\n"), rankSh);
        assertEquals(List.of("--nnodes", "1", "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port",
                "20200", "--no_python", out + "/002-kill-torchrun-2gpu/rank.sh"), Files.readAllLines(
                        args.resolve("torchrun.args")));
        // what the rank wrote to stderr is in its own file
        assertTrue(rowLog(torch.get(0), "rank0.err").contains("[rank 0] ncclRemoteError"));
        Files.move(out.resolve("departures.tsv"), box.base.resolve("torch.tsv"));
        r = run(2, "SCENARIOS", "kill", "LAUNCHERS", "run java", "CONFIGS", "2gpu");
        assertEquals(0, r.status(), r.toString());
        Files.move(out.resolve("departures.tsv"), box.base.resolve("nccl4j.tsv"));
        Path merged = box.base.resolve("merged");
        r = box.run(box.root.resolve("scripts/departures.sh"), env(), "--merge", merged.toString(),
                box.base.resolve("nccl4j.tsv").toString(), box.base.resolve("torch.tsv").toString());
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("departures: 4 rows, 4 with every rank ended within its bound, hs_err files 0, processes left"
                + " 0", "report: " + merged.resolve("departures.md")), r.outLines());
        List<Map<String, String>> all = rows(merged.resolve("departures.tsv"));
        assertEquals(List.of("1 run", "2 java", "3 python", "4 torchrun"), all.stream().map(m -> m.get("row") + " "
                + m.get("launcher")).collect(Collectors.toList()));
        String md = Files.readString(merged.resolve("departures.md"));
        ScriptKit.assertLines(md, "| scenario | config | nccl4j run | nccl4j java | torch python | torch torchrun |",
                "|---|---|---|---|---|---|");
        r = box.run(box.root.resolve("scripts/departures.sh"), env(), "--merge", merged.toString(),
                box.bundle.resolve("env.sh").toString());
        assertEquals(2, r.status(), r.toString());
        assertEquals("departures.sh: " + box.bundle.resolve("env.sh") + " is not a departures.sh TSV (its first line "
                + "differs)", r.err().strip());
    }

    // ---------------------------------------------------------------- FUZZ

    @Test
    void fuzzReportsCrashesWhatIsLeftWhereTheSigtermLandedAndTheSurvivorsTime() throws Exception {
        SandboxOutcome r = run(1, "FUZZ", "4", "JOBS", "2", "FUZZ_WINDOW_MS", "300", "FUZZ_SEED", "11");
        assertEquals(0, r.status(), r.toString());
        List<String> lines = r.outLines();
        assertEquals("== FUZZ: 4 runs, 2 at a time, FUZZ_CONFIG=share, SIGTERM 0..300 ms after the first READY "
                + "(FUZZ_SEED=11), logs in " + out + "/fuzz", lines.get(0));
        assertTrue(lines.get(1).matches("FUZZ: JVM crashes: 0 of 4 runs; processes left: 0; SIGTERM during steps 4, "
                + "during close 0, after the end 0; max time from SIGTERM to the survivor's exit: 0\\.\\d\\d s \\(bound "
                + "5 s: within\\)"), lines.get(1));
        assertEquals("report: " + out + "/fuzz.md", lines.get(2));
        List<String> tsv = Files.readAllLines(out.resolve("fuzz.tsv"));
        assertEquals("run\tvictim\tdelay_ms\tphase\tvictim_status\tsurvivor_status\tsurvivor_ms\tcrash\ths_err\tleft\t"
                + "survivor_result\twrong_data", tsv.get(0));
        for (String l : tsv.subList(1, tsv.size())) {
            String[] f = l.split("\t", -1);
            assertEquals("steps", f[3], l);
            assertEquals("143", f[4], l);
            assertEquals("0", f[5], l);
            assertEquals("ok", f[10], l);
            assertEquals("0", f[11], l);
        }
        // the same seed draws the same victims and delays
        List<String> draws = tsv.stream().map(l -> l.split("\t")[1] + l.split("\t")[2]).collect(Collectors.toList());
        r = run(1, "FUZZ", "4", "JOBS", "4", "FUZZ_WINDOW_MS", "300", "FUZZ_SEED", "11", "FAKE_FUZZ_CRASH", "1");
        assertEquals(1, r.status(), r.toString());
        assertTrue(r.outLines().get(1).startsWith("FUZZ: JVM crashes: 4 of 4 runs; processes left: 0;"), r.toString());
        tsv = Files.readAllLines(out.resolve("fuzz.tsv"));
        assertEquals(draws, tsv.stream().map(l -> l.split("\t")[1] + l.split("\t")[2]).collect(Collectors.toList()));
        assertTrue(tsv.get(1).contains("\t134\t0\t"), tsv.get(1));
        assertTrue(Files.readString(out.resolve("fuzz.md")).contains("| run | victim | delay ms | phase |"));
        assertEquals(List.of(), marked());
        // BUDGET: no run is started that could end past it
        r = run(1, "FUZZ", "4", "BUDGET", "20", "FUZZ_LIMIT", "30");
        assertEquals(1, r.status(), r.toString());
        assertTrue(r.outLines().get(1).startsWith("FUZZ: JVM crashes: 0 of 0 runs; ")
                && r.outLines().get(1).endsWith("; 4 runs not started (BUDGET)"), r.toString());
    }

    @Test
    void fuzzCountsTheRunsWhoseSurvivorEndedAStepWithAResultThatIsNotTheSumAndFails() throws Exception {
        SandboxOutcome r = run(1, "FUZZ", "3", "JOBS", "3", "FUZZ_WINDOW_MS", "200", "FUZZ_SEED", "5",
                "FAKE_WRONG_DATA", "1");
        List<String> lines = r.outLines();
        assertTrue(lines.get(1).startsWith("FUZZ: JVM crashes: 0 of 3 runs; processes left: 0; SIGTERM during steps 3,")
                && lines.get(1).endsWith("(bound 5 s: within); a step's result not the sum on the survivor: 3 of 3 "
                + "runs"), lines.get(1));
        List<String> tsv = Files.readAllLines(out.resolve("fuzz.tsv"));
        for (String l : tsv.subList(1, tsv.size())) {
            String[] f = l.split("\t", -1);
            assertTrue(f[10].startsWith("IllegalStateException: step 7: element 0 is 1.0, expected 3.0"), l);
            assertEquals("1", f[11], l);
        }
        assertTrue(Files.readString(out.resolve("fuzz.md")).contains("| not the sum |"), "the report's column");
        assertEquals(1, r.status(), "every survivor within the bound, and yet one used a wrong result: " + r);
        assertEquals(List.of(), marked());
    }

    // ---------------------------------------------------------------- STARTUP_FUZZ

    /** The columns of startup-fuzz.tsv. */
    static final List<String> SFUZZ_COLUMNS = List.of("run", "victim", "delay_ms", "signal_ms", "phase", "never_started",
            "joined", "victim_status", "survivor_status", "survivor_ms", "at_limit", "within", "crash", "hs_err", "left",
            "survivor_result", "told_ms", "wrong_data");

    private List<Map<String, String>> sfuzzRows() throws IOException {
        List<String> lines = Files.readAllLines(out.resolve("startup-fuzz.tsv"));
        assertEquals(String.join("\t", SFUZZ_COLUMNS), lines.get(0));
        List<Map<String, String>> rows = new ArrayList<>();
        for (String l : lines.subList(1, lines.size())) {
            String[] f = l.split("\t", -1);
            assertEquals(SFUZZ_COLUMNS.size(), f.length, l);
            Map<String, String> m = new LinkedHashMap<>();
            for (int i = 0; i < f.length; i++) {
                m.put(SFUZZ_COLUMNS.get(i), f[i]);
            }
            rows.add(m);
        }
        return rows;
    }

    /** The phases of the summary, in order. */
    static final List<String> PHASES = List.of("launched", "joining", "rendezvous", "id-taken", "set-device", "nccl-init",
            "ready", "in-loop", "closing", "closed");

    @Test
    void startupFuzzSignalsARandomRankFromItsStartAndTimesTheSurvivorByThePhaseItFound() throws Exception {
        SandboxOutcome r = run(1, "STARTUP_FUZZ", "6", "JOBS", "3", "FUZZ_WINDOW_MS", "1000", "FUZZ_LIMIT", "4", "FUZZ_SEED",
                "29", "FAKE_FUZZ_MS", "600");
        List<String> lines = r.outLines();
        assertEquals("== STARTUP_FUZZ: 6 runs of 2 ranks, 3 at a time, FUZZ_CONFIG=share, SIGTERM to a random rank 0..1000 ms after "
                + "its process started (FUZZ_SEED=29), FUZZ_LIMIT=4 s, logs in " + out + "/startup-fuzz", lines.get(0));
        List<Map<String, String>> rows = sfuzzRows();
        assertEquals(6, rows.size());
        // the draws of FUZZ_SEED=29 (bash's RANDOM), victims and ms after the victim's start
        assertEquals(List.of("0:73", "1:657", "0:299", "0:885", "1:988", "1:15"), rows.stream().map(m -> m.get("victim")
                + ":" + m.get("delay_ms")).collect(Collectors.toList()));
        int never = 0;
        int unjoined = 0;
        int within = 0;
        Map<String, Integer> phases = new LinkedHashMap<>();
        long slowest = -1;
        Map<String, String> slow = null;
        for (Map<String, String> m : rows) {
            String phase = m.get("phase");
            phases.merge(phase, 1, Integer::sum);
            assertEquals("143", m.get("victim_status"), m.toString());
            int at = Integer.parseInt(m.get("signal_ms"));
            int drawn = Integer.parseInt(m.get("delay_ms"));
            assertTrue(at >= drawn && at < drawn + 300, "sent when drawn: " + m);
            String res = m.get("survivor_result");
            if (phase.equals("launched")) {
                never++;
                assertEquals("1", m.get("never_started"));
                assertEquals("no", m.get("joined"));
                assertEquals("1", m.get("at_limit"), "nothing tells a survivor of a rank that never started: " + m);
                assertEquals("no line (still waiting at 4 s, killed)", res);
                assertEquals("137", m.get("survivor_status"));
                assertEquals("no", m.get("within"));
                assertEquals(m.get("survivor_ms"), m.get("told_ms"), "never told: " + m);
                continue;
            }
            assertEquals("0", m.get("never_started"), m.toString());
            if (m.get("joined").equals("no")) {   // the fake's JOINED comes with its rendezvous: joining, here
                unjoined++;   // still joining: it joins at exit to say so, held to the bound as the others
                assertTrue(phase.equals("joining") || phase.equals("rendezvous"), m.toString());
            } else {
                assertEquals("yes", m.get("joined"), m.toString());
            }
            assertEquals("yes", m.get("within"), m.toString());
            within++;
            long ms = Long.parseLong(m.get("survivor_ms"));
            assertTrue(ms >= 250 && ms < 1500, m.toString());   // FAKE_DETECT_MS 300 after it noticed
            long told = Long.parseLong(m.get("told_ms"));
            if (PHASES.indexOf(phase) >= PHASES.indexOf("ready")) {   // THROWN, then the close's FAKE_CLOSE_MS 200
                assertTrue(told >= 100 && ms - told >= 150, "told at the exception, ended after the close: " + m);
            } else {   // thrown from fromEnvironment: its RESULT, then the end
                assertTrue(told >= 100 && told <= ms && ms - told < 150, "told at its RESULT: " + m);
            }
            if (ms > slowest) {
                slowest = ms;
                slow = m;
            }
            switch (phase) {
                case "nccl-init":
                    assertTrue(res.startsWith("halted with status 70: rank " + (1 - Integer.parseInt(m.get("victim")))
                            + " of 2: rank " + m.get("victim") + " (fake, pid 1) was lost during NCCL initialization"), res);
                    assertEquals("70", m.get("survivor_status"));
                    break;
                case "joining":
                case "rendezvous":
                case "id-taken":
                case "set-device":
                    assertTrue(res.startsWith("PeerLostDuringStartupException: "), res);
                    break;
                default:
                    assertTrue(PHASES.indexOf(phase) >= PHASES.indexOf("ready"), m.toString());
                    assertTrue(res.startsWith("PeerDepartedException: "), res);
            }
        }
        assertEquals(2, never, "15 and 73 ms: the JVM still starting, no PHASE line yet: " + rows);
        assertEquals("JVM crashes: 0 of 6", lines.get(1));
        assertEquals("survivors ended within 2 s: " + within + " of 6", lines.get(2));
        assertEquals("survivors told within 2 s: " + within + " of 6", lines.get(3));
        assertEquals("of the " + (6 - never) + " runs whose victim had started: ended within 2 s " + within
                + ", told within 2 s " + within, lines.get(4));
        assertEquals(6 - never, within, "every survivor of a started victim within 2 s: " + rows);
        assertEquals(String.format("slowest survivor: %s s (run %s, signal at %s ms, phase %s)", asAwkPrints(slowest),
                slow.get("run"), slow.get("signal_ms"), slow.get("phase")), lines.get(5));
        assertEquals("signal landed (the victim's phase): " + PHASES.stream().map(p -> p + " " + phases.getOrDefault(p, 0))
                .collect(Collectors.joining(", ")), lines.get(6));
        assertEquals("waited for a rank that never started: " + never + " (still waiting at FUZZ_LIMIT=4 s: " + never + ")",
                lines.get(7));
        long stillUnjoined = rows.stream().filter(m -> m.get("never_started").equals("0") && m.get("joined").equals("no")
                && m.get("at_limit").equals("1")).count();
        assertEquals(0, stillUnjoined, "a victim still joining is told: " + rows);
        assertEquals("signal after launched, before the liveness link was up: " + unjoined + " (still waiting at "
                + "FUZZ_LIMIT=4 s: 0)", lines.get(8));
        assertEquals("processes left: 0", lines.get(9));
        assertEquals("a step's result not the sum on a survivor: 0 of 6 runs (0 ranks)", lines.get(10));
        assertEquals("report: " + out + "/startup-fuzz.md", lines.get(11));
        assertEquals(12, lines.size(), r.toString());
        assertTrue(rows.stream().allMatch(m -> m.get("wrong_data").equals("0")), rows.toString());
        assertEquals(0, r.status(), "every survivor of a rank that had started ended within 2 s: " + r);
        String md = Files.readString(out.resolve("startup-fuzz.md"));
        assertTrue(md.contains("\n| run | victim | drawn ms | signal ms | phase | joined | victim exit | survivor exit | "
                + "survivor |"), md);
        // told: as the end, at the limit
        assertTrue(java.util.regex.Pattern.compile("\\(still waiting, killed\\) \\(never started\\) \\| \\d\\.\\d\\d s "
                + "\\| no \\| 0 \\| 0 \\| 0 \\| no line \\(still waiting at 4 s, killed\\) \\|").matcher(md).find(), md);
        assertEquals(List.of(), marked());
    }

    /** Milliseconds as seconds the way awk's printf "%.2f" prints them: the double's exact value, ties to even. */
    private static String asAwkPrints(long millis) {
        return new java.math.BigDecimal(millis / 1000.0).setScale(2, java.math.RoundingMode.HALF_EVEN).toPlainString();
    }

    @Test
    void startupFuzzWithFourRanksSignalsAnyOfThemAndTimesTheRunByTheLastSurvivor() throws Exception {
        SandboxOutcome r = run(1, "STARTUP_FUZZ", "4", "FUZZ_RANKS", "4", "JOBS", "2", "FUZZ_WINDOW_MS", "1000",
                "FUZZ_LIMIT", "4", "FUZZ_SEED", "29", "FAKE_FUZZ_MS", "600");
        assertTrue(r.outLines().get(0).startsWith("== STARTUP_FUZZ: 4 runs of 4 ranks, 2 at a time, FUZZ_CONFIG=share,"),
                r.toString());
        List<Map<String, String>> rows = sfuzzRows();
        assertEquals(4, rows.size());
        // FUZZ_SEED=29's draws: the same delays as with 2 ranks, the victims now of 4
        assertEquals(List.of("0:73", "1:657", "0:299", "0:885"), rows.stream().map(m -> m.get("victim") + ":"
                + m.get("delay_ms")).collect(Collectors.toList()));
        for (Map<String, String> m : rows) {
            Path dir = out.resolve("startup-fuzz").resolve(String.format("%03d", Integer.parseInt(m.get("run"))));
            for (int k = 0; k < 4; k++) {   // the victim's log is empty when the signal came before its first line
                String log = Files.readString(dir.resolve("rank" + k + ".log"));
                assertTrue(log.contains("PHASE rank=" + k + " ") || m.get("victim").equals(Integer.toString(k)),
                        "every rank of 4 started: " + log);
            }
            if (m.get("never_started").equals("1")) {
                assertEquals("no", m.get("within"), "nothing tells the survivors of a rank that never started: " + m);
                continue;
            }
            assertEquals("yes", m.get("within"), m.toString());
            String res = m.get("survivor_result");
            assertTrue(res.contains(" of 4: rank " + m.get("victim") + " (fake") || res.startsWith("PeerDeparted"), res);
            long ms = Long.parseLong(m.get("survivor_ms"));
            // the last of the 3 survivors: each ends FAKE_DETECT_MS after it noticed
            assertTrue(ms >= 250 && ms < 1500, m.toString());
        }
        assertEquals(0, r.status(), r.toString());
        r = run(1, "STARTUP_FUZZ", "2", "FUZZ_RANKS", "4", "FUZZ_CONFIG", "gpus", "FAKE_GPUS", "2");
        assertEquals(2, r.status());
        assertEquals("departures.sh: FUZZ_CONFIG=gpus needs 4 GPUs, found 2", r.err().strip());
        assertEquals(List.of(), marked());
    }

    @Test
    void aMatrixRowWhereARankReadAResultThatIsNotTheSumFailsAndTheSummarySaysSoButNotForCountAndType()
            throws Exception {
        SandboxOutcome r = run(2, "SCENARIOS", "kill count", "LAUNCHERS", "java", "CONFIGS", "2gpu",
                "FAKE_WRONG_DATA", "1");
        List<Map<String, String>> rows = rows();
        assertTrue(rows.get(0).get("r0").startsWith("IllegalStateException: step 3: element 0 is 2.0, expected 3.0"),
                rows.get(0).toString());
        assertTrue(r.out().contains("departures: 2 rows, 2 with every rank ended within its bound, hs_err files 0, "
                + "processes left 0, a step's result not the sum on 1 ranks in 1 rows\n"), r.out());
        assertTrue(Files.readString(out.resolve("departures.md")).contains(", a step's result not the sum on 1 ranks in "
                + "1 rows."), "the report's first line too");
        assertEquals(1, r.status(), "within the bound, and yet a rank used a wrong result: " + r);
    }

    @Test
    void startupFuzzCountsEverySurvivorWhoseStepEndedWithAResultThatIsNotTheSum() throws Exception {
        SandboxOutcome r = run(1, "STARTUP_FUZZ", "4", "FUZZ_RANKS", "4", "JOBS", "2", "FUZZ_WINDOW_MS", "1000",
                "FUZZ_LIMIT", "4", "FUZZ_SEED", "29", "FAKE_FUZZ_MS", "600", "FAKE_WRONG_DATA", "1");
        int runs = 0;
        for (Map<String, String> m : sfuzzRows()) {
            boolean inTheLoop = PHASES.indexOf(m.get("phase")) >= PHASES.indexOf("ready");
            assertEquals(inTheLoop ? "3" : "0", m.get("wrong_data"), "every survivor of 3 in the loop: " + m);
            runs += inTheLoop ? 1 : 0;
        }
        assertTrue(runs > 0, "a victim in the loop among the draws: " + r);
        assertTrue(r.outLines().contains("a step's result not the sum on a survivor: " + runs + " of 4 runs ("
                + 3 * runs + " ranks)"), r.toString());
        assertEquals(1, r.status(), "a wrong result fails the fuzz: " + r);
    }

    @Test
    void startupFuzzWithJoinFirstHoldsAVictimSignalledAfterJobLivenessJoinToTheBound() throws Exception {
        SandboxOutcome r = run(1, "STARTUP_FUZZ", "4", "JOBS", "2", "FUZZ_WINDOW_MS", "400", "FUZZ_LIMIT", "3",
                "FUZZ_SEED", "11", "FUZZ_JOIN_FIRST", "1", "FAKE_FUZZ_MS", "600");
        assertTrue(r.outLines().get(0).startsWith("== STARTUP_FUZZ: 4 runs of 2 ranks (JobLiveness.join() first), 2 at "
                + "a time, FUZZ_CONFIG=share,"), r.toString());
        List<Map<String, String>> rows = sfuzzRows();
        assertEquals(List.of("1:11", "0:377", "1:135", "1:331"), rows.stream().map(m -> m.get("victim") + ":"
                + m.get("delay_ms")).collect(Collectors.toList()));
        Map<String, String> early = rows.get(0);
        assertEquals("1", early.get("never_started"), "11 ms: before JobLiveness.join(): " + early);
        assertEquals("no", early.get("within"));
        Map<String, String> joinedFirst = rows.get(2);
        assertEquals("launched", joinedFirst.get("phase"), joinedFirst.toString());
        assertEquals("0", joinedFirst.get("never_started"), "135 ms: after JobLiveness.join(): " + joinedFirst);
        assertEquals("yes", joinedFirst.get("within"), joinedFirst.toString());
        assertTrue(joinedFirst.get("survivor_result").contains("was lost before it joined the job (SIGTERM)"),
                joinedFirst.toString());
        assertEquals(0, r.status(), "every victim that had joined first was told within 2 s: " + r);
        for (int k = 0; k < 2; k++) {
            assertTrue(Files.readString(out.resolve("startup-fuzz/003/rank" + k + ".log")).contains("JOINFIRST t="),
                    "--join-first reached rank " + k);
        }
        r = run(1, "STARTUP_FUZZ", "2", "FUZZ_JOIN_FIRST", "yes");
        assertEquals(2, r.status());
        assertEquals("departures.sh: FUZZ_JOIN_FIRST=yes: 1 (JobLiveness.join() first in main) or 0", r.err().strip());
    }

    @Test
    void startupFuzzCountsASignalBeforeTheJvmSaidAnythingAsNeverStartedAndApartFromTheBound() throws Exception {
        SandboxOutcome r = run(1, "STARTUP_FUZZ", "2", "JOBS", "2", "FUZZ_WINDOW_MS", "0", "FUZZ_LIMIT", "3");
        assertEquals(List.of("JVM crashes: 0 of 2", "survivors ended within 2 s: 0 of 2",
                "survivors told within 2 s: 0 of 2",
                "of the 0 runs whose victim had started: ended within 2 s 0, told within 2 s 0",
                "slowest survivor: none (no run whose victim had started was timed)",
                "signal landed (the victim's phase): launched 2, joining 0, rendezvous 0, id-taken 0, set-device 0, "
                        + "nccl-init 0, ready 0, in-loop 0, closing 0, closed 0",
                "waited for a rank that never started: 2 (still waiting at FUZZ_LIMIT=3 s: 2)",
                "signal after launched, before the liveness link was up: 0 (still waiting at FUZZ_LIMIT=3 s: 0)",
                "processes left: 0",
                "a step's result not the sum on a survivor: 0 of 2 runs (0 ranks)",
                "report: " + out + "/startup-fuzz.md"), r.outLines().subList(1, r.outLines().size()));
        assertEquals(0, r.status(), "a rank that never started cannot be told: not a failure of the bound");
        for (Map<String, String> m : sfuzzRows()) {
            assertEquals("0", m.get("delay_ms"));
            assertEquals("launched", m.get("phase"));
            assertTrue(Long.parseLong(m.get("survivor_ms")) >= 2800, m.toString());
        }
        // a JVM crash fails the run; BUDGET starts no run that could end past it
        r = run(1, "STARTUP_FUZZ", "2", "JOBS", "2", "FUZZ_WINDOW_MS", "1000", "FUZZ_LIMIT", "3", "FUZZ_SEED", "7",
                "FAKE_FUZZ_CRASH", "1");
        assertEquals(1, r.status(), r.toString());
        assertEquals("JVM crashes: 2 of 2", r.outLines().get(1), r.toString());
        for (Map<String, String> m : sfuzzRows()) {
            assertEquals("134", m.get("victim_status"), m.toString());
            assertEquals("1", m.get("crash"));
            assertEquals("1", m.get("hs_err"));
        }
        r = run(1, "STARTUP_FUZZ", "3", "BUDGET", "10");
        assertEquals(1, r.status(), r.toString());
        assertEquals("JVM crashes: 0 of 0", r.outLines().get(1));
        assertEquals("runs not started (BUDGET): 3", r.outLines().get(r.outLines().size() - 2), r.toString());
    }

    // ---------------------------------------------------------------- torch_departures.py

    private static final Path TORCH_SCRIPT = ScriptSandbox.SCRIPTS.resolve("bench/torch_departures.py");

    private static Outcome python(Map<String, String> env, String... a) throws Exception {
        List<String> command = new ArrayList<>(List.of("python3", TORCH_SCRIPT.toString()));
        command.addAll(Arrays.asList(a));
        return exec(null, env, 60, command);
    }

    @Test
    void torchStartUpCellsRunUnderTheNccl4jRowsName() throws Exception {
        SandboxOutcome r = run(2, "TORCH", "1", "PYTHON", "python3", "SCENARIOS", "startup-init-term startup-init-term-lazy",
                "LAUNCHERS", "python", "CONFIGS", "2gpu");
        assertEquals(0, r.status(), r.toString());
        List<Map<String, String>> rows = rows();
        assertEquals(List.of("startup-init-term python", "startup-init-term-lazy python"), rows.stream()
                .map(m -> m.get("scenario") + " " + m.get("launcher")).collect(Collectors.toList()));
        for (Map<String, String> m : rows) {
            assertEquals("torch", m.get("framework"));
            assertEquals("r0=1 r1=143", m.get("exits"));
            assertEquals("0 1", m.get("measured"));
        }
        String md = Files.readString(out.resolve("departures.md"));
        assertTrue(md.contains("\n| startup-init-term | 2gpu | yes "), md);
    }

    /** Its options are checked before torch is imported, so this runs with or without torch. */
    @Test
    void torchDeparturesChecksItsOptionsBeforeImportingTorch() throws Exception {
        assumeOnPath("python3");
        // the syntax, without writing a __pycache__ into scripts/bench (the sandboxes copy scripts/)
        Outcome r = exec(null, Map.of(), 60, List.of("python3", "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())",
                TORCH_SCRIPT.toString()));
        assertEquals(0, r.status(), r.out());
        r = python(Map.of(), "--help");
        assertEquals(0, r.status(), r.out());
        assertTrue(r.out().contains("one of: kill, stop, throw-inside, throw-outside,"), r.out());
        // argparse wraps the list, breaking lines after a hyphen too
        assertTrue(r.out().replaceAll("-\\s+", "-").replaceAll("\\s+", " ").contains("cpu-stuck, startup-init-term, "
                + "startup-init-term-lazy, fuzz, none"), r.out());
        r = python(Map.of("WORLD_SIZE", "1", "RANK", "0"), "startup-init-term-lazy");
        assertEquals(2, r.status(), r.out());
        assertTrue(r.out().contains("needs 2 or more ranks"), "the scenario is one it knows: " + r.out());
        r = python(Map.of(), "dance");
        assertEquals(2, r.status(), r.out());
        assertTrue(r.out().contains("argument SCENARIO: invalid choice: 'dance'"), r.out());
        r = python(Map.of());
        assertEquals(2, r.status(), r.out());
        assertTrue(r.out().contains("torch_departures.py: error: a SCENARIO is required"), r.out());
        Map<String, String> one = Map.of("WORLD_SIZE", "1", "RANK", "0");
        r = python(one, "kill");
        assertEquals(2, r.status(), r.out());
        assertEquals("torch_departures.py: torch_departures.py needs 2 or more ranks, and this is a world of 1: launch "
                + "it with torchrun or RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT", r.out().strip());
        Map<String, String> four = Map.of("WORLD_SIZE", "4", "RANK", "1");
        r = python(four, "count", "--step", "9", "--rank", "4", "--count", "1", "--timeout-s", "0");
        assertEquals(2, r.status(), r.out());
        assertEquals("torch_departures.py: --step 9 is not one of the steps 1..8 (--steps 8); --rank 4 is not a rank of "
                + "this world of 4: use 0..3, or -1 for the last; --count 1 is too small: use 2 or more (count halves "
                + "it); --timeout-s 0.0 must be more than 0", r.out().strip());
        r = python(Map.of("OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_RANK", "1"), "kill", "--steps", "0");
        assertEquals(2, r.status(), r.out());
        assertEquals("torch_departures.py: --steps 0 is not a number of steps: use 1 or more", r.out().strip());
    }

    /** With torch importable (no GPU needed): its version, NCCL's and the abort API the abort-live rows use. */
    @Test
    void torchDeparturesNamesTheAbortApiOfThisTorch() throws Exception {
        assumeOnPath("python3");
        Assumptions.assumeTrue(exec(null, Map.of(), 60, List.of("python3", "-c", "import torch")).status() == 0,
                "torch is not importable by this python3, so only the options are tested "
                        + "(torchDeparturesChecksItsOptionsBeforeImportingTorch)");
        Outcome r = python(Map.of(), "--check-api");
        assertEquals(0, r.status(), r.out());
        assertTrue(r.out().strip().matches("torch \\S+, NCCL \\S.*, abort: torch\\.distributed\\.\\S+\\(\\).*"), r.out());
    }
}
