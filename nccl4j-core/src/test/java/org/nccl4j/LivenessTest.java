package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The liveness channel over loopback, and the watchdog failing a communicator whose peer is gone. */
class LivenessTest extends StubFixture {
    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Test
    void aRankThatDiesIsNamedToEveryOtherAndOneThatLeavesIsNot() throws Exception {
        int port = freePort();
        Liveness r0 = Liveness.join(Liveness.serve(port), 0, "127.0.0.1", port);
        Liveness r1 = Liveness.join(null, 1, "127.0.0.1", port);
        Liveness r2 = Liveness.join(null, 2, "127.0.0.1", port);
        Liveness r3 = Liveness.join(null, 3, "127.0.0.1", port);
        try {
            Thread.sleep(100);   // the hellos arrive
            r3.close();          // leaves on purpose
            r2.dropWithoutGoodbye();
            within(5000, () -> r1.anyLost() && r0.anyLost() ? true : null, "rank 2's loss reaching ranks 0 and 1");
            Thread.sleep(100);
            List<Liveness.Lost> seen = r1.lost();
            assertEquals(1, seen.size(), seen.toString());
            assertEquals(2, seen.get(0).rank());
            assertEquals(ProcessHandle.current().pid(), seen.get(0).pid());
            assertEquals(org.nccl4j.trace.TraceDump.localHost(), seen.get(0).host());
            assertEquals(List.of(2), r0.lost().stream().map(Liveness.Lost::rank).toList(), "rank 3 said goodbye");
        } finally {
            r1.close();
            r0.close();
        }
    }

    @Test
    void whenRankZeroDiesEveryRankSeesItAndWhenItLeavesNoneDoes() throws Exception {
        int port = freePort();
        Liveness r0 = Liveness.join(Liveness.serve(port), 0, "127.0.0.1", port);
        Liveness r1 = Liveness.join(null, 1, "127.0.0.1", port);
        Thread.sleep(100);
        r0.dropWithoutGoodbye();
        within(5000, () -> r1.anyLost() ? true : null, "rank 0's loss reaching rank 1");
        assertEquals("rank 0", r1.lost().get(0).toString());
        r1.close();

        int port2 = freePort();
        Liveness s0 = Liveness.join(Liveness.serve(port2), 0, "127.0.0.1", port2);
        Liveness s1 = Liveness.join(null, 1, "127.0.0.1", port2);
        Thread.sleep(100);
        s0.close();
        Thread.sleep(300);
        assertTrue(!s1.anyLost(), "rank 0 left on purpose: " + s1.lost());
        s1.close();
    }

    @Test
    void theWatchdogFailsACommunicatorWhosePeerIsGoneAndNamesIt() throws Exception {
        int port = freePort();
        Liveness r0 = Liveness.join(Liveness.serve(port), 0, "127.0.0.1", port);
        Liveness r1 = Liveness.join(null, 1, "127.0.0.1", port);
        Communicator c = later(Communicator.create(0, 2, testId(), 0,
                CommConfig.builder().watchdog(true).timeout(Duration.ofMinutes(1)).build()));
        c.useLiveness(r0);
        Thread.sleep(100);
        r1.dropWithoutGoodbye();
        within(5000, c::failure, "the watchdog failing the communicator");
        CommunicatorFailedException f = c.failure();
        assertTrue(f instanceof RemoteErrorException, f.toString());
        assertTrue(f.verdict().startsWith("peer lost: rank 1 (" + org.nccl4j.trace.TraceDump.localHost() + ", pid "
                + ProcessHandle.current().pid() + ") is gone (its connection to the liveness channel ended without a "
                + "goodbye)"), f.verdict());
        assertEquals(1, f.lostRanks().length);
        assertEquals(1, f.lostRanks()[0]);
    }

    @Test
    void lostRanksWaitsForTheNewsToSettle() throws Exception {
        int port = freePort();
        Liveness r0 = Liveness.join(Liveness.serve(port), 0, "127.0.0.1", port);
        Liveness r1 = Liveness.join(null, 1, "127.0.0.1", port);
        Liveness r2 = Liveness.join(null, 2, "127.0.0.1", port);
        Liveness r3 = Liveness.join(null, 3, "127.0.0.1", port);
        Communicator c = later(Communicator.create(1, 4, testId(), 0, CommConfig.builder().watchdog(false).build()));
        c.useLiveness(r1);
        try {
            Thread.sleep(100);
            r3.dropWithoutGoodbye();
            r2.dropWithoutGoodbye();
            assertEquals(List.of(2, 3), java.util.Arrays.stream(c.lostRanks(Duration.ofMillis(300))).boxed().toList());
            assertEquals(0, comm(0, 2).lostRanks(Duration.ZERO).length, "no channel: none known");
            IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    () -> c.lostRanks(Duration.ofMillis(-1)));
            assertEquals("settle must be zero or longer, got PT-0.001S", e.getMessage());
        } finally {
            r0.close();
        }
    }
}
