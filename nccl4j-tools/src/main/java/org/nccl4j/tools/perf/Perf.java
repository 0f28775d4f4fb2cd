package org.nccl4j.tools.perf;

import org.nccl4j.diagnostics.ExitStatus;
import org.nccl4j.diagnostics.StepStats;
import org.nccl4j.tools.cli.JsonDocs;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.Nccl;
import org.nccl4j.ReduceOp;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.tools.cli.Programs;
import org.nccl4j.tools.cli.Tools;

/**
 * nccl4j-perf: nccl-tests' benchmarks, written with nccl4j, with nccl-tests' flags, output columns and
 * bandwidth formulas, so that its numbers can be laid beside those of {@code all_reduce_perf} and friends.
 *
 * <pre>
 * scripts/nccl4j-perf all_reduce_perf -b 8 -e 128M -f 2 -g 2                    one process, 2 GPUs
 * mpirun -np 2 ... scripts/nccl4j-perf all_reduce_perf -b 8 -e 128M -f 2        one process per GPU
 * scripts/nccl4j-perf --ops all -b 8 -e 128M -f 2 -g 2                           every operation in one run
 * </pre>
 * The flags are in {@link PerfArgs}; sizes, counts and bus-bandwidth factors in {@link Operation}; the data
 * check in {@link Pattern}; the loop in {@link Bench}. Exit status: 0, 1 when an element was wrong, 2 on a
 * usage error or when no GPU, CUDA runtime or NCCL is present.
 */
public final class Perf {
    /** The version of the -J results format (docs/formats.md); files without one are version 0 and read the same. */
    public static final int RESULTS_VERSION = 1;

    /** This program's name in reports. */
    public static final String TOOL = "nccl4j-perf";

    private Perf() {
    }

    /**
     * Runs the benchmark.
     *
     * @param argv see {@link PerfArgs#USAGE}
     */
    public static void main(String[] argv) {
        System.exit(status(argv, System.out, System.err));
    }

    /**
     * What {@link #main} does but for exiting: parses the flags, prints the usage for {@code -h}, runs.
     *
     * @param argv see {@link PerfArgs#USAGE}
     * @param out where the usage and rank 0's report go
     * @param err where refusals and the no-GPU/CUDA/NCCL message go
     * @return the exit status: 0; 1 when an element was wrong; 2 on a usage error, or when there is no NCCL, no
     *         CUDA runtime or no usable GPU
     *         ({@link org.nccl4j.diagnostics.ExitStatus#of(String, java.util.function.IntSupplier, PrintStream)})
     */
    static int status(String[] argv, PrintStream out, PrintStream err) {
        try {
            PerfArgs args = PerfArgs.parse(argv);
            if (args.help) {
                out.println(PerfArgs.USAGE);
                return 0;
            }
            if (args.version) {
                out.println(PerfArgs.versionText());
                return 0;
            }
            return ExitStatus.of(TOOL, () -> run(args, out), err);
        } catch (IllegalArgumentException e) {
            err.println(TOOL + ": " + e.getMessage());
            return 2;
        }
    }

    /**
     * Runs every selected operation, printing nccl-tests' report on the process that holds rank 0.
     *
     * @param args the options
     * @param out where rank 0 prints
     * @return 0, or 1 when an element was wrong
     */
    public static int run(PerfArgs args, PrintStream out) {
        NcclLibrary lib = Nccl.library();
        List<PerfRow> all = new ArrayList<>();
        long wrongTotal = 0;
        Map<String, Double> avgBusbw = new LinkedHashMap<>();
        try (Bench bench = Bench.open(args)) {
            boolean print = bench.printer();
            int n = bench.nranks();
            List<Integer> roots = new ArrayList<>();
            if (args.root < 0) {
                for (int r = 0; r < n; r++) {
                    roots.add(r);
                }
            } else if (args.root >= n) {
                throw PerfArgs.invalid("-r", Integer.toString(args.root), "is not a rank of the " + n + " ranks");
            } else {
                roots.add(args.root);
            }
            List<DataType> types = new ArrayList<>();
            for (DataType t : args.types) {
                boolean fp8 = t == DataType.FLOAT8_E4M3 || t == DataType.FLOAT8_E5M2;
                if (fp8 && lib.versionCode() < 22400) {
                    if (args.types.size() == 1) {
                        throw PerfArgs.invalid("-d", Elements.name(t), "needs NCCL 2.24 or newer; the loaded NCCL is "
                                + lib.version());
                    }
                    continue; // "-d all" on an NCCL without fp8
                }
                types.add(t);
            }
            for (Operation o : args.operations) {
                if (print) {
                    header(out, args, bench, lib, o);
                }
                double bwSum = 0;
                int bwCount = 0;
                long wrongOp = 0;
                List<ReduceOp> ops = o.reduces() ? args.ops : java.util.Collections.singletonList(ReduceOp.SUM);
                List<Integer> opRoots = o.rooted() ? roots : List.of(0);
                for (DataType t : types) {
                    for (ReduceOp op : ops) {
                        ReduceOp redop = o.reduces() ? op : null;
                        for (int root : opRoots) {
                            bench.barrier();
                            bench.warmup(o, t, redop, root);
                            for (long size : cycles(args.sizes(), args.runCycles)) {
                                PerfRow oop = bench.measure(o, t, redop, root, size, false);
                                PerfRow ip = bench.measure(o, t, redop, root, size, true);
                                for (PerfRow r : List.of(oop, ip)) {
                                    all.add(r);
                                    bwSum += r.busbw();
                                    bwCount++;
                                    wrongOp += Math.max(0, r.wrong());
                                }
                                if (print) {
                                    out.println(Table.line(oop, ip, args.reportTimestamps != 0 ? Table.now()
                                            : null));
                                    if (oop.opTimeUs() != null && ip.opTimeUs() != null) {
                                        out.println(opTimesLine(bench.communicators().get(0).rank(), oop.opTimeUs(),
                                                ip.opTimeUs()));
                                    }
                                    out.flush();
                                }
                            }
                        }
                    }
                }
                double avg = bwCount == 0 ? 0 : bwSum / bwCount;
                avgBusbw.put(o.perfName(), avg);
                wrongTotal += wrongOp;
                if (print) {
                    Table.footer(wrongOp, avg, o.perfName()).forEach(out::println);
                }
            }
            if (print) {
                if (args.jitQuietMs > 0) {
                    out.printf(Locale.ROOT, "# JIT quiet waits before the measurements (--jit_quiet_ms %d): %.1f ms"
                            + " in all%n", args.jitQuietMs, bench.jitWaitMs());
                }
                if (args.jitWarmsUp()) {
                    out.printf(Locale.ROOT, "# JIT warm-up: %d calls of the timed loop (16 B a rank at most) before"
                            + " each sweep (--jit_warmup)%n", args.jitWarmup);
                }
                Map<String, Object> doc = document(args, bench, lib, all, avgBusbw);
                if (args.jsonFile != null) {
                    write(args.jsonFile, JsonDocs.write(doc));
                    out.println("# Wrote JSON output to " + args.jsonFile);
                }
                if (args.plotFile != null) {
                    try {
                        Plot.write(args.plotFile, TOOL + ": " + n + " ranks, NCCL " + lib.version()
                                + (args.graphLaunches > 0 ? ", CUDA graph" : ""),
                                Plot.seriesOf(all, "", List.of("out-of-place", "in-place")));
                    } catch (IOException e) {
                        throw new IllegalArgumentException("--plot: cannot write " + args.plotFile + ": " + e, e);
                    }
                    out.println("# Wrote plot to " + args.plotFile);
                }
            }
        }
        return wrongTotal == 0 ? 0 : 1;
    }

    /**
     * -N: the sizes {@code cycles} times over, or without end for 0 (nccl-tests' run cycles).
     *
     * @param sizes one ladder of sizes
     * @param cycles how many times; 0 for ever
     * @return the sizes to measure, in order
     */
    static Iterable<Long> cycles(List<Long> sizes, int cycles) {
        return () -> new java.util.Iterator<Long>() {
            private int cycle;
            private int next;

            @Override
            public boolean hasNext() {
                return !sizes.isEmpty() && (cycles == 0 || cycle < cycles);
            }

            @Override
            public Long next() {
                if (!hasNext()) {
                    throw new java.util.NoSuchElementException();
                }
                Long s = sizes.get(next++);
                if (next == sizes.size()) {
                    next = 0;
                    cycle++;
                }
                return s;
            }
        };
    }

    private static void write(Path file, String text) {
        try {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.writeString(file, text);
        } catch (IOException e) {
            throw new IllegalArgumentException("-J (--output_file): cannot write " + file + ": " + e, e);
        }
    }

    /** This host's name, looked up once (the name service may be slow): every header and the JSON print it. */
    static String hostname() {
        String h = hostname;
        if (h == null) {
            try {
                h = InetAddress.getLocalHost().getHostName();
            } catch (IOException e) {
                String env = System.getenv("HOSTNAME");
                h = env == null ? "unknown" : env;
            }
            hostname = h;
        }
        return h;
    }

    private static volatile String hostname;

    static long pid() {
        return ProcessHandle.current().pid();
    }

    private static void header(PrintStream out, PerfArgs a, Bench bench, NcclLibrary lib, Operation o) {
        out.printf(Locale.ROOT, "# %s version %s nccl-library=%d (NCCL %s, %s)%n", TOOL, Tools.nccl4jVersion(),
                lib.versionCode(), lib.version(), lib.path());
        out.println("# Collective test starting: " + o.perfName());
        out.printf(Locale.ROOT, "# nThread 1 nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d "
                + "agg iters: %d validation: %d graph: %d%n", bench.localRanks(), a.minBytes, a.maxBytes, a.stepText(),
                a.warmup, a.iters, a.aggIters, a.check, a.graphLaunches);
        if (a.blocking == 1) {
            out.println("# Blocking Enabled: wait and barrier after each iteration");
        } else if (a.blocking == 2) {
            out.println("# Blocking Enabled: wait after each iteration, no barrier");
        }
        out.println("# Buffers: " + bench.bufferText());
        if (a.ctaPolicy >= 0 || a.timeoutSeconds > 0) {
            out.println("# Communicator config:" + (a.ctaPolicy >= 0 ? " CTAPolicy " + a.ctaPolicy : "")
                    + (a.timeoutSeconds > 0 ? " timeout " + a.timeoutSeconds + " s" : ""));
        }
        out.println("#");
        out.println("# Using devices");
        String host = hostname();
        for (Communicator c : bench.communicators()) {
            out.printf(Locale.ROOT, "#  Rank %2d Group %2d Pid %6d on %10s device %2d%n", c.rank(), 0, pid(), host,
                    c.device());
        }
        if (bench.perProcess() && bench.nranks() > 1) {
            out.printf(Locale.ROOT, "#  Ranks 1..%d: one process each (%s)%n", bench.nranks() - 1,
                    "launched per rank");
        }
        out.printf(Locale.ROOT, "# Communicator init: %.1f ms (%s)%n", bench.initMs(),
                bench.perProcess() ? "Communicator.fromEnvironment: id exchange + ncclCommInitRank"
                        : "Communicator.initAll: ncclCommInitAll of " + bench.nranks() + " GPUs");
        double[] again = bench.initRepeatMs();
        if (again.length > 0) {
            out.printf(Locale.ROOT, "# Communicator re-created %d times in this process: median %.1f ms (min %.1f,"
                    + " max %.1f)%n", again.length, StepStats.median(again), Arrays.stream(again).min().getAsDouble(),
                    Arrays.stream(again).max().getAsDouble());
        }
        out.println("#");
        Table.header(a.reportCputime != 0, a.reportTimestamps != 0).forEach(out::println);
    }

    /** The -J document: run metadata, then one record per (operation, size, type, redop, root, placement). */
    static Map<String, Object> document(PerfArgs a, Bench bench, NcclLibrary lib, List<PerfRow> results,
            Map<String, Double> avgBusbw) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put(JsonDocs.FORMAT, "nccl4j-perf");
        doc.put(JsonDocs.VERSION, RESULTS_VERSION);
        doc.put("tool", TOOL);
        doc.put("tool_version", Tools.nccl4jVersion());
        doc.put("date", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
        doc.put("hostname", hostname());
        doc.put("nccl_version", lib.version());
        doc.put("nccl_version_code", lib.versionCode());
        doc.put("nccl_library", lib.path());
        doc.put("ranks", bench.nranks());
        doc.put("processes", bench.processes());
        doc.put("gpus_per_process", bench.localRanks());
        doc.put("mode", bench.perProcess() ? "process-per-gpu" : "single-process");
        doc.put("init_ms", bench.initMs());
        double[] again = bench.initRepeatMs();
        if (again.length > 0) {
            List<Object> list = new ArrayList<>();
            for (double v : again) {
                list.add(v);
            }
            doc.put("init_repeat_ms", list);
            doc.put("init_repeat_median_ms", StepStats.median(again));
        }
        doc.put("runtime", "java " + System.getProperty("java.version") + " (" + ManagementFactory.getRuntimeMXBean()
                .getVmName() + ")");
        doc.put("config", config(a));
        doc.put("command_line", new ArrayList<Object>(a.commandLine));
        doc.put("results", records(results, a));
        doc.put("avg_busbw", new LinkedHashMap<String, Object>(avgBusbw));
        return doc;
    }

    static Map<String, Object> config(PerfArgs a) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("minbytes", a.minBytes);
        c.put("maxbytes", a.maxBytes);
        c.put("stepfactor", a.stepFactor);
        c.put("stepbytes", a.stepBytes);
        c.put("iters", a.iters);
        c.put("agg_iters", a.aggIters);
        c.put("warmup_iters", a.warmup);
        c.put("run_cycles", a.runCycles);
        c.put("check", a.check);
        c.put("cudagraph", a.graphLaunches);
        c.put("blocking", a.blocking);
        c.put("average", a.average);
        c.put("local_register", a.localRegister);
        c.put("cta_policy", a.ctaPolicy);
        c.put("stream_null", a.streamNull);
        c.put("unalign", a.unalign);
        c.put("report_cputime", a.reportCputime);
        c.put("timeout", a.timeoutSeconds);
        c.put("jit_quiet_ms", a.jitQuietMs);
        c.put("timer", a.timer);
        return c;
    }

    /**
     * The -J records, with {@code "op_time_us": {"p10", "p50", "p90", "max"}} for results measured with
     * --op_times.
     */
    static List<Object> records(List<PerfRow> results, PerfArgs a) {
        List<Object> out = new ArrayList<>();
        for (PerfRow r : results) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("op", r.operation().perfName());
            m.put("size", r.size());
            m.put("count", r.count());
            m.put("type", r.type());
            m.put("redop", r.redop());
            m.put("root", r.root());
            m.put("placement", r.placement());
            m.put("graph", a.graphLaunches > 0);
            m.put("time_us", r.timeUs());
            m.put("algbw", r.algbw());
            m.put("busbw", r.busbw());
            m.put("wrong", r.wrong() < 0 ? null : r.wrong());
            if (!Double.isNaN(r.allocBytes())) {
                m.put("alloc_bytes", r.allocBytes());
            }
            double[] times = r.opTimeUs();
            if (times != null) {
                Map<String, Object> q = new LinkedHashMap<>();
                q.put("p10", times[0]);
                q.put("p50", times[1]);
                q.put("p90", times[2]);
                q.put("max", times[3]);
                q.put("first", times[4]);
                q.put("start_spread", times[5]);
                m.put("op_time_us", q);
            }
            out.add(m);
        }
        return out;
    }

    /**
     * The comment line under a row with --op_times: this process's first GPU's per-operation times, its first
     * operation's, and the spread of the timed loop's start across processes ({@link Bench}'s opTimes).
     */
    static String opTimesLine(int rank, double[] outOfPlace, double[] inPlace) {
        return String.format(Locale.ROOT, "#  per operation (us, rank %d): out-of-place %s; in-place %s", rank,
                opTimes(outOfPlace), opTimes(inPlace));
    }

    private static String opTimes(double[] t) {
        return String.format(Locale.ROOT, "p10 %.2f p50 %.2f p90 %.2f max %.2f first %.2f start spread %.2f", t[0],
                t[1], t[2], t[3], t[4], t[5]);
    }
}
