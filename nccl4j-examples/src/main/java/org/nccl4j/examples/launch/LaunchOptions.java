package org.nccl4j.examples.launch;

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

    static final String USAGE = String.join("\n",
            "usage: nccl4j-run -np N [--share-gpu] [--elastic] [--port P] [--grace SECONDS] <main class | example name>"
                    + " [args...]",
            "       nccl4j-run -np N [--share-gpu] [--elastic] [--port P] [--grace SECONDS] --cmd [--] <command> [args...]",
            "  -np N            number of ranks (processes) to start on this machine; at most one per GPU",
            "  --share-gpu      allow more ranks than GPUs (development, CI, tests): rank r on device r mod G, each",
            "                   with its own NCCL_HOSTID and NCCL_SOCKET_IFNAME=lo; sockets, not NVLink speed",
            "  --elastic        a rank that fails is reported and the others go on (for jobs that shrink their",
            "                   communicator); exit 0 when a rank ran to the end with 0. Without it the first",
            "                   failure stops every rank",
            "  --port P         MASTER_PORT for the ranks (default: a free port)",
            "  --grace SECONDS  how long ranks get between SIGTERM and SIGKILL when stopped (default 5)",
            "  --cmd            run <command> as each rank instead of a Java main class",
            "An example name without a dot (AllReduce, DdpSimple, ZeroShards, ReadmeSum) means",
            EXAMPLES_PACKAGE + ".<name>. Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,",
            "MASTER_ADDR=127.0.0.1 and MASTER_PORT on top of this environment; JAVA_OPTS go to each rank's JVM.");

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
        int ranks = -1;
        int port = 0;
        Duration grace = DEFAULT_GRACE;
        boolean cmd = false;
        boolean shareGpu = false;
        boolean elastic = false;
        int i = 0;
        while (i < args.length) {
            String a = args[i];
            if (a.equals("-h") || a.equals("--help")) {
                return new LaunchOptions(0, false, 0, grace, null, List.of(), true);
            } else if (a.equals("-np") || a.equals("-n") || a.equals("--np")) {
                ranks = integer(a, value(args, i), 1, 4096);
                i += 2;
            } else if (a.equals("--port")) {
                port = integer(a, value(args, i), 1, 65535);
                i += 2;
            } else if (a.equals("--grace")) {
                grace = seconds(a, value(args, i));
                i += 2;
            } else if (a.equals("--share-gpu")) {
                shareGpu = true;
                i++;
            } else if (a.equals("--elastic")) {
                elastic = true;
                i++;
            } else if (a.equals("--cmd")) {
                cmd = true;
                i++;
            } else if (a.equals("--")) {
                i++;
                break;
            } else if (a.startsWith("-")) {
                throw new UsageException("unknown option " + a);
            } else {
                break;
            }
        }
        if (ranks < 0) {
            throw new UsageException("-np N is required: how many ranks to start");
        }
        List<String> rest = Arrays.asList(args).subList(i, args.length);
        if (rest.isEmpty()) {
            throw new UsageException(cmd ? "--cmd needs a command to run" : "a main class or example name is required");
        }
        if (cmd) {
            return new LaunchOptions(ranks, shareGpu, port, grace, null, rest, false).elastic(elastic);
        }
        String main = mainClassOf(rest.get(0));
        List<String> command = new ArrayList<>();
        command.add(java.toString());
        command.addAll(splitOptions(env.get("JAVA_OPTS")));
        command.add("-cp");
        command.add(classPath);
        command.add(main);
        command.addAll(rest.subList(1, rest.size()));
        return new LaunchOptions(ranks, shareGpu, port, grace, main, command, false).elastic(elastic);
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

    private static String value(String[] args, int i) {
        if (i + 1 >= args.length) {
            throw new UsageException(args[i] + " needs a value");
        }
        return args[i + 1];
    }

    private static int integer(String option, String s, int min, int max) {
        int v;
        try {
            v = Integer.parseInt(s.strip());
        } catch (NumberFormatException e) {
            throw new UsageException(option + " " + s + " is not a whole number");
        }
        if (v < min || v > max) {
            throw new UsageException(option + " " + s + " is out of range " + min + ".." + max);
        }
        return v;
    }

    private static Duration seconds(String option, String s) {
        double v;
        try {
            v = Double.parseDouble(s.strip());
        } catch (NumberFormatException e) {
            throw new UsageException(option + " " + s + " is not a number of seconds");
        }
        if (!(v >= 0 && v <= 3600)) {
            throw new UsageException(option + " " + s + " is out of range 0..3600 seconds");
        }
        return Duration.ofMillis(Math.round(v * 1000));
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

    /** @return whether only the usage was asked for */
    boolean help() {
        return help;
    }
}
