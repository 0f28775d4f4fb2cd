package org.nccl4j.tools.run;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.tools.run.ScriptSandbox.CONSOLE;
import static org.nccl4j.tools.run.ScriptSandbox.CUDA_LIB64;
import static org.nccl4j.tools.run.ScriptSandbox.CUDA_TARGETS;
import static org.nccl4j.tools.run.ScriptSandbox.SCRIPTS;
import static org.nccl4j.tools.run.ScriptSandbox.args;
import static org.nccl4j.tools.run.ScriptSandbox.assertLd;
import static org.nccl4j.tools.run.ScriptSandbox.buildClasspath;
import static org.nccl4j.tools.run.ScriptSandbox.bundledScripts;
import static org.nccl4j.tools.run.ScriptSandbox.classpath;
import static org.nccl4j.tools.run.ScriptSandbox.delete;
import static org.nccl4j.tools.run.ScriptSandbox.env;
import static org.nccl4j.tools.run.ScriptSandbox.fake;
import static org.nccl4j.tools.run.ScriptSandbox.job;
import static org.nccl4j.tools.run.ScriptSandbox.masked;
import static org.nccl4j.tools.run.ScriptSandbox.x;
import static org.nccl4j.tools.run.ScriptKit.ROOT;
import static org.nccl4j.tools.run.ScriptKit.VERSION;
import static org.nccl4j.tools.run.ScriptKit.exec;
import static org.nccl4j.tools.run.ScriptKit.executable;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.tools.run.ScriptSandbox.Call;
import org.nccl4j.tools.run.ScriptSandbox.SandboxOutcome;
import org.nccl4j.tools.run.ScriptKit.Outcome;
import org.nccl4j.trace.FlightRecorder;
import org.nccl4j.trace.TraceDump;
import org.nccl4j.trace.TraceOperation;

/**
 * The bash scripts of {@code scripts/}, run on the CPU against fakes. Each test copies the scripts into a temporary
 * checkout with a fake bundle ({@code bundle/jre/bin/java}, empty {@code lib/*.jar}, the scripts that
 * {@code gpu-bundle.sh} copies there) and puts fake {@code mpirun}, {@code nvidia-smi}, {@code timeout}, {@code id},
 * {@code mvn}, {@code java}, {@code python3}, {@code jlink}, {@code unzip} and {@code zip} first on PATH (all
 * {@code fake-tool.sh}: each records its path, working directory, arguments and environment; mpirun then runs the
 * per-rank command once per rank). The tests
 * check what each script runs: which java, the class path, the main class and its arguments, the mpirun options
 * ({@code --allow-run-as-root} for uid 0 only, the {@code -x} variables) and the environment the children get.
 * The environment is cleared but for the variables a test sets, so the results do not depend on the machine.
 * The functions of {@code scripts/env.sh}, which the scripts share, are tested on their own too; CUDA library
 * directories are temporary ones, named by {@code NCCL4J_CUDA_LIB_DIRS}. The sandbox and the fakes' records are
 * {@link ScriptSandbox}'s, shared with {@link PerfAbTest}.
 */
@Timeout(120)
class ScriptsTest {
    private static final String LAUNCHER = "org.nccl4j.tools.run.Launcher";
    private static final String PERF = "org.nccl4j.tools.perf.Perf";
    private static final String TRACE = "org.nccl4j.tools.analyze.TraceAnalyzer";
    /** The JUnit console launcher's summary, as fake java prints it. */
    private static final String SUMMARY = "[         3 tests successful      ]\\n[         0 tests failed          ]";
    private static final List<String> JAVA_OPTS = List.of("-Dx=1", "-Dy=2");

    @TempDir
    Path tmp;

    private Path base;
    private Path root;
    private Path bundle;
    private Path bin;
    private Path jdk;
    private Path logs;

    private ScriptSandbox box;

    // ---------------------------------------------------------------- the sandbox (ScriptSandbox)

    @BeforeEach
    void sandbox() throws IOException {
        box = new ScriptSandbox(tmp);
        base = box.base;
        root = box.root;
        bundle = box.bundle;
        bin = box.bin;
        jdk = box.jdk;
        logs = box.logs;
    }

    // ---------------------------------------------------------------- all scripts

    @Test
    void everyScriptParses() throws Exception {
        List<Path> scripts;
        try (Stream<Path> s = Files.list(SCRIPTS)) {
            scripts = s.filter(Files::isRegularFile).sorted().collect(Collectors.toList());
        }
        assertTrue(scripts.size() >= 10, scripts.toString());
        for (Path p : scripts) {
            Outcome r = exec(null, Map.of(), 30, List.of("bash", "-n", p.toString()));
            assertEquals(0, r.status(), p + ": " + r.out());
        }
    }

    /**
     * shellcheck finds nothing in the scripts, scripts/bench included (deliberate word splitting, such as of
     * JAVA_OPTS, is marked where it happens). Skipped, saying so, where shellcheck is not installed.
     */
    @Test
    void everyScriptPassesShellcheck() throws Exception {
        Assumptions.assumeTrue(exec(null, Map.of(), 30, List.of("sh", "-c", "command -v shellcheck")).status() == 0,
                "shellcheck is not installed here, so the scripts' lint is not checked");
        List<String> command = new ArrayList<>(List.of("shellcheck", "-x", "-P", "SCRIPTDIR"));
        try (Stream<Path> s = Files.walk(SCRIPTS)) {
            for (Path p : s.filter(Files::isRegularFile).sorted().collect(Collectors.toList())) {
                String head;   // the first line; files built here (the C baseline) are binary
                try (var in = Files.newInputStream(p)) {
                    head = new String(in.readNBytes(64), java.nio.charset.StandardCharsets.ISO_8859_1).split("\n")[0];
                }
                if (head.startsWith("#!") && head.endsWith("bash") || p.toString().endsWith(".sh")) {
                    command.add(p.toString());
                }
            }
        }
        assertTrue(command.size() >= 4 + 15, command.toString());
        Outcome r = exec(null, Map.of(), 120, command);
        assertEquals(0, r.status(), r.out());
    }

    @Test
    void theBundleGetsItsScriptsAndWhatTheySource() throws Exception {
        List<String> bundled = bundledScripts();
        assertTrue(bundled.containsAll(List.of("gpu-test.sh", "nccl4j-run", "nccl4j-perf", "nccl4j-trace", "nccl4j-doctor",
                "departures.sh")),
                bundled.toString());
        for (String s : bundled) {
            Path p = SCRIPTS.resolve(s);
            assertTrue(Files.isRegularFile(p), p.toString());
            if (Files.readString(p).contains("env.sh")) {
                assertTrue(bundled.contains("env.sh"), s + " sources env.sh but gpu-bundle.sh does not copy it: " + bundled);
            }
        }
    }

    // ---------------------------------------------------------------- env.sh, the shared setup

    /** Runs {@code code} in bash under {@code set -euo pipefail} after sourcing the checkout's scripts/env.sh. */
    private SandboxOutcome envSh(String code, String... kv) throws Exception {
        Path snippet = base.resolve("snippet.sh");
        executable(snippet, "#!/usr/bin/env bash\nset -euo pipefail\n. " + root.resolve("scripts/env.sh") + "\n" + code + "\n");
        return box.run(snippet, env(kv));
    }

    private Path cudaTargets() throws IOException {
        return Files.createDirectories(base.resolve("cuda/targets/x86_64-linux/lib"));
    }

    private Path cudaLib64() throws IOException {
        return Files.createDirectories(base.resolve("cuda/lib64"));
    }

    @Test
    void envShPutsTheCudaDirectoriesInFrontOfLdLibraryPathAsAsked() throws Exception {
        String t = cudaTargets().toString();
        String l = cudaLib64().toString();
        String missing = base.resolve("cuda/missing").toString();
        String show = "; echo \"${LD_LIBRARY_PATH-unset} $(declare -p LD_LIBRARY_PATH 2>/dev/null | cut -c1-10)\"";
        String dirs = t + ":" + l;
        Map<String, String> cases = new LinkedHashMap<>();
        cases.put("nccl4j_cuda_libs", t + ":" + l + ":/opt/ld declare -x");
        cases.put("nccl4j_cuda_libs --reverse", l + ":" + t + ":/opt/ld declare -x");
        cases.put("nccl4j_cuda_libs --first", t + ":/opt/ld declare -x");
        cases.put("nccl4j_cuda_libs --always", t + ":" + l + ":/opt/ld declare -x");
        cases.put("LD_LIBRARY_PATH=/opt/ld:" + l + "; nccl4j_cuda_libs --reverse --dedupe", t + ":/opt/ld:" + l + " declare -x");
        // --print leaves LD_LIBRARY_PATH as it is
        cases.put("nccl4j_cuda_libs --reverse --print", l + ":" + t + ":/opt/ld|/opt/ld declare -x");
        for (Map.Entry<String, String> c : cases.entrySet()) {
            SandboxOutcome r = envSh(c.getKey() + show, "NCCL4J_CUDA_LIB_DIRS", dirs, "LD_LIBRARY_PATH", "/opt/ld");
            assertEquals(0, r.status(), c.getKey() + "\n" + r);
            assertEquals(c.getValue(), r.outLines().stream().map(String::strip).collect(Collectors.joining("|")), c.getKey());
        }
        // directories that do not exist are left out, and then LD_LIBRARY_PATH is not set at all; --always takes them
        SandboxOutcome r = envSh("nccl4j_cuda_libs" + show + "; nccl4j_cuda_libs --reverse --first" + show
                + "; nccl4j_cuda_libs --always" + show, "NCCL4J_CUDA_LIB_DIRS", missing + ":" + base.resolve("cuda/missing2"));
        assertEquals(List.of("unset", "unset", missing + ":" + base.resolve("cuda/missing2") + " declare -x"), r.outLines()
                .stream().map(String::strip).collect(Collectors.toList()), r.toString());
        r = envSh("nccl4j_cuda_libs --dedupe --print", "NCCL4J_CUDA_LIB_DIRS", missing + ":" + l);
        assertEquals(List.of(l), r.outLines());
        // the default: the two directories of a CUDA install, targets/x86_64-linux/lib first
        r = envSh("nccl4j_cuda_libs --always --print");
        assertEquals(List.of(CUDA_TARGETS + ":" + CUDA_LIB64), r.outLines());
        r = envSh("nccl4j_cuda_libs --bogus");
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().contains("nccl4j_cuda_libs: unknown option --bogus"), r.err());
    }

    @Test
    void envShGivesAllowRunAsRootToRootOnly() throws Exception {
        String show = "nccl4j_mpi_root_args; echo \"[${nccl4j_mpi_root[*]}]\"";
        assertEquals(List.of("[--allow-run-as-root]"), envSh(show).outLines());
        assertEquals(List.of("[]"), envSh(show, "FAKE_UID", "1000").outLines());
        assertEquals(List.of("[--allow-run-as-root]"), envSh(show, "FAKE_UID", "1000", "NCCL4J_AS_ROOT", "1").outLines());
        assertEquals(List.of("[]"), envSh(show, "FAKE_UID", "0", "NCCL4J_AS_ROOT", "0").outLines());
    }

    @Test
    void envShForwardsExportedVariablesByPrefixOrByName() throws Exception {
        String show = "; printf '%s ' \"${nccl4j_mpi_fwd[@]}\"; echo";
        SandboxOutcome r = envSh("NCCL_NOT_EXPORTED=1; nccl4j_mpi_forward_args NCCL_ CUDA_ LD_LIBRARY_PATH JAVA_OPTS" + show,
                "NCCL_DEBUG", "INFO", "NCCLX", "no", "CUDA_HOME", "/c", "LD_LIBRARY_PATH", "/l", "LD_LIBRARY_PATH_2", "no",
                "JAVA_OPTS", "-Dx", "JAVA_OPTS_MORE", "no", "XNCCL_A", "no", "TORCH_X", "no");
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("-x CUDA_HOME -x JAVA_OPTS -x LD_LIBRARY_PATH -x NCCL_DEBUG"), r.outLines().stream()
                .map(String::strip).collect(Collectors.toList()));
        r = envSh("nccl4j_mpi_forward_args NVSHMEM_" + show + "; echo \"${#nccl4j_mpi_fwd[@]}\"");
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("", "0"), r.outLines().stream().map(String::strip).collect(Collectors.toList()));
    }

    /**
     * nccl4j_baseline, which perf-ab, perf-compare and perf-timeline call: nothing when $baseline is executable; else
     * scripts/bench/native/build.sh of ROOT (output shown after a "== building" line, or hidden with --quiet) and baseline set
     * to what it builds; status 2 and the tool's message when the build fails.
     */
    @Test
    void envShBuildsTheBaselineOnlyWhenMissing() throws Exception {
        Path r = base.resolve("r");
        Path build = r.resolve("scripts/bench/native/build.sh");
        Files.createDirectories(build.getParent());
        Path built = r.resolve("scripts/bench/native/build/nccl_perf_baseline");
        executable(build, "#!/usr/bin/env bash\necho compiling\nmkdir -p " + built.getParent() + "\nprintf '#!/bin/sh\\n' > "
                + built + "\nchmod +x " + built + "\n");
        String show = "; echo \"status $? baseline=$baseline\"";
        Path given = executable(base.resolve("given-baseline"), "#!/bin/sh\n");

        SandboxOutcome res = envSh("baseline=" + given + "; nccl4j_baseline perf-ab " + r + show);
        assertEquals(List.of("status 0 baseline=" + given), res.outLines(), res.toString());
        assertFalse(Files.exists(built));

        res = envSh("baseline=" + base.resolve("none") + "; nccl4j_baseline perf-ab " + r + show);
        assertEquals(List.of("== building the C baseline (scripts/bench/native/build.sh)", "compiling", "status 0 baseline=" + built),
                res.outLines(), res.toString());
        assertTrue(Files.isExecutable(built));

        Files.delete(built);
        res = envSh("baseline=; nccl4j_baseline perf-timeline " + r + " --quiet" + show);
        assertEquals(List.of("status 0 baseline=" + built), res.outLines(), res.toString());

        executable(build, "#!/usr/bin/env bash\necho 'nvcc: not found'\nexit 1\n");
        Files.delete(built);
        res = envSh("baseline=" + base.resolve("none") + "; nccl4j_baseline perf-compare " + r + " || echo \"status $? baseline=$baseline\"");
        assertEquals(0, res.status(), res.toString());
        assertEquals(List.of("== building the C baseline (scripts/bench/native/build.sh)", "nvcc: not found",
                "status 2 baseline=" + base.resolve("none")), res.outLines(), res.toString());
        assertEquals("perf-compare: the C baseline did not build", res.err().strip());
    }

    /** nccl4j_bundle_dir: the absolute path of a bundle, or the tool's message and status 2 for a missing or bad one. */
    @Test
    void envShResolvesABundleOrSaysWhatIsWrong() throws Exception {
        Path plain = Files.createDirectories(base.resolve("plain"));
        String show = " || echo \"status $?\"";   // the snippet runs under set -e
        SandboxOutcome r = envSh("cd " + base + " && d=$(nccl4j_bundle_dir perf-ab " + base.relativize(bundle) + "); echo \"$d\"");
        assertEquals(List.of(bundle.toString()), r.outLines(), r.toString());
        r = envSh("nccl4j_bundle_dir perf-ab " + base.resolve("nothing") + show);
        assertEquals(List.of("status 2"), r.outLines(), r.toString());
        assertEquals("perf-ab: no bundle at " + base.resolve("nothing") + " (scripts/gpu-bundle.sh)", r.err().strip());
        r = envSh("nccl4j_bundle_dir perf-compare " + plain + show);
        assertEquals(List.of("status 2"), r.outLines(), r.toString());
        assertEquals("perf-compare: " + plain + " has no jre/bin/java", r.err().strip());
    }

    /** nccl4j_counted: nothing for status 0; else the failure line, the log's last 5 lines, failures + 1, the name kept. */
    @Test
    void envShCountsAFailedRun() throws Exception {
        Path logs = Files.createDirectories(base.resolve("logs"));
        Files.writeString(logs.resolve("bad.log"), "1\n2\n3\n4\n5\n6\n7\n");
        SandboxOutcome r = envSh("failures=0; failed=(); nccl4j_counted " + logs + " good 0; nccl4j_counted " + logs + " bad 3; "
                + "echo \"$failures ${failed[*]}\"");
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("   failed with status 3 (see " + logs.resolve("bad.log") + ")", "3", "4", "5", "6", "7", "1 bad"),
                r.outLines());
    }

    /** nccl4j_gpu_count: CUDA_VISIBLE_DEVICES's non-empty entries when it is set, else nvidia-smi -L's GPU lines. */
    @Test
    void envShCountsTheGpus() throws Exception {
        String show = "nccl4j_gpu_count gpu-x || echo \"status $?\"";
        SandboxOutcome r = envSh(show);   // FAKE_GPUS=2
        assertEquals(List.of("2"), r.outLines(), r.toString());
        assertEquals(List.of("-L"), r.first("nvidia-smi").args());
        assertEquals(List.of("7"), envSh(show, "FAKE_GPUS", "7").outLines());
        r = envSh(show, "CUDA_VISIBLE_DEVICES", "0, 1,,7,");
        assertEquals(List.of("3"), r.outLines());
        assertEquals(List.of(), r.tools(), "no nvidia-smi");
        r = envSh(show, "FAKE_GPUS", "0");
        assertEquals(List.of("status 2"), r.outLines());
        assertEquals("gpu-x: no GPU found (nvidia-smi -L lists none)", r.err().strip());
        r = envSh(show, "CUDA_VISIBLE_DEVICES", " , ");
        assertEquals(List.of("status 2"), r.outLines());
        assertEquals("gpu-x: no GPU found (CUDA_VISIBLE_DEVICES=' , ' names none)", r.err().strip());
        r = envSh(show, "CUDA_VISIBLE_DEVICES", "");
        assertEquals("gpu-x: no GPU found (CUDA_VISIBLE_DEVICES='' names none)", r.err().strip());
        Path empty = Files.createDirectories(base.resolve("empty-bin"));
        r = envSh("PATH=" + empty + "; " + show);
        assertEquals(List.of("status 2"), r.outLines());
        assertEquals("gpu-x: no GPU found (nvidia-smi -L: no nvidia-smi on the PATH)", r.err().strip());
        Path broken = executable(base.resolve("broken-bin/nvidia-smi"), "#!/bin/sh\necho \"NVIDIA-SMI has failed because it"
                + " couldn't communicate with the NVIDIA driver.\"\necho second line\nexit 9\n");
        r = envSh("PATH=" + broken.getParent() + ":$PATH; " + show);
        assertEquals(List.of("status 2"), r.outLines());
        assertEquals("gpu-x: no GPU found (nvidia-smi -L exited with status 9: NVIDIA-SMI has failed because it couldn't "
                + "communicate with the NVIDIA driver.)", r.err().strip());
    }

    /** nccl4j_ranks: NP, or max(2, GPUS); refused: not a whole number >= 1, more than 64 per GPU. */
    @Test
    void envShChecksTheRanks() throws Exception {
        Map<String, String> ok = new LinkedHashMap<>();   // "NP GPUS" -> ranks
        ok.put("- 1", "2");
        ok.put("- 2", "2");
        ok.put("- 4", "4");
        ok.put("- 8", "8");
        ok.put("1 1", "1");
        ok.put("3 1", "3");
        ok.put("010 1", "10");
        ok.put("64 1", "64");
        ok.put("128 2", "128");
        for (Map.Entry<String, String> c : ok.entrySet()) {
            String[] k = c.getKey().split(" ");
            SandboxOutcome r = k[0].equals("-") ? envSh("nccl4j_ranks t " + k[1]) : envSh("nccl4j_ranks t " + k[1], "NP", k[0]);
            assertEquals(0, r.status(), c.getKey() + "\n" + r);
            assertEquals(List.of(c.getValue()), r.outLines(), c.getKey());
        }
        assertEquals(List.of("3"), envSh("nccl4j_ranks t 3", "NP", "").outLines(), "empty: the default");
        Map<String, String> bad = new LinkedHashMap<>();   // "NP GPUS" -> message
        for (String np : List.of("0", "000", "abc", "-1", "1.5", " 2", "2x")) {
            bad.put(np + "|1", "t: NP=" + np + " is not a whole number >= 1: set NP to the number of ranks, or unset it for "
                    + "max(2, GPU count) = 2");
        }
        bad.put("x|4", "t: NP=x is not a whole number >= 1: set NP to the number of ranks, or unset it for "
                + "max(2, GPU count) = 4");
        bad.put("65|1", "t: NP=65 is more than 64 ranks per GPU on 1 GPU(s): set NP to 64 or fewer");
        bad.put("0257|4", "t: NP=0257 is more than 64 ranks per GPU on 4 GPU(s): set NP to 256 or fewer");
        bad.put("99999999999999999999|1", "t: NP=99999999999999999999 is more than 64 ranks per GPU on 1 GPU(s): set NP to 64 "
                + "or fewer");
        for (Map.Entry<String, String> c : bad.entrySet()) {
            String[] k = c.getKey().split("\\|");
            SandboxOutcome r = envSh("nccl4j_ranks t " + k[1] + " || echo \"status $?\"", "NP", k[0]);
            assertEquals(List.of("status 2"), r.outLines(), c.getKey() + "\n" + r);
            assertEquals(c.getValue(), r.err().strip(), c.getKey());
        }
    }

    /** nccl4j_share_gpus: whether the ranks share the GPUs, the line saying so and the warning; nccl4j_share_env's lines. */
    @Test
    void envShSharesTheGpusWhenThereAreMoreRanksOrWhenAsked() throws Exception {
        String show = " && echo yes || echo \"no $?\"";
        Map<String, List<String>> cases = new LinkedHashMap<>();   // "GPUS NP FORCED" -> output
        cases.put("2 2 0", List.of("no 1"));
        cases.put("4 3 0", List.of("no 1"));
        cases.put("1 1 1", List.of("no 1"));   // one rank shares nothing
        cases.put("1 2 0", List.of("== 2 ranks on 1 GPU(s): sharing (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo)", "yes"));
        cases.put("2 5 0", List.of("== 5 ranks on 2 GPU(s): sharing (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo)", "yes"));
        cases.put("2 2 1", List.of("== 2 ranks on 2 GPU(s): sharing (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo)", "yes"));
        for (Map.Entry<String, List<String>> c : cases.entrySet()) {
            SandboxOutcome r = envSh("nccl4j_share_gpus tool " + c.getKey() + show);
            assertEquals(c.getValue(), r.outLines(), c.getKey());
            assertEquals("", r.err(), c.getKey());
        }
        SandboxOutcome r = envSh("nccl4j_share_gpus tool 1 2 0" + show, "NCCL_HOSTID", "mine", "NCCL_SOCKET_IFNAME", "ib0");
        assertEquals(List.of("== 2 ranks on 1 GPU(s): sharing (NCCL_HOSTID=mine kept, NCCL_SOCKET_IFNAME=ib0)", "yes"),
                r.outLines());
        assertEquals("tool: warning: NCCL_HOSTID=mine is set by you and kept: ranks sharing a GPU may collide (NCCL: "
                + "duplicate GPU)", r.err().strip());
        r = envSh("nccl4j_share_gpus tool 2 2 0" + show, "NCCL_HOSTID", "mine");
        assertEquals("", r.err(), "no sharing, no warning");

        String hostid = "export NCCL_HOSTID=nccl4j-host${OMPI_COMM_WORLD_RANK:?not under Open MPI}";
        assertEquals(List.of(hostid, "export NCCL_SOCKET_IFNAME=lo"), envSh("nccl4j_share_env").outLines());
        assertEquals(List.of(hostid), envSh("nccl4j_share_env", "NCCL_SOCKET_IFNAME", "eth0").outLines());
        assertEquals(List.of(hostid, "export NCCL_SOCKET_IFNAME=lo"), envSh("nccl4j_share_env", "NCCL_HOSTID", "").outLines(),
                "empty: not set");
        assertEquals(List.of("export NCCL_SOCKET_IFNAME=lo"), envSh("nccl4j_share_env", "NCCL_HOSTID", "h").outLines());
        assertEquals(List.of(), envSh("nccl4j_share_env", "NCCL_HOSTID", "h", "NCCL_SOCKET_IFNAME", "eth0").outLines());
        // the lines in a rank's script: its rank's NCCL_HOSTID; outside Open MPI, a failure that says so
        r = envSh("eval \"$(nccl4j_share_env)\"; echo \"$NCCL_HOSTID $NCCL_SOCKET_IFNAME\"", "OMPI_COMM_WORLD_RANK", "3");
        assertEquals(List.of("nccl4j-host3 lo"), r.outLines(), r.toString());
        r = envSh("eval \"$(nccl4j_share_env)\"");
        assertTrue(r.status() != 0, r.toString());
        assertTrue(r.err().contains("OMPI_COMM_WORLD_RANK: not under Open MPI"), r.err());
    }

    /** nccl4j_gpu_args: [--share-gpu] [bundle-dir], SHARE_GPU; refusals. */
    @Test
    void envShReadsTheGpuScriptsArguments() throws Exception {
        String show = " && echo \"$nccl4j_share_forced [$nccl4j_bundle_arg]\" || echo \"status $?\"";
        Map<String, List<String>> cases = new LinkedHashMap<>();
        cases.put("", List.of("0 []"));
        cases.put("b", List.of("0 [b]"));
        cases.put("--share-gpu", List.of("1 []"));
        cases.put("--share-gpu /x/b", List.of("1 [/x/b]"));
        cases.put("-- -odd-dir", List.of("0 [-odd-dir]"));
        for (Map.Entry<String, List<String>> c : cases.entrySet()) {
            SandboxOutcome r = envSh("nccl4j_gpu_args t " + c.getKey() + show);
            assertEquals(c.getValue(), r.outLines(), c.getKey());
            assertEquals("", r.err());
        }
        assertEquals(List.of("1 [b]"), envSh("nccl4j_gpu_args t b" + show, "SHARE_GPU", "1").outLines());
        assertEquals(List.of("0 []"), envSh("nccl4j_gpu_args t" + show, "SHARE_GPU", "0").outLines());
        Map<String, String> bad = new LinkedHashMap<>();
        bad.put("--share", "t: unknown option --share (usage: t [--share-gpu] [bundle-dir])");
        bad.put("-h", "t: unknown option -h (usage: t [--share-gpu] [bundle-dir])");
        bad.put("a b", "t: one bundle directory at most, not 2 (a b) (usage: t [--share-gpu] [bundle-dir])");
        for (Map.Entry<String, String> c : bad.entrySet()) {
            SandboxOutcome r = envSh("nccl4j_gpu_args t " + c.getKey() + show);
            assertEquals(List.of("status 2"), r.outLines(), c.getKey());
            assertEquals(c.getValue(), r.err().strip());
        }
        SandboxOutcome r = envSh("nccl4j_gpu_args t" + show, "SHARE_GPU", "true");
        assertEquals(List.of("status 2"), r.outLines());
        assertEquals("t: SHARE_GPU=true: 1 makes the ranks share the GPUs, 0 or unset leaves it to NP > GPU count",
                r.err().strip());
    }

    @Test
    void envShFindsJavaAndTheClassPaths() throws Exception {
        Path jar = box.makeBuild();
        SandboxOutcome r = envSh("nccl4j_classpath " + bundle + "; nccl4j_classpath --wildcard " + bundle + "; nccl4j_examples_jar "
                + root + "; nccl4j_tools_jar " + root + "; nccl4j_build_classpath " + root + "; nccl4j_find_java x;"
                + " nccl4j_java_home", "JAVA_HOME", jdk.toString());
        assertEquals(0, r.status(), r.toString());
        String buildCp = buildClasspath(root);
        assertEquals(List.of(classpath(bundle), bundle + "/lib/*",
                root.resolve("nccl4j-examples/target/nccl4j-examples-" + VERSION + ".jar").toString(), jar.toString(),
                buildCp, jdk + "/bin/java", jdk + "/bin/java"), r.outLines());
        delete(root.resolve("nccl4j-examples/target/lib"));
        r = envSh("nccl4j_build_classpath " + root + " || echo \"status $?\"; nccl4j_java_home || echo \"status $?\";"
                + " nccl4j_find_java x", "JAVA_HOME", base.resolve("nojdk").toString());
        assertEquals(List.of(buildCp, "status 1", "status 1", bin.resolve("java").toString()), r.outLines(), r.toString());
        delete(root.resolve("nccl4j-examples"));
        delete(root.resolve("nccl4j-tools"));
        r = envSh("echo \"[$(nccl4j_examples_jar " + root + ")]\"; nccl4j_build_classpath " + root + " || true");
        assertEquals(List.of("[]", "::" + root.resolve("nccl4j-tools/target/lib") + "/*:"
                + root.resolve("nccl4j-examples/target/lib") + "/*"), r.outLines(), r.toString());
    }

    @Test
    void aScriptWithoutEnvShSaysSo() throws Exception {
        Path lone = Files.createDirectories(base.resolve("lone"));
        for (String s : List.of("nccl4j-run", "gpu-test.sh")) {
            Files.copy(SCRIPTS.resolve(s), lone.resolve(s), StandardCopyOption.COPY_ATTRIBUTES);
            SandboxOutcome r = box.run(lone.resolve(s), job());
            assertEquals(2, r.status(), r.toString());
            assertEquals(s + ": " + lone + "/env.sh is missing", r.err().strip());
            assertEquals(List.of(), r.tools());
        }
    }

    /** LD_LIBRARY_PATH of each script's java (and C baseline) runs, with CUDA directories that exist. */
    @Test
    void eachScriptPutsTheCudaDirectoriesWhereItDid() throws Exception {
        String t = cudaTargets().toString();
        String l = cudaLib64().toString();
        box.makeBuild();
        Map<String, String> cuda = job("NCCL4J_CUDA_LIB_DIRS", t + ":" + l, "LOG_DIR", logs.toString(), "NP", "2",
                "FAKE_JAVA_OUT", SUMMARY);

        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), cuda);   // the targets directory only
        assertEquals(0, r.status(), r.toString());
        for (Call c : r.of("java")) {
            assertEquals(t + ":/opt/ld", c.env("LD_LIBRARY_PATH"));
        }

        Map<String, String> e = new LinkedHashMap<>(cuda);
        e.put("EXAMPLES", "AllReduce");
        r = box.run(root.resolve("scripts/examples-gpu.sh"), e);   // lib64 first, then nccl4j-run puts targets first
        assertEquals(0, r.status(), r.toString());
        assertEquals(t + ":" + l + ":" + l + ":" + t + ":/opt/ld", r.of("java").get(0).env("LD_LIBRARY_PATH"));
        assertEquals(l + ":" + t + ":/opt/ld", r.of("java").get(1).env("LD_LIBRARY_PATH"));
        assertEquals(l + ":" + t + ":/opt/ld", r.first("mpirun").env("LD_LIBRARY_PATH"));

        r = box.run(bundle.resolve("nccl4j-run"), cuda, "-np", "2", "X");   // targets first
        assertEquals(t + ":" + l + ":/opt/ld", r.first("java").env("LD_LIBRARY_PATH"));
        r = box.run(root.resolve("scripts/nccl4j-allreduce"), cuda);   // targets first
        assertEquals(t + ":" + l + ":/opt/ld", r.first("java").env("LD_LIBRARY_PATH"));
        r = box.run(bundle.resolve("nccl4j-perf"), cuda);   // lib64 first
        assertEquals(l + ":" + t + ":/opt/ld", r.first("java").env("LD_LIBRARY_PATH"));

        e = new LinkedHashMap<>(cuda);
        e.put("OUT_DIR", base.resolve("scale").toString());
        e.put("PHASES", "4");
        r = box.run(root.resolve("scripts/bench/scale-run.sh"), e);   // both, targets first; then nccl4j-perf's, lib64 first
        assertEquals(0, r.status(), r.toString());
        assertEquals(t + ":" + l + ":/opt/ld", r.first("mpirun").env("LD_LIBRARY_PATH"));
        assertEquals(l + ":" + t + ":" + t + ":" + l + ":/opt/ld", r.first("java").env("LD_LIBRARY_PATH"));
        e.put("NCCL4J_CUDA_LIB_DIRS", base.resolve("no-t") + ":" + base.resolve("no-l"));
        r = box.run(root.resolve("scripts/bench/scale-run.sh"), e);   // whether or not they exist
        assertEquals(base.resolve("no-t") + ":" + base.resolve("no-l") + ":/opt/ld", r.first("java").env("LD_LIBRARY_PATH"));

        e = new LinkedHashMap<>(cuda);
        e.put("RESULTS_DIR", base.resolve("ddp").toString());
        e.put("LD_LIBRARY_PATH", "/opt/ld:" + t);
        r = box.run(root.resolve("scripts/bench/ddp-compare.sh"), e);   // the Java runs only, lib64 first, no duplicate
        assertEquals(l + ":/opt/ld:" + t, r.first("mpirun").env("LD_LIBRARY_PATH"));
        for (Call c : r.of("java")) {
            assertEquals(l + ":/opt/ld:" + t, c.env("LD_LIBRARY_PATH"));
        }
        for (Call c : r.of("python3")) {
            assertEquals("/opt/ld:" + t, c.env("LD_LIBRARY_PATH"));
        }

        r = box.run(root.resolve("scripts/bench/perf-compare.sh"), cuda, "--bundle", bundle.toString(), "--baseline",
                root.resolve("scripts/bench/native/build/nccl_perf_baseline").toString(), "--out", base.resolve("pc").toString(),
                "--repeats", "1", "--docs", base.resolve("docs").toString());   // the targets directory only
        assertEquals(0, r.status(), r.toString());
        assertEquals(t + ":/opt/ld", r.first("nccl_perf_baseline").env("LD_LIBRARY_PATH"));
        assertEquals(l + ":" + t + ":" + t + ":/opt/ld", r.first("java").env("LD_LIBRARY_PATH"));   // + nccl4j-perf's
    }

    @Test
    void nccl4jAsRootOverridesTheUidForMpirun() throws Exception {
        SandboxOutcome r = box.run(root.resolve("scripts/examples-gpu.sh"), job("LOG_DIR", logs.toString(), "EXAMPLES", "AllReduce",
                "FAKE_UID", "1000", "NCCL4J_AS_ROOT", "1"));
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("--allow-run-as-root", "--bind-to"), r.first("mpirun").args().subList(0, 2));
        r = box.run(root.resolve("scripts/examples-gpu.sh"), job("LOG_DIR", logs.toString(), "EXAMPLES", "AllReduce",
                "NCCL4J_AS_ROOT", "0"));
        assertEquals(0, r.status(), r.toString());
        assertEquals("--bind-to", r.first("mpirun").args().get(0));
    }

    // ---------------------------------------------------------------- gpu-test.sh

    /** The JUnit console launcher's forwarded variables (job()'s, NCCL_COMM_ID added), for mpirun's -x. */
    private static final List<String> GPU_TEST_FWD = x("CUDA_VISIBLE_DEVICES", "JAVA_OPTS", "LD_LIBRARY_PATH", "NCCL4J_TEST_VAR",
            "NCCL_COMM_ID", "NCCL_DEBUG", "NVSHMEM_DISABLE", "TORCH_NCCL_TRACE");
    /** As {@link #GPU_TEST_FWD} without CUDA_VISIBLE_DEVICES ({@link #onGpus}). */
    private static final List<String> GPU_TEST_FWD_NO_CVD = GPU_TEST_FWD.subList(2, GPU_TEST_FWD.size());

    /**
     * The JUnit console launcher 1.14.1's summary, as it prints it (a run of it on a small test class: "[%10d %-21s ]"
     * per line). found: ok + failed + skipped + aborted + unstarted (the tests of a class aborted or failed as a whole,
     * which are found but neither started nor skipped); started: ok + failed + aborted.
     */
    private static String summary(int ok, int failed, int skipped, int aborted, int unstarted, int containersFailed) {
        List<String> lines = new ArrayList<>();
        int[] c = {5, 0, 5 - containersFailed, 0, 5 - containersFailed, containersFailed};
        String[] cl = {"containers found", "containers skipped", "containers started", "containers aborted",
            "containers successful", "containers failed"};
        for (int i = 0; i < c.length; i++) {
            lines.add(String.format("[%10d %-21s ]", c[i], cl[i]));
        }
        int[] t = {ok + failed + skipped + aborted + unstarted, skipped, ok + failed + aborted, aborted, ok, failed};
        String[] tl = {"tests found", "tests skipped", "tests started", "tests aborted", "tests successful", "tests failed"};
        for (int i = 0; i < t.length; i++) {
            lines.add(String.format("[%10d %-21s ]", t[i], tl[i]));
        }
        return String.join("\\n", lines);
    }

    /**
     * The console launcher's output with --details=tree --details-theme=ascii (its format from a run of 1.14.1), for
     * fake java's printf %b: the single-process run on one GPU. RawGpuTest: one test passes, two abort (an assumption in
     * the test); CoreGpuTest aborts as a whole in its @BeforeAll (its 4 tests never start); OldTest is @Disabled (1
     * test, skipped).
     */
    private static final String SINGLE_ON_ONE_GPU = String.join("\\n", ".", "+-- JUnit Platform Suite [OK]",
            "+-- JUnit Jupiter [OK]", "| +-- RawGpuTest [OK]", "| | +-- allReduceOnOneGpu() [OK]",
            "| | +-- allReduceOnTwoGpus() [A] Assumption failed: needs 2 GPUs, found 1",
            "| | '-- groupOnTwoGpus() [A] Assumption failed: needs 2 GPUs, found 1",
            "| +-- CoreGpuTest [A] Assumption failed: needs 2 GPUs, found 1",
            "| '-- OldTest [S] class org.nccl4j.OldTest is @Disabled", "'-- JUnit Vintage [OK]", "",
            "Test run finished after 138 ms", summary(1, 0, 1, 2, 4, 0), "");
    /**
     * A rank's run: two tests pass, one aborts with a reason over two lines (the first is the cause), and a dynamic
     * test (a display name with spaces, no parentheses) aborts.
     */
    private static final String RANK = String.join("\\n", ".", "+-- JUnit Platform Suite [OK]", "+-- JUnit Jupiter [OK]",
            "| '-- CoreMultiProcessGpuTest [OK]", "|   +-- allReduce() [OK]", "|   +-- broadcast() [OK]",
            "|   +-- p2p() [A] Assumption failed: no peer access", "|   |     between the ranks' devices",
            "|   '-- everyCollective() [OK]",
            "|     '-- 2 processes ALL_REDUCE FLOAT64 AVG out-of-place [A] Assumption failed: NCCL <= 2.28.3 on one rank",
            "'-- JUnit Vintage [OK]", "", "Test run finished after 99 ms", summary(2, 0, 0, 2, 0, 0), "");

    /** job(more) on a machine with n GPUs (nvidia-smi's), CUDA_VISIBLE_DEVICES unset. */
    private static Map<String, String> onGpus(int n, String... more) {
        Map<String, String> e = job(more);
        e.remove("CUDA_VISIBLE_DEVICES");
        e.put("FAKE_GPUS", Integer.toString(n));
        return e;
    }

    /** The "-np N" of mpirun's arguments, or -1 when there is no mpirun call. */
    private static int np(SandboxOutcome r) {
        List<Call> m = r.of("mpirun");
        return m.isEmpty() ? -1 : Integer.parseInt(m.get(0).args().get(m.get(0).args().indexOf("-np") + 1));
    }

    /** The lines of r's output from the summary line on. */
    private static List<String> fromSummary(SandboxOutcome r) {
        List<String> lines = r.outLines();
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).matches("\\d+ passed, \\d+ failed, \\d+ skipped")) {
                return lines.subList(i, lines.size());
            }
        }
        throw new AssertionError("no summary line\n" + r);
    }

    @Test
    void gpuTestSaysWhenTheMpirunRunOutlivedItsBoundAndListsTheRanksLeft() throws Exception {
        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY,
                "FAKE_TIMEOUT_EXPIRES", "mpirun", "MPI_TIMEOUT", "45"));
        assertEquals(1, r.status(), r.toString());
        assertTrue(r.outLines().contains("gpu-test.sh: the mpirun run outlived MPI_TIMEOUT=45 s; rank processes left "
                + "then: 0 (listed in " + logs.resolve("left.txt") + ")"), r.toString());
        assertTrue(r.outLines().contains("gpu-test.sh: the mpirun run timed out (exit status 124)"), r.toString());
        assertEquals("", Files.readString(logs.resolve("left.txt")), "no rank of the fake mpirun is left");
        assertEquals(args("-k", "20", "45", "mpirun"), r.of("timeout").get(1).args().subList(0, 4));
    }

    @Test
    void gpuTestRunsTheSingleProcessTestsInOneJvmThenTheMultiProcessOnesUnderMpirun() throws Exception {
        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY));
        assertEquals(0, r.status(), r.toString());
        // CUDA_VISIBLE_DEVICES (0,1) gives the GPU count: no nvidia-smi
        assertEquals(List.of("timeout", "java", "timeout", "mpirun", "java", "java"), r.tools(), r.toString());

        Path java = bundle.resolve("jre/bin/java");
        List<String> junit = args(JAVA_OPTS, "-jar", bundle.resolve("lib/" + CONSOLE), "execute", "--class-path",
                classpath(bundle), "--scan-classpath", bundle.resolve("lib/nccl4j-core-" + VERSION + "-tests.jar"),
                "--scan-classpath", bundle.resolve("lib/nccl4j-examples-" + VERSION + "-tests.jar"), "--scan-classpath",
                bundle.resolve("lib/nccl4j-native-" + VERSION + "-tests.jar"), "--scan-classpath",
                bundle.resolve("lib/nccl4j-tools-" + VERSION + "-tests.jar"), "--disable-banner", "--disable-ansi-colors",
                "--details=tree", "--details-theme=ascii");
        Call timeout1 = r.of("timeout").get(0);
        assertEquals(List.of("900", "bash", "-c"), timeout1.args().subList(0, 3));
        Call single = r.of("java").get(0);
        assertEquals(java.toString(), single.exe());
        assertEquals(args(junit, "--include-tag", "gpu", "--exclude-tag", "multiprocess"), single.args());
        String commId = single.env("NCCL_COMM_ID");
        assertTrue(commId.matches("127\\.0\\.0\\.1:29[5-9]\\d\\d"), commId);
        assertLd("/opt/ld", single);

        Path rankScript = logs.resolve("rank.sh");
        List<String> mpirun = args("--allow-run-as-root", "--bind-to", "none", "--tag-output", "--output-filename",
                logs.resolve("ranks"), "-np", "2", GPU_TEST_FWD, rankScript);
        assertEquals(args("-k", "20", "600", "mpirun", mpirun), r.of("timeout").get(1).args(),
                "an mpirun that does not end on the bound's SIGTERM is killed 20 s later");
        assertEquals(mpirun, r.first("mpirun").args());
        for (int rank = 0; rank < 2; rank++) {
            Call c = r.of("java").get(1 + rank);
            assertEquals(java.toString(), c.exe());
            assertEquals(args(junit, "--include-tag", "multiprocess"), c.args());
            assertEquals(Integer.toString(rank), c.env("OMPI_COMM_WORLD_RANK"));
            assertEquals(commId, c.env("NCCL_COMM_ID"));
            assertEquals("-Dx=1 -Dy=2", c.env("JAVA_OPTS"));
            assertEquals(null, c.env("NCCL_HOSTID"), "a GPU each: no sharing");
            assertEquals(null, c.env("NCCL_SOCKET_IFNAME"));
            assertLd("/opt/ld", c);
        }
        assertFalse(Files.readString(rankScript).contains("NCCL_HOSTID"), Files.readString(rankScript));
        assertFalse(r.out().contains("sharing"), r.out());
        assertTrue(r.out().contains("== multi-process GPU tests: mpirun -np 2, NCCL_COMM_ID=" + commId), r.out());
        assertEquals(List.of("== logs: " + logs + " (single.log; multi.log, and ranks/1/rank.N/ for each rank's own)",
                "9 passed, 0 failed, 0 skipped"), r.outLines().subList(r.outLines().size() - 2, r.outLines().size()));
        assertTrue(Files.exists(logs.resolve("single.log")) && Files.exists(logs.resolve("multi.log")));
        assertEquals("", r.err());
    }

    /** Per-rank logs: mpirun's --output-filename LOG_DIR/ranks, which Open MPI 4.1 fills with 1/rank.N/{stdout,stderr}. */
    @Test
    void gpuTestKeepsEachRanksLogAndTagsTheCombinedOne() throws Exception {
        Files.createDirectories(logs.resolve("ranks/1/rank.7"));   // an earlier run's: removed
        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), onGpus(2, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY,
                "FAKE_JAVA_OUT_RANK", RANK));
        assertEquals(0, r.status(), r.toString());
        List<String> m = r.first("mpirun").args();
        assertEquals(logs.resolve("ranks").toString(), m.get(m.indexOf("--output-filename") + 1));
        assertFalse(Files.exists(logs.resolve("ranks/1/rank.7")));
        for (int rank = 0; rank < 2; rank++) {
            String own = Files.readString(logs.resolve("ranks/1/rank." + rank + "/stdout"));
            assertTrue(own.startsWith(".\n+-- JUnit Platform Suite [OK]\n"), own);
            assertTrue(own.contains("[         2 tests successful      ]\n"), own);
            assertTrue(Files.readString(logs.resolve("multi.log")).contains("[1," + rank + "]<stdout>:[         2 tests "
                    + "successful      ]\n"));
        }
        assertEquals(List.of("7 passed, 0 failed, 4 skipped",
                "skipped: no peer access (2 tests)",
                "skipped: NCCL <= 2.28.3 on one rank (2 tests)",
                "gpu-test.sh: of the 4 skipped, 4 aborted (an assumption failed)"),
                fromSummary(r));
    }

    @Test
    void gpuTestLeavesOutAllowRunAsRootForOtherUsersAndKeepsAGivenCommId() throws Exception {
        SandboxOutcome r = box.run(root.resolve("scripts/gpu-test.sh"), job("LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY,
                "FAKE_UID", "1000", "NCCL_COMM_ID", "10.0.0.1:1234", "NP", "2"), bundle.toString());
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("timeout", "java", "timeout", "mpirun", "java", "java"), r.tools(), r.toString());
        assertEquals(args("--bind-to", "none", "--tag-output", "--output-filename", logs.resolve("ranks"), "-np", "2",
                GPU_TEST_FWD, logs.resolve("rank.sh")), r.first("mpirun").args());
        for (Call c : r.of("java")) {
            assertEquals("10.0.0.1:1234", c.env("NCCL_COMM_ID"));
        }
    }

    /**
     * Issue 14: on one GPU, the run used to be NP=1, no mpirun, every single-process test skipped, "0 passed, 0 failed".
     * Now 2 ranks share the GPU, each with its own NCCL_HOSTID and NCCL_SOCKET_IFNAME=lo (NCCL4J_DEVICE left to the
     * tests: local rank mod device count), and mpirun may put more ranks than cores.
     */
    @Test
    void gpuTestOnOneGpuSharesItBetweenTwoRanksAndTestsNarrowsTheClasses() throws Exception {
        SandboxOutcome r = box.run(root.resolve("scripts/gpu-test.sh"), onGpus(1, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT",
                SUMMARY, "TESTS", ".*StreamTest"));
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("nvidia-smi", "timeout", "java", "timeout", "mpirun", "java", "java"), r.tools(), r.toString());
        assertEquals(List.of("-L"), r.first("nvidia-smi").args());
        Call c = r.first("java");
        assertEquals(bundle.resolve("jre/bin/java").toString(), c.exe());
        int i = c.args().indexOf("--include-classname");
        assertEquals(".*StreamTest", c.args().get(i + 1));
        assertEquals("--disable-banner", c.args().get(i + 2));
        assertEquals(args("--allow-run-as-root", "--bind-to", "none", "--tag-output", "--output-filename",
                logs.resolve("ranks"), "--oversubscribe", "-np", "2", GPU_TEST_FWD_NO_CVD, logs.resolve("rank.sh")),
                r.first("mpirun").args());
        assertEquals("== 2 ranks on 1 GPU(s): sharing (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo)", r.outLines().get(0));
        List<String> script = Files.readAllLines(logs.resolve("rank.sh"));
        assertEquals(List.of("#!/usr/bin/env bash", "export NCCL_HOSTID=nccl4j-host${OMPI_COMM_WORLD_RANK:?not under Open MPI}",
                "export NCCL_SOCKET_IFNAME=lo"), script.subList(0, 3));
        assertTrue(script.get(3).startsWith("exec "), script.toString());
        assertTrue(script.get(3).contains(" --include-classname .\\*StreamTest "), script.toString());
        assertEquals(null, c.env("NCCL_HOSTID"), "the single-process run is not shared");
        for (int rank = 0; rank < 2; rank++) {
            Call k = r.of("java").get(1 + rank);
            assertEquals("nccl4j-host" + rank, k.env("NCCL_HOSTID"));
            assertEquals("lo", k.env("NCCL_SOCKET_IFNAME"));
            assertEquals(null, k.env("NCCL4J_DEVICE"));
            assertEquals("kept", k.env("NOT_FORWARDED"), "the environment is not cleared");
        }
        assertEquals(List.of("9 passed, 0 failed, 0 skipped"), fromSummary(r));
        assertEquals("", r.err());
    }

    @Test
    void gpuTestWithNp1RunsNoMpirun() throws Exception {
        SandboxOutcome r = box.run(root.resolve("scripts/gpu-test.sh"), onGpus(1, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT",
                SUMMARY, "NP", "1", "SHARE_GPU", "1"));
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("nvidia-smi", "timeout", "java"), r.tools(), r.toString());
        assertEquals(List.of("== single-process GPU tests"), r.outLines().subList(0, 1), "no sharing line for one rank");
        assertEquals(List.of("== multi-process GPU tests skipped: NP=1 (they need 2 ranks or more)",
                "== logs: " + logs + " (single.log)", "3 passed, 0 failed, 0 skipped"),
                r.outLines().subList(r.outLines().size() - 3, r.outLines().size()));
    }

    /** NP defaults to max(2, GPU count); the ranks share the GPUs exactly when there are more ranks than GPUs. */
    @Test
    void gpuTestRanksDefaultToTwoOrTheGpuCount() throws Exception {
        int[][] cases = {{1, 2}, {2, 2}, {4, 4}};
        for (int[] k : cases) {
            SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), onGpus(k[0], "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY));
            assertEquals(0, r.status(), r.toString());
            assertEquals(k[1], np(r), r.toString());
            assertEquals(k[1], r.of("java").size() - 1, r.toString());
            boolean share = k[0] < k[1];
            assertEquals(share, r.first("mpirun").args().contains("--oversubscribe"), r.toString());
            assertEquals(share, r.outLines().get(0).startsWith("== " + k[1] + " ranks on " + k[0] + " GPU(s): sharing"),
                    r.toString());
        }
        // NP above the GPU count: shared
        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), onGpus(2, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY,
                "NP", "5"));
        assertEquals(0, r.status(), r.toString());
        assertEquals(5, np(r));
        assertEquals("== 5 ranks on 2 GPU(s): sharing (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo)", r.outLines().get(0));
        assertEquals("nccl4j-host4", r.of("java").get(5).env("NCCL_HOSTID"));
        assertTrue(Files.isDirectory(logs.resolve("ranks/1/rank.4")), "one digit for 5 ranks");
        // no GPU: nothing starts
        r = box.run(bundle.resolve("gpu-test.sh"), onGpus(0, "LOG_DIR", logs.toString()));
        assertEquals(2, r.status(), r.toString());
        assertEquals("gpu-test.sh: no GPU found (nvidia-smi -L lists none)", r.err().strip());
        assertEquals(List.of("nvidia-smi"), r.tools());
        assertEquals("", r.out());
    }

    /** CUDA_VISIBLE_DEVICES, when set, is the GPU count: its non-empty entries. */
    @Test
    void gpuTestCountsTheGpusOfCudaVisibleDevices() throws Exception {
        Map<String, Integer> cases = new LinkedHashMap<>();
        cases.put("0", 2);
        cases.put("3,1,2", 3);
        cases.put("GPU-a,GPU-b,,GPU-c,", 3);
        for (Map.Entry<String, Integer> k : cases.entrySet()) {
            SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY,
                    "CUDA_VISIBLE_DEVICES", k.getKey(), "FAKE_GPUS", "8"));
            assertEquals(0, r.status(), r.toString());
            assertFalse(r.tools().contains("nvidia-smi"), r.toString());
            assertEquals((int) k.getValue(), np(r), k.getKey());
        }
        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString(), "CUDA_VISIBLE_DEVICES", "0"));
        assertEquals("== 2 ranks on 1 GPU(s): sharing (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo)", r.outLines().get(0));
        r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString(), "CUDA_VISIBLE_DEVICES", ""));
        assertEquals(2, r.status(), r.toString());
        assertEquals("gpu-test.sh: no GPU found (CUDA_VISIBLE_DEVICES='' names none)", r.err().strip());
        assertEquals(List.of(), r.tools());
    }

    /** --share-gpu or SHARE_GPU=1 shares with NP <= GPU count; NCCL_HOSTID and NCCL_SOCKET_IFNAME of the user's are kept. */
    @Test
    void gpuTestSharesWhenAskedAndKeepsTheUsersNcclVariables() throws Exception {
        for (Map<String, String> how : List.of(env(), env("SHARE_GPU", "1"))) {
            Map<String, String> e = job("LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY);
            e.putAll(how);
            SandboxOutcome r = how.isEmpty() ? box.run(bundle.resolve("gpu-test.sh"), e, "--share-gpu", bundle.toString())
                    : box.run(bundle.resolve("gpu-test.sh"), e);
            assertEquals(0, r.status(), r.toString());
            assertEquals("== 2 ranks on 2 GPU(s): sharing (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo)", r.outLines().get(0));
            assertTrue(r.first("mpirun").args().contains("--oversubscribe"), r.toString());
            assertEquals(List.of("nccl4j-host0", "nccl4j-host1"), r.of("java").subList(1, 3).stream()
                    .map(c -> c.env("NCCL_HOSTID")).collect(Collectors.toList()));
        }
        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), onGpus(1, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY,
                "NCCL_HOSTID", "myhost", "NCCL_SOCKET_IFNAME", "eth9"));
        assertEquals(0, r.status(), r.toString());
        assertEquals("gpu-test.sh: warning: NCCL_HOSTID=myhost is set by you and kept: ranks sharing a GPU may collide "
                + "(NCCL: duplicate GPU)", r.err().strip());
        assertEquals("== 2 ranks on 1 GPU(s): sharing (NCCL_HOSTID=myhost kept, NCCL_SOCKET_IFNAME=eth9)", r.outLines().get(0));
        assertEquals(List.of("#!/usr/bin/env bash"), Files.readAllLines(logs.resolve("rank.sh")).subList(0, 1));
        assertTrue(Files.readAllLines(logs.resolve("rank.sh")).get(1).startsWith("exec "));
        for (Call c : r.of("java").subList(1, 3)) {
            assertEquals("myhost", c.env("NCCL_HOSTID"));
            assertEquals("eth9", c.env("NCCL_SOCKET_IFNAME"));
        }
        List<String> m = r.first("mpirun").args();
        assertTrue(String.join(" ", m).contains("-x NCCL_HOSTID -x NCCL_SOCKET_IFNAME"), m.toString());
        // only NCCL_SOCKET_IFNAME set: the ranks still get their own NCCL_HOSTID
        r = box.run(bundle.resolve("gpu-test.sh"), onGpus(1, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY,
                "NCCL_SOCKET_IFNAME", "eth9"));
        assertEquals("", r.err());
        assertEquals("== 2 ranks on 1 GPU(s): sharing (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=eth9)", r.outLines().get(0));
        assertEquals(List.of("nccl4j-host1", "eth9"), List.of(r.of("java").get(2).env("NCCL_HOSTID"),
                r.of("java").get(2).env("NCCL_SOCKET_IFNAME")));
    }

    /** Each refusal: one line on stderr, status 2, no JVM and no mpirun. */
    @Test
    void gpuTestRefusesBadNpNoGpuAndUnknownArguments() throws Exception {
        Map<String, String> np = new LinkedHashMap<>();
        np.put("0", "gpu-test.sh: NP=0 is not a whole number >= 1: set NP to the number of ranks, or unset it for "
                + "max(2, GPU count) = 2");
        np.put("abc", "gpu-test.sh: NP=abc is not a whole number >= 1: set NP to the number of ranks, or unset it for "
                + "max(2, GPU count) = 2");
        np.put("-2", "gpu-test.sh: NP=-2 is not a whole number >= 1: set NP to the number of ranks, or unset it for "
                + "max(2, GPU count) = 2");
        np.put("129", "gpu-test.sh: NP=129 is more than 64 ranks per GPU on 2 GPU(s): set NP to 128 or fewer");
        for (Map.Entry<String, String> k : np.entrySet()) {
            SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString(), "NP", k.getKey()));
            assertEquals(2, r.status(), r.toString());
            assertEquals(k.getValue(), r.err().strip(), k.getKey());
            assertEquals(List.of(), r.tools(), k.getKey());
            assertEquals("", r.out());
        }
        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), onGpus(1, "LOG_DIR", logs.toString(), "NP", "65"));
        assertEquals(2, r.status(), r.toString());
        assertEquals("gpu-test.sh: NP=65 is more than 64 ranks per GPU on 1 GPU(s): set NP to 64 or fewer", r.err().strip());
        assertEquals(List.of("nvidia-smi"), r.tools());

        Map<List<String>, String> bad = new LinkedHashMap<>();
        bad.put(List.of("--bogus"), "gpu-test.sh: unknown option --bogus (usage: gpu-test.sh [--share-gpu] [bundle-dir])");
        bad.put(List.of("--share-gpu", "-n"), "gpu-test.sh: unknown option -n (usage: gpu-test.sh [--share-gpu] [bundle-dir])");
        bad.put(List.of(bundle.toString(), "x"), "gpu-test.sh: one bundle directory at most, not 2 (" + bundle + " x) "
                + "(usage: gpu-test.sh [--share-gpu] [bundle-dir])");
        for (Map.Entry<List<String>, String> k : bad.entrySet()) {
            r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString()), k.getKey().toArray(new String[0]));
            assertEquals(2, r.status(), r.toString());
            assertEquals(k.getValue(), r.err().strip());
            assertEquals(List.of(), r.tools());
        }
        r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString(), "SHARE_GPU", "yes"));
        assertEquals(2, r.status(), r.toString());
        assertEquals("gpu-test.sh: SHARE_GPU=yes: 1 makes the ranks share the GPUs, 0 or unset leaves it to NP > GPU count",
                r.err().strip());
        assertFalse(Files.exists(logs), "no log directory made");
    }

    /**
     * The summary sums the single-process run and every rank; skipped counts aborted tests and the tests of a class
     * aborted as a whole; one line per cause, in order of first appearance, with its tests and classes.
     */
    @Test
    void gpuTestSumsTheRunsAndListsTheCausesOfTheSkips() throws Exception {
        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), onGpus(1, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT",
                SINGLE_ON_ONE_GPU, "FAKE_JAVA_OUT_RANK", RANK));
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("5 passed, 0 failed, 11 skipped",
                "skipped: needs 2 GPUs, found 1 (2 tests, 1 class)",
                "skipped: class org.nccl4j.OldTest is @Disabled (1 class)",
                "skipped: no peer access (2 tests)",
                "skipped: NCCL <= 2.28.3 on one rank (2 tests)",
                "gpu-test.sh: of the 11 skipped, 6 aborted (an assumption failed), 4 never started (their class was aborted or failed)"),
                fromSummary(r));
    }

    /** A run in which no test ran fails, saying why. */
    @Test
    void gpuTestFailsWhenNoTestRan() throws Exception {
        String skipping = SINGLE_ON_ONE_GPU.replace("| | +-- allReduceOnOneGpu() [OK]\\n", "")
                .replace(summary(1, 0, 1, 2, 4, 0), summary(0, 0, 1, 2, 4, 0));
        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), onGpus(1, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", skipping,
                "NP", "1"));
        assertEquals(1, r.status(), r.toString());
        assertEquals(List.of("0 passed, 0 failed, 7 skipped",
                "skipped: needs 2 GPUs, found 1 (2 tests, 1 class)",
                "skipped: class org.nccl4j.OldTest is @Disabled (1 class)",
                "gpu-test.sh: of the 7 skipped, 2 aborted (an assumption failed), 4 never started (their class was aborted or failed)",
                "gpu-test.sh: no test ran: every test skipped: causes above"), fromSummary(r));

        r = box.run(bundle.resolve("gpu-test.sh"), onGpus(2, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT",
                summary(0, 0, 0, 0, 0, 0), "TESTS", "Nothing"));
        assertEquals(1, r.status(), r.toString());
        assertEquals(List.of("0 passed, 0 failed, 0 skipped", "gpu-test.sh: no test ran: no test found (tags gpu and "
                + "multiprocess in " + bundle + "/lib/nccl4j-*-tests.jar, TESTS=Nothing)"), fromSummary(r));

        r = box.run(bundle.resolve("gpu-test.sh"), onGpus(2, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", "Error: could not"
                + " find or load main class"));
        assertEquals(1, r.status(), r.toString());
        assertEquals(List.of("0 passed, 0 failed, 0 skipped", "gpu-test.sh: no test ran: the JUnit console launcher printed "
                + "no summary (see the logs above)"), fromSummary(r));
    }

    @Test
    void gpuTestFailsWhenATestFailsOrThereIsNoBundle() throws Exception {
        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString(), "NP", "1",
                "FAKE_JAVA_OUT", "[         2 tests successful      ]\\n[         1 tests failed          ]"));
        assertEquals(1, r.status(), r.toString());
        assertEquals("2 passed, 1 failed, 0 skipped", r.outLines().get(r.outLines().size() - 1));

        delete(bundle);
        Files.createDirectories(base.resolve("empty"));
        r = box.run(root.resolve("scripts/gpu-test.sh"), job("LOG_DIR", logs.toString()), base.resolve("empty").toString());
        assertEquals(2, r.status(), r.toString());
        assertEquals("gpu-test.sh: no bundle with jre/bin/java found (run scripts/gpu-bundle.sh)", r.err().strip());
        assertEquals(List.of(), r.tools());
    }

    /**
     * A run's exit status: non-zero with no failure in its summary (a crash, a timeout) counts as one failure; with
     * failures in its summary (the console launcher exits 1 then) it adds none. A class that fails as a whole counts.
     */
    @Test
    void gpuTestCountsARunThatFailsWithoutSayingSoAndAClassThatFails() throws Exception {
        SandboxOutcome r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY,
                "FAKE_JAVA_STATUS", "134"));
        assertEquals(1, r.status(), r.toString());
        assertTrue(r.outLines().contains("gpu-test.sh: the single-process run exited with status 134"), r.out());
        assertTrue(r.outLines().contains("gpu-test.sh: the mpirun run exited with status 134"), r.out());
        assertEquals(List.of("9 passed, 2 failed, 0 skipped"), fromSummary(r));

        String failing = summary(2, 1, 0, 0, 0, 0);
        r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", failing,
                "FAKE_JAVA_STATUS", "1"));
        assertEquals(1, r.status(), r.toString());
        assertTrue(r.outLines().contains("gpu-test.sh: the mpirun run exited with status 1"), r.out());
        assertEquals(List.of("6 passed, 3 failed, 0 skipped"), fromSummary(r));

        String classFailed = String.join("\\n", "+-- JUnit Jupiter [OK]", "| '-- CoreGpuTest [X] no device", "",
                summary(0, 0, 0, 0, 3, 1));
        r = box.run(bundle.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY,
                "FAKE_JAVA_OUT_RANK", classFailed, "FAKE_JAVA_STATUS", "0"));
        assertEquals(1, r.status(), r.toString());
        assertEquals(List.of("3 passed, 2 failed, 6 skipped",
                "gpu-test.sh: of the 6 skipped, 6 never started (their class was aborted or failed)",
                "gpu-test.sh: of the 2 failed, 2 are classes or engines that failed as a whole (see Failures in the logs)"),
                fromSummary(r));
    }

    // ---------------------------------------------------------------- examples-gpu.sh

    @Test
    void examplesGpuRunsEachExampleUnderNccl4jRunThenUnderMpirun() throws Exception {
        SandboxOutcome r = box.run(root.resolve("scripts/examples-gpu.sh"), job("LOG_DIR", logs.toString(),
                "EXAMPLES", "AllReduce;DdpSimple --average avg"));
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("timeout", "java", "timeout", "mpirun", "java", "java",
                "timeout", "java", "timeout", "mpirun", "java", "java"), r.tools(), r.toString());
        Path java = bundle.resolve("jre/bin/java");
        String cp = classpath(bundle);
        List<List<String>> examples = List.of(List.of("AllReduce"), List.of("DdpSimple", "--average", "avg"));
        for (int n = 0; n < 2; n++) {
            List<String> ex = examples.get(n);
            List<Call> c = r.calls().subList(6 * n, 6 * n + 6);
            assertEquals(args("180", bundle.resolve("nccl4j-run"), "-np", "2", ex), c.get(0).args());
            assertEquals(java.toString(), c.get(1).exe());
            assertEquals(args("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", cp, LAUNCHER, "-np", "2", ex),
                    c.get(1).args());
            assertLd("/opt/ld", c.get(1));
            List<String> rank = args(java, JAVA_OPTS, "-cp", cp, "org.nccl4j.examples." + ex.get(0), ex.subList(1, ex.size()));
            List<String> mpirun = args("--allow-run-as-root", "--bind-to", "none", "--tag-output", "-np", "2",
                    x("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "NCCL4J_TEST_VAR", "NCCL_DEBUG", "MASTER_ADDR=127.0.0.1",
                            "MASTER_PORT=" + (29701 + n)), rank);
            assertEquals(args("180", "mpirun", mpirun), c.get(2).args());
            assertEquals(mpirun, c.get(3).args());
            for (int k = 0; k < 2; k++) {
                Call j = c.get(4 + k);
                assertEquals(java.toString(), j.exe());
                assertEquals(rank.subList(1, rank.size()), j.args());
                assertEquals(Integer.toString(k), j.env("OMPI_COMM_WORLD_RANK"));
                assertEquals("127.0.0.1", j.env("MASTER_ADDR"));
                assertEquals(Integer.toString(29701 + n), j.env("MASTER_PORT"));
                assertLd("/opt/ld", j);
            }
        }
        assertEquals(List.of("PASSED  nccl4j-run -np 2 AllReduce", "PASSED  mpirun -np 2 java ... AllReduce",
                "PASSED  nccl4j-run -np 2 DdpSimple --average avg", "PASSED  mpirun -np 2 java ... DdpSimple --average avg",
                "4 passed, 0 failed"), r.outLines());
        for (String log : List.of("1-run-AllReduce.log", "1-mpirun-AllReduce.log", "2-run-DdpSimple_--average_avg.log",
                "2-mpirun-DdpSimple_--average_avg.log")) {
            assertTrue(Files.exists(logs.resolve(log)), log);
        }
    }

    @Test
    void examplesGpuReportsFailuresAndLeavesOutAllowRunAsRootForOtherUsers() throws Exception {
        // NP=3 on 2 GPUs (CUDA_VISIBLE_DEVICES=0,1): the ranks share them
        SandboxOutcome r = box.run(root.resolve("scripts/examples-gpu.sh"), job("LOG_DIR", logs.toString(), "EXAMPLES", "AllReduce",
                "FAKE_UID", "1000", "FAKE_JAVA_STATUS", "3", "NP", "3", "RUN_TIMEOUT", "7"), bundle.toString());
        assertEquals(1, r.status(), r.toString());
        assertEquals(List.of("timeout", "java", "timeout", "mpirun", "java", "java", "java"), r.tools(), r.toString());
        assertEquals(args("7", bundle.resolve("nccl4j-run"), "--share-gpu", "-np", "3", "AllReduce"),
                r.of("timeout").get(0).args());
        assertEquals(args("--bind-to", "none", "--tag-output", "--oversubscribe", "-np", "3", x("CUDA_VISIBLE_DEVICES",
                "LD_LIBRARY_PATH", "NCCL4J_TEST_VAR", "NCCL_DEBUG", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29701"),
                logs.resolve("share-rank.sh"), bundle.resolve("jre/bin/java"), JAVA_OPTS, "-cp", classpath(bundle),
                "org.nccl4j.examples.AllReduce"), r.first("mpirun").args());
        assertEquals(List.of("== 3 ranks on 2 GPU(s): sharing (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo)",
                "FAILED  nccl4j-run --share-gpu -np 3 AllReduce (exit 3, log " + logs.resolve("1-run-AllReduce.log") + ")",
                "FAILED  mpirun -np 3 java ... AllReduce (exit 3, log " + logs.resolve("1-mpirun-AllReduce.log") + ")",
                "0 passed, 2 failed"), r.outLines());
    }

    /** One GPU: 2 ranks on it, as gpu-test.sh runs them: nccl4j-run --share-gpu, and a wrapper under mpirun. */
    @Test
    void examplesGpuOnOneGpuSharesItUnderBothLaunchers() throws Exception {
        SandboxOutcome r = box.run(root.resolve("scripts/examples-gpu.sh"), onGpus(1, "LOG_DIR", logs.toString(), "EXAMPLES",
                "AllReduce"));
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("nvidia-smi", "timeout", "java", "timeout", "mpirun", "java", "java"), r.tools(), r.toString());
        String cp = classpath(bundle);
        assertEquals(args("180", bundle.resolve("nccl4j-run"), "--share-gpu", "-np", "2", "AllReduce"),
                r.of("timeout").get(0).args());
        assertEquals(launcher(cp, "--share-gpu", "-np", "2", "AllReduce"), r.of("java").get(0).args());
        Path wrapper = logs.resolve("share-rank.sh");
        List<String> rank = args(bundle.resolve("jre/bin/java"), JAVA_OPTS, "-cp", cp, "org.nccl4j.examples.AllReduce");
        assertEquals(args("--allow-run-as-root", "--bind-to", "none", "--tag-output", "--oversubscribe", "-np", "2",
                x("LD_LIBRARY_PATH", "NCCL4J_TEST_VAR", "NCCL_DEBUG", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29701"), wrapper,
                rank), r.first("mpirun").args());
        assertEquals(List.of("#!/usr/bin/env bash", "export NCCL_HOSTID=nccl4j-host${OMPI_COMM_WORLD_RANK:?not under Open MPI}",
                "export NCCL_SOCKET_IFNAME=lo", "exec \"$@\""), Files.readAllLines(wrapper));
        for (int k = 0; k < 2; k++) {
            Call j = r.of("java").get(1 + k);
            assertEquals(rank.subList(1, rank.size()), j.args());
            assertEquals("nccl4j-host" + k, j.env("NCCL_HOSTID"));
            assertEquals("lo", j.env("NCCL_SOCKET_IFNAME"));
            assertEquals(null, j.env("NCCL4J_DEVICE"));
        }
        assertEquals(List.of("== 2 ranks on 1 GPU(s): sharing (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo)",
                "PASSED  nccl4j-run --share-gpu -np 2 AllReduce", "PASSED  mpirun -np 2 java ... AllReduce", "2 passed, 0 failed"),
                r.outLines());
        assertEquals("", r.err());

        // the user's NCCL_HOSTID: kept, with the warning; --share-gpu on 4 GPUs; 4 ranks by default
        r = box.run(root.resolve("scripts/examples-gpu.sh"), onGpus(4, "LOG_DIR", logs.toString(), "EXAMPLES", "AllReduce",
                "NCCL_HOSTID", "h"), "--share-gpu");
        assertEquals(0, r.status(), r.toString());
        assertEquals("examples-gpu.sh: warning: NCCL_HOSTID=h is set by you and kept: ranks sharing a GPU may collide "
                + "(NCCL: duplicate GPU)", r.err().strip());
        assertEquals(List.of("#!/usr/bin/env bash", "export NCCL_SOCKET_IFNAME=lo", "exec \"$@\""), Files.readAllLines(wrapper));
        assertEquals(args("180", bundle.resolve("nccl4j-run"), "--share-gpu", "-np", "4", "AllReduce"),
                r.of("timeout").get(0).args());
        assertEquals("h", r.of("java").get(4).env("NCCL_HOSTID"));

        // a GPU each: as before
        r = box.run(root.resolve("scripts/examples-gpu.sh"), onGpus(3, "LOG_DIR", logs.toString(), "EXAMPLES", "AllReduce"));
        assertEquals(List.of("PASSED  nccl4j-run -np 3 AllReduce", "PASSED  mpirun -np 3 java ... AllReduce",
                "2 passed, 0 failed"), r.outLines());
        assertEquals(null, r.of("java").get(1).env("NCCL_HOSTID"));
    }

    @Test
    void examplesGpuRefusesNoGpuBadNpAndNoBundle() throws Exception {
        SandboxOutcome r = box.run(root.resolve("scripts/examples-gpu.sh"), onGpus(0, "LOG_DIR", logs.toString()));
        assertEquals(2, r.status(), r.toString());
        assertEquals("examples-gpu.sh: no GPU found (nvidia-smi -L lists none)", r.err().strip());
        assertEquals(List.of("nvidia-smi"), r.tools());
        r = box.run(root.resolve("scripts/examples-gpu.sh"), job("LOG_DIR", logs.toString(), "NP", "two"));
        assertEquals(2, r.status(), r.toString());
        assertEquals("examples-gpu.sh: NP=two is not a whole number >= 1: set NP to the number of ranks, or unset it for "
                + "max(2, GPU count) = 2", r.err().strip());
        assertEquals(List.of(), r.tools());
        r = box.run(root.resolve("scripts/examples-gpu.sh"), job("LOG_DIR", logs.toString()), "--np", "2");
        assertEquals(2, r.status(), r.toString());
        assertEquals("examples-gpu.sh: unknown option --np (usage: examples-gpu.sh [--share-gpu] [bundle-dir])",
                r.err().strip());
        r = box.run(root.resolve("scripts/examples-gpu.sh"), job("LOG_DIR", logs.toString()), base.resolve("none").toString());
        assertEquals(2, r.status(), r.toString());
        assertEquals("examples-gpu.sh: no bundle at " + base.resolve("none") + " (scripts/gpu-bundle.sh)", r.err().strip());
        assertEquals(List.of(), r.tools());
    }

    // ---------------------------------------------------------------- hang-scenarios.sh

    /**
     * A failed case comes back with its evidence: under the verdict, each rank's log gives its error lines (stack
     * frames left out) and its last lines, so that a run whose LOG_DIR is lost can still be read.
     */
    @Test
    void hangScenariosPrintsAFailedCasesErrorsAndLastLines() throws Exception {
        String out = "starting\\n12:00:01.000 WARN  Liveness - slow\\n12:00:02.000 ERROR Watchdog - allReduce #1 did not"
                + " complete\\n\\tat org.nccl4j.Watchdog.poll(Watchdog.java:1)\\nlast words";
        SandboxOutcome r = box.run(root.resolve("scripts/hang-scenarios.sh"), onGpus(1, "LOG_DIR", logs.toString(),
                "SCENARIOS", "skip-no-launcher", "FAKE_JAVA_STATUS", "3", "FAKE_JAVA_OUT", out), bundle.toString());
        assertEquals(1, r.status(), r.toString());
        List<String> lines = r.outLines();
        assertTrue(lines.get(0).matches("FAILED  skip-no-launcher: exit 3 3 \\(expected 0 0\\), [0-9.]+ s, left running: "
                + "none"), lines.get(0));
        List<String> rank = List.of(
                "        | 12:00:01.000 WARN  Liveness - slow",
                "        | 12:00:02.000 ERROR Watchdog - allReduce #1 did not complete",
                "        -- last lines",
                "        | starting",
                "        | 12:00:01.000 WARN  Liveness - slow",
                "        | 12:00:02.000 ERROR Watchdog - allReduce #1 did not complete",
                "        | \tat org.nccl4j.Watchdog.poll(Watchdog.java:1)",
                "        | last words");
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            expected.add("        == rank" + i + ".log: its last ERROR, WARN and exception lines, then its last lines");
            expected.addAll(rank);
        }
        expected.add("0 passed, 1 failed (logs: " + logs + ")");
        assertEquals(expected, lines.subList(1, lines.size()));
        // the two ranks run at once, so their calls come in either order
        assertEquals(List.of("java", "java", "nvidia-smi", "timeout", "timeout"), r.tools().stream().sorted().toList());
        assertEquals(Set.of("0", "1"), r.of("java").stream().map(c -> c.env("RANK")).collect(Collectors.toSet()));
        for (Call java : r.of("java")) {
            assertEquals(List.of("-cp", classpath(bundle), "org.nccl4j.tools.harness.HangScenarios", "skip"), java.args());
        }
    }

    // ---------------------------------------------------------------- gpu-bundle.sh

    /** The JNI libraries gpu-bundle.sh keeps of the CUDA presets' jar (its default CUDA_JNI_LIBS). */
    private static final List<String> JNI_LIBS = List.of("libjnicudart.so", "libjnicublas.so", "libjnicurand.so",
            "libjninvrtc.so", "libjninvml.so");

    /** gpu-bundle.sh's calls and files for the bundle directory out, with fake mvn, unzip, zip and jlink. */
    private void assertBundleIn(Path out, SandboxOutcome r) throws IOException {
        assertEquals(0, r.status(), r.toString());
        assertEquals(args("mvn", "mvn", JNI_LIBS.stream().map(l -> "unzip").collect(Collectors.toList()), "zip", "jlink"),
                r.tools(), r.toString());
        for (Call c : r.of("mvn")) {
            assertEquals(root.toString(), c.cwd(), "Maven runs at the repository root");
        }
        assertEquals(List.of("-q", "-B", "-DskipTests", "package", "dependency:copy-dependencies", "-DincludeScope=test",
                "-DexcludeGroupIds=org.nccl4j"), r.of("mvn").get(0).args());
        assertEquals(List.of("-q", "-B", "dependency:copy",
                "-Dartifact=org.junit.platform:junit-platform-console-standalone:1.14.1", "-DoutputDirectory=" + out + "/lib"),
                r.of("mvn").get(1).args());
        String cuda = "cuda-13.3-9.25-1.5.14-linux-x86_64.jar";
        for (int i = 0; i < JNI_LIBS.size(); i++) {
            List<String> a = r.of("unzip").get(i).args();
            assertEquals(List.of("-q", "-j", out + "/deps/" + cuda, "org/bytedeco/cuda/linux-x86_64/" + JNI_LIBS.get(i), "-d"),
                    a.subList(0, 5));
        }
        assertEquals(List.of("-q", "-r", out + "/lib/" + cuda, "."), r.first("zip").args());
        List<String> jlink = r.first("jlink").args();
        assertEquals(List.of("--output", out + "/jre"), jlink.subList(jlink.size() - 2, jlink.size()));
        List<String> files;
        try (Stream<Path> s = Files.list(out.resolve("lib"))) {
            files = s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
        }
        // JUnit's jars are in the console launcher; nccl4j's own from the modules' target/
        assertEquals(List.of(cuda, CONSOLE, "nccl4j-core-" + VERSION + "-tests.jar", "nccl4j-core-" + VERSION + ".jar",
                "nccl4j-examples-" + VERSION + "-tests.jar", "nccl4j-examples-" + VERSION + ".jar",
                "nccl4j-native-" + VERSION + "-tests.jar", "nccl4j-native-" + VERSION + ".jar",
                "nccl4j-tools-" + VERSION + "-tests.jar", "nccl4j-tools-" + VERSION + ".jar", "slf4j-api-2.0.17.jar"), files);
        assertFalse(Files.exists(out.resolve("deps")));
        assertTrue(Files.exists(out.resolve("jre/bin/java")));
        for (String s : bundledScripts()) {
            assertEquals(Files.readString(SCRIPTS.resolve(s)), Files.readString(out.resolve(s)), s);
        }
        // departures.sh finds the torch rows' program in bench/ beside it
        assertEquals(Files.readString(SCRIPTS.resolve("bench/torch_departures.py")),
                Files.readString(out.resolve("bench/torch_departures.py")));
        assertTrue(r.out().startsWith("bundle: " + out + ", "), r.out());
    }

    /** An absolute bundle directory is used as it is (it was the working directory plus it: issue 14's bug). */
    @Test
    void gpuBundleWritesEverythingToAnAbsoluteDirectory() throws Exception {
        Path out = base.resolve("elsewhere/my bundle");
        Files.createDirectories(out.resolve("stale"));
        SandboxOutcome r = box.run(root.resolve("scripts/gpu-bundle.sh"), env("FAKE_MVN_BUILD", "1"), out.toString());
        assertBundleIn(out, r);
        assertFalse(Files.exists(out.resolve("stale")), "the directory is made anew");
    }

    /** BUNDLE_TESTS=0: no console launcher and no test jars, said in the last line; gpu-test.sh then refuses it. */
    @Test
    void gpuBundleWithoutTheTestsForBenchmarkCalls() throws Exception {
        Path out = base.resolve("lean");
        SandboxOutcome r = box.run(root.resolve("scripts/gpu-bundle.sh"), env("FAKE_MVN_BUILD", "1", "BUNDLE_TESTS", "0"),
                out.toString());
        assertEquals(0, r.status(), r.toString());
        assertEquals(1, r.of("mvn").size(), "no dependency:copy of the console launcher: " + r.of("mvn"));
        List<String> files;
        try (Stream<Path> s = Files.list(out.resolve("lib"))) {
            files = s.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
        }
        assertEquals(List.of("cuda-13.3-9.25-1.5.14-linux-x86_64.jar", "nccl4j-core-" + VERSION + ".jar",
                "nccl4j-examples-" + VERSION + ".jar", "nccl4j-native-" + VERSION + ".jar",
                "nccl4j-tools-" + VERSION + ".jar", "slf4j-api-2.0.17.jar"), files);
        assertTrue(r.out().strip().endsWith(", without the tests (BUNDLE_TESTS=0)"), r.out());
        ScriptSandbox.fake(out.resolve("jre/bin/java"));   // fake jlink's java is an empty file
        SandboxOutcome t = box.run(out.resolve("gpu-test.sh"), job("LOG_DIR", logs.toString()), out.toString());
        assertEquals(2, t.status(), t.toString());
        assertEquals("gpu-test.sh: " + out + "/lib has no junit-platform-console-standalone-*.jar (run "
                + "scripts/gpu-bundle.sh, without BUNDLE_TESTS=0)", t.err().strip());

        r = box.run(root.resolve("scripts/gpu-bundle.sh"), env("FAKE_MVN_BUILD", "1", "BUNDLE_TESTS", "no"),
                out.toString());
        assertEquals(2, r.status(), r.toString());
        assertEquals("gpu-bundle.sh: BUNDLE_TESTS=no: use 1 (the default) or 0", r.err().strip());
        assertEquals(List.of(), r.tools(), "refused before it deletes or builds anything");
        assertTrue(Files.isDirectory(out.resolve("lib")));
    }

    /** A relative bundle directory is relative to the repository root, not to the working directory. */
    @Test
    void gpuBundleTakesARelativeDirectoryFromTheRepositoryRoot() throws Exception {
        SandboxOutcome r = box.run(root.resolve("scripts/gpu-bundle.sh"), env("FAKE_MVN_BUILD", "1"), "out/../rel/b");
        assertBundleIn(root.resolve("rel/b"), r);
        assertFalse(Files.exists(box.work.resolve("rel")), "not under the working directory");
        r = box.run(root.resolve("scripts/gpu-bundle.sh"), env("FAKE_MVN_BUILD", "1"));
        assertBundleIn(root.resolve("bundle"), r);
    }

    /** gpu-bundle.sh deletes the directory first: /, the repository root, what holds it or files git tracks are refused. */
    @Test
    void gpuBundleRefusesADirectoryItMustNotDelete() throws Exception {
        String because = " as the bundle directory: it is / or the repository root (" + root + "), or holds it, and "
                + "gpu-bundle.sh deletes it first (rm -rf)";
        Map<String, Path> cases = new LinkedHashMap<>();
        cases.put("/", Path.of("/"));
        cases.put(root.toString(), root);
        cases.put(root + "/", root);
        cases.put(".", root);
        cases.put("scripts/..", root);
        cases.put("..", base);
        cases.put(base.toString(), base);
        for (Map.Entry<String, Path> c : cases.entrySet()) {
            SandboxOutcome r = box.run(root.resolve("scripts/gpu-bundle.sh"), env("FAKE_MVN_BUILD", "1"), c.getKey());
            assertEquals(2, r.status(), c.getKey() + "\n" + r);
            assertEquals("gpu-bundle.sh: will not use " + c.getValue() + because, r.err().strip(), c.getKey());
            assertEquals(List.of(), r.tools(), c.getKey());
            assertTrue(Files.isRegularFile(root.resolve("scripts/gpu-bundle.sh")), "nothing deleted");
        }
        ScriptKit.assumeOnPath("git");
        assertEquals(0, exec(root, Map.of(), List.of("git", "init", "-q")).status());
        Files.writeString(root.resolve(".gitignore"), "__pycache__/\n");   // as the project's: a local run's bytecode
        assertEquals(0, exec(root, Map.of(), List.of("git", "add", "scripts")).status());
        SandboxOutcome r = box.run(root.resolve("scripts/gpu-bundle.sh"), env("FAKE_MVN_BUILD", "1"), "scripts");
        assertEquals(2, r.status(), r.toString());
        assertEquals("gpu-bundle.sh: will not use " + root.resolve("scripts") + " as the bundle directory: it holds files "
                + "git tracks (scripts/bench/ab_report.py, ...), and gpu-bundle.sh deletes it first (rm -rf)",
                r.err().strip());
        assertEquals(List.of(), r.tools());
        assertBundleIn(root.resolve("bundle"), box.run(root.resolve("scripts/gpu-bundle.sh"), env("FAKE_MVN_BUILD", "1")));
    }

    /**
     * CUDA=12: built with -Pcuda12, the CUDA 12 runtime carried in cuda12/ (here from CUDART12), and gpu-test.sh from
     * that bundle points nccl4j at it unless the user chose a runtime; CUDA=11 is refused before anything is deleted.
     */
    @Test
    void gpuBundleForCuda12CarriesTheRuntimeThatGpuTestThenUses() throws Exception {
        Path cudart = base.resolve("cuda-12.4/libcudart.so.12.4.127");
        Files.createDirectories(cudart.getParent());
        Files.writeString(cudart, "the CUDA 12 runtime");
        Path out = base.resolve("bundle12");
        SandboxOutcome r = box.run(root.resolve("scripts/gpu-bundle.sh"), env("FAKE_MVN_BUILD", "1", "CUDA", "12", "CUDART12",
                cudart.toString()), out.toString());
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("-q", "-B", "-Pcuda12", "-DskipTests", "package", "dependency:copy-dependencies",
                "-DincludeScope=test", "-DexcludeGroupIds=org.nccl4j"), r.of("mvn").get(0).args());
        assertEquals("the CUDA 12 runtime", Files.readString(out.resolve("cuda12/libcudart.so.12")));
        assertTrue(r.out().contains("bundle: CUDA 12 runtime from " + cudart + " ("), r.out());
        assertTrue(r.out().strip().endsWith(", for the CUDA 12 runtime (cuda12/)"), r.out());

        ScriptSandbox.fake(out.resolve("jre/bin/java"));   // fake jlink's java is an empty file
        SandboxOutcome t = box.run(out.resolve("gpu-test.sh"), onGpus(1, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT", SUMMARY,
                "NP", "1"), out.toString());
        assertEquals(0, t.status(), t.toString());
        Call java = t.first("java");
        assertEquals(out + "/cuda12/libcudart.so.12", java.env("NCCL4J_CUDART"));
        assertTrue(java.env("LD_LIBRARY_PATH").startsWith(out + "/cuda12:"), java.env("LD_LIBRARY_PATH"));
        assertTrue(t.out().contains("== CUDA 12 bundle: NCCL4J_CUDART=" + out + "/cuda12/libcudart.so.12 NCCL4J_CUDA="),
                t.out());
        SandboxOutcome chosen = box.run(out.resolve("gpu-test.sh"), onGpus(1, "LOG_DIR", logs.toString(), "FAKE_JAVA_OUT",
                SUMMARY, "NP", "1", "NCCL4J_CUDA", "12"), out.toString());
        assertEquals(0, chosen.status(), chosen.toString());
        assertEquals(null, chosen.first("java").env("NCCL4J_CUDART"), "the user's NCCL4J_CUDA=12 is their choice");
        assertEquals("12", chosen.first("java").env("NCCL4J_CUDA"));

        SandboxOutcome refused = box.run(root.resolve("scripts/gpu-bundle.sh"), env("FAKE_MVN_BUILD", "1", "CUDA", "11"),
                out.toString());
        assertEquals(2, refused.status(), refused.toString());
        assertEquals("gpu-bundle.sh: CUDA=11: use 13 (the default) or 12", refused.err().strip());
        assertEquals(List.of(), refused.tools(), "refused before it deletes or builds anything");
        assertTrue(Files.exists(out.resolve("cuda12/libcudart.so.12")));
    }

    // ---------------------------------------------------------------- .github/workflows/gpu-smoke.yml

    /** The steps of a GitHub workflow's job, each its lines from its "      - " on. */
    private static List<List<String>> steps(List<String> lines) {
        List<List<String>> steps = new ArrayList<>();
        for (String l : lines) {
            if (l.startsWith("      - ")) {
                steps.add(new ArrayList<>());
            }
            if (!steps.isEmpty() && !l.isBlank()) {
                steps.get(steps.size() - 1).add(l);
            }
        }
        return steps;
    }

    @Test
    void gpuSmokeRunsOnOneGpuAndOnSeveralAndKeepsEachRanksLogs() throws Exception {
        List<String> lines = Files.readAllLines(ROOT.resolve(".github/workflows/gpu-smoke.yml"));
        for (String l : List.of("      fail-fast: false", "          - gpus: one-gpu", "            runner: [self-hosted, gpu, one-gpu]",
                "          - gpus: multi-gpu", "            runner: [self-hosted, gpu, multi-gpu]", "    runs-on: ${{ matrix.runner }}")) {
            assertTrue(lines.contains(l), l);
        }
        List<List<String>> steps = steps(lines);
        List<String> build = steps.stream().filter(s -> s.contains("        run: scripts/gpu-bundle.sh bundle")).findFirst()
                .orElseThrow();
        List<String> test = steps.stream().filter(s -> s.contains("        run: bash bundle/gpu-test.sh bundle")).findFirst()
                .orElseThrow();
        assertTrue(test.containsAll(List.of("        env:", "          NCCL_NVLS_ENABLE: '0'",
                "          LOG_DIR: ${{ github.workspace }}/gpu-logs")), test.toString());
        List<String> upload = steps.stream().filter(s -> s.contains("        uses: actions/upload-artifact@v4")).findFirst()
                .orElseThrow();
        assertTrue(upload.containsAll(List.of("        if: always()", "          name: gpu-logs-${{ matrix.gpus }}",
                "          path: ${{ github.workspace }}/gpu-logs")), upload.toString());
        assertTrue(steps.indexOf(build) < steps.indexOf(test) && steps.indexOf(test) < steps.indexOf(upload), steps.toString());
    }

    // ---------------------------------------------------------------- nccl4j-run

    private static List<String> launcher(String cp, String... args) {
        return args("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", cp, LAUNCHER, List.of(args));
    }

    @Test
    void nccl4jRunInItsBundleRunsTheLauncherOnTheBundlesJavaAndJars() throws Exception {
        box.makeBuild();
        SandboxOutcome r = box.run(bundle.resolve("nccl4j-run"), job("CLASSPATH", "/my/classes"), "-np", "2", "DdpSimple", "--x", "a b");
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("java"), r.tools());
        Call c = r.first("java");
        assertEquals(bundle.resolve("jre/bin/java").toString(), c.exe());
        assertEquals(launcher(classpath(bundle) + ":/my/classes", "-np", "2", "DdpSimple", "--x", "a b"), c.args());
        // the whole environment reaches the launcher (and so the ranks); JAVA_OPTS is for the ranks only
        assertEquals("kept", c.env("NOT_FORWARDED"));
        assertEquals("-Dx=1 -Dy=2", c.env("JAVA_OPTS"));
        assertEquals("WARN", c.env("NCCL_DEBUG"));
        assertLd("/opt/ld", c);
    }

    @Test
    void nccl4jRunTakesNccl4jBundleFirstAndRefusesOneWithoutJava() throws Exception {
        box.makeBuild();
        Path other = box.makeBundle(base.resolve("other-bundle"));
        SandboxOutcome r = box.run(root.resolve("scripts/nccl4j-run"), job("NCCL4J_BUNDLE", other.toString()), "-np", "1", "X");
        assertEquals(0, r.status(), r.toString());
        assertEquals(other.resolve("jre/bin/java").toString(), r.first("java").exe());
        assertEquals(launcher(classpath(other), "-np", "1", "X"), r.first("java").args());

        r = box.run(root.resolve("scripts/nccl4j-run"), job("NCCL4J_BUNDLE", base.resolve("nothing").toString()), "-np", "1",
                "X");
        assertEquals(2, r.status(), r.toString());
        assertEquals(List.of(), r.tools());
        assertTrue(r.err().contains("nccl4j-run: NCCL4J_BUNDLE=" + base.resolve("nothing") + " has no jre/bin/java"), r.err());
    }

    @Test
    void nccl4jRunWithNccl4jClasspathUsesJavaHomeElseThePathsJava() throws Exception {
        SandboxOutcome r = box.run(bundle.resolve("nccl4j-run"), job("NCCL4J_CLASSPATH", "/a.jar:/b/*", "JAVA_HOME", jdk.toString()),
                "-np", "2", "Y");
        assertEquals(0, r.status(), r.toString());
        assertEquals(jdk.resolve("bin/java").toString(), r.first("java").exe());
        assertEquals(launcher("/a.jar:/b/*", "-np", "2", "Y"), r.first("java").args());

        r = box.run(bundle.resolve("nccl4j-run"), job("NCCL4J_CLASSPATH", "/a.jar", "JAVA_HOME",
                base.resolve("nojdk").toString()), "-np", "2", "Y");
        assertEquals(0, r.status(), r.toString());
        assertEquals(bin.resolve("java").toString(), r.first("java").exe());
        assertEquals(launcher("/a.jar", "-np", "2", "Y"), r.first("java").args());
    }

    @Test
    void nccl4jRunWithoutAnyJavaSaysSo() throws Exception {
        Path minbin = Files.createDirectories(base.resolve("minbin"));
        for (String t : List.of("bash", "dirname")) {
            Path real = Stream.of("/usr/bin/", "/bin/").map(d -> Path.of(d + t)).filter(Files::isExecutable).findFirst()
                    .orElseThrow();
            Files.copy(real, minbin.resolve(t), StandardCopyOption.COPY_ATTRIBUTES);
        }
        Map<String, String> start = box.baseEnv();
        start.put("PATH", minbin.toString());
        SandboxOutcome r = box.runIn(start, bundle.resolve("nccl4j-run"), env("NCCL4J_CLASSPATH", "/a.jar"), "-np", "2", "Y");
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().contains("nccl4j-run: no java found: set JAVA_HOME or put java on PATH (JDK or JRE 17+)"), r.err());
    }

    @Test
    void nccl4jRunInACheckoutUsesTheBuildThenTheBundleThenBuilds() throws Exception {
        Path jar = box.makeBuild();
        String buildCp = buildClasspath(root);
        SandboxOutcome r = box.run(root.resolve("scripts/nccl4j-run"), job("JAVA_HOME", jdk.toString()), "-np", "2", "Z");
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("java"), r.tools());
        assertEquals(jdk.resolve("bin/java").toString(), r.first("java").exe());
        assertEquals(launcher(buildCp, "-np", "2", "Z"), r.first("java").args());
        assertLd("/opt/ld", r.first("java"));

        delete(root.resolve("nccl4j-examples"));
        r = box.run(root.resolve("scripts/nccl4j-run"), job("JAVA_HOME", jdk.toString()), "-np", "2", "Z");
        assertEquals(0, r.status(), r.toString());
        assertEquals(bundle.resolve("jre/bin/java").toString(), r.first("java").exe());
        assertEquals(launcher(classpath(bundle), "-np", "2", "Z"), r.first("java").args());

        delete(bundle);
        r = box.run(root.resolve("scripts/nccl4j-run"), job("FAKE_MVN_BUILD", "1"), "-np", "2", "Z");
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("mvn", "java"), r.tools());
        assertEquals(List.of("-q", "-B", "-DskipTests", "package"), r.first("mvn").args());
        assertEquals(root.toString(), r.first("mvn").cwd());
        assertTrue(r.err().contains("nccl4j-run: building (mvn -DskipTests package) ..."), r.err());
        assertEquals(bin.resolve("java").toString(), r.first("java").exe());
        assertEquals(launcher(buildCp, "-np", "2", "Z"), r.first("java").args());
    }

    // ---------------------------------------------------------------- nccl4j-perf

    private static List<String> perf(String cp, List<String> javaOpts, String... args) {
        return args(javaOpts, "-Djava.awt.headless=true", "-cp", cp, PERF, List.of(args));
    }

    @Test
    void nccl4jPerfTakesNccl4jBundleThenABundleBesideItThenTheBuild() throws Exception {
        Path jar = box.makeBuild();
        Path other = box.makeBundle(base.resolve("other-bundle"));
        SandboxOutcome r = box.run(root.resolve("scripts/nccl4j-perf"), job("NCCL4J_BUNDLE", other.toString()), "all_reduce_perf",
                "-b", "8");
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("java"), r.tools());
        Call c = r.first("java");
        assertEquals(other.resolve("jre/bin/java").toString(), c.exe());
        assertEquals(perf(other + "/lib/*", JAVA_OPTS, "all_reduce_perf", "-b", "8"), c.args());
        assertLd("/opt/ld", c);

        r = box.run(other.resolve("nccl4j-perf"), job(), "-g", "2");   // the copy in a bundle outside a checkout
        assertEquals(0, r.status(), r.toString());
        assertEquals(other.resolve("jre/bin/java").toString(), r.first("java").exe());
        assertEquals(perf(other + "/lib/*", JAVA_OPTS, "-g", "2"), r.first("java").args());

        r = box.run(root.resolve("scripts/nccl4j-perf"), job("JAVA_HOME", jdk.toString()), "-g", "2");   // bundle/ before the build
        assertEquals(0, r.status(), r.toString());
        assertEquals(bundle.resolve("jre/bin/java").toString(), r.first("java").exe());
        assertEquals(perf(bundle + "/lib/*", JAVA_OPTS, "-g", "2"), r.first("java").args());

        delete(bundle);
        String buildCp = buildClasspath(root);
        r = box.run(root.resolve("scripts/nccl4j-perf"), job("JAVA_HOME", jdk.toString()), "-g", "2");
        assertEquals(0, r.status(), r.toString());
        assertEquals(jdk.resolve("bin/java").toString(), r.first("java").exe());
        assertEquals(perf(buildCp, JAVA_OPTS, "-g", "2"), r.first("java").args());

        r = box.run(root.resolve("scripts/nccl4j-perf"), job(), "-g", "2");
        assertEquals(0, r.status(), r.toString());
        assertEquals(bin.resolve("java").toString(), r.first("java").exe());
        assertEquals(perf(buildCp, JAVA_OPTS, "-g", "2"), r.first("java").args());
    }

    @Test
    void nccl4jPerfWithoutBundleOrBuildSaysSo() throws Exception {
        delete(bundle);
        SandboxOutcome r = box.run(root.resolve("scripts/nccl4j-perf"), job(), "-g", "2");
        assertEquals(2, r.status(), r.toString());
        assertEquals(List.of(), r.tools());
        assertTrue(r.err().contains("nccl4j-perf: no bundle and no build found: run 'mvn -DskipTests package' in " + root
                + ", or set NCCL4J_BUNDLE"), r.err());
    }

    // ---------------------------------------------------------------- nccl4j-trace

    private static List<String> trace(String cp, List<String> javaOpts, String... args) {
        return args(javaOpts, "-cp", cp, TRACE, List.of(args));
    }

    @Test
    void nccl4jTraceTakesNccl4jBundleThenABundleBesideItThenTheBuild() throws Exception {
        Path jar = box.makeBuild();
        Path other = box.makeBundle(base.resolve("other-bundle"));
        SandboxOutcome r = box.run(root.resolve("scripts/nccl4j-trace"), job("NCCL4J_BUNDLE", other.toString()), "--json",
                "/tmp/nccl4j-trace");
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("java"), r.tools());
        Call c = r.first("java");
        assertEquals(other.resolve("jre/bin/java").toString(), c.exe());
        assertEquals(trace(other + "/lib/*", JAVA_OPTS, "--json", "/tmp/nccl4j-trace"), c.args());

        r = box.run(other.resolve("nccl4j-trace"), job(), "d");   // the copy in a bundle outside a checkout
        assertEquals(0, r.status(), r.toString());
        assertEquals(other.resolve("jre/bin/java").toString(), r.first("java").exe());
        assertEquals(trace(other + "/lib/*", JAVA_OPTS, "d"), r.first("java").args());

        r = box.run(root.resolve("scripts/nccl4j-trace"), job("JAVA_HOME", jdk.toString()), "d");   // bundle/ before the build
        assertEquals(0, r.status(), r.toString());
        assertEquals(bundle.resolve("jre/bin/java").toString(), r.first("java").exe());
        assertEquals(trace(bundle + "/lib/*", JAVA_OPTS, "d"), r.first("java").args());

        delete(bundle);
        String buildCp = buildClasspath(root);
        r = box.run(root.resolve("scripts/nccl4j-trace"), job("JAVA_HOME", jdk.toString()), "d");
        assertEquals(0, r.status(), r.toString());
        assertEquals(jdk.resolve("bin/java").toString(), r.first("java").exe());
        assertEquals(trace(buildCp, JAVA_OPTS, "d"), r.first("java").args());

        r = box.run(root.resolve("scripts/nccl4j-trace"), job(), "--communicator", "dp", "d");
        assertEquals(0, r.status(), r.toString());
        assertEquals(bin.resolve("java").toString(), r.first("java").exe());
        assertEquals(trace(buildCp, JAVA_OPTS, "--communicator", "dp", "d"), r.first("java").args());

        r = box.run(root.resolve("scripts/nccl4j-trace"), job("FAKE_JAVA_STATUS", "1"), "d");   // the analyzer's status
        assertEquals(1, r.status(), r.toString());
    }

    @Test
    void nccl4jTraceWithoutBundleOrBuildSaysSo() throws Exception {
        delete(bundle);
        SandboxOutcome r = box.run(root.resolve("scripts/nccl4j-trace"), job(), "d");
        assertEquals(2, r.status(), r.toString());
        assertEquals(List.of(), r.tools());
        assertTrue(r.err().contains("nccl4j-trace: no bundle and no build found: run 'mvn -DskipTests package' in " + root
                + ", or set NCCL4J_BUNDLE"), r.err());
    }

    /**
     * scripts/nccl4j-trace with the real java and the real classes: a bundle whose jre/bin/java links to this JVM's
     * java and whose lib/ holds this test's class path as jars (directories of classes jarred), on dumps that
     * {@link TraceDump#write} wrote from {@link FlightRecorder}s.
     */
    @Test
    void nccl4jTraceRunsTheAnalyzerWithTheRealJava() throws Exception {
        Path real = base.resolve("real-bundle");
        try {
            runTheRealAnalyzer(real);
        } finally {
            delete(real);   // its links here, before @TempDir's cleanup warns of each link to outside
        }
    }

    private void runTheRealAnalyzer(Path real) throws Exception {
        Files.createDirectories(real.resolve("jre/bin"));
        Files.createSymbolicLink(real.resolve("jre/bin/java"), Path.of(System.getProperty("java.home"), "bin", "java"));
        Path lib = Files.createDirectories(real.resolve("lib"));
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        int n = 0;
        for (String entry : cp.split(java.io.File.pathSeparator)) {
            Path p = Path.of(entry);
            if (Files.isDirectory(p)) {
                jar(p, lib.resolve((n++ == 0 ? "nccl4j-tools-classes" : "classes-" + n) + ".jar"));
            } else if (entry.endsWith(".jar") && Files.isRegularFile(p)) {
                Files.createSymbolicLink(lib.resolve(n++ + "-" + p.getFileName()), p);
            }
        }
        if (!Files.exists(lib.resolve("nccl4j-tools-classes.jar"))) {
            Files.createFile(lib.resolve("nccl4j-tools-marker.jar"));   // what the script looks for in a bundle
        }
        Path dumps = base.resolve("dumps");
        for (int rank = 0; rank < 2; rank++) {
            FlightRecorder rec = new FlightRecorder(16);
            rec.record(TraceOperation.allReduce.code(), 1000, 7, 0, -1, 4000, 0x10);
            if (rank == 0) {
                rec.record(TraceOperation.allReduce.code(), 3000, 7, 0, -1, 12000, 0x10);
            }
            rec.record(TraceOperation.broadcast.code(), 10, 7, -1, 0, 40, 0x10);
            rec.completed(1);
            TraceDump.capture(rec, rank, 2, "dp", "2.28.3", TraceDump.REASON_TIMEOUT, null, Map.of()).write(dumps);
        }
        Map<String, String> e = env("NCCL4J_BUNDLE", real.toString());
        SandboxOutcome r = box.run(root.resolve("scripts/nccl4j-trace"), e, dumps.toString());
        assertEquals(1, r.status(), r.toString());
        assertEquals("nccl4j-trace: rank 1 issued 2 collectives, rank 0 issued 3: rank 1 skipped rank 0's allReduce #2"
                + " (count 3000 float32 sum), between its allReduce #1 and broadcast #2; rank 0 waits in allReduce #2;"
                + " rank 1 waits in broadcast #2", r.outLines().get(0), r.toString());
        assertEquals("", r.err());

        Path empty = Files.createDirectories(base.resolve("no-dumps"));
        r = box.run(root.resolve("scripts/nccl4j-trace"), e, empty.toString());
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().startsWith("nccl4j-trace: no trace dumps (nccl4j-trace-rank*.json) in " + empty), r.err());
        assertEquals("", r.out());
    }

    /** The files under dir, as a jar at target. */
    private static void jar(Path dir, Path target) throws IOException {
        try (java.util.jar.JarOutputStream out = new java.util.jar.JarOutputStream(Files.newOutputStream(target));
                Stream<Path> files = Files.walk(dir)) {
            for (Path f : files.filter(Files::isRegularFile).sorted().collect(Collectors.toList())) {
                out.putNextEntry(new java.util.jar.JarEntry(dir.relativize(f).toString().replace('\\', '/')));
                Files.copy(f, out);
                out.closeEntry();
            }
        }
    }

    // ---------------------------------------------------------------- nccl4j-allreduce

    @Test
    void nccl4jAllreduceRunsTheAllReduceExampleOnThePathsJava() throws Exception {
        Path jar = box.makeBuild();
        String buildCp = buildClasspath(root);
        SandboxOutcome r = box.run(root.resolve("scripts/nccl4j-allreduce"), job("JAVA_HOME", jdk.toString()), "--bytes", "1M");
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("java"), r.tools());
        Call c = r.first("java");
        assertEquals(bin.resolve("java").toString(), c.exe());   // java from PATH, not JAVA_HOME
        assertEquals(args(JAVA_OPTS, "-cp", buildCp, "org.nccl4j.examples.AllReduce", "--bytes", "1M"), c.args());
        assertLd("/opt/ld", c);

        delete(root.resolve("nccl4j-examples"));
        r = box.run(root.resolve("scripts/nccl4j-allreduce"), job("FAKE_MVN_BUILD", "1"));
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("mvn", "java"), r.tools());
        assertEquals(List.of("-q", "-B", "-DskipTests", "package"), r.first("mvn").args());
        assertEquals(root.toString(), r.first("mvn").cwd());
        assertTrue(r.err().contains("nccl4j-allreduce: building (mvn -DskipTests package) ..."), r.err());
        assertEquals(args(JAVA_OPTS, "-cp", buildCp, "org.nccl4j.examples.AllReduce"), r.first("java").args());

        delete(root.resolve("nccl4j-examples"));
        r = box.run(root.resolve("scripts/nccl4j-allreduce"), job());
        assertEquals(1, r.status(), r.toString());
        assertEquals(List.of("mvn"), r.tools());
    }

    // ---------------------------------------------------------------- scale-run.sh

    @Test
    void scaleRunQuickRunsCAndJavaUnderMpirunTheAlgorithmsTheTwoHostSimulationAndTheExamples() throws Exception {
        Path out = base.resolve("scale");
        SandboxOutcome r = box.run(root.resolve("scripts/bench/scale-run.sh"), job("OUT_DIR", out.toString(), "QUICK", "1", "FAKE_UID",
                "1000"));
        assertEquals(0, r.status(), r.toString());
        List<String> mpiRun = List.of("timeout", "mpirun");
        List<String> expectedTools = args("nvidia-smi", mpiRun, "nccl_perf_baseline", "nccl_perf_baseline", mpiRun, "java",
                "java", mpiRun, "java", "java", mpiRun, "java", "java", mpiRun, "java", "java", "timeout", "java", "timeout",
                "java", "timeout", "java", "timeout", "java");
        assertEquals(expectedTools, r.tools(), r.toString());
        Path baseline = root.resolve("scripts/bench/native/build/nccl_perf_baseline");
        Path java = bundle.resolve("jre/bin/java");
        String ld = CUDA_TARGETS + ":" + CUDA_LIB64 + ":/opt/ld";
        // --allow-run-as-root whoever runs it
        List<String> mpi = args("--allow-run-as-root", "--bind-to", "none", "-np", "2",
                x("NCCL_NVLS_ENABLE", "LD_LIBRARY_PATH", "NCCL4J_BUNDLE", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=PORT"));
        String port = "MASTER_PORT=298\\d\\d";
        List<String> ladder = List.of("--ops", "all", "-b", "8", "-e", "256M", "-f", "32", "-n", "20", "-w", "5", "-c", "0");
        List<Call> mpiruns = r.of("mpirun");
        assertEquals(args(mpi, baseline, ladder, "-J", out.resolve("c-all-1-1.json")), masked(mpiruns.get(0).args(), port, "MASTER_PORT=PORT"));
        assertEquals(args("240", "mpirun"), r.of("timeout").get(0).args().subList(0, 2));
        for (int k = 0; k < 2; k++) {
            Call c = r.of("nccl_perf_baseline").get(k);
            assertEquals(args(ladder, "-J", out.resolve("c-all-1-1.json")), c.args());
            assertEquals(Integer.toString(k), c.env("OMPI_COMM_WORLD_RANK"));
            assertLd(ld, c);
        }
        Path perfScript = root.resolve("scripts/nccl4j-perf");
        assertEquals(args(mpi, perfScript, ladder, "-J", out.resolve("java-all-1-1.json")),
                masked(mpiruns.get(1).args(), port, "MASTER_PORT=PORT"));
        List<Call> javas = r.of("java");
        for (int k = 0; k < 2; k++) {
            Call c = javas.get(k);
            assertEquals(java.toString(), c.exe());
            assertEquals(perf(bundle + "/lib/*", JAVA_OPTS, args(ladder, "-J", out.resolve("java-all-1-1.json"))
                    .toArray(new String[0])), c.args());
            assertEquals(bundle.toString(), c.env("NCCL4J_BUNDLE"));
            assertLd(ld, c);
        }
        List<String> algo = List.of("all_reduce_perf", "-b", "8", "-e", "1G", "-f", "4", "-n", "20", "-w", "5", "-c", "0");
        for (int a = 0; a < 2; a++) {
            String name = a == 0 ? "Ring" : "Tree";
            assertEquals(args(mpi, "-x", "JAVA_OPTS=-Dnccl.algo=" + name, perfScript, algo, "-J", out.resolve("java-" + name + ".json")),
                    masked(mpiruns.get(2 + a).args(), port, "MASTER_PORT=PORT"));
            Call c = javas.get(2 + 2 * a);
            assertEquals(perf(bundle + "/lib/*", List.of("-Dnccl.algo=" + name),
                    args(algo, "-J", out.resolve("java-" + name + ".json")).toArray(new String[0])), c.args());
        }
        assertEquals(args(mpi, x("NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET"), out.resolve("hostid-rank.sh")),
                masked(mpiruns.get(4).args(), port, "MASTER_PORT=PORT"));
        for (int k = 0; k < 2; k++) {
            Call c = javas.get(6 + k);
            assertEquals(perf(bundle + "/lib/*", JAVA_OPTS, "--ops", "all", "-b", "1K", "-e", "1M", "-f", "32", "-n", "5", "-w",
                    "1", "-c", "1"), c.args());
            assertEquals("simhost" + k, c.env("NCCL_HOSTID"));
            assertEquals("INFO", c.env("NCCL_DEBUG"));
            assertEquals("INIT,NET", c.env("NCCL_DEBUG_SUBSYS"));
        }
        List<List<String>> examples = List.of(List.of("AllReduce"), List.of("DdpSimple"), List.of("ZeroShards"),
                List.of("DdpTraining", "--steps", "10"));
        for (int e = 0; e < 4; e++) {
            assertEquals(args("120", bundle.resolve("nccl4j-run"), "-np", "2", examples.get(e)),
                    r.of("timeout").get(5 + e).args());
            Call c = javas.get(8 + e);
            assertEquals(java.toString(), c.exe());
            assertEquals(launcher(classpath(bundle), args("-np", "2", examples.get(e)).toArray(new String[0])), c.args());
        }
        assertEquals(List.of("c-all-1-1: exit 0", "java-all-1-1: exit 0", "java-Ring: exit 0", "java-Tree: exit 0",
                "hostid: exit 0", "ex-AllReduce: exit 0", "ex-DdpSimple: exit 0", "ex-ZeroShards: exit 0",
                "ex-DdpTraining: exit 0"), r.outLines());
    }

    @Test
    void scaleRunSmallSizesAndAFailure() throws Exception {
        Path out = base.resolve("scale");
        SandboxOutcome r = box.run(root.resolve("scripts/bench/scale-run.sh"), job("OUT_DIR", out.toString(), "PHASES", "2", "REPEATS", "1",
                "NP", "3", "FAKE_JAVA_STATUS", "4", "RUN_TIMEOUT", "9"), bundle.toString());
        assertEquals(1, r.status(), r.toString());
        assertEquals(List.of("timeout", "mpirun", "nccl_perf_baseline", "nccl_perf_baseline", "nccl_perf_baseline",
                "timeout", "mpirun", "java", "java", "java"), r.tools(), r.toString());
        assertEquals("9", r.of("timeout").get(1).args().get(0));
        List<String> small = List.of("all_reduce_perf", "-b", "8", "-e", "64K", "-f", "2", "-n", "1000", "-w", "1000", "-c", "0");
        assertEquals(args("--allow-run-as-root", "--bind-to", "none", "-np", "3", x("NCCL_NVLS_ENABLE", "LD_LIBRARY_PATH",
                "NCCL4J_BUNDLE", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=PORT"), root.resolve("scripts/nccl4j-perf"), small, "-J",
                out.resolve("java-small-1.json")), masked(r.of("mpirun").get(1).args(), "MASTER_PORT=298\\d\\d", "MASTER_PORT=PORT"));
        assertEquals(List.of("c-small-1: exit 0", "java-small-1: exit 4"), r.outLines());
    }

    // ---------------------------------------------------------------- ddp-compare.sh

    @Test
    void ddpCompareRunsNccl4jUnderMpirunAndAloneThenPyTorchAndPrintsTheTable() throws Exception {
        Path results = base.resolve("ddp");
        SandboxOutcome r = box.run(root.resolve("scripts/bench/ddp-compare.sh"), job("RESULTS_DIR", results.toString(), "STEPS", "5",
                "MASTER_PORT", "29555", "FAKE_JAVA_OUT",
                "RESULT impl=nccl4j mode=ddp median_ms=6.4 hidden_fraction=0.8 loss_first=1.5 loss_last=0.9",
                "FAKE_PYTHON_OUT", "RESULT impl=torch mode=ddp median_ms=6.7 hidden_fraction=na loss_first=1.5 loss_last=0.9"
                        + " torch=2.11"));
        assertEquals(0, r.status(), r.toString());
        assertEquals(List.of("python3", "nvidia-smi", "nvidia-smi", "timeout", "mpirun", "java", "java", "timeout", "java",
                "timeout", "python3", "timeout", "python3"), r.tools(), r.toString());
        assertEquals(List.of("-c", "import torch"), r.of("python3").get(0).args());
        assertEquals(List.of("--query-gpu=name", "--format=csv,noheader"), r.of("nvidia-smi").get(1).args());
        Path java = bundle.resolve("jre/bin/java");
        String cp = classpath(bundle);
        Path rankScript = results.resolve("nccl4j-rank.sh");
        List<String> mpirun = args("--allow-run-as-root", "--bind-to", "none", "-np", "2",
                x("MASTER_ADDR=127.0.0.1", "MASTER_PORT=29555", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "JAVA_OPTS",
                        "NCCL4J_TEST_VAR", "NCCL_DEBUG"), rankScript);
        assertEquals(args("300", "mpirun", mpirun), r.of("timeout").get(0).args());
        assertEquals(mpirun, r.first("mpirun").args());
        assertLd("/opt/ld", r.first("mpirun"));
        List<String> common = List.of("--steps", "5", "--seed", "1234");
        for (int k = 0; k < 2; k++) {
            Call c = r.of("java").get(k);
            assertEquals(java.toString(), c.exe());
            assertEquals(args(JAVA_OPTS, "-cp", cp, "org.nccl4j.examples.DdpTraining", common, "--bucket-cap-mb", "25",
                    "--trace", results.resolve("trace_nccl4j_ddp_rank{rank}.json")), c.args());
            assertEquals("29555", c.env("MASTER_PORT"));
            assertLd("/opt/ld", c);
        }
        Call single = r.of("java").get(2);
        assertEquals(args(JAVA_OPTS, "-cp", cp, "org.nccl4j.examples.DdpTraining", common, "--no-comm", "--trace",
                results.resolve("trace_nccl4j_single.json")), single.args());
        assertLd("/opt/ld", single);
        Path py = root.resolve("scripts/bench/ddp_compare.py");
        Call torchDdp = r.of("python3").get(1);
        assertEquals(bin.resolve("python3").toString(), torchDdp.exe());
        assertEquals(args("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", py, common,
                "--bucket-cap-mb", "25"), torchDdp.args());
        assertEquals("/opt/ld", torchDdp.env("LD_LIBRARY_PATH"));   // PyTorch keeps its own CUDA libraries
        assertEquals(args(py, common, "--no-ddp"), r.of("python3").get(2).args());
        assertEquals(args("300", "python3", py, common, "--no-ddp"), r.of("timeout").get(3).args());
        assertTrue(r.out().contains("## DDP step time: nccl4j vs PyTorch 2.11"), r.out());
        assertTrue(r.out().contains(", 2 x Fake GPU; 3 x Linear(4000,4000)"), r.out());
        assertTrue(r.out().contains("| nccl4j | DDP | 2 | 6.4 | 100.0 % | 0.8 | 1.5 / 0.9 |"), r.out());
        assertTrue(r.out().contains("| PyTorch | single GPU | 1 | 6.7 | 100.0 % | n/a | 1.5 / 0.9 |"), r.out());
        assertTrue(r.out().contains("DDP step time, nccl4j / PyTorch: 0.955"), r.out());
        assertTrue(Files.readString(results.resolve("ddp-compare.md")).contains("| nccl4j | single GPU | 1 | 6.4 |"));
        assertEquals("{\n  \"ranks\": 2,\n  \"ddp_step_ms_2gpu\": 6.4,\n  \"ddp_compute_only_ms\": 6.4,\n"
                + "  \"torch_ddp_step_ms_2gpu\": 6.7,\n  \"torch_compute_only_ms\": 6.7,\n  \"ddp_args\": \"\"\n}\n",
                Files.readString(results.resolve("ddp-compare.json")));
    }

    @Test
    void ddpCompareGivesDdpArgsToTheNccl4jDdpRunOnlyAndAFailedRunIsNullInTheJson() throws Exception {
        Path results = base.resolve("ddp-args");
        SandboxOutcome r = box.run(root.resolve("scripts/bench/ddp-compare.sh"), job("RESULTS_DIR", results.toString(), "STEPS", "5",
                "MASTER_PORT", "29556", "NP", "2", "DDP_ARGS", "--symmetric  --overlap-optimizer", "FAKE_JAVA_OUT",
                "RESULT impl=nccl4j mode=ddp median_ms=5.97 hidden_fraction=0.7 loss_first=1.5 loss_last=0.9"));
        assertEquals(1, r.status(), "PyTorch printed no RESULT line: a failed run\n" + r);
        String rank = Files.readString(results.resolve("nccl4j-rank.sh"));
        assertTrue(rank.contains(" --bucket-cap-mb 25 --trace " + results.resolve("trace_nccl4j_ddp_rank\\{rank\\}.json")
                + " --symmetric --overlap-optimizer\n"), rank);
        Call single = r.of("java").get(2);
        assertTrue(!single.args().contains("--symmetric"), "the compute-only run takes none: " + single.args());
        assertTrue(r.out().contains("nccl4j's DDP run with --symmetric --overlap-optimizer."), r.out());
        assertEquals("{\n  \"ranks\": 2,\n  \"ddp_step_ms_2gpu\": 5.97,\n  \"ddp_compute_only_ms\": 5.97,\n"
                + "  \"torch_ddp_step_ms_2gpu\": null,\n  \"torch_compute_only_ms\": null,\n"
                + "  \"ddp_args\": \"--symmetric --overlap-optimizer\"\n}\n", Files.readString(results.resolve("ddp-compare.json")));
    }

    @Test
    void ddpCompareNeedsTheBundleAndEnoughGpus() throws Exception {
        SandboxOutcome r = box.run(root.resolve("scripts/bench/ddp-compare.sh"), job("RESULTS_DIR", base.resolve("ddp").toString(),
                "FAKE_GPUS", "1", "PYTHON", bin.resolve("python3").toString()));
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().contains("ddp-compare: 2 GPUs needed, nvidia-smi lists 1"), r.err());
        assertFalse(r.tools().contains("mpirun"));

        r = box.run(root.resolve("scripts/bench/ddp-compare.sh"), job(), base.resolve("nothing").toString());
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().contains("ddp-compare: no " + base.resolve("nothing") + "/jre/bin/java (run scripts/gpu-bundle.sh)"),
                r.err());
    }

    // ---------------------------------------------------------------- perf-compare.sh

    @Test
    void perfTimelineWithoutNsysFallsBackToPerOperationEvents() throws Exception {
        Path out = base.resolve("timeline");
        SandboxOutcome r = box.run(root.resolve("scripts/bench/perf-timeline.sh"), job("PATH", bin + ":/usr/bin:/bin", "OUT", out.toString()),
                bundle.toString());
        assertEquals(0, r.status(), r.toString());
        assertTrue(r.out().contains("perf-timeline: no nsys found (PATH, /usr/local/cuda/bin, /usr/local/cuda/nsight-systems-*, "
                + "/opt/nvidia/nsight-systems), no CUPTI kernel tracer (scripts/bench/native/build/libkernel_trace.so, which "
                + "scripts/bench/native/build.sh builds where CUPTI is): per-operation events instead"), r.out());
        List<Call> mpiruns = r.of("mpirun");
        assertEquals(4, mpiruns.size(), r.toString());
        String[] sides = {"c", "java", "c", "java"};
        for (int i = 0; i < 4; i++) {
            List<String> a = mpiruns.get(i).args();
            String json = out.resolve(sides[i] + "-op-times-" + (i / 2 + 1) + ".json").toString();
            assertTrue(a.containsAll(List.of("--ops", "all_reduce", "-b", "64M", "-e", "64M", "-n", "100", "--op_times", "1",
                    "-J", json)), a.toString());
            assertTrue(String.join(" ", a).contains(sides[i].equals("c") ? "scripts/bench/native/build/nccl_perf_baseline"
                    : "scripts/nccl4j-perf"), a.toString());
        }
        List<Call> reports = r.of("python3");
        assertEquals(2, reports.size(), r.toString());
        assertEquals(List.of(root.resolve("scripts/bench/timeline_report.py").toString(), "--op-times",
                out.resolve("c-op-times-1.json").toString(), out.resolve("java-op-times-1.json").toString()),
                reports.get(0).args());
    }

    /** perf-timeline.sh's mpirun runs: 4, alternating C and Java, per-operation events (the fallback of the fallback). */
    private void assertOpTimes(SandboxOutcome r, Path out) {
        List<Call> mpiruns = r.of("mpirun");
        assertEquals(4, mpiruns.size(), r.toString());
        for (int i = 0; i < 4; i++) {
            List<String> a = mpiruns.get(i).args();
            String side = i % 2 == 0 ? "c" : "java";
            assertTrue(a.containsAll(List.of("--op_times", "1", "-J", out.resolve(side + "-op-times-" + (i / 2 + 1) + ".json")
                    .toString())), a.toString());
            assertFalse(String.join(" ", a).contains("CUDA_INJECTION64_PATH"), a.toString());
        }
        assertEquals("--op-times", r.first("python3").args().get(1), r.toString());
    }

    @Test
    void perfTimelineWithoutNsysUsesTheCuptiTracerWhenThereIsOne() throws Exception {
        Path out = base.resolve("timeline");
        Path tracer = Files.createFile(Files.createDirectories(base.resolve("cupti")).resolve("libkernel_trace.so"));
        // a trace of an earlier run, which must not reach the report
        Path stale = Files.createFile(Files.createDirectories(out.resolve("c-trace")).resolve("trace-1.csv"));
        SandboxOutcome r = box.run(root.resolve("scripts/bench/perf-timeline.sh"), job("PATH", bin + ":/usr/bin:/bin", "OUT", out.toString(),
                "TRACER", tracer.toString(), "FAKE_PYTHON_OUT", "the report"), bundle.toString());
        assertEquals(0, r.status(), r.toString());
        assertTrue(r.out().contains("perf-timeline: no nsys found (PATH, /usr/local/cuda/bin, /usr/local/cuda/nsight-systems-*, "
                + "/opt/nvidia/nsight-systems): the CUPTI kernel tracer " + tracer + " instead"), r.out());
        assertFalse(Files.exists(stale), "the stale trace is left");
        assertTrue(Files.isDirectory(out.resolve("java-trace")));
        List<Call> mpiruns = r.of("mpirun");
        assertEquals(4, mpiruns.size(), r.toString());
        String[] sides = {"c", "java", "c", "java"};
        for (int i = 0; i < 4; i++) {
            List<String> a = mpiruns.get(i).args();
            List<String> inject = x("CUDA_INJECTION64_PATH=" + tracer, "KERNEL_TRACE_DIR=" + out.resolve(sides[i] + "-trace"),
                    "KERNEL_TRACE_API=1");
            // after the common -x options, right before the program
            String program = sides[i].equals("c") ? root.resolve("scripts/bench/native/build/nccl_perf_baseline").toString()
                    : root.resolve("scripts/nccl4j-perf").toString();
            int p = a.indexOf(program);
            assertEquals(inject, a.subList(p - 6, p), a.toString());
            assertEquals(List.of("--ops", "all_reduce", "-b", "64M", "-e", "64M", "-n", "100", "-w", "5", "-c", "0"),
                    a.subList(p + 1, a.size()), a.toString());
            assertTrue(a.contains("MASTER_PORT=" + (29641 + i)), a.toString());
        }
        // mpirun hands the variables to every rank: here, the C baseline's two
        List<Call> c = r.of("nccl_perf_baseline");
        assertEquals(4, c.size(), r.toString());
        for (Call k : c) {
            assertEquals(tracer.toString(), k.env("CUDA_INJECTION64_PATH"));
            assertEquals(out.resolve("c-trace").toString(), k.env("KERNEL_TRACE_DIR"));
            assertEquals("1", k.env("KERNEL_TRACE_API"));
        }
        List<Call> reports = r.of("python3");
        assertEquals(1, reports.size(), r.toString());
        assertEquals(List.of(root.resolve("scripts/bench/timeline_report.py").toString(), "--cupti", out.resolve("c-trace").toString(),
                out.resolve("java-trace").toString(), "--api"), reports.get(0).args());
        assertEquals("the report\n", Files.readString(out.resolve("timeline.md")));
        assertFalse(r.tools().contains("nsys"), r.toString());
    }

    @Test
    void perfTimelineFindsTheTracerThatBuildShBuiltAndNsysComesFirst() throws Exception {
        Path out = base.resolve("timeline");
        Path built = Files.createFile(root.resolve("scripts/bench/native/build/libkernel_trace.so"));
        SandboxOutcome r = box.run(root.resolve("scripts/bench/perf-timeline.sh"), job("PATH", bin + ":/usr/bin:/bin", "OUT", out.toString(),
                "NSYS", "none"), bundle.toString());
        assertEquals(0, r.status(), r.toString());
        assertTrue(r.out().contains("perf-timeline: NSYS=none: the CUPTI kernel tracer " + built + " instead"), r.out());
        assertEquals(4, r.of("mpirun").size(), r.toString());
        assertTrue(r.of("mpirun").get(0).args().contains("CUDA_INJECTION64_PATH=" + built), r.toString());
        assertEquals("--cupti", r.first("python3").args().get(1));

        // with nsys, the tracer is not used
        fake(bin.resolve("nsys"));
        r = box.run(root.resolve("scripts/bench/perf-timeline.sh"), job("PATH", bin + ":/usr/bin:/bin", "OUT", out.toString()),
                bundle.toString());
        assertEquals(0, r.status(), r.toString());
        assertEquals(2, r.of("mpirun").size(), r.toString());
        for (Call m : r.of("mpirun")) {
            assertFalse(String.join(" ", m.args()).contains("CUDA_INJECTION64_PATH"), m.args().toString());
            assertTrue(m.args().contains(bin.resolve("nsys").toString()), m.args().toString());
        }
        assertEquals(List.of(root.resolve("scripts/bench/timeline_report.py").toString(), out.toString()), r.first("python3").args());
    }

    @Test
    void perfTimelineWithTracerNoneFallsBackToPerOperationEvents() throws Exception {
        Path out = base.resolve("timeline");
        Files.createFile(root.resolve("scripts/bench/native/build/libkernel_trace.so"));
        SandboxOutcome r = box.run(root.resolve("scripts/bench/perf-timeline.sh"), job("PATH", bin + ":/usr/bin:/bin", "OUT", out.toString(),
                "TRACER", "none"), bundle.toString());
        assertEquals(0, r.status(), r.toString());
        assertTrue(r.out().contains("perf-timeline: no nsys found (PATH, /usr/local/cuda/bin, /usr/local/cuda/nsight-systems-*, "
                + "/opt/nvidia/nsight-systems), TRACER=none: per-operation events instead"), r.out());
        assertOpTimes(r, out);

        r = box.run(root.resolve("scripts/bench/perf-timeline.sh"), job("PATH", bin + ":/usr/bin:/bin", "OUT", out.toString(),
                "NSYS", "none", "TRACER", "none"), bundle.toString());
        assertEquals(0, r.status(), r.toString());
        assertTrue(r.out().contains("perf-timeline: NSYS=none, TRACER=none: per-operation events instead"), r.out());
        assertOpTimes(r, out);
    }

    @Test
    void perfTimelineRefusesNsysOrTracerPathsThatAreNotThere() throws Exception {
        Path notExecutable = Files.createFile(base.resolve("nsys"));
        SandboxOutcome r = box.run(root.resolve("scripts/bench/perf-timeline.sh"), job("PATH", bin + ":/usr/bin:/bin", "OUT",
                base.resolve("timeline").toString(), "NSYS", notExecutable.toString()), bundle.toString());
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().contains("perf-timeline: NSYS=" + notExecutable + " is not an executable (a path to nsys, or none)"),
                r.err());
        assertEquals(List.of(), r.of("mpirun"));

        Path missing = base.resolve("no/libkernel_trace.so");
        r = box.run(root.resolve("scripts/bench/perf-timeline.sh"), job("PATH", bin + ":/usr/bin:/bin", "OUT",
                base.resolve("timeline").toString(), "TRACER", missing.toString()), bundle.toString());
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().contains("perf-timeline: TRACER=" + missing + " is not a file (a path to libkernel_trace.so, or none)"),
                r.err());
        assertEquals(List.of(), r.of("mpirun"));
    }

    @Test
    void perfCompareHelpPrintsTheHeader() throws Exception {
        SandboxOutcome r = box.run(root.resolve("scripts/bench/perf-compare.sh"), job(), "--help");
        assertEquals(0, r.status(), r.toString());
        List<String> lines = r.outLines();
        assertEquals("# One command on a GPU machine: nccl4j against C, side by side, and a report.", lines.get(0));
        assertTrue(lines.stream().allMatch(l -> l.startsWith("#")), r.out());
        assertTrue(r.out().contains("#   --bundle    a bundle made by scripts/gpu-bundle.sh"), r.out());
        // the whole header comment, down to its last line
        assertTrue(lines.get(lines.size() - 1).startsWith("# On 2 H200s the whole takes about"), r.out());
        assertTrue(lines.get(lines.size() - 1).endsWith("bounded by RUN_TIMEOUT seconds (default 240)."), r.out());
        assertEquals(List.of(), r.tools());

        r = box.run(root.resolve("scripts/bench/perf-compare.sh"), job(), "--bogus");
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().contains("perf-compare: unknown argument --bogus (--help)"), r.err());
        for (String[] bad : new String[][] {{"--repeats", "0"}, {"--small-repeats", "x"}, {"--large-repeats", "-3"}}) {
            r = box.run(root.resolve("scripts/bench/perf-compare.sh"), job(), bad);
            assertEquals(2, r.status(), r.toString());
            assertTrue(r.err().contains("perf-compare: " + bad[0] + " '" + bad[1] + "' must be a whole number >= 1"),
                    r.err());
            assertEquals(List.of(), r.of("mpirun"), "nothing ran");
        }
        Path nothing = base.resolve("no-bundle");
        r = box.run(root.resolve("scripts/bench/perf-compare.sh"), job(), "--bundle", nothing.toString());
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().contains("perf-compare: no bundle at " + nothing + " (scripts/gpu-bundle.sh)"), r.err());
        assertEquals(List.of(), r.of("mpirun"), "nothing ran");
    }

    @Test
    void perfCompareRunsCAndJavaUnderMpirunJavaInOneProcessTorchThePlotAndTheReport() throws Exception {
        Path out = base.resolve("perf-out");
        Path docs = base.resolve("docs");
        Path baseline = root.resolve("scripts/bench/native/build/nccl_perf_baseline");
        SandboxOutcome r = box.run(root.resolve("scripts/bench/perf-compare.sh"), job("NCCL_COMM_ID", "10.0.0.1:1"), "--bundle", bundle.toString(), "--baseline", baseline.toString(), "--np", "2",
                "--out", out.toString(), "--repeats", "1", "--docs", docs.toString());
        assertEquals(0, r.status(), r.toString());
        List<Call> mpiruns = r.of("mpirun");
        assertEquals(12, mpiruns.size(), r.toString());
        for (Call c : r.calls()) {
            assertEquals(null, c.env("NCCL_COMM_ID"), "NCCL_COMM_ID reached " + c.tool() + " " + c.args());
        }
        List<String> init = List.of("all_reduce_perf", "-b", "8", "-e", "8", "-n", "10", "-w", "2", "-c", "0",
                "--init_repeats", "10");
        List<String> fwd = x("CUDA_VISIBLE_DEVICES", "JAVA_OPTS", "LD_LIBRARY_PATH", "NCCL4J_BUNDLE", "NCCL4J_TEST_VAR",
                "NCCL_DEBUG", "NVSHMEM_DISABLE", "TORCH_NCCL_TRACE");
        assertEquals(args("--allow-run-as-root", "--bind-to", "none", "-np", "2", fwd, x("MASTER_ADDR=127.0.0.1",
                "MASTER_PORT=29601"), out.resolve("raw/c-init-1.rank.sh")), mpiruns.get(0).args());
        assertEquals(args("240", "mpirun"), r.of("timeout").get(0).args().subList(0, 2));
        assertEquals("#!/usr/bin/env bash\nexec " + baseline + " " + String.join(" ", init) + " -J "
                + out.resolve("json/c-init-1.json") + "\n", Files.readString(out.resolve("raw/c-init-1.rank.sh")));
        Call c0 = r.first("nccl_perf_baseline");
        assertEquals(args(init, "-J", out.resolve("json/c-init-1.json")), c0.args());
        assertLd("/opt/ld", c0);
        assertEquals(out.resolve("raw/java-np-init-1.rank.sh").toString(), mpiruns.get(1).lastArg());
        List<Call> javas = r.of("java");
        Path java = bundle.resolve("jre/bin/java");
        for (int k = 0; k < 2; k++) {
            Call c = javas.get(k);
            assertEquals(java.toString(), c.exe());
            assertEquals(perf(bundle + "/lib/*", JAVA_OPTS, args(init, "--jit_quiet_ms", "0", "-J",
                    out.resolve("json/java-np-init-1.json")).toArray(new String[0])), c.args());
            assertEquals(bundle.toString(), c.env("NCCL4J_BUNDLE"));
            assertEquals("29602", c.env("MASTER_PORT"));
            assertLd("/opt/ld", c);
        }
        Call g = javas.get(2);   // nccl4j-perf -g N, one process
        assertEquals(null, g.env("OMPI_COMM_WORLD_RANK"));
        assertEquals(perf(bundle + "/lib/*", JAVA_OPTS, args(init, "--jit_quiet_ms", "0", "-g", "2", "-J",
                out.resolve("json/java-g-init-1.json")).toArray(new String[0])), g.args());
        assertEquals(args("240", root.resolve("scripts/nccl4j-perf"), init, "--jit_quiet_ms", "0", "-g", "2", "-J",
                out.resolve("json/java-g-init-1.json")), r.of("timeout").get(2).args());
        // the phases in order (the data check right after init, so that a run cut short has it), and nccl4j-perf's
        // JIT wait left on only in the small runs, whose first timed loops are host-bound
        List<String> order = new ArrayList<>();
        for (Call t : r.of("timeout")) {
            String last = t.lastArg();
            String command;   // what the run executes: the rank script's line under mpirun, else the arguments
            String name;
            if (last.endsWith(".rank.sh")) {
                name = last.substring(last.lastIndexOf('/') + 1).replace(".rank.sh", "");
                command = Files.readString(Path.of(last));
            } else {
                name = last.substring(last.lastIndexOf('/') + 1).replace(".json", "");
                command = String.join(" ", t.args());
            }
            if (name.startsWith("torch")) {
                continue;
            }
            order.add(name);
            boolean isJava = command.contains("nccl4j-perf");
            assertEquals(isJava, name.startsWith("java"), name);
            assertEquals(isJava && !name.contains("-small-"), command.contains(" --jit_quiet_ms 0 "), name + ": " + command);
        }
        assertEquals(List.of("c-init-1", "java-np-init-1", "java-g-init-1", "c-check", "java-np-check", "java-g-check",
                "c-eager-small-1", "java-np-eager-small-1", "java-g-eager-small-1", "c-graph-small-1",
                "java-np-graph-small-1", "java-g-graph-small-1", "c-eager-curve", "java-np-eager-curve",
                "java-g-eager-curve", "c-eager-large-1", "java-np-eager-large-1", "java-g-eager-large-1"),
                order.subList(0, 18));
        assertEquals(7, javas.stream().filter(c -> c.env("OMPI_COMM_WORLD_RANK") == null).count());

        String date = LocalDate.now(ZoneOffset.UTC).toString();
        Call plot = javas.get(javas.size() - 1);
        assertEquals(java.toString(), plot.exe());
        assertEquals(args("-Djava.awt.headless=true", "-cp", bundle + "/lib/*", "org.nccl4j.tools.perf.Plot",
                out.resolve(date + "-benchmark-all_reduce-busbw.png"), "--title", "all_reduce bus bandwidth, 2 ranks: C vs nccl4j (eager)",
                "C mpirun=" + out.resolve("json/c-eager-curve.json"), "nccl4j mpirun=" + out.resolve("json/java-np-eager-curve.json"),
                "nccl4j -g 2=" + out.resolve("json/java-g-eager-curve.json")), plot.args());

        List<Call> py = r.of("python3");
        assertEquals(List.of("-c", "import torch"), py.get(0).args());
        assertEquals(args("-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29662",
                root.resolve("scripts/bench/torch_allreduce.py"), "--sizes",
                "8,16,32,64,128,256,512,1024,2048,4096,8192,16384,32768,65536,67108864,268435456,1073741824", "--iters", "1000",
                "--warmup", "100", "--large-iters", "20", "--repeats", "1", "-J", out.resolve("json/torch-eager.json")),
                py.get(1).args());
        String host = new String(new ProcessBuilder("hostname").start().getInputStream().readAllBytes(), UTF_8).strip();
        assertEquals(args(root.resolve("scripts/bench/perf_report.py"), "--json-dir", out.resolve("json"), "--docs", docs, "--date", date,
                "--machine", "2 x Fake GPU (" + host + ")", "--png", date + "-benchmark-all_reduce-busbw.png", "--failures", "0"),
                py.get(2).args());
        assertTrue(r.out().contains("== report: " + docs + "/" + date + "-benchmark.md"), r.out());
    }

    @Test
    void perfCompareLeavesOutAllowRunAsRootForOtherUsers() throws Exception {
        Path out = base.resolve("perf-out");
        SandboxOutcome r = box.run(root.resolve("scripts/bench/perf-compare.sh"), job("FAKE_UID", "1000", "BIND", "numa"), "--bundle", bundle.toString(), "--baseline",
                root.resolve("scripts/bench/native/build/nccl_perf_baseline").toString(), "--out", out.toString(), "--repeats", "1",
                "--docs", base.resolve("docs").toString());
        assertEquals(0, r.status(), r.toString());
        assertEquals("-L", r.first("nvidia-smi").args().get(0));
        for (Call c : r.of("mpirun")) {
            assertEquals(List.of("--bind-to", "numa", "-np", "2", "-x", "CUDA_VISIBLE_DEVICES"), c.args().subList(0, 6));
        }
    }
}
