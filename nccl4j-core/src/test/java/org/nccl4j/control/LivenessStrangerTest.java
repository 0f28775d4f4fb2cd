package org.nccl4j.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
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
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.RankPhase;
import org.nccl4j.StubFixture;
import org.nccl4j.launch.JobSecret;
import org.nccl4j.launch.Rendezvous;
import org.slf4j.LoggerFactory;

/**
 * The liveness port against a patient stranger (loopback, the real classes): silent connections that hold every
 * waiting slot and reconnect at once do not keep the real ranks out; a connection's first byte has a deadline of its
 * own; after the handshake every line is sealed, so that a line forged, replayed or reordered on the way (a relay
 * between a real rank and rank 0) is refused and never acted on; without a secret, an impostor's false loss does not
 * outlive the real rank's arrival; both ports bind the same address.
 */
class LivenessStrangerTest {
    private static final JobSecret SECRET = JobSecret.of("liveness-stranger-secret-0123456789");

    private Logger logger;
    private ListAppender<ILoggingEvent> appender;
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private int port;

    @BeforeEach
    void capture() {
        logger = (Logger) LoggerFactory.getLogger(Liveness.class);
        appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
    }

    @AfterEach
    void release() {
        logger.detachAppender(appender);
        logger.setLevel(null);
        for (int i = toClose.size() - 1; i >= 0; i--) {
            try {
                toClose.get(i).close();
            } catch (Exception e) {
                // closing
            }
        }
    }

    private List<String> said(Level level, String containing) {
        synchronized (appender) {
            return appender.list.stream().filter(e -> e.getLevel() == level).map(ILoggingEvent::getFormattedMessage)
                    .filter(m -> m.contains(containing)).toList();
        }
    }

    /** Rank 0 of {@code size} ranks, joined to itself; every refusal said at WARN. */
    private Liveness serve(int size, JobSecret secret, Duration hello) throws IOException {
        port = StubFixture.freePort();
        Liveness served = Liveness.serve(port, Liveness.DEFAULT_TIMEOUT, size, secret, null)
                .refusalQuiet(Duration.ZERO);
        if (hello != null) {
            served.helloDeadline(hello);
        }
        Liveness r0 = Liveness.join(served, 0, "127.0.0.1", port);
        toClose.add(r0);
        return r0;
    }

    private <T extends AutoCloseable> T closing(T c) {
        toClose.add(c);
        return c;
    }

    // ------------------------------------------------------------------ the waiting slots

    /**
     * Silent connections fill every waiting slot and reconnect within a millisecond of being closed. Closing the
     * newest connection at accept (as before) gave each freed slot to the attacker and kept the real ranks out until
     * their deadline; letting go of the one that waited longest without a byte lets every real rank in.
     */
    @Test
    void silentConnectionsHoldingEverySlotAndReconnectingAtOnceDoNotKeepTheRealRanksOut() throws Exception {
        Liveness r0 = serve(3, SECRET, null);
        int cap = LivenessHub.MAX_PENDING + 3;   // the waiting slots of a job of 3 ranks
        SlotHolder holder = closing(new SlotHolder(port, cap));
        StubFixture.within(5000, () -> holder.greeted.get() >= cap ? true : null, "every slot held");
        long t0 = System.nanoTime();
        long deadline = t0 + 20_000_000_000L;
        Liveness r1 = closing(Liveness.joinLater(null, 1, "127.0.0.1", port, deadline, SECRET));
        Liveness r2 = closing(Liveness.joinLater(null, 2, "127.0.0.1", port, deadline, SECRET));
        // the bound: well within the 5 s hello deadline that freed a slot before, and the ranks' 20 s
        assertTrue(r1.awaitArrivals(3, t0 + 8_000_000_000L, true), "every rank arrives: " + r1.roster()
                + " after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
        assertTrue(r2.awaitArrivals(3, t0 + 8_000_000_000L, true), "rank 2 has the roster: " + r2.roster());
        assertTrue(holder.reconnects.get() > 0, "the attacker's connections were let go and reconnected");
        assertEquals(List.of(0, 1, 2), List.copyOf(r0.roster().keySet()));
        assertFalse(r0.anyLost() || r1.anyLost() || r2.anyLost(), "nobody lost");
        assertEquals(1, said(Level.WARN, "connections have not said hello yet").size(), "one WARN for the flood");
        assertTrue(said(Level.WARN, "connections have not said hello yet").get(0).contains("letting go of the one "
                + "that waited longest without a byte"), said(Level.WARN, "").toString());
    }

    /** A connection that says nothing is let go at its first byte's deadline; one that spoke waits for its hello. */
    @Test
    void aSilentConnectionIsLetGoAtItsFirstByteDeadlineAndOneThatSpokeAtItsHelloDeadline() throws Exception {
        serve(2, SECRET, Duration.ofMillis(4000));
        try (Socket silent = new Socket("127.0.0.1", port); Socket spoke = new Socket("127.0.0.1", port)) {
            BufferedReader spokeIn = new BufferedReader(new InputStreamReader(spoke.getInputStream(),
                    StandardCharsets.UTF_8));
            assertTrue(spokeIn.readLine().startsWith("CHALLENGE "));
            spoke.getOutputStream().write("AU".getBytes(StandardCharsets.UTF_8));   // a byte, then nothing
            silent.setSoTimeout(10_000);
            BufferedReader silentIn = new BufferedReader(new InputStreamReader(silent.getInputStream(),
                    StandardCharsets.UTF_8));
            assertTrue(silentIn.readLine().startsWith("CHALLENGE "));
            assertNull(silentIn.readLine(), "rank 0 closed the silent connection");
            spoke.setSoTimeout(1);
            try {
                assertEquals(-1, spoke.getInputStream().read(), "closed together with the silent one");
            } catch (SocketTimeoutException e) {
                // still open: it sent a byte, so it has until its hello deadline
            }
            spoke.setSoTimeout(10_000);
            assertNull(spokeIn.readLine(), "closed at its hello deadline");
        }
        StubFixture.within(5000, () -> said(Level.WARN, "refused the connection").size() == 2 ? true : null,
                "two refusals: " + said(Level.WARN, ""));
        List<String> w = said(Level.WARN, "refused the connection");
        assertTrue(w.get(0).endsWith(": it sent nothing within " + LivenessHub.FIRST_BYTE_MILLIS + " ms; the job goes "
                + "on"), w.toString());
        assertTrue(w.get(1).endsWith(": it did not authenticate and say hello within 4000 ms; the job goes on"),
                w.toString());
    }

    // ------------------------------------------------------------------ sealed lines after the handshake

    @Test
    void aLineForgedOnTheWayToARankIsRefusedAndNothingIsLost() throws Exception {
        Liveness r0 = serve(3, SECRET, null);
        Relay relay = closing(new Relay(port));
        Liveness r1 = closing(Liveness.join(null, 1, "127.0.0.1", relay.port(), SECRET));
        Liveness r2 = closing(Liveness.join(null, 2, "127.0.0.1", port, SECRET));
        StubFixture.within(5000, () -> r1.roster().size() == 3 ? true : null, "every rank joined");
        String forged = "LOST 2 " + r1.roster().get(2).host() + " " + ProcessHandle.current().pid() + " joined "
                + "forged" + org.nccl4j.launch.RecordSeal.LINE_MARK + "00".repeat(org.nccl4j.launch.RecordSeal.MAC_BYTES);
        relay.toRank(forged);
        StubFixture.within(5000, () -> said(Level.WARN, "refused a line on rank 0's connection").size() == 1 ? true
                : null, "rank 1's refusal: " + said(Level.WARN, ""));
        assertTrue(said(Level.WARN, "refused a line on rank 0's connection").get(0).matches("nccl4j liveness: rank 1 "
                + "refused a line on rank 0's connection: record #[0-9]+ after the handshake failed its MAC \\(forged, "
                + "replayed, reordered or altered on the way\\); it closes the connection and connects again"),
                said(Level.WARN, "").toString());
        StubFixture.within(5000, () -> relay.connections.get() == 2 && r0.roster().size() == 3 ? true : null,
                "rank 1 connected again");
        Thread.sleep(LivenessHub.REJOIN_MILLIS + 500);   // past the time rank 0 waits for a rank connecting again
        assertTrue(r1.lost().stream().noneMatch(l -> l.rank() == 2), "the forged loss was not acted on: " + r1.lost());
        assertTrue(r0.lost().stream().noneMatch(l -> l.rank() == 2) && r2.lost().stream().noneMatch(l -> l.rank() == 2),
                "rank 2 is nobody's loss: " + r0.lost());
        assertEquals(List.of(), said(Level.WARN, "rank 2 ("), "rank 2 is never said lost");
        // one WARN on each side: rank 1's refusal, and rank 0's closing of the connection it was told failed
        assertEquals(1, said(Level.WARN, "rank 1 refused").size(), said(Level.WARN, "").toString());
        assertEquals(1, said(Level.WARN, "rank 0 closed it and waits up to 3000 ms").size(),
                said(Level.WARN, "").toString());
        assertEquals(List.of(), said(Level.WARN, "is lost"), "nobody is lost: rank 1 connected again");
        assertTrue(r0.lost().isEmpty() && r1.lost().isEmpty() && r2.lost().isEmpty() && !r1.anyLost(),
                "no loss anywhere: " + r0.lost() + r1.lost() + r2.lost());
        assertEquals(List.of(0, 1, 2), List.copyOf(r0.roster().keySet()));
    }

    @Test
    void aPingReplayedOrTwoLinesReorderedOnTheWayToRankZeroAreRefusedAndTheRankConnectsAgain() throws Exception {
        Liveness r0 = serve(3, SECRET, null);
        for (boolean replay : new boolean[] {true, false}) {
            appender.list.clear();
            Relay relay = closing(new Relay(port));
            int rank = replay ? 1 : 2;
            Liveness r = closing(Liveness.join(null, rank, "127.0.0.1", relay.port(), SECRET));
            StubFixture.within(5000, () -> r0.roster().containsKey(rank) ? true : null, "rank " + rank + " joined");
            if (replay) {
                relay.replayNextPing();
            } else {
                relay.swapNextTwo();
                r.phase(RankPhase.RENDEZVOUS);   // two lines at once: a PHASE and the next PING, swapped
            }
            StubFixture.within(5000, () -> said(Level.WARN, "after the handshake failed its MAC").size() == 1 ? true
                    : null, "rank 0's refusal: " + said(Level.WARN, ""));
            // nothing in the line is acted on; rank 0 closes the connection after a sealed AGAIN, the rank connects
            // again through the same path, and nobody is lost
            assertTrue(said(Level.WARN, "after the handshake").get(0).matches("nccl4j liveness: refused the connection"
                    + " from 127\\.0\\.0\\.1:[0-9]+: rank " + rank + "'s connection: a line from it failed its check "
                    + "\\(record #[0-9]+ after the handshake failed its MAC \\(forged, replayed, reordered or altered on"
                    + " the way\\)\\); rank 0 closed it and waits up to 3000 ms for the rank to connect again; the job "
                    + "goes on"), said(Level.WARN, "").toString());
            StubFixture.within(5000, () -> relay.connections.get() == 2 ? true : null, "rank " + rank + " again");
            Thread.sleep(LivenessHub.REJOIN_MILLIS + 300);
            assertTrue(r0.lost().isEmpty() && r.lost().isEmpty(), "nobody lost: " + r0.lost() + r.lost());
            assertTrue(r0.roster().containsKey(rank));
        }
    }

    /** A rank that cannot connect again (the path is cut after the failed check) is told lost, with why. */
    @Test
    void aRankThatDoesNotConnectAgainAfterAFailedCheckIsToldLostWithWhy() throws Exception {
        Liveness r0 = serve(3, SECRET, null);
        Relay relay = closing(new Relay(port));
        Liveness r1 = closing(Liveness.join(null, 1, "127.0.0.1", relay.port(), SECRET));
        Liveness r2 = closing(Liveness.join(null, 2, "127.0.0.1", port, SECRET));
        StubFixture.within(5000, () -> r0.roster().size() == 3 ? true : null, "every rank joined");
        relay.stopAccepting();
        long t0 = System.nanoTime();
        relay.replayNextPing();
        StubFixture.within(8000, () -> r2.lost().stream().anyMatch(l -> l.rank() == 1) ? true : null,
                "rank 1 lost on rank 2: " + r2.lost());
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= LivenessHub.REJOIN_MILLIS - 200 && ms < LivenessHub.REJOIN_MILLIS + 2500, ms + " ms");
        assertTrue(said(Level.WARN, "is lost").get(0).matches("nccl4j liveness: rank 1 \\(.*\\) is lost: its "
                + "connection to rank 0 was closed after a line from it failed its check \\(record #[0-9]+ .*\\), and "
                + "it did not connect again within 3000 ms .*"), said(Level.WARN, "").toString());
        StubFixture.within(5000, () -> r1.anyLost() ? true : null, "rank 1 takes rank 0 for lost");
    }

    // ------------------------------------------------------------------ without a secret

    @Test
    void anImpostorsBareClaimThatDropsIsNoLossAndOneThatSpokeIsClearedByTheRealRank() throws Exception {
        Liveness r0 = serve(3, null, null);
        Liveness r1 = closing(Liveness.join(null, 1, "127.0.0.1", port, null));
        impostor(false);   // takes rank 2's slot before the real rank 2 and drops, having said nothing more
        StubFixture.within(5000, () -> said(Level.WARN, "ended having said nothing after its hello").size() == 1
                ? true : null, "the bare claim's refusal: " + said(Level.WARN, ""));
        assertTrue(said(Level.WARN, "ended having said nothing after its hello").get(0).contains("that claimed rank 2 "
                + "(impostor, pid 4242)"), said(Level.WARN, "").toString());
        Thread.sleep(300);
        assertFalse(r0.anyLost() || r1.anyLost(), "no loss told: " + r0.lost() + " " + r1.lost());
        assertNull(r1.startupLoss(3), "start-up goes on");

        impostor(true);   // one that sends a heartbeat after its hello and drops: told, until the real rank comes
        StubFixture.within(5000, () -> r1.anyLost() && r0.anyLost() ? true : null, "the impostor's loss");
        assertEquals(List.of(2), r1.lost().stream().map(RankProcess::rank).toList());
        assertEquals(2, r1.startupLoss(3).rank(), "a loss during start-up, until the real rank arrives");

        Liveness r2 = closing(Liveness.join(null, 2, "127.0.0.1", port, null));
        StubFixture.within(5000, () -> !r1.anyLost() && !r0.anyLost() ? true : null, "the false loss cleared: "
                + r1.lost() + " " + r0.lost());
        assertEquals(ProcessHandle.current().pid(), r1.roster().get(2).pid(), "the real rank 2 in the roster");
        assertNull(r1.startupLoss(3), "no loss during start-up");
        assertNull(r0.startupLoss(3));
        assertFalse(r2.anyLost());
        r2.dropWithoutGoodbye();   // the real rank's own loss is still named
        StubFixture.within(5000, () -> r1.anyLost() ? true : null, "rank 2's real loss");
        assertEquals(ProcessHandle.current().pid(), r1.lost().get(0).pid());
    }

    /** A stranger's HELLO for rank 2 on a channel without a secret, a heartbeat after it when {@code speaks}. */
    private void impostor(boolean speaks) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            assertEquals(LivenessWire.OPEN, in.readLine());
            s.getOutputStream().write(("HELLO 2 impostor 4242\n" + (speaks ? "PING\n" : ""))
                    .getBytes(StandardCharsets.UTF_8));
            assertTrue(in.readLine().startsWith("JOINED "));
        }
    }

    @Test
    void aLostOrDepartureLineFromAJoinedStrangerIsRefusedAndMarksNoRealRank() throws Exception {
        Liveness r0 = serve(3, null, null);
        Liveness r1 = closing(Liveness.join(null, 1, "127.0.0.1", port, null));
        for (String line : List.of("LOST 1 somewhere 1", "DEPARTED 1 somewhere 1 -1 abort 0 none forged")) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(),
                        StandardCharsets.UTF_8));
                OutputStream out = s.getOutputStream();
                out.write("HELLO 2 stranger 77\n".getBytes(StandardCharsets.UTF_8));
                assertEquals(LivenessWire.OPEN, in.readLine());
                assertTrue(in.readLine().startsWith("JOINED "));
                out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
                while (in.readLine() != null) {
                    // until rank 0 closes it
                }
            }
        }
        StubFixture.within(5000, () -> said(Level.WARN, "a line a rank may not send").size() == 2 ? true : null,
                "two refusals: " + said(Level.WARN, ""));
        Thread.sleep(300);
        assertTrue(r1.lost().stream().noneMatch(l -> l.rank() == 1) && r0.lost().stream().noneMatch(l -> l.rank() == 1),
                "rank 1 is nobody's loss");
        assertTrue(r1.departures().of(Liveness.STARTUP_GENERATION).isEmpty(), "no departure of rank 1");
    }

    // ------------------------------------------------------------------ where it listens

    @Test
    void bothPortsListenOnTheSameAddressForAnyMasterAddr() throws Exception {
        String name = InetAddress.getLocalHost().getHostName();
        for (String master : List.of("127.0.0.1", "localhost", name, "192.0.2.1", "no-such-host.invalid")) {
            InetAddress rendezvous = Rendezvous.bindFor(master, null, new ArrayList<>());
            InetAddress liveness = Liveness.bindAddress(master, null, 1);
            assertEquals(rendezvous.isAnyLocalAddress() ? null : rendezvous, liveness, "MASTER_ADDR=" + master);
        }
        InetAddress resolved = InetAddress.getByName(name);
        Assumptions.assumeTrue(resolved.isLoopbackAddress(), "this host's name " + name + " resolves to "
                + resolved.getHostAddress() + ", not a loopback address (as in a container's /etc/hosts)");
        InetAddress bound = Liveness.bindAddress(name, null, 1);
        assertEquals(resolved, bound, "MASTER_ADDR=" + name + " (loopback here): loopback only, as the rendezvous");
    }

    // ------------------------------------------------------------------ the attacker and the relay

    /** Holds {@code count} silent connections to rank 0's port, and opens another at once whenever one is closed. */
    private static final class SlotHolder implements AutoCloseable {
        final AtomicInteger reconnects = new AtomicInteger();
        /** Its connections that heard rank 0's first line (each held a waiting slot). */
        final AtomicInteger greeted = new AtomicInteger();
        private final Selector selector = Selector.open();
        private final int port;
        private volatile boolean closed;
        private final Thread thread;

        SlotHolder(int port, int count) throws IOException {
            this.port = port;
            for (int i = 0; i < count; i++) {
                open();
            }
            thread = new Thread(this::run, "slot-holder");
            thread.setDaemon(true);
            thread.start();
        }

        private void open() throws IOException {
            SocketChannel c = SocketChannel.open(new InetSocketAddress("127.0.0.1", port));
            c.configureBlocking(false);
            c.register(selector, SelectionKey.OP_READ);
        }

        private void run() {
            ByteBuffer b = ByteBuffer.allocate(4096);
            try {
                while (!closed) {
                    selector.select(10);
                    for (SelectionKey k : selector.selectedKeys()) {
                        SocketChannel c = (SocketChannel) k.channel();
                        int n;
                        try {
                            b.clear();
                            n = c.read(b);
                        } catch (IOException e) {
                            n = -1;
                        }
                        if (n > 0 && k.attachment() == null) {
                            k.attach(Boolean.TRUE);
                            greeted.incrementAndGet();
                        }
                        if (n < 0) {
                            k.cancel();
                            c.close();
                            if (!closed) {
                                open();
                                reconnects.incrementAndGet();
                            }
                        }
                    }
                    selector.selectedKeys().clear();
                }
            } catch (IOException | RuntimeException e) {
                // closed
            }
        }

        @Override
        public void close() throws Exception {
            closed = true;
            thread.join(2000);
            for (SelectionKey k : selector.keys()) {
                k.channel().close();
            }
            selector.close();
        }
    }

    /**
     * A relay between one rank and rank 0, as a process on the path could be: it passes every line, and on demand
     * sends the rank a line of its own, sends rank 0 the rank's next PING twice, or swaps the rank's next two lines.
     */
    private static final class Relay implements AutoCloseable {
        private final ServerSocket listening = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
        private final int upstream;
        private volatile Socket rank;
        private volatile Socket zero;
        private volatile boolean replayPing;
        private volatile boolean swap;
        final AtomicInteger connections = new AtomicInteger();

        Relay(int upstream) throws IOException {
            this.upstream = upstream;
            Thread t = new Thread(this::accept, "relay");
            t.setDaemon(true);
            t.start();
        }

        int port() {
            return listening.getLocalPort();
        }

        /** Relays every connection (a rank connects again through it after a failed check), the last one at hand. */
        private void accept() {
            try {
                while (true) {
                    Socket r = listening.accept();
                    Socket z = new Socket("127.0.0.1", upstream);
                    rank = r;
                    zero = z;
                    connections.incrementAndGet();
                    for (boolean up : new boolean[] {false, true}) {
                        Thread t = new Thread(() -> pump(up ? r : z, up ? z : r, up), up ? "relay-up" : "relay-down");
                        t.setDaemon(true);
                        t.start();
                    }
                }
            } catch (IOException e) {
                // closed
            }
        }

        /** No more connections: a rank cannot connect again through it. */
        void stopAccepting() throws IOException {
            listening.close();
        }

        private void pump(Socket from, Socket to, boolean up) {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(from.getInputStream(),
                        StandardCharsets.UTF_8));
                String line;
                String held = null;
                while ((line = in.readLine()) != null) {
                    if (up && swap && held == null) {
                        held = line;
                        continue;
                    }
                    write(to, line);
                    if (held != null) {
                        write(to, held);
                        held = null;
                        swap = false;
                    }
                    if (up && replayPing && line.startsWith("PING")) {
                        replayPing = false;
                        write(to, line);
                    }
                }
            } catch (IOException e) {
                // one side closed
            }
            try {
                from.close();
                to.close();
            } catch (IOException e) {
                // closed
            }
        }

        private static void write(Socket to, String line) throws IOException {
            synchronized (to) {
                to.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
                to.getOutputStream().flush();
            }
        }

        void toRank(String line) throws IOException {
            write(rank, line);
        }

        void replayNextPing() {
            replayPing = true;
        }

        void swapNextTwo() {
            swap = true;
        }

        @Override
        public void close() throws IOException {
            listening.close();
            for (Socket s : new Socket[] {rank, zero}) {
                if (s != null) {
                    s.close();
                }
            }
        }
    }
}
