package org.nccl4j.examples.doctor;

/**
 * One line of the doctor's report.
 *
 * @param section what part of the machine it is about ({@code cuda}, {@code gpu}, {@code nccl}, {@code nvlink},
 *        {@code topology}, {@code pcie}, {@code health}, {@code env}, {@code bandwidth})
 * @param status the verdict
 * @param subject what was looked at, e.g. {@code GPU 0} or {@code NCCL_ALGO}
 * @param detail what was found
 * @param fix what to do, for WARN and FAIL; empty otherwise
 */
public record Finding(String section, Status status, String subject, String detail, String fix) {
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
