package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README and docs/ as a reader meets them: the README stays short and its dependency snippet and commands are
 * real (each command's script or class exists and a test runs it, the test command is CI's), every relative link
 * of the documentation resolves, docs/README.md indexes every document, the documentation speaks of the product
 * rather than of how the work on it was done, and every performance figure of the README and of performance.md's
 * results table is a value of docs/gpu-runs/benchmark-latest.json, whose {@code sources} name the report that shows
 * each one ({@link Figures} says how a figure is read).
 */
class DocsTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)#\\s]+)(#[^)\\s]*)?\\)");
    /** Words about how the work was done rather than about the product; "session key" is a product term. */
    private static final Pattern WORKPLACE = Pattern.compile("(?i)\\bsessions?\\b(?!'?s?\\s+keys?\\b)"
            + "|\\bdevice[- ]time\\b|\\blent\\b|\\b(?:to)?nights?\\b|\\bevenings?\\b|\\blectures?\\b");
    private static final Pattern FENCE = Pattern.compile("```(\\w*)\\n(.*?)```", Pattern.DOTALL);
    private static final String LATEST = "docs/gpu-runs/benchmark-latest.json";

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

    /**
     * Every figure of the README's Performance section, its table and the lines around it, is a value of
     * benchmark-latest.json rounded as printed, in the unit printed; a figure that is not is named with its row.
     */
    @Test
    void theReadmesPerformanceFiguresAreBenchmarkLatestsValues() throws IOException {
        Map<String, Object> json = Figures.readJson(read(LATEST));
        String section = section(read("README.md"), "## Performance");
        List<String> rows = tableRows(section);
        assertTrue(rows.size() >= 10, "the README's Performance table has " + rows.size() + " rows");
        List<String> problems = new ArrayList<>(Figures.checkTable("README.md, Performance", rows, json));
        problems.addAll(Figures.checkProse("README.md, Performance", proseLines(section), json));
        assertEquals(List.of(), problems);
    }

    /**
     * performance.md's figures are prose all over but for its summary, the table under Results: that table's
     * figures are benchmark-latest.json's values, as the README's are.
     */
    @Test
    void performanceMdsResultsTableFiguresAreBenchmarkLatestsValues() throws IOException {
        Map<String, Object> json = Figures.readJson(read(LATEST));
        List<String> rows = tableRows(firstTable(section(read("docs/performance.md"), "## Results")));
        assertTrue(rows.size() >= 8, "performance.md's Results table has " + rows.size() + " rows");
        assertEquals(List.of(), Figures.checkTable("docs/performance.md, Results", rows, json));
    }

    /**
     * benchmark-latest.json names its reports: every number in it has an entry in {@code sources}, and each entry
     * names a report in docs/gpu-runs that shows the figure (as the report prints it: 734.9 for 734.873).
     */
    @Test
    void benchmarkLatestNamesTheReportThatShowsEachFigure() throws IOException {
        Map<String, Object> json = Figures.readJson(read(LATEST));
        assertTrue(json.get("sources") instanceof Map<?, ?>, LATEST + " has no \"sources\" object (key -> report)");
        Map<?, ?> sources = (Map<?, ?>) json.get("sources");
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, Object> e : json.entrySet()) {
            if (e.getValue() instanceof BigDecimal && !sources.containsKey(e.getKey())) {
                problems.add(e.getKey() + ": not in sources; add \"" + e.getKey()
                        + "\": \"<the report it comes from>\"");
            }
        }
        for (Map.Entry<?, ?> e : sources.entrySet()) {
            String key = (String) e.getKey();
            Path report = ROOT.resolve("docs/gpu-runs").resolve(String.valueOf(e.getValue()));
            if (!(json.get(key) instanceof BigDecimal value)) {
                problems.add(key + ": in sources but not a number of " + LATEST);
            } else if (!(e.getValue() instanceof String) || !Files.isRegularFile(report)) {
                problems.add(key + ": its source " + e.getValue() + " is no report in docs/gpu-runs");
            } else if (!Figures.reportShows(Files.readString(report), value)) {
                problems.add(key + ": " + value.toPlainString() + " is not in " + e.getValue() + " (at any of its "
                        + "decimals); name the report the figure comes from");
            }
        }
        assertEquals(List.of(), problems);
    }

    /** The checks above fail on a figure that disagrees with its source, and say which figure and where. */
    @Test
    void aFigureThatDisagreesWithItsSourceIsNamed() throws IOException {
        Map<String, Object> json = Figures.readJson(read(LATEST));
        String section = section(read("README.md"), "## Performance");
        for (String[] change : new String[][] {{"| 6.18 us |", "| 6.16 us |", "6.16 us"},
                {"7.082-7.227 ms", "7.082-7.237 ms", "7.082-7.237 ms"}, {"(0.998)", "(0.989)", "0.989"},
                {"| 0 B |", "| 4 B |", "4 B"}, {"(+0.09,", "(+0.19,", "+0.19"}}) {
            assertTrue(section.contains(change[0]), change[0]);
            List<String> problems = Figures.checkTable("README.md", tableRows(section.replace(change[0], change[1])),
                    json);
            assertEquals(1, problems.size(), change[1] + ": " + problems);
            assertTrue(problems.get(0).contains(": " + change[2] + " is no value"), problems.get(0));
        }
        List<String> prose = Figures.checkProse("README.md", List.of("with NCCL 2.28.4 on 2026-11-24 (medians of 21 "
                + "small runs), `2026-11-25-x.md` and [a](b-2026-11-26.md)"), json);
        assertEquals(3, prose.size(), prose.toString());
        assertTrue(prose.get(0).contains("the date 2026-11-24"), prose.get(0));
        assertTrue(prose.get(1).contains("NCCL 2.28.4"), prose.get(1));
        assertTrue(prose.get(2).contains(": 21 is no value of benchmark-latest.json's 'repeats' keys"), prose.get(2));
        // a size and a count in a value cell are conditions, a signed number takes the unit before it
        assertEquals(List.of(new Figures.Figure(new BigDecimal("5.52"), "us", "5.52 us"),
                new Figures.Figure(new BigDecimal("-0.02"), "us", "-0.02")),
                Figures.cellFigures(" 5.52 us (8 B, 4 x H100), -0.02 ", false));
        // the JSON against a report: the report's own decimals, but not fewer than it needs
        assertTrue(Figures.reportShows("| **734.9** |", new BigDecimal("734.873")));
        assertTrue(Figures.reportShows("| 0.090 |", new BigDecimal("0.0896")));
        assertTrue(!Figures.reportShows("| 735 | 734.8 |", new BigDecimal("734.873")));
        assertTrue(!Figures.reportShows("0.9 and 0.94 and 10.945", new BigDecimal("0.9451")));
        assertTrue(!Figures.reportShows("2026-11-23-x.md H100", new BigDecimal("100")));
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

    /** The text of a markdown section, from its heading to the next heading of the same level or higher. */
    private static String section(String markdown, String heading) {
        int start = markdown.indexOf("\n" + heading + "\n");
        assertTrue(start >= 0, "no section '" + heading + "'");
        Matcher next = Pattern.compile("\n#{1," + (heading.indexOf(' ')) + "} ").matcher(markdown);
        int end = next.find(start + heading.length() + 1) ? next.start() : markdown.length();
        return markdown.substring(start + 1, end);
    }

    /** The text of the first table in text. */
    private static String firstTable(String text) {
        Matcher m = Pattern.compile("(?m)(^\\|.*\\n)+").matcher(text);
        assertTrue(m.find(), "no table in " + text);
        return m.group();
    }

    /** The body rows of every table in text: each table's header row and separator row left out. */
    private static List<String> tableRows(String text) {
        List<String> rows = new ArrayList<>();
        String[] lines = text.split("\n");
        for (int i = 0; i < lines.length; i++) {
            if (lines[i].startsWith("|") && i + 1 < lines.length && lines[i + 1].matches("\\|[-:|\\s]+")) {
                i += 2;
                while (i < lines.length && lines[i].startsWith("|")) {
                    rows.add(lines[i++]);
                }
            }
        }
        return rows;
    }

    /** The lines of a section that are neither its heading nor a table's, nor blank. */
    private static List<String> proseLines(String section) {
        List<String> lines = new ArrayList<>();
        for (String line : section.split("\n")) {
            if (!line.isBlank() && !line.startsWith("|") && !line.startsWith("#")) {
                lines.add(line);
            }
        }
        return lines;
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
