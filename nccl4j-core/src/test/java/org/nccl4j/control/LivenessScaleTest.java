package org.nccl4j.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.nccl4j.StubFixture;
import org.nccl4j.launch.JobSecret;
import org.slf4j.LoggerFactory;

/**
 * Rank 0's liveness side at a few hundred ranks on loopback (the control plane at scale; the curve to 4,096 ranks is
 * scripts/bench/control-plane-scale.sh): one selector thread serves them all, a lost rank is named on every other, and
 * a rank that stops reading does not hold up what every other rank is told.
 */
class LivenessScaleTest {
    private static final JobSecret SECRET = JobSecret.of("liveness-scale-test-secret-0123456789");
    private static final int RANKS = 300;

    private final List<Liveness> open = new ArrayList<>();
    private Logger logger;
    private ListAppender<ILoggingEvent> appender;

    @BeforeEach
    void capture() {
        logger = (Logger) LoggerFactory.getLogger(Liveness.class);
        appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
    }

    @AfterEach
    void closeAll() {
        logger.detachAppender(appender);
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private List<String> warnings(String containing) {
        synchronized (appender) {
            return appender.list.stream().filter(e -> e.getLevel() == Level.WARN)
                    .map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains(containing)).toList();
        }
    }


    private static long threadsNamed(java.util.function.Predicate<String> which) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive() && which.test(t.getName()))
                .count();
    }

    /** Rank 0 of {@code n} ranks (joined to itself) and ranks 1..n-1 joining at once, with the job's secret. */
    private Liveness[] channel(int n, int port) {
        Liveness served;
        try {
            served = Liveness.serve(port, Liveness.DEFAULT_TIMEOUT, n, SECRET, InetAddress.getLoopbackAddress());
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        Liveness[] ranks = new Liveness[n];
        long deadline = System.nanoTime() + 120_000_000_000L;
        ranks[0] = Liveness.joinLater(served, 0, "127.0.0.1", port, deadline, SECRET);
        open.add(ranks[0]);
        for (int r = 1; r < n; r++) {
            ranks[r] = Liveness.joinLater(null, r, "127.0.0.1", port, deadline, SECRET);
            open.add(ranks[r]);
        }
        return ranks;
    }

    @Test
    @Timeout(180)
    void threeHundredRanksAreServedByTwoThreadsOfRankZeroAndALostRankIsNamedOnEveryOther() throws Exception {
        int port = StubFixture.freePort();
        java.util.function.Predicate<String> rankZeros = name -> name.equals("nccl4j-liveness-server")
                || name.equals("nccl4j-liveness-ping") || name.startsWith("nccl4j-liveness-peer");
        long before = threadsNamed(rankZeros);
        Liveness[] ranks = channel(RANKS, port);
        StubFixture.within(90_000, () -> java.util.Arrays.stream(ranks).allMatch(l -> l.arrivals() == RANKS) ? true
                : null, "every rank's roster holds all " + RANKS + " ranks");
        // rank 0's side: its selector thread and its heartbeat thread, whatever the number of ranks
        assertEquals(0, threadsNamed(name -> name.startsWith("nccl4j-liveness-peer")), "no thread per peer");
        long rankZero = threadsNamed(rankZeros) - before;
        assertTrue(rankZero <= 2, rankZero + " threads of rank 0's side for " + RANKS + " ranks");
        assertEquals(RANKS, ranks[RANKS - 1].roster().size());
        assertEquals(List.of(), warnings(""), "nothing refused, nothing lost");

        int victim = RANKS / 2;
        ranks[victim].dropWithoutGoodbye();
        StubFixture.within(30_000, () -> {
            for (int r = 0; r < RANKS; r++) {
                if (r != victim && ranks[r].lost().stream().noneMatch(l -> l.rank() == victim)) {
                    return null;
                }
            }
            return true;
        }, "rank " + victim + " named lost on every other rank");
        assertEquals(1, ranks[1].lost().size(), "only the rank that went: " + ranks[1].lost());
        assertEquals(1, warnings("is lost: its connection ended without a goodbye").size(), warnings("").toString());
    }

    /** A rank that said hello with the secret, then never reads what rank 0 sends (a small receive buffer). */
    private static Socket stalled(int port, int rank) throws IOException {
        Socket s = new Socket();
        s.setReceiveBufferSize(4096);
        s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
        s.setSoTimeout(5000);
        BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII),
                64);
        OutputStream out = s.getOutputStream();
        String challenge = in.readLine();
        String serverNonce = challenge.substring("CHALLENGE ".length());
        String clientNonce = JobSecret.nonce();
        // its lines after the handshake are sealed, as a rank's are (RecordSeal)
        stalledSeal = org.nccl4j.launch.RecordSeal.of(SECRET, LivenessWire.PURPOSE, serverNonce, clientNonce, false);
        out.write(("AUTH " + clientNonce + " " + SECRET.prove(LivenessWire.PURPOSE, serverNonce, clientNonce, "client")
                + "\n" + stalledSeal.seal("HELLO " + rank + " stalled 1\n")).getBytes(StandardCharsets.US_ASCII));
        out.flush();
        return s;
    }

    /** The seal of the stalled rank's lines. */
    private static org.nccl4j.launch.RecordSeal stalledSeal;

    @Test
    @Timeout(180)   // before rank 0 wrote without blocking, this test hung: rank 0 blocked on the stalled rank
    void aRankThatStopsReadingDoesNotHoldUpTheOthersAndIsTakenForLost() throws Exception {
        int n = 6;
        int port = StubFixture.freePort();
        int stalledRank = n - 1;
        Liveness served = Liveness.serve(port, Liveness.DEFAULT_TIMEOUT, n, SECRET, InetAddress.getLoopbackAddress());
        Liveness[] ranks = new Liveness[n - 1];
        ranks[0] = Liveness.join(served, 0, "127.0.0.1", port, SECRET);
        open.add(ranks[0]);
        for (int r = 1; r < n - 1; r++) {
            ranks[r] = Liveness.join(null, r, "127.0.0.1", port, SECRET);
            open.add(ranks[r]);
        }
        try (Socket stalled = stalled(port, stalledRank)) {
            java.util.concurrent.atomic.AtomicBoolean beating = new java.util.concurrent.atomic.AtomicBoolean(true);
            Thread heart = new Thread(() -> {   // it keeps sending heartbeats: it is alive, only it does not read
                while (beating.get()) {
                    try {
                        stalled.getOutputStream().write(stalledSeal.seal("PING\n").getBytes(StandardCharsets.US_ASCII));
                        Thread.sleep(300);
                    } catch (IOException | InterruptedException e) {
                        return;
                    }
                }
            });
            heart.setDaemon(true);
            heart.start();
            StubFixture.within(30_000, () -> java.util.Arrays.stream(ranks).allMatch(l -> l.arrivals() == n) ? true
                    : null, "every rank joined");
            // 32 MiB of CAUSED lines for every rank: far more than the stalled rank's socket buffers and outbox hold
            String cause = "x".repeat(LivenessWire.CAUSE_CHARS - 10);
            int lines = 32 * 1024 * 1024 / cause.length();
            for (int i = 0; i < lines; i++) {
                ranks[1].cause(cause);
            }
            StubFixture.within(60_000, () -> warnings("rank " + stalledRank + " (stalled, pid 1) is lost: it did not "
                    + "read rank 0's lines").size() == 1 ? true : null, "the stalled rank taken for lost: "
                    + warnings(""));
            // the others are told of it, and of what follows, while the stalled rank still beats
            ranks[2].depart(Departures.Kind.ABORT, 0, 3, "allReduce #3", "after the flood");
            StubFixture.within(30_000, () -> {
                for (int r = 0; r < n - 1; r++) {
                    if (ranks[r].lost().stream().noneMatch(l -> l.rank() == stalledRank)
                            || r != 2 && !ranks[r].departures().of(0).containsKey(2)) {
                        return null;
                    }
                }
                return true;
            }, "every reading rank hears of the stalled rank's loss and of rank 2's departure");
            beating.set(false);
            heart.interrupt();
        }
        assertEquals(List.of(stalledRank), ranks[1].lost().stream().map(RankProcess::rank).toList());
    }
}
