package org.nccl4j.tools.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.nccl4j.Nccl;
import picocli.CommandLine;

/**
 * What every nccl4j command-line tool shares, so that they behave alike: the same {@code --help} layout, a
 * {@code --version} that prints nccl4j's version and the loaded NCCL's, a usage error printed as one line naming the
 * option (then a pointer to {@code --help}) with exit status {@link #USAGE}, and a failure of the tool itself printed
 * with its stack trace and exit status {@link #SOFTWARE}.
 *
 * <p>The tools declare their options with picocli, and this class holds only the house conventions around it. A tool
 * declares {@code @Command(name = ..., mixinStandardHelpOptions = true, versionProvider = Tools.Version.class)} and
 * runs with {@link #execute(Object, String[], PrintWriter, PrintWriter)}; a value it refuses after parsing is a
 * {@link UsageException}. A program that runs itself rather than as a picocli command (a harness, or Plot) declares
 * its options the same way and parses them with {@link #parseOrExit}. nccl4j-perf and nccl4j-run answer {@code --help}
 * themselves and read their command line with {@link #parseArgs}; nccl4j-run refuses with {@link #refuse}, as
 * {@code execute} does, and nccl4j-perf in one line. Every command line of the tools reaches picocli through
 * {@link #parseArgs} or {@link #execute} (ToolsTest).
 *
 * <p>The examples have their own {@code Args}, alike, and no class can serve both: nccl4j-core, below both, does not
 * depend on picocli; this module imports nothing of the examples (it runs them by class name), and an example is a
 * leaf a user copies with nccl4j-core and picocli, so it needs nothing of this module either.
 */
public final class Tools {
    /** Exit status of a command line that cannot be parsed, or a value that is refused. */
    public static final int USAGE = 2;
    /** Exit status when the tool itself failed (a bug: the stack trace is printed). */
    public static final int SOFTWARE = 3;

    private Tools() {
    }

    /**
     * nccl4j's version: the jar manifest's Implementation-Version, or {@code dev} when run from classes.
     *
     * @return e.g. {@code 0.1.0}
     */
    public static String nccl4jVersion() {
        String v = Tools.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }

    /**
     * The loaded NCCL's version ({@code ncclGetVersion}), or why none could be loaded; never throws.
     *
     * @return e.g. {@code NCCL 2.28.3 (/usr/lib/x86_64-linux-gnu/libnccl.so.2)} or {@code NCCL not loaded: ...}
     */
    public static String ncclVersion() {
        try {
            return "NCCL " + Nccl.version() + " (" + Nccl.library().path() + ")";
        } catch (RuntimeException | LinkageError e) {
            return "NCCL not loaded: " + e.getMessage();
        }
    }

    /** The {@code --version} text of every tool: its name, nccl4j's version, the loaded NCCL's, and Java's. */
    public static final class Version implements CommandLine.IVersionProvider {
        /** Picocli makes one per command. */
        public Version() {
        }

        @Override
        public String[] getVersion() {
            return new String[] {
                "${COMMAND-FULL-NAME} (nccl4j " + nccl4jVersion() + ")",
                ncclVersion(),
                "Java " + Runtime.version() + " (" + System.getProperty("java.vm.name") + ")"
            };
        }
    }

    /**
     * Parses {@code args} into {@code command} and runs it: usage errors print {@code <tool>: <message>} and
     * {@code Try '<tool> --help'.} on {@code err} and return {@link #USAGE}; an exception out of the command prints
     * its stack trace and returns {@link #SOFTWARE}; otherwise the command's own status (0 for a Runnable).
     *
     * @param command an {@code @Command}-annotated Callable or Runnable
     * @param args the command line
     * @param out where output, help and version go
     * @param err where errors go
     * @return the exit status
     */
    public static int execute(Object command, String[] args, PrintWriter out, PrintWriter err) {
        CommandLine cl = new CommandLine(command);
        cl.setOut(out);
        cl.setErr(err);
        String name = cl.getCommandName();
        cl.setParameterExceptionHandler((e, a) -> {
            refuse(err, name, e.getMessage());
            return USAGE;
        });
        cl.setExecutionExceptionHandler((e, c, p) -> {
            if (e instanceof UsageException) {
                err.println(name + ": " + e.getMessage());
                return USAGE;
            }
            err.println(name + ": failed (a bug): " + e);
            e.printStackTrace(err);
            return SOFTWARE;
        });
        int status = cl.execute(args);
        out.flush();
        err.flush();
        return status;
    }

    /**
     * Reads {@code args} into the command of {@code cl}, set up as its tool needs (for example, the rank's arguments
     * left alone after the main class). A tool that answers {@code --help} and {@code --version} itself asks
     * {@code cl} afterwards whether they were given.
     *
     * @param cl the command line of the tool's {@code @Command} options object
     * @param args the command line
     * @return {@code cl}
     * @throws UsageException with picocli's message, which names the option and what it accepts (for example
     *         {@code Unknown option: '--frobnicate'})
     */
    public static CommandLine parseArgs(CommandLine cl, String... args) {
        try {
            cl.parseArgs(args);
        } catch (CommandLine.ParameterException e) {
            throw new UsageException(e.getMessage());
        }
        return cl;
    }

    /**
     * Prints a command line's refusal as every tool does: {@code <tool>: <message>}, then {@code Try '<tool> --help'
     * for the options.}
     *
     * @param err where errors go
     * @param name the tool's name
     * @param message what is wrong, naming the option
     */
    public static void refuse(PrintWriter err, String name, String message) {
        err.println(name + ": " + message);
        err.println("Try '" + name + " --help' for the options.");
        err.flush();
    }

    /**
     * The {@code --version} text of a tool, as {@code --version} prints it, without the last line's end.
     *
     * @param options the tool's {@code @Command} options object
     * @return three lines: the tool and nccl4j's version, the loaded NCCL's (or why none), Java's
     */
    public static String versionText(Object options) {
        StringWriter w = new StringWriter();
        new CommandLine(options).printVersionHelp(new PrintWriter(w, true));
        return w.toString().stripTrailing();
    }

    /**
     * {@link #execute(Object, String[], PrintWriter, PrintWriter)} on the standard streams, then exits with its status.
     *
     * @param command an {@code @Command}-annotated Callable or Runnable
     * @param args the command line
     */
    public static void main(Object command, String[] args) {
        PrintWriter out = new PrintWriter(System.out, true);
        PrintWriter err = new PrintWriter(System.err, true);
        System.exit(execute(command, args, out, err));
    }

    /**
     * Parses {@code args} into {@code options}, the {@code @Command} class of a program that runs itself (a harness).
     * {@code --help} and {@code --version} are answered here (printed on stdout; the process exits 0); a command line
     * that cannot be parsed throws.
     *
     * @param options the options object, with its defaults set
     * @param args the command line
     * @param <T> its type
     * @return {@code options}, filled in
     * @throws UsageException naming the option and what it accepts, and pointing at {@code --help}
     */
    public static <T> T parse(T options, String... args) {
        CommandLine cl = new CommandLine(options);
        try {
            parseArgs(cl, args);
        } catch (UsageException e) {
            throw new UsageException(e.getMessage() + "; try '" + cl.getCommandName() + " --help'");
        }
        if (cl.isUsageHelpRequested()) {
            cl.usage(System.out);
            System.exit(0);
        }
        if (cl.isVersionHelpRequested()) {
            cl.printVersionHelp(System.out);
            System.exit(0);
        }
        return options;
    }

    /**
     * {@link #parse}, and on a usage error prints {@code <name>: <message>} on stderr and exits {@link #USAGE}.
     *
     * @param options the options object, with its defaults set
     * @param args the command line
     * @param <T> its type
     * @return {@code options}, filled in
     */
    public static <T> T parseOrExit(T options, String... args) {
        try {
            return parse(options, args);
        } catch (UsageException e) {
            System.err.println(new CommandLine(options).getCommandName() + ": " + e.getMessage());
            System.exit(USAGE);
            return options;
        }
    }

    /**
     * A value a tool refuses after parsing (two options that contradict, a file that is not there): printed as its
     * message alone, with exit status {@link #USAGE}.
     */
    public static final class UsageException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        /**
         * A refusal.
         *
         * @param message what is wrong and the fix, naming the option
         */
        public UsageException(String message) {
            super(message);
        }
    }
}
