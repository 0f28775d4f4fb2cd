package org.nccl4j.tools.run;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The nodes of a job that {@link Launcher} starts ranks of, and the variables each rank gets for its place.
 *
 * <p>Three forms:
 * <ul>
 * <li>one node ({@code -np N}): rank r is local rank r of N;</li>
 * <li>one node of several ({@code --nnodes N --node-rank K -np G}): the launcher runs on each node of the job, as
 * {@code torchrun --nnodes N --node-rank K --nproc-per-node G} does, and starts ranks {@code K*G .. K*G+G-1} with
 * {@code RANK}, {@code WORLD_SIZE = N*G}, {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE = G}, {@code GROUP_RANK = K},
 * {@code GROUP_WORLD_SIZE = N}, and node 0's {@code MASTER_ADDR} and {@code MASTER_PORT};</li>
 * <li>a rehearsal of H hosts on this machine ({@code --hosts H -np G}): every node's ranks, each host's with its
 * own {@code NCCL_HOSTID} ({@code nccl4j-node<h>}, which makes NCCL treat them as ranks of another host, connected
 * over sockets), its own G GPUs in {@code CUDA_VISIBLE_DEVICES}, {@code NCCL_SOCKET_IFNAME=lo} and
 * {@code NCCL_NVLS_ENABLE=0} (the last two unless set), and the rank variables that torchrun, srun or mpirun set
 * across hosts ({@link Style}), with {@code MASTER_ADDR=127.0.0.1}.</li>
 * </ul>
 */
final class Nodes {
    /** The {@code NCCL_HOSTID} (and, under {@code --as srun}, the node name) of rehearsed host h. */
    static final String NODE_PREFIX = "nccl4j-node";

    /** Every rank variable of the launchers nccl4j reads; a rehearsal sets its own and removes the others. */
    static final List<String> RANK_VARIABLES = List.of("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
            "GROUP_RANK", "GROUP_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
            "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK", "PMIX_RANK",
            "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID", "SLURM_NODEID",
            "SLURM_NNODES", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_STEP_NODELIST",
            "SLURM_JOB_NODELIST", "SLURMD_NODENAME", "JOB_COMPLETION_INDEX", "PET_NNODES", "PET_NPROC_PER_NODE",
            "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT");

    /** Whose variables the ranks of a rehearsal get: the launcher that would start them across hosts. */
    enum Style {
        /** {@code torchrun --nnodes H --node-rank h}: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK. */
        TORCHRUN,
        /** {@code srun} in an sbatch script that exports MASTER_ADDR and MASTER_PORT: SLURM_PROCID and the rest. */
        SRUN,
        /** {@code mpirun --hostfile} with {@code -x MASTER_ADDR -x MASTER_PORT}: OMPI_COMM_WORLD_RANK and the rest. */
        MPIRUN;

        /** The style named {@code name} (case ignored), or null. */
        static Style parse(String name) {
            return Arrays.stream(values()).filter(s -> s.name().equalsIgnoreCase(name.strip())).findFirst()
                    .orElse(null);
        }

        /** @return the name as given on the command line */
        String option() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final int nnodes;
    private final int perNode;
    private final int firstNode;
    private final int nodesHere;
    private final boolean rehearsal;
    private final Style style;
    private List<String> devices = List.of();
    private boolean setDevices;

    private Nodes(int nnodes, int perNode, int firstNode, int nodesHere, boolean rehearsal, Style style) {
        this.nnodes = nnodes;
        this.perNode = perNode;
        this.firstNode = firstNode;
        this.nodesHere = nodesHere;
        this.rehearsal = rehearsal;
        this.style = style;
    }

    /** One node of {@code np} ranks: this machine is the whole job. */
    static Nodes single(int np) {
        return new Nodes(1, np, 0, 1, false, Style.TORCHRUN);
    }

    /** Node {@code nodeRank} of {@code nnodes}, each of {@code perNode} ranks. */
    static Nodes multiNode(int nnodes, int nodeRank, int perNode) {
        return new Nodes(nnodes, perNode, nodeRank, 1, false, Style.TORCHRUN);
    }

    /** Every node of {@code hosts} rehearsed on this machine, each of {@code perNode} ranks. */
    static Nodes rehearsal(int hosts, int perNode, Style style) {
        return new Nodes(hosts, perNode, 0, hosts, true, style);
    }

    /** @return the number of nodes of the job */
    int nnodes() {
        return nnodes;
    }

    /** @return whether every node is rehearsed on this machine ({@code --hosts}) */
    boolean rehearsal() {
        return rehearsal;
    }

    /** @return whether the job spans several nodes (or rehearses them) */
    boolean multiNode() {
        return nnodes > 1 || rehearsal;
    }

    /** @return the variables the ranks get */
    Style style() {
        return style;
    }

    /** @return how many ranks this launcher starts */
    int ranksHere() {
        return perNode * nodesHere;
    }

    /** @return the number of ranks of the whole job */
    int worldSize() {
        return perNode * nnodes;
    }

    /** @return the global rank of the i-th rank this launcher starts */
    int rank(int i) {
        return firstNode * perNode + i;
    }

    /**
     * Works out the GPUs of each rehearsed host: the first H x G entries of {@code CUDA_VISIBLE_DEVICES} when it is
     * set, else device ordinals 0 .. H x G - 1; host h gets entries h x G .. h x G + G - 1.
     *
     * @param env the launcher's environment
     * @param count the GPUs found
     * @return the lines to print before the ranks start (without the "nccl4j-run: " prefix)
     * @throws GpuSharing.Refusal when there are fewer GPUs than H x G
     */
    List<String> planDevices(Map<String, String> env, GpuSharing.Count count) {
        List<String> notices = new ArrayList<>();
        if (!rehearsal) {
            return notices;
        }
        int need = nnodes * perNode;
        String visible = env.get("CUDA_VISIBLE_DEVICES");
        List<String> all = new ArrayList<>();
        if (visible != null) {
            String[] entries = visible.split(",", -1);
            for (int i = 0; i < GpuSharing.visibleEntries(visible); i++) {
                all.add(entries[i].strip());
            }
        } else {
            for (int i = 0; i < (count.gpus() > 0 ? count.gpus() : need); i++) {
                all.add(Integer.toString(i));
            }
        }
        if (count.gpus() == 0) {
            notices.add("--hosts " + nnodes + ": no GPU found (" + count.source() + "); "
                    + (visible != null ? "CUDA_VISIBLE_DEVICES is kept as it is for every rank"
                    : "each host's CUDA_VISIBLE_DEVICES names ordinals, unchecked"));
            setDevices = visible == null;
        } else if (all.size() < need) {
            throw new GpuSharing.Refusal("--hosts " + nnodes + " -np " + perNode + " needs " + need + " GPUs (-np GPUs"
                    + " per host) and " + count.gpus() + " were found (" + count.source() + "): use fewer --hosts or"
                    + " a smaller -np, or a machine with more GPUs");
        } else {
            setDevices = true;
        }
        devices = all;
        String hostId = env.get("NCCL_HOSTID");
        if (hostId != null) {
            notices.add("--hosts: NCCL_HOSTID=" + hostId + " is replaced by one per rehearsed host (" + NODE_PREFIX
                    + "<h>)");
        }
        String nvls = env.get("NCCL_NVLS_ENABLE");
        if (nvls != null && !nvls.strip().equals("0")) {
            notices.add("warning: NCCL_NVLS_ENABLE=" + nvls + " is kept: NVLink multicast is no part of a job across"
                    + " hosts, and on shared machines it can take GPUs out of service; set it to 0");
        }
        StringBuilder b = new StringBuilder("rehearsing " + nnodes + " host" + (nnodes == 1 ? "" : "s") + " x "
                + perNode + " rank" + (perNode == 1 ? "" : "s") + " on this machine (" + style.option()
                + "'s variables, MASTER_ADDR=127.0.0.1, NCCL_SOCKET_IFNAME="
                + env.getOrDefault("NCCL_SOCKET_IFNAME", "lo") + "; NCCL connects the hosts over sockets):");
        for (int h = 0; h < nnodes; h++) {
            b.append(h == 0 ? " " : "; ").append("host ").append(h).append(" ranks ").append(h * perNode);
            if (perNode > 1) {
                b.append('-').append(h * perNode + perNode - 1);
            }
            if (setDevices) {
                b.append(" on CUDA_VISIBLE_DEVICES=").append(String.join(",", hostDevices(h)));
            }
        }
        notices.add(b.toString());
        return notices;
    }

    private List<String> hostDevices(int h) {
        return devices.subList(Math.min(h * perNode, devices.size()), Math.min(h * perNode + perNode, devices.size()));
    }

    /** Slurm's compressed form of the rehearsal's node names: {@code nccl4j-node[0-1]}, {@code nccl4j-node0}. */
    String nodeList() {
        return nnodes == 1 ? NODE_PREFIX + "0" : NODE_PREFIX + "[0-" + (nnodes - 1) + "]";
    }

    /**
     * Adds the i-th rank's place to its environment (a copy of the launcher's).
     *
     * @param i which of the ranks this launcher starts (0 .. {@link #ranksHere()} - 1)
     * @param env the rank's environment
     * @param masterAddr node 0's address
     * @param port the rendezvous port
     */
    void addTo(int i, Map<String, String> env, String masterAddr, int port) {
        int rank = rank(i);
        int node = rank / perNode;
        int local = rank % perNode;
        int world = worldSize();
        if (rehearsal) {
            RANK_VARIABLES.forEach(env::remove);
            env.put("NCCL_HOSTID", NODE_PREFIX + node);
            if (setDevices) {
                env.put("CUDA_VISIBLE_DEVICES", String.join(",", hostDevices(node)));
            }
            env.putIfAbsent("NCCL_SOCKET_IFNAME", "lo");
            env.putIfAbsent("NCCL_NVLS_ENABLE", "0");
        }
        env.put("MASTER_ADDR", masterAddr);
        env.put("MASTER_PORT", Integer.toString(port));
        switch (style) {
            case TORCHRUN:
                env.put("RANK", Integer.toString(rank));
                env.put("WORLD_SIZE", Integer.toString(world));
                env.put("LOCAL_RANK", Integer.toString(local));
                env.put("LOCAL_WORLD_SIZE", Integer.toString(perNode));
                if (multiNode()) {
                    env.put("GROUP_RANK", Integer.toString(node));
                    env.put("GROUP_WORLD_SIZE", Integer.toString(nnodes));
                }
                break;
            case SRUN:
                env.put("SLURM_PROCID", Integer.toString(rank));
                env.put("SLURM_NTASKS", Integer.toString(world));
                env.put("SLURM_LOCALID", Integer.toString(local));
                env.put("SLURM_NODEID", Integer.toString(node));
                env.put("SLURM_NNODES", Integer.toString(nnodes));
                env.put("SLURM_NTASKS_PER_NODE", Integer.toString(perNode));
                env.put("SLURM_TASKS_PER_NODE", perNode + (nnodes > 1 ? "(x" + nnodes + ")" : ""));
                env.put("SLURM_STEP_NODELIST", nodeList());
                env.put("SLURM_JOB_NODELIST", nodeList());
                env.put("SLURMD_NODENAME", NODE_PREFIX + node);
                break;
            case MPIRUN:
                env.put("OMPI_COMM_WORLD_RANK", Integer.toString(rank));
                env.put("OMPI_COMM_WORLD_SIZE", Integer.toString(world));
                env.put("OMPI_COMM_WORLD_LOCAL_RANK", Integer.toString(local));
                env.put("OMPI_COMM_WORLD_LOCAL_SIZE", Integer.toString(perNode));
                env.put("OMPI_COMM_WORLD_NODE_RANK", Integer.toString(node));
                break;
            default:
                throw new AssertionError(style);
        }
    }
}
