package org.nccl4j.tools.doctor;

/**
 * One line of the doctor's report.
 *
 * @param section what part of the machine it is about ({@code cuda}, {@code gpu}, {@code nccl}, {@code nvlink},
 *        {@code topology}, {@code pcie}, {@code health}, {@code host}, {@code env}, {@code bandwidth})
 * @param status the verdict
 * @param subject what was looked at, e.g. {@code GPU 0} or {@code NCCL_ALGO}
 * @param detail what was found
 * @param fix what to do, for WARN and FAIL; empty otherwise
 * @param measurement the bandwidth measured and expected, for a {@code bandwidth} finding; null otherwise
 */
public record Finding(String section, Status status, String subject, String detail, String fix,
        Measurement measurement) {
    /**
     * A finding without a measurement.
     *
     * @param section as {@link #section()}
     * @param status as {@link #status()}
     * @param subject as {@link #subject()}
     * @param detail as {@link #detail()}
     * @param fix as {@link #fix()}
     */
    public Finding(String section, Status status, String subject, String detail, String fix) {
        this(section, status, subject, detail, fix, null);
    }

    /**
     * A bandwidth measured over a path.
     *
     * @param measuredGBps what was measured, GB/s per direction (bus bandwidth for an all-reduce)
     * @param expectedGBps what the path should carry, or 0 for no expectation
     * @param path the path in {@code nvidia-smi topo -m}'s words ({@code NV18}, {@code PHB}, ...), or the slowest
     *        pair's for an all-reduce
     */
    public record Measurement(double measuredGBps, double expectedGBps, String path) {
    }

    /**
     * The same finding carrying a measurement.
     *
     * @param m the measurement
     * @return a new finding
     */
    Finding with(Measurement m) {
        return new Finding(section, status, subject, detail, fix, m);
    }

    /** A verdict, worst last. */
    public enum Status {
        /** A fact, nothing to judge. */
        INFO,
        /** As it should be. */
        OK,
        /** Works, but slower or riskier than it should be. */
        WARN,
        /** Broken: training will fail or hang. */
        FAIL
    }

    static Finding info(String section, String subject, String detail) {
        return new Finding(section, Status.INFO, subject, detail, "");
    }

    static Finding ok(String section, String subject, String detail) {
        return new Finding(section, Status.OK, subject, detail, "");
    }

    static Finding warn(String section, String subject, String detail, String fix) {
        return new Finding(section, Status.WARN, subject, detail, fix);
    }

    static Finding fail(String section, String subject, String detail, String fix) {
        return new Finding(section, Status.FAIL, subject, detail, fix);
    }
}
