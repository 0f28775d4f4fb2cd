package org.nccl4j.launch;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.IntSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.cuda.global.cudart;

/**
 * Where this process stands in a multi-process job: its rank, the world size, its rank and the process count on
 * its node when known, and the GPU it should use, as told by the launcher through environment variables.
 *
 * <p>Launchers are recognized in this order; the first whose variables are present wins and is recorded as
 * {@link #source()}:
 * <ol>
 * <li>torchrun's elastic agent, when {@code TORCHELASTIC_RUN_ID} is set together with {@code RANK} and
 *     {@code WORLD_SIZE}. It comes first because torchrun is often itself started by {@code srun} or
 *     {@code mpirun}, whose variables it passes on to its workers although they describe the agent, not the
 *     worker;</li>
 * <li>Open MPI: {@code OMPI_COMM_WORLD_RANK}, {@code OMPI_COMM_WORLD_SIZE}, {@code OMPI_COMM_WORLD_LOCAL_RANK},
 *     {@code OMPI_COMM_WORLD_LOCAL_SIZE};</li>
 * <li>PMIx: {@code PMIX_RANK}, with the size from {@code PMI_SIZE} or {@code OMPI_COMM_WORLD_SIZE}; when no size
 *     is given the next launchers are tried;</li>
 * <li>PMI (MPICH, Hydra, Intel MPI): {@code PMI_RANK}, {@code PMI_SIZE}, and {@code MPI_LOCALRANKID},
 *     {@code MPI_LOCALNRANKS};</li>
 * <li>Slurm: {@code SLURM_PROCID}, {@code SLURM_NTASKS} (or {@code SLURM_NPROCS}), {@code SLURM_LOCALID}, and the
 *     local size from {@code SLURM_NTASKS_PER_NODE} or a uniform {@code SLURM_TASKS_PER_NODE} (such as
 *     {@code 4(x2)});</li>
 * <li>torchrun style without the agent: {@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_RANK},
 *     {@code LOCAL_WORLD_SIZE};</li>
 * <li>none: a single process, rank 0 of 1, local rank 0.</li>
 * </ol>
 *
 * <p>The device is the local rank modulo the number of visible CUDA devices, unless {@code NCCL4J_DEVICE} is set
 * or {@link #withDevice(int)} is used: with 4 ranks on a machine with 2 GPUs, local ranks 0 and 2 use device 0 and
 * local ranks 1 and 3 device 1. Ranks that share a GPU this way must each have their own {@code NCCL_HOSTID} (NCCL
 * refuses two ranks of one host on one device); {@code scripts/nccl4j-run --share-gpu} sets it. {@link #detect()}
 * asks CUDA for the device count, only when the local rank is above 0; {@link #detect(Map)} does not ask and uses
 * the local rank as it is; {@link #detect(Map, IntSupplier)} takes the count from its caller.
 * {@code MASTER_ADDR} and {@code MASTER_PORT} are carried when present, for {@link Rendezvous}.
 *
 * <p>Every value is checked: a value that is not an integer, a negative one, a rank not below its size, or a
 * launcher's rank variable without its size variable gives an {@link IllegalArgumentException} naming the variable
 * and its value. Instances are immutable.
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
    private final int device;
    private final String deviceOrigin;
    /** The device count the local rank was reduced by, or -1 when the device is the local rank as it is. */
    private final int wrappedBy;
    private final String masterAddr;
    private final int masterPort;

    private LaunchInfo(Source source, int rank, int worldSize, int localRank, int localWorldSize, int device,
            String deviceOrigin, int wrappedBy, String masterAddr, int masterPort) {
        this.source = source;
        this.rank = rank;
        this.worldSize = worldSize;
        this.localRank = localRank;
        this.localWorldSize = localWorldSize;
        this.device = device;
        this.deviceOrigin = deviceOrigin;
        this.wrappedBy = wrappedBy;
        this.masterAddr = masterAddr;
        this.masterPort = masterPort;
    }

    /**
     * Detects the launch from this process's environment as the JVM saw it at start ({@link System#getenv()}).
     * When the device comes from a local rank above 0, the local rank is taken modulo the number of visible devices
     * ({@code cudaGetDeviceCount}); when CUDA cannot tell (no runtime, no device), the local rank is used as it is
     * and the error comes when the device is used.
     *
     * @return what the launcher told, or a single process (rank 0 of 1) when no launcher's variables are set
     * @throws IllegalArgumentException when a launcher variable is malformed
     */
    public static LaunchInfo detect() {
        return detect(System.getenv(), LaunchInfo::visibleDevices);
    }

    /** {@code cudaGetDeviceCount} through the JavaCPP Presets for CUDA; 0 when the CUDA runtime cannot tell. */
    private static int visibleDevices() {
        try {
            int[] n = new int[1];
            return cudart.cudaGetDeviceCount(n) == 0 ? n[0] : 0;
        } catch (LinkageError e) {
            return 0;
        }
    }

    /**
     * Detects the launch from {@code env}, a map of environment variables, without asking CUDA: the device is the
     * local rank as it is (or {@code NCCL4J_DEVICE}).
     *
     * @param env variable name to value, as from {@link System#getenv()}; empty values count as unset
     * @return what the launcher told, or a single process (rank 0 of 1) when no launcher's variables are set
     * @throws IllegalArgumentException when a launcher variable is malformed
     */
    public static LaunchInfo detect(Map<String, String> env) {
        return detect(env, null);
    }

    /**
     * Detects the launch from {@code env}; a device taken from the local rank is the local rank modulo the device
     * count that {@code deviceCount} gives. {@code deviceCount} is called only when the local rank is above 0 and
     * {@code NCCL4J_DEVICE} is unset; when it throws a {@link RuntimeException} or gives 0 or less, the local rank is
     * used as it is.
     *
     * @param env variable name to value, as from {@link System#getenv()}; empty values count as unset
     * @param deviceCount the number of visible CUDA devices (e.g. {@code org.nccl4j.Cuda::deviceCount}), or null to
     *        use the local rank as it is
     * @return what the launcher told, or a single process (rank 0 of 1) when no launcher's variables are set
     * @throws IllegalArgumentException when a launcher variable is malformed
     */
    public static LaunchInfo detect(Map<String, String> env, IntSupplier deviceCount) {
        Objects.requireNonNull(env, "env");
        Env e = new Env(env, deviceCount);
        LaunchInfo info = null;
        if (e.has("TORCHELASTIC_RUN_ID") && e.has("RANK") && e.has("WORLD_SIZE")) {
            info = torchrun(e);
        }
        if (info == null && e.has("OMPI_COMM_WORLD_RANK")) {
            info = e.build(Source.OPEN_MPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", null);
        }
        if (info == null && e.has("PMIX_RANK")) {
            String size = e.has("PMI_SIZE") ? "PMI_SIZE"
                    : e.has("OMPI_COMM_WORLD_SIZE") ? "OMPI_COMM_WORLD_SIZE" : null;
            if (size != null) {
                String local = e.has("OMPI_COMM_WORLD_LOCAL_RANK") ? "OMPI_COMM_WORLD_LOCAL_RANK"
                        : e.has("MPI_LOCALRANKID") ? "MPI_LOCALRANKID" : null;
                String localSize = e.has("OMPI_COMM_WORLD_LOCAL_SIZE") ? "OMPI_COMM_WORLD_LOCAL_SIZE"
                        : e.has("MPI_LOCALNRANKS") ? "MPI_LOCALNRANKS" : null;
                info = e.build(Source.PMIX, "PMIX_RANK", size, local, localSize, null);
            }
        }
        if (info == null && e.has("PMI_RANK")) {
            info = e.build(Source.PMI, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", null);
        }
        if (info == null && e.has("SLURM_PROCID")) {
            info = slurm(e);
        }
        if (info == null && e.has("RANK")) {
            info = torchrun(e);
        }
        if (info == null) {
            if (e.has("PMIX_RANK")) {
                throw new IllegalArgumentException("PMIX_RANK=" + e.get("PMIX_RANK") + " is set but no world size"
                        + " is: set PMI_SIZE (or OMPI_COMM_WORLD_SIZE), or launch with a launcher that exports one");
            }
            info = e.build(Source.SINGLE_PROCESS, null, null, null, null, null);
        }
        return info;
    }

    private static LaunchInfo torchrun(Env e) {
        return e.build(Source.TORCHRUN, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", null);
    }

    private static LaunchInfo slurm(Env e) {
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
        return e.build(Source.SLURM, "SLURM_PROCID", size, "SLURM_LOCALID", localSizeName, localSizeValue);
    }

    /** Reads and checks the variables. */
    private static final class Env {
        private final Map<String, String> env;
        private final IntSupplier deviceCount;

        Env(Map<String, String> env, IntSupplier deviceCount) {
            this.env = env;
            this.deviceCount = deviceCount;
        }

        /** The visible device count, or 0 when unknown. */
        int devices() {
            if (deviceCount == null) {
                return 0;
            }
            try {
                return Math.max(0, deviceCount.getAsInt());
            } catch (RuntimeException e) {
                return 0; // no CUDA here: the device is used as it is, and using it says what is wrong
            }
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

        LaunchInfo build(Source source, String rankVar, String sizeVar, String localVar, String localSizeVar,
                String localSizeValue) {
            int rank = 0;
            int size = 1;
            if (rankVar != null) {
                if (!has(sizeVar)) {
                    throw new IllegalArgumentException(rankVar + "=" + get(rankVar) + " is set but " + sizeVar
                            + " is not: a " + source.description() + " launch sets both; set " + sizeVar
                            + " to the number of processes");
                }
                rank = integer(rankVar, get(rankVar), 0);
                size = integer(sizeVar, get(sizeVar), 1);
                if (rank >= size) {
                    throw new IllegalArgumentException(rankVar + "=" + rank + " is not below " + sizeVar + "=" + size
                            + ": ranks run from 0 to " + (size - 1));
                }
            }
            int local = -1;
            int localSize = -1;
            if (source == Source.SINGLE_PROCESS) {
                local = 0;
                localSize = 1;
            }
            if (localSizeVar != null && (localSizeValue != null || has(localSizeVar))) {
                localSize = integer(localSizeVar, localSizeValue != null ? localSizeValue : get(localSizeVar), 1);
                if (localSize > size) {
                    throw new IllegalArgumentException(localSizeVar + "=" + localSize + " is greater than " + sizeVar
                            + "=" + size + ": a node cannot hold more processes than the job");
                }
            }
            if (localVar != null && has(localVar)) {
                local = integer(localVar, get(localVar), 0);
                if (localSize >= 0 && local >= localSize) {
                    throw new IllegalArgumentException(localVar + "=" + local + " is not below " + localSizeVar + "="
                            + localSize + ": local ranks run from 0 to " + (localSize - 1));
                }
                if (local >= size) {
                    throw new IllegalArgumentException(localVar + "=" + local + " is not below " + sizeVar + "="
                            + size + ": a local rank cannot exceed the world size");
                }
            }
            int device = local;
            String origin = local >= 0 ? "local rank" : null;
            int wrappedBy = -1;
            if (has(DEVICE_VARIABLE)) {
                device = integer(DEVICE_VARIABLE, get(DEVICE_VARIABLE), 0);
                origin = DEVICE_VARIABLE;
            } else if (local > 0) {
                int n = devices();
                if (n > 0 && local >= n) {
                    device = local % n;
                    origin = "local rank mod device count";
                    wrappedBy = n;
                }
            }
            String addr = has("MASTER_ADDR") ? get("MASTER_ADDR").trim() : null;
            int port = -1;
            if (has("MASTER_PORT")) {
                port = integer("MASTER_PORT", get("MASTER_PORT"), 1);
                if (port > 65535) {
                    throw new IllegalArgumentException("MASTER_PORT=" + port + " is above 65535: use a TCP port from"
                            + " 1 to 65535");
                }
            }
            return new LaunchInfo(source, rank, size, local, localSize, device, origin, wrappedBy, addr, port);
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
        return new LaunchInfo(source, rank, worldSize, localRank, localWorldSize, device, "explicit", -1, masterAddr,
                masterPort);
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
     * The {@code MASTER_ADDR} variable: the rendezvous host, for {@link Rendezvous}.
     *
     * @return the value, trimmed, or empty when the variable is unset or empty
     */
    public Optional<String> masterAddr() {
        return Optional.ofNullable(masterAddr);
    }

    /**
     * The {@code MASTER_PORT} variable: the rendezvous TCP port, for {@link Rendezvous}.
     *
     * @return the port, 1 to 65535, or empty when the variable is unset or empty
     */
    public OptionalInt masterPort() {
        return masterPort < 0 ? OptionalInt.empty() : OptionalInt.of(masterPort);
    }

    /**
     * E.g. {@code LaunchInfo[Slurm: rank 3 of 8, local 1 of 4, device 1 (local rank), master node01:29500]}, or with
     * ranks sharing GPUs {@code device 1 (local rank 3 mod 2 devices)}.
     */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("LaunchInfo[").append(source.description()).append(": rank ")
                .append(rank).append(" of ").append(worldSize);
        if (localRank >= 0 || localWorldSize >= 0) {
            sb.append(", local ").append(localRank >= 0 ? Integer.toString(localRank) : "?").append(" of ")
                    .append(localWorldSize >= 0 ? Integer.toString(localWorldSize) : "?");
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
