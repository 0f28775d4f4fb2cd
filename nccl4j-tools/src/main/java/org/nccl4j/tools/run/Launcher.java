package org.nccl4j.tools.run;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.nccl4j.launch.JobSecret;
import org.nccl4j.tools.cli.Tools;

/**
 * A local launcher: starts N processes on this machine as the ranks of one job, as {@code torchrun} does on
 * one node, and watches them. Run it through {@code scripts/nccl4j-run}:
 *
 * <pre>
 * scripts/nccl4j-run -np 2 DdpSimple                      # org.nccl4j.examples.DdpSimple, one JVM per rank
 * scripts/nccl4j-run -np 4 com.example.Train --epochs 3   # any main class on the class path
 * scripts/nccl4j-run -np 2 --cmd -- sh -c 'echo $RANK'    # any command
 * </pre>
 *
 * <h2>What each rank gets</h2>
 * The launcher's whole environment (never cleared: {@code NCCL_*}, {@code CUDA_VISIBLE_DEVICES},
 * {@code LD_LIBRARY_PATH} and the rest reach every rank), plus {@code RANK}, {@code WORLD_SIZE},
 * {@code LOCAL_RANK} (= {@code RANK}), {@code LOCAL_WORLD_SIZE} (= {@code WORLD_SIZE}),
 * {@code MASTER_ADDR=127.0.0.1} and {@code MASTER_PORT} (a free port, or {@code --port}): what
 * {@code Communicator.fromEnvironment()} needs for its TCP rendezvous. {@code NCCL4J_RUN_ID} (the run id of
 * the file rendezvous) is set to an id of this launch unless already set. When the environment holds another
 * launcher's rank variables ({@code OMPI_COMM_WORLD_RANK}, {@code PMIX_RANK}, {@code PMI_RANK},
 * {@code SLURM_PROCID}, {@code PET_NODE_RANK}, {@code JOB_COMPLETION_INDEX}), say because nccl4j-run itself runs
 * inside {@code srun} or a Kubernetes pod, {@code TORCHELASTIC_RUN_ID}
 * is set too (unless already set), which makes {@code LaunchInfo} prefer this launcher's variables.
 * {@code NCCL4J_JOB_SECRET} is set to a random secret made for this launch ({@link JobSecret#random()}), which
 * authenticates the job's rendezvous and liveness connections, unless the user set {@code NCCL4J_JOB_SECRET} or
 * {@code NCCL4J_JOB_SECRET_FILE} (those reach every rank as they are). The launcher never prints the secret.
 * A Java rank runs {@code <java> [JAVA_OPTS] -cp <class path> <main class> [args]} with the launcher's own
 * {@code java} and class path. Its stdin is {@code /dev/null}.
 *
 * <h2>Several nodes, and rehearsing them</h2>
 * With {@code --nnodes N --node-rank K} (and node 0's {@code --master-addr} and {@code --port}, or MASTER_ADDR and
 * MASTER_PORT in the environment) the launcher is one node's agent of a job across N nodes, as torchrun is: it starts
 * ranks K x np .. K x np + np - 1 of N x np, with {@code LOCAL_RANK} 0 .. np - 1, {@code GROUP_RANK=K} and the same
 * MASTER_ADDR and MASTER_PORT as every other node; it needs {@code NCCL4J_JOB_SECRET} (or its file) set, the same on
 * every node; {@code TORCHELASTIC_RUN_ID} and {@code NCCL4J_RUN_ID} (unless set) are made of the master's address and
 * port, so that they agree across nodes. With {@code --hosts H} it starts every node of such a job on this machine,
 * each with its own {@code NCCL_HOSTID} and GPUs, and with {@code --as srun} or {@code --as mpirun} the variables of
 * that launcher instead of torchrun's: a rehearsal of a job across hosts on one multi-GPU machine. {@link Nodes} has
 * the details.
 *
 * <h2>GPUs</h2>
 * Each rank needs a GPU of its own: {@code -np} above the number of GPUs found is refused. With
 * {@code --share-gpu} several ranks share a GPU, for development, CI and tests: rank r gets
 * {@code NCCL4J_DEVICE=r mod G}, {@code NCCL_HOSTID=nccl4j-host<r>} and {@code NCCL_SOCKET_IFNAME=lo} (each unless
 * already set), so that NCCL treats the ranks as hosts of their own that talk over sockets. {@link GpuSharing} has
 * the details and how GPUs are counted. {@code -np auto} (or {@code gpu}) starts one rank per GPU so counted, and
 * without {@code -np} the launcher reads {@code PET_NPROC_PER_NODE} (a number, {@code auto} or {@code gpu}), as
 * Kubeflow Trainer sets it in each pod of a TrainJob.
 *
 * <h2>Output</h2>
 * Every line a rank writes to stdout or stderr goes to the launcher's stdout or stderr prefixed with
 * {@code [r] }. The launcher's own messages start with {@code nccl4j-run: } and go to stderr.
 *
 * <h2>Failures and stopping</h2>
 * When a rank exits with a non-zero status or is killed by a signal, the launcher names it and its status
 * or signal, stops the other ranks and exits with that rank's status. When the launcher gets SIGINT
 * (Ctrl-C), SIGTERM or SIGHUP, a shutdown hook stops every rank; the JVM then exits with 128 + the signal.
 * Stopping means SIGTERM to each rank and to every process it started, then SIGKILL to those still alive
 * after the grace period ({@code --grace}, default 5 s). When every rank has exited, whatever they started
 * that is still alive is stopped the same way. The processes a rank started are found two ways: its
 * descendants, sampled every 200 ms while it runs; and, on Linux, every process whose environment holds this
 * launch's {@code NCCL4J_RUN_TAG} (set in every rank's environment and inherited by what it starts, as
 * Jenkins marks a build's processes), which also finds processes orphaned before a sample saw them. Only a
 * process that both escaped the samples and dropped that variable, or SIGKILL to the launcher itself (which
 * no process can catch), escapes.
 *
 * <p>Java reports a process killed by signal n as exit status 128 + n; the launcher reports such a status as
 * that signal (a process that itself exits with 129..192 is reported the same way).
 *
 * <p>With {@code --elastic} a rank that fails is reported and the others go on (a job that shrinks its communicator
 * carries on without it); the status is then 0 when some rank ran to the end with 0.
 *
 * <p>Exit status: 0 when every rank exited with 0; the first failed rank's status otherwise; 2 for a bad
 * command line, an unknown main class or more ranks than the GPUs allow; 127 when a rank could not be started.
 */
public final class Launcher {
    /** What rank 0's rendezvous is reached at: every rank runs on this machine. */
    static final String MASTER_ADDR = "127.0.0.1";
    /** How often the processes started by ranks are sampled. */
    private static final long SAMPLE_MILLIS = 200;
    /** How long to wait for SIGKILLed processes to go, and for output to drain. */
    private static final Duration AFTER_KILL = Duration.ofSeconds(5);
    /** The variable, set in every rank's environment, that marks the processes of one launch. */
    static final String TAG_VARIABLE = "NCCL4J_RUN_TAG";
    private static final String[] FOREIGN_LAUNCHER_VARIABLES = {
        "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "PET_NODE_RANK", "JOB_COMPLETION_INDEX"};

    private final LaunchOptions options;
    private final GpuSharing gpus;
    private final PrintStream out;
    private final PrintStream err;
    private final List<Rank> ranks = new ArrayList<>();
    private final Object stopLock = new Object();
    private final String tag;
    private volatile boolean interrupted;

    /** One started rank. */
    private static final class Rank {
        final int rank;
        final Process process;
        final ProcessHandle handle;
        final Set<ProcessHandle> started = ConcurrentHashMap.newKeySet();
        final List<Thread> pumps = new ArrayList<>();
        volatile boolean stopRequested;

        Rank(int rank, Process process) {
            this.rank = rank;
            this.process = process;
            this.handle = process.toHandle();
        }

        /** Records the processes this rank has started (children, grandchildren, ...). */
        void sample() {
            if (process.isAlive()) {
                try {
                    handle.descendants().forEach(started::add);
                } catch (RuntimeException e) {
                    // /proc changed under us; the next sample will do
                }
            }
        }
    }

    Launcher(LaunchOptions options, GpuSharing gpus, PrintStream out, PrintStream err) {
        this.options = options;
        this.gpus = gpus;
        this.out = out;
        this.err = err;
        this.tag = ProcessHandle.current().pid() + "-" + System.currentTimeMillis() + "-"
                + Long.toHexString(new java.security.SecureRandom().nextLong());
    }

    /**
     * Runs the launcher; see the class documentation. Calls {@link System#exit} with the status.
     *
     * @param args the command line
     */
    public static void main(String[] args) {
        System.exit(run(args, System.getenv(), System.out, System.err));
    }

    static int run(String[] args, Map<String, String> env, PrintStream out, PrintStream err) {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        String classPath = System.getProperty("java.class.path");
        LaunchOptions options;
        try {
            options = LaunchOptions.parse(args, env, java, classPath);
        } catch (Tools.UsageException e) {
            Tools.refuse(new PrintWriter(err, true), "nccl4j-run", e.getMessage());
            return Tools.USAGE;
        }
        if (options.help()) {
            out.print(options.versionAsked() ? LaunchOptions.version() + "\n" : LaunchOptions.usage());
            return 0;
        }
        if (options.mainClass() != null) {
            try {
                Class.forName(options.mainClass(), false, Launcher.class.getClassLoader());
            } catch (ClassNotFoundException | LinkageError e) {
                err.println("nccl4j-run: no class " + options.mainClass() + " on the class path (examples: AllReduce,"
                        + " DdpSimple, ZeroShards, ReadmeSum; scripts/nccl4j-run appends CLASSPATH for your own)");
                return 2;
            }
        }
        Nodes nodes = options.nodes();
        if (nodes.nnodes() > 1 && !nodes.rehearsal() && secretFor(env) != null) {
            err.println("nccl4j-run: --nnodes " + nodes.nnodes() + " needs NCCL4J_JOB_SECRET (or"
                    + " NCCL4J_JOB_SECRET_FILE) set to the same secret on every node: a secret made here would differ"
                    + " from the other nodes' (for example: a Kubernetes Secret as an environment variable, or an"
                    + " sbatch script's export)");
            return 2;
        }
        GpuSharing gpus;
        try {
            GpuSharing.Count count = GpuSharing.count(env, Path.of("/proc"));
            if (nodes.rehearsal()) {
                gpus = GpuSharing.plan(options.ranks(), false, new GpuSharing.Count(0, "--hosts"), env);
                nodes.planDevices(env, count).forEach(n -> err.println("nccl4j-run: " + n));
            } else {
                gpus = GpuSharing.plan(options.ranks(), options.shareGpu(), count, env);
            }
        } catch (GpuSharing.Refusal e) {
            err.println("nccl4j-run: " + e.getMessage());
            return 2;
        }
        if (options.ranksNote() != null) {
            err.println("nccl4j-run: " + options.ranksNote());
        }
        gpus.notices().forEach(n -> err.println("nccl4j-run: " + n));
        return new Launcher(options, gpus, out, err).run(env);
    }

    /**
     * Starts the ranks, waits for them and stops them all when one fails or the launcher is interrupted.
     *
     * @param env the launcher's environment, to see whether another launcher's variables are present
     * @return the exit status of the launcher
     */
    int run(Map<String, String> env) {
        int port;
        try {
            port = options.port() != 0 ? options.port() : freePort();
        } catch (IOException e) {
            err.println("nccl4j-run: cannot find a free port for MASTER_PORT: " + e);
            return 2;
        }
        Nodes nodes = options.nodes();
        String addr = options.masterAddr() != null ? options.masterAddr() : MASTER_ADDR;
        // the nodes of one job must agree on the run id: one made of what they share
        String runId = nodes.multiNode() ? "nccl4j-run-" + addr + "-" + port : "nccl4j-run-" + tag;
        boolean foreign = false;
        for (String v : FOREIGN_LAUNCHER_VARIABLES) {
            foreign |= env.containsKey(v);
        }
        boolean torchrun = nodes.style() == Nodes.Style.TORCHRUN;
        boolean setElasticId = torchrun && (nodes.rehearsal()
                || (foreign || nodes.multiNode()) && !env.containsKey("TORCHELASTIC_RUN_ID"));
        if (setElasticId && foreign && !nodes.rehearsal()) {
            err.println("nccl4j-run: the environment holds another launcher's rank variables; setting"
                    + " TORCHELASTIC_RUN_ID=" + runId + " so that the ranks use RANK and WORLD_SIZE");
        }
        Thread hook = new Thread(this::onSignal, "nccl4j-run shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            return runRanks(nodes, addr, port, runId, setElasticId, !env.containsKey("NCCL4J_RUN_ID"), secretFor(env));
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // the JVM is shutting down: the hook is running or has run
            }
        }
    }

    /**
     * The secret to give every rank as {@code NCCL4J_JOB_SECRET}: a random one for this launch, or null when the user
     * set {@code NCCL4J_JOB_SECRET} or {@code NCCL4J_JOB_SECRET_FILE} (the ranks inherit those). Never printed.
     */
    static String secretFor(Map<String, String> env) {
        for (String v : new String[] {JobSecret.VARIABLE, JobSecret.FILE_VARIABLE}) {
            String value = env.get(v);
            if (value != null && !value.isBlank()) {
                return null;
            }
        }
        return JobSecret.random();
    }

    private int runRanks(Nodes nodes, String addr, int port, String runId, boolean setElasticId, boolean setRunId,
            String secret) {
        int n = nodes.ranksHere();
        BlockingQueue<Rank> exited = new LinkedBlockingQueue<>();
        try {
            for (int i = 0; i < n; i++) {
                int r = nodes.rank(i);
                ProcessBuilder pb = new ProcessBuilder(options.command());
                Map<String, String> e = pb.environment(); // a copy of the launcher's, added to, never cleared
                nodes.addTo(i, e, addr, port);
                e.put(TAG_VARIABLE, tag);
                if (secret != null) {
                    e.put(JobSecret.VARIABLE, secret);
                }
                if (setRunId) {
                    e.put("NCCL4J_RUN_ID", runId);
                }
                if (setElasticId) {
                    e.put("TORCHELASTIC_RUN_ID", runId);
                }
                gpus.addTo(i, e);
                pb.redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
                Rank rank;
                synchronized (stopLock) {
                    if (interrupted) {
                        return 130;
                    }
                    Process p;
                    try {
                        p = pb.start();
                    } catch (IOException ex) {
                        err.println("nccl4j-run: cannot start rank " + r + " (" + String.join(" ", options.command())
                                + "): " + ex.getMessage());
                        return 127;
                    }
                    rank = new Rank(r, p);
                    ranks.add(rank);
                }
                rank.pumps.add(pump(rank, rank.process.getInputStream(), out, "stdout"));
                rank.pumps.add(pump(rank, rank.process.getErrorStream(), err, "stderr"));
                rank.process.onExit().thenRun(() -> exited.add(rank));
            }
            return watch(exited);
        } finally {
            // every path: nothing this launcher started outlives it
            stopAll();
            drain();
        }
    }

    /** Waits until every rank has exited, stopping the others at the first failure. */
    private int watch(BlockingQueue<Rank> exited) {
        int remaining = ranks.size();
        List<Rank> failed = new ArrayList<>();
        while (remaining > 0) {
            Rank r;
            try {
                r = exited.poll(SAMPLE_MILLIS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            if (r == null) {
                ranks.forEach(Rank::sample);
                continue;
            }
            remaining--;
            int status = r.process.exitValue();
            if (status == 0 || r.stopRequested || interrupted) {
                continue;
            }
            failed.add(r);
            if (options.elastic()) {
                long alive = ranks.stream().filter(o -> o != r && o.process.isAlive()).count();
                err.println("nccl4j-run: rank " + r.rank + " failed: " + describe(status) + "; --elastic: the other "
                        + alive + " rank" + (alive == 1 ? "" : "s") + " go on");
            } else if (failed.size() == 1) {
                List<Rank> others = ranks.stream().filter(o -> o != r && o.process.isAlive())
                        .collect(Collectors.toList());
                err.println("nccl4j-run: rank " + r.rank + " failed: " + describe(status)
                        + (others.isEmpty() ? "" : "; stopping rank" + (others.size() > 1 ? "s " : " ")
                        + others.stream().map(o -> Integer.toString(o.rank)).collect(Collectors.joining(", "))
                        + " (SIGTERM, then SIGKILL after " + seconds(options.grace()) + ")"));
                stopAll();
            } else {
                err.println("nccl4j-run: rank " + r.rank + " failed too: " + describe(status));
            }
        }
        if (interrupted) {
            return 130;
        }
        if (failed.isEmpty()) {
            return 0;
        }
        Rank first = failed.get(0);
        if (options.elastic() && ranks.stream().anyMatch(o -> o.process.exitValue() == 0)) {
            err.println("nccl4j-run: --elastic: rank" + (failed.size() > 1 ? "s " : " ") + failed.stream()
                    .map(o -> Integer.toString(o.rank)).collect(Collectors.joining(", ")) + " failed; the others ran to"
                    + " the end");
            return 0;
        }
        int status = first.process.exitValue();
        err.println("nccl4j-run: " + (failed.size() == 1 ? "rank " + first.rank + " failed" : failed.size()
                + " ranks failed, first rank " + first.rank) + " (" + describe(status) + ")");
        return status;
    }

    /** The shutdown hook: SIGINT, SIGTERM or SIGHUP to the launcher (or System.exit while ranks run). */
    private void onSignal() {
        interrupted = true;
        long alive;
        synchronized (stopLock) {
            alive = ranks.stream().filter(r -> r.process.isAlive()).count();
        }
        if (alive > 0) {
            err.println("nccl4j-run: interrupted; stopping " + alive + " rank" + (alive > 1 ? "s" : ""));
        }
        stopAll();
        drain();
    }

    /**
     * Stops every rank still running and every process the ranks started that is still alive: SIGTERM, then
     * SIGKILL after the grace period. Returns once they are gone (or {@link #AFTER_KILL} after SIGKILL).
     */
    private void stopAll() {
        synchronized (stopLock) {
            Set<ProcessHandle> targets = new LinkedHashSet<>();
            for (Rank r : ranks) {
                r.sample();
                if (r.process.isAlive()) {
                    r.stopRequested = true;
                    targets.add(r.handle);
                }
                targets.addAll(r.started);
            }
            targets.addAll(tagged());
            targets.removeIf(h -> !running(h));
            if (targets.isEmpty()) {
                return;
            }
            targets.forEach(ProcessHandle::destroy);
            if (!awaitGone(targets, options.grace())) {
                for (Rank r : ranks) {
                    r.sample(); // what a rank started while being stopped
                    targets.addAll(r.started);
                }
                targets.addAll(tagged());
                List<ProcessHandle> left = targets.stream().filter(Launcher::running).collect(Collectors.toList());
                err.println("nccl4j-run: " + left.size() + " process" + (left.size() > 1 ? "es" : "")
                        + " still alive " + seconds(options.grace()) + " after SIGTERM; sending SIGKILL");
                left.forEach(ProcessHandle::destroyForcibly);
                if (!awaitGone(left, AFTER_KILL)) {
                    err.println("nccl4j-run: still alive after SIGKILL: " + left.stream().filter(Launcher::running)
                            .map(h -> Long.toString(h.pid())).collect(Collectors.joining(", ")));
                }
            }
        }
    }

    /**
     * The live processes whose environment holds {@code NCCL4J_RUN_TAG=<this launch's tag>}, read from
     * {@code /proc/<pid>/environ} (readable for this user's processes); empty where there is no /proc.
     */
    private List<ProcessHandle> tagged() {
        byte[] entry = ("\0" + TAG_VARIABLE + "=" + tag + "\0").getBytes(StandardCharsets.UTF_8);
        List<ProcessHandle> found = new ArrayList<>();
        long self = ProcessHandle.current().pid();
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path p : procs) {
                long pid;
                try {
                    pid = Long.parseLong(p.getFileName().toString());
                } catch (NumberFormatException e) {
                    continue;
                }
                if (pid == self) {
                    continue;
                }
                byte[] env;
                try {
                    env = Files.readAllBytes(p.resolve("environ"));
                } catch (IOException | SecurityException e) {
                    continue; // gone, or another user's
                }
                if (contains(env, entry)) {
                    ProcessHandle.of(pid).ifPresent(found::add);
                }
            }
        } catch (IOException | RuntimeException e) {
            // no /proc: the sampled descendants must do
        }
        return found;
    }

    /** Whether {@code env} (NUL-separated entries) holds {@code entry} (an entry framed by NULs). */
    static boolean contains(byte[] env, byte[] entry) {
        // env has no NUL before its first entry: compare that one against entry without its leading NUL
        outer:
        for (int i = -1; i + entry.length - 1 <= env.length; i++) {
            for (int j = 0; j < entry.length; j++) {
                int at = i + j;
                byte b = at < 0 || at == env.length ? 0 : env[at];
                if (b != entry[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    /**
     * Whether {@code h} is running: alive and, where /proc tells, not a zombie. Java counts a zombie (exited,
     * not yet reaped by its parent) as alive; an orphan's zombie waits for PID 1, which in some containers
     * reaps only now and then.
     */
    static boolean running(ProcessHandle h) {
        if (!h.isAlive()) {
            return false;
        }
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(h.pid()), "stat"),
                    StandardCharsets.ISO_8859_1);
            int close = stat.lastIndexOf(')'); // the command name, in parentheses, may itself hold any character
            char state = close >= 0 && close + 2 < stat.length() ? stat.charAt(close + 2) : '?';
            return state != 'Z' && state != 'X';
        } catch (IOException | RuntimeException e) {
            return h.isAlive(); // no /proc, or it just went
        }
    }

    private static boolean awaitGone(Iterable<ProcessHandle> handles, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            boolean any = false;
            for (ProcessHandle h : handles) {
                any |= running(h);
            }
            if (!any) {
                return true;
            }
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
    }

    /** Waits for the ranks' output to be copied out (bounded: a stray process may hold a pipe open). */
    private void drain() {
        List<Thread> pumps;
        synchronized (stopLock) {
            pumps = ranks.stream().flatMap(r -> r.pumps.stream()).collect(Collectors.toList());
        }
        long deadline = System.nanoTime() + AFTER_KILL.toNanos();
        for (Thread t : pumps) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            try {
                if (left > 0) {
                    t.join(left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static Thread pump(Rank rank, java.io.InputStream in, PrintStream target, String what) {
        Thread t = new Thread(new LinePrefixer(in, target, rank.rank), "nccl4j-run rank " + rank.rank + " " + what);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static String seconds(Duration d) {
        long ms = d.toMillis();
        return ms % 1000 == 0 ? ms / 1000 + " s" : ms / 1000.0 + " s";
    }

    /**
     * Says what an exit status means: {@code exit status 3}, or for 129..192 (how Java reports a process
     * killed by a signal) {@code killed by signal 9 (SIGKILL, exit status 137)}.
     */
    static String describe(int status) {
        if (status > 128 && status <= 128 + 64) {
            int sig = status - 128;
            String name = signalName(sig);
            return "killed by signal " + sig + " (" + (name != null ? name + ", " : "") + "exit status " + status + ")";
        }
        return "exit status " + status;
    }

    /** Linux's names of the classic signals, or null. */
    static String signalName(int sig) {
        String[] names = {null, "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE",
            "SIGKILL", "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM", "SIGSTKFLT", "SIGCHLD",
            "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGXCPU", "SIGXFSZ", "SIGVTALRM",
            "SIGPROF", "SIGWINCH", "SIGIO", "SIGPWR", "SIGSYS"};
        return sig > 0 && sig < names.length ? names[sig] : null;
    }
}
