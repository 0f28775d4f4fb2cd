package org.nccl4j.tools.run;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What the tests of the scripts and the Python reports share ({@link KernelTraceTest}, {@link PerfReportTest},
 * {@link PerfAbTest}, {@link ScriptsTest}, {@link ScriptSandbox}): the checkout's root, looking for a tool on the PATH,
 * running a command to its end, executable files, whole-line matching in a report, and one result in nccl4j-perf's -J
 * shape.
 */
final class ScriptKit {
    /** The checkout: the parent of nccl4j-tools, where Maven runs the tests. */
    static final Path ROOT = Path.of("").toAbsolutePath().getParent();
    /**
     * nccl4j's version as the parent pom.xml says it (the version that follows nccl4j-parent): the build's jars are
     * named with it, so the tests name their fake jars with it too.
     */
    static final String VERSION = parentVersion();
    /** The environment the Python reports run with, so that they print their non-ASCII characters on any locale. */
    static final Map<String, String> PYTHON_ENV = Map.of("PYTHONIOENCODING", "utf-8");

    private ScriptKit() {
    }

    private static String parentVersion() {
        try {
            java.util.regex.Matcher m = java.util.regex.Pattern
                    .compile("<artifactId>nccl4j-parent</artifactId>\\s*<version>([^<]+)</version>")
                    .matcher(Files.readString(ROOT.resolve("pom.xml")));
            assertTrue(m.find(), ROOT.resolve("pom.xml") + " names no version after nccl4j-parent");
            return m.group(1);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** A finished command: its exit status and its output, stdout and stderr together. */
    record Outcome(int status, String out) {
    }

    static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    /** Skips the test where tool is not on the PATH. */
    static void assumeOnPath(String tool) {
        assumeTrue(onPath(tool), tool + " is not on the PATH");
    }

    /** command run in dir with env added to this process's environment, stdin /dev/null, given 90 s. */
    static Outcome exec(Path dir, Map<String, String> env, List<String> command) throws Exception {
        return exec(dir, env, 90, command);
    }

    /** As {@link #exec(Path, Map, List)}, given timeoutSeconds; dir null: this process's working directory. */
    static Outcome exec(Path dir, Map<String, String> env, long timeoutSeconds, List<String> command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir == null ? null : dir.toFile()).redirectErrorStream(true);
        pb.environment().putAll(env);
        pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), UTF_8);
        assertTrue(p.waitFor(timeoutSeconds, TimeUnit.SECONDS), String.join(" ", command) + " timed out");
        return new Outcome(p.exitValue(), out);
    }

    /** p made rwxr-xr-x. */
    static Path executable(Path p) throws IOException {
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
        return p;
    }

    /** text written to p (and its directories created), made rwxr-xr-x. */
    static Path executable(Path p, String text) throws IOException {
        Files.createDirectories(p.getParent());
        Files.writeString(p, text);
        return executable(p);
    }

    /** lines, one after the other, as whole lines of md. */
    static void assertLines(String md, String... lines) {
        assertTrue(("\n" + md).contains("\n" + String.join("\n", lines) + "\n"), String.join("\n", lines) + "\n--- in:\n" + md);
    }

    /** One result in nccl4j-perf's -J shape (a float sum where op reduces; root 0 where op has one); extra: its last keys. */
    static String result(String op, long size, String placement, boolean graph, double timeUs, double busbw, String extra) {
        boolean reduces = op.equals("all_reduce") || op.equals("reduce") || op.equals("reduce_scatter");
        boolean rooted = op.equals("broadcast") || op.equals("reduce") || op.equals("gather") || op.equals("scatter");
        return "{\"op\": \"" + op + "\", \"size\": " + size + ", \"count\": " + size / 4 + ", \"type\": \"float\", "
                + "\"redop\": \"" + (reduces ? "sum" : "none") + "\", \"root\": " + (rooted ? 0 : -1) + ", \"placement\": \""
                + placement + "\", \"graph\": " + graph + ", \"time_us\": " + timeUs + ", \"algbw\": " + busbw
                + ", \"busbw\": " + busbw + ", " + extra + "}";
    }
}
