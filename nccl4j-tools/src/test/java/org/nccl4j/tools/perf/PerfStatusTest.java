package org.nccl4j.tools.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * nccl4j-perf's exit status before any GPU work ({@link Perf#status}): the usage for {@code -h} with status 0, and a
 * refused flag with status 2 and one line on stderr that names the program and the flag. The no-GPU, no-CUDA and
 * no-NCCL statuses come from {@code ExitStatus.of} (core's ExitStatusTest).
 */
class PerfStatusTest {
    private static final String NL = System.lineSeparator();

    private static String[] status(String... argv) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int s;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            s = Perf.status(argv, o, e);
        }
        return new String[] {Integer.toString(s), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    @Test
    void helpPrintsTheUsageWithStatusZero() {
        for (String flag : new String[] {"-h", "--help"}) {
            String[] r = status(flag);
            assertEquals("0", r[0], flag);
            assertEquals(PerfArgs.USAGE + NL, r[1], flag);
            assertEquals("", r[2], flag);
        }
    }

    @Test
    void aRefusedFlagIsStatusTwoWithOneLineNamingIt() {
        String why = assertThrows(IllegalArgumentException.class, () -> PerfArgs.parse("-n", "0")).getMessage();
        String[] r = status("-n", "0");
        assertEquals("2", r[0]);
        assertEquals("", r[1]);
        assertEquals("nccl4j-perf: " + why + NL, r[2]);

        r = status("--no-such-flag");
        assertEquals("2", r[0]);
        assertEquals("", r[1]);
        assertTrue(r[2].startsWith("nccl4j-perf: ") && r[2].contains("--no-such-flag") && r[2].endsWith(NL)
                && r[2].indexOf('\n') == r[2].length() - 1, r[2]);
    }
}
