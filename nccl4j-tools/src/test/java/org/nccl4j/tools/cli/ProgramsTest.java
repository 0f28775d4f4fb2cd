package org.nccl4j.tools.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * {@link Programs#median}, as nccl4j-perf and the harnesses report their timings (the exit status, the counts and the
 * rest they share with the examples are tested there: ExitStatusTest).
 */
class ProgramsTest {
    @Test
    void medianOfOddAndEvenCountsLeavesTheValuesAlone() {
        assertEquals(3.0, Programs.median(new double[] {5, 1, 3}));
        assertEquals(2.5, Programs.median(new double[] {4, 1, 3, 2}));
        assertEquals(7.0, Programs.median(new double[] {7}));
        assertTrue(Double.isNaN(Programs.median(new double[0])));
        double[] v = {3, 1, 2};
        Programs.median(v);
        assertArrayEquals(new double[] {3, 1, 2}, v);
    }
}
