package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.nccl4j.tools.cli.Tools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher, run as a child JVM (as scripts/nccl4j-run runs it) with {@code sh} commands as ranks. Ranks
 * write their PIDs to files so that the tests can check that nothing outlives the launcher.
 */
@Timeout(60)
class LauncherTest {
    /** Variables of other launchers, removed from the launcher's environment unless a test sets them. */
    private static final String[] FOREIGN = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
        "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "TORCHELASTIC_RUN_ID", "NCCL4J_RUN_ID", "JAVA_OPTS", "RANK",
        "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NCCL4J_JOB_SECRET", "NCCL4J_JOB_SECRET_FILE", "PET_NODE_RANK",
        "PET_NNODES", "PET_NPROC_PER_NODE", "JOB_COMPLETION_INDEX"};
    /** Longer than any test: a rank still sleeping at the end was not stopped. */
    private static final String SLEEP = "30";

    @TempDir
    Path dir;

    /** What a finished launcher did. */
    private record Outcome(int status, String out, String err, long millis) {
        List<String> outLines() {
            return out.lines().collect(Collectors.toList());
        }
    }

    private static final String JAVA = Path.of(System.getProperty("java.home"), "bin", "java").toString();

    private ProcessBuilder launcher(Map<String, String> env, String... args) {
        List<String> cmd = new ArrayList<>(List.of(JAVA, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx64m",
                "-cp", System.getProperty("java.class.path"), Launcher.class.getName()));
        cmd.addAll(Arrays.asList(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        for (String v : FOREIGN) {
            pb.environment().remove(v);
        }
        // no GPU as far as the launcher can tell, on any machine, unless a test says otherwise: -np is not checked
        pb.environment().put("CUDA_VISIBLE_DEVICES", "");
        pb.environment().putAll(env);
        pb.redirectOutput(dir.resolve("launcher.out").toFile());
        pb.redirectError(dir.resolve("launcher.err").toFile());
        return pb;
    }

    private Outcome finish(Process p, long started) throws Exception {
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("the launcher did not finish in 30 s");
        }
        return new Outcome(p.exitValue(), Files.readString(dir.resolve("launcher.out")),
                Files.readString(dir.resolve("launcher.err")), (System.nanoTime() - started) / 1_000_000);
    }

    private Outcome launch(Map<String, String> env, String... args) throws Exception {
        long t0 = System.nanoTime();
        return finish(launcher(env, args).start(), t0);
    }

    /** {@code nccl4j-run -np n --cmd -- sh -c script}. */
    private Outcome sh(int n, String script, String... options) throws Exception {
        return launch(Map.of(), shArgs(n, script, options));
    }

    private static String[] shArgs(int n, String script, String... options) {
        List<String> a = new ArrayList<>(List.of("-np", Integer.toString(n)));
        a.addAll(Arrays.asList(options));
        a.addAll(List.of("--cmd", "--", "sh", "-c", script));
        return a.toArray(new String[0]);
    }

    /** Shell that writes this shell's PID to {@code <name>.pid}, atomically. */
    private String writePid(String name) {
        return "echo $$ > " + dir + "/" + name + ".tmp && mv " + dir + "/" + name + ".tmp " + dir + "/" + name + ".pid";
    }

    /** Shell that starts a background sleep, writes its PID to {@code <name>.pid} and waits for it. */
    private String sleepInChild(String name) {
        return "sleep " + SLEEP + " & echo $! > " + dir + "/" + name + ".tmp && mv " + dir + "/" + name + ".tmp " + dir
                + "/" + name + ".pid; wait";
    }

    /** Shell that waits until all {@code names}'s PID files exist. */
    private String awaitPids(String... names) {
        String cond = Arrays.stream(names).map(n -> "[ ! -e " + dir + "/" + n + ".pid ]").collect(Collectors.joining(" || "));
        return "while " + cond + "; do sleep 0.02; done";
    }

    private long pid(String name) throws IOException {
        return Long.parseLong(Files.readString(dir.resolve(name + ".pid")).strip());
    }

    /** Alive and not a zombie (an orphan's zombie waits for PID 1, which in some containers reaps slowly). */
    private static boolean alive(long pid) {
        if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            return false;
        }
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            char state = stat.charAt(stat.lastIndexOf(')') + 2);
            return state != 'Z' && state != 'X';
        } catch (IOException e) {
            return false;
        }
    }

    private void awaitFiles(String... names) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        for (String n : names) {
            while (!Files.exists(dir.resolve(n + ".pid"))) {
                if (System.nanoTime() > deadline) {
                    fail("no " + n + ".pid after 20 s");
                }
                Thread.sleep(20);
            }
        }
    }

    private void assertGone(String... names) throws IOException {
        for (String n : names) {
            long p = pid(n);
            assertFalse(alive(p), n + " (pid " + p + ") is still alive");
        }
    }

    // ---------------------------------------------------------------- environment and output

    @Test
    void everyRankGetsItsVariablesAndTheLaunchersEnvironment() throws Exception {
        Outcome r = launch(Map.of("NCCL_NVLS_ENABLE", "0", "NCCL4J_TEST_INHERITED", "one two"), shArgs(3,
                "echo \"RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE"
                        + " MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
                        + " INHERITED=$NCCL4J_TEST_INHERITED ELASTIC=${TORCHELASTIC_RUN_ID:-unset}"
                        + " RUN_ID_SET=${NCCL4J_RUN_ID:+yes}\""));
        assertEquals(0, r.status(), r.err());
        Pattern line = Pattern.compile("\\[(\\d)] RANK=(\\d) WORLD_SIZE=3 LOCAL_RANK=(\\d) LOCAL_WORLD_SIZE=3"
                + " MASTER_ADDR=127\\.0\\.0\\.1 MASTER_PORT=(\\d+) NCCL_NVLS_ENABLE=0 INHERITED=one two"
                + " ELASTIC=unset RUN_ID_SET=yes");
        Set<Integer> ranks = new HashSet<>();
        Set<String> ports = new HashSet<>();
        for (String l : r.outLines()) {
            Matcher m = line.matcher(l);
            assertTrue(m.matches(), "unexpected line: " + l);
            assertEquals(m.group(1), m.group(2), "prefix and RANK differ: " + l);
            assertEquals(m.group(2), m.group(3), "LOCAL_RANK differs from RANK on one machine: " + l);
            ranks.add(Integer.parseInt(m.group(2)));
            ports.add(m.group(4));
        }
        assertEquals(Set.of(0, 1, 2), ranks);
        assertEquals(1, ports.size(), "every rank must get the same MASTER_PORT: " + ports);
        int port = Integer.parseInt(ports.iterator().next());
        assertTrue(port > 0 && port < 65536, "MASTER_PORT " + port);
    }

    /** Shell that writes the rank's NCCL4J_JOB_SECRET and NCCL4J_JOB_SECRET_FILE to files, not to its output. */
    private String secretToFiles() {
        return "printf %s \"${NCCL4J_JOB_SECRET:-unset}\" > " + dir + "/secret.$RANK; printf %s"
                + " \"${NCCL4J_JOB_SECRET_FILE:-unset}\" > " + dir + "/secretfile.$RANK; echo rank $RANK ran";
    }

    private String fileOf(String name) throws IOException {
        return Files.readString(dir.resolve(name));
    }

    @Test
    void everyRankGetsTheSameRandomSecretNeverPrinted() throws Exception {
        Outcome r = sh(3, secretToFiles());
        assertEquals(0, r.status(), r.err());
        String secret = fileOf("secret.0");
        assertTrue(secret.matches("[0-9a-f]{64}"), secret);
        assertEquals(secret, fileOf("secret.1"));
        assertEquals(secret, fileOf("secret.2"));
        assertEquals("unset", fileOf("secretfile.0"));
        assertFalse(r.out().contains(secret) || r.err().contains(secret), "the launcher printed the secret");
        Outcome again = sh(2, secretToFiles());
        assertEquals(0, again.status(), again.err());
        assertNotEquals(secret, fileOf("secret.0"), "a new secret per launch");
    }

    @Test
    void theUsersSecretIsPassedThroughAndNotReplaced() throws Exception {
        String mine = "my-own-secret-of-the-job-0123456789";
        Outcome r = launch(Map.of("NCCL4J_JOB_SECRET", mine), shArgs(2, secretToFiles()));
        assertEquals(0, r.status(), r.err());
        assertEquals(mine, fileOf("secret.0"));
        assertEquals(mine, fileOf("secret.1"));
        assertFalse(r.out().contains(mine) || r.err().contains(mine), "the launcher printed the secret");
        Path file = dir.resolve("job.secret");
        Files.writeString(file, "a-secret-in-a-file-0123456789");
        Outcome f = launch(Map.of("NCCL4J_JOB_SECRET_FILE", file.toString()), shArgs(2, secretToFiles()));
        assertEquals(0, f.status(), f.err());
        assertEquals("unset", fileOf("secret.0"), "the file is the user's choice: no secret beside it");
        assertEquals(file.toString(), fileOf("secretfile.1"));
    }

    @Test
    void secretForIsRandomUnlessTheUserSetOne() {
        assertNotEquals(Launcher.secretFor(Map.of()), Launcher.secretFor(Map.of()));
        assertEquals(null, Launcher.secretFor(Map.of("NCCL4J_JOB_SECRET", "x".repeat(32))));
        assertEquals(null, Launcher.secretFor(Map.of("NCCL4J_JOB_SECRET_FILE", "/run/secrets/job")));
        assertTrue(Launcher.secretFor(Map.of("NCCL4J_JOB_SECRET", " ")).matches("[0-9a-f]{64}"));
    }

    // ---------------------------------------------------------------- GPU sharing

    private static final String SHARE_LINE = "echo \"RANK=$RANK DEVICE=${NCCL4J_DEVICE:-unset} HOSTID=${NCCL_HOSTID:-unset}"
            + " IFNAME=${NCCL_SOCKET_IFNAME:-unset}\"";

    @Test
    void shareGpuPutsRankROnDeviceRModGWithItsOwnHostId() throws Exception {
        Outcome r = launch(Map.of("CUDA_VISIBLE_DEVICES", "0,1"), shArgs(5, SHARE_LINE, "--share-gpu"));
        assertEquals(0, r.status(), r.err());
        assertEquals(Set.of("[0] RANK=0 DEVICE=0 HOSTID=nccl4j-host0 IFNAME=lo",
                "[1] RANK=1 DEVICE=1 HOSTID=nccl4j-host1 IFNAME=lo", "[2] RANK=2 DEVICE=0 HOSTID=nccl4j-host2 IFNAME=lo",
                "[3] RANK=3 DEVICE=1 HOSTID=nccl4j-host3 IFNAME=lo", "[4] RANK=4 DEVICE=0 HOSTID=nccl4j-host4 IFNAME=lo"),
                new HashSet<>(r.outLines()));
        assertTrue(r.err().contains("nccl4j-run: 5 ranks share 2 GPUs (rank r on device r mod 2, NCCL_HOSTID="
                + "nccl4j-host<r>, NCCL_SOCKET_IFNAME=lo): for development and tests; ranks talk over sockets, not"
                + " NVLink"), r.err());
    }

    @Test
    void shareGpuKeepsWhatTheUserSetAndWarnsAboutACommonHostId() throws Exception {
        Outcome r = launch(Map.of("CUDA_VISIBLE_DEVICES", "0", "NCCL_HOSTID", "mine", "NCCL_SOCKET_IFNAME", "eth0"),
                shArgs(2, SHARE_LINE, "--share-gpu"));
        assertEquals(0, r.status(), r.err());
        assertEquals(Set.of("[0] RANK=0 DEVICE=0 HOSTID=mine IFNAME=eth0", "[1] RANK=1 DEVICE=0 HOSTID=mine IFNAME=eth0"),
                new HashSet<>(r.outLines()));
        assertTrue(r.err().contains("nccl4j-run: warning: NCCL_HOSTID=mine is set and kept for every rank: ranks"
                + " that share a GPU may collide (NCCL refuses two ranks of one host on one GPU); unset it to give each"
                + " rank its own"), r.err());
        r = launch(Map.of("CUDA_VISIBLE_DEVICES", "0", "NCCL4J_DEVICE", "3"), shArgs(2, SHARE_LINE, "--share-gpu"));
        assertEquals(Set.of("[0] RANK=0 DEVICE=3 HOSTID=nccl4j-host0 IFNAME=lo",
                "[1] RANK=1 DEVICE=3 HOSTID=nccl4j-host1 IFNAME=lo"), new HashSet<>(r.outLines()));
    }

    @Test
    void withoutShareGpuEachRankNeedsAGpuOfItsOwn() throws Exception {
        Outcome r = launch(Map.of("CUDA_VISIBLE_DEVICES", "0"), shArgs(2, SHARE_LINE));
        assertEquals(2, r.status());
        assertEquals("", r.out(), "no rank may start");
        assertEquals("nccl4j-run: -np 2 is more than the 1 GPU found (CUDA_VISIBLE_DEVICES=0): add --share-gpu to run"
                + " several ranks on one GPU (for development and tests), or use -np 1 or less", r.err().strip());
        // as many ranks as GPUs: no variable added
        r = launch(Map.of("CUDA_VISIBLE_DEVICES", "0,1"), shArgs(2, SHARE_LINE));
        assertEquals(0, r.status(), r.err());
        assertEquals(Set.of("[0] RANK=0 DEVICE=unset HOSTID=unset IFNAME=unset",
                "[1] RANK=1 DEVICE=unset HOSTID=unset IFNAME=unset"), new HashSet<>(r.outLines()));
        r = launch(Map.of("CUDA_VISIBLE_DEVICES", "0,1"), shArgs(2, SHARE_LINE, "--share-gpu"));
        assertEquals(0, r.status(), r.err());
        assertEquals(Set.of("[0] RANK=0 DEVICE=unset HOSTID=unset IFNAME=unset",
                "[1] RANK=1 DEVICE=unset HOSTID=unset IFNAME=unset"), new HashSet<>(r.outLines()));
        assertTrue(r.err().contains("nccl4j-run: --share-gpu: 2 ranks on 2 GPUs, one GPU each: nothing to share"),
                r.err());
    }

    @Test
    void shareGpuRefusesNoGpuAndMoreThan64RanksPerGpu() throws Exception {
        Outcome r = launch(Map.of(), shArgs(2, SHARE_LINE, "--share-gpu"));
        assertEquals(2, r.status());
        assertEquals("", r.out());
        assertEquals("nccl4j-run: --share-gpu needs at least one GPU, and none was found (CUDA_VISIBLE_DEVICES=): run"
                + " on a machine with an NVIDIA GPU and driver, or leave out --share-gpu", r.err().strip());
        r = launch(Map.of("CUDA_VISIBLE_DEVICES", "0"), shArgs(65, SHARE_LINE, "--share-gpu"));
        assertEquals(2, r.status());
        assertEquals("", r.out());
        assertEquals("nccl4j-run: -np 65 with --share-gpu puts 65 ranks on one GPU (1 GPU found); at most 64 ranks"
                + " share a GPU: use -np 64 or less", r.err().strip());
        r = launch(Map.of("CUDA_VISIBLE_DEVICES", "GPU-1234,MIG-5"), shArgs(129, SHARE_LINE, "--share-gpu"));
        assertEquals(2, r.status());
        assertTrue(r.err().contains("puts 65 ranks on one GPU (2 GPUs found); at most 64 ranks share a GPU: use -np"
                + " 128 or less"), r.err());
    }

    @Test
    void portOptionSetsMasterPort() throws Exception {
        Outcome r = sh(2, "echo $MASTER_PORT", "--port", "29517");
        assertEquals(0, r.status(), r.err());
        assertEquals(Set.of("[0] 29517", "[1] 29517"), new HashSet<>(r.outLines()));
    }

    @Test
    void stdoutAndStderrLinesArePrefixedWithTheRank() throws Exception {
        Outcome r = sh(2, "echo out $RANK; echo err $RANK >&2; printf 'two\\nlines\\n'; printf 'no newline'");
        assertEquals(0, r.status(), r.err());
        for (int k = 0; k < 2; k++) {
            String p = "[" + k + "] ";
            List<String> mine = r.outLines().stream().filter(l -> l.startsWith(p)).collect(Collectors.toList());
            assertEquals(List.of(p + "out " + k, p + "two", p + "lines", p + "no newline"), mine);
            assertTrue(r.err().lines().anyMatch((p + "err " + k)::equals), r.err());
        }
        assertEquals(8, r.outLines().size(), r.out());
        assertTrue(r.out().endsWith("\n"));
    }

    @Test
    void javaRanksRunTheExampleClassWithJavaOptsAndWinOverAnotherLaunchersVariables() throws Exception {
        // nccl4j-run inside an srun step: the ranks must still see RANK/WORLD_SIZE, not SLURM_PROCID
        Outcome r = launch(Map.of("JAVA_OPTS", "-Dprobe=yes -Xmx64m", "SLURM_PROCID", "5", "SLURM_NTASKS", "8"),
                "-np", "2", "org.nccl4j.tools.run.LaunchProbe", "a", "b");
        assertEquals(0, r.status(), r.out() + r.err());
        Set<String> got = new HashSet<>(r.outLines());
        String port = r.outLines().get(0).replaceAll(".*master 127\\.0\\.0\\.1:(\\d+),.*", "$1");
        for (int k = 0; k < 2; k++) {
            String expected = "[" + k + "] rank " + k + " of 2, local " + k + " of 2, device " + k + ", master 127.0.0.1:"
                    + port + ", source TORCHRUN, per rank true, probe yes, args a b";
            assertTrue(got.contains(expected), "expected " + expected + " in\n" + r.out());
        }
        assertTrue(r.err().contains("TORCHELASTIC_RUN_ID"), r.err());
    }

    @Test
    void insideAKubeflowPodTheRanksWinOverThePodsVariables() throws Exception {
        // nccl4j-run in node 1's pod of a TrainJob: PET_* describe the pod, RANK/WORLD_SIZE the ranks it starts
        Outcome r = launch(Map.of("PET_NODE_RANK", "1", "PET_NNODES", "2", "PET_NPROC_PER_NODE", "1",
                "JOB_COMPLETION_INDEX", "1"), "-np", "2", "org.nccl4j.tools.run.LaunchProbe");
        assertEquals(0, r.status(), r.out() + r.err());
        Set<String> got = new HashSet<>(r.outLines());
        String port = r.outLines().get(0).replaceAll(".*master 127\\.0\\.0\\.1:(\\d+),.*", "$1");
        for (int k = 0; k < 2; k++) {
            String expected = "[" + k + "] rank " + k + " of 2, local " + k + " of 2, device " + k + ", master 127.0.0.1:"
                    + port + ", source TORCHRUN, per rank true, probe null, args ";
            assertTrue(got.contains(expected), "expected " + expected + " in\n" + r.out());
        }
        assertTrue(r.err().contains("TORCHELASTIC_RUN_ID"), r.err());
    }

    // ---------------------------------------------------------------- failures

    @Test
    void aFailingRankStopsTheOthersAndIsNamed() throws Exception {
        String script = "if [ $RANK = 1 ]; then " + awaitPids("0", "0c", "2", "2c") + "; echo giving up; exit 3; fi; "
                + writePid("$RANK") + "; " + sleepInChild("${RANK}c");
        Outcome r = sh(3, script);
        assertEquals(3, r.status(), r.err());
        assertTrue(r.err().contains("rank 1 failed: exit status 3"), r.err());
        assertTrue(r.err().contains("stopping ranks 0, 2"), r.err());
        assertTrue(r.out().contains("[1] giving up"), r.out());
        assertTrue(r.millis() < 15_000, "the sleeping ranks were not stopped promptly: " + r.millis() + " ms");
        assertGone("0", "0c", "2", "2c");
    }

    @Test
    void withElasticAFailedRankIsReportedAndTheOthersGoOn() throws Exception {
        String script = "if [ $RANK = 1 ]; then " + awaitPids("0", "2") + "; kill -9 $$; fi; " + writePid("$RANK")
                + "; sleep 1; echo finished";
        Outcome r = sh(3, script, "--elastic");
        assertEquals(0, r.status(), r.err());
        assertTrue(r.err().contains("rank 1 failed: killed by signal 9 (SIGKILL, exit status 137); --elastic: the "
                + "other 2 ranks go on"), r.err());
        assertTrue(r.err().contains("--elastic: rank 1 failed; the others ran to the end"), r.err());
        assertTrue(r.out().contains("[0] finished") && r.out().contains("[2] finished"), r.out());
        Outcome all = sh(2, "exit 4", "--elastic");
        assertEquals(4, all.status(), "no rank ran to the end: the first failure's status; " + all.err());
    }

    @Test
    void aRankKilledBySignalIsReportedWithTheSignal() throws Exception {
        String script = "if [ $RANK = 1 ]; then " + awaitPids("0") + "; kill -9 $$; fi; " + writePid("$RANK")
                + "; exec sleep " + SLEEP;
        Outcome r = sh(2, script);
        assertEquals(128 + 9, r.status(), r.err());
        assertTrue(r.err().contains("rank 1 failed: killed by signal 9 (SIGKILL"), r.err());
        assertGone("0");
    }

    @Test
    void aRankIgnoringSigtermIsKilledAfterTheGracePeriod() throws Exception {
        String script = "if [ $RANK = 1 ]; then " + awaitPids("0") + "; exit 3; fi; trap '' TERM; " + writePid("0")
                + "; exec sleep " + SLEEP;
        Outcome r = sh(2, script, "--grace", "0.5");
        assertEquals(3, r.status(), r.err());
        assertTrue(r.err().contains("sending SIGKILL"), r.err());
        assertTrue(r.millis() < 15_000, r.millis() + " ms");
        assertGone("0");
    }

    @Test
    void processesLeftBehindByAnExitedRankAreStopped() throws Exception {
        // rank 0 starts a background sleep and exits at once (0): the sleep must not outlive the launcher
        String script = "if [ $RANK = 0 ]; then sleep " + SLEEP + " >/dev/null 2>&1 & echo $! > " + dir
                + "/bg.tmp && mv " + dir + "/bg.tmp " + dir + "/bg.pid; exit 0; fi; " + awaitPids("bg")
                + "; sleep 0.5";
        Outcome r = sh(2, script);
        assertEquals(0, r.status(), r.err());
        assertGone("bg");
    }

    // ---------------------------------------------------------------- signals to the launcher

    @Test
    void sigtermToTheLauncherStopsEveryRank() throws Exception {
        interrupt("TERM", 128 + 15);
    }

    @Test
    void sigintToTheLauncherStopsEveryRank() throws Exception {
        interrupt("INT", 128 + 2);
    }

    private void interrupt(String signal, int expectedStatus) throws Exception {
        ProcessBuilder pb = launcher(Map.of(), shArgs(2, writePid("$RANK") + "; " + sleepInChild("${RANK}c")));
        if (signal.equals("INT") && sigintIgnored()) {
            // a JVM started with SIGINT ignored (a background job) keeps ignoring it; reset it as a terminal would
            assumeTrue(envResetsSignals(), "SIGINT is ignored here and env --default-signal is missing");
            pb.command().addAll(0, List.of("env", "--default-signal=INT"));
        }
        long t0 = System.nanoTime();
        Process p = pb.start();
        awaitFiles("0", "1", "0c", "1c");
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).inheritIO().start();
        assertEquals(0, kill.waitFor());
        Outcome r = finish(p, t0);
        assertEquals(expectedStatus, r.status(), r.err());
        assertTrue(r.err().contains("interrupted; stopping 2 ranks"), r.err());
        assertGone("0", "1", "0c", "1c");
    }

    private static boolean sigintIgnored() throws IOException {
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (l.startsWith("SigIgn:")) {
                return (Long.parseUnsignedLong(l.substring(7).strip(), 16) & (1L << (2 - 1))) != 0;
            }
        }
        return false;
    }

    private static boolean envResetsSignals() {
        try {
            return new ProcessBuilder("env", "--default-signal=INT", "true").start().waitFor() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    // ---------------------------------------------------------------- the bash wrapper

    @Test
    void theScriptRunsTheLauncherAndPassesSignalsOn() throws Exception {
        Path script = Path.of("..", "scripts", "nccl4j-run").toAbsolutePath().normalize();
        assumeTrue(Files.isExecutable(script), script + " not found (tests run from nccl4j-tools)");
        ProcessBuilder pb = launcher(Map.of("NCCL4J_CLASSPATH", System.getProperty("java.class.path"),
                "JAVA_HOME", System.getProperty("java.home")), shArgs(2, "echo $RANK of $WORLD_SIZE; " + writePid("$RANK")
                + "; exec sleep " + SLEEP));
        List<String> cmd = new ArrayList<>(pb.command());
        int main = cmd.indexOf(Launcher.class.getName());
        pb.command(new ArrayList<>(cmd.subList(main + 1, cmd.size())));
        pb.command().add(0, script.toString());
        long t0 = System.nanoTime();
        Process p = pb.start();
        awaitFiles("0", "1");
        p.destroy(); // SIGTERM to the script's pid, which exec'd the launcher's JVM
        Outcome r = finish(p, t0);
        assertEquals(128 + 15, r.status(), r.err());
        assertEquals(Set.of("[0] 0 of 2", "[1] 1 of 2"), new HashSet<>(r.outLines()));
        assertGone("0", "1");
    }

    // ---------------------------------------------------------------- command line, in process

    private static Outcome inProcess(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = Launcher.run(args, new HashMap<>(), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Outcome(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8), 0);
    }

    @Test
    void badCommandLinesExitWithStatus2AndSayWhy() {
        Outcome r = inProcess("AllReduce");
        assertEquals(2, r.status());
        assertEquals("nccl4j-run: -np N is required: how many ranks to start (or -np auto: one per visible GPU)\n"
                + "Try 'nccl4j-run --help' for the options.\n", r.err());
        r = inProcess("-np", "0", "AllReduce");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("-np 0 is out of range 1..4096"), r.err());
        r = inProcess("-np", "0", "--share-gpu", "AllReduce");
        assertEquals(2, r.status());
        assertTrue(r.err().startsWith("nccl4j-run: -np 0 is out of range 1..4096\n"), r.err());
        r = inProcess("-np", "2", "--bogus", "AllReduce");
        assertEquals(2, r.status());
        assertTrue(r.err().startsWith("nccl4j-run: Unknown option: '--bogus'\n"), r.err());
        r = inProcess("-np", "2", "--cmd");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("--cmd needs a command"), r.err());
        r = inProcess("-np", "2", "NoSuchExample");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("no class org.nccl4j.examples.NoSuchExample"), r.err());
        r = inProcess("--help");
        assertEquals(0, r.status());
        assertTrue(r.out().startsWith("Usage: nccl4j-run -np N [--share-gpu] [--elastic] [--port P] [--grace SECONDS]"),
                r.out());
        r = inProcess("--version");
        assertEquals(0, r.status());
        assertTrue(r.out().startsWith("nccl4j-run (nccl4j "), r.out());
        r = inProcess("-np", "x", "AllReduce");
        assertEquals(2, r.status());
        assertTrue(r.err().startsWith("nccl4j-run: -np x is not a number, auto or gpu: use -np N (ranks on this node,"
                + " one per GPU) or -np auto (one per visible GPU)\n"), r.err());
        r = inProcess("-np", "2", "--port");
        assertEquals(2, r.status());
        assertTrue(r.err().startsWith("nccl4j-run: Missing required parameter for option '--port' (P)\n"), r.err());
        r = inProcess("-np", "2", "--grace", "9999", "AllReduce");
        assertEquals(2, r.status());
        assertTrue(r.err().startsWith("nccl4j-run: --grace 9999.0 is out of range 0..3600 seconds\n"), r.err());
    }

    @Test
    void javaRankCommandLine() {
        LaunchOptions o = LaunchOptions.parse(new String[] {"-np", "4", "--grace", "2.5", "DdpSimple", "--average", "avg"},
                Map.of("JAVA_OPTS", "  -Xmx1g  -Dx=y "), Path.of("/jre/bin/java"), "a.jar:lib/*");
        assertEquals(4, o.ranks());
        assertEquals(2500, o.grace().toMillis());
        assertEquals("org.nccl4j.examples.DdpSimple", o.mainClass());
        assertEquals(List.of("/jre/bin/java", "-Xmx1g", "-Dx=y", "-cp", "a.jar:lib/*", "org.nccl4j.examples.DdpSimple",
                "--average", "avg"), o.command());
        o = LaunchOptions.parse(new String[] {"-np", "2", "com.example.Train"}, Map.of(), Path.of("java"), "cp");
        assertEquals(List.of("java", "-cp", "cp", "com.example.Train"), o.command());
        o = LaunchOptions.parse(new String[] {"-np", "2", "--port", "29500", "--cmd", "--", "sh", "-c", "echo -np"},
                Map.of(), Path.of("java"), "cp");
        assertEquals(29500, o.port());
        assertEquals(List.of("sh", "-c", "echo -np"), o.command());
    }

    private static LaunchOptions parse(Map<String, String> env, String... args) {
        return LaunchOptions.parse(args, env, Path.of("java"), "cp");
    }

    private static String refusal(Map<String, String> env, String... args) {
        return assertThrows(Tools.UsageException.class, () -> parse(env, args)).getMessage();
    }

    @Test
    void npAutoIsOneRankPerVisibleGpu() {
        LaunchOptions o = parse(Map.of("CUDA_VISIBLE_DEVICES", "0,1,2"), "-np", "auto", "AllReduce");
        assertEquals(3, o.ranks());
        assertEquals("-np auto: 3 ranks, one per visible GPU (3 found: CUDA_VISIBLE_DEVICES=0,1,2)", o.ranksNote());
        assertEquals(3, parse(Map.of("CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b,GPU-c"), "-np", "GPU", "AllReduce").ranks());
        // a rehearsal of 2 hosts shares the visible GPUs out: 2 each of 4
        o = parse(Map.of("CUDA_VISIBLE_DEVICES", "0,1,2,3"), "--hosts", "2", "-np", "auto", "AllReduce");
        assertEquals(2, o.ranks());
        assertEquals(4, o.nodes().worldSize());
        assertEquals("-np auto: 2 ranks on each of 2 hosts, one per visible GPU (4 found: CUDA_VISIBLE_DEVICES=0,1,2,3)",
                o.ranksNote());
        assertNull(parse(Map.of(), "-np", "2", "AllReduce").ranksNote());
    }

    @Test
    void withoutNpTheLauncherReadsKubeflowTrainersPetNprocPerNode() {
        Map<String, String> pod = Map.of("PET_NPROC_PER_NODE", "auto", "CUDA_VISIBLE_DEVICES", "0,1,2,3",
                "MASTER_ADDR", "job-node-0-0.job", "MASTER_PORT", "29500");
        LaunchOptions o = parse(pod, "--nnodes", "2", "--node-rank", "1", "AllReduce");
        assertEquals(4, o.ranks());
        assertEquals(8, o.nodes().worldSize());
        assertEquals(4, o.nodes().rank(0));
        assertEquals("PET_NPROC_PER_NODE=auto (no -np given): 4 ranks, one per visible GPU (4 found:"
                + " CUDA_VISIBLE_DEVICES=0,1,2,3)", o.ranksNote());
        o = parse(Map.of("PET_NPROC_PER_NODE", " 2 "), "AllReduce");
        assertEquals(2, o.ranks());
        assertEquals("PET_NPROC_PER_NODE=2 (no -np given): 2 ranks on this node", o.ranksNote());
        // -np given wins, as torchrun's --nproc-per-node wins over PET_NPROC_PER_NODE
        assertEquals(1, parse(Map.of("PET_NPROC_PER_NODE", "auto"), "-np", "1", "AllReduce").ranks());
    }

    @Test
    void badNpValuesAreNamedWithTheFix() {
        assertEquals("-np auto means one rank per visible GPU, and no GPU is visible here (CUDA_VISIBLE_DEVICES=):"
                + " run on a node with GPUs (under Kubernetes: a nvidia.com/gpu limit), or give -np N",
                refusal(Map.of("CUDA_VISIBLE_DEVICES", ""), "-np", "auto", "AllReduce"));
        assertEquals("-np auto means one rank per visible GPU, and only 1 GPU for 2 hosts is visible here"
                + " (CUDA_VISIBLE_DEVICES=0): run on a node with GPUs (under Kubernetes: a nvidia.com/gpu limit), or"
                + " give -np N", refusal(Map.of("CUDA_VISIBLE_DEVICES", "0"), "--hosts", "2", "-np", "auto", "X"));
        assertEquals("PET_NPROC_PER_NODE=gpu (no -np given) means one rank per visible GPU, and no GPU is visible"
                + " here (CUDA_VISIBLE_DEVICES=): run on a node with GPUs (under Kubernetes: a nvidia.com/gpu limit),"
                + " or give -np N", refusal(Map.of("PET_NPROC_PER_NODE", "gpu", "CUDA_VISIBLE_DEVICES", ""), "X"));
        assertEquals("-np cpu asks for one rank per CPU, and nccl4j runs one rank per GPU: use -np auto (one per"
                + " visible GPU) or -np N; under Kubeflow Trainer leave numProcPerNode auto or give it a number",
                refusal(Map.of(), "-np", "cpu", "AllReduce"));
        assertEquals("PET_NPROC_PER_NODE=cpu (no -np given) asks for one rank per CPU, and nccl4j runs one rank per"
                + " GPU: use -np auto (one per visible GPU) or -np N; under Kubeflow Trainer leave numProcPerNode auto"
                + " or give it a number", refusal(Map.of("PET_NPROC_PER_NODE", "cpu"), "AllReduce"));
        assertEquals("PET_NPROC_PER_NODE=four (no -np given) is not a number, auto or gpu: use -np N (ranks on this"
                + " node, one per GPU) or -np auto (one per visible GPU)",
                refusal(Map.of("PET_NPROC_PER_NODE", "four"), "AllReduce"));
        assertEquals("-np -3 is not a number, auto or gpu: use -np N (ranks on this node, one per GPU) or -np auto"
                + " (one per visible GPU)", refusal(Map.of(), "-np", "-3", "AllReduce"));
        assertEquals("PET_NPROC_PER_NODE=0 (no -np given) is out of range 1..4096",
                refusal(Map.of("PET_NPROC_PER_NODE", "0"), "AllReduce"));
        assertEquals("-np 5000 is out of range 1..4096", refusal(Map.of(), "-np", "5000", "AllReduce"));
        assertEquals("-np N is required: how many ranks to start (or -np auto: one per visible GPU)",
                refusal(Map.of("PET_NPROC_PER_NODE", " "), "AllReduce"));
    }

    @Test
    void npAutoRunsOneRankPerVisibleGpuAndSaysSo() throws Exception {
        Outcome r = launch(Map.of("CUDA_VISIBLE_DEVICES", "0,1"), "-np", "auto", "--cmd", "sh", "-c",
                "echo rank $RANK of $WORLD_SIZE");
        assertEquals(0, r.status(), r.out() + r.err());
        assertEquals(Set.of("[0] rank 0 of 2", "[1] rank 1 of 2"), new HashSet<>(r.outLines()));
        assertTrue(r.err().contains("nccl4j-run: -np auto: 2 ranks, one per visible GPU (2 found:"
                + " CUDA_VISIBLE_DEVICES=0,1)"), r.err());
    }

    @Test
    void exitStatusesAreDescribed() {
        assertEquals("exit status 3", Launcher.describe(3));
        assertEquals("exit status 128", Launcher.describe(128));
        assertEquals("killed by signal 9 (SIGKILL, exit status 137)", Launcher.describe(137));
        assertEquals("killed by signal 15 (SIGTERM, exit status 143)", Launcher.describe(143));
        assertEquals("killed by signal 40 (exit status 168)", Launcher.describe(168));
        assertEquals("exit status 255", Launcher.describe(255));
    }
}
