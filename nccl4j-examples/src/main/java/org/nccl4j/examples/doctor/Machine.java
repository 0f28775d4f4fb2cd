package org.nccl4j.examples.doctor;

import java.util.List;

/**
 * What the doctor read off the machine: the facts its checks judge. Made by {@link Probe} from CUDA and NVML, or by
 * a test by hand.
 *
 * @param driverVersion CUDA driver version as {@code cudaDriverGetVersion} reports it (12080 = 12.8), or 0
 * @param runtimeVersion CUDA runtime version, or 0
 * @param cudaError why CUDA could not be asked (no driver, no GPU), or null
 * @param gpus the GPUs CUDA sees, by ordinal
 * @param p2p {@code p2p[i][j]}: whether GPU i can access GPU j's memory ({@code cudaDeviceCanAccessPeer})
 * @param nvmlError why NVML could not be asked, or null
 * @param nvmlDriver the driver version NVML reports, or null
 * @param topology {@code topology[i][j]}: the link between GPU i and j, {@code nvidia-smi topo -m}'s words
 *        ({@code NV<n>}, {@code PIX}, {@code PXB}, {@code PHB}, {@code NODE}, {@code SYS}, {@code X}), or null
 * @param interfaces this host's network interfaces that are up
 */
public record Machine(int driverVersion, int runtimeVersion, String cudaError, List<Gpu> gpus, boolean[][] p2p,
        String nvmlError, String nvmlDriver, String[][] topology, List<String> interfaces) {

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
     * @param links its NVLinks (active or not); empty when it has none
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

    /**
     * One NVLink of a GPU.
     *
     * @param link its number
     * @param active whether it is up
     * @param version its NVLink version (1-5), or -1
     * @param remoteBusId the PCI bus id at its other end, or null
     */
    public record Link(int link, boolean active, int version, String remoteBusId) {
    }
}
