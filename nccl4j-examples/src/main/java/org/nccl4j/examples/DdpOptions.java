package org.nccl4j.examples;

import java.util.Locale;

/**
 * The command line of {@link DdpTraining}.
 *
 * <pre>
 * DdpTraining [--steps N] [--bucket-cap-mb MB] [--trace FILE] [--seed N] [--no-comm]
 *             [--size N] [--batch N] [--lr X]
 * </pre>
 * Defaults are the lecture's: 30 steps, 25 MB buckets, three 4000 x 4000 layers, batch 1000, SGD lr 0.001.
 * {@code --trace} may contain {@code {rank}}; a name without it gets {@code _rank<r>} before its extension.
 */
final class DdpOptions {
    static final String USAGE = "usage: DdpTraining [--steps N (30)] [--bucket-cap-mb MB (25)] [--trace FILE"
            + " (trace_ddp_rank{rank}.json; trace_nocomm_rank{rank}.json with --no-comm)] [--seed N (1234)]"
            + " [--no-comm] [--size N (4000)] [--batch N (1000)] [--lr X (0.001)]";

    /** The first step (1-based) whose time counts in the median and the trace, as in "steps 3..30". */
    static final int FIRST_MEASURED_STEP = 3;

    int steps = 30;
    double bucketCapMB = 25;
    String trace;
    long seed = 1234;
    boolean noComm;
    int size = 4000;
    int batch = 1000;
    float lr = 0.001f;
    boolean help;

    private DdpOptions() {
    }

    /**
     * @param args the command line
     * @return the options
     * @throws IllegalArgumentException on an unknown flag, a missing or bad value, with the usage
     */
    static DdpOptions parse(String... args) {
        DdpOptions o = new DdpOptions();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--steps" -> o.steps = positiveInt(a, value(args, ++i, a));
                case "--bucket-cap-mb" -> {
                    String v = value(args, ++i, a);
                    try {
                        o.bucketCapMB = Double.parseDouble(v);
                    } catch (NumberFormatException e) {
                        throw bad(a, v);
                    }
                    if (!(o.bucketCapMB > 0) || Double.isInfinite(o.bucketCapMB)) {
                        throw bad(a, v);
                    }
                }
                case "--trace" -> o.trace = value(args, ++i, a);
                case "--seed" -> {
                    String v = value(args, ++i, a);
                    try {
                        o.seed = Long.parseLong(v);
                    } catch (NumberFormatException e) {
                        throw bad(a, v);
                    }
                }
                case "--no-comm" -> o.noComm = true;
                case "--size" -> o.size = positiveInt(a, value(args, ++i, a));
                case "--batch" -> o.batch = positiveInt(a, value(args, ++i, a));
                case "--lr" -> {
                    String v = value(args, ++i, a);
                    try {
                        o.lr = Float.parseFloat(v);
                    } catch (NumberFormatException e) {
                        throw bad(a, v);
                    }
                    if (!(o.lr > 0) || Float.isInfinite(o.lr)) {
                        throw bad(a, v);
                    }
                }
                case "-h", "--help" -> o.help = true;
                default -> throw new IllegalArgumentException("unknown argument " + a + "\n" + USAGE);
            }
        }
        // cuRAND's normal generator makes pairs: the batch's element count must be even.
        if (((long) o.size * o.batch) % 2 != 0) {
            throw new IllegalArgumentException("--size x --batch must be even (cuRAND draws normals in pairs), got "
                    + o.size + " x " + o.batch + "\n" + USAGE);
        }
        if ((long) o.size * o.size > Integer.MAX_VALUE || (long) o.size * o.batch > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--size " + o.size + " with --batch " + o.batch
                    + " makes a matrix of more than 2^31-1 elements (cuBLAS' 32-bit API)\n" + USAGE);
        }
        return o;
    }

    /**
     * The trace file of one rank: {@code {rank}} in the name is replaced by the rank; a name without it gets
     * {@code _rank<r>} before its extension when there are several ranks, so that ranks never share a file.
     *
     * @param rank this rank
     * @param worldSize the number of ranks
     * @return the path to write
     */
    String traceFile(int rank, int worldSize) {
        String name = trace != null ? trace
                : noComm ? "trace_nocomm_rank{rank}.json" : "trace_ddp_rank{rank}.json";
        if (name.contains("{rank}")) {
            return name.replace("{rank}", Integer.toString(rank));
        }
        if (worldSize <= 1) {
            return name;
        }
        int slash = name.lastIndexOf('/');
        int dot = name.lastIndexOf('.');
        if (dot <= slash + 1) { // no extension (or a dot file)
            return name + "_rank" + rank;
        }
        return name.substring(0, dot) + "_rank" + rank + name.substring(dot);
    }

    private static String value(String[] args, int i, String flag) {
        if (i >= args.length) {
            throw new IllegalArgumentException(flag + " needs a value\n" + USAGE);
        }
        return args[i];
    }

    private static int positiveInt(String flag, String v) {
        int n;
        try {
            n = Integer.parseInt(v.strip());
        } catch (NumberFormatException e) {
            throw bad(flag, v);
        }
        if (n <= 0) {
            throw bad(flag, v);
        }
        return n;
    }

    private static IllegalArgumentException bad(String flag, String v) {
        return new IllegalArgumentException("bad value for " + flag + ": " + v + "\n" + USAGE);
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "steps=%d bucket_cap_mb=%s seed=%d size=%d batch=%d lr=%s%s", steps,
                bucketCapMB, seed, size, batch, lr, noComm ? " no-comm" : "");
    }
}
