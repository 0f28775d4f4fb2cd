package org.nccl4j.jni;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Which library {@link NcclLibrary#load()} opens: {@link NcclLibrary#choose} directly, then end to end in
 * fresh JVMs ({@link LoadProbe}), since the choice is made once per process from the JVM's own system
 * properties and environment.
 */
class LibraryChoiceTest {
    static final String PROPERTY_SOURCE = "system property nccl4j.library";
    static final String ENV_SOURCE = "environment variable NCCL4J_LIBRARY";
    static final String DEFAULT_SOURCE = "the system's default library search";

    // ---------------------------------------------------------------- choose(), directly

    static Stream<Arguments> choices() {
        return Stream.of(
                Arguments.of(null, null, "libnccl.so.2", DEFAULT_SOURCE),
                Arguments.of("", "", "libnccl.so.2", DEFAULT_SOURCE),
                Arguments.of(" \t", "\n ", "libnccl.so.2", DEFAULT_SOURCE),
                Arguments.of("/p/libnccl.so.2", null, "/p/libnccl.so.2", PROPERTY_SOURCE),
                Arguments.of("/p/libnccl.so.2", "/e/libnccl.so.2", "/p/libnccl.so.2", PROPERTY_SOURCE),
                Arguments.of("  /p/libnccl.so.2\t\n", "/e/libnccl.so.2", "/p/libnccl.so.2", PROPERTY_SOURCE),
                Arguments.of(null, "/e/libnccl.so.2", "/e/libnccl.so.2", ENV_SOURCE),
                Arguments.of("", "/e/libnccl.so.2", "/e/libnccl.so.2", ENV_SOURCE),
                Arguments.of("   ", " /e/lib nccl.so ", "/e/lib nccl.so", ENV_SOURCE),
                Arguments.of(null, "libnccl.so.2.28.3", "libnccl.so.2.28.3", ENV_SOURCE));
    }

    @ParameterizedTest(name = "property [{0}] env [{1}] -> [{2}] from {3}")
    @MethodSource("choices")
    void choose(String property, String env, String name, String source) {
        NcclLibrary.Choice c = NcclLibrary.choose(property, env);
        assertEquals(name, c.name());
        assertEquals(source, c.source());
    }

    // ---------------------------------------------------------------- end to end, in fresh JVMs

    /** Runs {@link LoadProbe} in a new JVM with NCCL4J_LIBRARY removed from its environment, then {@code env} added. */
    private static Map<String, String> probe(Map<String, String> env, String... jvmOptions)
            throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"));
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.addAll(Arrays.asList(jvmOptions));
        cmd.add(LoadProbe.class.getName());
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().remove(NcclLibrary.LIBRARY_ENV);
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the probe JVM did not finish: " + out);
        assertEquals(0, p.exitValue(), "the probe JVM failed: " + out);
        Map<String, String> result = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                result.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        assertTrue(result.containsKey("outcome"), "no outcome from the probe: " + out);
        return result;
    }

    private static String abs(Path p) {
        return p.toAbsolutePath().toString();
    }

    @Test
    void propertyBeatsEnvironment() throws Exception {
        Map<String, String> r = probe(Map.of("NCCL4J_LIBRARY", abs(StubNccl.old())),
                "-Dnccl4j.library=" + abs(StubNccl.full()));
        assertEquals("loaded", r.get("outcome"), r.toString());
        assertEquals(abs(StubNccl.full()), r.get("path"));
        assertEquals(PROPERTY_SOURCE, r.get("source"));
        assertEquals("2.28.3", r.get("version"));
    }

    @Test
    void environmentAloneIsUsed() throws Exception {
        Map<String, String> r = probe(Map.of("NCCL4J_LIBRARY", abs(StubNccl.old())));
        assertEquals("loaded", r.get("outcome"), r.toString());
        assertEquals(abs(StubNccl.old()), r.get("path"));
        assertEquals(ENV_SOURCE, r.get("source"));
        assertEquals("2.19.3", r.get("version"));
    }

    @Test
    void aBlankPropertyIsIgnoredAndTheEnvironmentIsStripped() throws Exception {
        Map<String, String> r = probe(Map.of("NCCL4J_LIBRARY", "  " + abs(StubNccl.old()) + " "), "-Dnccl4j.library= ");
        assertEquals("loaded", r.get("outcome"), r.toString());
        assertEquals(ENV_SOURCE, r.get("source"));
        assertEquals(abs(StubNccl.old()), r.get("requested"));
    }

    @Test
    void aPropertyThatCannotBeOpenedIsAnErrorWithoutFallback() throws Exception {
        String missing = "/nonexistent/nccl4j-probe/libnccl.so.2";
        Map<String, String> r = probe(Map.of("NCCL4J_LIBRARY", abs(StubNccl.full())), "-Dnccl4j.library=" + missing);
        assertEquals("unavailable", r.get("outcome"), "the environment's library must not be used: " + r);
        String m = r.get("message");
        assertTrue(m.contains("tried " + missing + " from the " + PROPERTY_SOURCE), m);
        assertTrue(m.contains("-Dnccl4j.library=") && m.contains("NCCL4J_LIBRARY="), m);
        assertFalse(m.contains(abs(StubNccl.full())), m);
    }

    @Test
    void anEnvironmentPathThatCannotBeOpenedIsNamed() throws Exception {
        String missing = "/nonexistent/nccl4j-probe-env/libnccl.so.2";
        Map<String, String> r = probe(Map.of("NCCL4J_LIBRARY", missing));
        assertEquals("unavailable", r.get("outcome"), r.toString());
        String m = r.get("message");
        assertTrue(m.contains("tried " + missing + " from the " + ENV_SOURCE), m);
        assertTrue(m.contains("-Dnccl4j.library=") && m.contains("NCCL4J_LIBRARY="), m);
    }

    @Test
    void withNeitherTheDefaultSearchFindsLibnccl(@TempDir Path dir) throws Exception {
        // a directory on LD_LIBRARY_PATH, searched before the ld.so cache, with libnccl.so.2 -> the full stub
        Path link = Files.createSymbolicLink(dir.resolve("libnccl.so.2"), StubNccl.full().toAbsolutePath());
        String old = System.getenv("LD_LIBRARY_PATH");
        String ldPath = dir + (old == null || old.isEmpty() ? "" : File.pathSeparator + old);
        Map<String, String> r;
        try {
            r = probe(Map.of("LD_LIBRARY_PATH", ldPath));
        } finally {
            Files.delete(link); // not left for @TempDir, which warns about links pointing outside it
        }
        assertEquals("loaded", r.get("outcome"), r.toString());
        assertEquals(abs(StubNccl.full()), r.get("path"), "the symbolic link is resolved");
        assertEquals(DEFAULT_SOURCE, r.get("source"));
        assertEquals("libnccl.so.2", r.get("requested"));
    }

    /** Where the dynamic loader could find libnccl.so.2 on this machine, or null. */
    private static String findableLibnccl() throws IOException {
        String ld = System.getenv("LD_LIBRARY_PATH");
        if (ld != null) {
            for (String d : ld.split(File.pathSeparator)) {
                if (!d.isEmpty() && Files.exists(Path.of(d, "libnccl.so.2"))) {
                    return "LD_LIBRARY_PATH has " + Path.of(d, "libnccl.so.2");
                }
            }
        }
        Path cache = Path.of("/etc/ld.so.cache");
        if (Files.isReadable(cache) && new String(Files.readAllBytes(cache), ISO_8859_1).contains("libnccl.so.2")) {
            return "the ld.so cache (/etc/ld.so.cache) lists libnccl.so.2";
        }
        for (String d : List.of("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu")) {
            if (Files.exists(Path.of(d, "libnccl.so.2"))) {
                return d + " has libnccl.so.2";
            }
        }
        return null;
    }

    @Test
    void withNeitherOnAMachineWithoutNcclTheMessageSaysHowToFixIt() throws Exception {
        String found = findableLibnccl();
        assumeFalse(found != null, "this machine has NCCL (" + found + "), so the default search succeeds and "
                + "the no-NCCL message cannot be checked here");
        Map<String, String> r = probe(Map.of());
        assertEquals("unavailable", r.get("outcome"), r.toString());
        String m = r.get("message");
        assertTrue(m.contains("searched for libnccl.so.2 with " + DEFAULT_SOURCE), m);
        assertTrue(m.contains("libnccl.so.2"), m);
        assertTrue(m.contains("NCCL4J_LIBRARY"), m);
        assertTrue(m.contains("-Dnccl4j.library"), m);
    }
}
