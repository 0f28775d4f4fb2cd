package org.nccl4j.examples.launch;

import org.nccl4j.examples.cli.Tools;
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
 * A name without a dot, such as {@code AllReduce}, means {@code org.nccl4j.examples.AllReduce}. Each rank of a
 * Java class runs {@code <java> [JAVA_OPTS] -cp <class path> <main class> [args...]}, with the launcher's own
 * {@code java} and class path; {@code JAVA_OPTS} is split on white space.
 */
final class LaunchOptions {
    /** The package a short example name belongs to. */
    static final String EXAMPLES_PACKAGE = "org.nccl4j.examples";
    /** SIGTERM-to-SIGKILL grace period when none is given. */
    static final Duration DEFAULT_GRACE = Duration.ofSeconds(5);


    /** A bad command line; the message says what is wrong. */
    static final class UsageException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    private final int ranks;
    private final boolean shareGpu;
    private final int port;
    private final Duration grace;
    private final String mainClass;
    private final List<String> command;
    private final boolean help;
    private boolean elastic;
    private boolean version;

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
        try {
            cl.parseArgs(args);
        } catch (CommandLine.ParameterException e) {
            throw new UsageException(e.getMessage());
        }
        if (cl.isUsageHelpRequested() || cl.isVersionHelpRequested()) {
            LaunchOptions o = new LaunchOptions(0, false, 0, DEFAULT_GRACE, null, List.of(), true);
            o.version = cl.isVersionHelpRequested();
            return o;
        }
        if (line.ranks == null) {
            throw new UsageException("-np N is required: how many ranks to start");
        }
        range("-np", line.ranks, 1, 4096);
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
        if (line.cmd) {
            return new LaunchOptions(line.ranks, line.shareGpu, port, grace, null, rest, false).elastic(line.elastic);
        }
        String main = mainClassOf(rest.get(0));
        List<String> command = new ArrayList<>();
        command.add(java.toString());
        command.addAll(splitOptions(env.get("JAVA_OPTS")));
        command.add("-cp");
        command.add(classPath);
        command.add(main);
        command.addAll(rest.subList(1, rest.size()));
        return new LaunchOptions(line.ranks, line.shareGpu, port, grace, main, command, false).elastic(line.elastic);
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
        java.io.StringWriter w = new java.io.StringWriter();
        new CommandLine(new Line()).printVersionHelp(new java.io.PrintWriter(w, true));
        return w.toString().stripTrailing();
    }

    /** The command line as picocli reads it; {@link #parse} checks and completes it. */
    @Command(name = "nccl4j-run", mixinStandardHelpOptions = true, versionProvider = Tools.Version.class,
            sortOptions = false, usageHelpWidth = 110,
            customSynopsis = {
                "nccl4j-run -np N [--share-gpu] [--elastic] [--port P] [--grace SECONDS] <main class | example name> "
                        + "[args...]",
                "       nccl4j-run -np N [--share-gpu] [--elastic] [--port P] [--grace SECONDS] --cmd [--] <command> "
                        + "[args...]"},
            description = "Starts N ranks of a program on this machine, one per GPU, and stops them all when one "
                    + "fails (unless --elastic).",
            footer = {"", "An example name without a dot (AllReduce, DdpSimple, ZeroShards, ReadmeSum) means "
                    + EXAMPLES_PACKAGE + ".<name>. Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,",
                "MASTER_ADDR=127.0.0.1 and MASTER_PORT on top of this environment; JAVA_OPTS go to each rank's JVM.",
                "Exit status: the first failed rank's, 0 when all succeed; 2 for a usage error."})
    static final class Line {
        @Option(names = {"-np", "-n", "--np"}, paramLabel = "N",
                description = "Number of ranks (processes) to start on this machine; at most one per GPU.")
        Integer ranks;
        @Option(names = "--share-gpu", description = "Allow more ranks than GPUs (development, CI, tests): rank r on "
                + "device r mod G, each with its own NCCL_HOSTID and NCCL_SOCKET_IFNAME=lo; sockets, not NVLink speed.")
        boolean shareGpu;
        @Option(names = "--elastic", description = "A rank that fails is reported and the others go on (for jobs that "
                + "shrink their communicator); exit 0 when a rank ran to the end with 0. Without it the first failure "
                + "stops every rank.")
        boolean elastic;
        @Option(names = "--port", paramLabel = "P", description = "MASTER_PORT for the ranks (default: a free port).")
        Integer port;
        @Option(names = "--grace", paramLabel = "SECONDS", description = "How long ranks get between SIGTERM and "
                + "SIGKILL when stopped (default 5).")
        Double grace;
        @Option(names = "--cmd", description = "Run <command> as each rank instead of a Java main class.")
        boolean cmd;
        @Parameters(paramLabel = "ARGS", description = "The main class or example name (or, with --cmd, the command) "
                + "and its arguments.")
        List<String> rest = new ArrayList<>();
    }

    private LaunchOptions elastic(boolean on) {
        this.elastic = on;
        return this;
    }

    /** @return whether a failed rank leaves the others running ({@code --elastic}) */
    boolean elastic() {
        return elastic;
    }

    /** {@code AllReduce} becomes {@code org.nccl4j.examples.AllReduce}; a name with a dot is kept. */
    static String mainClassOf(String name) {
        return name.indexOf('.') >= 0 ? name : EXAMPLES_PACKAGE + "." + name;
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
