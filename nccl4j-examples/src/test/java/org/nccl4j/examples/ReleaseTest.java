package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The release as the POMs describe it (docs/release.md): one version in every POM, which README.md's dependency,
 * the docs' jar names and the CHANGELOG's newest entry name too; Maven Central's metadata in the parent POM; the
 * published modules (nccl4j-native and nccl4j-core, README's dependency among them) attach their sources and Javadoc,
 * the others skip both the deploy and the Central upload; the release profile signs and publishes; CI runs the
 * consumer check (scripts/release-check.sh) after the tests.
 */
class ReleaseTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final List<String> MODULES = List.of("nccl4j-native", "nccl4j-core", "nccl4j-examples",
            "nccl4j-tools");
    private static final List<String> PUBLISHED = List.of("nccl4j-native", "nccl4j-core");
    /** A module's jar named with a version, as the docs name the build's jars. */
    private static final Pattern JAR = Pattern.compile("nccl4j-(?:native|core|examples|tools)-(\\d[^/\\s\"*:]*?)"
            + "(?:-tests|-sources|-javadoc|-linux-x86_64)?\\.jar");

    private static Document pom(String dir) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(false);
        return f.newDocumentBuilder().parse(ROOT.resolve(dir).resolve("pom.xml").toFile());
    }

    /** The text of the child element {@code name} of {@code parent}, or null. */
    private static String child(Element parent, String name) {
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                return e.getTextContent().trim();
            }
        }
        return null;
    }

    private static Element childElement(Element parent, String name) {
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                return e;
            }
        }
        throw new AssertionError("<" + parent.getTagName() + "> has no <" + name + ">");
    }

    private static String version() throws Exception {
        return child(pom(".").getDocumentElement(), "version");
    }

    /** The artifactIds of the build plugins of a module's own build (not its profiles'). */
    private static List<String> plugins(Document pom) {
        List<String> ids = new ArrayList<>();
        Element build = childElement(pom.getDocumentElement(), "build");
        NodeList plugins = childElement(build, "plugins").getElementsByTagName("plugin");
        for (int i = 0; i < plugins.getLength(); i++) {
            ids.add(child((Element) plugins.item(i), "artifactId"));
        }
        return ids;
    }

    private static String property(Document pom, String name) {
        Element root = pom.getDocumentElement();
        for (Node n = root.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals("properties")) {
                return child(e, name);
            }
        }
        return null;
    }

    @Test
    void everyModuleHasTheParentsVersionAndTheReadmeDependsOnAPublishedOne() throws Exception {
        Document parent = pom(".");
        String version = version();
        assertTrue(version.matches("\\d+\\.\\d+\\.\\d+(-SNAPSHOT)?"), version);
        NodeList modules = parent.getElementsByTagName("module");
        List<String> listed = new ArrayList<>();
        for (int i = 0; i < modules.getLength(); i++) {
            listed.add(modules.item(i).getTextContent().trim());
        }
        assertEquals(MODULES, listed);
        for (String m : MODULES) {
            Element p = childElement(pom(m).getDocumentElement(), "parent");
            assertEquals("nccl4j-parent", child(p, "artifactId"), m);
            assertEquals(version, child(p, "version"), m + "/pom.xml names another parent version than pom.xml's");
            assertEquals(null, child(pom(m).getDocumentElement(), "version"), m + " inherits the version");
        }
        String readme = Files.readString(ROOT.resolve("README.md"));
        Matcher snippet = Pattern.compile("```xml\\n(.*?)```", Pattern.DOTALL).matcher(readme);
        assertTrue(snippet.find(), "README.md has no dependency snippet");
        Matcher artifact = Pattern.compile("<artifactId>([^<]+)</artifactId>").matcher(snippet.group(1));
        assertTrue(artifact.find());
        assertTrue(PUBLISHED.contains(artifact.group(1)), artifact.group(1) + " is not published");
        assertTrue(snippet.group(1).contains("<version>" + version + "</version>"), snippet.group(1));
    }

    @Test
    void thePublishedModulesAttachSourcesAndJavadocAndTheOthersSkipTheDeploy() throws Exception {
        for (String m : MODULES) {
            Document pom = pom(m);
            boolean published = PUBLISHED.contains(m);
            List<String> plugins = plugins(pom);
            if (published) {
                assertTrue(plugins.containsAll(List.of("maven-source-plugin", "maven-javadoc-plugin")),
                        m + ": Maven Central needs its sources and Javadoc jars: " + plugins);
                assertEquals(null, property(pom, "maven.deploy.skip"), m);
                assertEquals(null, property(pom, "skipPublishing"), m);
            } else {
                assertEquals("true", property(pom, "maven.deploy.skip"), m + " is not to be deployed");
                assertEquals("true", property(pom, "skipPublishing"), m + " is not to go to Maven Central");
            }
            assertTrue(child(pom.getDocumentElement(), "name") != null, m + " has no <name>");
            assertTrue(child(pom.getDocumentElement(), "description") != null, m + " has no <description>");
        }
    }

    @Test
    void theParentHasCentralsMetadataAndTheReleaseProfileSignsAndPublishes() throws Exception {
        Element root = pom(".").getDocumentElement();
        for (String e : List.of("name", "description", "url")) {
            assertFalse(child(root, e) == null || child(root, e).isEmpty(), "pom.xml has no <" + e + ">");
        }
        Element license = childElement(childElement(root, "licenses"), "license");
        assertEquals("Apache-2.0", child(license, "name"));
        assertTrue(Files.readString(ROOT.resolve("LICENSE")).contains("Apache License\n                           "
                + "Version 2.0, January 2004"), "LICENSE is not the Apache License 2.0 that pom.xml names");
        Element developer = childElement(childElement(root, "developers"), "developer");
        assertFalse(child(developer, "name").isEmpty());
        Element scm = childElement(root, "scm");
        for (String e : List.of("connection", "developerConnection", "url")) {
            assertTrue(child(scm, e) != null && child(scm, e).contains("github.com"), "<scm> has no <" + e + ">");
        }
        assertEquals("false", childElement(root, "url").getAttribute("child.project.url.inherit.append.path"),
                "each module would get the project's url with its artifactId appended");
        Element release = null;
        NodeList profiles = root.getElementsByTagName("profile");
        for (int i = 0; i < profiles.getLength(); i++) {
            if ("release".equals(child((Element) profiles.item(i), "id"))) {
                release = (Element) profiles.item(i);
            }
        }
        assertTrue(release != null, "pom.xml has no release profile");
        List<String> plugins = new ArrayList<>();
        NodeList ps = release.getElementsByTagName("plugin");
        for (int i = 0; i < ps.getLength(); i++) {
            plugins.add(child((Element) ps.item(i), "artifactId"));
        }
        assertEquals(List.of("maven-gpg-plugin", "central-publishing-maven-plugin"), plugins);
    }

    @Test
    void theChangelogAndTheDocsJarNamesFollowTheVersion() throws Exception {
        String version = version();
        String changelog = Files.readString(ROOT.resolve("CHANGELOG.md"));
        Matcher heading = Pattern.compile("(?m)^## (\\S+)").matcher(changelog);
        assertTrue(heading.find(), "CHANGELOG.md has no \"## VERSION\" entry");
        assertEquals(version.replace("-SNAPSHOT", ""), heading.group(1), "CHANGELOG.md's newest entry");
        List<String> stale = new ArrayList<>();
        List<Path> docs;
        try (Stream<Path> s = Files.walk(ROOT.resolve("docs"))) {
            // the dated GPU reports record the jars of their day
            docs = s.filter(p -> p.toString().endsWith(".md") && !p.startsWith(ROOT.resolve("docs/gpu-runs")))
                    .sorted().collect(Collectors.toList());
        }
        docs.add(ROOT.resolve("README.md"));
        int named = 0;
        for (Path doc : docs) {
            Matcher m = JAR.matcher(Files.readString(doc));
            while (m.find()) {
                named++;
                if (!m.group(1).equals(version)) {
                    stale.add(ROOT.relativize(doc) + ": " + m.group());
                }
            }
        }
        assertTrue(named >= 2, "docs/launching.md names the examples jar twice");
        assertEquals(List.of(), stale, "jar names with another version than pom.xml's " + version);
    }

    @Test
    void ciRunsTheConsumerCheckAfterTheTests() throws IOException {
        List<String> lines = Files.readAllLines(ROOT.resolve(".ci/run"));
        int verify = lines.indexOf("mvn -B -ntp verify");
        int check = lines.indexOf("scripts/release-check.sh");
        assertTrue(verify >= 0, ".ci/run does not run the tests: " + lines);
        assertTrue(check > verify, ".ci/run does not run scripts/release-check.sh after the tests: " + lines);
        assertTrue(Files.isExecutable(ROOT.resolve("scripts/release-check.sh")));
        String script = Files.readString(ROOT.resolve("scripts/release-check.sh"));
        assertTrue(script.contains("-Dmaven.repo.local=") && script.contains("-Dmaven.install.skip=true"),
                "release-check.sh must neither read nccl4j from nor install it into ~/.m2");
    }
}
