package org.nccl4j.diagnostics;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class StepStatsTest {
    @Test
    void medianOfOddAndEvenCounts() {
        assertEquals(3.0, StepStats.median(new double[] {5, 1, 3}));
        assertEquals(2.5, StepStats.median(new double[] {4, 1, 3, 2}));
        assertEquals(7.0, StepStats.median(new double[] {7}));
        assertTrue(Double.isNaN(StepStats.median(new double[0])));
        double[] v = {3, 1, 2};
        StepStats.median(v);
        assertArrayEquals(new double[] {3, 1, 2}, v); // not sorted in place
    }

    @Test
    void medianFromStepThreeSkipsTheWarmUp() {
        // 30 steps: two slow warm-up steps, then 10.0, 10.1, ..., 12.7
        double[] ms = new double[30];
        ms[0] = 900;
        ms[1] = 50;
        for (int s = 2; s < 30; s++) {
            ms[s] = 10 + 0.1 * (s - 2);
        }
        // steps 3..30 are 28 values: the median is the mean of the 14th and 15th, 11.3 and 11.4
        assertEquals(11.35, StepStats.medianFrom(ms, 3), 1e-9);
        assertEquals(11.4, StepStats.medianFrom(ms, 4), 1e-9);  // 27 values: the 14th
        assertEquals(12.7, StepStats.medianFrom(ms, 30), 1e-9);
        assertTrue(Double.isNaN(StepStats.medianFrom(new double[] {1, 2}, 3)));
        assertThrows(IllegalArgumentException.class, () -> StepStats.medianFrom(ms, 0));
    }
}
