package org.nccl4j.launch;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.IntSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.nccl4j.jni.CudaNative;
import org.nccl4j.jni.CudaRuntime;
import org.nccl4j.jni.NcclNative;

/**
 * Where this process stands in a multi-process job: its rank, the world size, its rank and the process count on
 * its node when known, its node's rank and the node count when known, and the GPU it should use, as told by the
 * launcher through environment variables.
 *
 * <p>Launchers are recognized in this order; the first whose variables are present wins and is recorded as
 * {@link #source()}. The order puts the launcher that started this process before the ones that started that
 * launcher: a launcher passes its own variables on to what it starts, where they describe the launcher, not the
 * process.
 * <ol>
 * <li>torchrun's elastic agent, when {@code TORCHELASTIC_RUN_ID} is set together with {@code RANK} and
 *     {@code WORLD_SIZE}; {@code GROUP_RANK} and {@code GROUP_WORLD_SIZE} give the node. It comes first because
 *     torchrun is often itself started by {@code srun}, {@code mpirun} or a Kubernetes pod, whose variables it passes
 *     on to its workers although they describe the agent, not the worker;</li>
 * <li>Open MPI: {@code OMPI_COMM_WORLD_RANK}, {@code OMPI_COMM_WORLD_SIZE}, {@code OMPI_COMM_WORLD_LOCAL_RANK},
 *     {@code OMPI_COMM_WORLD_LOCAL_SIZE}. It comes before Slurm because {@code mpirun} run inside an allocation
 *     passes the allocation's {@code SLURM_*} variables on;</li>
 * <li>PMIx: {@code PMIX_RANK}, with the size from {@code PMI_SIZE} or {@code OMPI_COMM_WORLD_SIZE}; when no size
 *     is given the next launchers are tried;</li>
 * <li>PMI (MPICH, Hydra, Intel MPI): {@code PMI_RANK}, {@code PMI_SIZE}, and {@code MPI_LOCALRANKID},
 *     {@code MPI_LOCALNRANKS};</li>
 * <li>Slurm: {@code SLURM_PROCID}, {@code SLURM_NTASKS} (or {@code SLURM_NPROCS}), {@code SLURM_LOCALID}, the
 *     local size from {@code SLURM_NTASKS_PER_NODE} or a uniform {@code SLURM_TASKS_PER_NODE} (such as
 *     {@code 4(x2)}), and the node from {@code SLURM_NODEID} of {@code SLURM_STEP_NUM_NODES} (or
 *     {@code SLURM_NNODES});</li>
 * <li>one rank per node, then the process on the node ({@link Source#KUBEFLOW}, {@link Source#INDEXED_JOB}):
 *     the node rank from {@code PET_NODE_RANK}, else from {@code JOB_COMPLETION_INDEX} (a Kubernetes Indexed Job);
 *     the node count from {@code PET_NNODES}, else from {@code WORLD_SIZE} divided by the processes per node; the
 *     processes per node from {@code PET_NPROC_PER_NODE} (see below), else {@code LOCAL_WORLD_SIZE}, else 1; the
 *     local rank from {@code LOCAL_RANK}, which may be left out only with one process per node. Then
 *     rank = node rank &times; processes per node + local rank and world size = nodes &times; processes per node.
 *     It is skipped when {@code RANK} is set to another value than the node rank (something after the pod, a
 *     script or launcher, numbered the processes: the next rule reads them), and, for
 *     {@code JOB_COMPLETION_INDEX}, when neither {@code PET_NNODES} nor {@code WORLD_SIZE} is set (an Indexed Job
 *     whose pods are not one job: a single process). Kubeflow's PyTorchJob sets {@code RANK} to the node rank
 *     too, which this rule reads as such;</li>
 * <li>torchrun style without the agent: {@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_RANK},
 *     {@code LOCAL_WORLD_SIZE} (also what a PyTorchJob before training operator 1.7 sets, one process per pod);</li>
 * <li>none: a single process, rank 0 of 1, local rank 0.</li>
 * </ol>
 *
 * <p>{@code PET_NPROC_PER_NODE} is torchrun's {@code --nproc-per-node}, which Kubeflow Trainer's TrainJob and the
 * training operator's PyTorchJob set: a number, or {@code auto} or {@code gpu}, which torchrun reads as the number
 * of visible GPUs. So does nccl4j (the device count comes from CUDA, see below; {@link #detect(Map)} has none and
 * refuses them). {@code cpu} (a process per CPU) is refused: nccl4j runs a process per GPU. {@code LOCAL_WORLD_SIZE},
 * when set, replaces {@code auto}, {@code gpu} and {@code cpu}, and must equal a number. A JVM started by the pod
 * itself is one process: with more than one per node it needs {@code LOCAL_RANK}, which the entrypoint that starts
 * one JVM per GPU sets; without it, detection fails naming the fix. {@code WORLD_SIZE}, when set beside
 * {@code PET_NNODES} and a numeric process count, must equal their product.
 *
 * <p>The device is the local rank modulo the number of visible CUDA devices, unless {@code NCCL4J_DEVICE} is set
 * or {@link #withDevice(int)} is used: with 4 ranks on a machine with 2 GPUs, local ranks 0 and 2 use device 0 and
 * local ranks 1 and 3 device 1. Ranks that share a GPU this way must each have their own {@code NCCL_HOSTID} (NCCL
 * refuses two ranks of one host on one device); {@code scripts/nccl4j-run --share-gpu} sets it. {@link #detect()}
 * asks CUDA for the device count, only when the local rank is above 0 or {@code PET_NPROC_PER_NODE} asks for it;
 * {@link #detect(Map)} does not ask and uses the local rank as it is; {@link #detect(Map, IntSupplier)} takes the
 * count from its caller.
 *
 * <p>The rendezvous host, for {@link Rendezvous}, is the first of: {@code MASTER_ADDR}; {@code PET_MASTER_ADDR};
 * for Slurm, the first host of {@code SLURM_STEP_NODELIST}, else of {@code SLURM_JOB_NODELIST}, where Slurm starts
 * task 0 under its default distribution; for Open MPI, PMIx and PMI, the first host of {@code SLURM_JOB_NODELIST}
 * only, where {@code mpirun} maps rank 0 by default inside an allocation (the step list there is that of the
 * launcher's daemons, without {@code mpirun}'s own node). The port is {@code MASTER_PORT}, else
 * {@code PET_MASTER_PORT}. {@link #report()} names the variables each value came from.
 *
 * <p>Every value is checked: a value that is not an integer, a negative one, a rank not below its size, a launcher's
 * rank variable without its size variable, or a malformed host list gives an {@link IllegalArgumentException}
 * naming the variable, its value and the fix. Instances are immutable.
 */
public final class LaunchInfo {
    /** The variable that overrides the device: a CUDA device ordinal, 0 or more. */
    public static final String DEVICE_VARIABLE = "NCCL4J_DEVICE";

    /** The launcher that described the process. */
    public enum Source {
        /** Open MPI's {@code mpirun}/{@code prterun}. */
        OPEN_MPI("Open MPI"),
        /** A PMIx server (e.g. {@code srun --mpi=pmix}, PRRTE). */
        PMIX("PMIx"),
        /** A PMI-1/2 launcher (MPICH's Hydra, Intel MPI). */
        PMI("PMI"),
        /** Slurm's {@code srun}. */
        SLURM("Slurm"),
        /**
         * torchrun's {@code PET_*} variables in a pod: Kubeflow Trainer's TrainJob (a JobSet) or the training
         * operator's PyTorchJob.
         */
        KUBEFLOW("Kubeflow"),
        /** A Kubernetes Indexed Job: {@code JOB_COMPLETION_INDEX} as the node rank. */
        INDEXED_JOB("Indexed Job"),
        /** PyTorch's {@code torchrun} or a launcher exporting the same variables. */
        TORCHRUN("torchrun"),
        /** No launcher: a single process. */
        SINGLE_PROCESS("single process");

        private final String description;

        Source(String description) {
            this.description = description;
        }

        /**
         * A short human-readable name of the launcher.
         *
         * @return the name, e.g. "Open MPI" or "single process"
         */
        public String description() {
            return description;
        }
    }

    private static final Pattern SLURM_UNIFORM = Pattern.compile("([0-9]+)(\\(x[0-9]+\\))?");

    private final Source source;
    private final int rank;
    private final int worldSize;
    private final int localRank;
    private final int localWorldSize;
    private final int nodeRank;
    private final int nodeCount;
    private final int device;
    private final String deviceOrigin;
    /** The device count the local rank was reduced by, or -1 when the device is the local rank as it is. */
    private final int wrappedBy;
    private final String masterAddr;
    private final int masterPort;
    /** Where each value came from, for {@link #report()}. */
    private final Origins origins;

    /** Where each value came from: the variables as {@code NAME=value}, or null where none told. */
    private record Origins(String rank, String worldSize, String localRank, String localWorldSize, String node,
            String masterAddr, String masterPort, List<String> notes) {
    }

    private LaunchInfo(Parts p, int device, String deviceOrigin, int wrappedBy, String masterAddr, int masterPort,
            Origins origins) {
        this.source = p.source;
        this.rank = p.rank;
        this.worldSize = p.size;
        this.localRank = p.local;
        this.localWorldSize = p.localSize;
        this.nodeRank = p.node;
        this.nodeCount = p.nodes;
        this.device = device;
        this.deviceOrigin = deviceOrigin;
        this.wrappedBy = wrappedBy;
        this.masterAddr = masterAddr;
        this.masterPort = masterPort;
        this.origins = origins;
    }

    private LaunchInfo(LaunchInfo l, int device) {
        this.source = l.source;
        this.rank = l.rank;
        this.worldSize = l.worldSize;
        this.localRank = l.localRank;
        this.localWorldSize = l.localWorldSize;
        this.nodeRank = l.nodeRank;
        this.nodeCount = l.nodeCount;
        this.device = device;
        this.deviceOrigin = "explicit";
        this.wrappedBy = -1;
        this.masterAddr = l.masterAddr;
        this.masterPort = l.masterPort;
        this.origins = l.origins;
    }

    /**
     * Detects the launch from this process's environment as the JVM saw it at start ({@link System#getenv()}).
     * When the device comes from a local rank above 0, the local rank is taken modulo the number of visible devices
     * ({@code cudaGetDeviceCount}); when CUDA cannot tell (no runtime, no device), the local rank is used as it is
     * and the error comes when the device is used. {@code PET_NPROC_PER_NODE=auto} or {@code gpu} is that count.
     *
     * @return what the launcher told, or a single process (rank 0 of 1) when no launcher's variables are set
     * @throws IllegalArgumentException when a launcher variable is malformed or the variables contradict each other
     */
    public static LaunchInfo detect() {
        return detect(System.getenv(), LaunchInfo::visibleDevices);
    }

    /** {@code cudaGetDeviceCount} through nccl4j-native's CUDA runtime; 0 when no runtime or driver can tell. */
    private static int visibleDevices() {
        if (!CudaRuntime.isAvailable()) {
            return 0;
        }
        int[] n = new int[1];
        return CudaNative.cudaGetDeviceCount(n) == 0 ? n[0] : 0;
    }

    /**
     * Detects the launch from {@code env}, a map of environment variables, without asking CUDA: the device is the
     * local rank as it is (or {@code NCCL4J_DEVICE}), and {@code PET_NPROC_PER_NODE=auto} or {@code gpu} is refused
     * unless {@code LOCAL_WORLD_SIZE} is set.
     *
     * @param env variable name to value, as from {@link System#getenv()}; empty values count as unset
     * @return what the launcher told, or a single process (rank 0 of 1) when no launcher's variables are set
     * @throws IllegalArgumentException when a launcher variable is malformed or the variables contradict each other
     */
    public static LaunchInfo detect(Map<String, String> env) {
        return detect(env, null);
    }

    /**
     * Detects the launch from {@code env}; a device taken from the local rank is the local rank modulo the device
     * count that {@code deviceCount} gives. {@code deviceCount} is called only when the local rank is above 0 and
     * {@code NCCL4J_DEVICE} is unset, or when {@code PET_NPROC_PER_NODE} is {@code auto} or {@code gpu} without
     * {@code LOCAL_WORLD_SIZE}; when it throws a {@link RuntimeException} or gives 0 or less, the local rank is
     * used as it is, and {@code auto} or {@code gpu} is refused.
     *
     * @param env variable name to value, as from {@link System#getenv()}; empty values count as unset
     * @param deviceCount the number of visible CUDA devices (e.g. {@code org.nccl4j.Cuda::deviceCount}), or null to
     *        use the local rank as it is
     * @return what the launcher told, or a single process (rank 0 of 1) when no launcher's variables are set
     * @throws IllegalArgumentException when a launcher variable is malformed or the variables contradict each other
     */
    public static LaunchInfo detect(Map<String, String> env, IntSupplier deviceCount) {
        Objects.requireNonNull(env, "env");
        Env e = new Env(env, deviceCount);
        Parts p = null;
        if (e.has("TORCHELASTIC_RUN_ID") && e.has("RANK") && e.has("WORLD_SIZE")) {
            p = torchrun(e);
        }
        if (p == null && e.has("OMPI_COMM_WORLD_RANK")) {
            p = e.standard(Source.OPEN_MPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", null);
        }
        if (p == null && e.has("PMIX_RANK")) {
            String size = e.has("PMI_SIZE") ? "PMI_SIZE"
                    : e.has("OMPI_COMM_WORLD_SIZE") ? "OMPI_COMM_WORLD_SIZE" : null;
            if (size != null) {
                String local = e.has("OMPI_COMM_WORLD_LOCAL_RANK") ? "OMPI_COMM_WORLD_LOCAL_RANK"
                        : e.has("MPI_LOCALRANKID") ? "MPI_LOCALRANKID" : null;
                String localSize = e.has("OMPI_COMM_WORLD_LOCAL_SIZE") ? "OMPI_COMM_WORLD_LOCAL_SIZE"
                        : e.has("MPI_LOCALNRANKS") ? "MPI_LOCALNRANKS" : null;
                p = e.standard(Source.PMIX, "PMIX_RANK", size, local, localSize, null);
            }
        }
        if (p == null && e.has("PMI_RANK")) {
            p = e.standard(Source.PMI, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", null);
        }
        if (p == null && e.has("SLURM_PROCID")) {
            p = slurm(e);
        }
        if (p == null) {
            p = perNode(e);
        }
        if (p == null && e.has("RANK")) {
            p = torchrun(e);
        }
        if (p == null) {
            if (e.has("PMIX_RANK")) {
                throw new IllegalArgumentException("PMIX_RANK=" + e.get("PMIX_RANK") + " is set but no world size"
                        + " is: set PMI_SIZE (or OMPI_COMM_WORLD_SIZE), or launch with a launcher that exports one");
            }
            p = e.standard(Source.SINGLE_PROCESS, null, null, null, null, null);
        }
        return e.finish(p);
    }

    private static Parts torchrun(Env e) {
        Parts p = e.standard(Source.TORCHRUN, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", null);
        e.node(p, "GROUP_RANK", "GROUP_WORLD_SIZE");
        return p;
    }

    private static Parts slurm(Env e) {
        String size = !e.has("SLURM_NTASKS") && e.has("SLURM_NPROCS") ? "SLURM_NPROCS" : "SLURM_NTASKS";
        String localSizeValue = null;
        String localSizeName = null;
        for (String v : new String[] {"SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
            if (e.has(v)) {
                Matcher m = SLURM_UNIFORM.matcher(e.get(v));
                if (m.matches()) {
                    localSizeValue = m.group(1);
                    localSizeName = v;
                    break;
                }
            }
        }
        Parts p = e.standard(Source.SLURM, "SLURM_PROCID", size, "SLURM_LOCALID", localSizeName, localSizeValue);
        e.node(p, "SLURM_NODEID", e.has("SLURM_STEP_NUM_NODES") ? "SLURM_STEP_NUM_NODES" : "SLURM_NNODES");
        return p;
    }

    /**
     * One rank per node, then the process on the node: Kubeflow's {@code PET_*} variables or an Indexed Job's
     * {@code JOB_COMPLETION_INDEX}; null when they do not apply.
     */
    private static Parts perNode(Env e) {
        String nodeVar = e.has("PET_NODE_RANK") ? "PET_NODE_RANK"
                : e.has("JOB_COMPLETION_INDEX") ? "JOB_COMPLETION_INDEX" : null;
        if (nodeVar == null) {
            return null;
        }
        boolean pet = nodeVar.equals("PET_NODE_RANK");
        if (e.has("RANK") && !e.get("RANK").trim().equals(e.get(nodeVar).trim())) {
            return null; // the processes were numbered after the pod: RANK is read as torchrun's
        }
        if (!e.has("PET_NNODES") && !e.has("WORLD_SIZE")) {
            if (pet) {
                throw new IllegalArgumentException("PET_NODE_RANK=" + e.get(nodeVar) + " is set but PET_NNODES is"
                        + " not: a Kubeflow pod has both; set PET_NNODES to the number of nodes (pods)");
            }
            e.notes.add(nodeVar + "=" + e.get(nodeVar) + " is not read: neither PET_NNODES nor WORLD_SIZE says"
                    + " how many pods the job has");
            return null;
        }
        Parts p = new Parts(pet ? Source.KUBEFLOW : Source.INDEXED_JOB);
        int k = e.integer(nodeVar, e.get(nodeVar), 0);
        String kFrom = nodeVar + "=" + k;

        // processes per node
        int per;
        String perFrom;
        boolean perCounted = false; // from the visible GPUs, which the training operator's WORLD_SIZE does not know
        String lws = e.has("LOCAL_WORLD_SIZE") ? "LOCAL_WORLD_SIZE=" + e.get("LOCAL_WORLD_SIZE").trim() : null;
        if (e.has("PET_NPROC_PER_NODE")) {
            String v = e.get("PET_NPROC_PER_NODE").trim();
            String lower = v.toLowerCase(java.util.Locale.ROOT);
            if (!v.isEmpty() && v.chars().allMatch(Character::isDigit)) {
                per = e.integer("PET_NPROC_PER_NODE", v, 1);
                perFrom = "PET_NPROC_PER_NODE=" + per;
                if (lws != null) {
                    int l = e.integer("LOCAL_WORLD_SIZE", e.get("LOCAL_WORLD_SIZE"), 1);
                    if (l != per) {
                        throw new IllegalArgumentException("LOCAL_WORLD_SIZE=" + l + " is not PET_NPROC_PER_NODE="
                                + per + ": set LOCAL_WORLD_SIZE to the number of processes per node, or leave it"
                                + " unset");
                    }
                }
            } else if (lower.equals("auto") || lower.equals("gpu") || lower.equals("cpu")) {
                if (lws != null) {
                    per = e.integer("LOCAL_WORLD_SIZE", e.get("LOCAL_WORLD_SIZE"), 1);
                    perFrom = lws + " (over PET_NPROC_PER_NODE=" + v + ")";
                } else if (lower.equals("cpu")) {
                    throw new IllegalArgumentException("PET_NPROC_PER_NODE=cpu asks for one process per CPU, and"
                            + " nccl4j runs one per GPU: give the job a number of processes per node (TrainJob"
                            + " numProcPerNode, PyTorchJob nprocPerNode), or set LOCAL_WORLD_SIZE to the number of"
                            + " JVMs on this node");
                } else {
                    per = e.devices();
                    if (per <= 0) {
                        throw new IllegalArgumentException("PET_NPROC_PER_NODE=" + v + " means one process per"
                                + " visible GPU, and the GPU count is not known here (no GPU is visible, or"
                                + " LaunchInfo.detect(Map) was given no device count): set LOCAL_WORLD_SIZE to the"
                                + " number of JVMs on this node, or give the job a number of processes per node"
                                + " (TrainJob numProcPerNode, PyTorchJob nprocPerNode)");
                    }
                    perFrom = per + (per == 1 ? " visible GPU" : " visible GPUs") + " (PET_NPROC_PER_NODE=" + v
                            + ")";
                    perCounted = true;
                }
            } else {
                throw new IllegalArgumentException("PET_NPROC_PER_NODE=\"" + v + "\" is not a number, auto, gpu or"
                        + " cpu: give the job a number of processes per node (TrainJob numProcPerNode, PyTorchJob"
                        + " nprocPerNode)");
            }
        } else if (lws != null) {
            per = e.integer("LOCAL_WORLD_SIZE", e.get("LOCAL_WORLD_SIZE"), 1);
            perFrom = lws;
        } else {
            per = 1;
            perFrom = null;
        }

        // the local rank
        int local;
        String localFrom;
        if (e.has("LOCAL_RANK")) {
            local = e.integer("LOCAL_RANK", e.get("LOCAL_RANK"), 0);
            localFrom = "LOCAL_RANK=" + local;
            if (local >= per) {
                throw new IllegalArgumentException("LOCAL_RANK=" + local + " is not below " + perText(perFrom, per)
                        + ": local ranks run from 0 to " + (per - 1));
            }
        } else if (per == 1) {
            local = 0;
            localFrom = null;
        } else {
            throw new IllegalArgumentException(perText(perFrom, per) + " says " + per + " processes per node, but"
                    + " LOCAL_RANK is not set, so this JVM cannot tell which of them it is: start one JVM per GPU with"
                    + " LOCAL_RANK=0.." + (per - 1) + ", or, for one JVM per node, set LOCAL_WORLD_SIZE=1 or give the"
                    + " job one process per node (TrainJob numProcPerNode: 1, PyTorchJob nprocPerNode: \"1\")");
        }

        // the node count and the world size
        int nodes;
        String nodesFrom;
        int size;
        String sizeFrom;
        if (e.has("PET_NNODES")) {
            String v = e.get("PET_NNODES").trim();
            if (v.contains(":")) {
                throw new IllegalArgumentException("PET_NNODES=" + v + " is an elastic range of nodes, and an NCCL"
                        + " communicator has a fixed size: give the job a fixed number of nodes (min = max)");
            }
            nodes = e.integer("PET_NNODES", v, 1);
            nodesFrom = "PET_NNODES=" + nodes;
            size = product("PET_NNODES", nodes, perFrom, per);
            sizeFrom = nodesFrom + (perFrom == null ? " (one process per node)" : " x " + perFrom);
            if (e.has("WORLD_SIZE")) {
                int ws = e.integer("WORLD_SIZE", e.get("WORLD_SIZE"), 1);
                if (ws != size && perCounted) {
                    e.notes.add("WORLD_SIZE=" + ws + " is not read: with PET_NPROC_PER_NODE=auto or gpu the"
                            + " training operator counts one process per node");
                } else if (ws != size) {
                    throw new IllegalArgumentException("WORLD_SIZE=" + ws + " is not " + sizeFrom + " = " + size
                            + ": the job's variables contradict each other; set WORLD_SIZE to " + size
                            + " or leave it unset");
                }
            }
        } else {
            size = e.integer("WORLD_SIZE", e.get("WORLD_SIZE"), 1);
            if (size % per != 0) {
                throw new IllegalArgumentException("WORLD_SIZE=" + size + " is not a multiple of "
                        + perText(perFrom, per) + ": set WORLD_SIZE to the number of processes of the job, or"
                        + " PET_NNODES to the number of nodes");
            }
            nodes = size / per;
            sizeFrom = "WORLD_SIZE=" + size;
            nodesFrom = perFrom == null ? sizeFrom + " (one process per node)" : sizeFrom + " / " + perFrom;
        }
        if (k >= nodes) {
            throw new IllegalArgumentException(kFrom + " is not below " + nodes + " nodes (" + nodesFrom + "): node"
                    + " ranks run from 0 to " + (nodes - 1));
        }
        p.rank = k * per + local;
        p.size = size;
        p.local = local;
        p.localSize = per;
        p.node = k;
        p.nodes = nodes;
        p.rankFrom = perFrom == null && localFrom == null ? kFrom + " (one process per node)"
                : kFrom + " x " + (perFrom == null ? "1" : perFrom) + " + "
                        + (localFrom == null ? "local rank 0" : localFrom);
        p.sizeFrom = sizeFrom;
        p.localFrom = localFrom == null ? "one process per node" : localFrom;
        p.localSizeFrom = perFrom == null ? "one process per node" : perFrom;
        p.nodeFrom = kFrom + ", " + nodesFrom;
        return p;
    }

    private static String perText(String perFrom, int per) {
        return perFrom == null ? per + " process per node" : perFrom;
    }

    private static int product(String nodesVar, int nodes, String perFrom, int per) {
        try {
            return Math.multiplyExact(nodes, per);
        } catch (ArithmeticException ex) {
            throw new IllegalArgumentException(nodesVar + "=" + nodes + " x " + perText(perFrom, per) + " overflows"
                    + " an int: check how the launcher sets them");
        }
    }

    /** The values of one launcher, and where each came from. */
    private static final class Parts {
        final Source source;
        int rank;
        int size = 1;
        int local = -1;
        int localSize = -1;
        int node = -1;
        int nodes = -1;
        String rankFrom;
        String sizeFrom;
        String localFrom;
        String localSizeFrom;
        String nodeFrom;

        Parts(Source source) {
            this.source = source;
        }
    }

    /** Reads and checks the variables. */
    private static final class Env {
        private final Map<String, String> env;
        private final IntSupplier deviceCount;
        private int devices = -1;
        final List<String> notes = new ArrayList<>();

        Env(Map<String, String> env, IntSupplier deviceCount) {
            this.env = env;
            this.deviceCount = deviceCount;
        }

        /** The visible device count, or 0 when unknown; asked once. */
        int devices() {
            if (devices < 0) {
                devices = 0;
                if (deviceCount != null) {
                    try {
                        devices = Math.max(0, deviceCount.getAsInt());
                    } catch (RuntimeException e) {
                        devices = 0; // no CUDA here: the device is used as it is, and using it says what is wrong
                    }
                }
            }
            return devices;
        }

        boolean has(String name) {
            String v = env.get(name);
            return v != null && !v.isEmpty();
        }

        String get(String name) {
            return env.get(name);
        }

        int integer(String name, String value, int min) {
            String v = value.trim();
            int n;
            try {
                n = Integer.parseInt(v);
            } catch (NumberFormatException ex) {
                throw new IllegalArgumentException(name + "=\"" + value + "\" is not an integer: check how the"
                        + " launcher sets " + name);
            }
            if (n < min) {
                throw new IllegalArgumentException(name + "=" + value + " is " + (n < 0 ? "negative" : "less than "
                        + min) + ": check how the launcher sets " + name);
            }
            return n;
        }

        Parts standard(Source source, String rankVar, String sizeVar, String localVar, String localSizeVar,
                String localSizeValue) {
            Parts p = new Parts(source);
            if (rankVar != null) {
                if (!has(sizeVar)) {
                    throw new IllegalArgumentException(rankVar + "=" + get(rankVar) + " is set but " + sizeVar
                            + " is not: a " + source.description() + " launch sets both; set " + sizeVar
                            + " to the number of processes");
                }
                p.rank = integer(rankVar, get(rankVar), 0);
                p.size = integer(sizeVar, get(sizeVar), 1);
                if (p.rank >= p.size) {
                    throw new IllegalArgumentException(rankVar + "=" + p.rank + " is not below " + sizeVar + "="
                            + p.size + ": ranks run from 0 to " + (p.size - 1));
                }
                p.rankFrom = rankVar + "=" + p.rank;
                p.sizeFrom = sizeVar + "=" + p.size;
            }
            if (source == Source.SINGLE_PROCESS) {
                p.local = 0;
                p.localSize = 1;
            }
            if (localSizeVar != null && (localSizeValue != null || has(localSizeVar))) {
                p.localSize = integer(localSizeVar, localSizeValue != null ? localSizeValue : get(localSizeVar), 1);
                if (p.localSize > p.size) {
                    throw new IllegalArgumentException(localSizeVar + "=" + p.localSize + " is greater than "
                            + sizeVar + "=" + p.size + ": a node cannot hold more processes than the job");
                }
                p.localSizeFrom = localSizeVar + "=" + get(localSizeVar).trim();
            }
            if (localVar != null && has(localVar)) {
                p.local = integer(localVar, get(localVar), 0);
                if (p.localSize >= 0 && p.local >= p.localSize) {
                    throw new IllegalArgumentException(localVar + "=" + p.local + " is not below " + localSizeVar
                            + "=" + p.localSize + ": local ranks run from 0 to " + (p.localSize - 1));
                }
                if (p.local >= p.size) {
                    throw new IllegalArgumentException(localVar + "=" + p.local + " is not below " + sizeVar + "="
                            + p.size + ": a local rank cannot exceed the world size");
                }
                p.localFrom = localVar + "=" + p.local;
            }
            return p;
        }

        /** The node rank and count from {@code rankVar} and {@code countVar}, each when set. */
        void node(Parts p, String rankVar, String countVar) {
            if (has(countVar)) {
                p.nodes = integer(countVar, get(countVar), 1);
            }
            if (has(rankVar)) {
                p.node = integer(rankVar, get(rankVar), 0);
                if (p.nodes >= 0 && p.node >= p.nodes) {
                    throw new IllegalArgumentException(rankVar + "=" + p.node + " is not below " + countVar + "="
                            + p.nodes + ": node ranks run from 0 to " + (p.nodes - 1));
                }
            }
            if (p.node >= 0 || p.nodes >= 0) {
                p.nodeFrom = (p.node >= 0 ? rankVar + "=" + p.node : "")
                        + (p.node >= 0 && p.nodes >= 0 ? ", " : "") + (p.nodes >= 0 ? countVar + "=" + p.nodes : "");
            }
        }

        LaunchInfo finish(Parts p) {
            int device = p.local;
            String origin = p.local >= 0 ? "local rank" : null;
            int wrappedBy = -1;
            if (has(DEVICE_VARIABLE)) {
                device = integer(DEVICE_VARIABLE, get(DEVICE_VARIABLE), 0);
                origin = DEVICE_VARIABLE;
            } else if (p.local > 0) {
                int n = devices();
                if (n > 0 && p.local >= n) {
                    device = p.local % n;
                    origin = "local rank mod device count";
                    wrappedBy = n;
                }
            }
            String addr = null;
            String addrFrom = null;
            for (String v : new String[] {"MASTER_ADDR", "PET_MASTER_ADDR"}) {
                if (has(v)) {
                    addr = get(v).trim();
                    addrFrom = v;
                    break;
                }
            }
            if (addr == null) {
                String[] lists = switch (p.source) {
                    case SLURM -> new String[] {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"};
                    case OPEN_MPI, PMIX, PMI -> new String[] {"SLURM_JOB_NODELIST"};
                    default -> new String[0];
                };
                for (String v : lists) {
                    if (has(v)) {
                        try {
                            addr = HostList.first(v, get(v).trim());
                        } catch (IllegalArgumentException ex) {
                            throw new IllegalArgumentException(ex.getMessage() + "; set MASTER_ADDR to rank 0's host"
                                    + " to do without it", ex);
                        }
                        addrFrom = "the first host of " + v + "=" + get(v).trim();
                        break;
                    }
                }
            }
            int port = -1;
            String portFrom = null;
            for (String v : new String[] {"MASTER_PORT", "PET_MASTER_PORT"}) {
                if (has(v)) {
                    port = integer(v, get(v), 1);
                    if (port > 65535) {
                        throw new IllegalArgumentException(v + "=" + port + " is above 65535: use a TCP port from"
                                + " 1 to 65535");
                    }
                    portFrom = v;
                    break;
                }
            }
            Origins o = new Origins(p.rankFrom, p.sizeFrom, p.localFrom, p.localSizeFrom, p.nodeFrom, addrFrom,
                    portFrom, List.copyOf(notes));
            return new LaunchInfo(p, device, origin, wrappedBy, addr, port, o);
        }
    }

    /**
     * A copy using CUDA device {@code device} instead.
     *
     * @param device the CUDA device ordinal, 0 or more
     * @return a new instance with the same launch values and this device, whose {@link #deviceOrigin()} is
     *         {@code "explicit"}
     * @throws IllegalArgumentException when {@code device} is negative
     */
    public LaunchInfo withDevice(int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device is " + device + ": CUDA device ordinals are 0 or more");
        }
        return new LaunchInfo(this, device);
    }

    /**
     * The launcher that described this process.
     *
     * @return the launcher, {@link Source#SINGLE_PROCESS} when there was none
     */
    public Source source() {
        return source;
    }

    /**
     * This process's rank in the job.
     *
     * @return the rank, from 0 to {@code worldSize() - 1}
     */
    public int rank() {
        return rank;
    }

    /**
     * The number of processes in the job.
     *
     * @return the world size, 1 or more
     */
    public int worldSize() {
        return worldSize;
    }

    /**
     * The rank of this process among those on its node, when the launcher tells.
     *
     * @return the local rank (0 or more), or empty when the launcher does not set it
     */
    public OptionalInt localRank() {
        return localRank < 0 ? OptionalInt.empty() : OptionalInt.of(localRank);
    }

    /**
     * The number of processes on this node, when the launcher tells.
     *
     * @return the local world size (1 or more), or empty when the launcher does not set it
     */
    public OptionalInt localWorldSize() {
        return localWorldSize < 0 ? OptionalInt.empty() : OptionalInt.of(localWorldSize);
    }

    /**
     * The rank of this process's node among the job's nodes, when the launcher tells: {@code SLURM_NODEID},
     * {@code PET_NODE_RANK}, {@code JOB_COMPLETION_INDEX} or torchrun's {@code GROUP_RANK}.
     *
     * @return the node rank (0 or more), or empty when the launcher does not set it
     */
    public OptionalInt nodeRank() {
        return nodeRank < 0 ? OptionalInt.empty() : OptionalInt.of(nodeRank);
    }

    /**
     * The number of nodes of the job, when the launcher tells: {@code SLURM_STEP_NUM_NODES} or
     * {@code SLURM_NNODES}, {@code PET_NNODES} (or {@code WORLD_SIZE} over the processes per node) or torchrun's
     * {@code GROUP_WORLD_SIZE}.
     *
     * @return the node count (1 or more), or empty when the launcher does not set it
     */
    public OptionalInt nodeCount() {
        return nodeCount < 0 ? OptionalInt.empty() : OptionalInt.of(nodeCount);
    }

    /**
     * Whether a device is known: from the local rank, {@code NCCL4J_DEVICE} or {@link #withDevice(int)}.
     *
     * @return true when {@link #device()} returns rather than throws
     */
    public boolean hasDevice() {
        return device >= 0;
    }

    /**
     * The CUDA device this process should use.
     *
     * @return the CUDA device ordinal, 0 or more
     * @throws IllegalStateException when the launcher gave no local rank and no device was set
     */
    public int device() {
        if (device < 0) {
            throw new IllegalStateException("the " + source.description() + " launch gives no local rank, so the"
                    + " device is unknown: set " + DEVICE_VARIABLE + ", or call withDevice(int)");
        }
        return device;
    }

    /**
     * Where the device came from.
     *
     * @return {@code "local rank"}, {@code "local rank mod device count"} (more local ranks than devices: ranks share
     *         GPUs), {@code "NCCL4J_DEVICE"} or {@code "explicit"}; empty when the device is unknown
     */
    public Optional<String> deviceOrigin() {
        return Optional.ofNullable(deviceOrigin);
    }

    /**
     * The rendezvous host, for {@link Rendezvous}: {@code MASTER_ADDR}, else {@code PET_MASTER_ADDR}, else the first
     * host of Slurm's node list (see the class's description).
     *
     * @return the host, trimmed, or empty when none is known
     */
    public Optional<String> masterAddr() {
        return Optional.ofNullable(masterAddr);
    }

    /** This host's name, once looked up ({@link #localHost()}). */
    private static volatile String localHost;

    /**
     * This host's name, looked up once (the name service may be slow): the name a rank gives of itself on the
     * liveness channel, in a rendezvous file's arrival marker and in its flight record.
     *
     * @return the name from {@link java.net.InetAddress#getLocalHost()}, else {@code HOSTNAME}, else
     *         {@code "unknown"}
     */
    public static String localHost() {
        String h = localHost;
        if (h == null) {
            try {
                h = java.net.InetAddress.getLocalHost().getHostName();
            } catch (java.io.IOException e) {
                String env = System.getenv("HOSTNAME");
                h = env == null || env.isBlank() ? "unknown" : env;
            }
            localHost = h;
        }
        return h;
    }

    /**
     * Where rank 0 is, read from this process's live environment as NCCL sees it ({@code getenv}, which sees
     * variables set after the JVM started): {@code MASTER_ADDR} and {@code MASTER_PORT} (the port may be missing),
     * or, without {@code MASTER_ADDR}, {@code NCCL_COMM_ID}'s host and port (mpirun). The one place nccl4j reads
     * {@code MASTER_ADDR} besides {@link #detect}: for the liveness channel's address and a recovery's rendezvous.
     *
     * @return {@code {host, port}} with the host trimmed and the port as set (null when missing), or null when
     *         neither variable is set or {@code NCCL_COMM_ID} does not parse (the rendezvous refuses it, naming the
     *         fix)
     */
    public static String[] rankZeroAddress() {
        String host = NcclNative.getenv("MASTER_ADDR");
        if (host != null && !host.isBlank()) {
            return new String[] {host.trim(), NcclNative.getenv("MASTER_PORT")};
        }
        String commId = NcclNative.getenv(NcclEnvironment.COMM_ID);
        if (commId == null || commId.isBlank()) {
            return null;
        }
        try {
            return NcclEnvironment.parseHostPort(NcclEnvironment.COMM_ID, commId.trim());
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /**
     * A port as {@link #rankZeroAddress} or a variable gives it: 1 to 5 digits, spaces around them allowed.
     *
     * @param text the port's text, may be null
     * @return its number (0 to 99999: the caller checks the range it needs), or -1 when it is missing or not 1 to 5
     *         digits
     */
    public static int portNumber(String text) {
        if (text == null) {
            return -1;
        }
        String t = text.trim();
        if (t.isEmpty() || t.length() > 5 || !t.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return -1;
        }
        return Integer.parseInt(t);
    }

    /**
     * The rendezvous TCP port, for {@link Rendezvous}: {@code MASTER_PORT}, else {@code PET_MASTER_PORT}.
     *
     * @return the port, 1 to 65535, or empty when neither variable is set
     */
    public OptionalInt masterPort() {
        return masterPort < 0 ? OptionalInt.empty() : OptionalInt.of(masterPort);
    }

    /**
     * Every value and the variables it came from, in one line, e.g. {@code Kubeflow: rank 5 from PET_NODE_RANK=1 x
     * PET_NPROC_PER_NODE=4 + LOCAL_RANK=1; world size 8 from PET_NNODES=2 x PET_NPROC_PER_NODE=4; local rank 1 from
     * LOCAL_RANK=1; local world size 4 from PET_NPROC_PER_NODE=4; node 1 of 2 from PET_NODE_RANK=1, PET_NNODES=2;
     * device 1 from the local rank; master job-node-0-0.job from PET_MASTER_ADDR; port 29500 from PET_MASTER_PORT}.
     * Variables that were present but not read, and why, end it as notes.
     *
     * @return the report
     */
    public String report() {
        StringBuilder sb = new StringBuilder(source.description());
        if (source == Source.SINGLE_PROCESS) {
            sb.append(" (no launcher's rank variables)");
        }
        sb.append(": rank ").append(rank);
        from(sb, origins.rank());
        sb.append("; world size ").append(worldSize);
        from(sb, origins.worldSize());
        sb.append("; local rank ").append(localRank >= 0 ? Integer.toString(localRank) : "unknown");
        from(sb, origins.localRank());
        sb.append("; local world size ").append(localWorldSize >= 0 ? Integer.toString(localWorldSize) : "unknown");
        from(sb, origins.localWorldSize());
        if (nodeRank >= 0 || nodeCount >= 0) {
            sb.append("; node ").append(nodeRank >= 0 ? Integer.toString(nodeRank) : "?").append(" of ")
                    .append(nodeCount >= 0 ? Integer.toString(nodeCount) : "?");
            from(sb, origins.node());
        }
        sb.append("; device ");
        if (device < 0) {
            sb.append("unknown (set ").append(DEVICE_VARIABLE).append(')');
        } else if (wrappedBy > 0) {
            sb.append(device).append(" from local rank ").append(localRank).append(" mod ").append(wrappedBy)
                    .append(wrappedBy == 1 ? " device" : " devices");
        } else if (deviceOrigin.equals("local rank")) {
            sb.append(device).append(" from the local rank");
        } else if (deviceOrigin.equals(DEVICE_VARIABLE)) {
            sb.append(device).append(" from ").append(DEVICE_VARIABLE).append('=').append(device);
        } else {
            sb.append(device).append(" (").append(deviceOrigin).append(')');
        }
        sb.append("; master ").append(masterAddr != null ? masterAddr : "unknown");
        from(sb, origins.masterAddr());
        sb.append("; port ").append(masterPort >= 0 ? Integer.toString(masterPort) : "unknown");
        from(sb, origins.masterPort());
        for (String note : origins.notes()) {
            sb.append("; note: ").append(note);
        }
        return sb.toString();
    }

    private static void from(StringBuilder sb, String origin) {
        if (origin != null) {
            sb.append(" from ").append(origin);
        }
    }

    /**
     * E.g. {@code LaunchInfo[Slurm: rank 3 of 8, local 1 of 4, node 0 of 2, device 1 (local rank), master
     * node01:29500]}, or with ranks sharing GPUs {@code device 1 (local rank 3 mod 2 devices)}. {@link #report()}
     * says where each value came from.
     */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("LaunchInfo[").append(source.description()).append(": rank ")
                .append(rank).append(" of ").append(worldSize);
        if (localRank >= 0 || localWorldSize >= 0) {
            sb.append(", local ").append(localRank >= 0 ? Integer.toString(localRank) : "?").append(" of ")
                    .append(localWorldSize >= 0 ? Integer.toString(localWorldSize) : "?");
        }
        if (nodeRank >= 0 || nodeCount >= 0) {
            sb.append(", node ").append(nodeRank >= 0 ? Integer.toString(nodeRank) : "?").append(" of ")
                    .append(nodeCount >= 0 ? Integer.toString(nodeCount) : "?");
        }
        sb.append(", device ");
        if (device < 0) {
            sb.append("unknown");
        } else if (wrappedBy > 0) {
            sb.append(device).append(" (local rank ").append(localRank).append(" mod ").append(wrappedBy)
                    .append(wrappedBy == 1 ? " device)" : " devices)");
        } else {
            sb.append(device).append(" (").append(deviceOrigin).append(')');
        }
        if (masterAddr != null || masterPort >= 0) {
            sb.append(", master ").append(masterAddr == null ? "?" : masterAddr).append(':')
                    .append(masterPort >= 0 ? Integer.toString(masterPort) : "?");
        }
        return sb.append(']').toString();
    }
}
