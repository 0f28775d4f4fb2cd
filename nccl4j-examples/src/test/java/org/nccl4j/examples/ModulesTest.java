package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The four modules as a newcomer maps them: the parent pom lists them in build order, no package name (its last
 * segment, as {@code launch} or {@code trace}) is used by two modules' main sources, no class name is used in two
 * modules' main sources, exactly one class in the tree is named {@code Tools}, nothing in nccl4j-examples
 * imports nccl4j-tools, and no main source of nccl4j-tools imports nccl4j-examples: the examples are leaves a user
 * copies, and the tools run them by class name only (nccl4j-examples is the tools' run-time dependency).
 */
class ModulesTest {
    /** The modules, in the order the parent pom builds them. */
    static final List<String> MODULES = List.of("nccl4j-native", "nccl4j-core", "nccl4j-examples", "nccl4j-tools");
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern PACKAGE = Pattern.compile("(?m)^package ([\\w.]+);");
    private static final Pattern MODULE = Pattern.compile("<module>([^<]+)</module>");
    /** An import of the examples' package, plain or static, or of a class in it. */
    private static final Pattern IMPORTS_EXAMPLES = Pattern.compile(
            "(?m)^\\s*import\\s+(?:static\\s+)?org\\.nccl4j\\.examples\\.[\\w.*]+\\s*;");

    @Test
    void theParentPomBuildsTheFourModules() throws IOException {
        Matcher m = MODULE.matcher(Files.readString(ROOT.resolve("pom.xml")));
        List<String> listed = new ArrayList<>();
        while (m.find()) {
            listed.add(m.group(1));
        }
        assertEquals(MODULES, listed);
    }

    @Test
    void noPackageNameIsUsedByTwoModules() throws IOException {
        Map<String, TreeSet<String>> modulesByName = new TreeMap<>();
        for (String module : MODULES) {
            for (Path p : sources(module, "src/main")) {
                Matcher m = PACKAGE.matcher(Files.readString(p));
                assertTrue(m.find(), p + " declares no package");
                String pkg = m.group(1);
                String last = pkg.substring(pkg.lastIndexOf('.') + 1);
                modulesByName.computeIfAbsent(last, k -> new TreeSet<>()).add(module + " (" + pkg + ")");
            }
        }
        assertTrue(modulesByName.size() > 10, modulesByName.toString());
        Map<String, TreeSet<String>> repeated = repeated(modulesByName);
        assertEquals(Map.of(), repeated, "package names used by more than one module: give each its own name");
    }

    @Test
    void noClassNameIsUsedInTwoModulesMainSources() throws IOException {
        Map<String, TreeSet<String>> modulesByName = new TreeMap<>();
        for (String module : MODULES) {
            for (Path p : sources(module, "src/main")) {
                String name = p.getFileName().toString();
                if (!name.equals("package-info.java")) {
                    modulesByName.computeIfAbsent(name, k -> new TreeSet<>()).add(module);
                }
            }
        }
        assertTrue(modulesByName.size() > 100, "read " + modulesByName.size() + " class names under " + ROOT);
        assertEquals(Map.of(), repeated(modulesByName), "class names used in more than one module");
    }

    @Test
    void exactlyOneClassIsNamedTools() throws IOException {
        List<String> found = new ArrayList<>();
        for (String module : MODULES) {
            for (String tree : List.of("src/main", "src/test")) {
                for (Path p : sources(module, tree)) {
                    if (p.getFileName().toString().equals("Tools.java")) {
                        found.add(ROOT.relativize(p).toString());
                    }
                }
            }
        }
        assertEquals(List.of("nccl4j-tools/src/main/java/org/nccl4j/tools/cli/Tools.java"), found);
    }

    @Test
    void theExamplesImportNothingOfTheTools() throws IOException {
        List<String> importing = new ArrayList<>();
        int files = 0;
        for (String tree : List.of("src/main", "src/test")) {
            for (Path p : sources("nccl4j-examples", tree)) {
                files++;
                String text = Files.readString(p);
                if (!p.getFileName().toString().equals("ModulesTest.java") && text.contains("org.nccl4j.tools")) {
                    importing.add(ROOT.relativize(p).toString());
                }
            }
        }
        assertTrue(files > 20, "read " + files + " files of nccl4j-examples");
        assertEquals(List.of(), importing, "nccl4j-examples names org.nccl4j.tools (the tools run the examples by"
                + " name; an example uses nccl4j-core only)");
        String pom = Files.readString(ROOT.resolve("nccl4j-examples/pom.xml"));
        assertTrue(!pom.contains("<artifactId>nccl4j-tools</artifactId>"), "nccl4j-examples depends on nccl4j-tools");
    }

    @Test
    void theToolsMainSourcesImportNothingOfTheExamples() throws IOException {
        List<String> importing = new ArrayList<>();
        int files = 0;
        for (Path p : sources("nccl4j-tools", "src/main")) {
            files++;
            if (importsExamples(Files.readString(p))) {
                importing.add(ROOT.relativize(p).toString());
            }
        }
        assertTrue(files > 40, "read " + files + " main files of nccl4j-tools");
        assertEquals(List.of(), importing, "a main source of nccl4j-tools imports org.nccl4j.examples (what both"
                + " need lives in nccl4j-core, or the tools keep their own copy in org.nccl4j.tools.cli)");
        String pom = Files.readString(ROOT.resolve("nccl4j-tools/pom.xml"));
        Matcher dep = Pattern.compile("<dependency>\\s*(?:<!--(?:(?!-->).)*-->\\s*)?<groupId>org\\.nccl4j</groupId>\\s*"
                + "<artifactId>nccl4j-examples</artifactId>(.*?)</dependency>", Pattern.DOTALL).matcher(pom);
        List<String> scopes = new ArrayList<>();
        while (dep.find()) {
            Matcher scope = Pattern.compile("<scope>(\\w+)</scope>").matcher(dep.group(1));
            scopes.add(scope.find() ? scope.group(1) : "compile");
        }
        assertEquals(List.of("runtime"), scopes, "nccl4j-tools needs nccl4j-examples at run time only (to start an"
                + " example by its name), so that the compiler refuses an import too");
    }

    /** The check sees an import of the examples, plain, static or of the package, and nothing in a string. */
    @Test
    void theCheckSeesAnImportOfTheExamples() {
        assertTrue(importsExamples("package x;\nimport org.nccl4j.examples.Args;\nclass A { }"));
        assertTrue(importsExamples("package x;\nimport static org.nccl4j.examples.Examples.exitStatus;\n"));
        assertTrue(importsExamples("package x;\n  import org.nccl4j.examples.*;\n"));
        assertTrue(importsExamples("package x;\nimport org.nccl4j.examples.Args.UsageException;\n"));
        assertTrue(!importsExamples("package x;\nimport org.nccl4j.tools.cli.Tools;\n"
                + "class A { String p = \"org.nccl4j.examples\"; }\n/** {@code org.nccl4j.examples.AllReduce} */"));
    }

    private static boolean importsExamples(String source) {
        return IMPORTS_EXAMPLES.matcher(source).find();
    }

    private static Map<String, TreeSet<String>> repeated(Map<String, TreeSet<String>> modulesByName) {
        Map<String, TreeSet<String>> repeated = new TreeMap<>();
        modulesByName.forEach((name, where) -> {
            if (where.stream().map(w -> w.split(" ")[0]).distinct().count() > 1) {
                repeated.put(name, where);
            }
        });
        return repeated;
    }

    private static List<Path> sources(String module, String tree) throws IOException {
        Path dir = ROOT.resolve(module).resolve(tree);
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(p -> p.toString().endsWith(".java")).sorted().collect(Collectors.toList());
        }
    }
}
