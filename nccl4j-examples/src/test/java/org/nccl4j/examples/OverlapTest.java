package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class OverlapTest {
    @Test
    void hiddenPartOfOneInterval() {
        assertEquals(4.0, Overlap.hiddenPart(2, 6, 10));  // all before backward end
        assertEquals(2.0, Overlap.hiddenPart(8, 12, 10)); // straddles it
        assertEquals(0.0, Overlap.hiddenPart(11, 13, 10)); // all after
        assertEquals(0.0, Overlap.hiddenPart(10, 13, 10)); // starts exactly at the end
        assertEquals(0.0, Overlap.hiddenPart(5, 5, 10));   // empty
    }

    @Test
    void fractionOverStepsAndBuckets() {
        // step 1: backward ends at 10; buckets [2,6] (4 of 4 hidden), [8,12] (2 of 4), [11,13] (0 of 2)
        // step 2: backward ends at 30; buckets [29,31] (1 of 2), [31,32] (0 of 1), [20,21] (1 of 1)
        double[][] start = {{2, 8, 11}, {29, 31, 20}};
        double[][] end = {{6, 12, 13}, {31, 32, 21}};
        double[] bwd = {10, 30};
        assertEquals((4 + 2 + 0 + 1 + 0 + 1) / 14.0, Overlap.hiddenFraction(start, end, bwd), 1e-12);
        // only step 1
        assertEquals(0.6, Overlap.hiddenFraction(new double[][] {start[0]}, new double[][] {end[0]},
                new double[] {10}), 1e-12);
    }

    @Test
    void startRelativeToBackwardEndAndDuration() {
        double[][] start = {{2, 8, 11}, {29, 31, 20}, {45, 47, 49}};
        double[][] end = {{6, 12, 13}, {31, 32, 21}, {46, 50, 51}};
        double[] bwd = {10, 30, 48};
        // bucket 0: 2-10=-8, 29-30=-1, 45-48=-3 -> median -3
        assertEquals(-3.0, Overlap.medianStartRelative(start, bwd, 0));
        // bucket 1: -2, 1, -1 -> -1
        assertEquals(-1.0, Overlap.medianStartRelative(start, bwd, 1));
        // bucket 2: 1, -10, 1 -> 1 (after backward end)
        assertEquals(1.0, Overlap.medianStartRelative(start, bwd, 2));
        // durations of bucket 1: 4, 1, 3 -> 3
        assertEquals(3.0, Overlap.medianDuration(start, end, 1));
    }

    @Test
    void noAllReduceTimeAndBadIntervals() {
        assertTrue(Double.isNaN(Overlap.hiddenFraction(new double[0][], new double[0][], new double[0])));
        assertTrue(Double.isNaN(Overlap.hiddenFraction(new double[][] {{}}, new double[][] {{}}, new double[] {1})));
        assertThrows(IllegalArgumentException.class,
                () -> Overlap.hiddenFraction(new double[][] {{5}}, new double[][] {{4}}, new double[] {10}));
    }
}
