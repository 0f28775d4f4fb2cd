package org.nccl4j.examples;

import org.nccl4j.Nccl;
import picocli.CommandLine;

/**
 * The examples' command lines. An example declares its options as an {@code @Command} class with {@code @Option}
 * fields ({@code mixinStandardHelpOptions = true, versionProvider = Args.Version.class}) and fills it with
 * {@link #parseOrExit}. {@code --help} and {@code --version} answer as nccl4j's tools do; a bad option is refused in
 * one line that names it, with exit status {@link #USAGE}. The tools parse theirs alike with their own
 * {@code Tools}: an example is a leaf a user copies, and nccl4j-tools imports nothing of this module.
 */
public final class Args {
    /** Exit status of a command line that cannot be parsed, or a value that is refused. */
    public static final int USAGE = 2;

    private Args() {
    }

    /** The {@code --version} text: the example's name, nccl4j's version, the loaded NCCL's, and Java's. */
    public static final class Version implements CommandLine.IVersionProvider {
        /** Picocli makes one per command. */
        public Version() {
        }

        @Override
        public String[] getVersion() {
            String v = Args.class.getPackage().getImplementationVersion();
            String nccl;
            try {
                nccl = "NCCL " + Nccl.version() + " (" + Nccl.library().path() + ")";
            } catch (RuntimeException | LinkageError e) {
                nccl = "NCCL not loaded: " + e.getMessage();
            }
            return new String[] {
                "${COMMAND-FULL-NAME} (nccl4j " + (v == null ? "dev" : v) + ")",
                nccl,
                "Java " + Runtime.version() + " (" + System.getProperty("java.vm.name") + ")"
            };
        }
    }

    /**
     * Parses {@code args} into {@code options}, an {@code @Command} class whose fields carry {@code @Option}s.
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
            cl.parseArgs(args);
        } catch (CommandLine.ParameterException e) {
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
     * A value a program refuses after parsing (two options that contradict, a file that is not there): printed as its
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
