package org.nccl4j.examples;

import org.nccl4j.diagnostics.ExitStatus;
import picocli.CommandLine.Option;
import picocli.CommandLine.Command;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;

/**
 * The ZeRO pattern of sharded data parallelism: instead of all-reducing the whole gradient, each rank
 * reduce-scatters it, so that rank r ends up with the reduced shard r only (the part of the parameters whose
 * optimizer state it owns), averages and updates that shard, and an all-gather brings the full vector back
 * to every rank. Reduce-scatter plus all-gather move the same bytes as one ring all-reduce.
 *
 * <p>Each rank starts with a gradient vector of {@code count} float32 (default 1M) of known small integers,
 * {@link #gradient(int, long)}. Then:
 * <ol>
 *   <li>{@code ncclReduceScatter} ({@link ReduceOp#SUM}, or see below) of the vector into a shard of
 *       {@code count / n} elements: rank r gets elements {@code [r * count/n, (r+1) * count/n)} summed over
 *       ranks;</li>
 *   <li>the shard is divided by n, by {@code --average}:
 *     <ul>
 *       <li>{@code host} (default): the shard is copied to the host, divided there and copied back. The float32
 *           sum of small integers is exact, so the result must equal the host's average exactly;</li>
 *       <li>{@code premul}: the reduce-scatter itself uses {@code ncclRedOpCreatePreMulSum(1/n)}
 *           ({@link Communicator#createPreMulSum(double, DataType)}): each input is multiplied by 1/n, then
 *           summed. It rounds once per rank, so the check allows that;</li>
 *       <li>{@code avg}: the reduce-scatter uses {@link ReduceOp#AVG} (NCCL 2.10+), checked as premul;</li>
 *     </ul></li>
 *   <li>{@code ncclAllGather} of the averaged shards into the full vector on every rank.</li>
 * </ol>
 * Every element of the shard and of the gathered vector is checked against the host's average,
 * {@link #expectedAverage(int, long)}. When {@code count} is not a multiple of the world size it is rounded up
 * (ZeRO pads the flattened parameters the same way).
 *
 * <pre>
 * ZeroShards [--count 1M] [--average host|premul|avg]
 * scripts/nccl4j-run -np 2 ZeroShards          one process per rank (also under mpirun, srun, torchrun)
 * java -cp ... org.nccl4j.examples.ZeroShards     one process driving every local GPU
 * </pre>
 * Prints, per rank, the shard's and the full vector's check (elements wrong; first and last element expected vs
 * got). Exits 0 when every element is right, 1 otherwise, 2 when there is no GPU or NCCL.
 */
public final class ZeroShards {
    /** The ways of averaging, chosen by {@code --average}. */
    enum Average { HOST, PREMUL, AVG }

    private static final int SHOWN = 3;

    private ZeroShards() {
    }

    /**
     * Runs the example.
     *
     * @param args see the class documentation
     */
    public static void main(String[] args) {
        Options o = Args.parseOrExit(new Options(), args);
        long c;
        try {
            c = Examples.parseCount(o.count);
        } catch (IllegalArgumentException e) {
            System.err.println("ZeroShards: Invalid value for option '--count': " + o.count + " (e.g. 1M, 4096)");
            System.exit(Args.USAGE);
            return;
        }
        System.exit(ExitStatus.of("ZeroShards", () -> run(c, o.average)));
    }

    // ---- expected values (pure; tested on the CPU in ZeroShardsTest)

    /** Element {@code i} of rank {@code rank}'s gradient: an integer in -8..8, so that sums are exact. */
    static float gradient(int rank, long i) {
        return (float) ((i * 7 + rank * 3L) % 17 - 8);
    }

    /** The sum over {@code n} ranks of element {@code i}, as an exact integer. */
    static long expectedSum(int n, long i) {
        long s = 0;
        for (int r = 0; r < n; r++) {
            s += (long) gradient(r, i);
        }
        return s;
    }

    /** The average over {@code n} ranks of element {@code i}: the exact sum divided by n, rounded once to float32. */
    static float expectedAverage(int n, long i) {
        return (float) expectedSum(n, i) / n;
    }

    /** {@code count} rounded up to a multiple of {@code n}. */
    static long paddedCount(long count, int n) {
        return (count + n - 1) / n * n;
    }

    /**
     * How far an averaged element may be from {@link #expectedAverage}: 0 when the exact sum is divided once
     * (host); else one rounding of each of the n pre-multiplied inputs (|input| &lt;= 8) and of each partial
     * sum (|sum| &lt;= 8).
     */
    static float tolerance(int n, Average average) {
        return average == Average.HOST ? 0.0f : 2 * (n + 1) * Math.ulp(8.0f);
    }

    // ---- the run

    static int run(long requested, Average average) {
        List<Communicator> comms = Examples.communicators();
        if (comms.isEmpty()) {
            System.err.println("ZeroShards: no CUDA device found.");
            return 2;
        }
        int n = comms.get(0).size();
        long count = paddedCount(requested, n);
        long shard = count / n;
        float tol = tolerance(n, average);
        long wrong = 0;
        try (Examples.Closer closer = new Examples.Closer()) {
            closer.addAll(comms);
            if (4 * count > Integer.MAX_VALUE) {
                System.err.println("ZeroShards: --count " + requested + " is too large for one host buffer; use at"
                        + " most 512M");
                return 2;
            }
            if (comms.get(0).rank() == 0) {
                System.out.println("ZeroShards: " + n + " ranks, " + count + " float32 per rank"
                        + (count != requested ? " (" + requested + " rounded up to a multiple of " + n + ")" : "")
                        + ", shards of " + shard + "; average: " + describe(average, n));
            }
            List<Stream> streams = new ArrayList<>();
            List<DeviceBuffer> grads = new ArrayList<>();
            List<DeviceBuffer> shards = new ArrayList<>();
            List<DeviceBuffer> fulls = new ArrayList<>();
            List<ReduceOp> ops = new ArrayList<>();
            for (Communicator c : comms) {
                streams.add(closer.add(Stream.create(c.device())));
                ByteBuffer host = floats(count);
                for (long i = 0; i < count; i++) {
                    host.putFloat(gradient(c.rank(), i));
                }
                host.flip();
                grads.add(closer.add(DeviceBuffer.allocate(c.device(), count, DataType.FLOAT32)).copyFrom(host));
                shards.add(closer.add(DeviceBuffer.allocate(c.device(), shard, DataType.FLOAT32)));
                fulls.add(closer.add(DeviceBuffer.allocate(c.device(), count, DataType.FLOAT32)));
                switch (average) {
                    case PREMUL -> ops.add(closer.add(c.createPreMulSum(1.0 / n, DataType.FLOAT32)));
                    case AVG -> ops.add(ReduceOp.AVG);
                    default -> ops.add(ReduceOp.SUM);
                }
            }
            // 1. reduce-scatter: rank r receives block r of the sum (or of the average)
            Examples.grouped(comms, k -> comms.get(k).reduceScatter(grads.get(k), shards.get(k), DataType.FLOAT32,
                    ops.get(k), streams.get(k)));
            // 2. the average of this rank's shard; 3. checked
            for (int k = 0; k < comms.size(); k++) {
                Communicator c = comms.get(k);
                streams.get(k).synchronize();
                ByteBuffer s = shards.get(k).toByteBuffer();
                if (average == Average.HOST) {
                    for (long j = 0; j < shard; j++) {
                        int at = (int) (4 * j);
                        s.putFloat(at, s.getFloat(at) / n);
                    }
                    shards.get(k).copyFrom(s);
                }
                wrong += check(c, "shard " + c.rank(), s, c.rank() * shard, shard, n, tol);
            }
            // 4. all-gather the averaged shards into the full vector everywhere
            Examples.grouped(comms, k -> comms.get(k).allGather(shards.get(k), fulls.get(k), DataType.FLOAT32,
                    streams.get(k)));
            for (int k = 0; k < comms.size(); k++) {
                Communicator c = comms.get(k);
                streams.get(k).synchronize();
                wrong += check(c, "full vector", fulls.get(k).toByteBuffer(), 0, count, n, tol);
            }
        }
        for (Communicator c : comms) {
            System.out.println(Examples.who(c) + (wrong == 0 ? "ZeroShards: PASSED"
                    : "ZeroShards: FAILED, " + wrong + " wrong elements"));
        }
        return wrong == 0 ? 0 : 1;
    }

    private static String describe(Average average, int n) {
        return switch (average) {
            case PREMUL -> "reduce-scatter with PreMulSum(1/" + n + ") on the GPU";
            case AVG -> "reduce-scatter with AVG on the GPU";
            case HOST -> "reduce-scatter SUM on the GPU, then / " + n + " on the host";
        };
    }

    /**
     * Checks {@code length} floats of {@code got} against the expected average of elements
     * {@code first .. first + length - 1}; prints the result and the first few wrong elements.
     *
     * @return how many elements are wrong
     */
    private static long check(Communicator c, String what, ByteBuffer got, long first, long length, int n, float tol) {
        long bad = 0;
        for (long j = 0; j < length; j++) {
            float e = expectedAverage(n, first + j);
            float g = got.getFloat((int) (4 * j));
            if (!(Math.abs(g - e) <= tol)) {
                if (bad++ < SHOWN) {
                    System.out.println(Examples.who(c) + what + " element " + (first + j) + ": expected " + e
                            + ", got " + g);
                }
            }
        }
        long last = length - 1;
        System.out.println(Examples.who(c) + what + " (elements " + first + ".." + (first + last) + "): " + bad
                + " wrong; element " + first + " expected " + expectedAverage(n, first) + " got " + got.getFloat(0)
                + ", element " + (first + last) + " expected " + expectedAverage(n, first + last) + " got "
                + got.getFloat((int) (4 * last)) + (tol > 0 ? " (tolerance " + tol + ")" : " (exact)"));
        return bad;
    }

    private static ByteBuffer floats(long count) {
        return ByteBuffer.allocateDirect((int) (4 * count)).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The command line ({@code --help} lists it). */
    @Command(name = "ZeroShards", mixinStandardHelpOptions = true, versionProvider = Args.Version.class,
            description = "ZeRO-style sharded optimizer step (reduce-scatter, update, all-gather), launched per rank.")
    static final class Options {
        @Option(names = "--count", paramLabel = "N", description = "Parameters, with an optional k, M or G suffix "
                + "(default: ${DEFAULT-VALUE}).")
        String count = "1M";
        @Option(names = "--average", paramLabel = "host|premul|avg", converter = AverageConverter.class,
                description = "How the sharded gradients are averaged (default: host).")
        Average average = Average.HOST;
    }

    /** host, premul or avg, in any case. */
    static final class AverageConverter implements picocli.CommandLine.ITypeConverter<Average> {
        @Override
        public Average convert(String value) {
            try {
                return Average.valueOf(value.toUpperCase(java.util.Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new picocli.CommandLine.TypeConversionException("'" + value
                        + "' is not one of host, premul, avg");
            }
        }
    }
}
