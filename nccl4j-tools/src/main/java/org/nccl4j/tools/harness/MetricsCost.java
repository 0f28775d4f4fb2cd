package org.nccl4j.tools.harness;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.Locale;
import org.nccl4j.CommConfig;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.Stream;
import org.nccl4j.UniqueId;
import org.nccl4j.diagnostics.ExitStatus;
import org.nccl4j.diagnostics.NcclMetrics;
import org.nccl4j.diagnostics.StepStats;
import org.nccl4j.tools.cli.Programs;
import org.nccl4j.tools.cli.Tools;
import picocli.CommandLine.Command;

/**
 * The cost of {@link NcclMetrics} per operation: two one-rank communicators on GPU 0, one bound to a Prometheus
 * registry and one not, each enqueuing 8-byte all-reduces; 30 rounds of 10,000, the two alternating in each round
 * (and which goes first alternates), after 3 rounds of warm-up. Prints the median host time per enqueue of each,
 * their difference, and the bytes allocated per operation on the caller's thread; exits 0 when the bound
 * communicator counted every operation and allocated nothing.
 */
public final class MetricsCost {
    private static final int ROUNDS = 30;
    private static final int OPS = 10_000;

    private MetricsCost() {
    }

    /**
     * Runs the measurement.
     *
     * @param args none
     */
    public static void main(String[] args) {
        Tools.parseOrExit(new Options(), args);   // --help, --version; no other option
        System.exit(ExitStatus.of("MetricsCost", MetricsCost::run));
    }

    static int run() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (Communicator bound = Communicator.create(0, 1, UniqueId.generate(), 0,
                    CommConfig.builder().commName("bound").build());
             Communicator plain = Communicator.create(0, 1, UniqueId.generate(), 0,
                    CommConfig.builder().commName("plain").build());
             NcclMetrics metrics = NcclMetrics.bind(bound, registry);
             Stream stream = Stream.create(0);
             DeviceBuffer buf = DeviceBuffer.allocate(0, 2, DataType.FLOAT32)) {
            EagerRounds.RoundCosts timed = EagerRounds.time(new Communicator[] {plain, bound}, new int[] {OPS, OPS},
                    buf, stream, ROUNDS, 3, null);
            double[][] us = timed.microsPerOp();
            long[] bytes = timed.heapBytes();
            double notBound = StepStats.median(us[0]);
            double withMetrics = StepStats.median(us[1]);
            double counted = registry.find("nccl4j.operations").tag("op", "ncclAllReduce").counter().count();
            long expected = (long) (ROUNDS + 3) * OPS;
            System.out.printf(Locale.ROOT, "%-12s %14s %12s %12s%n", "8 B all-reduce", "host us/op", "vs not bound",
                    "heap B/op");
            System.out.printf(Locale.ROOT, "%-12s %14.3f %+12.3f %12.4f%n", "not bound", notBound, 0.0,
                    (double) bytes[0] / ROUNDS / OPS);
            System.out.printf(Locale.ROOT, "%-12s %14.3f %+12.3f %12.4f%n", "bound", withMetrics,
                    withMetrics - notBound, (double) bytes[1] / ROUNDS / OPS);
            StringBuilder diffs = new StringBuilder();
            for (int r = 0; r < ROUNDS; r++) {
                diffs.append(r == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%+.3f", us[1][r] - us[0][r]));
            }
            System.out.println("bound - not bound, per round: [" + diffs + "]");
            System.out.printf(Locale.ROOT, "median of %d rounds of %d operations, the two alternating; the bound "
                    + "communicator counted %.0f all-reduces (expected %d)%n", ROUNDS, OPS, counted, expected);
            boolean ok = counted == expected && bytes[1] == 0;
            System.out.println(ok ? "PASSED: every operation counted, nothing allocated"
                    : "FAILED: counted " + counted + " of " + expected + ", allocated " + bytes[1] + " bytes");
            return ok ? 0 : 1;
        }
    }

    /** The command line: no option but {@code --help} and {@code --version}. */
    @Command(name = "MetricsCost", mixinStandardHelpOptions = true, versionProvider = Tools.Version.class,
            description = "The cost of NcclMetrics per operation, bound vs not bound.")
    static final class Options {
    }
}
