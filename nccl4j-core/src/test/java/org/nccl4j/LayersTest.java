package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The packages' imports go one way: {@code org.nccl4j.launch} and {@code org.nccl4j.trace} use nothing of the rest
 * of the core (Javadoc may link to it), so the core can be read from the bottom up. {@code org.nccl4j.diagnostics}
 * can reach only the public API, which the compiler sees to.
 *
 * <p>Inside {@code org.nccl4j} the classes that make a communicator work stand in {@link #LAYERS}, bottom up (the order
 * package-info.java describes): a class names, in code, only classes of its own layer or below, so that no arrow
 * runs back up and the package reads from the bottom up too. The classes outside the layers (values, settings,
 * exceptions, the public callbacks) name no Communicator, except where the public API puts one in a signature.
 */
class LayersTest {
    private static final Path SOURCES = Path.of("src/main/java/org/nccl4j");
    /** A type of the root package, or of diagnostics, named in code: import lines and qualified names. */
    private static final Pattern CORE = Pattern.compile("\\borg\\.nccl4j\\.(?:diagnostics\\.)?[A-Z]");

    /**
     * The layers of {@code org.nccl4j}, bottom up: CUDA resources and errors; a communicator's health (its
     * {@code Watched} state, with the liveness channel and the departures that act on it); the watchdog, and the
     * teardown that takes a communicator off it; the Communicator with the one path of its collectives, their argument
     * checks, the composed collectives and the program's hooks; what is built on its API (bootstrap, recovery,
     * windows, gradient buckets, parameter shards).
     */
    static final List<List<String>> LAYERS = List.of(
            List.of("Errors", "Leaks", "NcclLog", "Capture", "Cuda", "CudaBackend", "NativeCudaBackend", "Stream",
                    "Event", "CudaGraph", "DeviceBuffer"),
            List.of("Watched", "CollectiveCheck", "CommBound", "InitDeadline", "Ledger", "Departures", "Agreement",
                    "LivenessWire", "Liveness", "LivenessHub", "LivenessClient", "Departing", "LeftBehind",
                    "StartupGuard", "Farewell", "Bounded"),
            List.of("Watchdog", "WatchdogMonitor", "Teardown"),
            List.of("Communicator", "Dispatch", "Arguments", "Composed", "ProgramHooks"),
            List.of("Bootstrap", "Recovery", "Window", "GradientBuckets", "ParameterShards"));
    /** Arrows up that the public API asks for: Communicator's entry points, each a one-line delegation. */
    static final Set<String> ENTRY_POINTS = Set.of("Communicator -> Bootstrap", "Communicator -> Recovery",
            "Communicator -> Window");
    /** Classes outside the layers whose public signatures name a Communicator (callbacks, an operator's owner). */
    static final Set<String> NAME_COMMUNICATOR_IN_API = Set.of("OperationObserver", "FailureListener", "ReduceOp");

    @Test
    void noArrowRunsBackUpInsideTheRootPackage() throws IOException {
        Map<String, String> code = new TreeMap<>();
        try (Stream<Path> s = Files.list(SOURCES)) {
            for (Path f : s.filter(p -> p.toString().endsWith(".java")).toList()) {
                String name = f.getFileName().toString().replace(".java", "");
                if (!name.equals("package-info")) {
                    code.put(name, Files.readString(f));
                }
            }
        }
        for (List<String> layer : LAYERS) {
            for (String c : layer) {
                assertTrue(code.containsKey(c), c + " is in LAYERS but not in " + SOURCES.toAbsolutePath());
            }
        }
        assertEquals(List.of(), arrowsUp(code), "a class of org.nccl4j names a class of a layer above its own");
    }

    /** The checker sees an arrow back up, in a field, a nested type's owner or a qualified name. */
    @Test
    void theCheckSeesAnArrowBackUp() {
        Map<String, String> code = new TreeMap<>();
        code.put("Stream", "final class Stream {\n  // Communicator in a comment\n  String s = \"Communicator\";\n"
                + "  private Communicator users;\n}");
        code.put("Watched", "final class Watched { Watchdog.Settings s; org.nccl4j.Communicator c; }");
        code.put("Collective", "enum Collective { X; Communicator c; }");
        code.put("OperationObserver", "interface OperationObserver { void enqueued(Communicator c); }");
        code.put("Communicator", "class Communicator { Recovery r; Stream s; Bootstrap b; GradientBuckets g; }");
        for (String other : List.of("Watchdog", "Recovery", "Bootstrap", "GradientBuckets")) {
            code.put(other, "final class " + other + " { }");
        }
        assertEquals(List.of("Collective -> Communicator (outside the layers: only the public API may name it)",
                "Communicator -> GradientBuckets", "Stream -> Communicator", "Watched -> Communicator",
                "Watched -> Watchdog"), arrowsUp(code));
    }

    /** Every arrow of {@code code} (class name to source) that runs to a higher layer, sorted. */
    static List<String> arrowsUp(Map<String, String> code) {
        Map<String, Integer> layerOf = new TreeMap<>();
        for (int i = 0; i < LAYERS.size(); i++) {
            for (String c : LAYERS.get(i)) {
                layerOf.put(c, i);
            }
        }
        Set<String> found = new LinkedHashSet<>();
        for (Map.Entry<String, String> e : code.entrySet()) {
            String from = e.getKey();
            for (String to : named(e.getValue(), code.keySet())) {
                if (to.equals(from)) {
                    continue;
                }
                Integer up = layerOf.get(from);
                Integer target = layerOf.get(to);
                if (up == null) {
                    if (to.equals("Communicator") && !NAME_COMMUNICATOR_IN_API.contains(from)) {
                        found.add(from + " -> " + to + " (outside the layers: only the public API may name it)");
                    }
                } else if (target != null && target > up && !ENTRY_POINTS.contains(from + " -> " + to)) {
                    found.add(from + " -> " + to);
                }
            }
        }
        return found.stream().sorted().toList();
    }

    /** String and char literals, and comments, read in one pass (a literal may hold "//", a comment quotes). */
    private static final Pattern NOT_CODE = Pattern.compile(
            "\"(?:\\\\.|[^\"\\\\])*\"|'(?:\\\\.|[^'\\\\])'|/\\*.*?\\*/|//[^\\n]*", Pattern.DOTALL);
    /** A type name used in code: not a member after a dot, unless the dot ends {@code org.nccl4j.}. */
    private static final Pattern TYPE = Pattern.compile("(?<![\\w$.])(?:org\\.nccl4j\\.)?([A-Z][\\w$]*)\\b");

    /** The classes of {@code names} that {@code source} names outside comments and string literals. */
    private static Set<String> named(String source, Set<String> names) {
        String code = NOT_CODE.matcher(source).replaceAll(r -> r.group().startsWith("/") ? " " : "\"\"");
        Set<String> out = new LinkedHashSet<>();
        Matcher m = TYPE.matcher(code);
        while (m.find()) {
            if (names.contains(m.group(1))) {
                out.add(m.group(1));
            }
        }
        return out;
    }

    /** A nested type's declaration: indented, so not the file's top-level type. */
    private static final Pattern NESTED = Pattern.compile(
            "(?m)^[ \\t]+(?:(?:public|private|protected|static|final|abstract|sealed|non-sealed)\\s+)*"
            + "(?:class|interface|record|enum)\\s+([A-Z]\\w*)");

    /**
     * No nested type of the core has the simple name of a top-level class of the core (as the old presets
     * backend's private {@code Stream} and {@code Event} once did): inside the outer class the nested one would
     * hide the core's own.
     */
    @Test
    void noNestedTypeShadowsACoreClass() throws IOException {
        Map<String, String> code = new TreeMap<>();
        try (Stream<Path> s = Files.walk(SOURCES)) {
            for (Path f : s.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                String name = f.getFileName().toString().replace(".java", "");
                if (!name.equals("package-info")) {
                    code.put(SOURCES.relativize(f).toString(), Files.readString(f));
                }
            }
        }
        assertTrue(code.size() > 80, "read " + code.size() + " files under " + SOURCES.toAbsolutePath());
        assertEquals(List.of(), shadowing(code), "rename the nested type to say what it holds");
        assertEquals(List.of("x/A.java: Stream"), shadowing(Map.of("x/A.java",
                "final class A {\n    private static final class Stream { }\n    record Handle() { }\n}",
                "Stream.java", "public final class Stream { }", "B.java", "final class B { }")));
    }

    /** {@code file: Name} for each nested type of {@code code} (path to source) named as a top-level class. */
    private static List<String> shadowing(Map<String, String> code) {
        Set<String> topLevel = new java.util.HashSet<>();
        for (String file : code.keySet()) {
            String base = Path.of(file).getFileName().toString();
            topLevel.add(base.substring(0, base.length() - ".java".length()));
        }
        List<String> found = new ArrayList<>();
        for (Map.Entry<String, String> e : new TreeMap<>(code).entrySet()) {
            Matcher m = NESTED.matcher(e.getValue());
            while (m.find()) {
                if (topLevel.contains(m.group(1))) {
                    found.add(e.getKey() + ": " + m.group(1));
                }
            }
        }
        return found;
    }

    @Test
    void launchAndTraceUseNothingOfTheRestOfTheCore() throws IOException {
        List<String> found = new ArrayList<>();
        int files = 0;
        for (String pkg : List.of("launch", "trace")) {
            try (Stream<Path> s = Files.list(SOURCES.resolve(pkg))) {
                for (Path f : s.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                    files++;
                    List<String> lines = Files.readAllLines(f);
                    for (int i = 0; i < lines.size(); i++) {
                        String code = lines.get(i).strip();
                        if (!code.startsWith("*") && !code.startsWith("/*") && !code.startsWith("//")
                                && CORE.matcher(code).find()) {
                            found.add(pkg + "/" + f.getFileName() + ":" + (i + 1) + ": " + code);
                        }
                    }
                }
            }
        }
        assertTrue(files >= 15, "read " + files + " files under " + SOURCES.toAbsolutePath());
        assertEquals(List.of(), found, "launch and trace must not use the packages above them");
    }
}
