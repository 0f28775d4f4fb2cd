package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README and docs/ as a reader meets them: the README stays short and its dependency snippet and commands are
 * real (each command's script or class exists and a test runs it, the test command is CI's), every relative link
 * of the documentation resolves, docs/README.md indexes every document, and the documentation speaks of the product
 * rather than of how the work on it was done.
 */
class DocsTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)#\\s]+)(#[^)\\s]*)?\\)");
    /** Words about how the work was done rather than about the product; "session key" is a product term. */
    private static final Pattern WORKPLACE = Pattern.compile("(?i)\\bsessions?\\b(?!'?s?\\s+keys?\\b)"
            + "|\\bdevice[- ]time\\b|\\blent\\b|\\b(?:to)?nights?\\b|\\bevenings?\\b|\\blectures?\\b");
    private static final Pattern FENCE = Pattern.compile("```(\\w*)\\n(.*?)```", Pattern.DOTALL);

    private static String read(String path) throws IOException {
        return Files.readString(ROOT.resolve(path));
    }

    @Test
    void theReadmeIsShortAndItsDependencySnippetNamesThisBuild() throws IOException {
        String readme = read("README.md");
        assertTrue(readme.length() <= 8 * 1024, "README.md has " + readme.length() + " bytes: keep it at most 8 KiB "
                + "and move details into docs/");
        String pom = read("pom.xml");
        String version = first(Pattern.compile("<artifactId>nccl4j-parent</artifactId>\\s*<version>([^<]+)</version>"),
                pom);
        String snippet = blocks(readme, "xml").get(0);
        assertEquals("org.nccl4j", first(Pattern.compile("<groupId>([^<]+)</groupId>"), snippet));
        assertEquals("nccl4j-core", first(Pattern.compile("<artifactId>([^<]+)</artifactId>"), snippet));
        assertEquals(version, first(Pattern.compile("<version>([^<]+)</version>"), snippet));
        assertTrue(read("nccl4j-core/pom.xml").contains("<artifactId>nccl4j-core</artifactId>"));
    }

    @Test
    void everyReadmeCommandIsOneThatCiRunsOrATestCovers() throws Exception {
        List<String> commands = new ArrayList<>();
        for (String block : blocks(read("README.md"), "bash")) {
            for (String line : block.replace("\\\n", " ").split("\n")) {
                String command = line.replaceAll("\\s+#.*$", "").trim();
                if (!command.isEmpty()) {
                    commands.add(command);
                }
            }
        }
        assertTrue(commands.size() >= 5, commands.toString());
        String ci = read(".ci/run");
        String tests = testSources();
        for (String command : commands) {
            String[] words = command.split("\\s+");
            switch (words[0]) {
                case "mvn" -> assertTrue(ci.contains(command.replace("mvn -B", "mvn -B -ntp")),
                        command + ": the README's test command must be the one .ci/run runs");
                case "mpirun" -> mainClassExists(words[words.length - 1], command);
                default -> {
                    assertTrue(words[0].startsWith("scripts/"), command + ": not a command this test knows");
                    Path script = ROOT.resolve(words[0]);
                    assertTrue(Files.isExecutable(script), command + ": " + script + " is missing or not executable");
                    String name = script.getFileName().toString();
                    assertTrue(tests.contains(name), command + ": no test runs " + name);
                    if (name.equals("nccl4j-run")) {
                        mainClassExists(words[words.length - 1], command);
                    }
                }
            }
        }
    }

    @Test
    void everyRelativeLinkOfTheDocumentationResolves() throws IOException {
        List<String> broken = new ArrayList<>();
        for (Path doc : documents()) {
            Matcher m = LINK.matcher(Files.readString(doc));
            while (m.find()) {
                String target = m.group(1);
                if (target.contains("://") || target.startsWith("mailto:")) {
                    continue;
                }
                if (!Files.exists(doc.getParent().resolve(target).normalize())) {
                    broken.add(ROOT.relativize(doc) + " -> " + target);
                }
            }
        }
        assertEquals(List.of(), broken);
    }

    @Test
    void theDocsIndexLinksEveryDocumentAndTheReports() throws IOException {
        String index = read("docs/README.md");
        try (Stream<Path> s = Files.list(ROOT.resolve("docs"))) {
            for (Path doc : s.filter(p -> p.toString().endsWith(".md")).collect(Collectors.toList())) {
                String name = doc.getFileName().toString();
                if (!name.equals("README.md")) {
                    assertTrue(index.contains("](" + name + ")"), "docs/README.md does not link " + name);
                }
            }
        }
        assertTrue(index.contains("](gpu-runs/README.md)"), "docs/README.md does not link the GPU reports' index");
        String runs = read("docs/gpu-runs/README.md");
        try (Stream<Path> s = Files.list(ROOT.resolve("docs/gpu-runs"))) {
            for (Path report : s.filter(p -> p.toString().endsWith(".md")).collect(Collectors.toList())) {
                String name = report.getFileName().toString();
                if (!name.equals("README.md")) {
                    assertTrue(runs.contains("](" + name + ")"), "docs/gpu-runs/README.md does not index " + name);
                }
            }
        }
    }

    /**
     * The documentation speaks of the product: what ran, on which machine, with which command, and what was not run
     * and why in the project's terms ("no 4-GPU machine was available"). Words about how the work was done (a
     * session, device time, a lent machine, a run's time of day, a lecture) are refused, each reported as file:line
     * and the word. Allowed: "session key(s)", the per-connection keys that TLS and nccl4j's record seal derive, and
     * the words inside names such as {@code session3-run4} (the git paths of raw logs, which cannot be renamed).
     */
    @Test
    void theDocumentationSpeaksOfTheProductNotOfHowTheWorkWasDone() throws IOException {
        List<String> found = new ArrayList<>();
        for (Path doc : documents()) {
            List<String> lines = Files.readAllLines(doc);
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = WORKPLACE.matcher(lines.get(i));
                while (m.find()) {
                    found.add(ROOT.relativize(doc) + ":" + (i + 1) + ": \"" + m.group() + "\"");
                }
            }
        }
        assertEquals(List.of(), found, "say what ran, where, with which command, and what was not run and why, in "
                + "the project's terms");
    }

    private static void mainClassExists(String name, String command) {
        String fqn = name.contains(".") ? name : "org.nccl4j.examples." + name;
        try {
            Class.forName(fqn).getMethod("main", String[].class);
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(command + ": " + fqn + " is not a class with a main method", e);
        }
    }

    private static List<Path> documents() throws IOException {
        List<Path> docs = new ArrayList<>(List.of(ROOT.resolve("README.md")));
        try (Stream<Path> s = Files.walk(ROOT.resolve("docs"))) {
            docs.addAll(s.filter(p -> p.toString().endsWith(".md")).sorted().collect(Collectors.toList()));
        }
        return docs;
    }

    private static String testSources() throws IOException {
        StringBuilder all = new StringBuilder();
        for (String module : List.of("nccl4j-core", "nccl4j-examples", "nccl4j-tools")) {
            try (Stream<Path> s = Files.walk(ROOT.resolve(module).resolve("src/test/java"))) {
                for (Path p : s.filter(p -> p.toString().endsWith(".java")).collect(Collectors.toList())) {
                    if (!p.getFileName().toString().equals("DocsTest.java")) {
                        all.append(Files.readString(p));
                    }
                }
            }
        }
        return all.toString();
    }

    private static List<String> blocks(String markdown, String language) {
        List<String> found = new ArrayList<>();
        Matcher m = FENCE.matcher(markdown);
        while (m.find()) {
            if (m.group(1).equals(language)) {
                found.add(m.group(2));
            }
        }
        return found;
    }

    private static String first(Pattern p, String text) {
        Matcher m = p.matcher(text);
        assertTrue(m.find(), p + " not found");
        return m.group(1);
    }
}
