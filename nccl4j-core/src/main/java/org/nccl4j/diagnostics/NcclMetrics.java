package org.nccl4j.diagnostics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.nccl4j.Communicator;
import org.nccl4j.CommunicatorFailedException;
import org.nccl4j.OperationObserver;
import org.nccl4j.jni.NcclFunction;

/**
 * A communicator's metrics in a Micrometer {@link MeterRegistry}, for the monitoring a job already has (Prometheus,
 * Datadog, CloudWatch, ... through their Micrometer registries). Micrometer is an optional dependency of nccl4j:
 * add {@code io.micrometer:micrometer-core} (and your registry) to use this class; nothing of Micrometer is loaded
 * unless {@link #bind} is called, and an unbound communicator pays nothing.
 *
 * <table>
 *   <caption>Meters (each tagged {@code rank} and {@code communicator}: the commName, or
 *   {@code rank-of-size})</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 *   <tr><td>{@code nccl4j.operations}</td><td>counter</td><td>{@code op}</td><td>operations enqueued, by NCCL function
 *       ({@code ncclAllReduce}, {@code ncclSend}, ...)</td></tr>
 *   <tr><td>{@code nccl4j.bytes}</td><td>counter</td><td>{@code op}</td><td>bytes this rank sent or reduced</td></tr>
 *   <tr><td>{@code nccl4j.operation.latency}</td><td>timer</td><td></td><td>enqueue to completion: up to the
 *       moment a {@code Stream} or {@code Event} wait returned when the program waits for its operations on the
 *       communicator's only stream (the usual training step), else up to the watchdog's completion marker, one to
 *       two poll intervals late ({@code NCCL4J_WATCHDOG_POLL}, 100 ms); empty when the watchdog or the flight
 *       recorder is off</td></tr>
 *   <tr><td>{@code nccl4j.failures}</td><td>counter</td><td>{@code kind}</td><td>failures the watchdog declared
 *       ({@code CollectiveTimeoutException}, {@code RemoteErrorException}, ...)</td></tr>
 *   <tr><td>{@code nccl4j.slow.ranks}</td><td>counter</td><td>{@code slowRank}</td><td>{@link SlowRankMonitor}
 *       reports naming a rank, through {@link #slowRankListener()}</td></tr>
 * </table>
 *
 * <p>Cost: the counters of every NCCL function are made at {@link #bind}, so an operation costs two counter
 * increments and no allocation on the caller's thread; latencies are recorded on the watchdog's thread. The cost per
 * operation bound vs not bound is measured by {@code MetricsCost} (nccl4j-examples) and reported in
 * docs/gpu-runs/2026-11-25-metrics.md.
 *
 * <pre>{@code
 * PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
 * try (NcclMetrics m = NcclMetrics.bind(comm, registry)) {
 *     ... train ...
 *     String text = registry.scrape();   // serve it at /metrics
 * }
 * }</pre>
 */
public final class NcclMetrics implements AutoCloseable {
    private final Communicator comm;
    private final MeterRegistry registry;
    private final Tags tags;
    private final Counter[] operations = new Counter[NcclFunction.values().length];
    private final Counter[] bytes = new Counter[NcclFunction.values().length];
    private final Timer latency;
    private final List<io.micrometer.core.instrument.Meter> made = new ArrayList<>();
    private final Observer observer = new Observer();

    private NcclMetrics(Communicator comm, MeterRegistry registry, String name) {
        this.comm = comm;
        this.registry = registry;
        this.tags = Tags.of("rank", Integer.toString(comm.rank()), "communicator", name);
        for (NcclFunction f : NcclFunction.values()) {
            operations[f.ordinal()] = keep(Counter.builder("nccl4j.operations").tags(tags).tag("op", f.name())
                    .description("NCCL operations enqueued").register(registry));
            bytes[f.ordinal()] = keep(Counter.builder("nccl4j.bytes").tags(tags).tag("op", f.name()).baseUnit("bytes")
                    .description("bytes this rank sent or reduced").register(registry));
        }
        latency = keep(Timer.builder("nccl4j.operation.latency").tags(tags)
                .description("enqueue to completion: to a wait's return on the communicator's only stream, else to "
                        + "the watchdog's marker").register(registry));
    }

    private <M extends io.micrometer.core.instrument.Meter> M keep(M meter) {
        made.add(meter);
        return meter;
    }

    /**
     * Binds {@code comm}'s meters to {@code registry}; {@link #close()} unbinds them. One binding per communicator at
     * a time.
     *
     * @param comm the communicator
     * @param registry where the meters go
     * @return the binding
     * @throws IllegalStateException when the communicator is closed or already bound
     */
    public static NcclMetrics bind(Communicator comm, MeterRegistry registry) {
        if (comm == null) {
            throw new NullPointerException("comm must not be null");
        }
        if (registry == null) {
            throw new NullPointerException("registry must not be null");
        }
        if (comm.isClosed()) {
            throw new IllegalStateException("NcclMetrics.bind: the communicator is closed");
        }
        if (comm.observer() != null) {
            throw new IllegalStateException("NcclMetrics.bind: rank " + comm.rank()
                    + "'s communicator is already bound; close the other binding first");
        }
        String name = comm.name() != null ? comm.name() : comm.rank() + "-of-" + comm.size();
        NcclMetrics m = new NcclMetrics(comm, registry, name);
        comm.observe(m.observer);
        return m;
    }

    /**
     * A listener for {@link SlowRankMonitor.Builder#listener} that counts each report in {@code nccl4j.slow.ranks},
     * tagged with the slow rank.
     *
     * @return the listener
     */
    public SlowRankMonitor.Listener slowRankListener() {
        return report -> {
            for (SlowRankMonitor.RankTimes t : report.slow()) {
                registry.counter("nccl4j.slow.ranks", tags.and("slowRank", Integer.toString(t.rank()))).increment();
            }
        };
    }

    /** Unbinds: the communicator stops reporting, and its meters leave the registry. */
    @Override
    public void close() {
        if (comm.observer() == observer) {
            comm.observe(null);
        }
        for (io.micrometer.core.instrument.Meter meter : made) {
            registry.remove(meter);
        }
        made.clear();
    }

    /** The hooks: increments on the caller's thread, latencies and failures on the watchdog's. */
    private final class Observer implements OperationObserver {
        @Override
        public void enqueued(Communicator c, long sequence, NcclFunction operation, long n, long stream) {
            int i = operation.ordinal();
            operations[i].increment();
            bytes[i].increment(n);
        }

        @Override
        public void completed(Communicator c, long from, long to, long nowNanos) {
            for (long seq = Math.max(from, to - 4096); seq <= to; seq++) {   // a long backlog: its latest only
                long enqueued = c.enqueuedAt(seq);
                if (enqueued > 0 && nowNanos > enqueued) {
                    latency.record(nowNanos - enqueued, TimeUnit.NANOSECONDS);
                }
            }
        }

        @Override
        public void failed(Communicator c, CommunicatorFailedException failure) {
            registry.counter("nccl4j.failures", tags.and("kind", failure.getClass().getSimpleName())).increment();
        }
    }
}
