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
 * of the core (Javadoc may link to it); the control plane, {@code org.nccl4j.control}, names of {@code org.nccl4j} only
 * the public values it speaks of ({@link #CONTROL_MAY_NAME}), which name nothing of it; {@code org.nccl4j} uses them
 * all; {@code org.nccl4j.diagnostics} can reach only the public API, which the compiler sees to. No two classes of two
 * packages name each other, so the core can be read from the bottom up.
 *
 * <p>Inside {@code org.nccl4j} the classes that make a communicator work stand in {@link #LAYERS}, bottom up (the order
 * package-info.java describes): a class names, in code, only classes of its own layer or below, so that no arrow
 * runs back up and the package reads from the bottom up too. The classes outside the layers ({@link #OUTSIDE}: values,
 * settings, exceptions, the public callbacks) name of the layers only the first (CUDA resources and errors), except
 * where the public API ties them to a Communicator ({@link #OUTSIDE_MAY_NAME}), so that they sit below the layers.
 * Every class of the core stands in one of these lists, so that a new one is placed on purpose.
 */
class LayersTest {
    private static final Path SOURCES = Path.of("src/main/java/org/nccl4j");
    /** A type of the root package, of diagnostics or of control, named in code: import lines and qualified names. */
    private static final Pattern CORE = Pattern.compile("\\borg\\.nccl4j\\.(?:(?:diagnostics|control)\\.)?[A-Z]");

    /**
     * The layers of {@code org.nccl4j}, bottom up: the libraries (NCCL's loading and groups, CUDA's calls), CUDA
     * resources and errors; a communicator's health (its {@code CommHealth} state, and what acts on it from the control
     * plane: the left-behind exit, the start-up guard, the init deadline); the watchdog, and the teardown that takes a
     * communicator off it; the making of one (its parts, bootstrap, recovery, the job's liveness); the Communicator
     * with the one path of its collectives, their argument checks and the composed collectives; what is built on its
     * API (windows, gradient buckets, parameter shards).
     */
    static final List<List<String>> LAYERS = List.of(
            List.of("Errors", "Leaks", "NcclLog", "NcclLoad", "Groups", "Capture", "CudaCalls", "CudaBackend",
                    "NativeCudaBackend", "Stream", "Event", "CudaGraph", "Cuda", "DeviceBuffer"),
            List.of("CommHealth", "CollectiveCheck", "CommBound", "InitDeadline", "LeftBehindExit", "StartupGuard"),
            List.of("Watchdog", "WatchdogMonitor", "Teardown"),
            List.of("CommParts", "Bootstrap", "Recovery", "JobLiveness"),
            List.of("Communicator", "Dispatch", "Arguments", "ComposedCollectives"),
            List.of("Window", "GradientBuckets", "ParameterShards"));
    /** The classes of {@code org.nccl4j} outside the layers: values, settings, exceptions, the public callbacks. */
    static final List<String> OUTSIDE = List.of("DataType", "ReduceOp", "UniqueId", "CommConfig", "CtaPolicy",
            "Collective", "Group", "Nccl", "NcclResult", "RankPhase", "Scalars", "WatchSettings", "WatchdogConfig",
            "FailurePolicy", "OperationObserver", "FailureListener", "NcclException", "CudaException",
            "CommunicatorFailedException", "CollectiveTimeoutException", "RemoteErrorException", "PeerDepartedException",
            "RanksDivergedException", "WatchdogStuckException", "CollectiveMismatchException", "InitTimeoutException",
            "CloseTimeoutException", "PeerLostDuringStartupException");
    /**
     * The control plane, {@code org.nccl4j.control}: the liveness channel and what it carries (who is alive, who left
     * and how, what they said, what all agree on), the farewell at exit, and two helpers the core shares.
     */
    static final List<String> CONTROL = List.of("Attached", "BoundedWait", "Durations", "Ledger", "Departures",
            "Agreement", "RankProcess", "LivenessWire", "ChannelState", "Liveness", "LivenessHub", "LivenessClient",
            "Survivors", "Farewell");
    /** What the control plane may name of {@code org.nccl4j}: the public values it speaks of, which name nothing. */
    static final Set<String> CONTROL_MAY_NAME = Set.of("RankPhase");
    /** Arrows up that the public API asks for: Communicator's entry point to a window, a one-line delegation. */
    static final Set<String> ENTRY_POINTS = Set.of("Communicator -> Window");
    /**
     * What a class outside the layers may name above the first layer: the Communicator, where a public signature
     * carries one (the callbacks, an operator's owner), and, for ReduceOp, whose PreMulSum operators a communicator
     * makes and frees, that registration's bound, the argument checks and the communicator's health it is checked
     * against. Nothing else: an outside class that needs a layer's work owns a hook that the layer sets (as
     * {@code Groups.whenAllEnd}, which the watchdog sets), or goes through a class of the first layer.
     */
    static final Map<String, Set<String>> OUTSIDE_MAY_NAME = Map.of("OperationObserver", Set.of("Communicator"),
            "FailureListener", Set.of("Communicator"), "ReduceOp", Set.of("Communicator", "CommBound", "Arguments", "CommHealth"));

    /**
     * The arrows of {@code org.nccl4j} that close a loop of classes naming each other, each one the public API's own
     * shape or one pair inside a layer: a callback and an operator that name their Communicator, which takes them
     * ({@code FailureListener} through the {@code CommConfig} that {@code create} takes); a window made by
     * {@code Communicator.registerWindow} that names its communicator; a stream that waits for an event recorded on a
     * stream, and ends a capture into a graph launched on a stream; the collective check a communicator's health holds,
     * which reads that health. Without these arrows the package has no loop: it reads from the bottom up.
     */
    static final Set<String> LOOPS = Set.of("FailureListener -> Communicator", "OperationObserver -> Communicator",
            "ReduceOp -> Communicator", "Window -> Communicator", "Stream -> Event", "Stream -> CudaGraph",
            "CommHealth -> CollectiveCheck");

    @Test
    void noArrowRunsBackUpInsideTheRootPackage() throws IOException {
        Map<String, String> code = sources(SOURCES);
        List<String> listed = new ArrayList<>(OUTSIDE);
        LAYERS.forEach(listed::addAll);
        assertEquals(new java.util.TreeSet<>(code.keySet()), new java.util.TreeSet<>(listed),
                "every class of org.nccl4j stands in LAYERS or OUTSIDE, once");
        assertEquals(listed.size(), new java.util.HashSet<>(listed).size(), "a class listed twice: " + listed);
        assertEquals(List.of(), arrowsUp(code), "a class of org.nccl4j names a class of a layer above its own");
    }

    /** Without the arrows of {@link #LOOPS}, which each exist, no classes of {@code org.nccl4j} name each other. */
    @Test
    void theRootPackageHasNoLoopButThePublicApisOwn() throws IOException {
        Map<String, String> code = sources(SOURCES);
        Set<String> arrows = arrows(code);
        for (String allowed : LOOPS) {
            assertTrue(arrows.contains(allowed), "LOOPS names an arrow the code no longer has: " + allowed);
        }
        arrows.removeAll(LOOPS);
        assertEquals(List.of(), loops(arrows), "classes of org.nccl4j that name each other, through the arrows given: "
                + "what a lower class needs of a higher one goes through an interface the lower one owns");
        assertEquals(List.of("[A, B, C]", "[D, E]"), loops(Set.of("A -> B", "B -> C", "C -> A", "C -> D", "D -> E",
                "E -> D", "F -> A")));
    }

    /**
     * The arrows inside the sub-packages that close a loop: a flight record, whose {@code read} and {@code write} are
     * its JSON codec's, which makes one. (The liveness channel's hub and client know it as its {@code ChannelState},
     * below the facade that starts them.)
     */
    static final Map<String, Set<String>> PACKAGE_LOOPS = Map.of("control", Set.of(), "launch", Set.of(),
            "trace", Set.of("TraceDump -> TraceJson"), "diagnostics", Set.of());

    /** Inside each sub-package too, without the arrows of {@link #PACKAGE_LOOPS}, no classes name each other. */
    @Test
    void theSubPackagesHaveNoLoopButTheirFacades() throws IOException {
        for (Map.Entry<String, Set<String>> p : new TreeMap<>(PACKAGE_LOOPS).entrySet()) {
            Set<String> arrows = arrows(sources(SOURCES.resolve(p.getKey())));
            for (String allowed : p.getValue()) {
                assertTrue(arrows.contains(allowed), p.getKey() + ": PACKAGE_LOOPS names an arrow the code no longer "
                        + "has: " + allowed);
            }
            arrows.removeAll(p.getValue());
            assertEquals(List.of(), loops(arrows), "classes of org.nccl4j." + p.getKey() + " that name each other");
        }
    }

    /** Every arrow {@code From -> To} between two classes of {@code code}. */
    private static Set<String> arrows(Map<String, String> code) {
        Set<String> out = new java.util.TreeSet<>();
        for (Map.Entry<String, String> e : code.entrySet()) {
            for (String to : named(e.getValue(), code.keySet())) {
                if (!to.equals(e.getKey())) {
                    out.add(e.getKey() + " -> " + to);
                }
            }
        }
        return out;
    }

    /** The loops of {@code arrows}: each set of classes that reach each other (two or more), sorted. */
    static List<String> loops(Set<String> arrows) {
        Map<String, Set<String>> next = new TreeMap<>();
        for (String a : arrows) {
            String[] ends = a.split(" -> ");
            next.computeIfAbsent(ends[0], k -> new java.util.TreeSet<>()).add(ends[1]);
            next.computeIfAbsent(ends[1], k -> new java.util.TreeSet<>());
        }
        Map<String, Set<String>> reach = new TreeMap<>();
        for (String from : next.keySet()) {
            Set<String> seen = new java.util.TreeSet<>();
            java.util.ArrayDeque<String> todo = new java.util.ArrayDeque<>(next.get(from));
            while (!todo.isEmpty()) {
                String c = todo.pop();
                if (seen.add(c)) {
                    todo.addAll(next.get(c));
                }
            }
            reach.put(from, seen);
        }
        Set<String> out = new java.util.TreeSet<>();
        for (String from : next.keySet()) {
            List<String> loop = new ArrayList<>();
            for (String to : reach.get(from)) {
                if (reach.get(to).contains(from)) {
                    loop.add(to);
                }
            }
            if (loop.size() > 1) {
                out.add(loop.stream().sorted().toList().toString());
            }
        }
        return new ArrayList<>(out);
    }

    /**
     * The control plane names nothing of {@code org.nccl4j} but {@link #CONTROL_MAY_NAME}, which names nothing of the
     * control plane; every class of it is listed in {@link #CONTROL}.
     */
    @Test
    void theControlPlaneNamesNothingOfTheRootAboveIt() throws IOException {
        Map<String, String> control = sources(SOURCES.resolve("control"));
        assertEquals(new java.util.TreeSet<>(CONTROL), control.keySet(), "every class of org.nccl4j.control, listed");
        List<String> found = new ArrayList<>();
        for (Map.Entry<String, String> e : control.entrySet()) {
            for (String to : qualified(e.getValue(), "")) {
                if (!CONTROL_MAY_NAME.contains(to)) {
                    found.add("control." + e.getKey() + " -> " + to);
                }
            }
            for (String to : qualified(e.getValue(), "diagnostics")) {
                found.add("control." + e.getKey() + " -> diagnostics." + to);
            }
        }
        Map<String, String> root = sources(SOURCES);
        for (String value : CONTROL_MAY_NAME) {
            for (String to : qualified(root.get(value), "control")) {
                found.add(value + " -> control." + to);
            }
        }
        assertEquals(List.of(), found, "the control plane sits below org.nccl4j: what it needs from above is an "
                + "interface of its own (as Attached, Farewell.NcclUnderWay) that a class of org.nccl4j implements");
        assertEquals(List.of("CommHealth", "RankPhase"),
                qualified("import org.nccl4j.RankPhase;\n/** {@link org.nccl4j.Communicator} */\n"
                        + "class A { org.nccl4j.CommHealth w; String s = \"org.nccl4j.Bootstrap\"; }", ""));
    }

    /** No two classes of two packages of the core name each other: between packages the arrows go one way. */
    @Test
    void noTwoClassesOfTwoPackagesNameEachOther() throws IOException {
        Map<String, String> all = new TreeMap<>();
        for (String pkg : List.of("", "control", "launch", "trace", "diagnostics")) {
            Path dir = pkg.isEmpty() ? SOURCES : SOURCES.resolve(pkg);
            for (Map.Entry<String, String> e : sources(dir).entrySet()) {
                all.put(pkg + ":" + e.getKey(), e.getValue());
            }
        }
        assertTrue(all.size() > 80, "read " + all.size() + " classes under " + SOURCES.toAbsolutePath());
        assertEquals(List.of(), twoWay(all), "classes of two packages that name each other");
        assertEquals(List.of("control:B <-> :A"), twoWay(Map.of(":A", "import org.nccl4j.control.B; class A { }",
                "control:B", "class B { org.nccl4j.A a; }", "control:C", "class C { org.nccl4j.A a; }")));
    }

    /** {@code package:Class <-> package:Class} for each pair of classes of two packages that name each other. */
    private static List<String> twoWay(Map<String, String> all) {
        Set<String> arrows = new java.util.HashSet<>();
        for (Map.Entry<String, String> e : all.entrySet()) {
            String pkg = e.getKey().substring(0, e.getKey().indexOf(':'));
            for (String other : List.of("", "control", "launch", "trace", "diagnostics")) {
                if (!other.equals(pkg)) {
                    for (String to : qualified(e.getValue(), other)) {
                        arrows.add(e.getKey() + " -> " + other + ":" + to);
                    }
                }
            }
        }
        Set<String> found = new java.util.TreeSet<>();
        for (String a : arrows) {
            String[] ends = a.split(" -> ");
            if (arrows.contains(ends[1] + " -> " + ends[0])) {
                found.add(ends[0].compareTo(ends[1]) > 0 ? ends[0] + " <-> " + ends[1] : ends[1] + " <-> " + ends[0]);
            }
        }
        return new ArrayList<>(found);
    }

    /** The classes of {@code org.nccl4j} (pkg empty) or {@code org.nccl4j.pkg} that {@code source} names in code. */
    static List<String> qualified(String source, String pkg) {
        String code = NOT_CODE.matcher(source).replaceAll(r -> r.group().startsWith("/") ? " " : "\"\"");
        Matcher m = Pattern.compile("\\borg\\.nccl4j\\." + (pkg.isEmpty() ? "" : pkg + "\\.") + "([A-Z]\\w*)")
                .matcher(code);
        Set<String> out = new java.util.TreeSet<>();
        while (m.find()) {
            out.add(m.group(1));
        }
        assertTrue(!code.matches("(?s).*\\bimport\\s+org\\.nccl4j(\\.\\w+)?\\.\\*;.*"),
                "a wildcard import of the core hides what it names");
        return new ArrayList<>(out);
    }

    /** The classes of {@code dir} (not of its sub-packages): name to source. */
    private static Map<String, String> sources(Path dir) throws IOException {
        Map<String, String> code = new TreeMap<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path f : s.filter(p -> p.toString().endsWith(".java")).toList()) {
                String name = f.getFileName().toString().replace(".java", "");
                if (!name.equals("package-info")) {
                    code.put(name, Files.readString(f));
                }
            }
        }
        return code;
    }

    /** The checker sees an arrow back up, in a field, a nested type's owner or a qualified name. */
    @Test
    void theCheckSeesAnArrowBackUp() {
        Map<String, String> code = new TreeMap<>();
        code.put("Stream", "final class Stream {\n  // Communicator in a comment\n  String s = \"Communicator\";\n"
                + "  private Communicator users;\n}");
        code.put("CommHealth", "final class CommHealth { Watchdog.Settings s; org.nccl4j.Communicator c; }");
        code.put("Collective", "enum Collective { X; Communicator c; }");
        code.put("OperationObserver", "interface OperationObserver { void enqueued(Communicator c); }");
        code.put("Nccl", "final class Nccl { Stream s; static void groupOver() { Watchdog.groupsEnded(); } }");
        code.put("Communicator", "class Communicator { Recovery r; Stream s; Bootstrap b; GradientBuckets g; }");
        for (String other : List.of("Watchdog", "Recovery", "Bootstrap", "GradientBuckets")) {
            code.put(other, "final class " + other + " { }");
        }
        String outside = " (outside the layers: of them only the first, or what the public API ties to a Communicator)";
        assertEquals(List.of("Collective -> Communicator" + outside, "CommHealth -> Communicator",
                "CommHealth -> Watchdog", "Communicator -> GradientBuckets", "Nccl -> Watchdog" + outside,
                "Stream -> Communicator"), arrowsUp(code));
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
                    if (target != null && target > 0 && !OUTSIDE_MAY_NAME.getOrDefault(from, Set.of()).contains(to)) {
                        found.add(from + " -> " + to + " (outside the layers: of them only the first, or what the "
                                + "public API ties to a Communicator)");
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
        for (String pkg : List.of("launch", "trace")) {   // (trace uses launch: JobSecret, the host's name)
            try (Stream<Path> s = Files.list(SOURCES.resolve(pkg))) {
                for (Path f : s.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                    files++;
                    List<String> lines = Files.readAllLines(f);
                    for (int i = 0; i < lines.size(); i++) {
                        String code = lines.get(i).strip();
                        boolean up = CORE.matcher(code).find()
                                || pkg.equals("launch") && code.contains("org.nccl4j.trace.");
                        if (!code.startsWith("*") && !code.startsWith("/*") && !code.startsWith("//") && up) {
                            found.add(pkg + "/" + f.getFileName() + ":" + (i + 1) + ": " + code);
                        }
                    }
                }
            }
        }
        assertTrue(files >= 15, "read " + files + " files under " + SOURCES.toAbsolutePath());
        assertEquals(List.of(), found, "launch and trace must not use the packages above them, nor launch trace");
    }
}
