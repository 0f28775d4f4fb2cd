package org.nccl4j.tools.doctor;

import java.util.List;

/**
 * What the doctor read off the machine: the facts its checks judge. Made by {@link Probe} from CUDA, NVML and sysfs,
 * or by a test by hand. The path between two GPUs is not a fact here but a conclusion ({@link Paths}), drawn from
 * each GPU's NVLinks and from {@link #pcie()}.
 *
 * @param driverVersion CUDA driver version as {@code cudaDriverGetVersion} reports it (12080 = 12.8), or 0
 * @param runtimeVersion CUDA runtime version, or 0
 * @param cudaError why CUDA could not be asked (no driver, no GPU), or null
 * @param gpus the GPUs CUDA sees, by ordinal
 * @param p2p {@code p2p[i][j]}: whether GPU i can access GPU j's memory ({@code cudaDeviceCanAccessPeer})
 * @param nvmlError why NVML could not be asked, or null
 * @param nvmlDriver the driver version NVML reports, or null
 * @param pcie {@code pcie[i][j]}: where the PCIe paths of GPU i and j meet
 *        ({@code nvmlDeviceGetTopologyCommonAncestor}) in {@code nvidia-smi topo -m}'s words: {@code PIX} (one PCIe
 *        switch), {@code PXB} (several switches), {@code PHB} (a host bridge), {@code NODE} (host bridges of one NUMA
 *        node), {@code SYS} (across NUMA nodes), {@code X} on the diagonal, {@code ?} unknown; null without NVML
 * @param interfaces this host's network interfaces that are up
 * @param hcas this host's RDMA devices ({@code /sys/class/infiniband}); empty when it has none
 */
public record Machine(int driverVersion, int runtimeVersion, String cudaError, List<Gpu> gpus, boolean[][] p2p,
        String nvmlError, String nvmlDriver, String[][] pcie, List<String> interfaces, List<Hca> hcas) {

    /**
     * A machine without RDMA devices.
     *
     * @param driverVersion as {@link #driverVersion()}
     * @param runtimeVersion as {@link #runtimeVersion()}
     * @param cudaError as {@link #cudaError()}
     * @param gpus as {@link #gpus()}
     * @param p2p as {@link #p2p()}
     * @param nvmlError as {@link #nvmlError()}
     * @param nvmlDriver as {@link #nvmlDriver()}
     * @param pcie as {@link #pcie()}
     * @param interfaces as {@link #interfaces()}
     */
    public Machine(int driverVersion, int runtimeVersion, String cudaError, List<Gpu> gpus, boolean[][] p2p,
            String nvmlError, String nvmlDriver, String[][] pcie, List<String> interfaces) {
        this(driverVersion, runtimeVersion, cudaError, gpus, p2p, nvmlError, nvmlDriver, pcie, interfaces, List.of());
    }

    /**
     * One GPU.
     *
     * @param index the CUDA ordinal
     * @param name e.g. {@code NVIDIA H100 80GB HBM3}
     * @param memoryBytes its memory
     * @param busId PCI bus id, e.g. {@code 0000:1B:00.0}
     * @param major compute capability, major
     * @param minor compute capability, minor
     * @param nvml NVML's facts, or null without NVML
     */
    public record Gpu(int index, String name, long memoryBytes, String busId, int major, int minor, NvmlGpu nvml) {
    }

    /**
     * NVML's facts about one GPU.
     *
     * @param links its NVLinks, active or not (every link for which {@code nvmlDeviceGetNvLinkState} answers); empty
     *        when it has none
     * @param pcieGen current PCIe generation, or -1
     * @param pcieGenMax maximum PCIe generation, or -1
     * @param pcieWidth current PCIe width (lanes), or -1
     * @param pcieWidthMax maximum PCIe width, or -1
     * @param throttleReasons {@code nvmlDeviceGetCurrentClocksEventReasons}'s bits, or -1
     * @param uncorrectedEcc volatile uncorrected ECC errors, or -1 when ECC is off or not reported
     * @param otherProcesses compute processes on the GPU other than this one
     */
    public record NvmlGpu(List<Link> links, int pcieGen, int pcieGenMax, int pcieWidth, int pcieWidthMax,
            long throttleReasons, long uncorrectedEcc, List<Long> otherProcesses) {
    }

    /** What is at the other end of an NVLink ({@code nvmlDeviceGetNvLinkRemoteDeviceType}). */
    public enum Remote {
        /** Another GPU: a direct link. */
        GPU,
        /** An NVSwitch: every GPU on the switch is reachable over it. */
        SWITCH,
        /** A CPU's NVLink port (IBM POWER's NPU). */
        CPU,
        /** Not reported (an inactive link, or a driver that cannot say). */
        UNKNOWN
    }

    /**
     * One NVLink of a GPU.
     *
     * @param link its number
     * @param active whether it is up
     * @param version its NVLink version (1-6: the major version, which {@link Probe} reads off NVML's
     *        {@code nvmlNvlinkVersion_t}), or -1
     * @param remoteBusId the PCI bus id at its other end, or null; an NVSwitch that is not on the host's PCIe reads as
     *        domain {@code FFFFFFFF}
     * @param remote what is at its other end
     */
    public record Link(int link, boolean active, int version, String remoteBusId, Remote remote) {

        /**
         * A link whose other end is read off its bus id: none (null), an NVSwitch ({@code FFFFFFFF...}) or a GPU.
         *
         * @param link as {@link #link()}
         * @param active as {@link #active()}
         * @param version as {@link #version()}
         * @param remoteBusId as {@link #remoteBusId()}
         */
        public Link(int link, boolean active, int version, String remoteBusId) {
            this(link, active, version, remoteBusId, remoteBusId == null ? Remote.UNKNOWN
                    : switchBusId(remoteBusId) ? Remote.SWITCH : Remote.GPU);
        }

        /**
         * Whether a bus id is the one NVML gives an NVSwitch outside the host's PCIe: domain {@code FFFFFFFF}.
         *
         * @param busId a PCI bus id
         * @return true for {@code FFFFFFFF:...}
         */
        public static boolean switchBusId(String busId) {
            return busId.trim().toUpperCase(java.util.Locale.ROOT).startsWith("FFFFFFFF");
        }
    }

    /**
     * An RDMA device ({@code /sys/class/infiniband/<name>}).
     *
     * @param name e.g. {@code mlx5_0}
     * @param ports its port numbers ({@code ports/<n>}), ascending
     */
    public record Hca(String name, List<Integer> ports) {
    }
}
