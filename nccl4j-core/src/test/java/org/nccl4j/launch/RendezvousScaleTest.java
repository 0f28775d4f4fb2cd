package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/**
 * The TCP rendezvous with a few hundred ranks arriving at once, with the job's secret (the curve to 4,096 ranks is
 * scripts/bench/control-plane-scale.sh): every rank gets the id, and none is turned away at accept, since by default
 * every peer may wait to identify itself at once.
 */
class RendezvousScaleTest {
    private static final JobSecret SECRET = JobSecret.of("rendezvous-scale-test-secret-0123456789");

    @Test
    @Timeout(180)
    void threeHundredRanksArrivingAtOnceAllGetTheIdAndNoneIsClosedAtAccept() throws Exception {
        int n = 300;
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Logger logger = (Logger) LoggerFactory.getLogger(Rendezvous.class);
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        try {
            byte[] id = new byte[Rendezvous.UNIQUE_ID_BYTES];
            new java.util.Random(5).nextBytes(id);
            CountDownLatch listening = new CountDownLatch(1);
            CountDownLatch go = new CountDownLatch(1);
            CompletableFuture<byte[]> zero = CompletableFuture.supplyAsync(() -> Rendezvous.builder()
                    .tcp("127.0.0.1", port).rank(0).worldSize(n).jobSecret(SECRET)
                    .bindAddress(InetAddress.getLoopbackAddress()).timeout(Duration.ofSeconds(120))
                    .onListening(a -> listening.countDown()).build().exchange(id::clone), runner("0"));
            assertEquals(true, listening.await(30, TimeUnit.SECONDS), "rank 0 listens");
            List<CompletableFuture<byte[]>> peers = new ArrayList<>();
            for (int r = 1; r < n; r++) {
                int rank = r;
                peers.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                    return Rendezvous.builder().tcp("127.0.0.1", port).rank(rank).worldSize(n).jobSecret(SECRET)
                            .timeout(Duration.ofSeconds(120)).build().exchange(() -> {
                                throw new AssertionError("only rank 0 makes the id");
                            });
                }, runner(Integer.toString(r))));
            }
            go.countDown();
            assertArrayEquals(id, zero.get(150, TimeUnit.SECONDS));
            for (CompletableFuture<byte[]> p : peers) {
                assertArrayEquals(id, p.get(150, TimeUnit.SECONDS));
            }
            List<String> warned = appender.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN))
                    .map(ILoggingEvent::getFormattedMessage).toList();
            assertEquals(List.of(), warned, "no connection closed at accept, none refused");
        } finally {
            logger.detachAppender(appender);
        }
    }

    /** One thread per rank, as each rank is its own process. */
    private static java.util.concurrent.Executor runner(String rank) {
        return task -> {
            Thread t = new Thread(null, task, "rendezvous-scale-" + rank, 256 * 1024);
            t.setDaemon(true);
            t.start();
        };
    }
}
