package org.nccl4j.tools.perf;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.nccl4j.DataType;
import org.nccl4j.ReduceOp;
import org.nccl4j.tools.cli.Tools;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The command line of nccl4j-perf, which is nccl-tests': the operation first, as the name of nccl-tests' program
 * ({@code nccl4j-perf all_reduce_perf -b 8 -e 1G -f 2}), then nccl-tests' flags with their meanings and defaults,
 * plus {@code --ops} to run several operations in one run, {@code --plot}, {@code --init_repeats},
 * {@code --op_times}, {@code --jit_quiet_ms} and {@code --jit_warmup}.
 *
 * <p>Each of nccl-tests' flags is either honoured or refused with one line that names it and says why; the table
 * is in docs/performance.md. Refusals that depend on the loaded NCCL ({@code -R}, {@code -x}) are made by
 * {@link #requireSupportedBy(int, String)} once NCCL is loaded.
 *
 * <p>Short options take their value as the next argument or attached ({@code -b 8}, {@code -b8}); long options
 * as the next argument or after '=' ({@code --minbytes 8}, {@code --minbytes=8}). Sizes accept nccl-tests' binary
 * suffixes K, M, G (and T), upper or lower case, with a decimal number ({@code 1.5K} = 1536). Every invalid value
 * is refused with an {@link IllegalArgumentException} naming the flag and the value.
 */
public final class PerfArgs {
    /** -t: threads per process (1, the only value nccl4j-perf runs). */
    public int threads = 1;
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
    /** -m: operations aggregated in one NCCL group per iteration (1). */
    public int aggIters = 1;
    /** -w: warm-up iterations per size (1). */
    public int warmup = 1;
    /** -N: how many times the whole ladder of sizes is run and printed; 0 runs until stopped (1). */
    public int runCycles = 1;
    /** -p: 1 asks for parallel initialization, which is what one thread per process does anyway (0). */
    public int parallelInit = 0;
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
    /** -z: 0 no waiting, 1 wait and barrier after each iteration, 2 wait after each iteration. */
    public int blocking = 0;
    /** -y: 1 issues on the legacy default stream (the NULL stream) instead of a stream of its own (0). */
    public int streamNull = 0;
    /** -T: seconds an operation may take before the watchdog declares it hung and aborts; 0 leaves nccl4j's (0). */
    public int timeoutSeconds = 0;
    /** -G: CUDA graph launches; 0 runs eagerly. */
    public int graphLaunches = 0;
    /** -C: 1 prints the host's time to issue an operation instead of its time on the GPU (0). */
    public int reportCputime = 0;
    /** -S: 1 ends every result line with the date and time (0). */
    public int reportTimestamps = 0;
    /** -a: across processes, report 0 rank 0's time, 1 the average, 2 the minimum, 3 the maximum (1). */
    public int average = 1;
    /**
     * -R: 0 no registration, 1 {@code ncclCommRegister} of the send and receive buffers, 2 symmetric windows
     * ({@code ncclCommWindowRegister} with {@code NCCL_WIN_COLL_SYMMETRIC}) (0). The buffers come from
     * {@code ncclMemAlloc} in every case where NCCL has it (2.19+), as nccl-tests allocates them.
     */
    public int localRegister = 0;
    /** -x: the communicator's CTA policy (0 default, 1 efficiency, 2 zero), or -1 to leave NCCL's (-1). */
    public int ctaPolicy = -1;
    /** -D: the device-API implementation; only 0, NCCL's host API, is run (0). */
    public int deviceImpl = 0;
    /** -V: CTAs of a device-API implementation (16); no effect since -D is 0. */
    public int deviceCtaCount = 16;
    /** -M: the memory report; only 0 is run (0). */
    public int memoryReport = 0;
    /** -u: the send and receive buffers start this many elements past their allocation (0). */
    public int unalign = 0;
    /** -K: with -I, per-iteration samples left out of the summary at the start (0). */
    public int perIterSkip = 0;
    /** --init_repeats: communicators created and timed again after the first, in the same process (default 0). */
    public int initRepeats = 0;
    /**
     * -I (--per_iter_timing) or --op_times: 1 records a CUDA event after every operation of eager runs and
     * reports the spread of this process's per-operation times (the extra event records cost host time) (0).
     */
    public int opTimes = 0;
    /**
     * --jit_quiet_ms: before each measurement, wait (spinning) until the JIT compiler has finished no compilation
     * for this many milliseconds, at most {@link #MAX_JIT_WAIT_MS}, then run the operation -w times (at most -n)
     * untimed, so that the GPUs do not come to the timed loop idle; 0 does neither (default 20).
     */
    public int jitQuietMs = 20;
    /**
     * --jit_warmup: before each sweep's first size, this many calls of the timed loop's own method, one iteration
     * each, of 16 bytes a rank (the smallest size when smaller), so that the JIT compiles it whole (C2) before any
     * size is timed; 0: none (default 10000).
     */
    public int jitWarmup = 10_000;
    /**
     * --timer: what a measurement's time is, {@link #TIMER_EVENTS} (the default: the measure of the project's C
     * baseline and of every figure so far) or {@link #TIMER_HOST} (nccl-tests' measure: scripts/bench/frontier.sh,
     * which runs the two side by side, asks for it).
     */
    public String timer = TIMER_EVENTS;
    /**
     * --timer host: the host's monotonic clock from the barrier's end to the streams' completion, as nccl-tests
     * times (its BenchTime: a timer started after the barrier, read after the stream synchronization).
     */
    public static final String TIMER_HOST = "host";
    /**
     * --timer events: CUDA events recorded on each stream before and after the timed iterations, as nccl4j-perf
     * timed before this option and as scripts/bench/native/nccl_perf_baseline.cu does.
     */
    public static final String TIMER_EVENTS = "events";
    /**
     * The host clock that --timer host reads, in nanoseconds: {@link System#nanoTime()}; tests set their own to
     * see what falls between its readings. Not a flag.
     */
    public java.util.function.LongSupplier clock = System::nanoTime;
    /** The most calls --jit_warmup makes. */
    static final int MAX_JIT_WARMUP = 1_000_000;
    /** The longest one --jit_quiet_ms wait lasts. */
    static final int MAX_JIT_WAIT_MS = 1000;
    /** The most iterations --op_times takes (one CUDA event each). */
    static final int MAX_OP_TIMES_ITERS = 100_000;
    /** -J: the JSON output file, or null. */
    public Path jsonFile;
    /** --plot: the PNG of bus bandwidth against size, or null. */
    public Path plotFile;
    /** The operations: the program named first, or --ops (all_reduce). */
    public List<Operation> operations = List.of(Operation.ALL_REDUCE);
    /** -h: print the usage and exit. */
    public boolean help;
    /** --version: print the versions and exit. */
    public boolean version;
    /** The arguments as given, for the JSON metadata. */
    public List<String> commandLine = List.of();

    /** The version code of NCCL 2.19.0, which adds {@code ncclMemAlloc} and {@code ncclCommRegister}. */
    static final int NCCL_2_19 = 21900;
    /** The version code of NCCL 2.27.0, which adds {@code ncclCommWindowRegister}. */
    static final int NCCL_2_27 = 22700;
    /** The version code of NCCL 2.27.3, the first release whose {@code ncclConfig_t} has {@code CTAPolicy}. */
    static final int NCCL_2_27_3 = 22703;
    /** The version code of NCCL 2.28.0, which adds {@code NCCL_CTA_POLICY_ZERO}. */
    static final int NCCL_2_28 = 22800;

    /** nccl-tests' programs that nccl4j-perf does not run. */
    private static final List<String> NOT_RUN = List.of("alltoallv", "hypercube");

    /** The usage text ({@code -h}), from the options' declarations ({@link Line}). */
    public static final String USAGE = new CommandLine(new Line()).getUsageMessage().stripTrailing();

    /**
     * Parses the command line.
     *
     * @param argv the arguments: the operation first (e.g. {@code all_reduce_perf}), then the flags
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
            Tools.parseArgs(cl, argv);
        } catch (Tools.UsageException e) {
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
        if (line.program != null) {
            if (!argv[0].equals(line.program)) {
                throw new IllegalArgumentException("the operation '" + line.program + "' must come first, as the "
                        + "program's name does in nccl-tests: nccl4j-perf " + line.program + " -b 8 ...");
            }
            if (line.ops != null) {
                throw invalid("--ops", line.ops, "cannot be combined with the operation named first ('"
                        + line.program + "'); give one of them");
            }
            a.operations = List.of(program(line.program));
        }
        for (Map.Entry<String, String> e : line.given().entrySet()) {
            a.set(e.getKey(), e.getValue());
        }
        a.validate();
        return a;
    }

    /** The version text ({@code --version}). */
    public static String versionText() {
        return Tools.versionText(new Line());
    }

    /**
     * nccl-tests' command line as picocli reads it: the program's name first, then the flags, short
     * ({@code -b 8}, {@code -b8}) and long ({@code --minbytes 8}, {@code --minbytes=8}); each value is checked by
     * {@link #set} with nccl-tests' meaning.
     */
    @Command(name = "nccl4j-perf", versionProvider = Tools.Version.class, sortOptions = false, usageHelpWidth = 120,
            description = {"nccl-tests' *_perf programs in one Java program, with nccl-tests' flags and table: name "
                    + "the program first (all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, "
                    + "reduce_perf, alltoall_perf, scatter_perf, gather_perf, sendrecv_perf), or several with "
                    + "--ops. Sizes take binary suffixes K, M, G, T (1.5K = 1536).",
                "Flags marked 'refused' exist for nccl-tests' command lines: their default is accepted, any other "
                    + "value is refused with a line saying why."},
            footer = {"", "Exit status: 0; 1 when an element was wrong; 2 for a usage error, or no NCCL, CUDA or GPU."})
    static final class Line {
        @Parameters(index = "0", arity = "0..1", paramLabel = "<program>", description = "The operation, as "
                + "nccl-tests' program: all_reduce_perf (default), all_gather_perf, ..., sendrecv_perf.")
        String program;
        @Option(names = {"-t", "--nthreads"}, paramLabel = "<n>", description = "Threads per process (default 1; "
                + "refused above 1: one thread per process, one process per GPU or -g).")
        String t;
        @Option(names = {"-g", "--ngpus"}, paramLabel = "<n>", description = "GPUs driven by this process (default "
                + "1; not with one process per GPU).")
        String g;
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
        @Option(names = {"-m", "--agg_iters"}, paramLabel = "<n>", description = "Operations per iteration, in one "
                + "NCCL group (default 1).")
        String m;
        @Option(names = {"-w", "--warmup_iters"}, paramLabel = "<n>", description = "Warm-up iterations (default 1).")
        String w;
        @Option(names = {"-N", "--run_cycles"}, paramLabel = "<n>", description = "Run and print the sizes n times "
                + "(default 1; 0: until stopped).")
        String cycles;
        @Option(names = {"-p", "--parallel_init"}, paramLabel = "<0|1>", description = "Parallel initialization "
                + "(default 0; 1 is what one thread per process does anyway).")
        String p;
        @Option(names = {"-c", "--check"}, paramLabel = "<n>", description = "Check results n times (default 1; 0 "
                + "prints N/A).")
        String c;
        @Option(names = {"-o", "--op"}, paramLabel = "<sum|prod|min|max|avg|all>", description = "Reduction operator "
                + "(default sum; mulsum refused).")
        String o;
        @Option(names = {"-d", "--datatype"}, paramLabel = "<type|all>", description = "float, half, bfloat16, double, "
                + "int8, uint8, int32, uint32, int64, uint64, fp8_e4m3 (f8e4m3), fp8_e5m2 (f8e5m2) (default float).")
        String d;
        @Option(names = {"-r", "--root"}, paramLabel = "<rank|all>", description = "Root of broadcast, reduce, "
                + "gather, scatter (default 0).")
        String r;
        @Option(names = {"-z", "--blocking"}, paramLabel = "<0|1|2>", description = "1: wait and barrier after each "
                + "iteration, 2: wait only (default 0; 3 refused).")
        String z;
        @Option(names = {"-y", "--stream_null"}, paramLabel = "<0|1>", description = "1: issue on the legacy default "
                + "stream (default 0).")
        String y;
        @Option(names = {"-T", "--timeout"}, paramLabel = "<seconds>", description = "An operation not done after "
                + "this long is aborted by the watchdog and the run fails (default 0: nccl4j's NCCL4J_TIMEOUT).")
        String timeout;
        @Option(names = {"-G", "--cudagraph"}, paramLabel = "<n>", description = "Capture the n iterations as a CUDA "
                + "graph, replay it n times (default 0).")
        String graph;
        @Option(names = {"-C", "--report_cputime"}, paramLabel = "<0|1>", description = "1: print the host's time to "
                + "issue an operation (cputime) instead of its time (default 0).")
        String cputime;
        @Option(names = {"-S", "--report_timestamps"}, paramLabel = "<0|1>", description = "1: end each result line "
                + "with the date and time (default 0).")
        String timestamps;
        @Option(names = {"-J", "--output_file"}, paramLabel = "<file.json>", description = "Write the results as "
                + "JSON (docs/formats.md).")
        String json;
        @Option(names = {"-a", "--average"}, paramLabel = "<0|1|2|3>", description = "Across processes: 0 rank 0, 1 "
                + "average, 2 min, 3 max (default 1).")
        String avg;
        @Option(names = {"-R", "--local_register"}, paramLabel = "<0|1|2>", description = "Buffers from ncclMemAlloc;"
                + " 1: ncclCommRegister them, 2: symmetric windows (NCCL 2.27+) (default 0).")
        String register;
        @Option(names = {"-x", "--cta_policy"}, paramLabel = "<0|1|2>", description = "The communicator's CTA policy: "
                + "0 default, 1 efficiency, 2 zero (NCCL 2.27.3+, 2: 2.28+) (default: NCCL's).")
        String cta;
        @Option(names = {"-D", "--device_implementation"}, paramLabel = "<n>", description = "Device-API kernels "
                + "(default 0, NCCL's host API; above 0 refused).")
        String device;
        @Option(names = {"-V", "--device_cta_count"}, paramLabel = "<n>", description = "CTAs of a device-API "
                + "implementation, 1..128 (default 16; no effect with -D 0).")
        String deviceCtas;
        @Option(names = {"-M", "--memory"}, paramLabel = "<0|1>", description = "Memory report (default 0; 1 "
                + "refused).")
        String memory;
        @Option(names = {"-u", "--unalign"}, paramLabel = "<n>", description = "Start the buffers n elements past "
                + "their allocation (default 0).")
        String u;
        @Option(names = {"-I", "--per_iter_timing"}, paramLabel = "<0|1>", description = "1: an event after every "
                + "eager operation; per-operation p10/p50/p90/max (default 0; as --op_times).")
        String perIter;
        @Option(names = {"-K", "--per_iter_skip"}, paramLabel = "<n>", description = "With -I, leave out the first n "
                + "operations from the summary (default 0).")
        String perIterSkip;
        @Option(names = {"--ops", "--operation"}, paramLabel = "<name[,name..]|all>", description = "Instead of the "
                + "program: several operations in one run (all_reduce, all_gather, ... or all).")
        String ops;
        @Option(names = "--plot", paramLabel = "<file.png>", description = "Draw bus bandwidth against size (one line "
                + "per operation).")
        String plot;
        @Option(names = "--init_repeats", paramLabel = "<n>", description = "After the first, create and time n more "
                + "communicators (default 0).")
        String initRepeats;
        @Option(names = "--op_times", paramLabel = "<0|1>", description = "1: an event after every eager operation; "
                + "per-operation p10/p50/p90/max (as -I).")
        String opTimes;
        @Option(names = "--jit_quiet_ms", paramLabel = "<ms>", description = "Before each measurement, wait until the "
                + "JIT compiled nothing for <ms> (at most 1 s), then run the operation -w times (at most -n) untimed "
                + "(default 20; 0: neither).")
        String jitQuiet;
        @Option(names = "--jit_warmup", paramLabel = "<calls>", description = "Before the first size, call the timed "
                + "loop this many times at 16 B a rank, so the JIT compiles it first (default 10000; 0: none).")
        String jitWarmup;
        @Option(names = "--timer", paramLabel = "<host|events>", description = "host: the host's clock from the "
                + "barrier to the streams' completion, as nccl-tests; events: CUDA events around the iterations "
                + "(default events; frontier.sh, against nccl-tests, uses host).")
        String timer;
        @Option(names = {"-h", "--help"}, usageHelp = true, description = "Print this help and exit.")
        boolean help;
        @Option(names = "--version", versionHelp = true, description = "Print the versions and exit.")
        boolean version;

        /** The options given, by their short (or only) name, in a fixed order. */
        Map<String, String> given() {
            String[] values = {t, g, b, e, i, f, n, m, w, cycles, p, c, o, d, r, z, y, timeout, graph, cputime,
                timestamps, json, avg, register, cta, device, deviceCtas, memory, u, perIter, perIterSkip, ops, plot,
                initRepeats, opTimes, jitQuiet, jitWarmup, timer};
            Map<String, String> out = new LinkedHashMap<>();
            for (int k = 0; k < values.length; k++) {
                if (values[k] != null) {
                    out.put(NAMES[k][0], values[k]);
                }
            }
            return out;
        }
    }

    /** Every option's short (or only) and long name, in {@link Line#given()}'s order, then -h. */
    private static final String[][] NAMES = {
        {"-t", "--nthreads"}, {"-g", "--ngpus"}, {"-b", "--minbytes"}, {"-e", "--maxbytes"}, {"-i", "--stepbytes"},
        {"-f", "--stepfactor"}, {"-n", "--iters"}, {"-m", "--agg_iters"}, {"-w", "--warmup_iters"},
        {"-N", "--run_cycles"}, {"-p", "--parallel_init"}, {"-c", "--check"}, {"-o", "--op"}, {"-d", "--datatype"},
        {"-r", "--root"}, {"-z", "--blocking"}, {"-y", "--stream_null"}, {"-T", "--timeout"}, {"-G", "--cudagraph"},
        {"-C", "--report_cputime"}, {"-S", "--report_timestamps"}, {"-J", "--output_file"}, {"-a", "--average"},
        {"-R", "--local_register"}, {"-x", "--cta_policy"}, {"-D", "--device_implementation"},
        {"-V", "--device_cta_count"}, {"-M", "--memory"}, {"-u", "--unalign"}, {"-I", "--per_iter_timing"},
        {"-K", "--per_iter_skip"}, {"--ops", "--ops"}, {"--plot", "--plot"}, {"--init_repeats", "--init_repeats"},
        {"--op_times", "--op_times"}, {"--jit_quiet_ms", "--jit_quiet_ms"}, {"--jit_warmup", "--jit_warmup"},
        {"--timer", "--timer"}, {"-h", "--help"}};

    /**
     * The flags of nccl-tests' {@code src/common.cu} (short and long names), every one of which nccl4j-perf takes:
     * honoured, or refused with a line naming it.
     */
    public static final List<String> NCCL_TESTS_FLAGS = List.of("-t", "--nthreads", "-g", "--ngpus", "-b",
            "--minbytes", "-e", "--maxbytes", "-i", "--stepbytes", "-f", "--stepfactor", "-n", "--iters", "-m",
            "--agg_iters", "-w", "--warmup_iters", "-N", "--run_cycles", "-p", "--parallel_init", "-c", "--check",
            "-o", "--op", "-d", "--datatype", "-r", "--root", "-z", "--blocking", "-y", "--stream_null", "-T",
            "--timeout", "-G", "--cudagraph", "-C", "--report_cputime", "-S", "--report_timestamps", "-J",
            "--output_file", "-a", "--average", "-R", "--local_register", "-x", "--cta_policy", "-D",
            "--device_implementation", "-V", "--device_cta_count", "-M", "--memory", "-u", "--unalign", "-I",
            "--per_iter_timing", "-K", "--per_iter_skip", "-h", "--help");

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
            case "-t":
                threads = (int) parseInt(flag, v, 1, Integer.MAX_VALUE, "; -t is nccl-tests' threads per process: "
                        + "name the operation first (nccl4j-perf all_reduce_perf ...) or with --ops");
                if (threads != 1) {
                    throw invalid(flag, v, "nccl4j-perf runs one thread per process (one JVM per GPU rank): use -t 1,"
                            + " and launch one rank per GPU with mpirun or nccl4j-run, or drive several with -g");
                }
                break;
            case "-g": gpus = (int) parseInt(flag, v, 1, 1024); break;
            case "-b": minBytes = parseSize(flag, v); break;
            case "-e": maxBytes = parseSize(flag, v); break;
            case "-i": stepBytes = parseSize(flag, v); break;
            case "-f": stepFactor = parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-n": iters = (int) parseInt(flag, v, 1, Integer.MAX_VALUE); break;
            case "-m": aggIters = (int) parseInt(flag, v, 1, Integer.MAX_VALUE); break;
            case "-w": warmup = (int) parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-N": runCycles = (int) parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-p": parallelInit = (int) parseInt(flag, v, 0, 1); break;
            case "-c": check = (int) parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-o": ops = parseOps(v); break;
            case "-d": types = parseTypes(v); break;
            case "-r": root = v.equalsIgnoreCase("all") ? -1 : (int) parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-z":
                blocking = (int) parseInt(flag, v, 0, 3);
                if (blocking == 3) {
                    throw invalid(flag, v, "is not supported by nccl4j-perf (nccl-tests' -z 3 excludes barrier time "
                            + "per iteration); use 0, 1 or 2");
                }
                break;
            case "-y": streamNull = (int) parseInt(flag, v, 0, 1); break;
            case "-T": timeoutSeconds = (int) parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-G": graphLaunches = (int) parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "-C": reportCputime = (int) parseInt(flag, v, 0, 1); break;
            case "-S": reportTimestamps = (int) parseInt(flag, v, 0, 1); break;
            case "-J": jsonFile = path(flag, v); break;
            case "-a": average = (int) parseInt(flag, v, 0, 3); break;
            case "-R": localRegister = (int) parseInt(flag, v, 0, 2); break;
            case "-x": ctaPolicy = (int) parseInt(flag, v, 0, 2); break;
            case "-D":
                deviceImpl = (int) parseInt(flag, v, 0, Integer.MAX_VALUE);
                if (deviceImpl != 0) {
                    throw invalid(flag, v, "is not supported: nccl4j-perf has no device-API kernels (nccl-tests' "
                            + "own CUDA code); use -D 0, NCCL's host API");
                }
                break;
            case "-V": deviceCtaCount = (int) parseInt(flag, v, 1, 128); break;
            case "-M":
                memoryReport = (int) parseInt(flag, v, 0, 1);
                if (memoryReport != 0) {
                    throw invalid(flag, v, "is not supported: the report needs cudaMemGetInfo, which nccl4j's Cuda "
                            + "does not offer; use -M 0 (nvidia-smi shows the memory in use)");
                }
                break;
            case "-u": unalign = (int) parseInt(flag, v, 0, 1 << 20); break;
            case "-I": opTimes = (int) parseInt(flag, v, 0, 1); break;
            case "-K": perIterSkip = (int) parseInt(flag, v, 0, Integer.MAX_VALUE); break;
            case "--ops": operations = parseOperations(v); break;
            case "--plot": plotFile = path(flag, v); break;
            case "--init_repeats": initRepeats = (int) parseInt(flag, v, 0, 100_000); break;
            case "--op_times": opTimes = (int) parseInt(flag, v, 0, 1); break;
            case "--jit_quiet_ms": jitQuietMs = (int) parseInt(flag, v, 0, MAX_JIT_WAIT_MS); break;
            case "--jit_warmup": jitWarmup = (int) parseInt(flag, v, 0, MAX_JIT_WARMUP); break;
            case "--timer":
                if (!v.equals(TIMER_HOST) && !v.equals(TIMER_EVENTS)) {
                    throw invalid(flag, v, "must be host (the host's clock, as nccl-tests) or events (CUDA events)");
                }
                timer = v;
                break;
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
            throw invalid("--op_times", Integer.toString(opTimes), "records one CUDA event per iteration (as -I), so"
                    + " -n (--iters) must be at most " + MAX_OP_TIMES_ITERS + ", got " + iters);
        }
        if (opTimes != 0 && graphLaunches > 0) {
            throw invalid("--op_times", Integer.toString(opTimes), "cannot be combined with -G (--cudagraph):"
                    + " the operations of a replayed graph cannot be timed one by one (-I neither); drop one of them");
        }
        if (perIterSkip != 0 && opTimes == 0) {
            throw invalid("-K", Integer.toString(perIterSkip), "needs per-iteration timing: add -I 1");
        }
        if (perIterSkip >= iters) {
            throw invalid("-K", Integer.toString(perIterSkip), "must leave samples: it must be below -n (--iters) "
                    + iters);
        }
        if (streamNull != 0 && graphLaunches > 0) {
            throw invalid("-y", Integer.toString(streamNull), "cannot be combined with -G (--cudagraph): CUDA cannot "
                    + "capture the legacy default stream; drop one of them");
        }
        if (gpus > 1 && (ctaPolicy >= 0 || timeoutSeconds > 0)) {
            String flag = ctaPolicy >= 0 ? "-x" : "-T";
            throw invalid(flag, Integer.toString(ctaPolicy >= 0 ? ctaPolicy : timeoutSeconds), "needs a communicator "
                    + "configuration, which -g " + gpus + " (ncclCommInitAll) cannot take: run one process per GPU "
                    + "(mpirun or nccl4j-run) with -g 1");
        }
        if (gpus > 1 && localRegister == 2) {
            throw invalid("-R", "2", "with -g " + gpus + " would register the windows of " + gpus + " communicators "
                    + "in one NCCL group, which nccl4j-perf does not do: run one process per GPU with -g 1");
        }
    }

    /**
     * Refuses what the loaded NCCL cannot honour: -R 1 before 2.19, -R 2 before 2.27, -x before 2.27.3 and -x 2
     * before 2.28, each with a line naming the flag and the release that adds it.
     *
     * @param versionCode the loaded NCCL's version code (e.g. 22703 for 2.27.3)
     * @param version the loaded NCCL's version text, for the message
     * @throws IllegalArgumentException naming the flag and the release
     */
    public void requireSupportedBy(int versionCode, String version) {
        if (localRegister == 1 && versionCode < NCCL_2_19) {
            throw invalid("-R", "1", "needs NCCL 2.19 or newer (ncclCommRegister); the loaded NCCL is " + version);
        }
        if (localRegister == 2 && versionCode < NCCL_2_27) {
            throw invalid("-R", "2", "needs NCCL 2.27 or newer (ncclCommWindowRegister, symmetric windows); the "
                    + "loaded NCCL is " + version + ": use -R 1");
        }
        if (ctaPolicy >= 0 && versionCode < NCCL_2_27_3) {
            throw invalid("-x", Integer.toString(ctaPolicy), "needs NCCL 2.27.3 or newer (ncclConfig_t.CTAPolicy); "
                    + "the loaded NCCL is " + version);
        }
        if (ctaPolicy == 2 && versionCode < NCCL_2_28) {
            throw invalid("-x", "2", "needs NCCL 2.28 or newer (NCCL_CTA_POLICY_ZERO); the loaded NCCL is "
                    + version);
        }
    }

    /**
     * Whether the buffers come from {@code ncclMemAlloc}: where NCCL has it (2.19+), as nccl-tests built against
     * NCCL 2.19 or newer allocates them whatever -R says; before, {@code cudaMalloc}.
     *
     * @param versionCode the loaded NCCL's version code
     * @return true for {@code ncclMemAlloc}
     */
    public static boolean ncclMemAlloc(int versionCode) {
        return versionCode >= NCCL_2_19;
    }

    /**
     * The operation named by nccl-tests' program: {@code all_reduce_perf}, also with a directory
     * ({@code ./build/all_reduce_perf}) or nccl-tests' NAME_SUFFIX ({@code all_reduce_perf_mpi}), or the bare name
     * ({@code all_reduce}).
     */
    static Operation program(String text) {
        String name = text.substring(text.lastIndexOf('/') + 1);
        int perf = name.toLowerCase(Locale.ROOT).indexOf("_perf");
        String base = perf > 0 ? name.substring(0, perf) : name;
        if (NOT_RUN.contains(base.toLowerCase(Locale.ROOT))) {
            throw new IllegalArgumentException("'" + text + "': nccl-tests' " + base + "_perf is not implemented by "
                    + "nccl4j-perf; it runs " + programs());
        }
        Operation o = Operation.byName(base);
        if (o == null) {
            throw new IllegalArgumentException("'" + text + "' is not one of nccl-tests' programs that nccl4j-perf "
                    + "runs: name " + programs() + " first (or several with --ops)");
        }
        return o;
    }

    private static String programs() {
        StringBuilder sb = new StringBuilder();
        for (Operation o : Operation.values()) {
            sb.append(sb.length() == 0 ? "" : ", ").append(o.perfName()).append("_perf");
        }
        return sb.toString();
    }

    private static Path path(String flag, String v) {
        if (v.isBlank()) {
            throw invalid(flag, v, "is not a file name");
        }
        return Path.of(v);
    }

    static long parseInt(String flag, String v, long min, long max) {
        return parseInt(flag, v, min, max, "");
    }

    /** {@link #parseInt(String, String, long, long)} whose refusal of a non-number ends with {@code hint}. */
    private static long parseInt(String flag, String v, long min, long max, String hint) {
        long x;
        try {
            x = Long.decode(v.strip());
        } catch (NumberFormatException e) {
            throw invalid(flag, v, "is not a whole number" + hint);
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
                throw invalid("--ops", s, "is not an operation: use all_reduce, all_gather, reduce_scatter, "
                        + "broadcast, reduce, sendrecv, alltoall, gather, scatter or all (-o/--op is the reduction "
                        + "operator)");
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
        if (v.strip().equalsIgnoreCase("mulsum")) {
            throw invalid("-o", v, "is not supported: nccl4j-perf does not measure ncclRedOpCreatePreMulSum; use sum, "
                    + "prod, min, max, avg or all (all is these five)");
        }
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

    /** @return whether the --jit_warmup calls run: asked for, in an eager run (graph runs time launches) */
    boolean jitWarmsUp() {
        return jitWarmup > 0 && graphLaunches == 0;
    }

    /** @return "2(factor)" or "1048576(bytes)", as nccl-tests' header shows the step */
    public String stepText() {
        return stepFactor > 1 ? stepFactor + "(factor)" : stepBytes + "(bytes)";
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "PerfArgs[ops=%s b=%d e=%d f=%d i=%d n=%d m=%d w=%d N=%d c=%d o=%s d=%s r=%d"
                + " g=%d G=%d z=%d y=%d a=%d R=%d x=%d u=%d C=%d S=%d T=%d I=%d K=%d timer=%s]",
                operations, minBytes, maxBytes, stepFactor, stepBytes, iters, aggIters, warmup, runCycles, check, ops,
                types, root, gpus, graphLaunches, blocking, streamNull, average, localRegister, ctaPolicy, unalign,
                reportCputime, reportTimestamps, timeoutSeconds, opTimes, perIterSkip, timer);
    }
}
