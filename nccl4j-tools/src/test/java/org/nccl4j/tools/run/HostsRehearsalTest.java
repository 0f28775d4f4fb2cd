package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.tools.run.ScriptSandbox.env;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.tools.run.ScriptSandbox.Call;
import org.nccl4j.tools.run.ScriptSandbox.SandboxOutcome;
import org.nccl4j.launch.LaunchInfo;

/**
 * {@code scripts/nccl4j-run --hosts H} (a job of H hosts rehearsed on one machine) and {@code --nnodes N --node-rank K}
 * (one node's agent of a job across nodes), on the CPU: the sandbox's {@code scripts/nccl4j-run} runs the real
 * launcher (this class path, this JVM's java) and every rank is the sandbox's fake {@code java}, which records the
 * environment it got. Each rank's environment is checked variable by variable, then read by {@link LaunchInfo} as a
 * rank would read it (rank, world size, local rank, device). GPUs come from the fake {@code nvidia-smi -L}
 * ({@code FAKE_GPUS}) or from {@code CUDA_VISIBLE_DEVICES}.
 */
@Timeout(120)
class HostsRehearsalTest {
    /** Each rank's own variables; a rank's environment must hold no other launcher's. */
    private static final Set<String> TORCHRUN = Set.of("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
            "GROUP_RANK", "GROUP_WORLD_SIZE", "TORCHELASTIC_RUN_ID");

    @TempDir
    Path tmp;

    private ScriptSandbox box;

    @BeforeEach
    void sandbox() throws Exception {
        box = new ScriptSandbox(tmp);
    }

    /** nccl4j-run in the sandbox on the real launcher; every rank runs the fake java. */
    private SandboxOutcome run(Map<String, String> extra, String... args) throws Exception {
        Map<String, String> e = new LinkedHashMap<>();
        e.put("NCCL4J_CLASSPATH", System.getProperty("java.class.path"));
        e.put("JAVA_HOME", System.getProperty("java.home"));
        e.put("NCCL_DEBUG", "WARN");
        e.putAll(extra);
        List<String> a = new ArrayList<>(List.of(args));
        a.addAll(List.of("--cmd", "--", "java", "-cp", "app.jar", "com.example.Train"));
        return box.run(box.root.resolve("scripts/nccl4j-run"), e, a.toArray(new String[0]));
    }

    /** The ranks' recorded environments, by global rank (read from the variable {@code rankVariable}). */
    private static List<Call> ranks(SandboxOutcome r, String rankVariable, int expected) {
        assertEquals(0, r.status(), r.toString());
        List<Call> calls = r.of("java").stream()
                .sorted(Comparator.comparingInt(c -> Integer.parseInt(c.env(rankVariable))))
                .collect(Collectors.toList());
        assertEquals(expected, calls.size(), r.toString());
        for (int i = 0; i < expected; i++) {
            assertEquals(Integer.toString(i), calls.get(i).env(rankVariable), r.toString());
            assertEquals(List.of("-cp", "app.jar", "com.example.Train"), calls.get(i).args());
        }
        return calls;
    }

    /** What every rank of a rehearsal shares: one port, one secret, one run id, the loopback, NVLS off. */
    private static void assertShared(List<Call> calls) {
        Call first = calls.get(0);
        String port = first.env("MASTER_PORT");
        assertTrue(port.matches("[0-9]+") && Integer.parseInt(port) > 0, port);
        assertTrue(first.env("NCCL4J_JOB_SECRET").length() >= 32, "a secret made for the launch");
        for (Call c : calls) {
            assertEquals("127.0.0.1", c.env("MASTER_ADDR"));
            assertEquals(port, c.env("MASTER_PORT"));
            assertEquals(first.env("NCCL4J_JOB_SECRET"), c.env("NCCL4J_JOB_SECRET"));
            assertEquals(first.env("NCCL4J_RUN_ID"), c.env("NCCL4J_RUN_ID"));
            assertEquals("nccl4j-run-127.0.0.1-" + port, c.env("NCCL4J_RUN_ID"));
            assertEquals("lo", c.env("NCCL_SOCKET_IFNAME"));
            assertEquals("0", c.env("NCCL_NVLS_ENABLE"));
            assertEquals("WARN", c.env("NCCL_DEBUG"), "the launcher's environment reaches every rank");
            assertNotNull(c.env(Launcher.TAG_VARIABLE));
        }
    }

    /** LaunchInfo, as the rank itself reads its environment, with the host's G GPUs visible. */
    private static void assertLaunchInfo(Call c, int rank, int world, int local, int perHost) {
        LaunchInfo info = LaunchInfo.detect(c.env(), () -> perHost);
        assertEquals(rank, info.rank(), c.env().toString());
        assertEquals(world, info.worldSize());
        assertEquals(local, info.localRank().orElse(-1));
        assertEquals(perHost, info.localWorldSize().orElse(-1));
        assertEquals(local, info.device(), "device = local rank of the host's own GPUs");
    }

    private static void assertNone(Call c, Set<String> names) {
        for (String n : names) {
            assertFalse(c.env().containsKey(n), n + " in rank " + c.env());
        }
    }

    // ---------------------------------------------------------------- torchrun's variables (the default)

    @Test
    void twoHostsOfTwoGpusGetTorchrunsVariablesTheirOwnHostIdAndGpus() throws Exception {
        SandboxOutcome r = run(env("FAKE_GPUS", "4", "SLURM_PROCID", "7", "OMPI_COMM_WORLD_RANK", "5"), "--hosts", "2",
                "-np", "2");
        List<Call> calls = ranks(r, "RANK", 4);
        assertShared(calls);
        String[] devices = {"0,1", "0,1", "2,3", "2,3"};
        for (int rank = 0; rank < 4; rank++) {
            Call c = calls.get(rank);
            int host = rank / 2;
            assertEquals("4", c.env("WORLD_SIZE"));
            assertEquals(Integer.toString(rank % 2), c.env("LOCAL_RANK"));
            assertEquals("2", c.env("LOCAL_WORLD_SIZE"));
            assertEquals(Integer.toString(host), c.env("GROUP_RANK"));
            assertEquals("2", c.env("GROUP_WORLD_SIZE"));
            assertEquals("nccl4j-node" + host, c.env("NCCL_HOSTID"));
            assertEquals(devices[rank], c.env("CUDA_VISIBLE_DEVICES"));
            assertEquals(c.env("NCCL4J_RUN_ID"), c.env("TORCHELASTIC_RUN_ID"));
            assertNone(c, Set.of("SLURM_PROCID", "OMPI_COMM_WORLD_RANK"));   // the launcher's own were removed
            assertLaunchInfo(c, rank, 4, rank % 2, 2);
        }
        assertTrue(r.err().contains("nccl4j-run: rehearsing 2 hosts x 2 ranks on this machine (torchrun's variables,"
                + " MASTER_ADDR=127.0.0.1, NCCL_SOCKET_IFNAME=lo; NCCL connects the hosts over sockets): host 0 ranks 0-1"
                + " on CUDA_VISIBLE_DEVICES=0,1; host 1 ranks 2-3 on CUDA_VISIBLE_DEVICES=2,3"), r.err());
    }

    @Test
    void twoHostsOfOneGpuTakeTheirGpusFromCudaVisibleDevices() throws Exception {
        SandboxOutcome r = run(env("CUDA_VISIBLE_DEVICES", "GPU-aa, GPU-bb,GPU-cc", "NCCL_HOSTID", "mine",
                "NCCL_SOCKET_IFNAME", "eth9"), "--hosts", "2", "-np", "1");
        List<Call> calls = ranks(r, "RANK", 2);
        for (int rank = 0; rank < 2; rank++) {
            Call c = calls.get(rank);
            assertEquals(List.of("GPU-aa", "GPU-bb").get(rank), c.env("CUDA_VISIBLE_DEVICES"));
            assertEquals("nccl4j-node" + rank, c.env("NCCL_HOSTID"));
            assertEquals("eth9", c.env("NCCL_SOCKET_IFNAME"), "a NCCL_SOCKET_IFNAME of the user's is kept");
            assertEquals("0", c.env("LOCAL_RANK"));
            assertEquals("1", c.env("LOCAL_WORLD_SIZE"));
            assertEquals(Integer.toString(rank), c.env("GROUP_RANK"));
            assertLaunchInfo(c, rank, 2, 0, 1);
        }
        assertTrue(r.err().contains("nccl4j-run: --hosts: NCCL_HOSTID=mine is replaced by one per rehearsed host"),
                r.err());
    }

    // ---------------------------------------------------------------- srun's variables

    @Test
    void asSrunEachRankGetsWhatSrunSetsAcrossTwoHosts() throws Exception {
        for (int perHost : new int[] {2, 1}) {
            int world = 2 * perHost;
            SandboxOutcome r = run(env("FAKE_GPUS", "4", "RANK", "9", "WORLD_SIZE", "9"), "--hosts", "2", "-np",
                    Integer.toString(perHost), "--as", "srun");
            List<Call> calls = ranks(r, "SLURM_PROCID", world);
            assertShared(calls);
            for (int rank = 0; rank < world; rank++) {
                Call c = calls.get(rank);
                int host = rank / perHost;
                Map<String, String> expected = new LinkedHashMap<>();
                expected.put("SLURM_NTASKS", Integer.toString(world));
                expected.put("SLURM_LOCALID", Integer.toString(rank % perHost));
                expected.put("SLURM_NODEID", Integer.toString(host));
                expected.put("SLURM_NNODES", "2");
                expected.put("SLURM_NTASKS_PER_NODE", Integer.toString(perHost));
                expected.put("SLURM_TASKS_PER_NODE", perHost + "(x2)");
                expected.put("SLURM_STEP_NODELIST", "nccl4j-node[0-1]");
                expected.put("SLURM_JOB_NODELIST", "nccl4j-node[0-1]");
                expected.put("SLURMD_NODENAME", "nccl4j-node" + host);
                expected.put("NCCL_HOSTID", "nccl4j-node" + host);
                expected.put("CUDA_VISIBLE_DEVICES", perHost == 2 ? (host == 0 ? "0,1" : "2,3") : Integer.toString(host));
                for (Map.Entry<String, String> v : expected.entrySet()) {
                    assertEquals(v.getValue(), c.env(v.getKey()), v.getKey() + " of rank " + rank + " (" + perHost
                            + " per host)");
                }
                assertNone(c, TORCHRUN);
                assertLaunchInfo(c, rank, world, rank % perHost, perHost);
                assertEquals(LaunchInfo.Source.SLURM, LaunchInfo.detect(c.env(), () -> perHost).source());
            }
        }
    }

    // ---------------------------------------------------------------- mpirun's variables

    @Test
    void asMpirunEachRankGetsWhatMpirunSetsAcrossTwoHosts() throws Exception {
        for (int perHost : new int[] {2, 1}) {
            int world = 2 * perHost;
            SandboxOutcome r = run(env("FAKE_GPUS", "4"), "--hosts", "2", "-np", Integer.toString(perHost), "--as", "mpirun");
            List<Call> calls = ranks(r, "OMPI_COMM_WORLD_RANK", world);
            assertShared(calls);
            for (int rank = 0; rank < world; rank++) {
                Call c = calls.get(rank);
                int host = rank / perHost;
                assertEquals(Integer.toString(world), c.env("OMPI_COMM_WORLD_SIZE"));
                assertEquals(Integer.toString(rank % perHost), c.env("OMPI_COMM_WORLD_LOCAL_RANK"));
                assertEquals(Integer.toString(perHost), c.env("OMPI_COMM_WORLD_LOCAL_SIZE"));
                assertEquals(Integer.toString(host), c.env("OMPI_COMM_WORLD_NODE_RANK"));
                assertEquals("nccl4j-node" + host, c.env("NCCL_HOSTID"));
                assertNone(c, TORCHRUN);
                assertNone(c, Set.of("SLURM_PROCID"));
                assertLaunchInfo(c, rank, world, rank % perHost, perHost);
                assertEquals(LaunchInfo.Source.OPEN_MPI, LaunchInfo.detect(c.env(), () -> perHost).source());
            }
        }
    }

    // ---------------------------------------------------------------- one node of a real job

    @Test
    void oneNodeOfTwoStartsItsRanksWithTheGlobalNumbers() throws Exception {
        SandboxOutcome r = run(env("FAKE_GPUS", "2", "NCCL4J_JOB_SECRET", "s3cret-s3cret-s3cret", "JOB_COMPLETION_INDEX", "1",
                "WORLD_SIZE", "4", "MASTER_PORT", "29500", "FAKE_JAVA_OUT", "hello"), "--nnodes", "2", "--node-rank", "1", "--master-addr",
                "train-0.train", "-np", "2");
        List<Call> calls = r.of("java").stream().sorted(Comparator.comparing(c -> c.env("RANK")))
                .collect(Collectors.toList());
        assertEquals(0, r.status(), r.toString());
        assertEquals(2, calls.size());
        for (int i = 0; i < 2; i++) {
            Call c = calls.get(i);
            assertEquals(Integer.toString(2 + i), c.env("RANK"));
            assertEquals("4", c.env("WORLD_SIZE"));
            assertEquals(Integer.toString(i), c.env("LOCAL_RANK"));
            assertEquals("1", c.env("GROUP_RANK"));
            assertEquals("train-0.train", c.env("MASTER_ADDR"));
            assertEquals("29500", c.env("MASTER_PORT"));
            assertEquals("s3cret-s3cret-s3cret", c.env("NCCL4J_JOB_SECRET"));
            assertEquals("nccl4j-run-train-0.train-29500", c.env("TORCHELASTIC_RUN_ID"),
                    "the same on every node, and it makes LaunchInfo prefer RANK to JOB_COMPLETION_INDEX");
            assertEquals("nccl4j-run-train-0.train-29500", c.env("NCCL4J_RUN_ID"));
            assertFalse(c.env().containsKey("NCCL_HOSTID"), "a real node: NCCL's own host id");
            assertEquals(LaunchInfo.Source.TORCHRUN, LaunchInfo.detect(c.env(), () -> 2).source());
            assertEquals(2 + i, LaunchInfo.detect(c.env(), () -> 2).rank());
        }
        assertEquals(List.of("[2] hello", "[3] hello"), r.outLines().stream().sorted().collect(Collectors.toList()),
                "each line prefixed with the rank's global number");
    }

    // ---------------------------------------------------------------- refusals: the option and the fix

    @Test
    void badCombinationsAreRefusedNamingTheOptionAndTheFix() throws Exception {
        Map<String, String[]> cases = new LinkedHashMap<>();
        cases.put("--hosts 2 -np 2 needs 4 GPUs (-np GPUs per host) and 2 were found (nvidia-smi -L): use fewer"
                + " --hosts or a smaller -np", new String[] {"--hosts", "2", "-np", "2"});
        cases.put("--as srun is for --hosts rehearsals only", new String[] {"--as", "srun", "-np", "2"});
        cases.put("--as slurm is not one of torchrun, srun, mpirun", new String[] {"--hosts", "2", "-np", "1", "--as",
            "slurm"});
        cases.put("--share-gpu cannot be combined with --hosts", new String[] {"--hosts", "2", "-np", "1",
            "--share-gpu"});
        cases.put("--nnodes cannot be combined with --hosts", new String[] {"--hosts", "2", "-np", "1", "--nnodes",
            "2"});
        cases.put("--nnodes 2 needs --node-rank K (0..1)", new String[] {"--nnodes", "2", "-np", "1"});
        cases.put("--node-rank 2 is out of range 0..1", new String[] {"--nnodes", "2", "--node-rank", "2", "-np",
            "1"});
        cases.put("--nnodes 2 needs --master-addr ADDR (or MASTER_ADDR in the environment)", new String[] {"--nnodes",
            "2", "--node-rank", "0", "-np", "1"});
        cases.put("--nnodes 2 needs --port P (or MASTER_PORT in the environment)", new String[] {"--nnodes", "2",
            "--node-rank", "0", "--master-addr", "n0", "-np", "1"});
        cases.put("--nnodes 2 needs NCCL4J_JOB_SECRET (or NCCL4J_JOB_SECRET_FILE) set to the same secret on every"
                + " node", new String[] {"--nnodes", "2", "--node-rank", "0", "--master-addr", "n0", "--port", "29500",
                    "-np", "1"});
        for (Map.Entry<String, String[]> c : cases.entrySet()) {
            SandboxOutcome r = run(env("FAKE_GPUS", "2"), c.getValue());
            assertEquals(2, r.status(), c.getKey() + "\n" + r);
            assertTrue(r.err().contains("nccl4j-run: " + c.getKey()), c.getKey() + "\n" + r.err());
            assertTrue(r.of("java").isEmpty(), "no rank started: " + r);
        }
        SandboxOutcome r = run(env("FAKE_GPUS", "2", "WORLD_SIZE", "6", "NCCL4J_JOB_SECRET", "x"), "--nnodes", "2",
                "--node-rank", "0", "--master-addr", "n0", "--port", "29500", "-np", "2");
        assertEquals(2, r.status(), r.toString());
        assertTrue(r.err().contains("nccl4j-run: WORLD_SIZE=6 in the environment, but --nnodes 2 -np 2 makes 4 ranks:"
                + " fix the job's WORLD_SIZE or -np"), r.err());
    }
}
