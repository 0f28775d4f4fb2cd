package org.nccl4j.tools.run;

import org.nccl4j.tools.cli.Tools.UsageException;
import org.nccl4j.tools.cli.Tools;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The command line of {@link Launcher}, parsed and checked.
 *
 * <pre>
 * nccl4j-run -np N [--share-gpu] [--port P] [--grace SECONDS] &lt;main class | example name&gt; [args...]
 * nccl4j-run -np N [--share-gpu] [--port P] [--grace SECONDS] --cmd [--] &lt;command&gt; [args...]
 * </pre>
 *
 * A name without a dot, such as {@code AllReduce}, means {@code org.nccl4j.examples.AllReduce}, or, where the class
 * path has no such example, the GPU-run harness {@code org.nccl4j.tools.harness.<name>} (such as {@code NcclLogCheck});
 * the examples are looked up by name at run time, never compiled against. Each rank of a Java class runs
 * {@code <java> [JAVA_OPTS] -cp <class path> <main class> [args...]}, with the launcher's own {@code java} and class
 * path; {@code JAVA_OPTS} is split on white space.
 */
final class LaunchOptions {
    /** The package a short example name belongs to. */
    static final String EXAMPLES_PACKAGE = "org.nccl4j.examples";
    /** Where a short name that is not an example is looked for next: the GPU-run harnesses. */
    static final String HARNESS_PACKAGE = "org.nccl4j.tools.harness";
    /** SIGTERM-to-SIGKILL grace period when none is given. */
    static final Duration DEFAULT_GRACE = Duration.ofSeconds(5);


    private final int ranks;
    private final boolean shareGpu;
    private final int port;
    private final Duration grace;
    private final String mainClass;
    private final List<String> command;
    private final boolean help;
    private boolean elastic;
    private boolean version;
    private Nodes nodes;
    private String masterAddr;
    private String ranksNote;

    private LaunchOptions(int ranks, boolean shareGpu, int port, Duration grace, String mainClass, List<String> command,
            boolean help) {
        this.ranks = ranks;
        this.shareGpu = shareGpu;
        this.port = port;
        this.grace = grace;
        this.mainClass = mainClass;
        this.command = List.copyOf(command);
        this.help = help;
    }

    /**
     * Parses the launcher's arguments.
     *
     * @param args the command line
     * @param env the launcher's environment (for {@code JAVA_OPTS})
     * @param java the {@code java} executable of the ranks
     * @param classPath the class path of the ranks
     * @throws UsageException when the command line is wrong
     */
    static LaunchOptions parse(String[] args, Map<String, String> env, Path java, String classPath) {
        Line line = new Line();
        CommandLine cl = new CommandLine(line);
        cl.setStopAtPositional(true);   // what follows the main class or command is the rank's
        Tools.parseArgs(cl, args);
        if (cl.isUsageHelpRequested() || cl.isVersionHelpRequested()) {
            LaunchOptions o = new LaunchOptions(0, false, 0, DEFAULT_GRACE, null, List.of(), true);
            o.version = cl.isVersionHelpRequested();
            return o;
        }
        String[] note = new String[1];
        line.ranks = ranksOf(line.np, line.hosts, env, note);
        if (line.port != null) {
            range("--port", line.port, 1, 65535);
        }
        Duration grace = DEFAULT_GRACE;
        if (line.grace != null) {
            if (!(line.grace >= 0 && line.grace <= 3600)) {
                throw new UsageException("--grace " + line.grace + " is out of range 0..3600 seconds");
            }
            grace = Duration.ofMillis(Math.round(line.grace * 1000));
        }
        List<String> rest = line.rest;
        if (rest.isEmpty()) {
            throw new UsageException(line.cmd ? "--cmd needs a command to run" : "a main class or example name is "
                    + "required");
        }
        int port = line.port == null ? 0 : line.port;
        Nodes nodes = nodesOf(line, env);
        String masterAddr = null;
        if (nodes.nnodes() > 1 && !nodes.rehearsal()) {
            masterAddr = line.masterAddr != null ? line.masterAddr : env.get("MASTER_ADDR");
            if (masterAddr == null || masterAddr.isBlank()) {
                throw new UsageException("--nnodes " + nodes.nnodes() + " needs --master-addr ADDR (or MASTER_ADDR in"
                        + " the environment): the address of node 0, where rank 0 serves the rendezvous");
            }
            if (port == 0) {
                String p = env.get("MASTER_PORT");
                if (p == null || !p.strip().matches("[0-9]{1,5}")) {
                    throw new UsageException("--nnodes " + nodes.nnodes() + " needs --port P (or MASTER_PORT in the"
                            + " environment): the same port on every node" + (p == null ? "" : "; MASTER_PORT=" + p
                            + " is not a port"));
                }
                port = Integer.parseInt(p.strip());
                range("MASTER_PORT", port, 1, 65535);
            }
        }
        if (line.cmd) {
            return new LaunchOptions(line.ranks, line.shareGpu, port, grace, null, rest, false).elastic(line.elastic)
                    .nodes(nodes, masterAddr).ranksNote(note[0]);
        }
        String main = mainClassOf(rest.get(0));
        List<String> command = new ArrayList<>();
        command.add(java.toString());
        command.addAll(splitOptions(env.get("JAVA_OPTS")));
        command.add("-cp");
        command.add(classPath);
        command.add(main);
        command.addAll(rest.subList(1, rest.size()));
        return new LaunchOptions(line.ranks, line.shareGpu, port, grace, main, command, false).elastic(line.elastic)
                .nodes(nodes, masterAddr).ranksNote(note[0]);
    }

    /** The nodes of {@code --nnodes}/{@code --node-rank} or {@code --hosts}/{@code --as}, checked together. */
    private static Nodes nodesOf(Line line, Map<String, String> env) {
        if (line.as != null && line.hosts == null) {
            throw new UsageException("--as " + line.as + " is for --hosts rehearsals only: under srun or mpirun those"
                    + " launchers set their variables themselves; add --hosts H or leave out --as");
        }
        if (line.hosts != null) {
            range("--hosts", line.hosts, 1, 64);
            for (Object[] o : new Object[][] {{"--nnodes", line.nnodes}, {"--node-rank", line.nodeRank},
                {"--master-addr", line.masterAddr}}) {
                if (o[1] != null) {
                    throw new UsageException(o[0] + " cannot be combined with --hosts: --hosts rehearses every node on"
                            + " this machine; leave out " + o[0] + ", or --hosts to run one node of a real job");
                }
            }
            if (line.shareGpu) {
                throw new UsageException("--share-gpu cannot be combined with --hosts: each rehearsed host gets GPUs of"
                        + " its own (--hosts H -np G needs H x G GPUs); leave out --share-gpu, or --hosts");
            }
            Nodes.Style style = Nodes.Style.TORCHRUN;
            if (line.as != null) {
                style = Nodes.Style.parse(line.as);
                if (style == null) {
                    throw new UsageException("--as " + line.as + " is not one of torchrun, srun, mpirun: the launcher"
                            + " whose variables each rank gets");
                }
            }
            if ((long) line.hosts * line.ranks > 4096) {
                throw new UsageException("--hosts " + line.hosts + " -np " + line.ranks + " is more than 4096 ranks");
            }
            return Nodes.rehearsal(line.hosts, line.ranks, style);
        }
        int nnodes = line.nnodes == null ? 1 : line.nnodes;
        range("--nnodes", nnodes, 1, 4096);
        if (line.nodeRank == null) {
            if (nnodes > 1) {
                throw new UsageException("--nnodes " + nnodes + " needs --node-rank K (0.." + (nnodes - 1) + "): which"
                        + " node this is, for example $JOB_COMPLETION_INDEX, $SLURM_NODEID or $PET_NODE_RANK");
            }
            if (line.masterAddr != null) {
                throw new UsageException("--master-addr is for jobs of several nodes: add --nnodes N --node-rank K, or"
                        + " leave it out (one node: MASTER_ADDR=127.0.0.1)");
            }
            return Nodes.single(line.ranks);
        }
        range("--node-rank", line.nodeRank, 0, nnodes - 1);
        if ((long) nnodes * line.ranks > 1 << 20) {
            throw new UsageException("--nnodes " + nnodes + " -np " + line.ranks + " is more ranks than nccl4j-run"
                    + " takes (2^20)");
        }
        String ws = env.get("WORLD_SIZE");
        if (nnodes > 1 && ws != null && !ws.strip().equals(Integer.toString(nnodes * line.ranks))) {
            throw new UsageException("WORLD_SIZE=" + ws + " in the environment, but --nnodes " + nnodes + " -np "
                    + line.ranks + " makes " + nnodes * line.ranks + " ranks: fix the job's WORLD_SIZE or -np"
                    + " (ranks per node, one per GPU)");
        }
        return Nodes.multiNode(nnodes, line.nodeRank, line.ranks);
    }

    /**
     * The ranks per node of {@code -np}: a number, or {@code auto} (or {@code gpu}) for one per GPU this launcher
     * sees ({@link GpuSharing#count}: {@code CUDA_VISIBLE_DEVICES}, else the driver's), divided among the hosts of a
     * {@code --hosts} rehearsal; without {@code -np}, {@code PET_NPROC_PER_NODE} (Kubeflow Trainer's
     * {@code numProcPerNode}, {@code auto} by default) read the same way.
     */
    private static int ranksOf(String np, Integer hosts, Map<String, String> env, String[] note) {
        String given = np;
        String name = "-np";
        if (given == null) {
            String pet = env.get("PET_NPROC_PER_NODE");
            if (pet == null || pet.isBlank()) {
                throw new UsageException("-np N is required: how many ranks to start (or -np auto: one per visible"
                        + " GPU)");
            }
            given = pet;
            name = "PET_NPROC_PER_NODE=";
        }
        String v = given.strip();
        String said = name.equals("-np") ? "-np " + v : name + v + " (no -np given)";
        if (v.matches("[0-9]{1,9}")) {
            int n = Integer.parseInt(v);
            if (n < 1 || n > 4096) {
                throw new UsageException(said + " is out of range 1..4096");
            }
            if (np == null) {
                note[0] = said + ": " + n + " rank" + (n == 1 ? "" : "s") + " on this node";
            }
            return n;
        }
        String lower = v.toLowerCase(java.util.Locale.ROOT);
        if (lower.equals("cpu")) {
            throw new UsageException(said + " asks for one rank per CPU, and nccl4j runs one rank per GPU: use -np"
                    + " auto (one per visible GPU) or -np N; under Kubeflow Trainer leave numProcPerNode auto or give"
                    + " it a number");
        }
        if (!lower.equals("auto") && !lower.equals("gpu")) {
            throw new UsageException(said + " is not a number, auto or gpu: use -np N (ranks on this node, one per"
                    + " GPU) or -np auto (one per visible GPU)");
        }
        GpuSharing.Count c = GpuSharing.count(env, Path.of("/proc"));
        int h = hosts == null || hosts < 1 ? 1 : hosts;
        if (c.gpus() / h < 1) {
            throw new UsageException(said + " means one rank per visible GPU, and " + (c.gpus() == 0 ? "no GPU"
                    : "only " + c.gpus() + " GPU" + (c.gpus() == 1 ? "" : "s") + " for " + h + " hosts") + " is"
                    + " visible here (" + c.source() + "): run on a node with GPUs (under Kubernetes: a nvidia.com/gpu"
                    + " limit), or give -np N");
        }
        int n = c.gpus() / h;
        note[0] = said + ": " + n + " rank" + (n == 1 ? "" : "s") + (h > 1 ? " on each of " + h + " hosts" : "")
                + ", one per visible GPU (" + c.gpus() + " found: " + c.source() + ")";
        return n;
    }

    private static void range(String option, int v, int min, int max) {
        if (v < min || v > max) {
            throw new UsageException(option + " " + v + " is out of range " + min + ".." + max);
        }
    }

    /** The usage text ({@code --help}), from the options' declarations. */
    static String usage() {
        return new CommandLine(new Line()).getUsageMessage();
    }

    /** The version text ({@code --version}). */
    static String version() {
        return Tools.versionText(new Line());
    }

    /** The command line as picocli reads it; {@link #parse} checks and completes it. */
    @Command(name = "nccl4j-run", mixinStandardHelpOptions = true, versionProvider = Tools.Version.class,
            sortOptions = false, usageHelpWidth = 110,
            customSynopsis = {
                "nccl4j-run -np N [--share-gpu] [--elastic] [--port P] [--grace SECONDS] <main class | example name> "
                        + "[args...]",
                "       nccl4j-run -np N [--share-gpu] [--elastic] [--port P] [--grace SECONDS] --cmd [--] <command> "
                        + "[args...]",
                "       nccl4j-run --nnodes N --node-rank K --master-addr ADDR --port P -np G [...] "
                        + "<main class | --cmd ...>",
                "       nccl4j-run --hosts H [--as torchrun|srun|mpirun] -np G [...] <main class | --cmd ...>"},
            description = "Starts N ranks of a program on this machine, one per GPU, and stops them all when one "
                    + "fails (unless --elastic).",
            footer = {"", "An example name without a dot (AllReduce, DdpSimple, ZeroShards, ReadmeSum) means "
                    + EXAMPLES_PACKAGE + ".<name>. Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,",
                "MASTER_ADDR=127.0.0.1 and MASTER_PORT on top of this environment; JAVA_OPTS go to each rank's JVM.",
                "Exit status: the first failed rank's, 0 when all succeed; 2 for a usage error."})
    static final class Line {
        @Option(names = {"-np", "-n", "--np"}, paramLabel = "N",
                description = "Number of ranks (processes) to start on this machine; at most one per GPU. auto (or "
                        + "gpu): one per visible GPU (CUDA_VISIBLE_DEVICES, else the driver's). Default: "
                        + "PET_NPROC_PER_NODE, as Kubeflow Trainer sets it (numProcPerNode, auto unless given).")
        String np;
        /** {@link #np} as a number of ranks, worked out by {@link LaunchOptions#parse}. */
        int ranks;
        @Option(names = "--share-gpu", description = "Allow more ranks than GPUs (development, CI, tests): rank r on "
                + "device r mod G, each with its own NCCL_HOSTID and NCCL_SOCKET_IFNAME=lo; sockets, not NVLink speed.")
        boolean shareGpu;
        @Option(names = "--elastic", description = "A rank that fails is reported and the others go on (for jobs that "
                + "shrink their communicator); exit 0 when a rank ran to the end with 0. Without it the first failure "
                + "stops every rank.")
        boolean elastic;
        @Option(names = "--port", paramLabel = "P", description = "MASTER_PORT for the ranks (default: a free port; "
                + "with --nnodes: MASTER_PORT of the environment).")
        Integer port;
        @Option(names = "--nnodes", paramLabel = "N", description = "The job has N nodes, each running nccl4j-run with "
                + "the same -np, --port, --master-addr and NCCL4J_JOB_SECRET (default 1).")
        Integer nnodes;
        @Option(names = "--node-rank", paramLabel = "K", description = "With --nnodes: this node is K (0..N-1); its "
                + "ranks are K x np .. K x np + np - 1.")
        Integer nodeRank;
        @Option(names = "--master-addr", paramLabel = "ADDR", description = "With --nnodes: node 0's address "
                + "(default: MASTER_ADDR of the environment).")
        String masterAddr;
        @Option(names = "--hosts", paramLabel = "H", description = "Rehearse a job of H hosts on this machine, -np "
                + "ranks (GPUs) each: each host's ranks get their own NCCL_HOSTID, its GPUs in CUDA_VISIBLE_DEVICES, "
                + "NCCL_SOCKET_IFNAME=lo and NCCL_NVLS_ENABLE=0.")
        Integer hosts;
        @Option(names = "--as", paramLabel = "LAUNCHER", description = "With --hosts: the variables each rank gets are "
                + "those torchrun (default), srun or mpirun set across hosts.")
        String as;
        @Option(names = "--grace", paramLabel = "SECONDS", description = "How long ranks get between SIGTERM and "
                + "SIGKILL when stopped (default 5).")
        Double grace;
        @Option(names = "--cmd", description = "Run <command> as each rank instead of a Java main class.")
        boolean cmd;
        @Parameters(paramLabel = "ARGS", description = "The main class or example name (or, with --cmd, the command) "
                + "and its arguments.")
        List<String> rest = new ArrayList<>();
    }

    private LaunchOptions nodes(Nodes n, String addr) {
        this.nodes = n;
        this.masterAddr = addr;
        return this;
    }

    /** @return the nodes of the job and which of them this launcher starts */
    Nodes nodes() {
        return nodes != null ? nodes : Nodes.single(ranks);
    }

    /** @return node 0's address given by {@code --master-addr} or MASTER_ADDR, or null on one machine */
    String masterAddr() {
        return masterAddr;
    }

    private LaunchOptions ranksNote(String note) {
        this.ranksNote = note;
        return this;
    }

    /** @return how {@code -np auto} or {@code PET_NPROC_PER_NODE} became the number of ranks, or null for -np N */
    String ranksNote() {
        return ranksNote;
    }

    private LaunchOptions elastic(boolean on) {
        this.elastic = on;
        return this;
    }

    /** @return whether a failed rank leaves the others running ({@code --elastic}) */
    boolean elastic() {
        return elastic;
    }

    /**
     * {@code AllReduce} becomes {@code org.nccl4j.examples.AllReduce}, and a harness's name ({@code NcclLogCheck})
     * {@code org.nccl4j.tools.harness.NcclLogCheck} where no example has it; a name with a dot is kept.
     */
    static String mainClassOf(String name) {
        if (name.indexOf('.') >= 0) {
            return name;
        }
        String example = EXAMPLES_PACKAGE + "." + name;
        String harness = HARNESS_PACKAGE + "." + name;
        return !onClassPath(example) && onClassPath(harness) ? harness : example;
    }

    private static boolean onClassPath(String className) {
        try {
            Class.forName(className, false, LaunchOptions.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** Splits {@code JAVA_OPTS} on white space, as the shell scripts of this project do. */
    static List<String> splitOptions(String javaOpts) {
        if (javaOpts == null || javaOpts.isBlank()) {
            return List.of();
        }
        return List.of(javaOpts.strip().split("\\s+"));
    }




    /** @return the number of ranks */
    int ranks() {
        return ranks;
    }

    /** @return whether {@code --share-gpu} was given: more ranks than GPUs are allowed */
    boolean shareGpu() {
        return shareGpu;
    }

    /** @return the MASTER_PORT to use, or 0 to pick a free one */
    int port() {
        return port;
    }

    /** @return the time between SIGTERM and SIGKILL when ranks are stopped */
    Duration grace() {
        return grace;
    }

    /** @return the Java main class, or null when an arbitrary command is run */
    String mainClass() {
        return mainClass;
    }

    /** @return the command each rank runs */
    List<String> command() {
        return command;
    }

    /** @return whether only the usage (or, with {@link #versionAsked()}, the version) was asked for */
    boolean help() {
        return help;
    }

    /** @return whether {@code --version} was asked for */
    boolean versionAsked() {
        return version;
    }
}
