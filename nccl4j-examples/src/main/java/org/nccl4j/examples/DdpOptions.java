package org.nccl4j.examples;

import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The command line of {@link DdpTraining}, parsed by picocli ({@link Args#parse}).
 *
 * <pre>
 * DdpTraining [--steps N] [--bucket-cap-mb MB] [--trace FILE] [--seed N] [--no-comm]
 *             [--size N] [--batch N] [--lr X] [--symmetric] [--cta-policy P] [--comm-priority high|normal]
 *             [--overlap-optimizer] [--split-last K]
 * </pre>
 * Defaults are {@code ddp_example.py}'s: 30 steps, 25 MB buckets, three 4000 x 4000 layers, batch 1000, SGD lr 0.001.
 * {@code --trace} may contain {@code {rank}}; a name without it gets {@code _rank<r>} before its extension.
 */
@Command(name = "DdpTraining", mixinStandardHelpOptions = true, versionProvider = Args.Version.class,
        sortOptions = false, usageHelpWidth = 100,
        description = "Data-parallel training of a three-layer MLP, launched per rank, timed per step and traced.")
final class DdpOptions {
    /** The first step (1-based) whose time counts in the median and the trace, as in "steps 3..30". */
    static final int FIRST_MEASURED_STEP = 3;

    @Option(names = "--steps", paramLabel = "N", description = "Training steps (default: ${DEFAULT-VALUE}).")
    int steps = 30;
    @Option(names = "--bucket-cap-mb", paramLabel = "MB", description = "Gradient bucket size (default: "
            + "${DEFAULT-VALUE}).")
    double bucketCapMB = 25;
    @Option(names = "--trace", paramLabel = "FILE", description = "Chrome trace file; {rank} is replaced by the rank "
            + "(default: trace_ddp_rank{rank}.json, trace_nocomm_rank{rank}.json with --no-comm).")
    String trace;
    @Option(names = "--seed", paramLabel = "N", description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed = 1234;
    @Option(names = "--no-comm", description = "Train without the all-reduce (the compute-only baseline).")
    boolean noComm;
    @Option(names = "--size", paramLabel = "N", description = "Layer width (default: ${DEFAULT-VALUE}).")
    int size = 4000;
    @Option(names = "--batch", paramLabel = "N", description = "Batch size (default: ${DEFAULT-VALUE}).")
    int batch = 1000;
    @Option(names = "--lr", paramLabel = "X", description = "SGD learning rate (default: ${DEFAULT-VALUE}).")
    float lr = 0.001f;
    @Option(names = "--symmetric", description = "Gradient buckets in symmetric windows (ncclMemAlloc + "
            + "ncclCommWindowRegister, NCCL 2.27+), summed instead of averaged (NCCL's symmetric kernels take sum "
            + "only) with the 1/ranks folded into the learning rate.")
    boolean symmetric;
    @Option(names = "--cta-policy", paramLabel = "P", description = "The communicator's CTA policy: default, "
            + "efficiency (2.27+), zero (2.28+) (default: NCCL's own).")
    String ctaPolicyName;
    /** {@code --cta-policy} as NCCL's constant, or null for NCCL's own choice. */
    org.nccl4j.CtaPolicy ctaPolicy;
    @Option(names = "--comm-priority", paramLabel = "P", description = "The all-reduce stream's priority: normal or "
            + "high (CUDA's greatest, so that NCCL's kernels are scheduled before the GEMMs') (default: "
            + "${DEFAULT-VALUE}).")
    String commPriority = "normal";
    @Option(names = "--overlap-optimizer", description = "Update each bucket's parameters as soon as its all-reduce "
            + "completes (GradientBuckets.await), while later buckets are still being reduced.")
    boolean overlapOptimizer;
    @Option(names = "--split-last", paramLabel = "K", description = "Compute the first layer's weight gradient, the "
            + "last of backward, in K column chunks, each its own bucket: the first chunks' all-reduces (and, with "
            + "--overlap-optimizer, updates) run while the later chunks are computed (1 to 64, at most --size; "
            + "default: ${DEFAULT-VALUE}, the whole gradient).")
    int splitLast = 1;

    private DdpOptions() {
    }

    /**
     * @param args the command line
     * @return the options
     * @throws Args.UsageException on an unknown option or a bad value, naming it
     */
    static DdpOptions parse(String... args) {
        DdpOptions o = Args.parse(new DdpOptions(), args);
        positive("--steps", o.steps);
        positive("--size", o.size);
        positive("--batch", o.batch);
        if (!(o.bucketCapMB > 0) || Double.isInfinite(o.bucketCapMB)) {
            throw bad("--bucket-cap-mb", o.bucketCapMB + " (a size in MB greater than 0)");
        }
        if (!(o.lr > 0) || Float.isInfinite(o.lr)) {
            throw bad("--lr", o.lr + " (a rate greater than 0)");
        }
        // cuRAND's normal generator makes pairs: the batch's element count must be even.
        if (((long) o.size * o.batch) % 2 != 0) {
            throw new Args.UsageException("--size x --batch must be even (cuRAND draws normals in pairs), got "
                    + o.size + " x " + o.batch);
        }
        if ((long) o.size * o.size > Integer.MAX_VALUE || (long) o.size * o.batch > Integer.MAX_VALUE) {
            throw new Args.UsageException("--size " + o.size + " with --batch " + o.batch
                    + " makes a matrix of more than 2^31-1 elements (cuBLAS' 32-bit API)");
        }
        if (o.ctaPolicyName != null) {
            try {
                o.ctaPolicy = org.nccl4j.CtaPolicy.valueOf(o.ctaPolicyName.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw bad("--cta-policy", o.ctaPolicyName + " (default, efficiency or zero)");
            }
        }
        if (!o.commPriority.equals("normal") && !o.commPriority.equals("high")) {
            throw bad("--comm-priority", o.commPriority + " (normal or high)");
        }
        if (o.splitLast < 1 || o.splitLast > Mlp.MAX_CHUNKS || o.splitLast > o.size) {
            throw bad("--split-last", o.splitLast + " (1 to " + Math.min(Mlp.MAX_CHUNKS, o.size)
                    + " chunks: at most " + Mlp.MAX_CHUNKS + " and at most --size, the gradient's columns)");
        }
        if (o.noComm && (o.symmetric || o.ctaPolicy != null || o.commPriority.equals("high") || o.overlapOptimizer
                || o.splitLast > 1)) {
            throw new Args.UsageException("--symmetric, --cta-policy, --comm-priority, --overlap-optimizer and "
                    + "--split-last set the communication: leave them out with --no-comm (the compute-only step is "
                    + "the model's own)");
        }
        return o;
    }

    private static void positive(String flag, int v) {
        if (v <= 0) {
            throw bad(flag, v + " (a whole number greater than 0)");
        }
    }

    private static Args.UsageException bad(String flag, String v) {
        return new Args.UsageException("Invalid value for option '" + flag + "': " + v);
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
        return perRankFile(name, rank, worldSize);
    }

    /**
     * One rank's file of a name given for all: {@code {rank}} in it is replaced by the rank; a name without it gets
     * {@code _rank<r>} before its extension when there are several ranks.
     *
     * @param name the name given on the command line
     * @param rank this rank
     * @param worldSize the number of ranks
     * @return the path to write
     */
    static String perRankFile(String name, int rank, int worldSize) {
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

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "steps=%d bucket_cap_mb=%s seed=%d size=%d batch=%d lr=%s%s%s%s%s", steps,
                bucketCapMB, seed, size, batch, lr, noComm ? " no-comm" : "", symmetric ? " symmetric" : "",
                ctaPolicy == null ? "" : " cta_policy=" + ctaPolicy.name().toLowerCase(Locale.ROOT),
                commPriority.equals("high") ? " comm_priority=high" : "")
                + (overlapOptimizer ? " overlap_optimizer" : "") + (splitLast > 1 ? " split_last=" + splitLast : "");
    }
}
