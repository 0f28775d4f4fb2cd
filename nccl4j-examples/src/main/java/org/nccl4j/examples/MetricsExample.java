package org.nccl4j.examples;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.stream.Collectors;
import org.nccl4j.CommConfig;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.ReduceOp;
import org.nccl4j.Stream;
import org.nccl4j.diagnostics.ExitStatus;
import org.nccl4j.diagnostics.NcclMetrics;
import picocli.CommandLine.Command;

/**
 * nccl4j's metrics scraped as Prometheus text, launched per rank ({@code scripts/nccl4j-run --share-gpu -np 2
 * MetricsExample}): binds the communicator to a {@code PrometheusMeterRegistry} ({@link NcclMetrics}), runs 100
 * all-reduces and 10 broadcasts, waiting for each so that the watchdog sees the completions, and prints the
 * {@code nccl4j_*} lines of {@code registry.scrape()} (what a {@code /metrics} endpoint would serve). Exits 0 when
 * the scrape counts exactly what was run.
 */
public final class MetricsExample {
    private MetricsExample() {
    }

    /**
     * Runs the example.
     *
     * @param args none
     */
    public static void main(String[] args) {
        Args.parseOrExit(new Options(), args);   // --help, --version; no other option
        System.exit(ExitStatus.of("MetricsExample", MetricsExample::run));
    }

    static int run() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (Communicator comm = Communicator.fromEnvironment(CommConfig.builder().commName("dp").build());
             NcclMetrics metrics = NcclMetrics.bind(comm, registry);
             Stream stream = Stream.create(comm.device());
             DeviceBuffer buf = DeviceBuffer.allocate(comm.device(), 1 << 16, DataType.FLOAT32)) {
            for (int i = 0; i < 100; i++) {
                comm.allReduce(buf, DataType.FLOAT32, ReduceOp.SUM, stream);
                stream.synchronize();   // the latency runs to here: one stream, waited for
            }
            for (int i = 0; i < 10; i++) {
                comm.broadcast(buf, DataType.FLOAT32, 0, stream);
                stream.synchronize();
            }
            try {
                Thread.sleep(300);   // the watchdog's next look records the last latencies
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            String text = registry.scrape();
            String ours = text.lines().filter(l -> l.contains("nccl4j_") && !l.contains(" 0.0")
                    || l.startsWith("# HELP nccl4j_operations")).collect(Collectors.joining("\n"));
            if (comm.rank() == 0) {
                System.out.println(ours);
            }
            boolean ok = text.contains("nccl4j_operations_total{communicator=\"dp\",op=\"ncclAllReduce\",rank=\""
                    + comm.rank() + "\"} 100.0") && text.contains("op=\"ncclBroadcast\",rank=\"" + comm.rank()
                    + "\"} 10.0") && text.contains("nccl4j_operation_latency_seconds_count");
            System.out.println("rank " + comm.rank() + ": " + (ok ? "PASSED" : "FAILED") + ": the scrape counts 100 "
                    + "all-reduces and 10 broadcasts, and has the latency timer");
            return ok ? 0 : 1;
        }
    }

    /** The command line: no option but {@code --help} and {@code --version}. */
    @Command(name = "MetricsExample", mixinStandardHelpOptions = true, versionProvider = Args.Version.class,
            description = "nccl4j's metrics scraped as Prometheus text.")
    static final class Options {
    }
}
