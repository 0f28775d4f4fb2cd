package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class LinePrefixerTest {
    private static String prefix(byte[] in, int rank) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        new LinePrefixer(new ByteArrayInputStream(in), out, rank).run();
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void everyLineGetsThePrefixAndTheLastOneANewline() {
        String got = prefix("a\nb\r\n\nÿ é\nlast".getBytes(StandardCharsets.UTF_8), 12);
        assertEquals("[12] a\n[12] b\r\n[12] \n[12] ÿ é\n[12] last\n", got);
        assertEquals("", prefix(new byte[0], 0));
    }

    @Test
    void aVeryLongLineIsCutIntoPrefixedPieces() {
        byte[] in = new byte[LinePrefixer.MAX_LINE + 10];
        java.util.Arrays.fill(in, (byte) 'x');
        in[in.length - 1] = '\n';
        String got = prefix(in, 3);
        String first = "[3] " + "x".repeat(LinePrefixer.MAX_LINE) + "\n";
        assertEquals(first + "[3] " + "x".repeat(9) + "\n", got);
    }
}
