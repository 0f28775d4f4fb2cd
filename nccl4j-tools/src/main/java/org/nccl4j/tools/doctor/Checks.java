package org.nccl4j.tools.doctor;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.nccl4j.NcclLog;
import org.nccl4j.WatchdogConfig;
import org.nccl4j.tools.doctor.Finding.Status;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.launch.NcclEnvironment;

/**
 * The doctor's rules: what it concludes from a {@link Machine} and an environment, without touching either, so that
 * every rule is tested on a CPU with made-up facts.
 */
public final class Checks {
    /**
     * The NCCL variables documented by NVIDIA's NCCL (its environment-variable page and the release notes up to
     * 2.29), for telling a typo from a variable this table does not know; values are checked by
     * {@link NcclEnvironment} where it knows them.
     */
    static final Set<String> NCCL_VARIABLES = Set.of(
            "NCCL_ALGO", "NCCL_ALLOC_P2P_NET_LL_BUFFERS", "NCCL_BUFFSIZE", "NCCL_CGA_CLUSTER_SIZE",
            "NCCL_CHECKS_DISABLE", "NCCL_CHECK_POINTERS", "NCCL_COLLNET_ENABLE", "NCCL_COLLNET_NODE_THRESHOLD",
            "NCCL_COMM_BLOCKING", "NCCL_COMM_ID", "NCCL_CONF_FILE", "NCCL_CREATE_THREAD_CONTEXT", "NCCL_CROSS_NIC",
            "NCCL_CTA_POLICY", "NCCL_CUMEM_ENABLE", "NCCL_CUMEM_HOST_ENABLE", "NCCL_DEBUG", "NCCL_DEBUG_FILE",
            "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_TIMESTAMP_FORMAT", "NCCL_DEBUG_TIMESTAMP_LEVELS", "NCCL_DMABUF_ENABLE",
            "NCCL_ENV_PLUGIN", "NCCL_GRAPH_FILE", "NCCL_GRAPH_MIXING_SUPPORT", "NCCL_GRAPH_REGISTER", "NCCL_HOSTID",
            "NCCL_IB_ADAPTIVE_ROUTING", "NCCL_IB_ADDR_FAMILY", "NCCL_IB_ADDR_RANGE", "NCCL_IB_AR_THRESHOLD",
            "NCCL_IB_CUDA_SUPPORT", "NCCL_IB_DISABLE", "NCCL_IB_ECE_ENABLE", "NCCL_IB_FIFO_TC", "NCCL_IB_GID_INDEX",
            "NCCL_IB_HCA", "NCCL_IB_MERGE_NICS", "NCCL_IB_MERGE_VFS", "NCCL_IB_PCI_RELAXED_ORDERING",
            "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_RETRY_CNT", "NCCL_IB_RETURN_ASYNC_EVENTS",
            "NCCL_IB_ROCE_VERSION_NUM", "NCCL_IB_SL", "NCCL_IB_SPLIT_DATA_ON_QPS", "NCCL_IB_TC", "NCCL_IB_TIMEOUT",
            "NCCL_IB_USE_INLINE", "NCCL_IGNORE_CPU_AFFINITY", "NCCL_IGNORE_DISABLED_P2P",
            "NCCL_L1_SHARED_MEMORY_CARVEOUT",
            "NCCL_LAUNCH_MODE", "NCCL_LEGACY_CUDA_REGISTER", "NCCL_LL128_BUFFSIZE", "NCCL_LL_BUFFSIZE",
            "NCCL_LOCAL_REGISTER", "NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS", "NCCL_MAX_NRINGS", "NCCL_MAX_P2P_NCHANNELS",
            "NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS", "NCCL_MIN_NRINGS", "NCCL_MIN_P2P_NCHANNELS", "NCCL_MNNVL_ENABLE",
            "NCCL_MNNVL_UUID", "NCCL_MNNVL_CLIQUE_ID", "NCCL_NCHANNELS_PER_NET_PEER", "NCCL_NET", "NCCL_NET_GDR_C2C",
            "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ", "NCCL_NET_MERGE_LEVEL", "NCCL_NET_OVERHEAD", "NCCL_NET_PLUGIN",
            "NCCL_NET_SHARED_BUFFERS", "NCCL_NET_SHARED_COMMS", "NCCL_NSOCKS_PERTHREAD", "NCCL_NTHREADS",
            "NCCL_NUM_RMA_CTX", "NCCL_NVB_DISABLE", "NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE", "NCCL_NVLS_CHUNKSIZE",
            "NCCL_NVLS_ENABLE", "NCCL_NVLS_NCHANNELS", "NCCL_NVLSTREE_MAX_CHUNKSIZE", "NCCL_OOB_NET_ENABLE",
            "NCCL_OOB_NET_IFNAME", "NCCL_P2P_DIRECT_DISABLE", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
            "NCCL_P2P_LL_THRESHOLD", "NCCL_P2P_NET_CHUNKSIZE", "NCCL_P2P_NVL_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE",
            "NCCL_P2P_PXN_LEVEL", "NCCL_PROFILER_PLUGIN", "NCCL_PROFILE_EVENT_MASK", "NCCL_PROTO",
            "NCCL_PROXY_APPEND_BATCH_SIZE", "NCCL_PXN_DISABLE", "NCCL_RAS_ADDR", "NCCL_RAS_ENABLE",
            "NCCL_RAS_TIMEOUT_FACTOR", "NCCL_RUNTIME_CONNECT", "NCCL_SET_CPU_STACK_SIZE", "NCCL_SET_STACK_SIZE",
            "NCCL_SET_THREAD_NAME", "NCCL_SHM_DISABLE", "NCCL_SHM_LOCALITY", "NCCL_SHM_USE_CUDA_MEMCPY",
            "NCCL_SINGLE_RING_THRESHOLD", "NCCL_SOCKET_FAMILY", "NCCL_SOCKET_IFNAME", "NCCL_SOCKET_NTHREADS",
            "NCCL_SOCKET_RETRY_CNT", "NCCL_SOCKET_RETRY_SLEEP_MSEC", "NCCL_TOPO_DUMP_FILE", "NCCL_TOPO_FILE",
            "NCCL_TUNER_CONFIG_FILE", "NCCL_TUNER_PLUGIN", "NCCL_UID_STAGGER_RATE", "NCCL_UID_STAGGER_THRESHOLD",
            "NCCL_WARN_ENABLE_DEBUG_INFO", "NCCL_WIN_ENABLE", "NCCL_WORK_FIFO_BYTES", "NCCL_WORK_FIFO_DEPTH",
            "NCCL_MAX_P2P_PEERS", "NCCL_GDRCOPY_ENABLE", "NCCL_GROUP_CUDA_STREAM", "NCCL_NVLS_TREE_ENABLE");

    /** Set beside NCCL by NVIDIA's containers and packages, not read by NCCL: noted, not judged. */
    static final Set<String> NCCL_LABELS = Set.of("NCCL_VERSION", "NCCL_HOME", "NCCL_ROOT", "NCCL_LIB_DIR",
            "NCCL_INCLUDE_DIR");

    /** nccl4j's own variables. */
    static final Set<String> NCCL4J_VARIABLES = Set.of(
            "NCCL4J_TIMEOUT", "NCCL4J_WATCHDOG", "NCCL4J_ON_FAILURE", "NCCL4J_WATCHDOG_POLL",
            "NCCL4J_WATCHDOG_STUCK_TIMEOUT", "NCCL4J_CHECK_COLLECTIVES", "NCCL4J_INIT_TIMEOUT", "NCCL4J_TRACE_BUFFER",
            "NCCL4J_TRACE_DIR",
            "NCCL4J_DEVICE", "NCCL4J_LIBRARY", "NCCL4J_RENDEZVOUS_FILE", "NCCL4J_RENDEZVOUS_TOKEN", "NCCL4J_RUN_ID",
            "NCCL4J_LIVENESS_PORT", "NCCL4J_LIVENESS_TIMEOUT", "NCCL4J_NCCL_LOG", "NCCL4J_BUNDLE",
            "NCCL4J_JOB_SECRET", "NCCL4J_JOB_SECRET_FILE", "NCCL4J_RENDEZVOUS_BIND", "NCCL4J_LIVENESS_BIND",
            "NCCL4J_CLOSE_TIMEOUT", "NCCL4J_LEFT_BEHIND_EXIT", "NCCL4J_RUN_TAG", "NCCL4J_CUDA", "NCCL4J_CUDART");

    /** The bits of {@code nvmlDeviceGetCurrentClocksEventReasons} that mean the GPU is held back. */
    static final long HW_SLOWDOWN = 0x8L;
    static final long SW_THERMAL = 0x20L;
    static final long HW_THERMAL = 0x40L;
    static final long HW_POWER_BRAKE = 0x80L;

    private Checks() {
    }

    /** CUDA: driver and runtime, and each GPU. */
    static List<Finding> cuda(Machine m) {
        List<Finding> out = new ArrayList<>();
        if (m.cudaError() != null) {
            out.add(Finding.fail("cuda", "CUDA", m.cudaError(), "install the NVIDIA driver and check that the GPUs are "
                    + "visible (nvidia-smi; CUDA_VISIBLE_DEVICES)"));
            return out;
        }
        String versions = "driver supports CUDA " + cudaVersion(m.driverVersion()) + ", runtime " + cudaVersion(
                m.runtimeVersion());
        if (m.driverVersion() > 0 && m.runtimeVersion() > m.driverVersion()) {
            out.add(Finding.fail("cuda", "CUDA", versions, "the driver is older than the CUDA runtime: update the "
                    + "driver, or use a runtime no newer than " + cudaVersion(m.driverVersion())));
        } else {
            String driver = m.nvmlDriver() != null ? "; driver " + m.nvmlDriver() : "";
            out.add(Finding.ok("cuda", "CUDA", versions + driver));
        }
        if (m.gpus().isEmpty()) {
            out.add(Finding.fail("gpu", "GPUs", "CUDA sees no GPU", "check CUDA_VISIBLE_DEVICES and nvidia-smi"));
        }
        for (Machine.Gpu g : m.gpus()) {
            out.add(Finding.info("gpu", "GPU " + g.index(), String.format(Locale.ROOT, "%s, %.1f GiB, bus %s, compute "
                    + "capability %d.%d", g.name(), g.memoryBytes() / (double) (1L << 30), g.busId(), g.major(),
                    g.minor())));
        }
        return out;
    }

    static String cudaVersion(int v) {
        return v <= 0 ? "?" : (v / 1000) + "." + (v % 1000) / 10;
    }

    /** NCCL: the library found and the entry points it lacks. */
    static List<Finding> nccl(String version, String path, List<NcclFunction> missing, String error) {
        List<Finding> out = new ArrayList<>();
        if (error != null) {
            out.add(Finding.fail("nccl", "NCCL", error, "install NCCL (libnccl.so.2) or point NCCL4J_LIBRARY / "
                    + "-Dnccl4j.library at it"));
            return out;
        }
        out.add(Finding.ok("nccl", "NCCL", version + " at " + path));
        if (!missing.isEmpty()) {
            StringBuilder sb = new StringBuilder();
            for (NcclFunction f : missing) {
                sb.append(sb.length() == 0 ? "" : ", ").append(f.name()).append(" (").append(f.since()).append("+)");
            }
            out.add(Finding.info("nccl", "entry points", "not in this NCCL: " + sb
                    + "; the nccl4j calls that need them say so"));
        }
        return out;
    }

    /** NVML: links, PCIe, clocks, ECC, other processes, topology and peer access. */
    static List<Finding> nvml(Machine m) {
        List<Finding> out = new ArrayList<>();
        if (m.nvmlError() != null) {
            out.add(Finding.warn("nvml", "NVML", "not available: " + m.nvmlError(), "NVML comes with the NVIDIA driver "
                    + "(libnvidia-ml.so.1); without it the link, PCIe, clock and ECC checks are skipped"));
            return out;
        }
        for (Machine.Gpu g : m.gpus()) {
            Machine.NvmlGpu n = g.nvml();
            if (n == null) {
                continue;
            }
            String who = "GPU " + g.index();
            long active = n.links().stream().filter(Machine.Link::active).count();
            if (n.links().isEmpty()) {
                out.add(Finding.info("nvlink", who, "no NVLink"));
            } else {
                int version = n.links().stream().mapToInt(Machine.Link::version).max().orElse(-1);
                TreeMap<String, Integer> peers = new TreeMap<>();
                for (Machine.Link l : n.links()) {
                    if (l.active() && (l.remoteBusId() != null || l.remote() != Machine.Remote.UNKNOWN)) {
                        peers.merge(peer(m, l), 1, Integer::sum);
                    }
                }
                String detail = active + " of " + n.links().size() + " NVLinks active, version " + version
                        + (peers.isEmpty() ? "" : ", to " + peers);
                if (active < n.links().size() && active > 0) {
                    out.add(Finding.warn("nvlink", who, detail, "a link is down: check nvidia-smi nvlink --status; a "
                            + "reset (nvidia-smi -r) or the node's service may be needed"));
                } else {
                    out.add(Finding.ok("nvlink", who, detail));
                }
            }
            if (n.pcieWidth() > 0 && n.pcieWidthMax() > 0) {
                String pcie = "PCIe gen " + n.pcieGen() + " x" + n.pcieWidth() + " (max gen " + n.pcieGenMax() + " x"
                        + n.pcieWidthMax() + ")";
                if (n.pcieWidth() < n.pcieWidthMax()) {
                    out.add(Finding.warn("pcie", who, pcie + ": fewer lanes than the slot has", "the link trained "
                            + "down: reseat the card or check the riser; host-device and PCIe peer copies are slower"));
                } else if (n.pcieGen() < n.pcieGenMax()) {
                    out.add(Finding.info("pcie", who, pcie + ": below its maximum generation, which an idle GPU does "
                            + "to save power; the bandwidth measurement tells whether it holds under load"));
                } else {
                    out.add(Finding.ok("pcie", who, pcie));
                }
            }
            if (n.throttleReasons() > 0) {
                long bad = n.throttleReasons() & (HW_SLOWDOWN | SW_THERMAL | HW_THERMAL | HW_POWER_BRAKE);
                if (bad != 0) {
                    out.add(Finding.warn("health", who, "clocks held back: " + reasons(bad), "check cooling and power "
                            + "(nvidia-smi -q -d PERFORMANCE); a throttled GPU is a straggler for every rank"));
                }
            }
            if (n.uncorrectedEcc() > 0) {
                out.add(Finding.fail("health", who, n.uncorrectedEcc() + " volatile uncorrected ECC errors", "the "
                        + "GPU's memory has failed since the last reset: drain the node and reset or replace the GPU"));
            }
            if (!n.otherProcesses().isEmpty()) {
                out.add(Finding.warn("health", who, "other processes compute on it: pids " + n.otherProcesses(),
                        "another job shares this GPU; its memory and time are not yours"));
            }
        }
        out.addAll(topology(m));
        return out;
    }

    /** The other end of a link: {@code NVSwitch}, {@code GPU <k>} for a GPU of this machine, else its bus id. */
    private static String peer(Machine m, Machine.Link l) {
        if (l.remote() == Machine.Remote.SWITCH) {
            return "NVSwitch";
        }
        if (l.remote() == Machine.Remote.CPU) {
            return "CPU";
        }
        for (Machine.Gpu g : m.gpus()) {
            if (l.remoteBusId() != null && Probe.sameBus(l.remoteBusId(), g.busId())) {
                return "GPU " + g.index();
            }
        }
        return l.remoteBusId() == null ? "?" : l.remoteBusId();
    }

    private static String reasons(long bits) {
        List<String> r = new ArrayList<>();
        if ((bits & HW_SLOWDOWN) != 0) {
            r.add("hardware slowdown");
        }
        if ((bits & SW_THERMAL) != 0) {
            r.add("software thermal slowdown");
        }
        if ((bits & HW_THERMAL) != 0) {
            r.add("hardware thermal slowdown");
        }
        if ((bits & HW_POWER_BRAKE) != 0) {
            r.add("power brake");
        }
        return String.join(", ", r);
    }

    /**
     * The topology matrix as nvidia-smi topo -m prints it ({@link Paths}), each kind of path once in words with what
     * it should carry, and peer access where a link should give it.
     */
    static List<Finding> topology(Machine m) {
        List<Finding> out = new ArrayList<>();
        int n = m.gpus().size();
        String[][] t = n == 0 ? null : Paths.matrix(m);
        if (t == null) {
            return out;
        }
        StringBuilder head = new StringBuilder("      ");
        for (int j = 0; j < n; j++) {
            head.append(String.format(Locale.ROOT, "%-6s", "GPU" + j));
        }
        out.add(Finding.info("topology", "matrix", head.toString().stripTrailing()));
        for (int i = 0; i < n; i++) {
            StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "%-6s", "GPU" + i));
            for (int j = 0; j < n; j++) {
                row.append(String.format(Locale.ROOT, "%-6s", t[i][j]));
            }
            out.add(Finding.info("topology", "matrix", row.toString().stripTrailing()));
        }
        // each kind of path once, with the pairs it joins (i < j: a path is the same both ways)
        java.util.LinkedHashMap<String, List<String>> kinds = new java.util.LinkedHashMap<>();
        int pairs = 0;
        for (int i = 0; i < n; i++) {
            for (int j = i + 1; j < n; j++) {
                Paths.Path p = Paths.between(m, i, j);
                String what = p.word() + ", " + p.description() + (p.expectedGBps() > 0 ? String.format(Locale.ROOT,
                        ", %.0f GB/s each way", p.expectedGBps()) : ", no expectation");
                kinds.computeIfAbsent(what, k -> new ArrayList<>()).add(i + "-" + j);
                pairs++;
            }
        }
        for (Map.Entry<String, List<String>> e : kinds.entrySet()) {
            String which = e.getValue().size() == pairs && pairs > 1 ? "every pair"
                    : (e.getValue().size() == 1 ? "GPU pair " : "GPU pairs ") + String.join(", ", e.getValue());
            out.add(Finding.info("topology", "path", which + ": " + e.getKey()));
        }
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (i != j && m.p2p() != null && t[i][j].startsWith("NV") && !m.p2p()[i][j]) {
                    out.add(Finding.warn("topology", "GPU " + i + " -> GPU " + j, "joined by " + t[i][j]
                            + " but peer access is refused", "check the driver and IOMMU/ACS settings; NCCL falls back"
                            + " to copies through host memory"));
                }
            }
        }
        return out;
    }

    /** The environment: unknown names, bad values, and settings that contradict the machine. */
    static List<Finding> environment(Map<String, String> env, Machine m) {
        List<Finding> out = new ArrayList<>();
        TreeMap<String, String> sorted = new TreeMap<>(env);
        boolean anyNvlink = m.gpus().stream().anyMatch(g -> g.nvml() != null
                && g.nvml().links().stream().anyMatch(Machine.Link::active));
        for (Map.Entry<String, String> e : sorted.entrySet()) {
            String name = e.getKey();
            String value = e.getValue();
            if (name.startsWith("NCCL4J_")) {
                if (!NCCL4J_VARIABLES.contains(name)) {
                    out.add(unknown(name, value, NCCL4J_VARIABLES));
                }
            } else if (NCCL_LABELS.contains(name)) {
                out.add(Finding.info("env", name, name + "=" + value + " (set by the installation; NCCL does not read "
                        + "it)"));
            } else if (name.startsWith("NCCL_")) {
                if (!NCCL_VARIABLES.contains(name) && !NcclEnvironment.knownVariables().contains(name)) {
                    out.add(unknown(name, value, NCCL_VARIABLES));
                } else if (NcclEnvironment.knownVariables().contains(name)) {
                    try {
                        NcclEnvironment.builder().set(name, value);
                        out.add(Finding.ok("env", name, name + "=" + value));
                    } catch (IllegalArgumentException x) {
                        out.add(Finding.fail("env", name, x.getMessage(), "correct or unset " + name
                                + "; NCCL may ignore it or fail"));
                    }
                } else {
                    out.add(Finding.info("env", name, name + "=" + value));
                }
            }
        }
        String p2p = env.get(NcclEnvironment.P2P_DISABLE);
        if (p2p != null && p2p.trim().equals("1") && anyNvlink) {
            out.add(Finding.warn("env", NcclEnvironment.P2P_DISABLE, "NCCL_P2P_DISABLE=1 on GPUs joined by NVLink: "
                    + "traffic goes through host memory instead", "unset NCCL_P2P_DISABLE"));
        }
        String ifname = env.get(NcclEnvironment.SOCKET_IFNAME);
        if (ifname != null && !ifname.isBlank()) {
            if (!interfaceMatches(ifname, m.interfaces())) {
                out.add(Finding.fail("env", NcclEnvironment.SOCKET_IFNAME, "NCCL_SOCKET_IFNAME=" + ifname + " names "
                        + "no interface of this host (up: " + m.interfaces() + ")", "set it to one of "
                        + m.interfaces() + " (a prefix such as eth matches eth0), or unset it"));
            } else {
                NameList list = NameList.parse(ifname);
                List<String> missing = new ArrayList<>();
                for (NameList.Entry e : list.entries()) {
                    if (m.interfaces().stream().noneMatch(itf -> e.matches(itf, -1, list.exact()))) {
                        missing.add(e.toString());
                    }
                }
                if (!missing.isEmpty()) {
                    out.add(Finding.warn("env", NcclEnvironment.SOCKET_IFNAME, "NCCL_SOCKET_IFNAME=" + ifname
                            + (list.exclude() ? " excludes " : " names ") + String.join(", ", missing) + ", which "
                            + "this host lacks (up: " + m.interfaces() + ")", "correct or drop "
                            + String.join(", ", missing)));
                }
            }
        }
        String hca = env.get(NcclEnvironment.IB_HCA);
        String ibOff = env.get(NcclEnvironment.IB_DISABLE);
        if (hca != null && !hca.isBlank() && (ibOff == null || !ibOff.trim().equals("1"))) {
            List<Finding> lines = ibHca(hca, m.hcas());
            out.removeIf(f -> f.subject().equals(NcclEnvironment.IB_HCA) && f.status() == Status.OK);
            out.addAll(lines);
        }
        out.addAll(nccl4jValues(env, m));
        out.addAll(masterPort(env));
        out.addAll(jobSecret(env));
        // a value that is well formed but wrong for this machine: its OK line goes
        Set<String> judged = new TreeSet<>();
        for (Finding f : out) {
            if (f.status() == Status.WARN || f.status() == Status.FAIL) {
                judged.add(f.subject());
            }
        }
        out.removeIf(f -> f.status() == Status.OK && judged.contains(f.subject()));
        return out;
    }

    /** The size of /dev/shm below which a host of several GPUs is judged short: NVIDIA's containers ask for 1 GiB. */
    static final long SHM_NEEDED = 1L << 30;

    /** The fix for a /dev/shm that is too small or missing. */
    static final String SHM_FIX = "give the container a larger /dev/shm: docker run --shm-size=1g (or --ipc=host); "
            + "Kubernetes: an emptyDir volume with medium: Memory mounted at /dev/shm; docs/multi-host.md";

    /**
     * What the host or container allows NCCL: {@code /dev/shm}, where NCCL makes the shared-memory segments between
     * the ranks of a host (judged where CUDA sees more than one GPU: one GPU has no local peer), and the
     * locked-memory limit, under which NCCL's InfiniBand transport registers its buffers (judged on a host with RDMA
     * devices and {@code NCCL_IB_DISABLE} not 1).
     *
     * @param l the limits read
     * @param m the machine: its GPUs and RDMA devices
     * @param env the environment
     * @return the {@code host} findings, none, one or two
     */
    static List<Finding> host(Limits l, Machine m, Map<String, String> env) {
        List<Finding> out = new ArrayList<>();
        int gpus = m.gpus().size();
        if (gpus > 1 && l.shmBytes() == Limits.UNKNOWN) {
            out.add(Finding.warn("host", "/dev/shm", "/dev/shm is missing or cannot be read: NCCL makes the "
                    + "shared-memory segments between the ranks of this host's " + gpus + " GPUs there", SHM_FIX));
        } else if (gpus > 1 && l.shmBytes() < SHM_NEEDED) {
            out.add(Finding.warn("host", "/dev/shm", "/dev/shm is " + Limits.words(l.shmBytes()) + ", under the "
                    + "1 GiB that NCCL's shared-memory segments between the ranks of this host's " + gpus + " GPUs "
                    + "may need (64 MiB is a container's default)", SHM_FIX));
        } else if (l.shmBytes() != Limits.UNKNOWN) {
            out.add(Finding.ok("host", "/dev/shm", Limits.words(l.shmBytes())));
        }
        String ibOff = env.get(NcclEnvironment.IB_DISABLE);
        boolean ib = !m.hcas().isEmpty() && (ibOff == null || !ibOff.trim().equals("1"));
        if (ib && l.memlockBytes() != Limits.UNKNOWN) {
            List<String> names = m.hcas().stream().map(Machine.Hca::name).toList();
            if (l.memlockBytes() == Limits.UNLIMITED) {
                out.add(Finding.ok("host", "memlock", "locked memory unlimited, RDMA devices " + names));
            } else {
                out.add(Finding.warn("host", "memlock", "locked memory is limited to " + Limits.words(
                        l.memlockBytes()) + " (ulimit -l) on a host with RDMA devices " + names + ": NCCL's "
                        + "InfiniBand transport locks the buffers it registers, and a registration over the limit "
                        + "fails", "make it unlimited: docker run --ulimit memlock=-1; Slurm: LimitMEMLOCK=infinity "
                        + "in slurmd's systemd unit and PropagateResourceLimitsExcept=MEMLOCK in slurm.conf; else "
                        + "memlock unlimited in /etc/security/limits.conf"));
            }
        }
        return out;
    }

    /**
     * The rendezvous port: {@code MASTER_PORT}, else {@code PET_MASTER_PORT}, as {@code LaunchInfo} reads it; a
     * value that is not a TCP port is a FAIL (every rank would refuse it).
     *
     * @param env the environment
     * @return one FAIL, or nothing
     */
    static List<Finding> masterPort(Map<String, String> env) {
        for (String v : new String[] {"MASTER_PORT", "PET_MASTER_PORT"}) {
            String value = env.get(v);
            if (value != null) {
                int port = org.nccl4j.launch.LaunchInfo.portNumber(value);
                if (port < 1 || port > 65535) {
                    return List.of(Finding.fail("env", v, v + "=" + value + " is not a TCP port", "set " + v
                            + " to a port from 1 to 65535, the same on every rank (29500 in the recipes)"));
                }
                return List.of();
            }
        }
        return List.of();
    }

    private static List<Finding> nccl4jValues(Map<String, String> env, Machine m) {
        List<Finding> out = new ArrayList<>();
        try {
            WatchdogConfig.from(env, new Properties());
        } catch (IllegalArgumentException x) {
            out.add(Finding.fail("env", "NCCL4J", x.getMessage(), "correct the value: communicators refuse to start "
                    + "with it"));
        }
        try {
            NcclLog.mode(env, new Properties());
        } catch (IllegalArgumentException x) {
            out.add(Finding.fail("env", NcclLog.VARIABLE, x.getMessage(), "use auto, slf4j or off"));
        }
        String device = env.get("NCCL4J_DEVICE");
        if (device != null) {
            if (!device.trim().matches("[0-9]{1,4}")) {
                out.add(Finding.fail("env", "NCCL4J_DEVICE", "NCCL4J_DEVICE=" + device + " is not a device ordinal",
                        "set a number from 0 to " + Math.max(0, m.gpus().size() - 1)));
            } else if (!m.gpus().isEmpty() && Integer.parseInt(device.trim()) >= m.gpus().size()) {
                out.add(Finding.fail("env", "NCCL4J_DEVICE", "NCCL4J_DEVICE=" + device + " but CUDA sees "
                        + m.gpus().size() + " GPU(s)", "set a number from 0 to " + (m.gpus().size() - 1)));
            }
        }
        return out;
    }

    /**
     * The job secret of a launch that spans hosts: without one, anything that reaches rank 0's ports can join the
     * rendezvous or the liveness channel (WARN); a secret that is set but unusable (FAIL: the ranks refuse to start);
     * nothing said for a single-host or an undetected launch, where loopback keeps the ports to the host.
     */
    static List<Finding> jobSecret(Map<String, String> env) {
        List<Finding> out = new ArrayList<>();
        org.nccl4j.launch.JobSecret secret;
        try {
            secret = org.nccl4j.launch.JobSecret.from(env);
        } catch (IllegalArgumentException | IllegalStateException x) {
            out.add(Finding.fail("env", org.nccl4j.launch.JobSecret.VARIABLE, x.getMessage(), "set "
                    + org.nccl4j.launch.JobSecret.VARIABLE + " to the same random value on every rank, e.g. "
                    + "$(openssl rand -hex 32)"));
            return out;
        }
        String hosts = hostsOf(env);
        if (hosts == null) {
            return out;
        }
        if (secret == null) {
            out.add(Finding.warn("env", org.nccl4j.launch.JobSecret.VARIABLE, "a job over " + hosts + " runs without "
                    + "a job secret: anything that reaches rank 0's ports (MASTER_PORT and MASTER_PORT + 50) can join "
                    + "the rendezvous or the liveness channel, and every record after the handshake travels without a "
                    + "MAC", "export NCCL4J_JOB_SECRET=$(openssl rand -hex 32) once and pass the same value to every "
                    + "rank (mpirun -x NCCL4J_JOB_SECRET; srun and torchrun inherit it; a Kubernetes Secret as "
                    + "NCCL4J_JOB_SECRET_FILE); docs/launching.md, \"The job secret\""));
        } else {
            out.add(Finding.ok("env", org.nccl4j.launch.JobSecret.VARIABLE, "a job over " + hosts + " with a job "
                    + "secret (" + org.nccl4j.launch.JobSecret.NOT_SHOWN + ")"));
        }
        return out;
    }

    /** "N hosts" (or "several hosts") when the launch in {@code env} spans more than one host, else null. */
    static String hostsOf(Map<String, String> env) {
        org.nccl4j.launch.LaunchInfo launch;
        try {
            launch = org.nccl4j.launch.LaunchInfo.detect(env);
        } catch (RuntimeException x) {
            return null;   // no launch here (the doctor run by hand), or one the environment check already judges
        }
        if (launch.worldSize() < 2) {
            return null;
        }
        if (launch.nodeCount().isPresent()) {
            int nodes = launch.nodeCount().getAsInt();
            return nodes > 1 ? nodes + " hosts" : null;
        }
        if (launch.localWorldSize().isPresent() && launch.localWorldSize().getAsInt() < launch.worldSize()) {
            return "several hosts (" + launch.worldSize() + " ranks, " + launch.localWorldSize().getAsInt()
                    + " on this one)";
        }
        return null;
    }

    private static Finding unknown(String name, String rawValue, Set<String> known) {
        // a misspelt secret is still a secret: its value is never shown
        String value = org.nccl4j.launch.JobSecret.hidden(name) ? "(value not shown)" : rawValue;
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String k : new TreeSet<>(known)) {
            int d = distance(name, k);
            if (d < bestDistance) {
                bestDistance = d;
                best = k;
            }
        }
        if (best != null && bestDistance <= 3) {
            return Finding.warn("env", name, name + "=" + value + " is not a variable NCCL or nccl4j reads; did you "
                    + "mean " + best + "?", "rename it to " + best + ", or unset it");
        }
        return Finding.info("env", name, name + "=" + value + " is not in the doctor's table (a newer NCCL's "
                + "variable, or unused)");
    }

    /** Levenshtein distance. */
    static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int sub = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                cur[j] = Math.min(sub, Math.min(prev[j] + 1, cur[j - 1] + 1));
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }

    /**
     * Whether NCCL_SOCKET_IFNAME's list selects an interface: prefixes, {@code =} exact names, {@code ^} exclusions.
     */
    static boolean interfaceMatches(String spec, List<String> interfaces) {
        NameList list = NameList.parse(spec);
        for (String itf : interfaces) {
            if (list.selects(itf, -1)) {
                return true;
            }
        }
        return false;
    }

    /**
     * NCCL_IB_HCA against this host's RDMA devices: a name (with its port, when given) that matches no device is a
     * WARN naming it and the devices present; a list that leaves NCCL no device is a WARN (NCCL then falls back to its
     * socket transport between hosts); otherwise OK with the ports it selects.
     *
     * @param spec the variable's value
     * @param hcas the host's devices
     * @return the findings, one or two
     */
    static List<Finding> ibHca(String spec, List<Machine.Hca> hcas) {
        String var = NcclEnvironment.IB_HCA;
        String name = var + "=" + spec.trim();
        List<Finding> out = new ArrayList<>();
        NameList list = NameList.parse(spec);
        List<String> present = new ArrayList<>();
        List<String> selected = new ArrayList<>();
        for (Machine.Hca h : hcas) {
            List<Integer> ports = h.ports().isEmpty() ? List.of(-1) : h.ports();
            for (int port : ports) {
                String id = port < 0 ? h.name() : h.name() + ":" + port;
                present.add(id);
                if (list.selects(h.name(), port)) {
                    selected.add(id);
                }
            }
        }
        if (hcas.isEmpty()) {
            if (!list.exclude()) {
                out.add(Finding.warn("env", var, name + " but this host has no RDMA device (/sys/class/infiniband "
                        + "is empty or absent): NCCL uses sockets between hosts", "load the HCA's driver (ibv_devices "
                        + "lists the devices), or unset " + var));
            }
            return out;
        }
        List<String> missing = new ArrayList<>();
        for (NameList.Entry e : list.entries()) {
            boolean found = false;
            for (Machine.Hca h : hcas) {
                List<Integer> ports = h.ports().isEmpty() ? List.of(-1) : h.ports();
                for (int port : ports) {
                    found |= e.matches(h.name(), port, list.exact());
                }
            }
            if (!found) {
                missing.add(e.toString());
            }
        }
        String here = " (present: " + String.join(", ", present) + ")";
        if (!missing.isEmpty()) {
            out.add(Finding.warn("env", var, name + (list.exclude() ? " excludes " : " names ")
                    + String.join(", ", missing) + ", which this host lacks" + here
                    + (list.exclude() ? ": that exclusion has no effect" : ""), "name devices from the present list"
                    + " (a port after ':', '=' in front for exact names), or unset " + var));
        }
        if (selected.isEmpty()) {
            out.add(Finding.warn("env", var, name + " leaves NCCL no RDMA device of this host" + here + ": it uses "
                    + "sockets between hosts", "select a present device, or unset " + var));
        } else if (missing.isEmpty()) {
            out.add(Finding.ok("env", var, name + " selects " + String.join(", ", selected)));
        }
        return out;
    }

    /**
     * A list of names as NCCL_SOCKET_IFNAME and NCCL_IB_HCA take it (NCCL's environment-variable documentation):
     * comma-separated; {@code ^} in front makes it an exclusion list, then {@code =} in front makes every name exact
     * (otherwise each is a prefix: {@code mlx5_1} also selects {@code mlx5_10}); NCCL_IB_HCA's entries are
     * {@code <hca>[:<port>[:<rail>[:<plane>]]]}, an empty or absent port meaning every port.
     *
     * @param exclude whether the list excludes
     * @param exact whether names are exact
     * @param entries its entries
     */
    record NameList(boolean exclude, boolean exact, List<Entry> entries) {
        /**
         * One name and its port.
         *
         * @param name the name or prefix
         * @param port the port, or -1 for every port
         */
        record Entry(String name, int port) {
            boolean matches(String device, int devicePort, boolean exact) {
                boolean named = exact ? device.equals(name) : device.startsWith(name);
                return named && (port < 0 || devicePort < 0 || port == devicePort);
            }

            @Override
            public String toString() {
                return port < 0 ? name : name + ":" + port;
            }
        }

        static NameList parse(String spec) {
            String s = spec.trim();
            boolean exclude = s.startsWith("^");
            if (exclude) {
                s = s.substring(1);
            }
            boolean exact = s.startsWith("=");
            if (exact) {
                s = s.substring(1);
            }
            List<Entry> entries = new ArrayList<>();
            for (String part : s.split(",")) {
                String[] fields = part.trim().split(":", -1);
                int port = -1;
                if (fields.length > 1 && fields[1].trim().matches("[0-9]{1,4}")) {
                    port = Integer.parseInt(fields[1].trim());
                }
                if (!fields[0].trim().isEmpty()) {
                    entries.add(new Entry(fields[0].trim(), port));
                }
            }
            return new NameList(exclude, exact, List.copyOf(entries));
        }

        /** Whether NCCL would use this device (and port; -1 for a device without ports). */
        boolean selects(String device, int port) {
            boolean hit = false;
            for (Entry e : entries) {
                hit |= e.matches(device, port, exact);
            }
            return hit != exclude;
        }
    }

    /** The worst status among the findings. */
    static Status worst(List<Finding> findings) {
        Status w = Status.INFO;
        for (Finding f : findings) {
            if (f.status().compareTo(w) > 0) {
                w = f.status();
            }
        }
        return w;
    }
}
