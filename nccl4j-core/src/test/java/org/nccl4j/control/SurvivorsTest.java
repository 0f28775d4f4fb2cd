package org.nccl4j.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.StubFixture;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.launch.LaunchInfo;

/** The ranks lost with rank 0, the liveness channel's hub, found by the roll call of those that remain. */
class SurvivorsTest {
    private String addrBefore;
    private String portBefore;

    @BeforeEach
    void masterAddress() throws Exception {
        addrBefore = NcclNative.getenv("MASTER_ADDR");
        portBefore = NcclNative.getenv("MASTER_PORT");
        NcclNative.setenv("MASTER_ADDR", "127.0.0.1", 1);
        NcclNative.setenv("MASTER_PORT", Integer.toString(StubFixture.freePort() - Survivors.PORT_OFFSET), 1);
    }

    @AfterEach
    void restore() {
        put("MASTER_ADDR", addrBefore);
        put("MASTER_PORT", portBefore);
    }

    @Test
    void ranksLostWithRankZeroAreFoundByTheRollCallOnEverySurvivor() throws Exception {
        Liveness[] ranks = channel(4);
        Liveness r2 = ranks[2], r3 = ranks[3];
        try {
            within(3000, () -> r3.roster().size() == 4 ? true : null, "every rank in the roster");
            ranks[0].dropWithoutGoodbye();   // rank 0's host goes: rank 0 first,
            within(10000, () -> r2.anyLost() && r3.anyLost() ? true : null, "rank 0's loss reaching ranks 2 and 3");
            ranks[1].dropWithoutGoodbye();   // then its other rank, which nobody reports any more
            Survivors.heard(r2);             // as the channel's news does: both answer from now on
            Survivors.heard(r3);
            assertArrayEquals(new int[] {0}, r2.goneOnceSettled(Duration.ofMillis(200)), "the channel knows rank 0");
            CompletableFuture<int[]> two = CompletableFuture.supplyAsync(
                    () -> Survivors.lostRanks(r2, Duration.ofMillis(200), 4));
            int[] three = Survivors.lostRanks(r3, Duration.ofMillis(200), 4);
            assertArrayEquals(new int[] {0, 1}, three, "rank 3");
            assertArrayEquals(new int[] {0, 1}, two.get(), "rank 2");
            // a later loss's roll call: the survivors still answer each other (they answer until their channel closes)
            CompletableFuture<int[]> again = CompletableFuture.supplyAsync(
                    () -> Survivors.lostRanks(r2, Duration.ofMillis(200), 4));
            assertArrayEquals(new int[] {0, 1}, Survivors.lostRanks(r3, Duration.ofMillis(200), 4), "rank 3 again");
            assertArrayEquals(new int[] {0, 1}, again.get(), "rank 2 again");
        } finally {
            forget(ranks);
            r2.close();
            r3.close();
        }
    }

    @Test
    void whenOnlyRankZeroIsLostEveryOtherAnswersNoneMoreIsLeftOutAndClosingFreesThePort() throws Exception {
        Liveness[] ranks = channel(3);
        Liveness r1 = ranks[1], r2 = ranks[2];
        try {
            within(3000, () -> r2.roster().size() == 3 ? true : null, "every rank in the roster");
            ranks[0].dropWithoutGoodbye();
            within(10000, () -> r1.anyLost() && r2.anyLost() ? true : null, "rank 0's loss reaching ranks 1 and 2");
            Survivors.heard(r1);
            Survivors.heard(r2);
            long t0 = System.nanoTime();
            CompletableFuture<int[]> one = CompletableFuture.supplyAsync(
                    () -> Survivors.lostRanks(r1, Duration.ofMillis(200), 3));
            int[] two = Survivors.lostRanks(r2, Duration.ofMillis(200), 3);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertArrayEquals(new int[] {0}, two);
            assertArrayEquals(new int[] {0}, one.get());
            assertTrue(ms < Survivors.MIN_WINDOW.toMillis(), "everyone answered, so no wait for the window: " + ms);
            int port = Survivors.basePort(LaunchInfo.rankZeroAddress()) + r2.launchRankOfSelf();
            assertFalse(bindable(port), "rank 2 answers on " + port);
            r2.close();   // rank 2 leaves the job: its roll-call port goes with it, not minutes later
            assertTrue(bindable(port), "port " + port + " free once rank 2's channel closed");
            Survivors.heard(r2);   // news that arrives as it closes starts no answering again
            assertTrue(bindable(port), "port " + port + " still free after news on a closed channel");
        } finally {
            forget(ranks);
            r1.close();
            r2.close();
        }
    }

    private static boolean bindable(int port) {
        try (java.net.ServerSocket s = new java.net.ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new java.net.InetSocketAddress(port));
            return true;
        } catch (java.io.IOException e) {
            return false;
        }
    }

    @Test
    void withRankZeroThereNoRollCallIsMade() throws Exception {
        Liveness[] ranks = channel(3);
        try {
            within(3000, () -> ranks[2].roster().size() == 3 ? true : null, "every rank in the roster");
            ranks[1].dropWithoutGoodbye();
            within(10000, () -> ranks[2].anyLost() ? true : null, "rank 1's loss reaching rank 2");
            assertFalse(Survivors.hubGone(ranks[2]));
            assertArrayEquals(new int[] {1}, Survivors.lostRanks(ranks[2], Duration.ofMillis(100), 3));
            assertFalse(Survivors.hubGone(ranks[0]), "rank 0 itself never calls the roll");
        } finally {
            forget(ranks);
            ranks[2].close();
            ranks[0].close();
        }
    }

    /** The roll-call ports are free again for the next test. */
    private static void forget(Liveness[] ranks) {
        for (Liveness l : ranks) {
            Survivors.forget(l);
        }
    }

    private static Liveness[] channel(int n) throws Exception {
        int port = StubFixture.freePort();
        Liveness[] joined = new Liveness[n];
        joined[0] = Liveness.join(Liveness.serve(port, Duration.ofSeconds(2)), 0, "127.0.0.1", port);
        for (int r = 1; r < n; r++) {
            joined[r] = Liveness.join(null, r, "127.0.0.1", port);
        }
        return joined;
    }


    private static void put(String name, String value) {
        if (value == null) {
            NcclNative.unsetenv(name);
        } else {
            NcclNative.setenv(name, value, 1);
        }
    }

    private static void within(long millis, Supplier<Boolean> check, String what) throws InterruptedException {
        long end = System.currentTimeMillis() + millis;
        while (System.currentTimeMillis() < end) {
            Boolean ok = check.get();
            if (ok != null && ok) {
                return;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("not within " + millis + " ms: " + what);
    }
}
