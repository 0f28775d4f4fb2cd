package org.nccl4j.tools.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.tools.run.ScriptKit.ROOT;
import static org.nccl4j.tools.run.ScriptKit.exec;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.SecretKeySelector;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.api.model.batch.v1.JobSpec;
import io.fabric8.kubernetes.api.model.batch.v1.JobTemplateSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.MappingIterator;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * The multi-host recipes of {@code docs/launching.md} ("Across hosts"), checked by the machine rather than by eye:
 * each Kubernetes manifest of {@code docs/examples/k8s} is read into fabric8's typed model of the Kubernetes API
 * ({@link Job}, {@link Service}; the JobSet as a {@link GenericKubernetesResource} whose Job template is then read
 * into the typed {@link JobTemplateSpec}), with no field the model does not know; the fields nccl4j depends on are
 * checked against each other (Indexed completions = parallelism = nodes, the headless Service that selects the pods
 * and names MASTER_ADDR, the pods' subdomain, MASTER_PORT, WORLD_SIZE = nodes x GPUs, the secret from a Secret, the
 * GPU limit = ranks per node, NVLink multicast not forced on), and the container's command line and environment are
 * parsed by nccl4j-run's own option parser ({@link LaunchOptions}), as node 1 would run it. The Slurm and Open MPI
 * scripts pass shellcheck, and the sbatch script's {@code #SBATCH} lines agree with each other.
 */
class ClusterRecipesTest {
    private static final Path EXAMPLES = ROOT.resolve("docs/examples");
    private static final YAMLMapper YAML = YAMLMapper.builder().build();

    /** The documents of a YAML file, in order. */
    private static List<JsonNode> documents(Path file) throws Exception {
        List<JsonNode> docs = new ArrayList<>();
        try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(Files.readString(file))) {
            while (it.hasNext()) {
                docs.add(it.next());
            }
        }
        return docs;
    }

    private static JsonNode kind(List<JsonNode> docs, String kind) {
        List<JsonNode> of = docs.stream().filter(d -> kind.equals(d.path("kind").asString()))
                .collect(Collectors.toList());
        assertEquals(1, of.size(), "one " + kind);
        return of.get(0);
    }

    /** Fails when the model put a field it does not know aside (a misspelt or misplaced field). */
    private static void known(String what, Map<String, Object> additional) {
        assertTrue(additional == null || additional.isEmpty(), what + " has fields the API does not: " + additional);
    }

    private static Map<String, String> env(Container c) {
        Map<String, String> m = new LinkedHashMap<>();
        for (EnvVar v : c.getEnv()) {
            known("env " + v.getName(), v.getAdditionalProperties());
            m.put(v.getName(), v.getValue());
        }
        return m;
    }

    private static EnvVar envVar(Container c, String name) {
        return c.getEnv().stream().filter(v -> v.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no " + name + " in " + c.getName()));
    }

    /**
     * Checks an Indexed Job's spec, its pod template and its one container, and returns the container's nccl4j-run
     * command as node 1 runs it, parsed by nccl4j-run.
     *
     * @param spec the Job's spec
     * @param masterAddr the name MASTER_ADDR must hold
     * @return the parsed options
     */
    private static LaunchOptions checkJob(JobSpec spec, String masterAddr, String subdomain) {
        known("the Job's spec", spec.getAdditionalProperties());
        assertEquals("Indexed", spec.getCompletionMode(), "JOB_COMPLETION_INDEX is the node rank");
        int nodes = spec.getCompletions();
        assertTrue(nodes >= 2, "a job across hosts");
        assertEquals(nodes, spec.getParallelism().intValue(), "every node at once: a collective needs every rank");
        assertEquals(0, spec.getBackoffLimit().intValue(), "a failed pod fails the whole job");
        PodTemplateSpec template = spec.getTemplate();
        known("the pod template", template.getAdditionalProperties());
        PodSpec pod = template.getSpec();
        known("the pod spec", pod.getAdditionalProperties());
        assertEquals("Never", pod.getRestartPolicy());
        if (subdomain != null) {
            assertEquals(subdomain, pod.getSubdomain(), "the pods' subdomain is the headless Service's name");
        }
        assertEquals(1, pod.getContainers().size());
        Container c = pod.getContainers().get(0);
        known("the container", c.getAdditionalProperties());
        Map<String, String> env = env(c);
        assertEquals(masterAddr, env.get("MASTER_ADDR"));
        int port = Integer.parseInt(env.get("MASTER_PORT"));
        for (ContainerPort p : c.getPorts() == null ? List.<ContainerPort>of() : c.getPorts()) {
            assertEquals(port, p.getContainerPort().intValue());
        }
        Quantity gpus = c.getResources().getLimits().get("nvidia.com/gpu");
        assertNotNull(gpus, "a GPU limit");
        int perNode = Integer.parseInt(gpus.getAmount());
        assertEquals(nodes * perNode, Integer.parseInt(env.get("WORLD_SIZE")), "WORLD_SIZE = nodes x GPUs per node");
        EnvVar secret = envVar(c, "NCCL4J_JOB_SECRET");
        assertNull(secret.getValue(), "the secret is never written in the manifest");
        SecretKeySelector ref = secret.getValueFrom().getSecretKeyRef();
        assertNotNull(ref, "the secret comes from a Kubernetes Secret");
        assertFalse(ref.getName().isBlank());
        assertFalse(ref.getKey().isBlank());
        String nvls = env.get("NCCL_NVLS_ENABLE");
        assertTrue(nvls == null || nvls.equals("0"), "NVLink multicast is not forced on: " + nvls);
        assertFalse(env.containsKey("NCCL_HOSTID"), "real hosts: NCCL's own host id");

        // the command, as node 1's shell runs it, read by nccl4j-run's own parser with the container's environment
        assertEquals(List.of("/bin/sh", "-c"), c.getCommand());
        assertEquals(1, c.getArgs().size());
        String line = c.getArgs().get(0).strip().replace("\"$JOB_COMPLETION_INDEX\"", "1");
        assertTrue(line.startsWith("exec /opt/nccl4j/nccl4j-run "), line);
        String[] words = line.substring("exec /opt/nccl4j/nccl4j-run ".length()).split(" +");
        Map<String, String> podEnv = new LinkedHashMap<>(env);
        podEnv.put("JOB_COMPLETION_INDEX", "1");
        LaunchOptions o = LaunchOptions.parse(words, podEnv, Path.of("java"), "cp");
        Nodes n = o.nodes();
        assertEquals(nodes, n.nnodes(), "--nnodes = completions");
        assertEquals(perNode, o.ranks(), "-np = the GPU limit: one rank per GPU");
        assertEquals(nodes * perNode, n.worldSize());
        assertEquals(perNode, n.rank(0), "node 1's first rank");
        assertEquals(masterAddr, o.masterAddr());
        assertEquals(port, o.port());
        return o;
    }

    @Test
    void theIndexedJobAndItsHeadlessServiceAgree() throws Exception {
        List<JsonNode> docs = documents(EXAMPLES.resolve("k8s/indexed-job.yaml"));
        assertEquals(2, docs.size());
        Service service = YAML.treeToValue(kind(docs, "Service"), Service.class);
        Job job = YAML.treeToValue(kind(docs, "Job"), Job.class);
        known("the Service", service.getAdditionalProperties());
        known("the Service's spec", service.getSpec().getAdditionalProperties());
        known("the Job", job.getAdditionalProperties());
        assertEquals("v1", service.getApiVersion());
        assertEquals("batch/v1", job.getApiVersion());
        assertEquals("None", service.getSpec().getClusterIP(), "a headless Service: one DNS name per pod");
        assertTrue(service.getSpec().getPublishNotReadyAddresses(), "names before readiness: rank 0 is needed first");
        Map<String, String> labels = job.getSpec().getTemplate().getMetadata().getLabels();
        assertFalse(service.getSpec().getSelector().isEmpty());
        service.getSpec().getSelector().forEach((k, v) -> assertEquals(v, labels.get(k),
                "the Service selects the Job's pods: " + k));
        String svc = service.getMetadata().getName();
        // an Indexed Job's pod i has the host name <job>-<i>; with the subdomain, <job>-0.<service> is rank 0's pod
        LaunchOptions o = checkJob(job.getSpec(), job.getMetadata().getName() + "-0." + svc, svc);
        assertEquals(o.port(), service.getSpec().getPorts().get(0).getPort().intValue(), "the Service's port");
    }

    @Test
    void theJobSetsTemplateIsAnIndexedJobWhoseMasterIsItsFirstPod() throws Exception {
        List<JsonNode> docs = documents(EXAMPLES.resolve("k8s/jobset.yaml"));
        assertEquals(1, docs.size());
        GenericKubernetesResource set = YAML.treeToValue(docs.get(0), GenericKubernetesResource.class);
        assertEquals("jobset.x-k8s.io/v1alpha2", set.getApiVersion());
        assertEquals("JobSet", set.getKind());
        String name = set.getMetadata().getName();
        String subdomain = set.get("spec", "network", "subdomain");
        assertEquals(Boolean.TRUE, set.get("spec", "network", "enableDNSHostnames"));
        assertNotNull(subdomain, "the JobSet's headless Service");
        List<Map<String, Object>> replicated = set.get("spec", "replicatedJobs");
        assertEquals(1, replicated.size());
        Map<String, Object> rjob = replicated.get(0);
        assertEquals(1, ((Number) rjob.get("replicas")).intValue(), "one Indexed Job of all the nodes");
        Number maxRestarts = set.get("spec", "failurePolicy", "maxRestarts");
        assertNotNull(maxRestarts, "a failed rank restarts the whole set");
        JobTemplateSpec template = YAML.convertValue(rjob.get("template"), JobTemplateSpec.class);
        known("the Job template", template.getAdditionalProperties());
        // JobSet's pods are named <jobset>-<replicated job>-<job index>-<pod index>
        checkJob(template.getSpec(), name + "-" + rjob.get("name") + "-0-0." + subdomain, null);
    }

    /** The {@code #SBATCH --name=value} lines of a script. */
    private static Map<String, String> sbatch(String script) {
        Map<String, String> m = new LinkedHashMap<>();
        Matcher x = Pattern.compile("^#SBATCH --([a-z-]+)(?:=(\\S+))?", Pattern.MULTILINE).matcher(script);
        while (x.find()) {
            m.put(x.group(1), x.group(2));
        }
        return m;
    }

    @Test
    void theSbatchScriptRunsOneTaskPerGpuAndKillsTheStepWhenOneFails() throws Exception {
        String s = Files.readString(EXAMPLES.resolve("slurm/train.sbatch"));
        Map<String, String> o = sbatch(s);
        assertTrue(Integer.parseInt(o.get("nodes")) >= 2, o.toString());
        assertEquals(o.get("gpus-per-node"), o.get("ntasks-per-node"), "one task per GPU");
        assertFalse(o.containsKey("ntasks"), "the task count follows from nodes x ntasks-per-node");
        String srun = s.lines().filter(l -> l.startsWith("srun ")).findFirst().orElseThrow();
        assertTrue(srun.contains("--kill-on-bad-exit=1"), srun);
        for (String v : List.of("export MASTER_ADDR", "export MASTER_PORT", "export NCCL4J_JOB_SECRET")) {
            assertTrue(s.contains(v), v);
        }
        assertFalse(s.contains("NCCL_NVLS_ENABLE=1"));
    }

    @Test
    void theMpirunScriptForwardsTheSecretAndTheRendezvous() throws Exception {
        String s = Files.readString(EXAMPLES.resolve("mpi/hostfile-run.sh"));
        for (String v : List.of("-x MASTER_ADDR", "-x MASTER_PORT", "-x NCCL4J_JOB_SECRET", "--hostfile",
            "--bind-to none")) {
            assertTrue(s.contains(v), v);
        }
    }

    @Test
    void theScriptsPassShellcheck() throws Exception {
        Assumptions.assumeTrue(exec(null, Map.of(), 30, List.of("sh", "-c", "command -v shellcheck")).status() == 0,
                "shellcheck is not installed here, so the recipes' lint is not checked");
        ScriptKit.Run r = exec(null, Map.of(), 60, List.of("shellcheck", EXAMPLES.resolve("slurm/train.sbatch").toString(),
                EXAMPLES.resolve("mpi/hostfile-run.sh").toString()));
        assertEquals(0, r.status(), r.out());
    }

    @Test
    void launchingMdShowsEveryRecipe() throws Exception {
        String doc = Files.readString(ROOT.resolve("docs/launching.md"));
        for (String f : List.of("k8s/indexed-job.yaml", "k8s/jobset.yaml", "slurm/train.sbatch",
            "mpi/hostfile-run.sh")) {
            assertTrue(doc.contains("examples/" + f), "launching.md names docs/examples/" + f);
        }
        assertTrue(doc.contains("## Across hosts"));
    }
}
