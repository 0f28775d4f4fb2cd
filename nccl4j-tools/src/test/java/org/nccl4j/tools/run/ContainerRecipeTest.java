package org.nccl4j.tools.run;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.tools.run.ScriptKit.ROOT;
import static org.nccl4j.tools.run.ScriptKit.exec;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.MappingIterator;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * The container recipe of {@code docs/multi-host.md} ({@code docs/examples/container}), checked without Docker, which
 * this machine lacks: the Dockerfile is read instruction by instruction; its base image and NCCL package are pinned
 * and agree with each other and with the CUDA that nccl4j's presets load; every file it copies is in the repository or
 * made by the documented build step ({@code scripts/gpu-bundle.sh}) and passes its {@code .dockerignore}; the entry
 * point is executable, passes shellcheck and runs {@code nccl4j-doctor --preflight} before the command (run here with
 * a stand-in doctor); the Kubernetes recipes give their pods a memory-backed {@code /dev/shm}; and the document names
 * only scripts, image paths and variables that exist.
 */
class ContainerRecipeTest {
    private static final Path DIR = ROOT.resolve("docs/examples/container");
    private static final Path DOC = ROOT.resolve("docs/multi-host.md");

    /** One Dockerfile instruction, its continuation lines joined, comments dropped. */
    private record Instruction(String keyword, String args) {
    }

    private static List<Instruction> dockerfile() throws Exception {
        List<Instruction> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        for (String line : Files.readAllLines(DIR.resolve("Dockerfile"))) {
            String t = line.strip();
            if (t.startsWith("#") || (t.isEmpty() && cur.length() == 0)) {
                continue;
            }
            if (t.endsWith("\\")) {
                cur.append(t, 0, t.length() - 1).append(' ');
                continue;
            }
            cur.append(t);
            String s = cur.toString().strip();
            cur.setLength(0);
            if (!s.isEmpty()) {
                int sp = s.indexOf(' ');
                out.add(new Instruction(s.substring(0, sp), s.substring(sp + 1).strip()));
            }
        }
        assertEquals(0, cur.length(), "a continuation line ends the Dockerfile");
        return out;
    }

    private static List<Instruction> all(List<Instruction> is, String keyword) {
        return is.stream().filter(i -> i.keyword().equals(keyword)).toList();
    }

    private static Instruction one(List<Instruction> is, String keyword) {
        List<Instruction> of = all(is, keyword);
        assertEquals(1, of.size(), "one " + keyword + ": " + of);
        return of.get(0);
    }

    /** A COPY's sources and destination, without its --flags. */
    private record Copy(List<String> sources, String destination) {
        /** Where a source lands in the image. */
        String target(String source) {
            String name = source.substring(source.lastIndexOf('/') + 1);
            return destination.endsWith("/") ? destination + name : destination;
        }
    }

    private static List<Copy> copies(List<Instruction> is) {
        List<Copy> out = new ArrayList<>();
        for (Instruction i : all(is, "COPY")) {
            List<String> words = new ArrayList<>(List.of(i.args().split("\\s+")));
            words.removeIf(w -> w.startsWith("--"));
            assertTrue(words.size() >= 2, i.toString());
            out.add(new Copy(words.subList(0, words.size() - 1), words.get(words.size() - 1)));
        }
        return out;
    }

    /** Every path the image gets from COPY, e.g. /opt/nccl4j/nccl4j-run. */
    private static Set<String> imagePaths(List<Instruction> is) {
        Set<String> paths = new TreeSet<>();
        for (Copy c : copies(is)) {
            for (String s : c.sources()) {
                paths.add(c.target(s));
            }
        }
        return paths;
    }

    private static String[] execForm(Instruction i) throws Exception {
        assertTrue(i.args().startsWith("["), i.keyword() + " in exec form (a JSON array): " + i.args());
        return JsonMapper.builder().build().readValue(i.args(), String[].class);
    }

    @Test
    void theBaseImageAndNcclArePinnedAndAgreeWithTheCudaNccl4jLoads() throws Exception {
        List<Instruction> is = dockerfile();
        assertEquals("FROM", is.get(0).keyword(), "the first instruction");
        Matcher from = Pattern.compile("nvidia/cuda:(\\d+)\\.(\\d+)\\.(\\d+)-runtime-ubuntu(\\d+\\.\\d+)")
                .matcher(one(is, "FROM").args());
        assertTrue(from.matches(), "a pinned CUDA runtime image, major.minor.patch: " + one(is, "FROM").args());
        // the JavaCPP Presets for CUDA load libcudart.so.<their major>
        Matcher presets = Pattern.compile("<cuda.presets.version>(\\d+)\\.").matcher(Files.readString(
                ROOT.resolve("pom.xml")));
        assertTrue(presets.find());
        assertEquals(presets.group(1), from.group(1), "the image's CUDA major = the presets' (libcudart.so.N)");

        Matcher arg = Pattern.compile("NCCL_PACKAGE=((\\d+)\\.(\\d+)\\.(\\d+)-(\\d+))\\+cuda(\\d+\\.\\d+)")
                .matcher(one(is, "ARG").args());
        assertTrue(arg.matches(), "libnccl2's version pinned as <version>-<revision>+cuda<major.minor>: "
                + one(is, "ARG").args());
        assertEquals(from.group(1) + "." + from.group(2), arg.group(6), "NCCL built for the image's CUDA");
        int major = Integer.parseInt(arg.group(2));
        int minor = Integer.parseInt(arg.group(3));
        assertTrue(major > 2 || major == 2 && minor >= 19, "NCCL 2.19 or newer, nccl4j's oldest: " + arg.group(1));
        assertEquals("NCCL_VERSION=" + arg.group(1), one(is, "ENV").args(), "the image's label of its NCCL");

        String run = one(is, "RUN").args();
        assertTrue(run.contains("\"libnccl2=${NCCL_PACKAGE}\""), run);
        assertTrue(run.contains("--allow-change-held-packages"), "the base image holds its own libnccl2: " + run);
        assertTrue(run.contains("apt-mark hold libnccl2"), run);
        assertTrue(run.contains("rm -rf /var/lib/apt/lists/*"), run);
        // the document names the same versions
        String doc = Files.readString(DOC);
        assertTrue(doc.contains("nvidia/cuda:" + one(is, "FROM").args().substring("nvidia/cuda:".length())), doc);
        assertTrue(doc.contains("libnccl2=" + arg.group(0).substring("NCCL_PACKAGE=".length())));
    }

    @Test
    void everyCopiedFileIsInTheRepositoryOrMadeByTheBundleStepAndPassesTheIgnoreFile() throws Exception {
        List<Instruction> is = dockerfile();
        String bundleScript = Files.readString(ROOT.resolve("scripts/gpu-bundle.sh"));
        String cpLine = bundleScript.lines().filter(l -> l.startsWith("cp scripts/") && l.endsWith("\"$out/\""))
                .findFirst().orElseThrow(() -> new AssertionError("gpu-bundle.sh copies its scripts in one cp line"));
        List<String> ignore = Files.readAllLines(DIR.resolve("Dockerfile.dockerignore")).stream().map(String::strip)
                .filter(l -> !l.isEmpty() && !l.startsWith("#")).toList();
        assertEquals("*", ignore.get(0), "everything is left out but what is named");
        List<String> sources = new ArrayList<>();
        for (Copy c : copies(is)) {
            if (c.sources().size() > 1) {
                assertTrue(c.destination().endsWith("/"), "several sources go to a directory: " + c);
            }
            sources.addAll(c.sources());
        }
        for (String s : sources) {
            if (s.startsWith("bundle/")) {
                String part = s.substring("bundle/".length());
                switch (part) {
                    case "jre" -> assertTrue(bundleScript.contains("--output \"$out/jre\""), "jlink makes bundle/jre");
                    case "lib" -> assertTrue(bundleScript.contains("mkdir -p \"$out/lib\""), "the jars' bundle/lib");
                    default -> {
                        assertTrue(Files.isRegularFile(ROOT.resolve("scripts/" + part)), "scripts/" + part);
                        assertTrue((cpLine + " ").contains(" scripts/" + part + " "), "gpu-bundle.sh copies " + part
                                + " into the bundle: " + cpLine);
                    }
                }
            } else {
                assertTrue(Files.isRegularFile(ROOT.resolve(s)), s + " is in the repository");
            }
            // the last rule that matches decides, as in Docker's ignore files
            boolean sent = false;
            for (String rule : ignore) {
                boolean keep = rule.startsWith("!");
                String p = keep ? rule.substring(1) : rule;
                if (p.equals("*") || p.equals(s) || s.startsWith(p + "/")) {
                    sent = keep;
                }
            }
            assertTrue(sent, s + " reaches the build: Dockerfile.dockerignore lets it through");
        }
        for (String rule : ignore.subList(1, ignore.size())) {
            assertTrue(rule.startsWith("!") && sources.contains(rule.substring(1)), "a rule for nothing copied: "
                    + rule);
        }
        // a copied script that sources env.sh has it beside it in the image
        Set<String> paths = imagePaths(is);
        for (String p : paths) {
            String name = p.substring(p.lastIndexOf('/') + 1);
            Path script = ROOT.resolve("scripts/" + name);
            if (Files.isRegularFile(script) && Files.readString(script).contains(". \"$(dirname \"$0\")/env.sh\"")) {
                assertTrue(paths.contains(p.substring(0, p.lastIndexOf('/') + 1) + "env.sh"), p + " sources env.sh");
            }
        }
        assertTrue(paths.containsAll(List.of("/opt/nccl4j/jre", "/opt/nccl4j/lib", "/opt/nccl4j/nccl4j-run",
                "/opt/nccl4j/nccl4j-doctor")), paths.toString());
        // the documented build step, in the Dockerfile and the document alike
        String bundle = "BUNDLE_TESTS=0 scripts/gpu-bundle.sh bundle";
        String build = "docker build -f docs/examples/container/Dockerfile -t registry.example.com/nccl4j:0.1.0 .";
        String dockerfile = Files.readString(DIR.resolve("Dockerfile"));
        String doc = Files.readString(DOC);
        for (String step : List.of(bundle, build)) {
            assertTrue(dockerfile.contains("#   " + step + "\n"), step);
            assertTrue(doc.contains("\n" + step + "\n"), step);
        }
        assertTrue(bundleScript.contains("tests=${BUNDLE_TESTS:-1}"), "gpu-bundle.sh reads BUNDLE_TESTS");
    }

    @Test
    void theEntryPointIsExecutablePassesShellcheckAndIsTheImagesEntryPoint() throws Exception {
        List<Instruction> is = dockerfile();
        Path entry = DIR.resolve("entrypoint.sh");
        assertTrue(Files.isExecutable(entry), entry + " is executable");
        assertTrue(Files.readString(entry).startsWith("#!/usr/bin/env bash\n"));
        ScriptKit.Outcome git = exec(ROOT.toAbsolutePath(), Map.of(), 30, List.of("git", "ls-files", "-s",
                "docs/examples/container/entrypoint.sh"));
        if (git.status() == 0 && !git.out().isBlank()) {
            assertTrue(git.out().startsWith("100755 "), "git keeps it executable: " + git.out());
        }
        String[] entrypoint = execForm(one(is, "ENTRYPOINT"));
        assertEquals(1, entrypoint.length);
        Set<String> paths = imagePaths(is);
        assertTrue(paths.contains(entrypoint[0]), entrypoint[0] + " is copied into the image: " + paths);
        Copy fromRepo = copies(is).stream().filter(c -> c.sources().contains("docs/examples/container/entrypoint.sh"))
                .findFirst().orElseThrow();
        assertEquals(entrypoint[0], fromRepo.target("docs/examples/container/entrypoint.sh"));
        String[] cmd = execForm(one(is, "CMD"));
        assertTrue(paths.contains(cmd[0]), "the default command is in the image: " + cmd[0]);
        assertEquals(entrypoint[0].replace("entrypoint.sh", "nccl4j-doctor"), cmd[0]);
        Assumptions.assumeTrue(ScriptKit.onPath("shellcheck"), "shellcheck is not installed here");
        ScriptKit.Outcome r = exec(null, Map.of(), 60, List.of("shellcheck", "-x", "-P", "SCRIPTDIR", entry.toString()));
        assertEquals(0, r.status(), r.out());
    }

    /** The entry point's run: status, stdout, stderr, and the stand-in doctor's calls. */
    private record Ran(int status, String out, String err, List<String> doctorCalls) {
    }

    private static Ran runEntryPoint(Path image, int doctorStatus, String... command) throws Exception {
        Path calls = image.resolve("doctor-calls");
        Files.deleteIfExists(calls);
        List<String> argv = new ArrayList<>(List.of("bash", image.resolve("entrypoint.sh").toString()));
        argv.addAll(List.of(command));
        ProcessBuilder pb = new ProcessBuilder(argv);
        pb.environment().put("DOCTOR_STATUS", Integer.toString(doctorStatus));
        pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        Path out = image.resolve("out");
        Path err = image.resolve("err");
        pb.redirectOutput(out.toFile()).redirectError(err.toFile());
        Process p = pb.start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "entrypoint.sh timed out");
        return new Ran(p.exitValue(), Files.readString(out), Files.readString(err), Files.exists(calls)
                ? Files.readAllLines(calls) : List.of());
    }

    @Test
    void theEntryPointRunsThePreflightThenTheCommandAndStopsWhenNotReady(@TempDir Path image) throws Exception {
        Files.copy(DIR.resolve("entrypoint.sh"), image.resolve("entrypoint.sh"));
        // a stand-in for the bundle's nccl4j-doctor: logs its arguments, prints a line, exits DOCTOR_STATUS
        ScriptKit.executable(image.resolve("nccl4j-doctor"), "#!/usr/bin/env bash\n"
                + "echo \"$*\" >> \"$(dirname \"$0\")/doctor-calls\"\n"
                + "if [ \"$DOCTOR_STATUS\" = 0 ]; then echo 'nccl4j-doctor --preflight: ready: 2 GPU(s)';\n"
                + "else echo 'nccl4j-doctor --preflight: not ready: CUDA sees no GPU; fix: check nvidia-smi'; fi\n"
                + "exit \"$DOCTOR_STATUS\"\n");
        Ran ready = runEntryPoint(image, 0, "sh", "-c", "echo ran \"$@\"", "x", "a b", "c");
        assertEquals(0, ready.status(), ready.toString());
        assertEquals("ran a b c\n", ready.out(), "the command's stdout is its own");
        assertEquals("nccl4j-doctor --preflight: ready: 2 GPU(s)\n", ready.err());
        assertEquals(List.of("--preflight"), ready.doctorCalls());
        // the command's status is the container's
        assertEquals(7, runEntryPoint(image, 0, "sh", "-c", "exit 7").status());

        Ran notReady = runEntryPoint(image, 1, "sh", "-c", "echo ran");
        assertEquals(1, notReady.status(), notReady.toString());
        assertEquals("", notReady.out(), "the command does not run");
        assertEquals("nccl4j-doctor --preflight: not ready: CUDA sees no GPU; fix: check nvidia-smi\n",
                notReady.err());
        assertEquals(3, runEntryPoint(image, 3, "true").status(), "the doctor's own failure is passed on");

        // the doctor itself, the image's default command, runs without the check before it
        Ran doctor = runEntryPoint(image, 0, image.resolve("nccl4j-doctor").toString(), "--quick");
        assertEquals(0, doctor.status());
        assertEquals(List.of("--quick"), doctor.doctorCalls());

        Ran none = runEntryPoint(image, 0);
        assertEquals(2, none.status());
        assertTrue(none.err().startsWith("entrypoint.sh: no command to run: give one, e.g. "), none.err());
        assertEquals(List.of(), none.doctorCalls());
    }

    /** Every object under node (itself included) that has the field. */
    private static List<JsonNode> withField(JsonNode node, String field) {
        List<JsonNode> out = new ArrayList<>();
        if (node.isObject() && node.has(field)) {
            out.add(node);
        }
        for (JsonNode child : node.values()) {
            out.addAll(withField(child, field));
        }
        return out;
    }

    @Test
    void theKubernetesRecipesGiveTheirPodsAMemoryBackedDevShm() throws Exception {
        YAMLMapper yaml = YAMLMapper.builder().build();
        for (String f : List.of("indexed-job.yaml", "jobset.yaml", "trainjob.yaml")) {
            List<JsonNode> docs = new ArrayList<>();
            try (MappingIterator<JsonNode> it = yaml.readerFor(JsonNode.class).readValues(Files.readString(
                    ROOT.resolve("docs/examples/k8s/" + f)))) {
                while (it.hasNext()) {
                    docs.add(it.next());
                }
            }
            List<JsonNode> pods = new ArrayList<>();
            for (JsonNode d : docs) {
                pods.addAll(withField(d, "containers"));
            }
            assertEquals(1, pods.size(), f + ": one pod spec");
            JsonNode pod = pods.get(0);
            Map<String, JsonNode> volumes = new LinkedHashMap<>();
            for (JsonNode v : pod.path("volumes")) {
                volumes.put(v.path("name").asString(), v);
            }
            for (JsonNode c : pod.path("containers")) {
                String shm = null;
                for (JsonNode m : c.path("volumeMounts")) {
                    if (m.path("mountPath").asString().equals("/dev/shm")) {
                        shm = m.path("name").asString();
                    }
                }
                assertNotNull(shm, f + ": container " + c.path("name").asString() + " mounts a volume at /dev/shm");
                JsonNode v = volumes.get(shm);
                assertNotNull(v, f + ": the pod has the volume " + shm);
                assertEquals("Memory", v.path("emptyDir").path("medium").asString(), f + ": a tmpfs, as /dev/shm is");
                String size = v.path("emptyDir").path("sizeLimit").asString();
                Matcher gi = Pattern.compile("(\\d+)Gi").matcher(size);
                assertTrue(gi.matches() && Integer.parseInt(gi.group(1)) >= 1, f + ": at least the doctor's 1 GiB: "
                        + size);
            }
        }
    }

    @Test
    void theDocumentNamesScriptsImagePathsAndVariablesThatExist() throws Exception {
        String doc = Files.readString(DOC);
        Set<String> paths = imagePaths(dockerfile());
        Matcher script = Pattern.compile("(?<![\\w/.-])scripts/([A-Za-z0-9_.-]+)").matcher(doc);
        int scripts = 0;
        while (script.find()) {
            assertTrue(Files.isRegularFile(ROOT.resolve("scripts/" + script.group(1))), "scripts/" + script.group(1));
            scripts++;
        }
        assertTrue(scripts >= 3, "the document names the scripts it uses");
        Matcher opt = Pattern.compile("/opt/nccl4j/([A-Za-z0-9_.-]+)").matcher(doc);
        while (opt.find()) {
            assertTrue(paths.contains("/opt/nccl4j/" + opt.group(1)), "/opt/nccl4j/" + opt.group(1)
                    + " is in the image: " + paths);
        }
        // each variable the document names is one that nccl4j's code or scripts read, or NCCL's that the doctor knows
        StringBuilder sources = new StringBuilder();
        for (String dir : List.of("nccl4j-core/src/main/java", "nccl4j-native/src/main/java",
                "nccl4j-tools/src/main/java", "scripts")) {
            try (Stream<Path> files = Files.walk(ROOT.resolve(dir))) {
                for (Path f : files.filter(Files::isRegularFile).toList()) {
                    if (f.toString().endsWith(".java") || dir.equals("scripts")) {
                        sources.append(new String(Files.readAllBytes(f), UTF_8)).append('\n');
                    }
                }
            }
        }
        Matcher var = Pattern.compile("\\b(NCCL4?J?_[A-Z0-9_]*[A-Z0-9])\\b").matcher(doc);
        Set<String> named = new TreeSet<>();
        while (var.find()) {
            named.add(var.group(1));
        }
        assertTrue(named.containsAll(List.of("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL4J_JOB_SECRET",
                "NCCL4J_LIBRARY", "NCCL4J_RENDEZVOUS_BIND", "NCCL4J_LIVENESS_PORT")), named.toString());
        for (String v : named) {
            String s = sources.toString();
            assertTrue(s.contains("\"" + v + "\"") || s.contains("${" + v) || s.contains("$" + v + " ")
                    || s.contains(v + "=") , v + " is named by the document but read nowhere in nccl4j");
        }
        for (String v : List.of("MASTER_ADDR", "MASTER_PORT", "PET_MASTER_ADDR", "PET_MASTER_PORT")) {
            assertTrue(sources.toString().contains("\"" + v + "\""), v);
        }
        assertTrue(doc.contains("](ports.md)"), "multi-host.md links ports.md");
        assertTrue(doc.contains("](examples/container/Dockerfile)"));
        assertTrue(doc.contains("](examples/container/entrypoint.sh)"));
        assertTrue(Files.readString(ROOT.resolve("docs/launching.md")).contains("](multi-host.md)"),
                "launching.md links multi-host.md");
        assertFalse(doc.contains("NCCL4J_HOME"), "a shell variable of the recipes, read by no code");
    }
}
