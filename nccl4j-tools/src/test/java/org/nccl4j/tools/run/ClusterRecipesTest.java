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
import io.fabric8.kubernetes.api.model.ResourceRequirements;
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
import java.util.Set;
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

    /**
     * The TrainJob and its TrainingRuntime: the runtime's container is the one Trainer's torch policy gives the PET_*
     * variables (replicated job "node", container "node", the trainer ancestor label); Trainer's own overrides (the
     * TrainJob's args, env and resources) are applied as Trainer applies them, and the container's command is run as
     * node 1's shell would run it, with the variables Trainer sets, through nccl4j-run's parser: with
     * numProcPerNode auto and no -np, the ranks are the pod's GPUs.
     */
    @Test
    void theTrainJobsRuntimeRunsNccl4jRunWithTrainersVariablesAndAutoRanks() throws Exception {
        List<JsonNode> docs = documents(EXAMPLES.resolve("k8s/trainjob.yaml"));
        assertEquals(2, docs.size());
        GenericKubernetesResource runtime = YAML.treeToValue(kind(docs, "TrainingRuntime"),
                GenericKubernetesResource.class);
        GenericKubernetesResource job = YAML.treeToValue(kind(docs, "TrainJob"), GenericKubernetesResource.class);
        assertEquals("trainer.kubeflow.org/v1alpha1", runtime.getApiVersion());
        assertEquals("trainer.kubeflow.org/v1alpha1", job.getApiVersion());
        assertEquals(runtime.getMetadata().getName(), job.get("spec", "runtimeRef", "name"));
        assertEquals("TrainingRuntime", job.get("spec", "runtimeRef", "kind"));
        assertEquals("trainer.kubeflow.org", job.get("spec", "runtimeRef", "apiGroup"));
        assertEquals("auto", runtime.get("spec", "mlPolicy", "torch", "numProcPerNode"), "Trainer's default");
        Map<String, Object> trainer = job.get("spec", "trainer");
        assertFalse(trainer.containsKey("numProcPerNode"), "the runtime's auto: one rank per GPU");
        assertEquals(Set.of("numNodes", "args", "env", "resourcesPerNode"), trainer.keySet());
        Number maxRestarts = runtime.get("spec", "template", "spec", "failurePolicy", "maxRestarts");
        assertNotNull(maxRestarts, "a failed rank restarts the whole set");

        List<Map<String, Object>> replicated = runtime.get("spec", "template", "spec", "replicatedJobs");
        assertEquals(1, replicated.size());
        assertEquals("node", replicated.get(0).get("name"), "Trainer's name for the nodes' replicated job");
        JobTemplateSpec template = YAML.convertValue(replicated.get(0).get("template"), JobTemplateSpec.class);
        known("the Job template", template.getAdditionalProperties());
        assertEquals("trainer", template.getMetadata().getLabels().get("trainer.kubeflow.org/trainjob-ancestor-step"));
        JobSpec spec = template.getSpec();
        known("the Job's spec", spec.getAdditionalProperties());
        assertEquals(0, spec.getBackoffLimit().intValue(), "a failed pod fails the whole job");
        PodSpec pod = spec.getTemplate().getSpec();
        known("the pod spec", pod.getAdditionalProperties());
        assertEquals("Never", pod.getRestartPolicy());
        assertEquals(1, pod.getContainers().size());
        Container c = pod.getContainers().get(0);
        known("the container", c.getAdditionalProperties());
        assertEquals("node", c.getName(), "Trainer sets PET_* in the container named node only");

        // Trainer's overrides: the TrainJob's args, env and resources go to that container
        ResourceRequirements resources = YAML.convertValue(trainer.get("resourcesPerNode"), ResourceRequirements.class);
        known("resourcesPerNode", resources.getAdditionalProperties());
        int perNode = Integer.parseInt(resources.getLimits().get("nvidia.com/gpu").getAmount());
        List<EnvVar> envVars = YAML.convertValue(trainer.get("env"),
                YAML.getTypeFactory().constructCollectionType(List.class, EnvVar.class));
        Container node = new Container();
        node.setName("node");
        node.setEnv(envVars);
        Map<String, String> env = env(node);
        for (String v : env.keySet()) {
            assertFalse(v.startsWith("PET_"), "Trainer refuses its reserved variables in the TrainJob: " + v);
        }
        assertFalse(env.containsKey("NCCL_HOSTID"), "real hosts: NCCL's own host id");
        assertFalse("1".equals(env.get("NCCL_NVLS_ENABLE")), "NVLink multicast is not forced on");
        EnvVar secret = envVar(node, "NCCL4J_JOB_SECRET");
        assertNull(secret.getValue(), "the secret is never written in the manifest");
        assertNotNull(secret.getValueFrom().getSecretKeyRef(), "the secret comes from a Kubernetes Secret");
        @SuppressWarnings("unchecked")
        List<String> args = (List<String>) trainer.get("args");
        int nodes = ((Number) trainer.get("numNodes")).intValue();
        assertTrue(nodes >= 2, "a job across hosts");

        // node 1's pod, as Trainer's torch policy and the device plugin make it
        String name = job.getMetadata().getName();
        Map<String, String> podEnv = new LinkedHashMap<>(env);
        podEnv.put("PET_NNODES", Integer.toString(nodes));
        podEnv.put("PET_NPROC_PER_NODE", "auto");
        podEnv.put("PET_NODE_RANK", "1");
        podEnv.put("PET_MASTER_ADDR", name + "-node-0-0." + name);
        podEnv.put("PET_MASTER_PORT", "29500");
        podEnv.put("CUDA_VISIBLE_DEVICES", java.util.stream.IntStream.range(0, perNode).mapToObj(Integer::toString)
                .collect(Collectors.joining(",")));
        assertEquals(4, c.getCommand().size());
        assertEquals(List.of("/bin/sh", "-c"), c.getCommand().subList(0, 2));
        assertTrue(c.getArgs() == null || c.getArgs().isEmpty(), "the TrainJob's args are the program");
        String line = c.getCommand().get(2).strip();
        assertTrue(line.startsWith("exec /opt/nccl4j/nccl4j-run "), line);
        assertTrue(line.endsWith(" \"$@\""), "the TrainJob's args, each a word: " + line);
        Matcher m = Pattern.compile("\"\\$([A-Z_]+)\"").matcher(line.substring(0, line.length() - 5));
        StringBuilder sb = new StringBuilder();
        while (m.find()) {
            String value = podEnv.get(m.group(1));
            assertNotNull(value, "a variable Trainer sets: " + m.group(1));
            m.appendReplacement(sb, Matcher.quoteReplacement(value));
        }
        m.appendTail(sb);
        List<String> words = new ArrayList<>(List.of(sb.substring("exec /opt/nccl4j/nccl4j-run ".length()).strip()
                .split(" +")));
        assertFalse(words.contains("-np"), "no -np: PET_NPROC_PER_NODE decides");
        words.addAll(args);
        LaunchOptions o = LaunchOptions.parse(words.toArray(new String[0]), podEnv, Path.of("java"), "cp");
        Nodes n = o.nodes();
        assertEquals(nodes, n.nnodes(), "--nnodes = numNodes");
        assertEquals(perNode, o.ranks(), "auto: one rank per GPU of the pod's limit");
        assertEquals(nodes * perNode, n.worldSize());
        assertEquals(perNode, n.rank(0), "node 1's first rank");
        assertEquals(name + "-node-0-0." + name, o.masterAddr());
        assertEquals(29500, o.port());
        assertEquals("com.example.Train", o.mainClass());
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
        ScriptKit.Outcome r = exec(null, Map.of(), 60, List.of("shellcheck", EXAMPLES.resolve("slurm/train.sbatch").toString(),
                EXAMPLES.resolve("mpi/hostfile-run.sh").toString()));
        assertEquals(0, r.status(), r.out());
    }

    @Test
    void launchingMdShowsEveryRecipe() throws Exception {
        String doc = Files.readString(ROOT.resolve("docs/launching.md"));
        for (String f : List.of("k8s/indexed-job.yaml", "k8s/jobset.yaml", "k8s/trainjob.yaml",
            "slurm/train.sbatch", "mpi/hostfile-run.sh")) {
            assertTrue(doc.contains("examples/" + f), "launching.md names docs/examples/" + f);
        }
        assertTrue(doc.contains("## Across hosts"));
    }
}
