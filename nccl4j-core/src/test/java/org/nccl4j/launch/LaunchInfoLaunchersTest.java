package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.nccl4j.launch.LaunchInfo.Source;

/**
 * Whole environments as each launcher sets them, with every value and the report checked. The environments follow
 * the launchers' sources: Kubeflow Trainer's torch plugin (pkg/runtime/framework/plugins/torch/torch.go: PET_NNODES,
 * PET_NPROC_PER_NODE, PET_NODE_RANK from the Job's completion index, PET_MASTER_ADDR {@code <job>-node-0-0.<job>},
 * PET_MASTER_PORT 29500), the training operator's PyTorchJob (pkg/controller.v1/pytorch/envvar.go and master.go of
 * v1.9.0: MASTER_* and PET_MASTER_* with port 23456, WORLD_SIZE = replicas x nprocPerNode (1 for auto), RANK and
 * PET_NODE_RANK = the pod's index, PET_NPROC_PER_NODE defaulting to auto, PET_NNODES = replicas; v1.6.0 sets only
 * MASTER_*, WORLD_SIZE = replicas and RANK), Kubernetes' Indexed Jobs (JOB_COMPLETION_INDEX), srun's and sbatch's
 * output variables, Open MPI's OMPI_COMM_WORLD_* and torchrun's worker variables.
 */
class LaunchInfoLaunchersTest {
    private static Map<String, String> env(String... kv) {
        Map<String, String> m = new HashMap<>();
        m.put("PATH", "/usr/local/bin:/usr/bin:/bin");
        m.put("HOME", "/root");
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    private static Map<String, String> with(Map<String, String> base, String... kv) {
        Map<String, String> m = new HashMap<>(base);
        for (int i = 0; i < kv.length; i += 2) {
            if (kv[i + 1] == null) {
                m.remove(kv[i]);
            } else {
                m.put(kv[i], kv[i + 1]);
            }
        }
        return m;
    }

    private static void values(LaunchInfo l, Source source, int rank, int size, int local, int localSize, int node,
            int nodes, String addr, int port) {
        assertEquals(source, l.source(), l.report());
        assertEquals(rank, l.rank(), l.report());
        assertEquals(size, l.worldSize(), l.report());
        assertEquals(local < 0 ? OptionalInt.empty() : OptionalInt.of(local), l.localRank(), l.report());
        assertEquals(localSize < 0 ? OptionalInt.empty() : OptionalInt.of(localSize), l.localWorldSize(), l.report());
        assertEquals(node < 0 ? OptionalInt.empty() : OptionalInt.of(node), l.nodeRank(), l.report());
        assertEquals(nodes < 0 ? OptionalInt.empty() : OptionalInt.of(nodes), l.nodeCount(), l.report());
        assertEquals(Optional.ofNullable(addr), l.masterAddr(), l.report());
        assertEquals(port < 0 ? OptionalInt.empty() : OptionalInt.of(port), l.masterPort(), l.report());
    }

    private static IllegalArgumentException refused(Map<String, String> env, int devices) {
        return assertThrows(IllegalArgumentException.class, () -> LaunchInfo.detect(env, () -> devices));
    }

    // Kubeflow Trainer v2: a TrainJob "llama" of 2 nodes, the pod of node 1 (its JobSet's Indexed Job, index 1)

    private static Map<String, String> trainJobPod(String nprocPerNode) {
        return env("HOSTNAME", "llama-node-0-1", "KUBERNETES_SERVICE_HOST", "10.96.0.1",
                "KUBERNETES_SERVICE_PORT", "443", "JOB_COMPLETION_INDEX", "1", "PET_NNODES", "2",
                "PET_NPROC_PER_NODE", nprocPerNode, "PET_NODE_RANK", "1", "PET_MASTER_ADDR", "llama-node-0-0.llama",
                "PET_MASTER_PORT", "29500", "NVIDIA_VISIBLE_DEVICES", "all");
    }

    @Test
    void trainJobPodWithOneJvmPerNode() {
        LaunchInfo l = LaunchInfo.detect(trainJobPod("1"), () -> 1);
        values(l, Source.KUBEFLOW, 1, 2, 0, 1, 1, 2, "llama-node-0-0.llama", 29500);
        assertEquals(0, l.device());
        assertEquals("Kubeflow: rank 1 from PET_NODE_RANK=1 x PET_NPROC_PER_NODE=1 + local rank 0; world size 2 from"
                + " PET_NNODES=2 x PET_NPROC_PER_NODE=1; local rank 0 from one process per node; local world size 1"
                + " from PET_NPROC_PER_NODE=1; node 1 of 2 from PET_NODE_RANK=1, PET_NNODES=2; device 0 from the"
                + " local rank; master llama-node-0-0.llama from PET_MASTER_ADDR; port 29500 from PET_MASTER_PORT",
                l.report());
        assertEquals("LaunchInfo[Kubeflow: rank 1 of 2, local 0 of 1, node 1 of 2, device 0 (local rank), master"
                + " llama-node-0-0.llama:29500]", l.toString());
    }

    @Test
    void trainJobPodWhoseEntrypointStartsOneJvmPerGpu() {
        LaunchInfo l = LaunchInfo.detect(with(trainJobPod("4"), "LOCAL_RANK", "1"), () -> 4);
        values(l, Source.KUBEFLOW, 5, 8, 1, 4, 1, 2, "llama-node-0-0.llama", 29500);
        assertEquals(1, l.device());
        assertEquals("Kubeflow: rank 5 from PET_NODE_RANK=1 x PET_NPROC_PER_NODE=4 + LOCAL_RANK=1; world size 8 from"
                + " PET_NNODES=2 x PET_NPROC_PER_NODE=4; local rank 1 from LOCAL_RANK=1; local world size 4 from"
                + " PET_NPROC_PER_NODE=4; node 1 of 2 from PET_NODE_RANK=1, PET_NNODES=2; device 1 from the local"
                + " rank; master llama-node-0-0.llama from PET_MASTER_ADDR; port 29500 from PET_MASTER_PORT",
                l.report());
        // the entrypoint may say LOCAL_WORLD_SIZE too; it must agree
        assertEquals(5, LaunchInfo.detect(with(trainJobPod("4"), "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4")).rank());
        IllegalArgumentException e = refused(with(trainJobPod("4"), "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2"), 4);
        assertEquals("LOCAL_WORLD_SIZE=2 is not PET_NPROC_PER_NODE=4: set LOCAL_WORLD_SIZE to the number of"
                + " processes per node, or leave it unset", e.getMessage());
        e = refused(with(trainJobPod("4"), "LOCAL_RANK", "4"), 4);
        assertEquals("LOCAL_RANK=4 is not below PET_NPROC_PER_NODE=4: local ranks run from 0 to 3", e.getMessage());
    }

    @Test
    void trainJobPodWithSeveralProcessesPerNodeButOneJvmIsRefused() {
        IllegalArgumentException e = refused(trainJobPod("4"), 4);
        assertEquals("PET_NPROC_PER_NODE=4 says 4 processes per node, but LOCAL_RANK is not set, so this JVM cannot"
                + " tell which of them it is: start one JVM per GPU with LOCAL_RANK=0..3, or, for one JVM per node,"
                + " set LOCAL_WORLD_SIZE=1 or give the job one process per node (TrainJob numProcPerNode: 1,"
                + " PyTorchJob nprocPerNode: \"1\")", e.getMessage());
        e = refused(trainJobPod("auto"), 8);
        assertEquals("8 visible GPUs (PET_NPROC_PER_NODE=auto) says 8 processes per node, but LOCAL_RANK is not set,"
                + " so this JVM cannot tell which of them it is: start one JVM per GPU with LOCAL_RANK=0..7, or, for"
                + " one JVM per node, set LOCAL_WORLD_SIZE=1 or give the job one process per node (TrainJob"
                + " numProcPerNode: 1, PyTorchJob nprocPerNode: \"1\")", e.getMessage());
    }

    @Test
    void autoAndGpuAreTheVisibleGpus() {
        LaunchInfo l = LaunchInfo.detect(trainJobPod("auto"), () -> 1);
        values(l, Source.KUBEFLOW, 1, 2, 0, 1, 1, 2, "llama-node-0-0.llama", 29500);
        assertEquals("Kubeflow: rank 1 from PET_NODE_RANK=1 x 1 visible GPU (PET_NPROC_PER_NODE=auto) + local rank"
                + " 0; world size 2 from PET_NNODES=2 x 1 visible GPU (PET_NPROC_PER_NODE=auto); local rank 0 from"
                + " one process per node; local world size 1 from 1 visible GPU (PET_NPROC_PER_NODE=auto); node 1 of"
                + " 2 from PET_NODE_RANK=1, PET_NNODES=2; device 0 from the local rank; master llama-node-0-0.llama"
                + " from PET_MASTER_ADDR; port 29500 from PET_MASTER_PORT", l.report());
        l = LaunchInfo.detect(with(trainJobPod("gpu"), "LOCAL_RANK", "3"), () -> 4);
        values(l, Source.KUBEFLOW, 7, 8, 3, 4, 1, 2, "llama-node-0-0.llama", 29500);
        // one JVM per node on a machine with 8 GPUs: LOCAL_WORLD_SIZE=1 says so
        l = LaunchInfo.detect(with(trainJobPod("auto"), "LOCAL_WORLD_SIZE", "1"), () -> 8);
        values(l, Source.KUBEFLOW, 1, 2, 0, 1, 1, 2, "llama-node-0-0.llama", 29500);
        assertEquals("Kubeflow: rank 1 from PET_NODE_RANK=1 x LOCAL_WORLD_SIZE=1 (over PET_NPROC_PER_NODE=auto) +"
                + " local rank 0", l.report().substring(0, l.report().indexOf(';')));
        // no GPU count: refused, naming the fix
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> LaunchInfo.detect(trainJobPod("auto")));
        assertEquals("PET_NPROC_PER_NODE=auto means one process per visible GPU, and the GPU count is not known here"
                + " (no GPU is visible, or LaunchInfo.detect(Map) was given no device count): set LOCAL_WORLD_SIZE to"
                + " the number of JVMs on this node, or give the job a number of processes per node (TrainJob"
                + " numProcPerNode, PyTorchJob nprocPerNode)", e.getMessage());
        assertEquals(e.getMessage(), refused(trainJobPod("auto"), 0).getMessage());
        e = refused(trainJobPod("cpu"), 4);
        assertEquals("PET_NPROC_PER_NODE=cpu asks for one process per CPU, and nccl4j runs one per GPU: give the job"
                + " a number of processes per node (TrainJob numProcPerNode, PyTorchJob nprocPerNode), or set"
                + " LOCAL_WORLD_SIZE to the number of JVMs on this node", e.getMessage());
        assertEquals(1, LaunchInfo.detect(with(trainJobPod("cpu"), "LOCAL_WORLD_SIZE", "1")).rank());
        e = refused(trainJobPod("xpu"), 4);
        assertEquals("PET_NPROC_PER_NODE=\"xpu\" is not a number, auto, gpu or cpu: give the job a number of"
                + " processes per node (TrainJob numProcPerNode, PyTorchJob nprocPerNode)", e.getMessage());
    }

    @Test
    void trainJobPodVariablesAreChecked() {
        IllegalArgumentException e = refused(with(trainJobPod("1"), "PET_NODE_RANK", "2"), 1);
        assertEquals("PET_NODE_RANK=2 is not below 2 nodes (PET_NNODES=2): node ranks run from 0 to 1",
                e.getMessage());
        e = refused(with(trainJobPod("1"), "PET_NNODES", null, "JOB_COMPLETION_INDEX", null), 1);
        assertEquals("PET_NODE_RANK=1 is set but PET_NNODES is not: a Kubeflow pod has both; set PET_NNODES to the"
                + " number of nodes (pods)", e.getMessage());
        e = refused(with(trainJobPod("1"), "PET_NNODES", "1:4"), 1);
        assertEquals("PET_NNODES=1:4 is an elastic range of nodes, and an NCCL communicator has a fixed size: give the"
                + " job a fixed number of nodes (min = max)", e.getMessage());
        e = refused(with(trainJobPod("1"), "PET_MASTER_PORT", "99999"), 1);
        assertEquals("PET_MASTER_PORT=99999 is above 65535: use a TCP port from 1 to 65535", e.getMessage());
        e = refused(with(trainJobPod("1"), "PET_NODE_RANK", "one"), 1);
        assertEquals("PET_NODE_RANK=\"one\" is not an integer: check how the launcher sets PET_NODE_RANK",
                e.getMessage());
    }

    @Test
    void torchrunStartedByATrainJobPodWins() {
        // the pod runs torchrun, which reads PET_* and starts 4 workers per node; this is worker 1 of node 1
        Map<String, String> worker = with(trainJobPod("4"), "TORCHELASTIC_RUN_ID", "none", "RANK", "5",
                "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4", "GROUP_RANK", "1",
                "GROUP_WORLD_SIZE", "2", "ROLE_RANK", "5", "ROLE_WORLD_SIZE", "8", "ROLE_NAME", "default",
                "MASTER_ADDR", "llama-node-0-0.llama", "MASTER_PORT", "29500", "TORCHELASTIC_RESTART_COUNT", "0",
                "TORCHELASTIC_MAX_RESTARTS", "0");
        LaunchInfo l = LaunchInfo.detect(worker, () -> 4);
        values(l, Source.TORCHRUN, 5, 8, 1, 4, 1, 2, "llama-node-0-0.llama", 29500);
        assertEquals("torchrun: rank 5 from RANK=5; world size 8 from WORLD_SIZE=8; local rank 1 from LOCAL_RANK=1;"
                + " local world size 4 from LOCAL_WORLD_SIZE=4; node 1 of 2 from GROUP_RANK=1, GROUP_WORLD_SIZE=2;"
                + " device 1 from the local rank; master llama-node-0-0.llama from MASTER_ADDR; port 29500 from"
                + " MASTER_PORT", l.report());
    }

    // A Kubernetes Indexed Job of 4 pods with a headless Service "ddp-svc" (subdomain), one JVM per pod; the Job's
    // template sets WORLD_SIZE, MASTER_ADDR and MASTER_PORT, Kubernetes sets JOB_COMPLETION_INDEX

    private static Map<String, String> indexedJobPod(int index) {
        return env("HOSTNAME", "ddp-" + index, "JOB_COMPLETION_INDEX", Integer.toString(index),
                "KUBERNETES_SERVICE_HOST", "10.96.0.1", "KUBERNETES_SERVICE_PORT", "443", "WORLD_SIZE", "4",
                "MASTER_ADDR", "ddp-0.ddp-svc", "MASTER_PORT", "29500");
    }

    @Test
    void indexedJobWithAHeadlessService() {
        LaunchInfo l = LaunchInfo.detect(indexedJobPod(2), () -> 1);
        values(l, Source.INDEXED_JOB, 2, 4, 0, 1, 2, 4, "ddp-0.ddp-svc", 29500);
        assertEquals("Indexed Job: rank 2 from JOB_COMPLETION_INDEX=2 (one process per node); world size 4 from"
                + " WORLD_SIZE=4; local rank 0 from one process per node; local world size 1 from one process per"
                + " node; node 2 of 4 from JOB_COMPLETION_INDEX=2, WORLD_SIZE=4 (one process per node); device 0 from"
                + " the local rank; master ddp-0.ddp-svc from MASTER_ADDR; port 29500 from MASTER_PORT", l.report());
        // two JVMs per pod, each told its LOCAL_RANK and LOCAL_WORLD_SIZE by the entrypoint: WORLD_SIZE counts JVMs
        l = LaunchInfo.detect(with(indexedJobPod(3), "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2"));
        values(l, Source.INDEXED_JOB, 7, 8, 1, 2, 3, 4, "ddp-0.ddp-svc", 29500);
        assertEquals("Indexed Job: rank 7 from JOB_COMPLETION_INDEX=3 x LOCAL_WORLD_SIZE=2 + LOCAL_RANK=1; world size"
                + " 8 from WORLD_SIZE=8; local rank 1 from LOCAL_RANK=1; local world size 2 from LOCAL_WORLD_SIZE=2;"
                + " node 3 of 4 from JOB_COMPLETION_INDEX=3, WORLD_SIZE=8 / LOCAL_WORLD_SIZE=2; device 1 from the"
                + " local rank; master ddp-0.ddp-svc from MASTER_ADDR; port 29500 from MASTER_PORT", l.report());
        IllegalArgumentException e = refused(with(indexedJobPod(3), "WORLD_SIZE", "7", "LOCAL_RANK", "1",
                "LOCAL_WORLD_SIZE", "2"), 2);
        assertEquals("WORLD_SIZE=7 is not a multiple of LOCAL_WORLD_SIZE=2: set WORLD_SIZE to the number of"
                + " processes of the job, or PET_NNODES to the number of nodes", e.getMessage());
        e = refused(with(indexedJobPod(3), "WORLD_SIZE", "3"), 1);
        assertEquals("JOB_COMPLETION_INDEX=3 is not below 3 nodes (WORLD_SIZE=3 (one process per node)): node ranks"
                + " run from 0 to 2", e.getMessage());
    }

    @Test
    void indexedJobWithoutASizeIsASingleProcess() {
        // an Indexed Job whose pods work apart: the index says nothing about an NCCL job
        LaunchInfo l = LaunchInfo.detect(env("HOSTNAME", "render-3", "JOB_COMPLETION_INDEX", "3"), () -> 1);
        values(l, Source.SINGLE_PROCESS, 0, 1, 0, 1, -1, -1, null, -1);
        assertEquals("single process (no launcher's rank variables): rank 0; world size 1; local rank 0; local world"
                + " size 1; device 0 from the local rank; master unknown; port unknown; note: JOB_COMPLETION_INDEX=3"
                + " is not read: neither PET_NNODES nor WORLD_SIZE says how many pods the job has", l.report());
    }

    @Test
    void nodeRankPrecedence() {
        // PET_NODE_RANK over JOB_COMPLETION_INDEX; a RANK of another value than the node rank over both
        LaunchInfo l = LaunchInfo.detect(with(trainJobPod("1"), "JOB_COMPLETION_INDEX", "0"));
        assertEquals(Source.KUBEFLOW, l.source());
        assertEquals(1, l.rank());
        l = LaunchInfo.detect(with(indexedJobPod(1), "RANK", "3", "LOCAL_RANK", "0"));
        values(l, Source.TORCHRUN, 3, 4, 0, -1, -1, -1, "ddp-0.ddp-svc", 29500);
        // RANK equal to the node rank is the node rank (the training operator sets both)
        l = LaunchInfo.detect(with(indexedJobPod(1), "RANK", "1"));
        assertEquals(Source.INDEXED_JOB, l.source());
    }

    // The training operator's PyTorchJob "mnist": 1 master and 2 workers

    private static Map<String, String> pyTorchJobPod(int index, String nprocPerNode) {
        int n = nprocPerNode.chars().allMatch(Character::isDigit) ? Integer.parseInt(nprocPerNode) : 1;
        return env("HOSTNAME", index == 0 ? "mnist-master-0" : "mnist-worker-" + (index - 1),
                "PYTHONUNBUFFERED", "1", "MASTER_PORT", "23456", "PET_MASTER_PORT", "23456",
                "MASTER_ADDR", "mnist-master-0", "PET_MASTER_ADDR", "mnist-master-0",
                "WORLD_SIZE", Integer.toString(3 * n), "RANK", Integer.toString(index),
                "PET_NODE_RANK", Integer.toString(index), "PET_NPROC_PER_NODE", nprocPerNode, "PET_NNODES", "3");
    }

    @Test
    void pyTorchJobMasterAndWorker() {
        // nprocPerNode left to its default, auto; one GPU per pod
        LaunchInfo master = LaunchInfo.detect(pyTorchJobPod(0, "auto"), () -> 1);
        values(master, Source.KUBEFLOW, 0, 3, 0, 1, 0, 3, "mnist-master-0", 23456);
        LaunchInfo worker = LaunchInfo.detect(pyTorchJobPod(2, "auto"), () -> 1);
        values(worker, Source.KUBEFLOW, 2, 3, 0, 1, 2, 3, "mnist-master-0", 23456);
        assertEquals("Kubeflow: rank 2 from PET_NODE_RANK=2 x 1 visible GPU (PET_NPROC_PER_NODE=auto) + local rank 0;"
                + " world size 3 from PET_NNODES=3 x 1 visible GPU (PET_NPROC_PER_NODE=auto); local rank 0 from one"
                + " process per node; local world size 1 from 1 visible GPU (PET_NPROC_PER_NODE=auto); node 2 of 3"
                + " from PET_NODE_RANK=2, PET_NNODES=3; device 0 from the local rank; master mnist-master-0 from"
                + " MASTER_ADDR; port 23456 from MASTER_PORT", worker.report());
        // nprocPerNode "4", the container starting 4 JVMs: RANK is the pod's index, not the JVM's
        LaunchInfo l = LaunchInfo.detect(with(pyTorchJobPod(2, "4"), "LOCAL_RANK", "3"), () -> 4);
        values(l, Source.KUBEFLOW, 11, 12, 3, 4, 2, 3, "mnist-master-0", 23456);
        // auto with 4 GPUs and 4 JVMs: the operator's WORLD_SIZE (one per pod) is not read, and the report says so
        l = LaunchInfo.detect(with(pyTorchJobPod(1, "auto"), "LOCAL_RANK", "2"), () -> 4);
        values(l, Source.KUBEFLOW, 6, 12, 2, 4, 1, 3, "mnist-master-0", 23456);
        assertEquals("note: WORLD_SIZE=3 is not read: with PET_NPROC_PER_NODE=auto or gpu the training operator"
                + " counts one process per node", l.report().substring(l.report().indexOf("note: ")));
        // a numeric nprocPerNode and a WORLD_SIZE that disagrees: refused
        IllegalArgumentException e = refused(with(pyTorchJobPod(1, "1"), "WORLD_SIZE", "4"), 1);
        assertEquals("WORLD_SIZE=4 is not PET_NNODES=3 x PET_NPROC_PER_NODE=1 = 3: the job's variables contradict"
                + " each other; set WORLD_SIZE to 3 or leave it unset", e.getMessage());
    }

    @Test
    void pyTorchJobBeforePetVariables() {
        // training operator 1.6: MASTER_*, WORLD_SIZE (pods) and RANK (the pod's index)
        Map<String, String> worker = env("HOSTNAME", "mnist-worker-0", "PYTHONUNBUFFERED", "0",
                "MASTER_PORT", "23456", "MASTER_ADDR", "mnist-master-0", "WORLD_SIZE", "3", "RANK", "1");
        LaunchInfo l = LaunchInfo.detect(worker, () -> 1);
        values(l, Source.TORCHRUN, 1, 3, -1, -1, -1, -1, "mnist-master-0", 23456);
        assertEquals(0, l.withDevice(0).device());
        assertEquals("torchrun: rank 1 from RANK=1; world size 3 from WORLD_SIZE=3; local rank unknown; local world"
                + " size unknown; device unknown (set NCCL4J_DEVICE); master mnist-master-0 from MASTER_ADDR; port"
                + " 23456 from MASTER_PORT", l.report());
    }

    // Slurm: srun -N2 --ntasks-per-node=4 on gpu[01-02], task 5 (node gpu02, local 1); MASTER_PORT exported by
    // the batch script

    private static Map<String, String> srunTask() {
        return env("SLURM_JOB_ID", "4242", "SLURM_JOBID", "4242", "SLURM_STEP_ID", "0", "SLURM_STEPID", "0",
                "SLURM_PROCID", "5", "SLURM_LOCALID", "1", "SLURM_NODEID", "1", "SLURM_NTASKS", "8",
                "SLURM_NPROCS", "8", "SLURM_NNODES", "2", "SLURM_JOB_NUM_NODES", "2", "SLURM_STEP_NUM_NODES", "2",
                "SLURM_STEP_NUM_TASKS", "8", "SLURM_NTASKS_PER_NODE", "4", "SLURM_TASKS_PER_NODE", "4(x2)",
                "SLURM_STEP_TASKS_PER_NODE", "4(x2)", "SLURM_JOB_CPUS_PER_NODE", "32(x2)",
                "SLURM_STEP_NODELIST", "gpu[01-02]", "SLURM_JOB_NODELIST", "gpu[01-02]", "SLURM_NODELIST",
                "gpu[01-02]", "SLURMD_NODENAME", "gpu02", "SLURM_TOPOLOGY_ADDR", "gpu02", "SLURM_GTIDS", "4,5,6,7",
                "SLURM_CPUS_ON_NODE", "32", "SLURM_JOB_PARTITION", "gpu", "SLURM_SUBMIT_HOST", "login01",
                "MASTER_PORT", "29500");
    }

    @Test
    void srunOfTwoNodesTimesFourTasks() {
        LaunchInfo l = LaunchInfo.detect(srunTask(), () -> 4);
        values(l, Source.SLURM, 5, 8, 1, 4, 1, 2, "gpu01", 29500);
        assertEquals("Slurm: rank 5 from SLURM_PROCID=5; world size 8 from SLURM_NTASKS=8; local rank 1 from"
                + " SLURM_LOCALID=1; local world size 4 from SLURM_NTASKS_PER_NODE=4; node 1 of 2 from"
                + " SLURM_NODEID=1, SLURM_STEP_NUM_NODES=2; device 1 from the local rank; master gpu01 from the first"
                + " host of SLURM_STEP_NODELIST=gpu[01-02]; port 29500 from MASTER_PORT", l.report());
        assertEquals("LaunchInfo[Slurm: rank 5 of 8, local 1 of 4, node 1 of 2, device 1 (local rank), master"
                + " gpu01:29500]", l.toString());
        // MASTER_ADDR beats the node list; the step's list beats the job's; SLURM_NNODES without the step's count
        assertEquals(Optional.of("login-free"), LaunchInfo.detect(with(srunTask(), "MASTER_ADDR", "login-free"))
                .masterAddr());
        assertEquals(Optional.of("rack1-gpu1"), LaunchInfo.detect(with(srunTask(), "SLURM_STEP_NODELIST",
                "rack[1-2]-gpu[1-4]", "SLURM_JOB_NODELIST", "rack[1-3]-gpu[1-4]")).masterAddr());
        l = LaunchInfo.detect(with(srunTask(), "SLURM_STEP_NODELIST", null, "SLURM_STEP_NUM_NODES", null,
                "SLURM_JOB_NODELIST", "node-[001-010]"));
        assertEquals(Optional.of("node-001"), l.masterAddr());
        assertEquals(OptionalInt.of(2), l.nodeCount());
        // no port anywhere: the TCP rendezvous says what to set
        assertEquals(OptionalInt.empty(), LaunchInfo.detect(with(srunTask(), "MASTER_PORT", null)).masterPort());
    }

    @Test
    void slurmVariablesAreChecked() {
        IllegalArgumentException e = refused(with(srunTask(), "SLURM_STEP_NODELIST", "gpu[01-02"), 4);
        assertEquals("SLURM_STEP_NODELIST=\"gpu[01-02\" is not a Slurm host list: the bracket opened at position 3 is"
                + " not closed; set MASTER_ADDR to rank 0's host to do without it", e.getMessage());
        // with MASTER_ADDR set the list is not read
        assertEquals(5, LaunchInfo.detect(with(srunTask(), "SLURM_STEP_NODELIST", "gpu[01-02",
                "MASTER_ADDR", "gpu01")).rank());
        e = refused(with(srunTask(), "SLURM_NODEID", "2"), 4);
        assertEquals("SLURM_NODEID=2 is not below SLURM_STEP_NUM_NODES=2: node ranks run from 0 to 1",
                e.getMessage());
        e = refused(with(srunTask(), "SLURM_NNODES", "x", "SLURM_STEP_NUM_NODES", null), 4);
        assertEquals("SLURM_NNODES=\"x\" is not an integer: check how the launcher sets SLURM_NNODES", e.getMessage());
    }

    // sbatch -N2 --ntasks-per-node=4, then mpirun -np 8 in the batch script. Open MPI starts its daemon on the
    // second node with srun, so a rank there also holds the daemon step's SLURM_* (a step of one node, task 0)

    @Test
    void mpirunInsideAnAllocation() {
        Map<String, String> batch = env("SLURM_JOB_ID", "4243", "SLURM_JOB_NODELIST", "node-[001-002]",
                "SLURM_NODELIST", "node-[001-002]", "SLURM_JOB_NUM_NODES", "2", "SLURM_NNODES", "2",
                "SLURM_NTASKS", "8", "SLURM_NPROCS", "8", "SLURM_TASKS_PER_NODE", "4(x2)",
                "SLURM_NTASKS_PER_NODE", "4", "SLURM_JOB_CPUS_PER_NODE", "32(x2)", "MASTER_PORT", "29500");
        Map<String, String> remote = with(batch, "SLURM_STEP_ID", "0", "SLURM_STEP_NODELIST", "node-002",
                "SLURM_STEP_NUM_NODES", "1", "SLURM_STEP_NUM_TASKS", "1", "SLURM_NODEID", "0", "SLURM_PROCID", "0",
                "SLURM_LOCALID", "0", "SLURMD_NODENAME", "node-002", "OMPI_COMM_WORLD_RANK", "6",
                "OMPI_COMM_WORLD_SIZE", "8", "OMPI_COMM_WORLD_LOCAL_RANK", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "4",
                "OMPI_COMM_WORLD_NODE_RANK", "2", "OMPI_UNIVERSE_SIZE", "8", "PMIX_RANK", "6",
                "PMIX_NAMESPACE", "prterun-node-001-12345@1", "OMPI_MCA_ess_base_jobid", "12345");
        LaunchInfo l = LaunchInfo.detect(remote, () -> 4);
        values(l, Source.OPEN_MPI, 6, 8, 2, 4, -1, -1, "node-001", 29500);
        assertEquals("Open MPI: rank 6 from OMPI_COMM_WORLD_RANK=6; world size 8 from OMPI_COMM_WORLD_SIZE=8; local"
                + " rank 2 from OMPI_COMM_WORLD_LOCAL_RANK=2; local world size 4 from OMPI_COMM_WORLD_LOCAL_SIZE=4;"
                + " device 2 from the local rank; master node-001 from the first host of"
                + " SLURM_JOB_NODELIST=node-[001-002]; port 29500 from MASTER_PORT", l.report());
        // a rank on mpirun's own node holds the batch step's variables only
        Map<String, String> local = with(batch, "SLURMD_NODENAME", "node-001", "OMPI_COMM_WORLD_RANK", "1",
                "OMPI_COMM_WORLD_SIZE", "8", "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "4",
                "PMIX_RANK", "1");
        values(LaunchInfo.detect(local, () -> 4), Source.OPEN_MPI, 1, 8, 1, 4, -1, -1, "node-001", 29500);
    }

    // srun -N2 --ntasks-per-node=1 torchrun --nnodes=2 --nproc-per-node=4 --rdzv-endpoint=gpu01:29500 ...: a worker
    // holds its agent's SLURM_* (task 1 of 2) and torchrun's variables

    @Test
    void torchrunInsideSrun() {
        Map<String, String> worker = env("SLURM_JOB_ID", "4244", "SLURM_STEP_ID", "0", "SLURM_PROCID", "1",
                "SLURM_LOCALID", "0", "SLURM_NODEID", "1", "SLURM_NTASKS", "2", "SLURM_NNODES", "2",
                "SLURM_STEP_NUM_NODES", "2", "SLURM_TASKS_PER_NODE", "1(x2)", "SLURM_STEP_NODELIST", "gpu[01-02]",
                "SLURM_JOB_NODELIST", "gpu[01-02]", "TORCHELASTIC_RUN_ID", "4244", "TORCHELASTIC_RESTART_COUNT",
                "0", "TORCHELASTIC_MAX_RESTARTS", "0", "RANK", "6", "WORLD_SIZE", "8", "LOCAL_RANK", "2",
                "LOCAL_WORLD_SIZE", "4", "GROUP_RANK", "1", "GROUP_WORLD_SIZE", "2", "ROLE_RANK", "6",
                "ROLE_WORLD_SIZE", "8", "ROLE_NAME", "default", "MASTER_ADDR", "gpu01", "MASTER_PORT", "29500",
                "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
        LaunchInfo l = LaunchInfo.detect(worker, () -> 4);
        values(l, Source.TORCHRUN, 6, 8, 2, 4, 1, 2, "gpu01", 29500);
        assertEquals("torchrun: rank 6 from RANK=6; world size 8 from WORLD_SIZE=8; local rank 2 from LOCAL_RANK=2;"
                + " local world size 4 from LOCAL_WORLD_SIZE=4; node 1 of 2 from GROUP_RANK=1, GROUP_WORLD_SIZE=2;"
                + " device 2 from the local rank; master gpu01 from MASTER_ADDR; port 29500 from MASTER_PORT",
                l.report());
    }

    @Test
    void reportOfTheOtherSources() {
        LaunchInfo l = LaunchInfo.detect(Map.of("PMI_RANK", "3", "PMI_SIZE", "4", "MPI_LOCALRANKID", "3",
                "MPI_LOCALNRANKS", "4", "NCCL4J_DEVICE", "0"));
        assertEquals("PMI: rank 3 from PMI_RANK=3; world size 4 from PMI_SIZE=4; local rank 3 from"
                + " MPI_LOCALRANKID=3; local world size 4 from MPI_LOCALNRANKS=4; device 0 from NCCL4J_DEVICE=0;"
                + " master unknown; port unknown", l.report());
        l = LaunchInfo.detect(Map.of("RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "3"), () -> 2);
        assertEquals("torchrun: rank 3 from RANK=3; world size 4 from WORLD_SIZE=4; local rank 3 from LOCAL_RANK=3;"
                + " local world size unknown; device 1 from local rank 3 mod 2 devices; master unknown; port unknown",
                l.report());
        l = LaunchInfo.detect(Map.of("PMIX_RANK", "1", "PMI_SIZE", "2"));
        assertEquals("PMIx: rank 1 from PMIX_RANK=1; world size 2 from PMI_SIZE=2; local rank unknown; local world"
                + " size unknown; device unknown (set NCCL4J_DEVICE); master unknown; port unknown", l.report());
        assertEquals("PMIx: rank 1 from PMIX_RANK=1; world size 2 from PMI_SIZE=2; local rank unknown; local world"
                + " size unknown; device 1 (explicit); master unknown; port unknown", l.withDevice(1).report());
    }
}
