package org.nccl4j.tools.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** {@link Programs#parseCount} (the tools' exit status is core's ExitStatus, tested there). */
class ProgramsTest {
    @Test
    void countsTakePowerOfTwoSuffixesAndAtLeastOne() {
        assertEquals(1000, Programs.parseCount("1000"));
        assertEquals(64 << 10, Programs.parseCount("64k"));
        assertEquals(1 << 20, Programs.parseCount(" 1M "));
        assertEquals(2L << 30, Programs.parseCount("2G"));
        assertEquals("count must be at least 1, got 0",
                assertThrows(IllegalArgumentException.class, () -> Programs.parseCount("0")).getMessage());
        assertThrows(NumberFormatException.class, () -> Programs.parseCount("many"));
    }
}
