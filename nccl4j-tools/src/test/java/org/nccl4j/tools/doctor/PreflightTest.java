package org.nccl4j.tools.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nccl4j.tools.cli.Tools;
import org.nccl4j.tools.doctor.Finding.Status;

/**
 * {@code nccl4j-doctor --preflight} and the {@code host} findings it shares with the full report: each rule on a
 * made-up machine, the one line it prints, /dev/shm and the locked-memory limit as read here, and its run on this
 * machine, which has no GPU.
 */
class PreflightTest {
    private static final long MIB = 1L << 20;
    private static final long GIB = 1L << 30;
    private static final List<Finding> NCCL_OK = Checks.nccl("2.28.3", "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
            List.of(), null);

    private static Machine gpus(int n, List<Machine.Hca> hcas) {
        List<Machine.Gpu> g = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            g.add(new Machine.Gpu(i, "NVIDIA H200", 141L << 30, String.format("00000000:%02X:00.0", 0x18 + i), 9, 0,
                    null));
        }
        return new Machine(13000, 13000, null, g, null, "not read (--preflight)", null, null, List.of("eth0", "lo"),
                hcas);
    }

    private static Machine gpus(int n) {
        return gpus(n, List.of());
    }

    private static final Limits ROOMY = new Limits(16 * GIB, Limits.UNLIMITED);

    @Test
    void aHostWithGpusNcclAndRoomIsReadyAndSaysWhatItFound() {
        Preflight.Verdict v = Preflight.check(gpus(4), ROOMY, NCCL_OK, Map.of("NCCL_SOCKET_IFNAME", "eth"));
        assertTrue(v.ready(), v.toString());
        assertEquals("nccl4j-doctor --preflight: ready: 4 GPU(s), driver supports CUDA 13.0, runtime 13.0, NCCL "
                + "2.28.3 at /usr/lib/x86_64-linux-gnu/libnccl.so.2, /dev/shm 16.0 GiB, NCCL_SOCKET_IFNAME=eth",
                v.line());
    }

    @Test
    void noGpuOrNoCudaIsNotReadyWithCudasReason() {
        Machine none = new Machine(0, 0, "the CUDA runtime cannot be loaded (no jnicudart in java.library.path): no "
                + "NVIDIA driver or CUDA on this machine", List.of(), null, null, null, null, List.of("lo"));
        Preflight.Verdict v = Preflight.check(none, ROOMY, NCCL_OK, Map.of());
        assertFalse(v.ready());
        assertEquals("nccl4j-doctor --preflight: not ready: the CUDA runtime cannot be loaded (no jnicudart in "
                + "java.library.path): no NVIDIA driver or CUDA on this machine; fix: install the NVIDIA driver and "
                + "check that the GPUs are visible (nvidia-smi; CUDA_VISIBLE_DEVICES)", v.line());
        Machine zero = new Machine(13000, 13000, null, List.of(), null, null, null, null, List.of("lo"));
        assertTrue(Preflight.check(zero, ROOMY, NCCL_OK, Map.of()).line().startsWith(
                "nccl4j-doctor --preflight: not ready: CUDA sees no GPU; fix: check CUDA_VISIBLE_DEVICES"));
        Machine old = new Machine(12080, 13000, null, gpus(1).gpus(), null, null, null, null, List.of("lo"));
        assertTrue(Preflight.check(old, ROOMY, NCCL_OK, Map.of()).line().contains("not ready: driver supports CUDA "
                + "12.8, runtime 13.0; fix: the driver is older than the CUDA runtime"));
    }

    @Test
    void noNcclIsNotReadyAndAMultiLineMessageStaysOnOneLine() {
        List<Finding> noNccl = Checks.nccl(null, null, List.of(), "no NCCL library could be loaded: libnccl.so.2:\n"
                + "  cannot open shared object file");
        Preflight.Verdict v = Preflight.check(gpus(2), ROOMY, noNccl, Map.of());
        assertFalse(v.ready());
        assertEquals("nccl4j-doctor --preflight: not ready: no NCCL library could be loaded: libnccl.so.2: cannot open "
                + "shared object file; fix: install NCCL (libnccl.so.2) or point NCCL4J_LIBRARY / -Dnccl4j.library at "
                + "it", v.line());
    }

    @Test
    void aContainersDefaultShmFailsOnSeveralGpusAndNotOnOne() {
        Limits docker = new Limits(64 * MIB, 64 * 1024);
        Preflight.Verdict v = Preflight.check(gpus(2), docker, NCCL_OK, Map.of());
        assertFalse(v.ready());
        assertEquals("nccl4j-doctor --preflight: not ready: /dev/shm is 64.0 MiB, under the 1 GiB that NCCL's "
                + "shared-memory segments between the ranks of this host's 2 GPUs may need (64 MiB is a container's "
                + "default); fix: give the container a larger /dev/shm: docker run --shm-size=1g (or --ipc=host); "
                + "Kubernetes: an emptyDir volume with medium: Memory mounted at /dev/shm; docs/multi-host.md",
                v.line());
        // one GPU: no local peer, nothing to share; 1 GiB exactly is enough
        assertTrue(Preflight.check(gpus(1), docker, NCCL_OK, Map.of()).ready());
        assertTrue(Preflight.check(gpus(8), new Limits(GIB, 0), NCCL_OK, Map.of()).ready());
        assertFalse(Preflight.check(gpus(8), new Limits(GIB - 1, 0), NCCL_OK, Map.of()).ready());
        Preflight.Verdict missing = Preflight.check(gpus(2), new Limits(Limits.UNKNOWN, 0), NCCL_OK, Map.of());
        assertTrue(missing.line().contains("not ready: /dev/shm is missing or cannot be read"), missing.line());
    }

    @Test
    void anInterfaceThatIsNotThereAndABadValueAreNotReady() {
        Preflight.Verdict v = Preflight.check(gpus(2), ROOMY, NCCL_OK, Map.of("NCCL_SOCKET_IFNAME", "ib0"));
        assertEquals("nccl4j-doctor --preflight: not ready: NCCL_SOCKET_IFNAME=ib0 names no interface of this host "
                + "(up: [eth0, lo]); fix: set it to one of [eth0, lo] (a prefix such as eth matches eth0), or unset it",
                v.line());
        // two failures: the first is named, the other counted
        v = Preflight.check(gpus(2), ROOMY, NCCL_OK, Map.of("NCCL_SOCKET_IFNAME", "ib0", "MASTER_PORT", "29500x"));
        assertTrue(v.line().endsWith("(and 1 more: nccl4j-doctor --quick lists them)"), v.line());
        assertEquals(List.of("NCCL_SOCKET_IFNAME", "MASTER_PORT"), v.failures().stream().map(Finding::subject)
                .toList());
        assertTrue(v.failures().get(1).detail().equals("MASTER_PORT=29500x is not a TCP port"));
        // a WARN (a likely typo) does not stop a rank
        assertTrue(Preflight.check(gpus(2), ROOMY, NCCL_OK, Map.of("NCCL_SOCKET_IFNAM", "eth0")).ready());
    }

    @Test
    void aJobAcrossHostsNeedsItsSecretAndOneOnThisHostDoesNot() {
        // a pod of an Indexed Job before nccl4j-run starts its ranks: only MASTER_ADDR says that other hosts join
        Map<String, String> pod = new HashMap<>(Map.of("MASTER_ADDR", "nccl4j-train-0.nccl4j-train", "MASTER_PORT",
                "29500", "WORLD_SIZE", "8", "JOB_COMPLETION_INDEX", "1"));
        Preflight.Verdict v = Preflight.check(gpus(4), ROOMY, NCCL_OK, pod);
        assertFalse(v.ready());
        assertTrue(v.line().startsWith("nccl4j-doctor --preflight: not ready: rank 0 at MASTER_ADDR=nccl4j-train-0."
                + "nccl4j-train (not this host's loopback), and no job secret is set: anything that reaches rank 0's "
                + "ports can join"), v.line());
        assertTrue(v.line().contains("fix: export NCCL4J_JOB_SECRET=$(openssl rand -hex 32)"), v.line());
        pod.put("NCCL4J_JOB_SECRET", "0123456789abcdef0123456789abcdef");
        v = Preflight.check(gpus(4), ROOMY, NCCL_OK, pod);
        assertTrue(v.ready(), v.line());
        assertTrue(v.line().endsWith(", a job secret (rank 0 at MASTER_ADDR=nccl4j-train-0.nccl4j-train (not this "
                + "host's loopback))"), v.line());
        assertFalse(v.line().contains("0123456789abcdef"), "the secret is never printed");
        // a secret too short: one FAIL, the environment's, not a second
        pod.put("NCCL4J_JOB_SECRET", "short");
        v = Preflight.check(gpus(4), ROOMY, NCCL_OK, pod);
        assertEquals(1, v.failures().size(), v.failures().toString());
        assertTrue(v.line().contains("NCCL4J_JOB_SECRET must hold at least 16 characters"), v.line());
        // Slurm over two nodes, without MASTER_ADDR: the launch says so
        Map<String, String> slurm = Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "8", "SLURM_LOCALID", "0",
                "SLURM_NODEID", "0", "SLURM_NNODES", "2", "MASTER_PORT", "29500", "SLURM_JOB_NODELIST", "gpu[01-02]");
        assertEquals("a job over 2 hosts", Preflight.across(slurm));
        // one host: nccl4j-run on the loopback, or no launch at all
        assertNull(Preflight.across(Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500")));
        assertNull(Preflight.across(Map.of("PET_MASTER_ADDR", "localhost")));
        assertNull(Preflight.across(Map.of()));
        assertTrue(Preflight.check(gpus(4), ROOMY, NCCL_OK, Map.of("MASTER_ADDR", "[::1]")).ready());
        assertEquals("rank 0 at PET_MASTER_ADDR=job-node-0-0.job (not this host's loopback)",
                Preflight.across(Map.of("PET_MASTER_ADDR", "job-node-0-0.job")));
    }

    @Test
    void theHostFindingsOfTheFullReport() {
        Map<String, String> env = Map.of();
        Finding shm = Checks.host(new Limits(64 * MIB, Limits.UNKNOWN), gpus(2), env).get(0);
        assertEquals(Status.WARN, shm.status());
        assertEquals("/dev/shm", shm.subject());
        assertEquals(List.of(Finding.ok("host", "/dev/shm", "24.0 GiB")), Checks.host(new Limits(24 * GIB,
                Limits.UNKNOWN), gpus(2), env));
        // locked memory: judged on a host with RDMA devices only, unless NCCL_IB_DISABLE=1
        List<Machine.Hca> mlx = List.of(new Machine.Hca("mlx5_0", List.of(1)));
        List<Finding> ib = Checks.host(new Limits(24 * GIB, 64 * 1024), gpus(8, mlx), env);
        assertEquals(2, ib.size(), ib.toString());
        assertEquals(Status.WARN, ib.get(1).status());
        assertEquals("locked memory is limited to 64.0 KiB (ulimit -l) on a host with RDMA devices [mlx5_0]: NCCL's "
                + "InfiniBand transport locks the buffers it registers, and a registration over the limit fails",
                ib.get(1).detail());
        assertTrue(ib.get(1).fix().startsWith("make it unlimited: docker run --ulimit memlock=-1"), ib.get(1).fix());
        assertEquals(Status.OK, Checks.host(ROOMY, gpus(8, mlx), env).get(1).status());
        assertEquals(1, Checks.host(new Limits(24 * GIB, 64 * 1024), gpus(8, mlx), Map.of("NCCL_IB_DISABLE", "1"))
                .size());
        assertEquals(1, Checks.host(new Limits(24 * GIB, 64 * 1024), gpus(8), env).size());
        // the memlock WARN does not stop a rank: the preflight leaves it to the full report
        assertTrue(Preflight.check(gpus(8, mlx), new Limits(24 * GIB, 64 * 1024), NCCL_OK, env).ready());
    }

    @Test
    void limitsAreReadOffProcAndDevShm() throws Exception {
        String limits = "Limit                     Soft Limit           Hard Limit           Units     \n"
                + "Max stack size            8388608              unlimited            bytes     \n"
                + "Max locked memory         65536                65536                bytes     \n";
        assertEquals(65536, Limits.memlock(limits));
        assertEquals(Limits.UNLIMITED, Limits.memlock(limits.replace("65536                65536",
                "unlimited            unlimited")));
        assertEquals(Limits.UNKNOWN, Limits.memlock("Max stack size 8388608 unlimited bytes\n"));
        assertEquals(Limits.UNKNOWN, Limits.memlock("Max locked memory         lots      lots      bytes\n"));
        assertEquals(Limits.UNKNOWN, Limits.size(java.nio.file.Path.of("/no/such/dir")));
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("limits");
        try {
            assertEquals(java.nio.file.Files.getFileStore(dir).getTotalSpace(), Limits.size(dir));
            assertTrue(Limits.size(dir) > 0);
        } finally {
            java.nio.file.Files.delete(dir);
        }
        assertEquals("64.0 MiB", Limits.words(64 * MIB));
        assertEquals("1.0 GiB", Limits.words(GIB));
        assertEquals("64.0 KiB", Limits.words(65536));
        assertEquals("unlimited", Limits.words(Limits.UNLIMITED));
    }

    /** The two lines docs/multi-host.md shows are the ones the preflight prints for their machines. */
    @Test
    void theDocumentsSampleLinesAreWhatItPrints() throws Exception {
        String doc = java.nio.file.Files.readString(java.nio.file.Path.of("../docs/multi-host.md"));
        Map<String, String> env = Map.of("NCCL_SOCKET_IFNAME", "eth0", "MASTER_ADDR", "node0", "MASTER_PORT", "29500",
                "NCCL4J_JOB_SECRET", "0123456789abcdef0123456789abcdef");
        String ready = Preflight.check(gpus(4), new Limits(8 * GIB, Limits.UNLIMITED), NCCL_OK, env).line();
        String notReady = Preflight.check(gpus(4), new Limits(64 * MIB, 64 * 1024), NCCL_OK, env).line();
        assertTrue(notReady.contains("not ready: /dev/shm is 64.0 MiB"), notReady);
        assertTrue(doc.contains("\n" + ready + "\n" + notReady + "\n"), ready + "\n" + notReady);
    }

    @Test
    void onThisMachineWithoutAGpuItPrintsOneLineAndExits1() {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = Tools.execute(new Doctor(), new String[] {"--preflight"}, new PrintWriter(out),
                new PrintWriter(err));
        assertEquals(1, status, out + "\n" + err);
        assertEquals(1, out.toString().lines().count(), out.toString());
        assertTrue(out.toString().startsWith("nccl4j-doctor --preflight: not ready: "), out.toString());
        assertTrue(out.toString().contains("; fix: install the NVIDIA driver"), out.toString());
        assertEquals("", err.toString());
        // with --json or --quick: refused, naming the option
        err = new StringWriter();
        assertEquals(2, Tools.execute(new Doctor(), new String[] {"--preflight", "--json"},
                new PrintWriter(new StringWriter()), new PrintWriter(err)));
        assertTrue(err.toString().startsWith("nccl4j-doctor: --preflight prints one line"), err.toString());
    }
}
