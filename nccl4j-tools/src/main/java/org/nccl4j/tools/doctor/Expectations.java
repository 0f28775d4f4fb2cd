package org.nccl4j.tools.doctor;

/**
 * What a link should carry, per direction, in GB/s (10^9 bytes), from the published rates.
 *
 * <p>PCIe: 3.0 8 GT/s, 4.0 16 GT/s, 5.0 32 GT/s, 6.0 64 GT/s per lane with 128b/130b encoding (about 0.985, 1.97,
 * 3.94 and 7.88 GB/s per lane); 1.0 and 2.0 2.5 and 5 GT/s with 8b/10b (0.25 and 0.5 GB/s).
 *
 * <p>NVLink, per link and direction (NVIDIA's totals are both directions over all of a GPU's links):
 * <ul>
 * <li>NVLink 1 (P100): 20 GB/s. NVIDIA's NVLink page: NVLink on V100 raised the rate "from 20 to 25 GB/s in each
 *     direction".</li>
 * <li>NVLink 2 (V100): 25 GB/s. Same page: six links, 300 GB/s in total.</li>
 * <li>NVLink 3 (A100): 25 GB/s. NVIDIA's NVLink page: twelve links, 600 GB/s in total. GA102 (compute capability
 *     8.6: RTX 3090, A40, RTX A6000) has narrower links: 14.0625 GB/s each way per link (NVIDIA's GA102 architecture
 *     paper, four links of 56.25 GB/s each way).</li>
 * <li>NVLink 4 (H100, H200): 25 GB/s. NVIDIA's H100 pages: eighteen links, 900 GB/s in total.</li>
 * <li>NVLink 5 (B200, GB200): 50 GB/s. NVIDIA's NVLink page: eighteen links of 100 GB/s (both directions),
 *     1.8 TB/s in total.</li>
 * <li>NVLink 6 and later: no published per-link rate in this table; no expectation.</li>
 * </ul>
 * Through an NVSwitch a pair of GPUs is bound by the links each GPU has to the switches (the switch carries every
 * link at full rate), so the pair's expectation is the per-link rate times the smaller of the two GPUs' link counts.
 *
 * <p>A measured copy or bus bandwidth below {@link #WARN_FRACTION} of its expectation is a WARN. Healthy links
 * measure 80-90 % (a {@code cudaMemcpyPeer} of 256 MiB: 390.7 GB/s of 450 on NV18 of H100s through NVSwitch, 87 %);
 * losing a third of the links, half the PCIe lanes or a PCIe generation puts a copy near 60 % or below, and 70 %
 * leaves the healthy band 10-20 points of room for noise; an all-reduce is judged against
 * {@link #ALL_REDUCE_WARN_FRACTION} instead. A measurement above the expectation means the path was
 * misjudged: a copy cannot beat its link.
 */
public final class Expectations {
    /** A measurement below this fraction of its expectation is a WARN. */
    public static final double WARN_FRACTION = 0.70;
    /**
     * An all-reduce's bus bandwidth below this fraction of its slowest path's expectation is a WARN. Lower than a
     * copy's: NCCL's ring or tree at 256 MiB carries less than the links do (on 4 x H100 through NVSwitch, NVLS off,
     * healthy runs measured 318-325 GB/s of 450, 71-72 %), while a path degraded to host memory
     * ({@code NCCL_P2P_DISABLE=1}: 22.0 GB/s, 5 %) or to a third of its links (below 30 %) falls far under it.
     */
    public static final double ALL_REDUCE_WARN_FRACTION = 0.50;

    private Expectations() {
    }

    /**
     * PCIe's rate per direction.
     *
     * @param generation 1 to 6
     * @param width lanes
     * @return GB/s, or 0 for an unknown generation
     */
    public static double pcieGBps(int generation, int width) {
        double perLane = switch (generation) {
            case 1 -> 0.25;
            case 2 -> 0.5;
            case 3 -> 0.985;
            case 4 -> 1.969;
            case 5 -> 3.938;
            case 6 -> 7.877;
            default -> 0;
        };
        return perLane * Math.max(0, width);
    }

    /**
     * NVLink's rate per link and direction.
     *
     * @param version the NVLink major version, 1 to 5
     * @param major the GPU's compute capability, major (GA102's narrower NVLink 3 is 8.6)
     * @param minor the GPU's compute capability, minor
     * @return GB/s, or 0 for an unknown version
     */
    public static double nvlinkPerLinkGBps(int version, int major, int minor) {
        return switch (version) {
            case 1 -> 20;
            case 2, 4 -> 25;
            case 3 -> major == 8 && minor == 6 ? 14.0625 : 25;
            case 5 -> 50;
            default -> 0;
        };
    }

    /**
     * NVLink's rate per direction over {@code links} links of a data-centre GPU.
     *
     * @param version 1 to 5
     * @param links active links between the two GPUs
     * @return GB/s, or 0 for an unknown version
     */
    public static double nvlinkGBps(int version, int links) {
        return nvlinkPerLinkGBps(version, 0, 0) * Math.max(0, links);
    }
}
