package org.nccl4j.tools.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nccl4j.tools.doctor.Finding.Status;

/**
 * The doctor's paths between GPUs (NVSwitch, direct NVLink, PCIe), what each should carry and the verdict on a
 * measured copy, on made-up machines shaped as the ones measured; and NCCL_IB_HCA against the host's RDMA devices.
 */
class DoctorPathsTest {
    private static final String SWITCH_BUS = "FFFFFFFF:FF:FF.0";

    private static Machine.Gpu gpu(int i, String name, int major, int minor, Machine.NvmlGpu nvml) {
        return new Machine.Gpu(i, name, 80L << 30, busId(i), major, minor, nvml);
    }

    private static String busId(int i) {
        return String.format("00000000:%02X:00.0", 0x18 + 0x10 * i);
    }

    private static Machine.NvmlGpu nvml(List<Machine.Link> links, int gen, int width) {
        return new Machine.NvmlGpu(links, gen, gen, width, width, 0x1L, 0, List.of());
    }

    /** n links to the NVSwitches, the first {@code up} of them active (a down link has no other end). */
    private static List<Machine.Link> switchLinks(int n, int up, int nvlinkVersion) {
        List<Machine.Link> l = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            l.add(k < up ? new Machine.Link(k, true, nvlinkVersion, SWITCH_BUS, Machine.Remote.SWITCH)
                    : new Machine.Link(k, false, nvlinkVersion, null, Machine.Remote.UNKNOWN));
        }
        return l;
    }

    private static String[][] square(int n, String word) {
        String[][] t = new String[n][n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                t[i][j] = i == j ? "X" : word;
            }
        }
        return t;
    }

    private static boolean[][] peers(int n) {
        boolean[][] p = new boolean[n][n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                p[i][j] = i != j;
            }
        }
        return p;
    }

    /**
     * 4 x H100 SXM as measured: 18 NVLink 4 links per GPU, each to an NVSwitch (remote bus FFFFFFFF), all on NUMA node
     * 0 (NVML's common ancestor: a host bridge), PCIe gen 5 x16; {@code upOnGpu2} of GPU 2's links up.
     */
    private static Machine h100Switch(int upOnGpu2) {
        List<Machine.Gpu> gpus = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            gpus.add(gpu(i, "NVIDIA H100 80GB HBM3", 9, 0, nvml(switchLinks(18, i == 2 ? upOnGpu2 : 18, 4), 5, 16)));
        }
        return new Machine(13000, 13000, null, gpus, peers(4), null, "580.159.04", square(4, "PHB"),
                List.of("eth0", "lo"));
    }

    /** Two GPUs joined directly by {@code links} NVLinks of a version, on one PCIe switch. */
    private static Machine direct(String name, int major, int minor, int version, int links, int gen) {
        List<Machine.Link> a = new ArrayList<>();
        List<Machine.Link> b = new ArrayList<>();
        for (int k = 0; k < links; k++) {
            a.add(new Machine.Link(k, true, version, busId(1)));
            b.add(new Machine.Link(k, true, version, busId(0)));
        }
        return new Machine(12080, 12080, null, List.of(gpu(0, name, major, minor, nvml(a, gen, 16)),
                gpu(1, name, major, minor, nvml(b, gen, 16))), peers(2), null, "570", square(2, "PIX"), List.of("lo"));
    }

    /** Four PCIe gen 4 x16 GPUs on two sockets: 0-1 and 2-3 on one switch each, 0/1 to 2/3 across sockets. */
    private static Machine pcieOnly(boolean[][] p2p) {
        List<Machine.Gpu> gpus = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            gpus.add(gpu(i, "NVIDIA L40S", 8, 9, nvml(List.of(), 4, 16)));
        }
        String[][] t = {{"X", "PIX", "SYS", "SYS"}, {"PIX", "X", "SYS", "SYS"}, {"SYS", "SYS", "X", "PHB"},
            {"SYS", "SYS", "PHB", "X"}};
        return new Machine(12080, 12080, null, gpus, p2p, null, "570", t, List.of("eth0", "lo"));
    }

    private static List<String> matrix(Machine m) {
        return Checks.topology(m).stream().filter(f -> f.subject().equals("matrix")).map(Finding::detail).toList();
    }

    private static List<String> pathLines(Machine m) {
        return Checks.topology(m).stream().filter(f -> f.subject().equals("path")).map(Finding::detail).toList();
    }

    // ---------------------------------------------------------------- NVSwitch

    @Test
    void fourH100sThroughNvSwitchAreNv18NotPhbAndTheMeasuredCopyIsJudgedAgainst450() {
        Machine m = h100Switch(18);
        assertEquals(List.of("      GPU0  GPU1  GPU2  GPU3", "GPU0  X     NV18  NV18  NV18",
                "GPU1  NV18  X     NV18  NV18", "GPU2  NV18  NV18  X     NV18", "GPU3  NV18  NV18  NV18  X"), matrix(m));
        assertEquals(List.of("every pair: NV18, NVLink 4 through NVSwitch, 18 links, 450 GB/s each way"),
                pathLines(m));
        Paths.Path p = Paths.between(m, 0, 1);
        assertEquals(Paths.Kind.NVLINK_SWITCH, p.kind());
        assertEquals(450.0, p.expectedGBps(), 1e-9);
        Finding f = Paths.judgeCopy(p, 390.7);
        assertEquals(Status.OK, f.status());
        assertEquals("copy 390.7 GB/s over NV18 (NVLink 4 through NVSwitch, 18 links): 87 % of the 450 GB/s the "
                + "links carry", f.detail());
        assertEquals(new Finding.Measurement(390.7, 450.0, "NV18"), f.measurement());
        Finding nvlink = Checks.nvml(m).stream().filter(x -> x.section().equals("nvlink")).findFirst().orElseThrow();
        assertEquals("18 of 18 NVLinks active, version 4, to {NVSwitch=18}", nvlink.detail());
    }

    @Test
    void aSwitchBusIdOfDomainFfffffffIsReadAsAnNvSwitchWhenTheTypeIsNotReported() {
        assertEquals(Machine.Remote.SWITCH, new Machine.Link(0, true, 4, "FFFFFFFF:FF:FF.0").remote());
        assertEquals(Machine.Remote.SWITCH, new Machine.Link(0, true, 4, "ffffffff:00:00.0").remote());
        assertEquals(Machine.Remote.GPU, new Machine.Link(0, true, 4, "00000000:19:00.0").remote());
        assertEquals(Machine.Remote.UNKNOWN, new Machine.Link(0, false, 4, null).remote());
    }

    @Test
    void aGpuWithTwoThirdsOfItsSwitchLinksDownIsNv6AndItsMeasuredCopyAWarn() {
        Machine m = h100Switch(6);
        assertEquals("GPU2  NV6   NV6   X     NV6", matrix(m).get(3));
        assertEquals("GPU0  X     NV18  NV6   NV18", matrix(m).get(1));
        Paths.Path p = Paths.between(m, 0, 2);
        assertEquals(6, p.links());
        assertEquals(18, p.linksBuilt());
        assertEquals(450.0, p.expectedGBps(), 1e-9, "expected at the links the path has when healthy");
        Finding f = Paths.judgeCopy(p, 130.0);
        assertEquals(Status.WARN, f.status());
        assertEquals("copy 130.0 GB/s over NV6 (NVLink 4 through NVSwitch, 18 links built, GPU 2 has 6 of 18 up): "
                + "29 % of the 450 GB/s its 18 links carry when all are up", f.detail());
        assertTrue(f.fix().startsWith("NVLinks are down"), f.fix());
        assertEquals(Status.OK, Paths.judgeCopy(Paths.between(m, 0, 1), 390.7).status(), "the healthy pairs");
        Finding nvlink = Checks.nvml(m).stream().filter(x -> x.section().equals("nvlink") && x.subject()
                .equals("GPU 2")).findFirst().orElseThrow();
        assertEquals(Status.WARN, nvlink.status());
        assertEquals("6 of 18 NVLinks active, version 4, to {NVSwitch=6}", nvlink.detail());
    }

    @Test
    void anAllReduceThroughNvSwitchIsJudgedAgainstTheSlowestPathAndNvlsMayPassTheLinkRate() {
        List<Paths.Path> healthy = Paths.all(h100Switch(18));
        Finding ok = Paths.judgeAllReduce(360.0, 4, healthy);
        assertEquals(Status.OK, ok.status());
        assertEquals("bus bandwidth 360.0 GB/s over 4 GPUs at 256 MiB: 80 % of the 450 GB/s the slowest path (NV18, "
                + "GPU 0 -> GPU 1) carries", ok.detail());
        Finding nvls = Paths.judgeAllReduce(480.0, 4, healthy);
        assertEquals(Status.OK, nvls.status());
        assertTrue(nvls.detail().endsWith("as NVLink SHARP (NVLS) reduces inside the switch"), nvls.detail());
        assertEquals(Status.WARN, Paths.judgeAllReduce(1000.0, 4, healthy).status(), "beyond twice: misjudged");
        assertEquals(Status.OK, Paths.judgeAllReduce(318.2, 4, healthy).status(), "71 %, as measured on 4 x H100");
        assertEquals(Status.OK, Paths.judgeAllReduce(225.0, 4, healthy).status(), "50 % is not below 50 %");
        Finding host = Paths.judgeAllReduce(22.0, 4, healthy);   // NCCL_P2P_DISABLE=1 on 4 x H100
        assertEquals(Status.WARN, host.status());
        assertTrue(host.detail().contains("5 % of the 450 GB/s"), host.detail());
        assertTrue(host.fix().startsWith("below 50 %: look at the pair lines above"), host.fix());
        Finding degraded = Paths.judgeAllReduce(125.0, 4, Paths.all(h100Switch(6)));
        assertEquals(Status.WARN, degraded.status());
        assertTrue(degraded.detail().contains("28 % of the 450 GB/s the slowest path (NV6, GPU 0 -> GPU 2)"),
                degraded.detail());
    }

    // ---------------------------------------------------------------- direct NVLink

    @Test
    void directNvlinkIsNvNWithItsVersionsRate() {
        Machine a100 = direct("NVIDIA A100-SXM4-80GB", 8, 0, 3, 12, 4);
        assertEquals(List.of("      GPU0  GPU1", "GPU0  X     NV12", "GPU1  NV12  X"), matrix(a100));
        Paths.Path p = Paths.between(a100, 0, 1);
        assertEquals(Paths.Kind.NVLINK, p.kind());
        assertEquals(300.0, p.expectedGBps(), 1e-9);
        assertEquals(List.of("GPU pair 0-1: NV12, NVLink 3, 12 links direct, 300 GB/s each way"), pathLines(a100));
        assertEquals(Status.OK, Paths.judgeCopy(p, 262.0).status());
        assertEquals(Status.WARN, Paths.judgeCopy(p, 150.0).status());

        Machine v100 = direct("Tesla V100-SXM2-32GB", 7, 0, 2, 2, 3);
        assertEquals("GPU0  X     NV2", matrix(v100).get(1));
        assertEquals(50.0, Paths.between(v100, 1, 0).expectedGBps(), 1e-9);

        Machine ga102 = direct("NVIDIA RTX A6000", 8, 6, 3, 4, 4);
        assertEquals(56.25, Paths.between(ga102, 0, 1).expectedGBps(), 1e-9, "GA102's narrower NVLink 3");
    }

    @Test
    void nvmlsNvlinkVersionCodesAreReadAsMajorVersions() {
        assertEquals(4, Probe.nvlinkVersion(6), "H100: NVML_NVLINK_VERSION_4_0");
        assertEquals(3, Probe.nvlinkVersion(5), "A100: NVML_NVLINK_VERSION_3_1");
        assertEquals(3, Probe.nvlinkVersion(4));
        assertEquals(2, Probe.nvlinkVersion(3));
        assertEquals(5, Probe.nvlinkVersion(7));
        assertEquals(-1, Probe.nvlinkVersion(0));
        assertEquals(0.0, Expectations.nvlinkPerLinkGBps(6, 10, 0), "no published per-link rate for NVLink 6");
        assertEquals(50.0, Expectations.nvlinkPerLinkGBps(5, 10, 0));
    }

    // ---------------------------------------------------------------- PCIe

    @Test
    void pcieOnlyPairsArePixPhbAndSysAndAcrossSocketsIsNotJudged() {
        Machine m = pcieOnly(peers(4));
        assertEquals(List.of("      GPU0  GPU1  GPU2  GPU3", "GPU0  X     PIX   SYS   SYS", "GPU1  PIX   X     SYS   SYS",
                "GPU2  SYS   SYS   X     PHB", "GPU3  SYS   SYS   PHB   X"), matrix(m));
        assertEquals(List.of("GPU pair 0-1: PIX, PCIe gen 4 x16 through one PCIe switch, 32 GB/s each way",
                "GPU pairs 0-2, 0-3, 1-2, 1-3: SYS, PCIe gen 4 x16 across NUMA nodes (the CPUs' interconnect), 32 GB/s "
                + "each way", "GPU pair 2-3: PHB, PCIe gen 4 x16 through a PCIe host bridge, 32 GB/s each way"),
                pathLines(m));
        Finding pix = Paths.judgeCopy(Paths.between(m, 0, 1), 25.1);
        assertEquals(Status.OK, pix.status());
        assertEquals("copy 25.1 GB/s over PIX (PCIe gen 4 x16 through one PCIe switch): 80 % of the 32 GB/s the "
                + "narrower PCIe link carries", pix.detail());
        assertEquals(Status.WARN, Paths.judgeCopy(Paths.between(m, 2, 3), 12.0).status());
        Finding sys = Paths.judgeCopy(Paths.between(m, 0, 2), 11.0);
        assertEquals(Status.INFO, sys.status());
        assertTrue(sys.detail().endsWith("35 % of the 32 GB/s PCIe carries, not judged: the CPUs and host memory set "
                + "this rate"), sys.detail());
    }

    @Test
    void withoutPeerAccessAPcieCopyIsStagedThroughTheHostAndNotJudged() {
        boolean[][] p2p = peers(4);
        p2p[0][1] = false;
        Paths.Path p = Paths.between(pcieOnly(p2p), 0, 1);
        assertFalse(p.judged());
        assertTrue(p.description().endsWith("no peer access: staged through host memory"), p.description());
        assertEquals(Status.INFO, Paths.judgeCopy(p, 9.0).status());
    }

    @Test
    void aCopyFarAboveItsExpectationSaysThePathWasMisjudged() {
        // the H100 machine as the old doctor saw it: its switch links unrecognised, every pair PHB at PCIe gen 5 x16
        List<Machine.Gpu> gpus = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            gpus.add(gpu(i, "NVIDIA H100 80GB HBM3", 9, 0, nvml(List.of(), 5, 16)));
        }
        Machine m = new Machine(13000, 13000, null, gpus, peers(4), null, "580", square(4, "PHB"), List.of("lo"));
        Finding f = Paths.judgeCopy(Paths.between(m, 0, 1), 390.7);
        assertEquals(Status.WARN, f.status());
        assertEquals("copy 390.7 GB/s over PHB (PCIe gen 5 x16 through a PCIe host bridge): 620 % of the 63 GB/s the "
                + "doctor expected: more than that path can carry, so the path was misjudged and this measurement is "
                + "not judged", f.detail());
        assertTrue(f.fix().startsWith("compare the matrix above with nvidia-smi topo -m"), f.fix());
        assertEquals(Status.WARN, Paths.judgeCopy(Paths.between(h100Switch(18), 0, 1), 451.0).status(),
                "just above the links' rate is misjudged too");
    }

    @Test
    void withoutNvmlThePathIsUnknownAndNotJudged() {
        Machine m = new Machine(13000, 13000, null, List.of(gpu(0, "G", 9, 0, null), gpu(1, "G", 9, 0, null)),
                peers(2), "no NVML", null, null, List.of("lo"));
        Paths.Path p = Paths.between(m, 0, 1);
        assertEquals(Paths.Kind.UNKNOWN, p.kind());
        assertEquals(Status.INFO, Paths.judgeCopy(p, 40.0).status());
        assertNull(Paths.matrix(m));
        assertEquals(Status.INFO, Paths.judgeAllReduce(40.0, 2, Paths.all(m)).status());
    }

    // ---------------------------------------------------------------- the JSON

    @Test
    void theJsonCarriesEachPathAndEachMeasurement() {
        Machine m = h100Switch(6);
        List<Paths.Path> paths = Paths.all(m);
        List<Finding> fs = List.of(Paths.judgeCopy(paths.get(0), 390.7), Paths.judgeCopy(Paths.between(m, 0, 2),
                130.0));
        String json = Doctor.json(fs, 1, 1.0, paths);
        assertTrue(json.contains("\"path\" : \"NV18\",\n    \"measuredGBps\" : 390.7,\n    \"expectedGBps\" : 450.0"),
                json);
        assertTrue(json.contains("\"from\" : 0,\n    \"to\" : 2,\n    \"path\" : \"NV6\",\n    \"kind\" : "
                + "\"nvlink-switch\",\n    \"links\" : 6,\n    \"linksBuilt\" : 18,\n    \"nvlinkVersion\" : 4,\n    "
                + "\"expectedGBps\" : 450.0,\n    \"judged\" : true,\n    \"description\" : \"NVLink 4 through NVSwitch, "
                + "18 links built, GPU 2 has 6 of 18 up\""), json);
        assertEquals(12, json.split("\"kind\"", -1).length - 1, "one entry per ordered pair");
        String pcie = Doctor.json(List.of(), 0, 1.0, Paths.all(pcieOnly(peers(4))));
        assertTrue(pcie.contains("\"kind\" : \"pcie\",\n    \"links\" : 0,\n    \"linksBuilt\" : 0,\n    "
                + "\"nvlinkVersion\" : null,\n    \"expectedGBps\" : 31.5,\n    \"judged\" : false"), pcie);
    }

    // ---------------------------------------------------------------- NCCL_IB_HCA and NCCL_SOCKET_IFNAME

    private static Machine withHcas(List<Machine.Hca> hcas) {
        Machine m = h100Switch(18);
        return new Machine(m.driverVersion(), m.runtimeVersion(), null, m.gpus(), m.p2p(), null, m.nvmlDriver(),
                m.pcie(), m.interfaces(), hcas);
    }

    private static final List<Machine.Hca> TWO = List.of(new Machine.Hca("mlx5_0", List.of(1)),
            new Machine.Hca("mlx5_1", List.of(1)));

    private static List<String> hca(String value, List<Machine.Hca> hcas) {
        return Checks.environment(Map.of("NCCL_IB_HCA", value), withHcas(hcas)).stream()
                .filter(f -> f.subject().equals("NCCL_IB_HCA")).map(f -> f.status() + " " + f.detail()).toList();
    }

    @Test
    void anHcaThatIsPresentIsOkWithThePortsItSelects() {
        assertEquals(List.of("OK NCCL_IB_HCA=mlx5_0 selects mlx5_0:1"), hca("mlx5_0", TWO));
        assertEquals(List.of("OK NCCL_IB_HCA=mlx5 selects mlx5_0:1, mlx5_1:1"), hca("mlx5", TWO), "a prefix");
        assertEquals(List.of("OK NCCL_IB_HCA==mlx5_0:1,mlx5_1:1 selects mlx5_0:1, mlx5_1:1"),
                hca("=mlx5_0:1,mlx5_1:1", TWO), "exact names with ports");
        Checks.NameList railPlane = Checks.NameList.parse("=mlx5_0::0:0,mlx5_1:1:1:0");
        assertEquals(List.of(new Checks.NameList.Entry("mlx5_0", -1), new Checks.NameList.Entry("mlx5_1", 1)),
                railPlane.entries(), "<hca>[:<port>[:<rail>[:<plane>]]]: an empty port is every port");
        assertTrue(railPlane.exact() && !railPlane.exclude());
    }

    @Test
    void anHcaTheHostLacksIsAWarnNamingItAndThePresentOnes() {
        assertEquals(List.of("WARN NCCL_IB_HCA=mlx5_0 but this host has no RDMA device (/sys/class/infiniband is "
                + "empty or absent): NCCL uses sockets between hosts"), hca("mlx5_0", List.of()));
        assertEquals(List.of("WARN NCCL_IB_HCA==mlx5_2 names mlx5_2, which this host lacks (present: mlx5_0:1, "
                + "mlx5_1:1)", "WARN NCCL_IB_HCA==mlx5_2 leaves NCCL no RDMA device of this host (present: mlx5_0:1, "
                + "mlx5_1:1): it uses sockets between hosts"), hca("=mlx5_2", TWO));
        assertEquals(List.of("WARN NCCL_IB_HCA=mlx5_0,mlx5_7 names mlx5_7, which this host lacks (present: mlx5_0:1, "
                + "mlx5_1:1)"), hca("mlx5_0,mlx5_7", TWO), "one of two missing: NCCL still has mlx5_0");
        assertEquals(List.of("WARN NCCL_IB_HCA=mlx5_0:2 names mlx5_0:2, which this host lacks (present: mlx5_0:1, "
                + "mlx5_1:1)", "WARN NCCL_IB_HCA=mlx5_0:2 leaves NCCL no RDMA device of this host (present: "
                + "mlx5_0:1, mlx5_1:1): it uses sockets between hosts"), hca("mlx5_0:2", TWO), "a port it lacks");
        assertEquals(2, hca("=mlx5", TWO).size(), "= makes mlx5 an exact name, which no device has");
        List<Finding> off = Checks.environment(Map.of("NCCL_IB_HCA", "mlx5_0", "NCCL_IB_DISABLE", "1"),
                withHcas(List.of()));
        assertTrue(off.stream().noneMatch(f -> f.status() == Status.WARN), "with IB off the list is not used: " + off);
    }

    @Test
    void anExclusionIsJudgedByWhatItLeaves() {
        assertEquals(List.of("OK NCCL_IB_HCA=^mlx5_1 selects mlx5_0:1"), hca("^mlx5_1", TWO));
        assertEquals(List.of("WARN NCCL_IB_HCA=^=mlx5_0,mlx5_1 leaves NCCL no RDMA device of this host (present: "
                + "mlx5_0:1, mlx5_1:1): it uses sockets between hosts"), hca("^=mlx5_0,mlx5_1", TWO));
        assertEquals(List.of("WARN NCCL_IB_HCA=^mlx5_9 excludes mlx5_9, which this host lacks (present: mlx5_0:1, "
                + "mlx5_1:1): that exclusion has no effect"), hca("^mlx5_9", TWO));
        assertEquals(List.of(), hca("^mlx5_0", List.of()), "nothing to exclude on a host without RDMA devices");
        List<Machine.Hca> eleven = List.of(new Machine.Hca("mlx5_1", List.of(1)), new Machine.Hca("mlx5_10",
                List.of(1)));
        assertEquals(List.of("WARN NCCL_IB_HCA=^mlx5_1 leaves NCCL no RDMA device of this host (present: "
                + "mlx5_1:1, mlx5_10:1): it uses sockets between hosts"), hca("^mlx5_1", eleven),
                "a prefix exclusion takes mlx5_10 with mlx5_1");
        assertEquals(List.of("OK NCCL_IB_HCA=^=mlx5_1 selects mlx5_10:1"), hca("^=mlx5_1", eleven));
    }

    @Test
    void aSocketInterfaceListWithOneMissingNameIsAWarnNamingIt() {
        List<Finding> fs = Checks.environment(Map.of("NCCL_SOCKET_IFNAME", "=eth0,ib9"), h100Switch(18));
        List<String> lines = fs.stream().filter(f -> f.subject().equals("NCCL_SOCKET_IFNAME"))
                .map(f -> f.status() + " " + f.detail()).toList();
        assertEquals(List.of("WARN NCCL_SOCKET_IFNAME==eth0,ib9 names ib9, which this host lacks (up: [eth0, lo])"),
                lines);
    }

    @Test
    void theHostsRdmaDevicesAreReadFromSysfs(@TempDir Path root) throws Exception {
        Files.createDirectories(root.resolve("mlx5_1/ports/1"));
        Files.createDirectories(root.resolve("mlx5_0/ports/1"));
        Files.createDirectories(root.resolve("mlx5_0/ports/2"));
        Files.createDirectories(root.resolve("irdma0"));
        assertEquals(List.of(new Machine.Hca("irdma0", List.of()), new Machine.Hca("mlx5_0", List.of(1, 2)),
                new Machine.Hca("mlx5_1", List.of(1))), Probe.hcas(root));
        assertEquals(List.of(), Probe.hcas(root.resolve("absent")));
    }
}
