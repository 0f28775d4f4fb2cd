package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.tools.run.ScriptSandbox.args;
import static org.nccl4j.tools.run.ScriptSandbox.job;
import static org.nccl4j.tools.run.ScriptSandbox.x;
import static org.nccl4j.tools.run.ScriptKit.PYTHON_ENV;
import static org.nccl4j.tools.run.ScriptKit.ROOT;
import static org.nccl4j.tools.run.ScriptKit.assertLines;
import static org.nccl4j.tools.run.ScriptKit.assumeOnPath;
import static org.nccl4j.tools.run.ScriptKit.exec;
import static org.nccl4j.tools.run.ScriptKit.executable;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.tools.run.ScriptSandbox.Call;
import org.nccl4j.tools.run.ScriptSandbox.SandboxOutcome;
import org.nccl4j.tools.run.ScriptKit.Outcome;

/**
 * {@code scripts/bench/perf-ab.sh}, the C baseline against nccl4j-perf in alternating rounds under environment variants,
 * and its report {@code scripts/bench/ab_report.py}.
 *
 * <p>The script runs in {@link ScriptSandbox} (fake mpirun, java, python3, nvidia-smi and C baseline, as in
 * {@link ScriptsTest}): the order of the runs, what each variant's {@code -x VAR=VALUE} gives the ranks, where
 * {@code --java-args} go, the {@code -J} files, the report's call, every refusal of a bad argument (exit 2, nothing
 * run) and exit 1 after a failed run.
 *
 * <p>The report runs on the real python3 (skipped where it is missing) on hand-made JSON in the {@code -J} shape,
 * with the expected rows worked out by hand beside each assertion. Times are multiples of 0.25 us, and medians of
 * two are of values whose mean is one too, so that every printed figure is exact and none sits on a rounding tie.
 */
@Timeout(120)
class PerfAbTest {
    private static final Path REPORT = ROOT.resolve("scripts/bench/ab_report.py");
    private static final List<String> PROG = List.of("all_reduce_perf", "-b", "64M", "-e", "64M", "-n", "200", "-w", "20",
            "-c", "0");
    private static final long MIB = 1 << 20;

    @TempDir
    Path tmp;

    // ================================================================ scripts/bench/perf-ab.sh

    private ScriptSandbox box() throws Exception {
        return new ScriptSandbox(Files.createDirectories(tmp.resolve("sandbox")));
    }

    private static String[] argv(Object... parts) {
        return args(parts).toArray(new String[0]);
    }

    /** The name of a run (c-default-1) from its mpirun call: the rank script it runs, <out>/raw/<name>.rank.sh. */
    private static String runName(Call mpirun) {
        String script = mpirun.lastArg();
        return script.substring(script.lastIndexOf('/') + 1).replace(".rank.sh", "");
    }

    @Test
    void helpPrintsTheHeaderComment() throws Exception {
        ScriptSandbox b = box();
        SandboxOutcome r = b.run(b.root.resolve("scripts/bench/perf-ab.sh"), job(), "--help");
        assertEquals(0, r.status(), r.toString());
        List<String> lines = r.outLines();
        assertEquals("# A/B rounds on a GPU machine: the C baseline and nccl4j-perf one after the other, round after round, "
                + "under one or", lines.get(0));
        assertTrue(lines.stream().allMatch(l -> l.startsWith("#")), r.out());
        assertTrue(lines.contains("#   scripts/bench/perf-ab.sh [--bundle DIR] [--baseline BIN] [--np N] [--rounds R] [--out DIR] "
                + "[--java-args \"ARGS\"]"), r.out());
        assertEquals("# BIND: Open MPI's binding of the ranks (default none), as in perf-compare.sh.",
                lines.get(lines.size() - 1));
        assertEquals(List.of(), r.tools());
    }

    /**
     * 2 rounds x 2 variants: default (the job's environment) and q (JAVA_OPTS with a space and an '=' in it, and
     * CUDA_DEVICE_MAX_CONNECTIONS, which the job sets to 8 too).
     */
    @Test
    void runsEachRoundsVariantsCThenJavaWithTheVariantsEnvironmentAndJavaArgsForJavaOnly() throws Exception {
        ScriptSandbox b = box();
        Path out = b.base.resolve("ab");
        Path baseline = b.root.resolve("scripts/bench/native/build/nccl_perf_baseline");
        Path perf = b.root.resolve("scripts/nccl4j-perf");
        Map<String, String> env = job("CUDA_DEVICE_MAX_CONNECTIONS", "8", "NCCL_COMM_ID", "10.0.0.1:1", "FAKE_PYTHON_OUT",
                "the report");
        SandboxOutcome r = b.run(b.root.resolve("scripts/bench/perf-ab.sh"), env, argv("--bundle", b.bundle, "--baseline", baseline,
                "--out", out, "--rounds", "2", "--java-args", "--jit_quiet_ms 0  --op_times 0", "--variant", "default",
                "--variant", "q:JAVA_OPTS=-XX:+UseSerialGC -Dk=v,CUDA_DEVICE_MAX_CONNECTIONS=1", "--", PROG));
        assertEquals(0, r.status(), r.toString());

        // the order: per round, per variant in the order given, C then Java
        List<Call> mpiruns = r.of("mpirun");
        assertEquals(List.of("c-default-1", "java-default-1", "c-q-1", "java-q-1", "c-default-2", "java-default-2", "c-q-2",
                "java-q-2"), mpiruns.stream().map(PerfAbTest::runName).collect(Collectors.toList()));
        // the job's variables as perf-compare.sh forwards them (compgen -e order); q leaves out the two it sets
        List<String> fwd = x("CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_VISIBLE_DEVICES", "JAVA_OPTS", "LD_LIBRARY_PATH",
                "NCCL4J_BUNDLE", "NCCL4J_TEST_VAR", "NCCL_DEBUG", "NVSHMEM_DISABLE");
        List<String> fwdQ = x("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "NCCL4J_BUNDLE", "NCCL4J_TEST_VAR", "NCCL_DEBUG",
                "NVSHMEM_DISABLE");
        List<String> q = x("JAVA_OPTS=-XX:+UseSerialGC -Dk=v", "CUDA_DEVICE_MAX_CONNECTIONS=1");
        for (int i = 0; i < 8; i++) {
            String name = runName(mpiruns.get(i));
            boolean isQ = name.contains("-q-");
            // a port per run, counting up from 29901
            assertEquals(args("--allow-run-as-root", "--bind-to", "none", "-np", "2", isQ ? fwdQ : fwd, isQ ? q : List.of(),
                    x("MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + (29901 + i)), out.resolve("raw/" + name + ".rank.sh")),
                    mpiruns.get(i).args(), name);
            String json = out.resolve("json/" + name + ".json").toString();
            String rank = name.startsWith("c-") ? baseline + " " + String.join(" ", PROG) + " -J " + json
                    : perf + " " + String.join(" ", PROG) + " --jit_quiet_ms 0 --op_times 0 -J " + json;
            assertEquals("#!/usr/bin/env bash\nexec " + rank + "\n", Files.readString(out.resolve("raw/" + name + ".rank.sh")));
            assertTrue(Files.exists(out.resolve("raw/" + name + ".log")), name);
        }
        assertEquals(args("240", "mpirun"), r.of("timeout").get(0).args().subList(0, 2));

        // what the ranks run and get: mpirun (the fake) runs each rank script twice, rank 0 then rank 1
        List<Call> cs = r.of("nccl_perf_baseline");
        List<Call> javas = r.of("java");
        assertEquals(8, cs.size(), r.toString());
        assertEquals(8, javas.size(), r.toString());
        String[] order = {"default-1", "q-1", "default-2", "q-2"};
        for (int k = 0; k < 8; k++) {
            String v = order[k / 2];
            boolean isQ = v.startsWith("q");
            Call c = cs.get(k);
            Call j = javas.get(k);
            assertEquals(Integer.toString(k % 2), c.env("OMPI_COMM_WORLD_RANK"));
            // the C baseline: the programs' arguments and -J, no --java-args
            assertEquals(args(PROG, "-J", out.resolve("json/c-" + v + ".json")), c.args());
            // nccl4j-perf: JAVA_OPTS (split by nccl4j-perf) is the variant's, or the job's; --java-args before -J
            assertEquals(b.bundle.resolve("jre/bin/java").toString(), j.exe());
            assertEquals(args(isQ ? List.of("-XX:+UseSerialGC", "-Dk=v") : List.of("-Dx=1", "-Dy=2"), "-Djava.awt.headless=true",
                    "-cp", b.bundle + "/lib/*", "org.nccl4j.tools.perf.Perf", PROG, "--jit_quiet_ms", "0", "--op_times", "0",
                    "-J", out.resolve("json/java-" + v + ".json")), j.args());
            for (Call rankCall : List.of(c, j)) {
                assertEquals(isQ ? "-XX:+UseSerialGC -Dk=v" : "-Dx=1 -Dy=2", rankCall.env("JAVA_OPTS"));
                assertEquals(isQ ? "1" : "8", rankCall.env("CUDA_DEVICE_MAX_CONNECTIONS"));
                assertEquals(null, rankCall.env("NCCL_COMM_ID"));
            }
            assertEquals(b.bundle.toString(), j.env("NCCL4J_BUNDLE"));
        }

        // the report, over the JSON directory, the variants in order and the rounds; written to ab.md and printed
        List<Call> py = r.of("python3");
        assertEquals(1, py.size(), r.toString());
        assertEquals(args(b.root.resolve("scripts/bench/ab_report.py"), "--json-dir", out.resolve("json"), "--variants", "default,q",
                "--rounds", "2", "--order", "cj"), py.get(0).args());
        assertEquals("the report\n", Files.readString(out.resolve("ab.md")));
        List<String> lines = r.outLines();
        assertTrue(lines.contains("== round 2 of 2"), r.out());
        assertTrue(lines.contains("== c-q-1: mpirun -np 2 -x JAVA_OPTS=-XX:+UseSerialGC -Dk=v -x CUDA_DEVICE_MAX_CONNECTIONS=1 "
                + baseline + " " + String.join(" ", PROG) + " -J " + out.resolve("json/c-q-1.json")), r.out());
        assertTrue(lines.contains("== java-default-1: mpirun -np 2 " + perf + " " + String.join(" ", PROG)
                + " --jit_quiet_ms 0 --op_times 0 -J " + out.resolve("json/java-default-1.json")), r.out());
        assertTrue(r.out().matches("(?s).*== runs took \\d+ s, 0 failed\nthe report\n"
                + Pattern.quote("== report: " + out.resolve("ab.md") + "; raw: " + out) + "\n"), r.out());
    }

    @Test
    void defaultsAreFourRoundsOfOneVariantTwoRanksAndTheCheckoutsBundleBaselineAndOut() throws Exception {
        ScriptSandbox b = box();
        SandboxOutcome r = b.run(b.root.resolve("scripts/bench/perf-ab.sh"), job("FAKE_GPUS", "8", "FAKE_UID", "1000", "RUN_TIMEOUT", "7",
                "BIND", "numa"), argv("--", "all_reduce_perf"));
        assertEquals(0, r.status(), r.toString());
        Path out = b.root.resolve("perf-results/ab");
        assertEquals(List.of("c-default-1", "java-default-1", "c-default-2", "java-default-2", "c-default-3", "java-default-3",
                "c-default-4", "java-default-4"), r.of("mpirun").stream().map(PerfAbTest::runName).collect(Collectors.toList()));
        for (Call m : r.of("mpirun")) {
            // -np 2 whatever nvidia-smi says; no --allow-run-as-root for uid 1000; BIND
            assertEquals(List.of("--bind-to", "numa", "-np", "2", "-x", "CUDA_VISIBLE_DEVICES"), m.args().subList(0, 6));
            assertEquals(out.resolve("raw/" + runName(m) + ".rank.sh").toString(), m.lastArg());
        }
        assertFalse(r.tools().contains("nvidia-smi"), r.toString());
        for (Call t : r.of("timeout")) {
            assertEquals(List.of("7", "mpirun"), t.args().subList(0, 2));
        }
        assertEquals(List.of("all_reduce_perf", "-J", out.resolve("json/c-default-1.json").toString()),
                r.first("nccl_perf_baseline").args());
        assertEquals(b.bundle.resolve("jre/bin/java").toString(), r.first("java").exe());
        assertEquals(args(b.root.resolve("scripts/bench/ab_report.py"), "--json-dir", out.resolve("json"), "--variants", "default",
                "--rounds", "4", "--order", "cj"), r.first("python3").args());
    }

    /** A '\,' in a variant's VALUE is a ',' of the value, not a separator; the other ',' still separate. */
    @Test
    void aVariantValueMayHoldAnEscapedComma() throws Exception {
        ScriptSandbox b = box();
        Path out = b.base.resolve("ab");
        SandboxOutcome r = b.run(b.root.resolve("scripts/bench/perf-ab.sh"), job(), argv("--out", out, "--rounds", "1", "--variant",
                "dbg:NCCL_DEBUG=INFO,NCCL_DEBUG_SUBSYS=INIT\\,TUNING\\,ENV,X=a b", "--", PROG));
        assertEquals(0, r.status(), r.toString());
        List<Call> mpiruns = r.of("mpirun");
        assertEquals(2, mpiruns.size(), r.toString());
        for (Call m : mpiruns) {
            List<String> a = m.args();
            int at = a.indexOf("NCCL_DEBUG=INFO");
            assertEquals(List.of("-x", "NCCL_DEBUG=INFO", "-x", "NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV", "-x", "X=a b"),
                    a.subList(at - 1, at + 5), a.toString());
        }
        for (Call rank : List.of(r.first("nccl_perf_baseline"), r.first("java"))) {
            assertEquals("INIT,TUNING,ENV", rank.env("NCCL_DEBUG_SUBSYS"));
            assertEquals("INFO", rank.env("NCCL_DEBUG"));
            assertEquals("a b", rank.env("X"));
        }
    }

    /**
     * --order: jc runs Java first in every round, alternate C first in odd rounds and Java first in even ones, and the
     * report is told which. --perf puts another program in the Java place (here the C baseline: an A/A run), with the
     * Java place's arguments and -J file.
     */
    @Test
    void orderChoosesWhoRunsFirstAndPerfReplacesTheJavaProgram() throws Exception {
        ScriptSandbox b = box();
        Path out = b.base.resolve("ab");
        Path baseline = b.root.resolve("scripts/bench/native/build/nccl_perf_baseline");
        SandboxOutcome r = b.run(b.root.resolve("scripts/bench/perf-ab.sh"), job(), argv("--out", out, "--rounds", "3", "--order",
                "alternate", "--variant", "a", "--variant", "b:X=1", "--", PROG));
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("c-a-1", "java-a-1", "c-b-1", "java-b-1", "java-a-2", "c-a-2", "java-b-2", "c-b-2", "c-a-3",
                "java-a-3", "c-b-3", "java-b-3"), r.of("mpirun").stream().map(PerfAbTest::runName).collect(Collectors.toList()));
        assertEquals(args(b.root.resolve("scripts/bench/ab_report.py"), "--json-dir", out.resolve("json"), "--variants", "a,b",
                "--rounds", "3", "--order", "alternate"), r.first("python3").args());

        r = b.run(b.root.resolve("scripts/bench/perf-ab.sh"), job(), argv("--out", out, "--rounds", "2", "--order", "jc",
                "--perf", baseline, "--java-args", "--op_times 1", "--", PROG));
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("java-default-1", "c-default-1", "java-default-2", "c-default-2"),
                r.of("mpirun").stream().map(PerfAbTest::runName).collect(Collectors.toList()));
        assertEquals("#!/usr/bin/env bash\nexec " + baseline + " " + String.join(" ", PROG) + " --op_times 1 -J "
                + out.resolve("json/java-default-1.json") + "\n", Files.readString(out.resolve("raw/java-default-1.rank.sh")));
        assertEquals(List.of(), r.of("java"), r.toString());
        assertEquals(8, r.of("nccl_perf_baseline").size(), r.toString());   // 2 rounds x 2 places x 2 ranks
        assertEquals(List.of("--order", "jc"), r.first("python3").args().subList(7, 9));
    }

    @Test
    void buildsTheBaselineWhenMissing() throws Exception {
        ScriptSandbox b = box();
        Path baseline = b.root.resolve("scripts/bench/native/build/nccl_perf_baseline");
        Files.delete(baseline);
        Path build = b.root.resolve("scripts/bench/native/build.sh");
        executable(build, "#!/usr/bin/env bash\necho building\ncp " + b.bin.resolve("java") + " " + baseline + "\n");
        SandboxOutcome r = b.run(b.root.resolve("scripts/bench/perf-ab.sh"), job(), argv("--rounds", "1", "--", PROG));
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("== building the C baseline (scripts/bench/native/build.sh)", "building"), r.outLines().subList(0, 2));
        assertEquals(2, r.of("nccl_perf_baseline").size(), r.toString());

        Files.delete(baseline);
        Files.writeString(build, "#!/usr/bin/env bash\nexit 1\n");
        r = b.run(b.root.resolve("scripts/bench/perf-ab.sh"), job(), argv("--rounds", "1", "--", PROG));
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().contains("perf-ab: the C baseline did not build"), r.err());
        assertEquals(List.of(), r.tools());
    }

    @Test
    void aFailedRunGivesExitOneAndTheReportStillRunsWithoutStaleResults() throws Exception {
        ScriptSandbox b = box();
        Path out = b.base.resolve("ab");
        // results of an earlier run into the same directory: they must not stand in for this run's
        Path stale = Files.createDirectories(out.resolve("json")).resolve("java-default-1.json");
        Files.writeString(stale, "{}");
        Path other = out.resolve("json/c-other-9.json");   // not a file of this run: left alone
        Files.writeString(other, "{}");
        SandboxOutcome r = b.run(b.root.resolve("scripts/bench/perf-ab.sh"), job("FAKE_JAVA_STATUS", "3", "FAKE_PYTHON_OUT", "the report"),
                argv("--out", out, "--rounds", "2", "--", PROG));
        assertEquals(1, r.status(), r.toString());
        assertFalse(Files.exists(stale));
        assertTrue(Files.exists(other));
        List<String> lines = r.outLines();
        assertTrue(lines.contains("   failed with status 3 (see " + out.resolve("raw/java-default-1.log") + ")"), r.out());
        assertTrue(lines.contains("   failed with status 3 (see " + out.resolve("raw/java-default-2.log") + ")"), r.out());
        assertTrue(r.out().matches("(?s).*== runs took \\d+ s, 2 failed: java-default-1 java-default-2\n.*"), r.out());
        // every run was made, and the report too
        assertEquals(4, r.of("mpirun").size(), r.toString());
        assertEquals(1, r.of("python3").size(), r.toString());
        assertTrue(lines.contains("the report"), r.out());
    }

    /** Each bad argument: exit 2, the message on stderr, and nothing run (no fake called at all). */
    @Test
    void badArgumentsAreRefusedWithExitTwoBeforeAnythingRuns() throws Exception {
        ScriptSandbox b = box();
        String out = b.root.resolve("perf-results/ab").toString();
        String sets = "perf-ab: the programs' arguments: '%s': the script sets -J (--output_file) itself, to " + out
                + "/json/<c|java>-<variant>-<round>.json";
        String oneGpu = "perf-ab: %s: '%s': -g (--ngpus) is not for this script: it runs one process per GPU (--np)";
        String eg = "(e.g. -- all_reduce_perf -b 64M -e 64M -n 200 -w 20 -c 0)";
        List<List<String>> cases = List.of(
                List.of("perf-ab: unknown argument --bogus (--help)", "--bogus", "--", "all_reduce_perf"),
                List.of("perf-ab: --rounds needs a value (--help)", "--rounds"),
                List.of("perf-ab: --variant needs a value (--help)", "--variant"),
                List.of("perf-ab: --order needs a value (--help)", "--order"),
                List.of("perf-ab: --perf needs a value (--help)", "--perf"),
                List.of("perf-ab: --order 'x' must be cj (C first), jc (Java first) or alternate", "--order", "x", "--",
                        "all_reduce_perf"),
                List.of("perf-ab: --order 'CJ' must be cj (C first), jc (Java first) or alternate", "--order", "CJ", "--",
                        "all_reduce_perf"),
                List.of("perf-ab: --perf '" + b.base.resolve("nothing") + "' is not an executable file", "--perf",
                        b.base.resolve("nothing").toString(), "--", "all_reduce_perf"),
                List.of("perf-ab: --rounds '0' must be a whole number >= 1", "--rounds", "0", "--", "all_reduce_perf"),
                List.of("perf-ab: --rounds '1.5' must be a whole number >= 1", "--rounds", "1.5", "--", "all_reduce_perf"),
                List.of("perf-ab: --rounds 'x' must be a whole number >= 1", "--rounds", "x", "--", "all_reduce_perf"),
                List.of("perf-ab: --np '0' must be a whole number >= 1", "--np", "0", "--", "all_reduce_perf"),
                List.of("perf-ab: --variant 'a b': the name 'a b' must be letters, digits, '_' or '-' (one at least)",
                        "--variant", "a b", "--", "all_reduce_perf"),
                List.of("perf-ab: --variant 'a.b:X=1': the name 'a.b' must be letters, digits, '_' or '-' (one at least)",
                        "--variant", "a.b:X=1", "--", "all_reduce_perf"),
                List.of("perf-ab: --variant ':X=1': the name '' must be letters, digits, '_' or '-' (one at least)",
                        "--variant", ":X=1", "--", "all_reduce_perf"),
                List.of("perf-ab: --variant 'a:X=2': the name 'a' is given twice", "--variant", "a", "--variant", "a:X=2", "--",
                        "all_reduce_perf"),
                List.of("perf-ab: --variant 'a:X': 'X' is not VAR=VALUE", "--variant", "a:X", "--", "all_reduce_perf"),
                List.of("perf-ab: --variant 'a:': '' is not VAR=VALUE", "--variant", "a:", "--", "all_reduce_perf"),
                List.of("perf-ab: --variant 'a:X=1,': '' is not VAR=VALUE", "--variant", "a:X=1,", "--", "all_reduce_perf"),
                List.of("perf-ab: --variant 'a:1X=2': '1X' is not a variable name (letters, digits and '_', not first a digit)",
                        "--variant", "a:1X=2", "--", "all_reduce_perf"),
                List.of("perf-ab: --variant 'a:X=1,Y-Z=2': 'Y-Z' is not a variable name (letters, digits and '_', not first "
                        + "a digit)", "--variant", "a:X=1,Y-Z=2", "--", "all_reduce_perf"),
                List.of("perf-ab: no '--' before the programs' arguments " + eg, "--rounds", "2"),
                List.of("perf-ab: no '--' before the programs' arguments " + eg),
                List.of("perf-ab: no arguments for the programs after '--' " + eg, "--rounds", "2", "--"),
                List.of(String.format(sets, "-J"), "--", "all_reduce_perf", "-J", "x.json"),
                List.of(String.format(sets, "-Jx.json"), "--", "all_reduce_perf", "-Jx.json"),
                List.of(String.format(sets, "--output_file"), "--", "--output_file", "x.json"),
                List.of(String.format(sets, "--output_file=x.json"), "--", "--output_file=x.json"),
                List.of(String.format(oneGpu, "the programs' arguments", "-g"), "--", "all_reduce_perf", "-g", "2"),
                List.of(String.format(oneGpu, "the programs' arguments", "-g2"), "--", "-g2"),
                List.of(String.format(oneGpu, "the programs' arguments", "--ngpus"), "--", "--ngpus", "2"),
                List.of(String.format(oneGpu, "the programs' arguments", "--ngpus=2"), "--", "--ngpus=2"),
                List.of("perf-ab: --java-args: '-J': the script sets -J (--output_file) itself, to " + out
                        + "/json/<c|java>-<variant>-<round>.json", "--java-args", "--op_times 1 -J y", "--", "all_reduce_perf"),
                List.of(String.format(oneGpu, "--java-args", "--ngpus"), "--java-args", "--ngpus 2", "--", "all_reduce_perf"),
                List.of("perf-ab: no bundle at " + b.base.resolve("nothing") + " (scripts/gpu-bundle.sh)", "--bundle",
                        b.base.resolve("nothing").toString(), "--", "all_reduce_perf"));
        for (List<String> c : cases) {
            SandboxOutcome r = b.run(b.root.resolve("scripts/bench/perf-ab.sh"), job(), c.subList(1, c.size()).toArray(new String[0]));
            String what = c.subList(1, c.size()) + "\n" + r;
            assertEquals(2, r.status(), what);
            assertEquals(c.get(0), r.err().strip(), what);
            assertEquals(List.of(), r.tools(), what);
            assertFalse(Files.exists(b.root.resolve("perf-results")), what);
        }
    }

    // ================================================================ scripts/bench/ab_report.py

    private Outcome report(Path json, String variants, int rounds) throws Exception {
        assumeOnPath("python3");
        return exec(tmp, PYTHON_ENV, List.of("python3", REPORT.toString(), "--json-dir", json.toString(), "--variants",
                variants, "--rounds", Integer.toString(rounds)));
    }

    private String markdown(Path json, String variants, int rounds) throws Exception {
        Outcome r = report(json, variants, rounds);
        assertEquals(0, r.status(), r.out());
        return r.out();
    }

    /** One result in the -J shape (eager, bandwidths 1.0, no check). */
    private static String result(String op, long size, String placement, double timeUs) {
        return ScriptKit.result(op, size, placement, false, timeUs, 1.0, "\"wrong\": null");
    }

    private static String ar64(String placement, double timeUs) {
        return result("all_reduce", 64 * MIB, placement, timeUs);
    }

    /** A document as nccl_perf_baseline (c-...) or nccl4j-perf (java-...) writes it with -J. */
    private static void doc(Path dir, String name, String... results) throws Exception {
        boolean c = name.startsWith("c-");
        String cl = "\"all_reduce_perf\", \"-b\", \"64M\", \"-e\", \"64M\", \"-n\", \"200\", \"-w\", \"20\", \"-c\", \"0\", "
                + (c ? "" : "\"--jit_quiet_ms\", \"0\", ") + "\"-J\", \"/out/json/" + name + ".json\"";
        Files.writeString(dir.resolve(name + ".json"), "{\"tool\": \"" + (c ? "nccl_perf_baseline" : "nccl4j-perf")
                + "\", \"hostname\": \"test\", \"nccl_version\": \"2.99.1\", \"ranks\": 2, \"processes\": 2, "
                + "\"command_line\": [" + cl + "], \"results\": [\n  " + String.join(",\n  ", results) + "\n]}\n");
    }

    private static final String HEAD = "| operation | size | placement | type | redop | root |";
    private static final String ALIGN = "|---|---:|---|---|---|---:|";

    /** 3 rounds (medians of 3), one variant, all 6 files there. */
    @Test
    void reportOfThreeRoundsOneVariant() throws Exception {
        Path d = Files.createDirectories(tmp.resolve("json"));
        //                                out of place              in place               broadcast 8 B
        doc(d, "c-default-1", ar64("out-of-place", 250.0), ar64("in-place", 248.0), result("broadcast", 8, "out-of-place", 10.0));
        doc(d, "java-default-1", ar64("out-of-place", 251.5), ar64("in-place", 247.75), result("broadcast", 8, "out-of-place", 10.5));
        doc(d, "c-default-2", ar64("out-of-place", 249.5), ar64("in-place", 248.5), result("broadcast", 8, "out-of-place", 12.0));
        doc(d, "java-default-2", ar64("out-of-place", 250.0), ar64("in-place", 249.0), result("broadcast", 8, "out-of-place", 11.5));
        doc(d, "c-default-3", ar64("out-of-place", 251.0), ar64("in-place", 247.5), result("broadcast", 8, "out-of-place", 11.0));
        doc(d, "java-default-3", ar64("out-of-place", 252.25), ar64("in-place", 248.25), result("broadcast", 8, "out-of-place", 13.0));
        String md = markdown(d, "default", 3);
        assertLines(md, "# C baseline against nccl4j-perf: 3 rounds, alternating", "",
                "NCCL 2.99.1, 2 ranks, host test. Command lines without -J: C `all_reduce_perf -b 64M -e 64M -n 200 -w 20 -c 0`, "
                        + "nccl4j-perf `all_reduce_perf -b 64M -e 64M -n 200 -w 20 -c 0 --jit_quiet_ms 0`.");
        assertLines(md, "All 6 results present.", "", "## Variant default", "",
                HEAD + " round 1: C / Java | round 2: C / Java | round 3: C / Java | C median | Java median | Java - C | Java / C "
                        + "| Java - C per round |",
                ALIGN + "---:|---:|---:|---:|---:|---:|---:|---|",
                // C 250, 249.5, 251 -> median 250; Java 251.5, 250, 252.25 -> median 251.5; 251.5 - 250 = +1.50;
                // 251.5 / 250 = 1.006; per round 251.5 - 250 = +1.50, 250 - 249.5 = +0.50, 252.25 - 251 = +1.25
                "| all_reduce | 64 MiB | out-of-place | float | sum | -1 | 250.00 / 251.50 | 249.50 / 250.00 | 251.00 / 252.25 "
                        + "| 250.00 | 251.50 | +1.50 | 1.0060 | +1.50, +0.50, +1.25 |",
                // C 248, 248.5, 247.5 -> 248; Java 247.75, 249, 248.25 -> 248.25; +0.25; 248.25 / 248 = 1.001008 -> 1.0010;
                // per round 247.75 - 248 = -0.25, 249 - 248.5 = +0.50, 248.25 - 247.5 = +0.75
                "| all_reduce | 64 MiB | in-place | float | sum | -1 | 248.00 / 247.75 | 248.50 / 249.00 | 247.50 / 248.25 "
                        + "| 248.00 | 248.25 | +0.25 | 1.0010 | -0.25, +0.50, +0.75 |",
                // C 10, 12, 11 -> 11; Java 10.5, 11.5, 13 -> 11.5; +0.50; 11.5 / 11 = 1.045454... -> 1.0455;
                // per round +0.50, -0.50, +2.00
                "| broadcast | 8 B | out-of-place | float | none | 0 | 10.00 / 10.50 | 12.00 / 11.50 | 11.00 / 13.00 "
                        + "| 11.00 | 11.50 | +0.50 | 1.0455 | +0.50, -0.50, +2.00 |");
        assertFalse(md.contains("Missing"), md);
        assertFalse(md.contains("per variant"), md);   // one variant: no comparison table
    }

    /** 4 rounds with one Java run missing: C's median of 4 (even), Java's of the 3 there. */
    @Test
    void reportOfFourRoundsWithAMissingRun() throws Exception {
        Path d = Files.createDirectories(tmp.resolve("json"));
        doc(d, "c-default-1", ar64("out-of-place", 99.5));
        doc(d, "java-default-1", ar64("out-of-place", 101.0));
        doc(d, "c-default-2", ar64("out-of-place", 100.5));
        doc(d, "java-default-2", ar64("out-of-place", 102.5));
        doc(d, "c-default-3", ar64("out-of-place", 98.0));
        // java-default-3: missing
        doc(d, "c-default-4", ar64("out-of-place", 101.0));
        doc(d, "java-default-4", ar64("out-of-place", 100.5));
        String md = markdown(d, "default", 4);
        assertLines(md, "Missing: 1 of 8 results: java-default-3.json. The figures are over the rounds present "
                + "(a round's Java - C where it has both).");
        assertLines(md, HEAD + " round 1: C / Java | round 2: C / Java | round 3: C / Java | round 4: C / Java | C median "
                        + "| Java median | Java - C | Java / C | Java - C per round |",
                ALIGN + "---:|---:|---:|---:|---:|---:|---:|---:|---|",
                // C 99.5, 100.5, 98, 101 -> sorted 98, 99.5, 100.5, 101 -> (99.5 + 100.5) / 2 = 100;
                // Java 101, 102.5, 100.5 (round 3 missing) -> sorted 100.5, 101, 102.5 -> 101; 101 - 100 = +1.00;
                // 101 / 100 = 1.0100; per round 101 - 99.5 = +1.50, 102.5 - 100.5 = +2.00, n/a, 100.5 - 101 = -0.50
                "| all_reduce | 64 MiB | out-of-place | float | sum | -1 | 99.50 / 101.00 | 100.50 / 102.50 | 98.00 / n/a "
                        + "| 101.00 / 100.50 | 100.00 | 101.00 | +1.00 | 1.0100 | +1.50, +2.00, n/a, -0.50 |");
    }

    /** Two variants of 2 rounds (medians of 2), an unreadable Java file in q, and a case only q's C has. */
    @Test
    void reportOfTwoVariantsComparesThem() throws Exception {
        Path d = Files.createDirectories(tmp.resolve("json"));
        doc(d, "c-default-1", ar64("out-of-place", 250.0), ar64("in-place", 248.0));
        doc(d, "java-default-1", ar64("out-of-place", 251.5), ar64("in-place", 248.5));
        doc(d, "c-q-1", ar64("out-of-place", 250.0), ar64("in-place", 248.0), result("broadcast", 8, "out-of-place", 10.0));
        doc(d, "java-q-1", ar64("out-of-place", 250.5), ar64("in-place", 247.75));
        doc(d, "c-default-2", ar64("out-of-place", 251.0), ar64("in-place", 249.0));
        doc(d, "java-default-2", ar64("out-of-place", 252.5), ar64("in-place", 250.5));
        doc(d, "c-q-2", ar64("out-of-place", 250.5), ar64("in-place", 248.5));
        Files.writeString(d.resolve("java-q-2.json"), "{\"results\": [");   // cut short
        String md = markdown(d, "default,q", 2);
        assertLines(md, "# C baseline against nccl4j-perf: 2 rounds, alternating");
        assertLines(md, "Missing: 1 of 8 results: java-q-2.json (unreadable: JSONDecodeError). The figures are over the rounds "
                + "present (a round's Java - C where it has both).");
        String head = HEAD + " round 1: C / Java | round 2: C / Java | C median | Java median | Java - C | Java / C "
                + "| Java - C per round |";
        String align = ALIGN + "---:|---:|---:|---:|---:|---:|---|";
        assertLines(md, "## Variant default", "", head, align,
                // C 250, 251 -> 250.5; Java 251.5, 252.5 -> 252; +1.50; 252 / 250.5 = 1.005988 -> 1.0060; +1.50, +1.50
                "| all_reduce | 64 MiB | out-of-place | float | sum | -1 | 250.00 / 251.50 | 251.00 / 252.50 | 250.50 | 252.00 "
                        + "| +1.50 | 1.0060 | +1.50, +1.50 |",
                // C 248, 249 -> 248.5; Java 248.5, 250.5 -> 249.5; +1.00; 249.5 / 248.5 = 1.004024 -> 1.0040; +0.50, +1.50
                "| all_reduce | 64 MiB | in-place | float | sum | -1 | 248.00 / 248.50 | 249.00 / 250.50 | 248.50 | 249.50 "
                        + "| +1.00 | 1.0040 | +0.50, +1.50 |", "");
        assertLines(md, "## Variant q", "", head, align,
                // C 250, 250.5 -> 250.25; Java 250.5 (round 2 unreadable) -> 250.5; +0.25; 250.5 / 250.25 = 1.000999 ->
                // 1.0010; per round 250.5 - 250 = +0.50, n/a
                "| all_reduce | 64 MiB | out-of-place | float | sum | -1 | 250.00 / 250.50 | 250.50 / n/a | 250.25 | 250.50 "
                        + "| +0.25 | 1.0010 | +0.50, n/a |",
                // C 248, 248.5 -> 248.25; Java 247.75 -> 247.75; 247.75 - 248.25 = -0.50; 247.75 / 248.25 = 0.997986 ->
                // 0.9980; per round 247.75 - 248 = -0.25, n/a
                "| all_reduce | 64 MiB | in-place | float | sum | -1 | 248.00 / 247.75 | 248.50 / n/a | 248.25 | 247.75 "
                        + "| -0.50 | 0.9980 | -0.25, n/a |",
                // in round 1's C only: C median 10, nothing to compare
                "| broadcast | 8 B | out-of-place | float | none | 0 | 10.00 / n/a | n/a / n/a | 10.00 | n/a | n/a | n/a "
                        + "| n/a, n/a |", "");
        // Java - C of the medians, from the two tables above
        assertLines(md, "## Java - C per variant (us, of the medians)", "", HEAD + " default | q |", ALIGN + "---:|---:|",
                "| all_reduce | 64 MiB | out-of-place | float | sum | -1 | +1.50 | +0.25 |",
                "| all_reduce | 64 MiB | in-place | float | sum | -1 | +1.00 | -0.50 |",
                "| broadcast | 8 B | out-of-place | float | none | 0 | n/a | n/a |");
    }

    @Test
    void reportWithNothingThereAndBadArguments() throws Exception {
        Path d = Files.createDirectories(tmp.resolve("json"));
        String md = markdown(d, "a,b", 1);
        assertLines(md, "Missing: 4 of 4 results: c-a-1.json, java-a-1.json, c-b-1.json, java-b-1.json. The figures are over "
                + "the rounds present (a round's Java - C where it has both).", "", "## Variant a", "", "No results.", "",
                "## Variant b", "", "No results.");
        assertTrue(md.endsWith("No results.\n"), md);   // no comparison table: no case to compare
        assertFalse(md.contains("NCCL "), md);   // no document to take the version from

        Outcome r = report(d, "a,a", 1);
        assertEquals(2, r.status(), r.out());
        assertTrue(r.out().contains("--variants: a name is given twice: a,a"), r.out());
        r = report(d, "a", 0);
        assertEquals(2, r.status(), r.out());
        assertTrue(r.out().contains("--rounds 0 must be >= 1"), r.out());
        r = report(d, "a/b", 1);
        assertEquals(2, r.status(), r.out());
        assertTrue(r.out().contains("--variants: 'a/b' is not a variant name"), r.out());
        r = exec(tmp, PYTHON_ENV, List.of("python3", REPORT.toString(), "--json-dir", d.toString(), "--variants", "a",
                "--rounds", "1", "--order", "ca"));
        assertEquals(2, r.status(), r.out());
        assertTrue(r.out().contains("--order: invalid choice: 'ca'"), r.out());
    }

    /** The sentence on who ran first follows --order; without it, perf-ab.sh's default (C first). */
    @Test
    void reportSaysWhichSideRanFirst() throws Exception {
        Path d = Files.createDirectories(tmp.resolve("json"));
        doc(d, "c-default-1", ar64("out-of-place", 250.0));
        doc(d, "java-default-1", ar64("out-of-place", 251.0));
        String tail = ", for each variant in turn. The medians are over the rounds; Java - C and Java / C are of the two "
                + "medians.";
        assertLines(markdown(d, "default", 1), "Times in us (time_us, the time column: per operation). Each round ran C, then Java"
                + tail);
        for (String[] o : new String[][] {{"cj", "Each round ran C, then Java"}, {"jc", "Each round ran Java, then C"},
                {"alternate", "Odd rounds ran C, then Java, and even rounds Java, then C"}}) {
            Outcome r = exec(tmp, PYTHON_ENV, List.of("python3", REPORT.toString(), "--json-dir", d.toString(), "--variants",
                    "default", "--rounds", "1", "--order", o[0]));
            assertEquals(0, r.status(), r.out());
            assertLines(r.out(), "Times in us (time_us, the time column: per operation). " + o[1] + tail);
        }
    }
}
