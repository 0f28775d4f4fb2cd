package org.nccl4j.examples.doctor;

/**
 * What a link should carry, per direction, in GB/s (10^9 bytes), from the published per-lane and per-link rates:
 * PCIe 3.0 8 GT/s, 4.0 16 GT/s, 5.0 32 GT/s, 6.0 64 GT/s per lane with 128b/130b encoding (about 0.985, 1.97, 3.94
 * and 7.88 GB/s per lane); NVLink 2, 3 and 4 about 25 GB/s per link per direction, NVLink 5 about 50. A measured
 * copy or bus bandwidth below {@link #WARN_FRACTION} of the expectation is a WARN. Measured copies reach about 80-90 %
 * of these on healthy links.
 */
public final class Expectations {
    /** A measurement below this fraction of its expectation is a WARN. */
    public static final double WARN_FRACTION = 0.70;

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
     * NVLink's rate per direction over {@code links} links.
     *
     * @param version 1 to 5
     * @param links active links between the two GPUs
     * @return GB/s, or 0 for an unknown version
     */
    public static double nvlinkGBps(int version, int links) {
        double perLink = switch (version) {
            case 1 -> 20;
            case 2, 3, 4 -> 25;
            case 5 -> 50;
            default -> 0;
        };
        return perLink * Math.max(0, links);
    }
}
