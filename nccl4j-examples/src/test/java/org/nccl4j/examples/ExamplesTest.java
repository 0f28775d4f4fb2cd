package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** {@link Examples#parseCount}: the examples' counts (their exit status is core's ExitStatus, tested there). */
class ExamplesTest {
    @Test
    void countsTakePowerOfTwoSuffixesAndAtLeastOne() {
        assertEquals(1000, Examples.parseCount("1000"));
        assertEquals(64 << 10, Examples.parseCount("64k"));
        assertEquals(1 << 20, Examples.parseCount(" 1M "));
        assertEquals(2L << 30, Examples.parseCount("2G"));
        assertThrows(IllegalArgumentException.class, () -> Examples.parseCount("0"));
        assertThrows(NumberFormatException.class, () -> Examples.parseCount("many"));
    }
}
