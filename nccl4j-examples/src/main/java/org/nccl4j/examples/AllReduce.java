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
import org.nccl4j.Event;
import org.nccl4j.Group;
import org.nccl4j.Nccl;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;

/**
 * The main job: a float32 sum all-reduce across GPUs, checked element by element, then timed.
 *
 * <p>Launched once (no launcher variables), it drives every local GPU from one process
 * ({@code ncclCommInitAll}). Launched per rank (mpirun, scripts/nccl4j-run, torchrun-style variables), each
 * process is one rank ({@link Communicator#fromEnvironment()}).
 *
 * <pre>
 * AllReduce [--bytes N] [--iters N] [--warmup N]     (default 64 MiB, 20 iterations, 5 warm-up)
 * </pre>
 * Prints the check ("expected vs got"), the mean time per all-reduce and the algorithm and bus bandwidths
 * (bus = alg x 2(n-1)/n, as nccl-tests). Exits 1 if any element is wrong, 2 if there is no GPU or NCCL.
 */
public final class AllReduce {
    private AllReduce() {
    }

    /**
     * Runs the example.
     *
     * @param args see the class documentation
     */
    public static void main(String[] args) {
        Options o = Args.parseOrExit(new Options(), args);
        long bytes;
        try {
            bytes = Examples.parseSize(o.bytes);
        } catch (IllegalArgumentException e) {
            System.err.println("AllReduce: Invalid value for option '--bytes': " + o.bytes + " (e.g. 64M, 4096)");
            System.exit(Args.USAGE);
            return;
        }
        if (o.iters < 1 || o.warmup < 0) {
            System.err.println("AllReduce: --iters must be >= 1 and --warmup >= 0; got " + o.iters + " and "
                    + o.warmup);
            System.exit(Args.USAGE);
        }
        long count = bytes / 4;
        System.exit(ExitStatus.of("AllReduce", () -> run(count, o.iters, o.warmup)));
    }

    static float value(int rank, long i) {
        return (rank + 1) + (i % 7);
    }

    static int run(long count, int iters, int warmup) {
        List<Communicator> comms = Examples.communicators();
        if (comms.isEmpty()) {
            System.err.println("AllReduce: no CUDA device found.");
            return 2;
        }
        int size = comms.get(0).size();
        String prefix = comms.size() == 1 ? "[rank " + comms.get(0).rank() + "] " : "";
        if (comms.get(0).rank() == 0) {
            System.out.println(prefix + "NCCL " + Nccl.version() + " (" + Nccl.library().path() + "), " + size
                    + " ranks, " + count + " float32 elements (" + 4 * count + " bytes) per rank");
        }
        List<Stream> streams = new ArrayList<>();
        List<DeviceBuffer> bufs = new ArrayList<>();
        List<Event[]> events = new ArrayList<>();
        int wrong = 0;
        try {
            for (Communicator c : comms) {
                streams.add(Stream.create(c.device()));
                ByteBuffer host = ByteBuffer.allocateDirect((int) (4 * count)).order(ByteOrder.LITTLE_ENDIAN);
                for (long i = 0; i < count; i++) {
                    host.putFloat(value(c.rank(), i));
                }
                host.flip();
                bufs.add(DeviceBuffer.allocate(c.device(), count, DataType.FLOAT32).copyFrom(host));
                events.add(new Event[] {Event.create(c.device()), Event.create(c.device())});
            }
            // 1. correctness: one in-place all-reduce, every element checked against the host's sum
            allReduceOnce(comms, bufs, streams);
            for (int k = 0; k < comms.size(); k++) {
                streams.get(k).synchronize();
                ByteBuffer got = bufs.get(k).toByteBuffer();
                int bad = 0;
                for (long i = 0; i < count; i++) {
                    float expected = 0;
                    for (int r = 0; r < size; r++) {
                        expected += value(r, i);
                    }
                    float g = got.getFloat((int) (4 * i));
                    if (g != expected && bad++ < 3) {
                        System.out.println(prefix + "rank " + comms.get(k).rank() + " element " + i + ": expected "
                                + expected + " got " + g);
                    }
                }
                float e0 = 0;
                for (int r = 0; r < size; r++) {
                    e0 += value(r, 0);
                }
                System.out.println(prefix + "check rank " + comms.get(k).rank() + ": " + count + " elements, "
                        + bad + " wrong (element 0: expected " + e0 + ", got " + got.getFloat(0) + ")");
                wrong += bad;
            }
            // 2. timing
            for (int i = 0; i < warmup; i++) {
                allReduceOnce(comms, bufs, streams);
            }
            for (int k = 0; k < comms.size(); k++) {
                events.get(k)[0].record(streams.get(k));
            }
            for (int i = 0; i < iters; i++) {
                allReduceOnce(comms, bufs, streams);
            }
            double maxMs = 0;
            for (int k = 0; k < comms.size(); k++) {
                events.get(k)[1].record(streams.get(k));
                events.get(k)[1].synchronize();
                maxMs = Math.max(maxMs, events.get(k)[1].elapsedSince(events.get(k)[0]));
            }
            double us = maxMs * 1000.0 / iters;
            double algbw = 4.0 * count / (us * 1e-6) / 1e9;
            double busbw = algbw * 2.0 * (size - 1) / size;
            if (comms.get(0).rank() == 0) {
                System.out.printf("%s%d bytes: %.1f us per all-reduce, algbw %.2f GB/s, busbw %.2f GB/s"
                        + " (%d iterations)%n", prefix, 4 * count, us, algbw, busbw, iters);
            }
        } finally {
            events.forEach(e -> {
                e[0].close();
                e[1].close();
            });
            bufs.forEach(DeviceBuffer::close);
            streams.forEach(Stream::close);
            comms.forEach(Communicator::close);
        }
        System.out.println(prefix + (wrong == 0 ? "AllReduce: PASSED"
                : "AllReduce: FAILED, " + wrong + " wrong elements"));
        return wrong == 0 ? 0 : 1;
    }

    @SuppressWarnings("try") // the group is only opened and closed
    private static void allReduceOnce(List<Communicator> comms, List<DeviceBuffer> bufs, List<Stream> streams) {
        if (comms.size() == 1) {
            comms.get(0).allReduce(bufs.get(0), DataType.FLOAT32, ReduceOp.SUM, streams.get(0));
            return;
        }
        try (Group g = Nccl.group()) {
            for (int k = 0; k < comms.size(); k++) {
                comms.get(k).allReduce(bufs.get(k), DataType.FLOAT32, ReduceOp.SUM, streams.get(k));
            }
        }
    }

    /** The command line ({@code --help} lists it). */
    @Command(name = "AllReduce", mixinStandardHelpOptions = true, versionProvider = Args.Version.class,
            description = "A float32 sum all-reduce across GPUs, checked element by element, then timed.")
    static final class Options {
        @Option(names = "--bytes", paramLabel = "N", description = "Size, with K, M or G (default: ${DEFAULT-VALUE}).")
        String bytes = "64M";
        @Option(names = "--iters", paramLabel = "N", description = "Timed iterations (default: ${DEFAULT-VALUE}).")
        int iters = 20;
        @Option(names = "--warmup", paramLabel = "N", description = "Warm-up iterations (default: ${DEFAULT-VALUE}).")
        int warmup = 5;
    }
}
