package org.nccl4j.tools.run;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.nccl4j.tools.run.ScriptKit.ROOT;
import static org.nccl4j.tools.run.ScriptKit.VERSION;
import static org.nccl4j.tools.run.ScriptKit.executable;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The sandbox in which {@link ScriptsTest} and {@link PerfAbTest} run the bash scripts of {@code scripts/} (and
 * {@code scripts/bench/}) on the
 * CPU: a temporary checkout with a copy of the scripts and a fake bundle ({@code bundle/jre/bin/java}, empty
 * {@code lib/*.jar}, the scripts that {@code gpu-bundle.sh} copies there), a fake C baseline, and fake
 * {@code mpirun}, {@code nvidia-smi}, {@code timeout}, {@code id}, {@code mvn}, {@code java}, {@code python3} and, for
 * {@code gpu-bundle.sh}, {@code jlink}, {@code unzip} and {@code zip} first on PATH (all {@code fake-tool.sh}: each records its path, working directory, arguments and environment;
 * mpirun then runs the per-rank command once per rank). {@link #run} runs a script in a cleared environment and
 * returns its exit status, output and the recorded calls, in order.
 */
final class ScriptSandbox {
    static final Path SCRIPTS = ROOT.resolve("scripts");
    static final String CUDA_TARGETS = "/usr/local/cuda/targets/x86_64-linux/lib";
    static final String CUDA_LIB64 = "/usr/local/cuda/lib64";
    /** When this machine has the CUDA directories, the scripts add them: LD_LIBRARY_PATH is then not checked. */
    static final boolean REAL_CUDA = Files.isDirectory(Path.of(CUDA_TARGETS)) || Files.isDirectory(Path.of(CUDA_LIB64));
    /** A bundle's lib/ (names as gpu-bundle.sh leaves them; mixed case and '-' against '.' test the order). */
    static final List<String> JARS = List.of("xchart-3.8.8.jar", "VectorGraphics2D-0.13.jar",
            "cuda-13.3-9.25-1.5.14.jar", "cuda-13.3-9.25-1.5.14-linux-x86_64.jar", "javacpp-1.5.14.jar",
            "javacpp-1.5.14-linux-x86_64.jar", "junit-platform-console-standalone-1.14.1.jar", "logback-classic-1.5.18.jar",
            "logback-core-1.5.18.jar", "nccl4j-core-" + VERSION + ".jar", "nccl4j-core-" + VERSION + "-tests.jar",
            "nccl4j-examples-" + VERSION + ".jar", "nccl4j-examples-" + VERSION + "-tests.jar",
            "nccl4j-native-" + VERSION + ".jar", "nccl4j-native-" + VERSION + "-tests.jar",
            "nccl4j-tools-" + VERSION + ".jar", "nccl4j-tools-" + VERSION + "-tests.jar", "slf4j-api-2.0.17.jar");
    static final String CONSOLE = "junit-platform-console-standalone-1.14.1.jar";

    final Path base;
    final Path root;
    final Path bundle;
    final Path bin;
    final Path jdk;
    final Path rec;
    final Path work;
    final Path logs;

    /** One recorded call of a fake tool. */
    record Call(String tool, String exe, String cwd, List<String> args, Map<String, String> env) {
        String env(String name) {
            return env.get(name);
        }

        String lastArg() {
            return args.get(args.size() - 1);
        }
    }

    /** A finished script: its exit status, output and the calls of the fakes, in order. */
    record SandboxOutcome(int status, String out, String err, List<Call> calls) {
        List<String> tools() {
            return calls.stream().map(Call::tool).collect(Collectors.toList());
        }

        List<Call> of(String tool) {
            return calls.stream().filter(c -> c.tool.equals(tool)).collect(Collectors.toList());
        }

        Call first(String tool) {
            List<Call> c = of(tool);
            assertFalse(c.isEmpty(), "no call of " + tool + "\n" + this);
            return c.get(0);
        }

        List<String> outLines() {
            return out.lines().collect(Collectors.toList());
        }

        @Override
        public String toString() {
            return "status " + status + "\n--- stdout\n" + out + "--- stderr\n" + err + "--- calls\n"
                    + calls.stream().map(c -> c.tool + " " + c.args).collect(Collectors.joining("\n"));
        }
    }

    /** The sandbox in tmp (a test's {@code @TempDir}). */
    ScriptSandbox(Path tmp) throws IOException {
        base = tmp.toRealPath();
        root = base.resolve("checkout");
        try (Stream<Path> s = Files.walk(SCRIPTS)) {   // scripts/ and scripts/bench/, without build outputs
            for (Path p : s.filter(Files::isRegularFile).filter(p -> !p.toString().contains("/build/"))
                    .collect(Collectors.toList())) {
                Path to = root.resolve("scripts").resolve(SCRIPTS.relativize(p).toString());
                Files.createDirectories(to.getParent());
                Files.copy(p, to, StandardCopyOption.COPY_ATTRIBUTES);
            }
        }
        bundle = makeBundle(root.resolve("bundle"));
        bin = Files.createDirectories(base.resolve("bin"));
        for (String t : List.of("mpirun", "nvidia-smi", "timeout", "id", "mvn", "java", "python3", "jlink", "unzip", "zip")) {
            fake(bin.resolve(t));
        }
        jdk = base.resolve("jdk");
        fake(jdk.resolve("bin/java"));
        fake(root.resolve("scripts/bench/native/build/nccl_perf_baseline"));
        rec = Files.createDirectories(base.resolve("rec"));
        work = Files.createDirectories(base.resolve("work"));
        logs = base.resolve("logs");
        Files.createDirectories(base.resolve("home"));
        Files.createDirectories(base.resolve("tmp"));
    }

    /** The scripts that gpu-bundle.sh copies into the bundle, from its line {@code cp scripts/... "$out/"}. */
    static List<String> bundledScripts() throws IOException {
        Matcher m = Pattern.compile("^cp ((?:scripts/\\S+ )+)\"\\$out/\"$", Pattern.MULTILINE)
                .matcher(Files.readString(SCRIPTS.resolve("gpu-bundle.sh")));
        assertTrue(m.find(), "gpu-bundle.sh has no line cp scripts/... \"$out/\"");
        return Arrays.stream(m.group(1).trim().split(" +")).map(s -> s.substring("scripts/".length()))
                .collect(Collectors.toList());
    }

    /** A bundle as gpu-bundle.sh lays it out, with a fake jre/bin/java and empty jars. */
    Path makeBundle(Path dir) throws IOException {
        fake(dir.resolve("jre/bin/java"));
        Files.createDirectories(dir.resolve("lib"));
        for (String j : JARS) {
            Files.createFile(dir.resolve("lib").resolve(j));
        }
        for (String s : bundledScripts()) {
            Files.copy(SCRIPTS.resolve(s), dir.resolve(s), StandardCopyOption.COPY_ATTRIBUTES);
        }
        return dir;
    }

    /** nccl4j-examples/target and nccl4j-tools/target of a build: each jar, tests jar and lib/; the tools jar. */
    Path makeBuild() throws IOException {
        Path jar = null;
        for (String m : List.of("nccl4j-examples", "nccl4j-tools")) {
            Path target = Files.createDirectories(root.resolve(m + "/target/lib"));
            Files.createFile(root.resolve(m + "/target/" + m + "-" + VERSION + "-tests.jar"));
            jar = Files.createFile(target.resolveSibling(m + "-" + VERSION + ".jar"));
        }
        return jar;
    }

    /** The class path the scripts build from makeBuild's build under root (env.sh's nccl4j_build_classpath). */
    static String buildClasspath(Path root) {
        return root.resolve("nccl4j-tools/target/nccl4j-tools-" + VERSION + ".jar") + ":"
                + root.resolve("nccl4j-examples/target/nccl4j-examples-" + VERSION + ".jar") + ":"
                + root.resolve("nccl4j-tools/target/lib") + "/*:" + root.resolve("nccl4j-examples/target/lib") + "/*";
    }

    static void fake(Path p) throws IOException {
        Files.createDirectories(p.getParent());
        try (InputStream in = ScriptSandbox.class.getResourceAsStream("fake-tool.sh")) {
            Files.copy(in, p, StandardCopyOption.REPLACE_EXISTING);
        }
        executable(p);
    }

    static void delete(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
                Files.delete(p);
            }
        }
    }

    /** The class path the scripts build from a bundle: lib/*.jar but the console launcher, in glob (C) order. */
    static String classpath(Path bundleDir) {
        return JARS.stream().filter(j -> !j.equals(CONSOLE)).sorted().map(j -> bundleDir.resolve("lib").resolve(j).toString())
                .collect(Collectors.joining(":"));
    }

    /** The environment every run starts from (nothing of this machine's but the system PATH). */
    Map<String, String> baseEnv() {
        Map<String, String> e = new TreeMap<>();
        e.put("PATH", bin + ":/usr/local/bin:/usr/bin:/bin");
        e.put("HOME", base.resolve("home").toString());
        e.put("TMPDIR", base.resolve("tmp").toString());
        e.put("LC_ALL", "C");
        e.put("FAKE_REC", rec.toString());
        e.put("FAKE_GPUS", "2");
        e.put("FAKE_UID", "0");
        e.put("FAKE_VERSION", VERSION);   // the fake mvn's jars are named with it
        return e;
    }

    /** A user's job environment: variables of each forwarded family, and one that is not forwarded. */
    static Map<String, String> job(String... more) {
        Map<String, String> e = new LinkedHashMap<>();
        e.put("NCCL_DEBUG", "WARN");
        e.put("NCCL4J_TEST_VAR", "on");
        e.put("CUDA_VISIBLE_DEVICES", "0,1");
        e.put("NVSHMEM_DISABLE", "1");
        e.put("TORCH_NCCL_TRACE", "1");
        e.put("LD_LIBRARY_PATH", "/opt/ld");
        e.put("JAVA_OPTS", "-Dx=1 -Dy=2");
        e.put("NOT_FORWARDED", "kept");
        e.putAll(env(more));
        return e;
    }

    static Map<String, String> env(String... kv) {
        Map<String, String> e = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            e.put(kv[i], kv[i + 1]);
        }
        return e;
    }

    SandboxOutcome run(Path script, Map<String, String> extra, String... args) throws Exception {
        return runIn(baseEnv(), script, extra, args);
    }

    SandboxOutcome runIn(Map<String, String> start, Path script, Map<String, String> extra, String... args)
            throws Exception {
        try (Stream<Path> s = Files.list(rec)) {
            for (Path p : s.collect(Collectors.toList())) {
                Files.delete(p);
            }
        }
        List<String> cmd = new ArrayList<>(List.of(script.toString()));
        cmd.addAll(Arrays.asList(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(work.toFile());
        pb.environment().clear();
        pb.environment().putAll(start);
        pb.environment().putAll(extra);
        Path out = base.resolve("script.out");
        Path err = base.resolve("script.err");
        pb.redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        pb.redirectOutput(out.toFile());
        pb.redirectError(err.toFile());
        Process p = pb.start();
        if (!p.waitFor(90, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            fail(script + " did not finish in 90 s");
        }
        List<Call> calls = new ArrayList<>();
        try (Stream<Path> s = Files.list(rec)) {
            for (Path f : s.sorted().collect(Collectors.toList())) {
                calls.add(readCall(f));
            }
        }
        return new SandboxOutcome(p.exitValue(), Files.readString(out), Files.readString(err), calls);
    }

    private static Call readCall(Path f) {
        Map<String, String> kv = new HashMap<>();
        try {
            for (String line : Files.readAllLines(f)) {
                int eq = line.indexOf('=');
                kv.put(line.substring(0, eq), line.substring(eq + 1));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, String> env = new TreeMap<>();
        for (String v : nulSeparated(kv.get("env"))) {
            int eq = v.indexOf('=');
            env.put(v.substring(0, eq), v.substring(eq + 1));
        }
        return new Call(kv.get("tool"), kv.get("exe"), kv.get("cwd"), nulSeparated(kv.get("args")), env);
    }

    private static List<String> nulSeparated(String b64) {
        String s = new String(Base64.getDecoder().decode(b64 == null ? "" : b64), UTF_8);
        if (s.isEmpty()) {
            return List.of();
        }
        List<String> parts = new ArrayList<>(Arrays.asList(s.split("\0", -1)));
        parts.remove(parts.size() - 1);
        return parts;
    }

    /** Flattens strings and lists of strings into one list. */
    static List<String> args(Object... parts) {
        List<String> a = new ArrayList<>();
        for (Object p : parts) {
            if (p instanceof List<?> l) {
                l.forEach(x -> a.add(x.toString()));
            } else {
                a.add(p.toString());
            }
        }
        return a;
    }

    /** {@code -x NAME} for each name. */
    static List<String> x(String... names) {
        return Arrays.stream(names).flatMap(n -> Stream.of("-x", n)).collect(Collectors.toList());
    }

    static void assertLd(String expected, Call c) {
        if (!REAL_CUDA) {
            assertEquals(expected, c.env("LD_LIBRARY_PATH"), "LD_LIBRARY_PATH of " + c.tool + " " + c.args);
        }
    }

    /** The element matching {@code p} replaced by {@code mask}, so that a random port compares equal. */
    static List<String> masked(List<String> args, String regex, String mask) {
        return args.stream().map(a -> a.matches(regex) ? mask : a).collect(Collectors.toList());
    }
}
