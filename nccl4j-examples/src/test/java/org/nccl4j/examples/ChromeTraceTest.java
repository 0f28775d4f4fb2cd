package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChromeTraceTest {
    @Test
    void writesCompleteEventsInMicroseconds() {
        ChromeTrace t = new ChromeTrace(1, "nccl4j DDP rank 1");
        t.complete("forward + loss", "compute", 0.0, 2.5, 3);
        t.complete("all-reduce bucket 1: dW3 (61.04 MiB)", "nccl", 7.25, 7.4805, 3);
        t.complete("marker", "compute", 1.0, 0.5, -1); // negative length clamps to 0, no args
        assertEquals(3, t.events());
        assertEquals("[\n"
                + "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"nccl4j DDP rank 1\"}},\n"
                + "{\"name\":\"forward + loss\",\"ph\":\"X\",\"ts\":0.000,\"dur\":2500.000,\"pid\":1,"
                + "\"tid\":\"compute\",\"args\":{\"step\":3}},\n"
                + "{\"name\":\"all-reduce bucket 1: dW3 (61.04 MiB)\",\"ph\":\"X\",\"ts\":7250.000,\"dur\":230.500,"
                + "\"pid\":1,\"tid\":\"nccl\",\"args\":{\"step\":3}},\n"
                + "{\"name\":\"marker\",\"ph\":\"X\",\"ts\":1000.000,\"dur\":0.000,\"pid\":1,\"tid\":\"compute\"}\n"
                + "]\n", t.toJson());
    }

    @Test
    void escapesStrings() {
        ChromeTrace t = new ChromeTrace(0, "a\"b\\c");
        t.complete("x\ny\t\u0001", "compute", 0, 1, -1);
        String json = t.toJson();
        assertEquals(true, json.contains("\"a\\\"b\\\\c\""), json);
        assertEquals(true, json.contains("\"x\\ny\\t\\u0001\""), json);
    }

    @Test
    void numbersUseADotWhateverTheLocale() {
        Locale saved = Locale.getDefault();
        try {
            Locale.setDefault(Locale.GERMANY);
            assertEquals("1234.500", ChromeTrace.micros(1.2345));
        } finally {
            Locale.setDefault(saved);
        }
        assertThrows(IllegalArgumentException.class, () -> ChromeTrace.micros(Double.NaN));
    }

    @Test
    void writesTheFile(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("sub/trace_ddp_rank0.json");
        ChromeTrace t = new ChromeTrace(0, "r0");
        t.complete("optimizer (SGD)", "compute", 1, 2, 5);
        t.write(f);
        assertEquals(t.toJson(), Files.readString(f, StandardCharsets.UTF_8));
    }
}
