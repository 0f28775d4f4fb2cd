package org.nccl4j.examples.perf;

import java.util.Map;
import org.nccl4j.examples.cli.Tools;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.nccl4j.DataType;
import org.nccl4j.ReduceOp;

/**
 * The command line of nccl4j-perf: nccl-tests' flags with nccl-tests' defaults, plus {@code -t} to choose the
 * operation (nccl-tests has one binary per operation instead) and {@code --plot}.
 *
 * <p>Short options take their value as the next argument or attached ({@code -b 8}, {@code -b8}); long options
 * as the next argument or after '=' ({@code --minbytes 8}, {@code --minbytes=8}). Sizes accept nccl-tests' binary
 * suffixes K, M, G (and T), upper or lower case, with a decimal number ({@code 1.5K} = 1536). Every invalid value
 * is refused with an {@link IllegalArgumentException} naming the flag and the value.
 */
public final class PerfArgs {
    /** -b: smallest size in bytes (nccl-tests' default 32M). */
    public long minBytes = 32L << 20;
    /** -e: largest size in bytes (32M). */
    public long maxBytes = 32L << 20;
    /** -i: the increment between sizes when no factor is given (1M). */
    public long stepBytes = 1L << 20;
    /** -f: the factor between sizes; 1 or less uses {@link #stepBytes} (disabled). */
    public long stepFactor = 1;
    /** -n: timed iterations (20). */
    public int iters = 20;
    /** -w: warm-up iterations per size (1). */
    public int warmup = 1;
    /** -c: check the results this many times (1); 0 prints N/A in the #wrong columns. */
    public int check = 1;
    /** -o: reduction operators (sum). */
    public List<ReduceOp> ops = List.of(ReduceOp.SUM);
    /** -d: data types (float). */
    public List<DataType> types = List.of(DataType.FLOAT32);
    /** -r: root, or -1 for every rank ("all"). */
    public int root = 0;
    /** -g: GPUs driven by this process (1). */
    public int gpus = 1;
    /** -G: CUDA graph launches; 0 runs eagerly. */
    public int graphLaunches = 0;
    /** -z: 0 no waiting, 1 wait and barrier after each iteration, 2 wait after each iteration. */
    public int blocking = 0;
    /** -a: across processes, report 0 rank 0's time, 1 the average, 2 the minimum, 3 the maximum (1). */
    public int average = 1;
    /** --init_repeats: communicators created and timed again after the first, in the same process (default 0). */
    public int initRepeats = 0;
    /**
     * --op_times: 1 records a CUDA event after every operation of eager runs and reports the spread of this
     * process's per-operation times (a diagnostic; the extra event records cost host time) (default 0).
     */
    public int opTimes = 0;
    /**
     * --jit_quiet_ms: before each measurement, wait (spinning) until the JIT compiler has finished no compilation
     * for this many milliseconds, at most {@link #MAX_JIT_WAIT_MS}; 0 does not wait (default 20).
     */
    public int jitQuietMs = 20;
    /** The longest one --jit_quiet_ms wait lasts. */
    static final int MAX_JIT_WAIT_MS = 1000;
    /** The most iterations --op_times takes (one CUDA event each). */
    static final int MAX_OP_TIMES_ITERS = 100_000;
    /** -J: the JSON output file, or null. */
    public Path jsonFile;
    /** --plot: the PNG of bus bandwidth against size, or null. */
    public Path plotFile;
    /** -t: the operations (all_reduce). */
    public List<Operation> operations = List.of(Operation.ALL_REDUCE);
    /** -h: print the usage and exit. */
    public boolean help;
    /** --version: print the versions and exit. */
    public boolean version;
    /** The arguments as given, for the JSON metadata. */
    public List<String> commandLine = List.of();

    /** The usage text ({@code -h}), from the options' declarations ({@link Line}). */
    public static final String USAGE = new CommandLine(new Line()).getUsageMessage().stripTrailing();

    /**
     * Parses the command line.
     *
     * @param argv the arguments
     * @return the options
     * @throws IllegalArgumentException naming the flag and the value when an argument is invalid
     */
    public static PerfArgs parse(String... argv) {
        PerfArgs a = new PerfArgs();
        a.commandLine = Collections.unmodifiableList(Arrays.asList(argv.clone()));
        Line line = new Line();
        CommandLine cl = new CommandLine(line);
        cl.setOverwrittenOptionsAllowed(true);   // as nccl-tests: the last of a repeated flag wins
        try {
            cl.parseArgs(argv);
        } catch (CommandLine.ParameterException e) {
            throw new IllegalArgumentException(e.getMessage() + " (-h lists the options)");
        }
        if (cl.isUsageHelpRequested()) {
            a.help = true;
            return a;
        }
        if (cl.isVersionHelpRequested()) {
            a.version = true;
            return a;
        }
        for (Map.Entry<String, String> e : line.given().entrySet()) {
            a.set(e.getKey(), e.getValue());
        }
        a.validate();
        return a;
    }

    /** The version text ({@code --version}). */
    public static String versionText() {
        java.io.StringWriter w = new java.io.StringWriter();
        new CommandLine(new Line()).printVersionHelp(new java.io.PrintWriter(w, true));
        return w.toString().stripTrailing();
    }

    /**
     * nccl-tests' flags as picocli reads them: short ({@code -b 8}, {@code -b8}) and long ({@code --minbytes 8},
     * {@code --minbytes=8}); each value is checked by {@link #set} with nccl-tests' meaning.
     */
    @Command(name = "nccl4j-perf", mixinStandardHelpOptions = true, versionProvider = Tools.Version.class,
            sortOptions = false, usageHelpWidth = 110,
            description = "nccl-tests' *_perf benchmarks in one Java program, with the same flags and the same table; "
                    + "-t picks the operation. Sizes take binary suffixes K, M, G, T (1.5K = 1536).",
            footer = {"", "Exit status: 0; 1 when an element was wrong; 2 for a usage error, or no NCCL, CUDA or GPU."})
    static final class Line {
        @Option(names = {"-t", "--operation"}, paramLabel = "<name[,name..]|all>", description = "all_reduce, "
                + "all_gather, reduce_scatter, broadcast, reduce, sendrecv, alltoall, gather, scatter (default "
                + "all_reduce).")
        String t;
        @Option(names = {"-b", "--minbytes"}, paramLabel = "<size>", description = "Smallest size (default 32M).")
        String b;
        @Option(names = {"-e", "--maxbytes"}, paramLabel = "<size>", description = "Largest size (default 32M).")
        String e;
        @Option(names = {"-i", "--stepbytes"}, paramLabel = "<size>", description = "Increment between sizes "
                + "(default 1M).")
        String i;
        @Option(names = {"-f", "--stepfactor"}, paramLabel = "<factor>", description = "Factor between sizes "
                + "(default: disabled, -i applies).")
        String f;
        @Option(names = {"-n", "--iters"}, paramLabel = "<n>", description = "Timed iterations (default 20).")
        String n;
        @Option(names = {"-w", "--warmup_iters"}, paramLabel = "<n>", description = "Warm-up iterations (default 1).")
        String w;
        @Option(names = {"-c", "--check"}, paramLabel = "<n>", description = "Check results n times (default 1; 0 "
                + "prints N/A).")
        String c;
        @Option(names = {"-o", "--op"}, paramLabel = "<sum|prod|min|max|avg|all>", description = "Reduction operator "
                + "(default sum).")
        String o;
        @Option(names = {"-d", "--datatype"}, paramLabel = "<type|all>", description = "float, half, bfloat16, double, "
                + "int8, uint8, int32, uint32, int64, uint64, fp8_e4m3 (f8e4m3), fp8_e5m2 (f8e5m2) (default float).")
        String d;
        @Option(names = {"-r", "--root"}, paramLabel = "<rank|all>", description = "Root of broadcast, reduce, "
                + "gather, scatter (default 0).")
        String r;
        @Option(names = {"-g", "--ngpus"}, paramLabel = "<n>", description = "GPUs driven by this process (default "
                + "1; not with one process per GPU).")
        String g;
        @Option(names = {"-G", "--cudagraph"}, paramLabel = "<n>", description = "Capture the n iterations as a CUDA "
                + "graph, replay it n times (default 0).")
        String graph;
        @Option(names = {"-z", "--blocking"}, paramLabel = "<0|1|2>", description = "1: wait and barrier after each "
                + "iteration, 2: wait only (default 0).")
        String z;
        @Option(names = {"-a", "--average"}, paramLabel = "<0|1|2|3>", description = "Across processes: 0 rank 0, 1 "
                + "average, 2 min, 3 max (default 1).")
        String avg;
        @Option(names = {"-J", "--output_file"}, paramLabel = "<file.json>", description = "Write the results as "
                + "JSON (docs/formats.md).")
        String json;
        @Option(names = "--plot", paramLabel = "<file.png>", description = "Draw bus bandwidth against size (one line "
                + "per operation).")
        String plot;
        @Option(names = "--init_repeats", paramLabel = "<n>", description = "After the first, create and time n more "
                + "communicators (default 0).")
        String initRepeats;
        @Option(names = "--op_times", paramLabel = "<0|1>", description = "1: an event after every eager operation; "
                + "per-operation p10/p50/p90/max.")
        String opTimes;
        @Option(names = "--jit_quiet_ms", paramLabel = "<ms>", description = "Before each measurement, wait until the "
                + "JIT compiled nothing for <ms> (at most 1 s; default 20; 0: no wait).")
        String jitQuiet;

        /** The options given, by their short (or only) name, in a fixed order. */
        Map<String, String> given() {
            Map<String, String> m = new java.util.LinkedHashMap<>();
            String[] names = {"-t", "-b", "-e", "-i", "-f", "-n", "-w", "-c", "-o", "-d", "-r", "-g", "-G", "-z", "-a",
                "-J", "--plot", "--init_repeats", "--op_times", "--jit_quiet_ms"};
            String[] values = {t, b, e, i, f, n, w, c, o, d, r, g, graph, z, avg, json, plot, initRepeats, opTimes,
                jitQuiet};
            for (int k = 0; k < names.length; k++) {
                if (values[k] != null) {
                    m.put(names[k], values[k]);
                }
            }
            return m;
        }
    }

    private static final String[][] NAMES = {
        {"-t", "--operation"}, {"-b", "--minbytes"}, {"-e", "--maxbytes"}, {"-i", "--stepbytes"},
        {"-f", "--stepfactor"}, {"-n", "--iters"}, {"-w", "--warmup_iters"}, {"-c", "--check"}, {"-o", "--op"},
        {"-d", "--datatype"}, {"-r", "--root"}, {"-g", "--ngpus"}, {"-G", "--cudagraph"}, {"-z", "--blocking"},
        {"-a", "--average"}, {"-J", "--output_file"}, {"--plot", "--plot"},
        {"--init_repeats", "--init_repeats"}, {"--op_times", "--op_times"},
        {"--jit_quiet_ms", "--jit_quiet_ms"}, {"-h", "--help"}};


    private static String describe(String shortName) {
        for (String[] n : NAMES) {
            if (n[0].equals(shortName)) {
                return n[0].equals(n[1]) ? n[0] : n[0] + " (" + n[1] + ")";
            }
        }
        return shortName;
    }

    /**
     * The refusal of one option's value: "{@code -x (--long): 'value' why}".
     *
     * @param flag the option's short name (or its only name)
     * @param value the value as given or as parsed
     * @param why what is wrong with it, and what to do
     * @return the exception to throw
     */
    static IllegalArgumentException invalid(String flag, String value, String why) {
        return new IllegalArgumentException(describe(flag) + ": '" + value + "' " + why);
    }

    private void set(String flag, String v) {
        switch (flag) {
            case "-t": operations = parseOperations(v); break;
            case "-b": minBytes = parseSize(flag, v); break;
            case "-e": maxBytes = parseSize(flag, v); break;
            case "-i": stepBytes = parseSize(flag, v); break;
            case "-f": stepFactor = parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-n": iters = (int) parseInt(flag, v, 1, Integer.MAX_VALUE); break;
            case "-w": warmup = (int) parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-c": check = (int) parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-o": ops = parseOps(v); break;
            case "-d": types = parseTypes(v); break;
            case "-r": root = v.equalsIgnoreCase("all") ? -1 : (int) parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-g": gpus = (int) parseInt(flag, v, 1, 1024); break;
            case "-G": graphLaunches = (int) parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-z":
                blocking = (int) parseInt(flag, v, 0, 3);
                if (blocking == 3) {
                    throw invalid(flag, v, "is not supported by nccl4j-perf (nccl-tests' -z 3 excludes barrier time "
                            + "per iteration); use 0, 1 or 2");
                }
                break;
            case "-a": average = (int) parseInt(flag, v, 0, 3); break;
            case "-J": jsonFile = path(flag, v); break;
            case "--plot": plotFile = path(flag, v); break;
            case "--init_repeats": initRepeats = (int) parseInt(flag, v, 0, 100_000); break;
            case "--op_times": opTimes = (int) parseInt(flag, v, 0, 1); break;
            case "--jit_quiet_ms": jitQuietMs = (int) parseInt(flag, v, 0, MAX_JIT_WAIT_MS); break;
            default: throw new IllegalStateException(flag);
        }
    }

    private void validate() {
        if (minBytes > maxBytes) {
            throw new IllegalArgumentException("invalid sizes for -b (--minbytes) and -e (--maxbytes): " + minBytes
                    + " > " + maxBytes);
        }
        if (stepFactor > 1 && minBytes == 0) {
            throw invalid("-b", Long.toString(minBytes), "cannot grow by a factor (-f " + stepFactor
                    + "); start at 1 or more");
        }
        if (stepFactor <= 1 && stepBytes <= 0) {
            throw invalid("-i", Long.toString(stepBytes), "must be > 0 when no factor (-f) is given");
        }
        if (blocking != 0 && graphLaunches > 0) {
            throw invalid("-z", Integer.toString(blocking), "cannot be combined with -G (--cudagraph): "
                    + "a captured graph cannot wait between its iterations");
        }
        if (opTimes != 0 && iters > MAX_OP_TIMES_ITERS) {
            throw invalid("--op_times", Integer.toString(opTimes), "records one CUDA event per iteration, so -n"
                    + " (--iters) must be at most " + MAX_OP_TIMES_ITERS + ", got " + iters);
        }
        if (opTimes != 0 && graphLaunches > 0) {
            throw invalid("--op_times", Integer.toString(opTimes), "cannot be combined with -G (--cudagraph): "
                    + "the operations of a replayed graph cannot be timed one by one; drop one of them");
        }
    }

    private static Path path(String flag, String v) {
        if (v.isBlank()) {
            throw invalid(flag, v, "is not a file name");
        }
        return Path.of(v);
    }

    static long parseInt(String flag, String v, long min, long max) {
        long x;
        try {
            x = Long.decode(v.strip());
        } catch (NumberFormatException e) {
            throw invalid(flag, v, "is not a whole number");
        }
        if (x < min || x > max) {
            throw invalid(flag, v, max == Integer.MAX_VALUE || max == Long.MAX_VALUE ? "must be >= " + min
                    : "must be in " + min + ".." + max);
        }
        return x;
    }

    /**
     * nccl-tests' sizes: a number with an optional binary suffix K, M, G or T (either case).
     *
     * @param flag the flag, for the error
     * @param v the text
     * @return bytes
     */
    public static long parseSize(String flag, String v) {
        String t = v.strip();
        long unit = 1;
        if (!t.isEmpty()) {
            switch (Character.toUpperCase(t.charAt(t.length() - 1))) {
                case 'K': unit = 1L << 10; break;
                case 'M': unit = 1L << 20; break;
                case 'G': unit = 1L << 30; break;
                case 'T': unit = 1L << 40; break;
                default: break;
            }
        }
        String number = unit == 1 ? t : t.substring(0, t.length() - 1).strip();
        if (number.isEmpty() || !number.matches("[0-9]+(\\.[0-9]*)?")) {
            throw invalid(flag, v, "is not a size (use e.g. 8, 64K, 128M, 8G)");
        }
        double bytes = Double.parseDouble(number) * unit;
        if (bytes > Long.MAX_VALUE / 2) {
            throw invalid(flag, v, "is too large");
        }
        return (long) bytes;
    }

    private static List<Operation> parseOperations(String v) {
        if (v.equalsIgnoreCase("all")) {
            return List.of(Operation.values());
        }
        List<Operation> out = new ArrayList<>();
        for (String s : v.split(",")) {
            Operation o = Operation.byName(s.strip());
            if (o == null) {
                String hint = s.strip().matches("[0-9]+") ? " (in nccl4j-perf -t selects the operation; nccl-tests' "
                        + "thread count is not supported: use -g or one process per GPU)" : "";
                throw invalid("-t", s, "is not an operation: use all_reduce, all_gather, reduce_scatter, broadcast, "
                        + "reduce, sendrecv, alltoall, gather, scatter or all" + hint);
            }
            if (!out.contains(o)) {
                out.add(o);
            }
        }
        return List.copyOf(out);
    }

    private static List<ReduceOp> parseOps(String v) {
        if (v.equalsIgnoreCase("all")) {
            return List.of(Elements.allOps());
        }
        ReduceOp op = Elements.op(v.strip());
        if (op == null) {
            throw invalid("-o", v, "is not a reduction operator: use sum, prod, min, max, avg or all");
        }
        return List.of(op);
    }

    private static List<DataType> parseTypes(String v) {
        if (v.equalsIgnoreCase("all")) {
            return List.of(Elements.allTypes());
        }
        DataType t = Elements.type(v.strip());
        if (t == null) {
            throw invalid("-d", v, "is not a data type: use float, half, bfloat16, double, int8, uint8, int32, "
                    + "uint32, int64, uint64, fp8_e4m3, fp8_e5m2 or all");
        }
        return List.of(t);
    }

    /**
     * The sizes to measure, as nccl-tests walks them: from {@code min}, multiplied by {@code factor} when it is
     * above 1, else increased by {@code step}, while not above {@code max}.
     *
     * @param min the first size in bytes ({@code -b})
     * @param max the largest size in bytes ({@code -e})
     * @param factor the multiplier ({@code -f}); 1 or less to step by {@code step} instead
     * @param step the increment in bytes ({@code -i}), used when {@code factor} is 1 or less
     * @return the sizes in bytes
     */
    public static List<Long> ladder(long min, long max, long factor, long step) {
        List<Long> out = new ArrayList<>();
        long size = min;
        while (size <= max) {
            out.add(size);
            if (factor > 1) {
                if (size == 0 || size > max / factor) {
                    break;
                }
                size *= factor;
            } else {
                if (step <= 0 || size > max - step) {
                    break;
                }
                size += step;
            }
        }
        return out;
    }

    /** @return the sizes of this run */
    public List<Long> sizes() {
        return ladder(minBytes, maxBytes, stepFactor, stepBytes);
    }

    /** @return the sizes of the warm-up: from -b, doubling, up to -e (as nccl-tests) */
    public List<Long> warmupSizes() {
        return ladder(Math.max(minBytes, 1), maxBytes, 2, 0);
    }

    /** @return "2(factor)" or "1048576(bytes)", as nccl-tests' header shows the step */
    public String stepText() {
        return stepFactor > 1 ? stepFactor + "(factor)" : stepBytes + "(bytes)";
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "PerfArgs[t=%s b=%d e=%d f=%d i=%d n=%d w=%d c=%d o=%s d=%s r=%d g=%d"
                + " G=%d z=%d a=%d]",
                operations, minBytes, maxBytes, stepFactor, stepBytes, iters, warmup, check, ops, types, root, gpus,
                graphLaunches, blocking, average);
    }
}
