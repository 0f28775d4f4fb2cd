package org.nccl4j.tools.doctor;

import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.bytedeco.cuda.cudart.cudaDeviceProp;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.cuda.global.nvml;
import org.bytedeco.cuda.nvml.nvmlDevice_st;
import org.bytedeco.cuda.nvml.nvmlPciInfo_t;
import org.bytedeco.cuda.nvml.nvmlProcessInfo_v2_t;
import org.bytedeco.javacpp.IntPointer;

/**
 * Reads a {@link Machine} off this host: CUDA ({@code cudaDriverGetVersion}, {@code cudaRuntimeGetVersion},
 * {@code cudaGetDeviceProperties}, {@code cudaDeviceCanAccessPeer}), NVML ({@code nvmlDeviceGetNvLinkState},
 * {@code ...NvLinkVersion}, {@code ...NvLinkRemotePciInfo_v2}, {@code ...NvLinkRemoteDeviceType},
 * {@code ...TopologyCommonAncestor}, {@code ...CurrPcieLinkGeneration/Width}, {@code ...MaxPcieLinkGeneration/Width},
 * {@code ...CurrentClocksEventReasons}, {@code ...TotalEccErrors}, {@code ...ComputeRunningProcesses_v3}), through
 * the JavaCPP Presets for CUDA, and sysfs ({@code /sys/class/infiniband}). A part that cannot be read is named in the
 * machine (its error), never thrown.
 */
final class Probe {
    private Probe() {
    }

    /**
     * Reads this host.
     *
     * @param full whether to read peer access and NVML too; without, the machine has CUDA's versions, its GPUs and
     *        the network, which is what {@link Preflight} judges
     * @return the machine
     */
    static Machine read(boolean full) {
        List<String> interfaces = interfaces();
        int[] v = new int[1];
        int driver = 0;
        int runtime = 0;
        int count;
        try {
            if (cudart.cudaDriverGetVersion(v) == 0) {
                driver = v[0];
            }
            if (cudart.cudaRuntimeGetVersion(v) == 0) {
                runtime = v[0];
            }
            int rc = cudart.cudaGetDeviceCount(v);
            if (rc != 0) {
                return new Machine(driver, runtime, "cudaGetDeviceCount failed: " + cudart.cudaGetErrorName(rc)
                        .getString() + " (" + cudart.cudaGetErrorString(rc).getString() + ")", List.of(), null, null,
                        null, null, interfaces, hcas());
            }
            count = v[0];
        } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
            return new Machine(0, 0, "the CUDA runtime cannot be loaded (" + e.getMessage() + "): no NVIDIA driver or "
                    + "CUDA on this machine", List.of(), null, null, null, null, interfaces, hcas());
        }
        List<String> busIds = new ArrayList<>();
        List<int[]> caps = new ArrayList<>();
        List<String> names = new ArrayList<>();
        List<Long> memory = new ArrayList<>();
        for (int d = 0; d < count; d++) {
            try (cudaDeviceProp p = new cudaDeviceProp()) {
                cudart.cudaGetDeviceProperties(p, d);
                names.add(p.name().getString().trim());
                memory.add(p.totalGlobalMem());
                busIds.add(String.format(Locale.ROOT, "%08X:%02X:%02X.0", p.pciDomainID(), p.pciBusID(),
                        p.pciDeviceID()));
                caps.add(new int[] {p.major(), p.minor()});
            }
        }
        if (!full) {
            List<Machine.Gpu> gpus = new ArrayList<>();
            for (int d = 0; d < count; d++) {
                gpus.add(new Machine.Gpu(d, names.get(d), memory.get(d), busIds.get(d), caps.get(d)[0],
                        caps.get(d)[1], null));
            }
            return new Machine(driver, runtime, null, gpus, null, "not read (--preflight)", null, null, interfaces,
                    hcas());
        }
        boolean[][] p2p = new boolean[count][count];
        for (int i = 0; i < count; i++) {
            for (int j = 0; j < count; j++) {
                if (i != j && cudart.cudaDeviceCanAccessPeer(v, i, j) == 0) {
                    p2p[i][j] = v[0] != 0;
                }
            }
        }
        String nvmlError = null;
        String nvmlDriver = null;
        Machine.NvmlGpu[] facts = new Machine.NvmlGpu[count];
        String[][] pcie = null;
        try {
            int rc = nvml.nvmlInit_v2();
            if (rc != 0) {
                nvmlError = "nvmlInit failed: " + nvml.nvmlErrorString(rc).getString();
            } else {
                try {
                    byte[] buf = new byte[96];
                    if (nvml.nvmlSystemGetDriverVersion(buf, buf.length) == 0) {
                        nvmlDriver = cString(buf);
                    }
                    nvmlDevice_st[] devs = new nvmlDevice_st[count];
                    for (int d = 0; d < count; d++) {
                        devs[d] = byBus(busIds.get(d));
                        facts[d] = devs[d] == null ? null : gpu(devs[d]);
                    }
                    pcie = pcie(devs);
                } finally {
                    nvml.nvmlShutdown();
                }
            }
        } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
            nvmlError = "libnvidia-ml cannot be loaded (" + e.getMessage() + ")";
        }
        List<Machine.Gpu> gpus = new ArrayList<>();
        for (int d = 0; d < count; d++) {
            gpus.add(new Machine.Gpu(d, names.get(d), memory.get(d), busIds.get(d), caps.get(d)[0], caps.get(d)[1],
                    facts[d]));
        }
        return new Machine(driver, runtime, null, gpus, p2p, nvmlError, nvmlDriver, pcie, interfaces, hcas());
    }

    private static nvmlDevice_st byBus(String busId) {
        nvmlDevice_st dev = new nvmlDevice_st();
        try (org.bytedeco.javacpp.BytePointer id = new org.bytedeco.javacpp.BytePointer(busId)) {
            return nvml.nvmlDeviceGetHandleByPciBusId_v2(id, dev) == 0 ? dev : null;
        }
    }

    private static Machine.NvmlGpu gpu(nvmlDevice_st dev) {
        int[] v = new int[1];
        List<Machine.Link> links = new ArrayList<>();
        for (int l = 0; l < nvml.NVML_NVLINK_MAX_LINKS; l++) {
            if (nvml.nvmlDeviceGetNvLinkState(dev, l, v) != 0) {
                continue;   // no such link
            }
            boolean active = v[0] == nvml.NVML_FEATURE_ENABLED;
            int version = nvml.nvmlDeviceGetNvLinkVersion(dev, l, v) == 0 ? nvlinkVersion(v[0]) : -1;
            String remote = null;
            int domain = 0;
            try (nvmlPciInfo_t pci = new nvmlPciInfo_t()) {
                if (active && nvml.nvmlDeviceGetNvLinkRemotePciInfo_v2(dev, l, pci) == 0) {
                    remote = pci.busId().getString().trim();
                    domain = pci.domain();
                }
            }
            Machine.Remote end;
            if (!active) {
                end = Machine.Remote.UNKNOWN;
            } else if (nvml.nvmlDeviceGetNvLinkRemoteDeviceType(dev, l, v) == 0) {
                end = remoteType(v[0]);
            } else {
                end = remote == null ? Machine.Remote.UNKNOWN : domain == -1 || Machine.Link.switchBusId(remote)
                        ? Machine.Remote.SWITCH : Machine.Remote.GPU;
            }
            links.add(new Machine.Link(l, active, version, remote, end));
        }
        int gen = nvml.nvmlDeviceGetCurrPcieLinkGeneration(dev, v) == 0 ? v[0] : -1;
        int genMax = nvml.nvmlDeviceGetMaxPcieLinkGeneration(dev, v) == 0 ? v[0] : -1;
        int width = nvml.nvmlDeviceGetCurrPcieLinkWidth(dev, v) == 0 ? v[0] : -1;
        int widthMax = nvml.nvmlDeviceGetMaxPcieLinkWidth(dev, v) == 0 ? v[0] : -1;
        long[] l = new long[1];
        long reasons = nvml.nvmlDeviceGetCurrentClocksEventReasons(dev, l) == 0 ? l[0] : -1;
        long ecc = nvml.nvmlDeviceGetTotalEccErrors(dev, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                nvml.NVML_VOLATILE_ECC, l) == 0 ? l[0] : -1;
        List<Long> others = new ArrayList<>();
        try (IntPointer n = new IntPointer(1); nvmlProcessInfo_v2_t infos = new nvmlProcessInfo_v2_t(64)) {
            n.put(64);
            if (nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, n, infos) == 0) {
                long me = ProcessHandle.current().pid();
                for (int i = 0; i < n.get(); i++) {
                    long pid = infos.position(i).pid() & 0xffffffffL;
                    if (pid != me) {
                        others.add(pid);
                    }
                }
                infos.position(0);
            }
        }
        return new Machine.NvmlGpu(List.copyOf(links), gen, genMax, width, widthMax, reasons, ecc, others);
    }

    /**
     * NVML's NVLink version ({@code nvmlNvlinkVersion_t}: 1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0,
     * 7 = 5.0, 8 = 6.0; an A100 answers 5, an H100 6) as the major version.
     *
     * @param nvmlVersion what {@code nvmlDeviceGetNvLinkVersion} wrote
     * @return 1-6, or -1 for a code this table does not know
     */
    static int nvlinkVersion(int nvmlVersion) {
        return switch (nvmlVersion) {
            case 1 -> 1;
            case 2, 3 -> 2;
            case 4, 5 -> 3;
            case 6 -> 4;
            case 7 -> 5;
            case 8 -> 6;
            default -> -1;
        };
    }

    /** {@code nvmlDeviceGetNvLinkRemoteDeviceType}'s answer as a {@link Machine.Remote}. */
    static Machine.Remote remoteType(int type) {
        if (type == nvml.NVML_NVLINK_DEVICE_TYPE_GPU) {
            return Machine.Remote.GPU;
        }
        if (type == nvml.NVML_NVLINK_DEVICE_TYPE_SWITCH) {
            return Machine.Remote.SWITCH;
        }
        return type == nvml.NVML_NVLINK_DEVICE_TYPE_IBMNPU ? Machine.Remote.CPU : Machine.Remote.UNKNOWN;
    }

    /** Where each pair's PCIe paths meet ({@code nvmlDeviceGetTopologyCommonAncestor}), in nvidia-smi's words. */
    private static String[][] pcie(nvmlDevice_st[] devs) {
        int n = devs.length;
        String[][] t = new String[n][n];
        int[] level = new int[1];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (i == j) {
                    t[i][j] = "X";
                } else if (devs[i] == null || devs[j] == null
                        || nvml.nvmlDeviceGetTopologyCommonAncestor(devs[i], devs[j], level) != 0) {
                    t[i][j] = "?";
                } else {
                    t[i][j] = pcieWord(level[0]);
                }
            }
        }
        return t;
    }

    /** An {@code nvmlGpuTopologyLevel_t} in nvidia-smi topo's words. */
    static String pcieWord(int level) {
        return level <= nvml.NVML_TOPOLOGY_SINGLE ? "PIX"
                : level == nvml.NVML_TOPOLOGY_MULTIPLE ? "PXB"
                : level == nvml.NVML_TOPOLOGY_HOSTBRIDGE ? "PHB"
                : level == nvml.NVML_TOPOLOGY_NODE ? "NODE" : "SYS";
    }

    /** This host's RDMA devices and their ports, from {@code /sys/class/infiniband}. */
    static List<Machine.Hca> hcas() {
        return hcas(java.nio.file.Path.of("/sys/class/infiniband"));
    }

    /**
     * The RDMA devices under a directory laid out as {@code /sys/class/infiniband}: one entry per device, its ports
     * under {@code ports/<n>}.
     *
     * @param root the directory
     * @return the devices by name; empty when the directory is absent or unreadable
     */
    static List<Machine.Hca> hcas(java.nio.file.Path root) {
        List<Machine.Hca> out = new ArrayList<>();
        try (var devices = java.nio.file.Files.list(root)) {
            for (java.nio.file.Path d : devices.sorted().toList()) {
                List<Integer> ports = new ArrayList<>();
                try (var ps = java.nio.file.Files.list(d.resolve("ports"))) {
                    for (java.nio.file.Path p : ps.toList()) {
                        String name = p.getFileName().toString();
                        if (name.matches("[0-9]{1,3}")) {
                            ports.add(Integer.parseInt(name));
                        }
                    }
                } catch (java.io.IOException | RuntimeException e) {
                    // a device whose ports cannot be listed: named without them
                }
                Collections.sort(ports);
                out.add(new Machine.Hca(d.getFileName().toString(), List.copyOf(ports)));
            }
        } catch (java.io.IOException | RuntimeException e) {
            return List.of();
        }
        return List.copyOf(out);
    }

    static boolean sameBus(String a, String b) {
        return a.replaceFirst("^0+", "").equalsIgnoreCase(b.replaceFirst("^0+", ""));
    }

    private static String cString(byte[] b) {
        int n = 0;
        while (n < b.length && b[n] != 0) {
            n++;
        }
        return new String(b, 0, n, java.nio.charset.StandardCharsets.US_ASCII);
    }

    private static List<String> interfaces() {
        List<String> out = new ArrayList<>();
        try {
            for (NetworkInterface i : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (i.isUp()) {
                    out.add(i.getName());
                }
            }
        } catch (SocketException e) {
            // none known
        }
        Collections.sort(out);
        return out;
    }
}
