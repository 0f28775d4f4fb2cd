package org.nccl4j.tools.analyze;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Callable;
import org.nccl4j.trace.TraceDump;
import org.nccl4j.tools.cli.Tools;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code nccl4j-trace}: reads the flight recorder's dumps of all ranks of a job ({@link TraceDump}, one file per
 * rank, written when a collective hangs or fails) and says which rank went wrong and where: ranks without a dump,
 * the rank that skipped (and between which of its own collectives) or added a collective, or left early, counts,
 * types, operators or roots that differ at one collective, and the rank everyone waits for, with where its threads
 * are when its dump holds their stacks. How the ranks are compared (their collectives in order, sends and receives
 * left out; the choice of the reference rank) is {@link TraceComparer}'s description.
 *
 * <pre>
 *   nccl4j-trace [--json] [--communicator NAME] DIR...
 * </pre>
 * Each DIR is a directory, whose {@code nccl4j-trace-rank*.json} files are read (not those of its
 * subdirectories), or a dump file. Dumps of different communicators (their {@code communicator} name or
 * {@code size} differ) are grouped and each group is analyzed on its own; {@code --communicator NAME} analyzes only
 * the communicator of that name ({@code --communicator ""}: the unnamed ones).
 *
 * <p>The first line of the output is the verdict, e.g.
 * {@code nccl4j-trace: rank 1 issued 5 collectives, rank 0 issued 6: rank 1 skipped one (rank 0's allReduce #6 has
 * no partner)}; the details follow: for each communicator, a table of the ranks (last enqueued, last completed,
 * oldest pending, why each dump was written, its file), the problems, who waits in what, the thread stacks of the
 * dumps that hold them (each thread's state, whether it is in NCCL or CUDA, in nccl4j or in the program's own code
 * and its first user frame, then its first frames), and notes (failures, older dumps ignored).
 * With {@code --json}, one JSON object instead (see {@link #writeJson}).
 *
 * <p>Exit status: 0 when the dumps agree, 1 when a problem was found, 2 when an input cannot be read (the message
 * names the file and, for a malformed dump, the field) or on a usage error, 3 when the analyzer itself failed.
 */
@Command(name = "nccl4j-trace", customSynopsis = "nccl4j-trace [--json] [--communicator NAME] DIR...",
        sortOptions = false, usageHelpWidth = 100, mixinStandardHelpOptions = true,
        versionProvider = Tools.Version.class,
        description = {
            "Compares the flight recorder's dumps of all ranks (nccl4j-trace-rank<R>-<host>-<pid>.json) and says which"
                    + " rank skipped, added or left early, which collectives differ between ranks, which ranks left no"
                    + " dump, and which rank the others wait for, with where its threads are.",
            ""
        },
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {
            "0:the dumps agree",
            "1:a problem was found",
            "2:an input cannot be read, or a usage error",
            "3:the analyzer failed"
        })
public final class TraceAnalyzer implements Callable<Integer> {
    /** Exit status: the dumps agree. */
    public static final int CONSISTENT = 0;
    /** Exit status: a problem was found. */
    public static final int PROBLEM = 1;
    /** Exit status: an input cannot be read, or the command line is wrong. */
    public static final int BAD_INPUT = Tools.USAGE;
    /** Exit status: the analyzer itself failed (a bug: the stack trace is printed). */
    public static final int FAILED = Tools.SOFTWARE;
    /** The version of the {@code --json} report's format (docs/formats.md). */
    public static final int REPORT_VERSION = 1;
    /** The prefix of every line the analyzer prints first. */
    public static final String PREFIX = "nccl4j-trace: ";

    @Option(names = "--json", description = "Print one JSON object instead of the text report.")
    private boolean json;

    @Option(names = "--communicator", paramLabel = "NAME",
            description = "Analyze only the dumps of the communicator of this name (\"\": the unnamed ones).")
    private String communicator;

    @Parameters(arity = "1..*", paramLabel = "DIR",
            description = "A directory holding dumps (its nccl4j-trace-rank*.json files), or a dump file.")
    private List<Path> inputs;

    @Spec
    private CommandSpec spec;

    /** A refusal of the input, printed as its message alone with exit status 2. */
    private static final class BadInput extends Exception {
        private static final long serialVersionUID = 1L;

        BadInput(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Creates the command; picocli fills its options ({@link #execute}).
     */
    public TraceAnalyzer() {
    }

    /**
     * Runs the analyzer on the command line and exits with its status ({@link #execute}).
     *
     * @param args the command line
     */
    public static void main(String[] args) {
        PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
        int status = execute(args, out, err);
        out.flush();
        err.flush();
        System.exit(status);
    }

    /**
     * What {@link #main} does but for exiting: parses the command line, reads the dumps, prints the verdict.
     *
     * @param args the command line ({@code [--json] [--communicator NAME] DIR...})
     * @param out where the report (or the usage, for {@code -h}) goes
     * @param err where refusals go: unreadable files, usage errors
     * @return the exit status: {@link #CONSISTENT}, {@link #PROBLEM}, {@link #BAD_INPUT} or {@link #FAILED}
     */
    public static int execute(String[] args, PrintWriter out, PrintWriter err) {
        return Tools.execute(new TraceAnalyzer(), args, out, err);   // BAD_INPUT = Tools.USAGE, FAILED = Tools.SOFTWARE
    }

    /**
     * Reads the dumps, analyzes each communicator's and prints the report; called by picocli.
     *
     * @return the exit status
     * @throws IOException when the report cannot be written
     */
    @Override
    public Integer call() throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        List<TraceVerdict> verdicts;
        List<String> notes = new ArrayList<>();
        try {
            List<TraceInput> dumps = load(inputs, notes);
            verdicts = analyze(dumps, communicator);
        } catch (BadInput e) {
            err.println(PREFIX + e.getMessage());
            return BAD_INPUT;
        }
        int status = verdicts.stream().allMatch(TraceVerdict::consistent) ? CONSISTENT : PROBLEM;
        if (json) {
            writeJson(verdicts, notes, status, out);
        } else {
            out.print(text(verdicts, notes));
        }
        out.flush();
        return status;
    }

    /**
     * The files named or found in directories, read.
     *
     * @param paths directories and files
     * @param notes gets a note for each directory without dumps, when others have some
     * @return the dumps, in the order of the paths (a directory's by file name), each file once
     * @throws BadInput naming the path and the reason when a path is missing or a file cannot be read, or when no
     *         dump is found at all
     */
    private static List<TraceInput> load(List<Path> paths, List<String> notes) throws BadInput {
        Set<Path> files = new LinkedHashSet<>();
        List<Path> empty = new ArrayList<>();
        for (Path p : paths) {
            if (Files.isDirectory(p)) {
                List<Path> found = new ArrayList<>();
                try (DirectoryStream<Path> s = Files.newDirectoryStream(p)) {
                    for (Path f : s) {
                        String n = f.getFileName().toString();
                        if (n.startsWith(TraceDump.FILE_PREFIX) && n.endsWith(".json") && Files.isRegularFile(f)) {
                            found.add(f);
                        }
                    }
                } catch (IOException e) {
                    throw new BadInput(p + ": cannot list the directory: " + e);
                }
                found.sort(Comparator.comparing(Path::toString));
                if (found.isEmpty()) {
                    empty.add(p);
                }
                found.forEach(f -> files.add(f.normalize()));
            } else if (Files.isRegularFile(p)) {
                files.add(p.normalize());
            } else if (Files.exists(p, LinkOption.NOFOLLOW_LINKS) || Files.exists(p)) {
                throw new BadInput(p + ": not a directory or a regular file");
            } else {
                throw new BadInput(p + ": no such file or directory");
            }
        }
        if (files.isEmpty()) {
            throw new BadInput("no trace dumps (" + TraceDump.FILE_PREFIX + "*.json) in " + String.join(", ",
                    empty.stream().map(Path::toString).toList()) + ": nothing to analyze (dumps go to NCCL4J_TRACE_DIR,"
                    + " by default ${java.io.tmpdir}/nccl4j-trace)");
        }
        empty.forEach(d -> notes.add(d + " holds no trace dumps"));
        List<TraceInput> dumps = new ArrayList<>();
        for (Path f : files) {
            try {
                dumps.add(new TraceInput(f, TraceDump.read(f)));
            } catch (IOException e) {
                // TraceFormatException's and read's messages name the file (and the field)
                String m = e.getMessage();
                throw new BadInput(m != null && m.contains(f.toString()) ? m : f + ": " + e);
            }
        }
        return dumps;
    }

    /** The dumps grouped by communicator name and size (unnamed first, then by name and size), each analyzed. */
    private static List<TraceVerdict> analyze(List<TraceInput> dumps, String only) throws BadInput {
        Map<String, List<TraceInput>> groups = new LinkedHashMap<>();
        dumps.stream()
                .sorted(Comparator.comparing(
                                (TraceInput d) -> d.dump().communicator() == null ? "" : "=" + d.dump().communicator())
                        .thenComparingInt(d -> d.dump().size()))
                .forEach(d -> groups.computeIfAbsent(d.dump().communicator() + "\0" + d.dump().size(),
                        k -> new ArrayList<>()).add(d));
        List<TraceVerdict> verdicts = new ArrayList<>();
        List<String> found = new ArrayList<>();
        for (List<TraceInput> g : groups.values()) {
            String name = g.get(0).dump().communicator();
            found.add((name == null ? "unnamed" : "\"" + name + "\"") + " (" + g.get(0).dump().size() + " ranks)");
            if (only == null || Objects.equals(only.isEmpty() ? null : only, name)) {
                verdicts.add(TraceComparer.analyze(g));
            }
        }
        if (verdicts.isEmpty()) {
            throw new BadInput("no dumps of " + (only.isEmpty() ? "an unnamed communicator" : "communicator \"" + only
                    + "\"") + " (communicators found: " + String.join(", ", found) + ")");
        }
        return verdicts;
    }

    /**
     * The text report: the verdict line, then each communicator's details.
     *
     * @param verdicts one per communicator
     * @param notes notes on the input as a whole
     * @return the report, ending with a newline
     */
    static String text(List<TraceVerdict> verdicts, List<String> notes) {
        StringBuilder b = new StringBuilder(PREFIX).append(verdictLine(verdicts)).append('\n');
        for (TraceVerdict v : verdicts) {
            b.append('\n').append(v.details());
        }
        if (!notes.isEmpty()) {
            b.append('\n');
            notes.forEach(n -> b.append("note: ").append(n).append('\n'));
        }
        return b.toString();
    }

    /** The verdict without the prefix: one communicator's summary, or each labelled, separated by " | ". */
    static String verdictLine(List<TraceVerdict> verdicts) {
        if (verdicts.size() == 1) {
            return verdicts.get(0).summary();
        }
        List<String> parts = new ArrayList<>();
        verdicts.forEach(v -> parts.add(v.label() + ": " + v.summary()));
        return String.join(" | ", parts);
    }

    /**
     * The {@code --json} report: one object with {@code verdict} (the verdict line without its prefix),
     * {@code consistent}, {@code exitStatus}, {@code notes} and {@code communicators}, an array of
     * {@link TraceVerdict#writeJson} objects; written with jackson-core's {@link JsonGenerator}, indented.
     *
     * @param verdicts one per communicator
     * @param notes notes on the input as a whole
     * @param status the exit status
     * @param out where it goes (left open)
     * @throws IOException when writing fails
     */
    static void writeJson(List<TraceVerdict> verdicts, List<String> notes, int status, PrintWriter out)
            throws IOException {
        JsonFactory factory = new JsonFactory();
        try (JsonGenerator g = factory.createGenerator(out)) {
            g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
            g.useDefaultPrettyPrinter();
            g.writeStartObject();
            g.writeStringField(org.nccl4j.tools.cli.JsonDocs.FORMAT, "nccl4j-trace-report");
            g.writeNumberField(org.nccl4j.tools.cli.JsonDocs.VERSION, REPORT_VERSION);
            g.writeStringField("verdict", verdictLine(verdicts));
            g.writeBooleanField("consistent", status == CONSISTENT);
            g.writeNumberField("exitStatus", status);
            g.writeArrayFieldStart("notes");
            for (String n : notes) {
                g.writeString(n);
            }
            g.writeEndArray();
            g.writeArrayFieldStart("communicators");
            for (TraceVerdict v : verdicts) {
                v.writeJson(g);
            }
            g.writeEndArray();
            g.writeEndObject();
        }
        out.println();
    }
}
