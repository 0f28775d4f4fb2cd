package org.nccl4j.tools.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nccl4j.tools.cli.Tools;
import org.nccl4j.tools.doctor.Finding.Status;
import org.nccl4j.jni.NcclFunction;

/** The doctor's rules on made-up machines, its JSON, and its run on this machine, which has no GPU. */
class DoctorTest {
    private static Machine.Gpu gpu(int i, Machine.NvmlGpu nvml) {
        return new Machine.Gpu(i, "NVIDIA H100 80GB HBM3", 85L << 30, String.format("00000000:%02X:00.0", 0x18 + i),
                9, 0, nvml);
    }

    private static Machine.NvmlGpu healthy(List<Machine.Link> links) {
        return new Machine.NvmlGpu(links, 5, 5, 16, 16, 0x1L, 0, List.of());
    }

    private static List<Machine.Link> nvlinks(int n, String peer) {
        List<Machine.Link> l = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            l.add(new Machine.Link(k, true, 4, peer));
        }
        return l;
    }

    /** Two H100s joined by 18 NVLinks (NV18), peer access both ways, interfaces eth0 and lo. */
    private static Machine twoNvlinked() {
        Machine.Gpu g0 = gpu(0, healthy(nvlinks(18, "00000000:19:00.0")));
        Machine.Gpu g1 = gpu(1, healthy(nvlinks(18, "00000000:18:00.0")));
        return new Machine(13000, 13000, null, List.of(g0, g1), new boolean[][] {{false, true}, {true, false}}, null,
                "580.159.04", new String[][] {{"X", "NODE"}, {"NODE", "X"}}, List.of("eth0", "lo"));
    }

    private static Machine oneGpu(Machine.NvmlGpu nvml) {
        return new Machine(13000, 13000, null, List.of(gpu(0, nvml)), new boolean[][] {{false}}, null, "580",
                new String[][] {{"X"}}, List.of("eth0", "lo"));
    }

    private static Finding only(List<Finding> fs, String subject) {
        List<Finding> hits = fs.stream().filter(f -> f.subject().equals(subject)).toList();
        assertEquals(1, hits.size(), subject + " in " + fs);
        return hits.get(0);
    }

    // ---------------------------------------------------------------- the environment, one rule a test

    @Test
    void aMistypedNcclVariableIsAWarnNamingTheRealOne() {
        Finding f = only(Checks.environment(Map.of("NCCL_ALOG", "Ring"), twoNvlinked()), "NCCL_ALOG");
        assertEquals(Status.WARN, f.status());
        assertEquals("NCCL_ALOG=Ring is not a variable NCCL or nccl4j reads; did you mean NCCL_ALGO?", f.detail());
        assertEquals("rename it to NCCL_ALGO, or unset it", f.fix());
    }

    @Test
    void aMistypedNccl4jVariableIsAWarnToo() {
        Finding f = only(Checks.environment(Map.of("NCCL4J_TIMOUT", "30s"), twoNvlinked()), "NCCL4J_TIMOUT");
        assertEquals(Status.WARN, f.status());
        assertTrue(f.detail().endsWith("did you mean NCCL4J_TIMEOUT?"), f.detail());
    }

    @Test
    void aJobOverHostsWithoutASecretIsAWarnAndWithOneItIsOk() {
        Map<String, String> mpi = Map.of("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "16",
                "OMPI_COMM_WORLD_LOCAL_RANK", "3", "OMPI_COMM_WORLD_LOCAL_SIZE", "8", "MASTER_ADDR", "node1",
                "MASTER_PORT", "29500");
        Finding f = only(Checks.jobSecret(mpi), "NCCL4J_JOB_SECRET");
        assertEquals(Status.WARN, f.status());
        assertTrue(f.detail().startsWith("a job over several hosts (16 ranks, 8 on this one) runs without a job "
                + "secret: anything that reaches rank 0's ports"), f.detail());
        assertTrue(f.fix().contains("mpirun -x NCCL4J_JOB_SECRET"), f.fix());
        Map<String, String> slurm = new java.util.HashMap<>(Map.of("SLURM_PROCID", "0", "SLURM_NTASKS", "8",
                "SLURM_LOCALID", "0", "SLURM_NODEID", "0", "SLURM_NNODES", "2", "MASTER_PORT", "29500",
                "MASTER_ADDR", "node1"));
        assertTrue(only(Checks.jobSecret(slurm), "NCCL4J_JOB_SECRET").detail().startsWith("a job over 2 hosts"));
        String secret = "0123456789abcdef0123";
        slurm.put("NCCL4J_JOB_SECRET", secret);
        Finding ok = only(Checks.jobSecret(slurm), "NCCL4J_JOB_SECRET");
        assertEquals(Status.OK, ok.status());
        assertFalse(ok.detail().contains(secret), ok.detail());
        // one host (every rank local), or no launch at all: nothing to say
        assertEquals(List.of(), Checks.jobSecret(Map.of("RANK", "0", "WORLD_SIZE", "4", "LOCAL_RANK", "0",
                "LOCAL_WORLD_SIZE", "4", "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "29500")));
        assertEquals(List.of(), Checks.jobSecret(Map.of()));
        // a secret too short to use: the ranks would refuse to start
        Finding bad = only(Checks.jobSecret(Map.of("NCCL4J_JOB_SECRET", "short")), "NCCL4J_JOB_SECRET");
        assertEquals(Status.FAIL, bad.status());
        assertTrue(bad.detail().contains("must hold at least 16 characters"), bad.detail());
    }

    @Test
    void theJobSecretVariablesAreKnownAndAMisspeltSecretIsNotShown() {
        Map<String, String> env = Map.of("NCCL4J_JOB_SECRET", "s".repeat(32), "NCCL4J_JOB_SECRET_FILE", "/run/s",
                "NCCL4J_RENDEZVOUS_BIND", "any");
        assertEquals(List.of(), Checks.environment(env, twoNvlinked()).stream()
                .filter(f -> f.subject().startsWith("NCCL4J_")).collect(java.util.stream.Collectors.toList()));
        Finding f = only(Checks.environment(Map.of("NCCL4J_JOB_SECRT", "hunter2hunter2hunter2"), twoNvlinked()),
                "NCCL4J_JOB_SECRT");
        assertEquals(Status.WARN, f.status());
        assertTrue(f.detail().endsWith("did you mean NCCL4J_JOB_SECRET?"), f.detail());
        assertFalse(f.detail().contains("hunter2"), f.detail());
    }

    @Test
    void aNameFarFromAnyKnownOneIsOnlyNoted() {
        Finding f = only(Checks.environment(Map.of("NCCL_FUTURE_KNOB", "1"), twoNvlinked()), "NCCL_FUTURE_KNOB");
        assertEquals(Status.INFO, f.status());
    }

    @Test
    void anInvalidValueIsAFailWithTheAcceptedValues() {
        Finding f = only(Checks.environment(Map.of("NCCL_ALGO", "Rnig"), twoNvlinked()), "NCCL_ALGO");
        assertEquals(Status.FAIL, f.status());
        assertTrue(f.detail().startsWith("NCCL_ALGO"), f.detail());
        assertTrue(f.detail().contains("Rnig") && f.detail().contains("Ring"), f.detail());
        assertEquals(Status.OK, only(Checks.environment(Map.of("NCCL_ALGO", "Ring"), twoNvlinked()), "NCCL_ALGO")
                .status());
    }

    @Test
    void p2pDisabledOnNvlinkedGpusIsAWarnAndOnPcieGpusIsNot() {
        List<Finding> fs = Checks.environment(Map.of("NCCL_P2P_DISABLE", "1"), twoNvlinked());
        assertTrue(fs.stream().anyMatch(f -> f.status() == Status.WARN && f.detail().startsWith(
                "NCCL_P2P_DISABLE=1 on GPUs joined by NVLink")), fs.toString());
        List<Finding> pcie = Checks.environment(Map.of("NCCL_P2P_DISABLE", "1"), oneGpu(healthy(List.of())));
        assertTrue(pcie.stream().noneMatch(f -> f.status() == Status.WARN), pcie.toString());
    }

    @Test
    void aSocketInterfaceThatIsNotThereIsAFail() {
        List<Finding> fs = Checks.environment(Map.of("NCCL_SOCKET_IFNAME", "ib9"), twoNvlinked());
        Finding f = only(fs, "NCCL_SOCKET_IFNAME");   // the FAIL alone: no OK line for the well-formed value
        assertEquals(Status.FAIL, f.status());
        assertEquals("NCCL_SOCKET_IFNAME=ib9 names no interface of this host (up: [eth0, lo])", f.detail());
        assertTrue(Checks.interfaceMatches("eth", List.of("eth0", "lo")), "a prefix");
        assertTrue(Checks.interfaceMatches("=eth0", List.of("eth0")));
        assertFalse(Checks.interfaceMatches("=eth", List.of("eth0")), "= is an exact name");
        assertTrue(Checks.interfaceMatches("^lo", List.of("eth0", "lo")), "all but lo: eth0");
        assertFalse(Checks.interfaceMatches("^lo,eth", List.of("eth0", "lo")), "nothing left");
        assertTrue(Checks.interfaceMatches("eth0:29500", List.of("eth0")), "with a port");
    }

    @Test
    void nccl4jValuesAreCheckedAsTheLibraryWillCheckThem() {
        List<Finding> fs = Checks.environment(Map.of("NCCL4J_TIMEOUT", "soon", "NCCL4J_NCCL_LOG", "loud",
                "NCCL4J_DEVICE", "3"), oneGpu(healthy(List.of())));
        List<String> fails = fs.stream().filter(f -> f.status() == Status.FAIL).map(Finding::detail).toList();
        assertEquals(3, fails.size(), fs.toString());
        assertTrue(fails.get(0).startsWith("NCCL4J_TIMEOUT=soon"), fails.get(0));
        assertTrue(fails.get(1).startsWith("NCCL4J_NCCL_LOG=loud is not a choice"), fails.get(1));
        assertEquals("NCCL4J_DEVICE=3 but CUDA sees 1 GPU(s)", fails.get(2));
    }

    // ---------------------------------------------------------------- the hardware, one rule a test

    @Test
    void aLinkThatIsDownIsAWarn() {
        List<Machine.Link> links = new ArrayList<>(nvlinks(17, "00000000:19:00.0"));
        links.add(new Machine.Link(17, false, 4, null));
        Finding f = only(Checks.nvml(oneGpu(healthy(links))).stream().filter(x -> x.section().equals("nvlink"))
                .toList(), "GPU 0");
        assertEquals(Status.WARN, f.status());
        assertEquals("17 of 18 NVLinks active, version 4, to {00000000:19:00.0=17}", f.detail(), "a GPU CUDA does "
                + "not see is named by its bus id");
    }

    @Test
    void pcieWithFewerLanesIsAWarnAndALowerGenerationAtIdleIsNoted() {
        List<Finding> narrow = Checks.nvml(oneGpu(new Machine.NvmlGpu(List.of(), 5, 5, 8, 16, 0, 0, List.of())));
        assertTrue(narrow.stream().anyMatch(f -> f.section().equals("pcie") && f.status() == Status.WARN
                && f.detail().equals("PCIe gen 5 x8 (max gen 5 x16): fewer lanes than the slot has")), narrow.toString());
        List<Finding> idle = Checks.nvml(oneGpu(new Machine.NvmlGpu(List.of(), 1, 5, 16, 16, 0, 0, List.of())));
        assertTrue(idle.stream().anyMatch(f -> f.section().equals("pcie") && f.status() == Status.INFO), idle.toString());
        List<Finding> ok = Checks.nvml(oneGpu(healthy(List.of())));
        assertTrue(ok.stream().anyMatch(f -> f.section().equals("pcie") && f.status() == Status.OK
                && f.detail().equals("PCIe gen 5 x16 (max gen 5 x16)")), ok.toString());
    }

    @Test
    void thermalSlowdownEccAndOtherProcessesAreFound() {
        List<Finding> fs = Checks.nvml(oneGpu(new Machine.NvmlGpu(List.of(), 5, 5, 16, 16,
                Checks.HW_THERMAL | 0x1L, 2, List.of(4242L))));
        List<String> health = fs.stream().filter(f -> f.section().equals("health"))
                .map(f -> f.status() + " " + f.detail()).toList();
        assertEquals(List.of("WARN clocks held back: hardware thermal slowdown",
                "FAIL 2 volatile uncorrected ECC errors", "WARN other processes compute on it: pids [4242]"), health);
        assertTrue(Checks.nvml(oneGpu(healthy(List.of()))).stream().noneMatch(f -> f.section().equals("health")),
                "idle clocks (0x1) are not a problem");
    }

    @Test
    void nvlinkWithoutPeerAccessIsAWarnAndTheMatrixIsPrinted() {
        Machine m = twoNvlinked();
        Machine refused = new Machine(m.driverVersion(), m.runtimeVersion(), null, m.gpus(),
                new boolean[][] {{false, false}, {false, false}}, null, "580", m.pcie(), m.interfaces());
        List<Finding> fs = Checks.topology(refused);
        assertEquals(List.of("      GPU0  GPU1", "GPU0  X     NV18", "GPU1  NV18  X"), fs.stream()
                .filter(f -> f.subject().equals("matrix")).map(Finding::detail).toList());
        assertEquals(2, fs.stream().filter(f -> f.status() == Status.WARN).count());
        assertTrue(Checks.topology(m).stream().noneMatch(f -> f.status() == Status.WARN));
    }

    @Test
    void withoutNvmlTheLinkChecksAreSkippedWithAWarn() {
        Machine m = new Machine(13000, 13000, null, List.of(gpu(0, null)), new boolean[][] {{false}},
                "libnvidia-ml cannot be loaded", null, null, List.of("lo"));
        List<Finding> fs = Checks.nvml(m);
        assertEquals(1, fs.size());
        assertEquals(Status.WARN, fs.get(0).status());
        assertEquals("not available: libnvidia-ml cannot be loaded", fs.get(0).detail());
    }

    @Test
    void cudaMissingOrADriverOlderThanTheRuntimeIsAFail() {
        Machine none = new Machine(0, 0, "the CUDA runtime cannot be loaded", List.of(), null, null, null, null,
                List.of());
        assertEquals(Status.FAIL, Checks.cuda(none).get(0).status());
        Machine old = new Machine(12020, 13000, null, List.of(gpu(0, null)), new boolean[][] {{false}}, null, null,
                null, List.of());
        Finding f = Checks.cuda(old).get(0);
        assertEquals(Status.FAIL, f.status());
        assertEquals("driver supports CUDA 12.2, runtime 13.0", f.detail());
        assertEquals("INFO", Checks.cuda(old).get(1).status().name());
        assertEquals("NVIDIA H100 80GB HBM3, 85.0 GiB, bus 00000000:18:00.0, compute capability 9.0",
                Checks.cuda(old).get(1).detail());
    }

    @Test
    void missingEntryPointsAreListedWithTheVersionThatAddsThem() {
        List<Finding> fs = Checks.nccl("2.28.3", "/usr/lib/libnccl.so.2", List.of(NcclFunction.ncclCommRevoke), null);
        assertEquals(Status.OK, fs.get(0).status());
        assertEquals("not in this NCCL: ncclCommRevoke (2.28.7+); the nccl4j calls that need them say so",
                fs.get(1).detail());
    }

    @Test
    void theExpectationTable() {
        assertEquals(63.0, Expectations.pcieGBps(5, 16), 0.01);
        assertEquals(31.5, Expectations.pcieGBps(4, 16), 0.01);
        assertEquals(450.0, Expectations.nvlinkGBps(4, 18), 0.01);
        assertEquals(0.0, Expectations.pcieGBps(9, 16));
        Machine m = twoNvlinked();
        assertEquals(450.0, Paths.between(m, 0, 1).expectedGBps(), 0.01, "NV18 of NVLink 4");
    }

    // ---------------------------------------------------------------- the report and the run here

    @Test
    void theJsonReportHasItsVersionSummaryAndFindings() throws Exception {
        List<Finding> fs = List.of(Finding.ok("cuda", "CUDA", "fine"), Finding.warn("env", "NCCL_ALOG", "typo", "fix"));
        String json = Doctor.json(fs, 1, 0.42, List.of());
        JsonParser p = new JsonFactory().createParser(json);
        assertEquals(JsonToken.START_OBJECT, p.nextToken());
        List<String> fields = new ArrayList<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            fields.add(p.getCurrentName());
            p.nextToken();
            p.skipChildren();
        }
        assertEquals(List.of("format", "version", "nccl4j", "host", "seconds", "exitStatus", "summary",
                "findings", "paths"), fields);
        assertTrue(json.contains("\"format\" : \"nccl4j-doctor\""), json);
        assertTrue(json.contains("\"version\" : 1"), json);
        assertTrue(json.contains("\"WARN\" : 1"), json);
        assertTrue(json.contains("\"fix\" : \"fix\""), json);
    }

    @Test
    void onAMachineWithoutAGpuItSaysWhatIsMissingAndExits2WithoutAStackTrace() {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = Tools.execute(new Doctor(), new String[] {"--quick"}, new PrintWriter(out), new PrintWriter(err));
        assertEquals(2, status, out + "\n" + err);
        assertTrue(out.toString().contains("FAIL  cuda      CUDA: "), out.toString());
        assertTrue(out.toString().contains("cannot run here (exit 2)"), out.toString());
        assertFalse(out.toString().contains("\tat ") || err.toString().contains("\tat "), err.toString());
    }

    @Test
    void helpAndVersionAnswerWithStatus0AndABadOptionWith2() {
        StringWriter out = new StringWriter();
        assertEquals(0, Tools.execute(new Doctor(), new String[] {"--help"}, new PrintWriter(out),
                new PrintWriter(new StringWriter())));
        assertTrue(out.toString().startsWith("Usage: nccl4j-doctor [-hV] [--json] [--preflight] [--quick]"), out.toString());
        out = new StringWriter();
        assertEquals(0, Tools.execute(new Doctor(), new String[] {"--version"}, new PrintWriter(out),
                new PrintWriter(new StringWriter())));
        assertTrue(out.toString().startsWith("nccl4j-doctor (nccl4j "), out.toString());
        StringWriter err = new StringWriter();
        assertEquals(2, Tools.execute(new Doctor(), new String[] {"--fast"}, new PrintWriter(new StringWriter()),
                new PrintWriter(err)));
        assertTrue(err.toString().startsWith("nccl4j-doctor: Unknown option: '--fast'\n"), err.toString());
    }

    @Test
    void everyNccl4jVariableTheSourcesReadIsKnownToTheDoctor() throws Exception {
        java.util.regex.Pattern named = java.util.regex.Pattern.compile("\"(NCCL4J_[A-Z_]+)\"");
        java.util.Set<String> read = new java.util.TreeSet<>();
        for (String module : new String[] {"../nccl4j-native/src/main/java", "../nccl4j-core/src/main/java",
                "src/main/java"}) {
            try (var files = java.nio.file.Files.walk(java.nio.file.Path.of(module))) {
                for (java.nio.file.Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                    java.util.regex.Matcher m = named.matcher(java.nio.file.Files.readString(f));
                    while (m.find()) {
                        read.add(m.group(1));
                    }
                }
            }
        }
        assertTrue(read.contains("NCCL4J_TIMEOUT") && read.contains("NCCL4J_LEFT_BEHIND_EXIT"), read.toString());
        read.removeAll(Checks.NCCL4J_VARIABLES);
        assertEquals(java.util.Set.of(), read, "variables nccl4j reads that the doctor would call unknown");
    }
}
