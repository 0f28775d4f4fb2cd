package org.nccl4j.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link TraceConfig}: NCCL4J_TRACE_BUFFER and NCCL4J_TRACE_DIR with their defaults, and each bad value refused
 * with a message that names the variable, the value and what is accepted.
 */
class TraceConfigTest {
    private static final String ACCEPTED = ": give a whole number of operations from 1 to 10000000 (default 2000), e.g."
            + " NCCL4J_TRACE_BUFFER=5000";

    private static Map<String, String> env(String... kv) {
        Map<String, String> e = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            e.put(kv[i], kv[i + 1]);
        }
        return e;
    }

    private static String refused(String... kv) {
        return assertThrows(IllegalArgumentException.class, () -> TraceConfig.from(env(kv))).getMessage();
    }

    @Test
    void unsetEmptyOrBlankVariablesTakeTheDefaults() {
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"), "nccl4j-trace");
        assertEquals(tmp, TraceConfig.defaultDirectory());
        assertEquals(new TraceConfig(2000, tmp), TraceConfig.from(env()));
        assertEquals(new TraceConfig(2000, tmp), TraceConfig.from(env("NCCL4J_TRACE_BUFFER", "", "NCCL4J_TRACE_DIR", "")));
        assertEquals(new TraceConfig(2000, tmp), TraceConfig.from(env("NCCL4J_TRACE_BUFFER", " \t", "NCCL4J_TRACE_DIR",
                "  ")));
        assertEquals(TraceConfig.DEFAULT_BUFFER, TraceConfig.from(env("OTHER", "1")).bufferSize());
    }

    @Test
    void valuesAreTaken() {
        TraceConfig c = TraceConfig.from(env("NCCL4J_TRACE_BUFFER", "5000", "NCCL4J_TRACE_DIR", "/shared/traces"));
        assertEquals(5000, c.bufferSize());
        assertEquals(Path.of("/shared/traces"), c.directory());
        assertEquals(1, TraceConfig.from(env("NCCL4J_TRACE_BUFFER", "1")).bufferSize());
        assertEquals(10_000_000, TraceConfig.from(env("NCCL4J_TRACE_BUFFER", " 10000000 ")).bufferSize());
        assertEquals(64, TraceConfig.from(env("NCCL4J_TRACE_BUFFER", "+064")).bufferSize());
        assertEquals(Path.of("traces/run1"), TraceConfig.from(env("NCCL4J_TRACE_DIR", "traces/run1")).directory());
    }

    @Test
    void badBufferSizesAreRefusedNamingTheVariableAndTheValue() {
        assertEquals("NCCL4J_TRACE_BUFFER=abc is not a whole number" + ACCEPTED, refused("NCCL4J_TRACE_BUFFER", "abc"));
        assertEquals("NCCL4J_TRACE_BUFFER=2k is not a whole number" + ACCEPTED, refused("NCCL4J_TRACE_BUFFER", "2k"));
        assertEquals("NCCL4J_TRACE_BUFFER=1.5 is not a whole number" + ACCEPTED, refused("NCCL4J_TRACE_BUFFER", "1.5"));
        assertEquals("NCCL4J_TRACE_BUFFER=0 is out of range" + ACCEPTED, refused("NCCL4J_TRACE_BUFFER", "0"));
        assertEquals("NCCL4J_TRACE_BUFFER=-5 is out of range" + ACCEPTED, refused("NCCL4J_TRACE_BUFFER", "-5"));
        assertEquals("NCCL4J_TRACE_BUFFER=10000001 is out of range" + ACCEPTED, refused("NCCL4J_TRACE_BUFFER",
                "10000001"));
        assertEquals("NCCL4J_TRACE_BUFFER=99999999999999999999999 is out of range" + ACCEPTED,
                refused("NCCL4J_TRACE_BUFFER", "99999999999999999999999"));
    }

    @Test
    void aDirectoryThatIsNotAPathIsRefusedNamingTheVariable() {
        String m = refused("NCCL4J_TRACE_DIR", "/tmp/a\0b");
        assertEquals("NCCL4J_TRACE_DIR=/tmp/a\0b is not a path (Nul character not allowed): give a directory, absolute"
                + " or relative to the working directory; it is created when a dump is written", m);
    }

    @Test
    void theConstructorChecksItsComponents() {
        assertEquals("bufferSize must be from 1 to 10000000, got 0",
                assertThrows(IllegalArgumentException.class, () -> new TraceConfig(0, Path.of("x"))).getMessage());
        assertThrows(NullPointerException.class, () -> new TraceConfig(10, null));
    }
}
