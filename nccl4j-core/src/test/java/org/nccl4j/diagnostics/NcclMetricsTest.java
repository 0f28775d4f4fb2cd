package org.nccl4j.diagnostics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.nccl4j.CommConfig;
import org.nccl4j.Communicator;
import org.nccl4j.DataType;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.ReduceOp;
import org.nccl4j.StubFixture;

/** The Micrometer binding: exact counts and tags after a known sequence, latencies, failures, unbinding. */
class NcclMetricsTest extends StubFixture {
    private static double count(SimpleMeterRegistry r, String name, String op) {
        Counter c = r.find(name).tag("op", op).counter();
        return c == null ? -1 : c.count();
    }

    @Test
    void countsAndBytesByOperationWithRankAndCommunicatorTags() {
        Communicator c = later(Communicator.create(1, 2, testId(), 0, CommConfig.builder().commName("dp").build()));
        org.nccl4j.Stream s = stream(0);
        DeviceBuffer b = buffer(0, 4, DataType.FLOAT32);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (NcclMetrics m = NcclMetrics.bind(c, registry)) {
            for (int i = 0; i < 3; i++) {
                c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
            }
            c.broadcast(b, DataType.FLOAT32, 0, s);
            c.broadcast(b, DataType.FLOAT32, 0, s);
            c.send(b, DataType.FLOAT32, 0, s);
            assertEquals(3.0, count(registry, "nccl4j.operations", "ncclAllReduce"));
            assertEquals(48.0, count(registry, "nccl4j.bytes", "ncclAllReduce"), "3 x 16 bytes");
            assertEquals(2.0, count(registry, "nccl4j.operations", "ncclBroadcast"));
            assertEquals(1.0, count(registry, "nccl4j.operations", "ncclSend"));
            assertEquals(16.0, count(registry, "nccl4j.bytes", "ncclSend"));
            assertEquals(0.0, count(registry, "nccl4j.operations", "ncclReduce"), "made ahead, at zero");
            Counter any = registry.find("nccl4j.operations").tag("op", "ncclAllReduce").counter();
            assertEquals("1", any.getId().getTag("rank"));
            assertEquals("dp", any.getId().getTag("communicator"));
        }
        assertNull(registry.find("nccl4j.operations").counter(), "closed: the meters left the registry");
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);   // unbound: nothing counts, nothing fails
    }

    @Test
    void latenciesComeFromTheWatchdogAndFailuresAreCounted() throws Exception {
        Communicator c = later(Communicator.create(0, 2, testId(), 0, CommConfig.builder().watchdog(true)
                .timeout(Duration.ofMillis(300)).build()));
        org.nccl4j.Stream s = stream(0);
        DeviceBuffer b = buffer(0, 4, DataType.FLOAT32);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (NcclMetrics m = NcclMetrics.bind(c, registry)) {
            for (int i = 0; i < 5; i++) {
                c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
            }
            s.synchronize();
            Timer t = registry.find("nccl4j.operation.latency").timer();
            within(3000, () -> t.count() == 5 ? true : null, "five latencies");
            assertEquals("0-of-2", t.getId().getTag("communicator"), "no commName: rank-of-size");
            cuda.stall(s.handle());
            c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
            within(5000, () -> registry.find("nccl4j.failures").tag("kind", "CollectiveTimeoutException").counter(),
                    "the timeout counted");
            assertEquals(1.0, registry.find("nccl4j.failures").counter().count());
            cuda.release(s.handle());
        }
    }

    @Test
    void aWaitOnTheOnlyStreamTimesEachOperationToItsReturnEvenWithTheWatchdogOff() {
        Communicator c = later(Communicator.create(0, 2, testId(), 0, CommConfig.builder().watchdog(false).build()));
        org.nccl4j.Stream s = stream(0);
        DeviceBuffer b = buffer(0, 4, DataType.FLOAT32);
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);   // before the binding: not timed
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (NcclMetrics m = NcclMetrics.bind(c, registry)) {
            for (int i = 0; i < 4; i++) {
                c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
            }
            s.synchronize();
            Timer t = registry.find("nccl4j.operation.latency").timer();
            assertEquals(4, t.count(), "timed at the wait, on this thread");
            assertTrue(t.max(java.util.concurrent.TimeUnit.SECONDS) < 5, t.max(java.util.concurrent.TimeUnit.SECONDS)
                    + " s");
            s.synchronize();
            assertEquals(4, t.count(), "each operation once");
        }
    }

    @Test
    void slowRankReportsAreCountedByTheSlowRank() {
        Communicator c = comm(0, 3);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (NcclMetrics m = NcclMetrics.bind(c, registry)) {
            SlowRankMonitor.RankTimes slow = new SlowRankMonitor.RankTimes(2, "n2", 9, 0, 50, 1);
            m.slowRankListener().slowRanks(new SlowRankMonitor.Report(10, 1.0, List.of(slow), List.of(slow)));
            m.slowRankListener().slowRanks(new SlowRankMonitor.Report(20, 1.0, List.of(slow), List.of(slow)));
            assertEquals(2.0, registry.find("nccl4j.slow.ranks").tag("slowRank", "2").counter().count());
        }
    }

    @Test
    void bindingTwiceOrAClosedCommunicatorIsRefused() {
        Communicator c = comm(0, 2);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (NcclMetrics m = NcclMetrics.bind(c, registry)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> NcclMetrics.bind(c, registry));
            assertEquals("NcclMetrics.bind: rank 0's communicator is already bound; close the other binding first",
                    e.getMessage());
        }
        NcclMetrics.bind(c, registry).close();   // free again
        Communicator closed = Communicator.create(0, 2, testId(), 0);
        closed.close();
        assertThrows(IllegalStateException.class, () -> NcclMetrics.bind(closed, registry));
        assertEquals("registry must not be null", assertThrows(NullPointerException.class,
                () -> NcclMetrics.bind(c, null)).getMessage());
    }

    @Test
    void onlyNcclMetricsRefersToMicrometerSoAnUnboundCommunicatorLoadsNoneOfIt() throws Exception {
        Path classes = Path.of(NcclMetrics.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> referring = new ArrayList<>();
        try (Stream<Path> files = Files.walk(classes)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".class")).toList()) {
                String text = new String(Files.readAllBytes(f), java.nio.charset.StandardCharsets.ISO_8859_1);
                if (text.contains("io/micrometer/")) {
                    referring.add(classes.relativize(f).toString());
                }
            }
        }
        referring.sort(null);
        assertTrue(!referring.isEmpty() && referring.stream().allMatch(n -> n.startsWith("org/nccl4j/diagnostics/NcclMetrics")),
                referring.toString());
    }
}
