package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The expected values of {@link DdpSimple}, on the CPU: what every rank must hold after the all-reduce. */
class DdpSimpleTest {
    @Test
    void theLecturesNumbers() {
        assertEquals(0.0f, DdpSimple.localGradient(DdpSimple.input(0)));
        assertEquals(7.0f, DdpSimple.localGradient(DdpSimple.input(1)));
        assertEquals(35.0f, DdpSimple.forward(DdpSimple.W0, DdpSimple.input(1)));
        assertEquals(3.5f, DdpSimple.expectedGradient(2)); // "both ranks receive the averaged gradient 3.5"
        assertEquals(0.0f, DdpSimple.expectedGradient(1));
        assertEquals(24.5f, DdpSimple.expectedGradient(8));
        assertEquals(4.65f, DdpSimple.sgdStep(DdpSimple.W0, 0.1f, 3.5f), 1e-6f);
    }

    @Test
    void expectedGradientIsTheMeanOfTheLocalOnes() {
        for (int n = 1; n <= 256; n++) {
            double mean = 0;
            for (int r = 0; r < n; r++) {
                mean += DdpSimple.localGradient(DdpSimple.input(r));
            }
            mean /= n;
            assertEquals(mean, DdpSimple.expectedGradient(n), 0.0, "n=" + n);
        }
    }

    /** SUM in float32 in any order, then / n on the host: exact, as the example's check demands. */
    @Test
    void sumThenDivideIsExactInFloat32() {
        for (int n = 1; n <= 256; n++) {
            float up = 0;
            float down = 0;
            for (int r = 0; r < n; r++) {
                up += DdpSimple.localGradient(DdpSimple.input(r));
                down += DdpSimple.localGradient(DdpSimple.input(n - 1 - r));
            }
            assertEquals(DdpSimple.expectedGradient(n), up / n, "n=" + n);
            assertEquals(DdpSimple.expectedGradient(n), down / n, "n=" + n);
            assertEquals(0.0f, DdpSimple.tolerance(n, false));
        }
    }

    /** AVG modelled as NCCL may compute it for floats (each input times 1/n, then summed): within the tolerance. */
    @Test
    void preMultipliedAverageIsWithinTheTolerance() {
        for (int n = 1; n <= 256; n++) {
            float inv = 1.0f / n;
            float sum = 0;
            for (int r = 0; r < n; r++) {
                sum += DdpSimple.localGradient(DdpSimple.input(r)) * inv;
            }
            float e = DdpSimple.expectedGradient(n);
            assertTrue(DdpSimple.matches(e, sum, DdpSimple.tolerance(n, true)),
                    "n=" + n + ": " + sum + " vs " + e + ", tolerance " + DdpSimple.tolerance(n, true));
        }
    }
}
