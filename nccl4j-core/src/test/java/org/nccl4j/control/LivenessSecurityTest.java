package org.nccl4j.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.nccl4j.StubFixture;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.launch.JobSecret;
import org.slf4j.LoggerFactory;

/**
 * Who may speak on the liveness channel (loopback): the job's secret by challenge and response, both ways; rank 0's
 * checks of every claim (an impostor for a connected rank, a rank out of range, a second hello, lines only rank 0
 * sends); bounded lines, the hello deadline and the cap on connections waiting for their hello. A refused connection
 * is closed and said once at WARN, and is never a loss, a join or a departure. The nested classes run every test of
 * LivenessTest and FarewellTest again with {@code NCCL4J_JOB_SECRET} set ({@code org.nccl4j.DepartingWithSecretTest}
 * those of {@code org.nccl4j.DepartingTest}).
 */
class LivenessSecurityTest {
    private static final JobSecret SECRET = JobSecret.of("liveness-test-secret-0123456789");
    private static final JobSecret OTHER = JobSecret.of("another-jobs-secret-9876543210");

    private boolean nested;
    private Logger logger;
    private ListAppender<ILoggingEvent> appender;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void capture(org.junit.jupiter.api.TestInfo test) {
        nested = test.getTestClass().map(c -> c.getEnclosingClass() == LivenessSecurityTest.class).orElse(false);
        if (nested) {   // before the nested class's own (inherited) set-up, which may serve already
            setSecret();
        }
        logger = (Logger) LoggerFactory.getLogger(Liveness.class);
        appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
    }

    @AfterEach
    void release() {
        if (nested) {
            restoreSecret();
        }
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
            return appender.list.stream().filter(e -> e.getLevel() == level)
                    .map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains(containing)).toList();
        }
    }

    private List<String> warnings(String containing) {
        synchronized (appender) {
            return appender.list.stream().filter(e -> e.getLevel() == Level.WARN)
                    .map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains(containing)).toList();
        }
    }


    private int port;

    /** Rank 0 of {@code size} ranks with {@code secret}, joined to itself; every refusal said at WARN. */
    private Liveness serve(int size, JobSecret secret, Duration hello) throws Exception {
        return serve(size, secret, hello, true);
    }

    /** Rank 0 of {@code size} ranks; {@code everyAtWarn} false: refusals said as in production (bursts). */
    private Liveness serve(int size, JobSecret secret, Duration hello, boolean everyAtWarn) throws Exception {
        port = StubFixture.freePort();
        Liveness served = Liveness.serve(port, Liveness.DEFAULT_TIMEOUT, size, secret, null);
        if (everyAtWarn) {
            served.refusalQuiet(Duration.ZERO);
        }
        if (hello != null) {
            served.helloDeadline(hello);
        }
        Liveness r0 = Liveness.join(served, 0, "127.0.0.1", port);
        toClose.add(r0);
        return r0;
    }

    private Liveness rank(int r, JobSecret secret) throws IOException {
        Liveness l = Liveness.join(null, r, "127.0.0.1", port, secret);
        toClose.add(l);
        return l;
    }

    /** A raw connection to rank 0, as any process on the network may open. */
    private final class Raw implements AutoCloseable {
        final Socket socket;
        final BufferedReader in;
        final OutputStream out;

        Raw(InetAddress from) throws IOException {
            socket = new Socket();
            if (from != null) {
                socket.bind(new InetSocketAddress(from, 0));
            }
            socket.connect(new InetSocketAddress("127.0.0.1", port), 3000);
            socket.setSoTimeout(5000);
            in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            out = socket.getOutputStream();
            toClose.add(this);
        }

        Raw() throws IOException {
            this(null);
        }

        Raw send(String text) {
            try {
                out.write(text.getBytes(StandardCharsets.UTF_8));
                out.flush();
            } catch (IOException e) {
                // rank 0 closed it already: what follows checks that
            }
            return this;
        }

        /** The next line of rank 0's, past the {@code OPEN} a rank 0 without a secret says on accept. */
        String line() throws IOException {
            String l = in.readLine();
            return LivenessWire.OPEN.equals(l) ? in.readLine() : l;
        }

        /** Reads until rank 0 closes the connection; fails when it does not within 5 s. */
        void closedByRankZero() {
            try {
                while (in.readLine() != null) {
                    // what rank 0 sent before closing
                }
            } catch (java.net.SocketTimeoutException e) {
                throw new AssertionError("rank 0 did not close the connection", e);
            } catch (IOException e) {
                // reset: closed
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** A correct AUTH line for {@code challenge}. */
    private static String auth(JobSecret secret, String challenge) {
        String serverNonce = challenge.substring("CHALLENGE ".length());
        String clientNonce = JobSecret.nonce();
        return "AUTH " + clientNonce + " " + secret.prove(LivenessWire.PURPOSE, serverNonce, clientNonce, "client") + "\n";
    }

    /** No rank is lost or departed, and rank {@code r} heard of no one else, after a moment for news to travel. */
    private static void nothingHappened(Liveness... ranks) throws InterruptedException {
        Thread.sleep(300);
        for (Liveness l : ranks) {
            assertFalse(l.anyLost(), "lost: " + l.lost());
            assertTrue(l.departures().of(0).isEmpty(), "departures: " + l.departures().of(0));
        }
    }

    // ------------------------------------------------------------------ the secret

    @Test
    void withTheRightSecretEveryRankJoinsAfterTheChallengeAndItsLossIsStillNamed() throws Exception {
        Liveness r0 = serve(3, SECRET, null);
        Liveness r1 = rank(1, SECRET);
        Liveness r2 = rank(2, SECRET);
        StubFixture.within(3000, () -> r1.roster().size() == 3 ? true : null, "every hello");
        try (Raw raw = new Raw()) {
            String challenge = raw.line();
            assertTrue(challenge.matches("CHALLENGE [0-9a-f]{64}"), challenge);
        }
        r2.dropWithoutGoodbye();
        StubFixture.within(5000, () -> r1.anyLost() ? true : null, "rank 2's loss");
        assertEquals(List.of(2), r1.lost().stream().map(RankProcess::rank).toList());
        assertTrue(r0.anyLost());
    }

    @Test
    void aWrongSecretIsRefusedOnBothSidesAndNamed() throws Exception {
        Liveness r0 = serve(2, SECRET, null);
        IOException e = assertThrows(IOException.class, () -> rank(1, OTHER));
        assertTrue(e instanceof LivenessWire.Refused, e.toString());
        assertEquals("rank 0's liveness channel at 127.0.0.1:" + port + " refused rank 1's proof: its "
                + "NCCL4J_JOB_SECRET differs from this rank's (every rank of the job needs the same one)",
                e.getMessage());
        StubFixture.within(3000, () -> warnings("its AUTH proof is wrong").size() == 1 ? true : null, "the WARN");
        assertTrue(warnings("").get(0).matches("nccl4j liveness: refused the connection from 127\\.0\\.0\\.1:[0-9]+: "
                + "its AUTH proof is wrong \\(not this job's NCCL4J_JOB_SECRET, or an answer to another challenge\\); "
                + "the job goes on"), warnings("").toString());
        assertEquals(List.of(0), List.copyOf(r0.roster().keySet()));
        nothingHappened(r0);
    }

    /**
     * A rank 0 under a full house lets a connection go after its challenge, even one whose AUTH is on its way (the
     * JVM's first proof takes tens of ms): the rank tries again instead of taking it for a wrong secret and giving up
     * (a 2-rank GPU job under a siege of 72 reconnecting connections never started its last rank before this).
     */
    @Test
    void aConnectionLetGoAfterTheProofIsTriedAgainAndNotTakenForAWrongSecret() throws Exception {
        try (ServerSocket fake = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            port = fake.getLocalPort();
            List<String> seen = new ArrayList<>();
            Thread server = new Thread(() -> {
                try {
                    for (int i = 0; i < 2; i++) {
                        try (Socket c = fake.accept()) {
                            c.getOutputStream().write(("CHALLENGE " + "ab".repeat(32) + "\n")
                                    .getBytes(StandardCharsets.US_ASCII));
                            BufferedReader in = new BufferedReader(new InputStreamReader(c.getInputStream(),
                                    StandardCharsets.US_ASCII));
                            synchronized (seen) {
                                seen.add(in.readLine().split(" ")[0]);
                            }
                        }   // closed after the proof, as a connection let go in a full house
                    }
                } catch (IOException e) {
                    // the test ends
                }
            }, "full-house-rank-0");
            server.setDaemon(true);
            server.start();
            IOException e = assertThrows(IOException.class, () -> rank(1, SECRET));
            assertFalse(e instanceof LivenessWire.Refused, "not a refusal: " + e);
            assertEquals("rank 0's liveness channel at 127.0.0.1:" + port + " answered rank 1's proof with the end of"
                    + " the connection; rank 1 tries again", e.getMessage());
            Liveness later = Liveness.joinLater(null, 1, "127.0.0.1", port, System.nanoTime() + 3_000_000_000L,
                    SECRET);
            toClose.add(later);
            StubFixture.within(3000, () -> {
                synchronized (seen) {
                    return seen.size() == 2 ? true : null;
                }
            }, "the second try");
            assertEquals(List.of("AUTH", "AUTH"), seen);
            server.join(3000);
        }
    }

    /**
     * A rank whose unique-id frame failed its check on the way from the rendezvous asks rank 0 for the id on this
     * channel (sealed with its own handshake's keys): answered once rank 0 has it, whether asked before or after.
     */
    @Test
    void aRankAsksForTheUniqueIdOnTheSealedChannelAndIsAnsweredOnceRankZeroHasIt() throws Exception {
        Liveness r0 = serve(3, SECRET, null);
        Liveness r1 = rank(1, SECRET);
        Liveness r2 = rank(2, SECRET);
        StubFixture.within(3000, () -> r0.roster().size() == 3 ? true : null, "every hello");
        byte[] id = new byte[128];
        new Random(7).nextBytes(id);
        java.util.concurrent.CompletableFuture<byte[]> early = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> r1.askUniqueId(System.nanoTime() + 5_000_000_000L));
        Thread.sleep(200);   // asked before rank 0 has the id
        assertFalse(early.isDone(), "no answer before rank 0 has the id");
        r0.offerUniqueId(id);
        assertArrayEquals(id, early.get(5, java.util.concurrent.TimeUnit.SECONDS));
        assertArrayEquals(id, r2.askUniqueId(System.nanoTime() + 5_000_000_000L), "asked after: answered at once");
        assertNull(r0.askUniqueId(System.nanoTime() + 1_000_000_000L), "rank 0 asks nobody");
        StubFixture.within(3000, () -> warnings("asked for the unique id on the liveness channel").size() == 2 ? true
                : null, "one WARN per rank answered: " + warnings(""));
    }

    @Test
    void withoutASecretNoRankAsksForTheUniqueIdOnTheChannel() throws Exception {
        Liveness r0 = serve(2, null, null);
        Liveness r1 = rank(1, null);
        StubFixture.within(3000, () -> r0.roster().size() == 2 ? true : null, "every hello");
        r0.offerUniqueId(new byte[128]);
        long t0 = System.nanoTime();
        assertNull(r1.askUniqueId(System.nanoTime() + 5_000_000_000L), "no sealed line, no id: a stranger could send");
        assertTrue(System.nanoTime() - t0 < 1_000_000_000L, "refused at once, not waited for");
    }

    @Test
    void aFalseRankZeroThatCannotProveTheSecretIsRefusedByTheRank() throws Exception {
        try (ServerSocket fake = new ServerSocket(0)) {
            port = fake.getLocalPort();
            Thread t = new Thread(() -> {
                try (Socket s = fake.accept()) {
                    s.getOutputStream().write(("CHALLENGE " + JobSecret.nonce() + "\n").getBytes());
                    new BufferedReader(new InputStreamReader(s.getInputStream())).readLine();
                    s.getOutputStream().write(("OK " + JobSecret.nonce() + JobSecret.nonce() + "\n").getBytes());
                    Thread.sleep(2000);
                } catch (Exception e) {
                    // the rank hung up
                }
            });
            t.start();
            LivenessWire.Refused e = assertThrows(LivenessWire.Refused.class, () -> rank(1, SECRET));
            assertEquals("rank 0's liveness channel at 127.0.0.1:" + port + " could not prove it holds "
                    + "NCCL4J_JOB_SECRET: it is not this job's rank 0, or its secret differs; rank 1 does not join it",
                    e.getMessage());
        }
    }

    @Test
    void aRankWithTheSecretThatHearsNothingYetConnectsAgainAndJoins() throws Exception {
        int p = StubFixture.freePort();
        ServerSocket busy = new ServerSocket(p);   // a rank 0 too busy to say anything: it accepts, then is silent
        Socket[] held = new Socket[1];
        Thread t = new Thread(() -> {
            try {
                held[0] = busy.accept();
            } catch (IOException e) {
                // closed
            }
        });
        t.start();
        Liveness lone = Liveness.joinLater(null, 1, "127.0.0.1", p, System.nanoTime() + 30_000_000_000L, SECRET);
        toClose.add(lone);
        t.join(10_000);
        assertNotNull(held[0], "the rank connected");
        Thread.sleep(200);
        busy.close();   // rank 0 now answers on the same port, with the secret
        Liveness served = Liveness.serve(p, Liveness.DEFAULT_TIMEOUT, 2, SECRET, null);
        toClose.add(Liveness.join(served, 0, "127.0.0.1", p));
        try {
            assertTrue(lone.awaitArrivals(2, System.nanoTime() + 25_000_000_000L, true),
                    "silence was not taken for a rank 0 without the secret: the rank tried again and joined");
            assertEquals(List.of(0, 1), List.copyOf(lone.roster().keySet()));
        } finally {
            held[0].close();
        }
    }

    @Test
    void aRankWithoutTheSecretFailsAtJoinNamingItAndRankZeroRefusesIt() throws Exception {
        Liveness r0 = serve(3, SECRET, null);
        LivenessWire.Refused e = assertThrows(LivenessWire.Refused.class, () -> rank(1, null));
        assertEquals("rank 0's liveness channel at 127.0.0.1:" + port + " asks for the job's secret, but rank 1 has "
                + "no NCCL4J_JOB_SECRET: give every rank the same NCCL4J_JOB_SECRET (or NCCL4J_JOB_SECRET_FILE)",
                e.getMessage());
        StubFixture.within(3000, () -> warnings("did not authenticate").size() == 1 ? true : null, "the WARN");
        assertTrue(warnings("did not authenticate").get(0).contains("it did not authenticate (sent 'HELLO 1 "),
                warnings("").toString());

        // in the background, as Communicator.fromEnvironment joins: awaitArrivals names it at once
        Liveness later = Liveness.joinLater(null, 2, "127.0.0.1", port, System.nanoTime() + 20_000_000_000L);
        toClose.add(later);
        IllegalStateException x = assertThrows(IllegalStateException.class,
                () -> later.awaitArrivals(3, System.nanoTime() + 20_000_000_000L, false));
        assertTrue(x.getMessage().contains("but rank 2 has no NCCL4J_JOB_SECRET"), x.getMessage());
        assertEquals(List.of(0), List.copyOf(r0.roster().keySet()));
        nothingHappened(r0);
    }

    @Test
    void aRankWithTheSecretFacingARankZeroWithoutOneFailsNamingIt() throws Exception {
        Liveness r0 = serve(2, null, Duration.ofMillis(500));
        IOException e = assertThrows(IOException.class, () -> rank(1, SECRET));
        assertTrue(e.getMessage().startsWith("rank 0's liveness channel at 127.0.0.1:" + port + " sent no CHALLENGE"),
                e.getMessage());
        assertTrue(e.getMessage().endsWith("sent no CHALLENGE (it runs without a secret): rank 1 has "
                + "NCCL4J_JOB_SECRET but rank 0 runs without it; give every rank the same NCCL4J_JOB_SECRET, or none"),
                e.getMessage());
        assertTrue(e instanceof LivenessWire.Refused, "a refusal, which retrying cannot mend: " + e);
        Thread.sleep(700);   // past rank 0's hello deadline of 500 ms
        assertEquals(List.of(), warnings("refused the connection"), "the rank hung up at OPEN without a byte sent: "
                + "to rank 0 a connection that ended unused (said at DEBUG), not an intruder");

        // in a job (the rank joining in the background): rank 0's OPEN is a refusal, not worth retrying, at once
        serve(2, null, null);
        Liveness lone = Liveness.joinLater(null, 1, "127.0.0.1", port, System.nanoTime() + 20_000_000_000L, SECRET);
        toClose.add(lone);
        long t0 = System.nanoTime();
        IllegalStateException x = assertThrows(IllegalStateException.class,
                () -> lone.awaitArrivals(2, System.nanoTime() + 20_000_000_000L, false));
        assertTrue(x.getMessage().matches("rank 0's liveness channel at 127\\.0\\.0\\.1:[0-9]+ sent no CHALLENGE \\("
                + "it runs without a secret\\): rank 1 has NCCL4J_JOB_SECRET but rank 0 runs without it; give every "
                + "rank the same NCCL4J_JOB_SECRET, or none"), x.getMessage());
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms < 3000, "refused at once, not after a hello time: " + ms + " ms");

        try (Raw raw = new Raw()) {   // a client that authenticates where rank 0 has no secret
            raw.send(auth(SECRET, "CHALLENGE " + JobSecret.nonce())).closedByRankZero();
        }
        StubFixture.within(3000, () -> warnings("it sent AUTH, but rank 0 has no NCCL4J_JOB_SECRET").size() == 1
                ? true : null, "the WARN");
        nothingHappened(r0);
    }

    @Test
    void aReplayedAuthLineFailsForRankZerosNonceDiffers() throws Exception {
        Liveness r0 = serve(3, SECRET, null);
        String captured;
        try (Raw first = new Raw()) {   // an exchange of the job's, as seen on the wire
            captured = auth(SECRET, first.line());
            first.send(captured);
            assertTrue(first.line().matches("OK [0-9a-f]{64}"));
        }
        try (Raw replay = new Raw()) {
            assertTrue(replay.line().startsWith("CHALLENGE "));
            replay.send(captured).send("HELLO 1 intruder 4242\n").closedByRankZero();
        }
        StubFixture.within(3000, () -> warnings("its AUTH proof is wrong").size() == 1 ? true : null, "one WARN");
        assertFalse(r0.roster().containsKey(1));
        nothingHappened(r0);
    }

    // ------------------------------------------------------------------ claims

    @Test
    void anImpostorHelloForAConnectedRankIsRefusedAndTheRealRankStays() throws Exception {
        Liveness r0 = serve(2, null, null);
        Liveness r1 = rank(1, null);
        StubFixture.within(3000, () -> r1.roster().size() == 2 ? true : null, "every hello");
        try (Raw raw = new Raw()) {
            raw.send("HELLO 1 intruder 4242\n").closedByRankZero();
        }   // closed without a goodbye
        nothingHappened(r0, r1);
        assertEquals(ProcessHandle.current().pid(), r0.roster().get(1).pid(), "the real rank 1");
        List<String> w = warnings("refused the connection");
        assertEquals(1, w.size(), warnings("").toString());
        assertTrue(w.get(0).matches("nccl4j liveness: refused the connection from 127\\.0\\.0\\.1:[0-9]+: it claims rank "
                + "1, which is connected already \\(from 127\\.0\\.0\\.1:[0-9]+\\); the job goes on"), w.get(0));
        assertEquals(List.of(), warnings("is lost"));
        r1.dropWithoutGoodbye();   // the real rank's loss is still named
        StubFixture.within(5000, () -> r0.anyLost() ? true : null, "rank 1's loss");
    }

    @Test
    void aSecondHelloARankOutOfRangeAndAnotherAddressAreRefused() throws Exception {
        Liveness r0 = serve(3, null, null);
        Liveness r1 = rank(1, null);
        try (Raw raw = new Raw()) {
            raw.send("HELLO 2 somewhere 77\n");
            assertTrue(raw.line().startsWith("JOINED "));
            raw.send("HELLO 2 somewhere 77\n").closedByRankZero();
        }
        StubFixture.within(3000, () -> warnings("a second HELLO on the connection of rank 2").size() == 1 ? true
                : null, "the WARN");
        for (String hello : List.of("HELLO 3 x 1\n", "HELLO -1 x 1\n", "HELLO 99999999999 x 1\n", "HELLO 1\n")) {
            try (Raw raw = new Raw()) {
                raw.send(hello).closedByRankZero();
            }
        }
        StubFixture.within(3000, () -> warnings("outside this job's ranks 0..2").size() == 2 ? true : null,
                "3 and -1 refused: " + warnings(""));
        StubFixture.within(3000, () -> warnings("its hello is malformed").size() == 2 ? true : null, "malformed");
        InetAddress elsewhere = InetAddress.getByName("127.0.0.2");
        try (Raw raw = new Raw(elsewhere)) {   // rank 2 joined from 127.0.0.1
            raw.send("HELLO 2 elsewhere 78\n").closedByRankZero();
        }
        StubFixture.within(3000, () -> warnings("it claims rank 2, which joined from 127.0.0.1").size() == 1 ? true
                : null, "another address: " + warnings(""));
        assertTrue(warnings("").get(warnings("").size() - 1).startsWith(
                "nccl4j liveness: refused the connection from 127.0.0.2:"), warnings("").toString());
        nothingHappened(r0, r1);
        assertEquals(List.of(), warnings("is lost"));
    }

    @Test
    void linesOnlyRankZeroSendsAreRefusedAndNothingIsRecorded() throws Exception {
        Liveness r0 = serve(3, SECRET, null);
        Liveness r1 = rank(1, SECRET);
        List<String> forged = List.of("LOST 1 somewhere 1", "LEFT 0", "JOINED 2 elsewhere 5",
                "DEPARTED 1 somewhere 1 0 abort 0 none forged", "CAUSED 1 forged", "AHEAD 0 9", "CHECK 0 1",
                "DESCRIBE 0 1 2", "MISMATCH 0 forged", "CHALLENGE " + JobSecret.nonce(), "OK " + JobSecret.nonce(),
                "WHATEVER");
        for (String line : forged) {
            try (Raw raw = new Raw()) {
                String challenge = raw.line();
                String serverNonce = challenge.substring("CHALLENGE ".length());
                String clientNonce = JobSecret.nonce();
                raw.send("AUTH " + clientNonce + " " + SECRET.prove(LivenessWire.PURPOSE, serverNonce, clientNonce,
                        "client") + "\n");
                assertTrue(raw.line().startsWith("OK "));
                // a process with the secret: its lines after the handshake are sealed, and still refused
                org.nccl4j.launch.RecordSeal seal = org.nccl4j.launch.RecordSeal.of(SECRET, LivenessWire.PURPOSE,
                        serverNonce, clientNonce, false);
                raw.send(seal.seal("HELLO 2 forger 99\n"));
                assertTrue(raw.line().startsWith("JOINED "));
                raw.send(seal.seal(line + "\n")).closedByRankZero();
            }
            String word = line.split(" ")[0];
            StubFixture.within(3000, () -> warnings("rank 2's connection sent '" + word).size() == 1 ? true : null,
                    "the WARN for " + word + ": " + warnings(""));
        }
        nothingHappened(r0, r1);
        assertEquals(List.of(), warnings("is lost"));
        assertFalse(r1.roster().containsKey(1) && r1.roster().get(1).host().equals("somewhere"));
        assertEquals(forged.size(), warnings("a line a rank may not send").size());
    }

    @Test
    void aLineBeforeTheHelloButTheHandshakesIsRefused() throws Exception {
        Liveness r0 = serve(2, null, null);
        try (Raw raw = new Raw()) {
            raw.send("LOST 0 x 1\n").closedByRankZero();
        }
        StubFixture.within(3000, () -> warnings("it sent 'LOST 0 x 1' before its hello").size() == 1 ? true : null,
                "the WARN: " + warnings(""));
        nothingHappened(r0);
    }

    @Test
    void aBurstOfRefusalsIsOneWarnLineAndTheNextBurstCountsTheOthers() throws Exception {
        Liveness r0 = serve(2, SECRET, null, false);
        Liveness r1 = rank(1, SECRET);
        for (int i = 0; i < 5; i++) {
            try (Raw raw = new Raw()) {
                raw.line();   // the CHALLENGE
                raw.send("HELLO 1 intruder " + i + "\n").closedByRankZero();
            }
        }
        StubFixture.within(3000, () -> warnings("refused the connection").size() == 1 ? true : null, "one line");
        assertTrue(warnings("").get(0).contains("it did not authenticate (sent 'HELLO 1 intruder 0'"), warnings("").toString());
        Thread.sleep(org.nccl4j.launch.Refusals.QUIET_MILLIS + 200);
        try (Raw raw = new Raw()) {
            raw.send("LOST 1 x 1\n").closedByRankZero();
        }
        StubFixture.within(3000, () -> warnings("refused the connection").size() == 2 ? true : null, "a new burst");
        assertTrue(warnings("").get(1).endsWith("the job goes on (4 more refused since the last such line, said at "
                + "DEBUG)"), warnings("").get(1));
        nothingHappened(r0, r1);
        assertEquals(List.of(), warnings("is lost"));
    }

    @Test
    void aConnectionThatLeavesWithoutAByteIsAProbeSaidAtDebugOnly() throws Exception {
        logger.setLevel(Level.DEBUG);   // reset in release()
        Liveness r0 = serve(2, SECRET, null, false);
        for (int i = 0; i < 3; i++) {
            try (Raw raw = new Raw()) {
                assertTrue(raw.line().startsWith("CHALLENGE "));
            }   // closed without a byte, as a port scanner does
        }
        StubFixture.within(3000, () -> said(Level.DEBUG, "ended without a byte").size() == 3 ? true : null,
                "three probes at DEBUG: " + said(Level.DEBUG, ""));
        try (Raw raw = new Raw()) {
            raw.line();
            raw.send("AU");   // a byte or two, then gone: that is said
        }
        StubFixture.within(3000, () -> warnings("it closed the connection before its hello").size() == 1 ? true
                : null, "one WARN: " + warnings(""));
        assertEquals(1, warnings("").size(), warnings("").toString());
        nothingHappened(r0);
    }

    // ------------------------------------------------------------------ bounds

    @Test
    void aMebibyteWithoutANewlineIsRefusedWithoutReadingItWhole() throws Exception {
        Liveness r0 = serve(3, null, null);
        Liveness r1 = rank(1, null);
        byte[] mib = new byte[1 << 20];
        java.util.Arrays.fill(mib, (byte) 'a');
        for (boolean afterHello : new boolean[] {false, true}) {
            try (Raw raw = new Raw()) {
                if (afterHello) {
                    raw.send("HELLO 2 big 1\n");
                    assertTrue(raw.line().startsWith("JOINED "));
                }
                try {
                    raw.out.write(mib);
                    raw.out.flush();
                } catch (IOException e) {
                    // rank 0 closed it after the first few KiB
                }
                raw.closedByRankZero();
            }
        }
        StubFixture.within(3000, () -> warnings("it sent a line longer than 512 bytes").size() == 1 ? true : null,
                "before the hello: " + warnings(""));
        StubFixture.within(3000, () -> warnings("it sent a line longer than " + LivenessWire.MAX_OPS_LINE + " bytes")
                .size() == 1 ? true : null, "after the hello: " + warnings(""));
        nothingHappened(r0, r1);
        assertTrue(LivenessWire.MAX_OPS_LINE < 8192, "a bounded line buffer per connection");
    }

    @Test
    void randomBytesAreRefused() throws Exception {
        for (JobSecret secret : new JobSecret[] {null, SECRET}) {
            appender.list.clear();
            Liveness r0 = serve(2, secret, null);
            Random random = new Random(42);
            for (int i = 0; i < 8; i++) {
                byte[] junk = new byte[1 + random.nextInt(4096)];
                random.nextBytes(junk);
                try (Raw raw = new Raw()) {
                    try {
                        raw.out.write(junk);
                        raw.out.flush();
                    } catch (IOException e) {
                        // closed already
                    }
                    raw.socket.shutdownOutput();
                    raw.closedByRankZero();
                }
            }
            StubFixture.within(3000, () -> warnings("refused the connection from 127.0.0.1").size() == 8 ? true : null,
                    "one WARN per connection: " + warnings(""));
            assertTrue(warnings("").stream().allMatch(w -> w.chars().allMatch(c -> c >= ' ' && c < 127)),
                    "nothing unprintable in the log");
            Liveness r1 = rank(1, secret);
            StubFixture.within(3000, () -> r1.roster().size() == 2 ? true : null, "rank 1 still joins");
            nothingHappened(r0, r1);
        }
    }

    @Test
    void aConnectionMustSayHelloWithinTheDeadlineTricklingOrNot() throws Exception {
        Liveness r0 = serve(2, SECRET, Duration.ofMillis(500));
        long t0 = System.nanoTime();
        try (Raw silent = new Raw(); Raw trickle = new Raw()) {
            Thread t = new Thread(() -> {
                for (int i = 0; i < 30; i++) {
                    trickle.send("A");
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            t.start();
            silent.closedByRankZero();
            trickle.closedByRankZero();
            t.interrupt();
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms < 2000, "closed after " + ms + " ms");
        // 10 s: the lines come at once on an idle machine, but a loaded one (a parallel build) took over 3 s
        StubFixture.within(10_000, () -> warnings("refused the connection").size() == 2 ? true : null,
                "two WARN lines: " + warnings(""));
        assertEquals(1, warnings("it sent nothing within 500 ms; the job goes on").size(), "the silent one (its first "
                + "byte's deadline is its hello's when that is shorter): " + warnings(""));
        assertEquals(1, warnings("it did not authenticate and say hello within 500 ms").size(), "the trickling one");
        nothingHappened(r0);
    }

    @Test
    void twoHundredIdleConnectionsAreCappedAndTheRealRanksStillJoinAndTheirLossIsNamed() throws Exception {
        logger.setLevel(Level.DEBUG);   // reset in release()
        Liveness r0 = serve(3, null, Duration.ofMillis(1500), false);
        long before = liveThreads();
        List<Raw> idle = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            idle.add(new Raw());
        }
        Thread.sleep(300);
        long during = liveThreads() - before;
        assertTrue(during <= LivenessHub.MAX_PENDING + 2, during + " threads for 200 idle connections");
        long deadline = System.nanoTime() + 15_000_000_000L;
        Liveness r1 = Liveness.joinLater(null, 1, "127.0.0.1", port, deadline);
        Liveness r2 = Liveness.joinLater(null, 2, "127.0.0.1", port, deadline);
        toClose.add(r1);
        toClose.add(r2);
        assertTrue(r1.awaitArrivals(3, deadline, true), "every rank arrives: " + r1.roster());
        assertEquals(1, warnings("connections have not said hello yet").size(), "one WARN per burst: "
                + warnings("connections have not said hello yet"));
        StubFixture.within(5000, () -> said(Level.DEBUG, "within 1500 ms; the job goes on (part of the flood said "
                + "above)").size() >= 1 ? true : null, "the waiting connections' ends at DEBUG");
        assertEquals(List.of(), warnings("did not authenticate"), "a flood's connections that time out are said "
                + "with the flood's line");
        assertEquals(1, warnings("").size(), "one WARN for the whole flood: " + warnings(""));
        r2.dropWithoutGoodbye();
        StubFixture.within(5000, () -> r1.anyLost() ? true : null, "rank 2's loss");
        assertEquals(List.of(2), r1.lost().stream().map(RankProcess::rank).toList());
        for (Raw r : idle) {
            r.close();
        }
    }

    private static long liveThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("nccl4j-liveness-peer")).count();
    }

    @Test
    void rankZeroListensOnMasterAddrsAddressWhenItIsLocalElseEverywhere() throws Exception {
        assertEquals(InetAddress.getByName("127.0.0.1"), Liveness.bindAddress("127.0.0.1", null, 1));
        assertTrue(Liveness.bindAddress("localhost", null, 1).isLoopbackAddress(), "localhost: its loopback");
        assertNull(Liveness.bindAddress("192.0.2.1", null, 1), "not this host's: every address");
        assertNull(Liveness.bindAddress("no-such-host.invalid", null, 1));
        assertNull(Liveness.bindAddress(null, null, 1));
        assertNull(Liveness.bindAddress("127.0.0.1", "any", 1), "NCCL4J_LIVENESS_BIND=any");
        assertEquals(InetAddress.getByName("127.0.0.1"), Liveness.bindAddress("192.0.2.1", "127.0.0.1", 1));
        IOException e = assertThrows(IOException.class, () -> Liveness.bindAddress(null, "192.0.2.1", 1));
        assertEquals("NCCL4J_LIVENESS_BIND=192.0.2.1 is not an address of this host: use any, or an address of rank "
                + "0's host", e.getMessage());
        Logger root = (Logger) LoggerFactory.getLogger(Liveness.class);
        ListAppender<ILoggingEvent> info = new ListAppender<>();
        info.start();
        root.addAppender(info);
        try {
            Liveness.bindAddress("192.0.2.1", null, 29550);
            assertEquals("nccl4j liveness: rank 0 listens on every address at port 29550, not MASTER_ADDR=192.0.2.1: "
                    + "its address 192.0.2.1 is not one of this host's; set NCCL4J_LIVENESS_BIND=<address> to choose "
                    + "one", info.list.get(0).getFormattedMessage());
        } finally {
            root.detachAppender(info);
        }
    }

    // ------------------------------------------------------------------ the existing tests, with a secret

    private static String secretBefore;

    static void setSecret() {
        secretBefore = NcclNative.getenv(JobSecret.VARIABLE);
        NcclNative.setenv(JobSecret.VARIABLE, "nested-test-secret-0123456789abcdef", 1);
    }

    static void restoreSecret() {
        if (secretBefore == null) {
            NcclNative.unsetenv(JobSecret.VARIABLE);
        } else {
            NcclNative.setenv(JobSecret.VARIABLE, secretBefore, 1);
        }
    }

    /** LivenessTest with NCCL4J_JOB_SECRET set. */
    @Nested
    class LivenessWithSecret extends LivenessTest {
        // every test of LivenessTest; the secret is set by the enclosing class's set-up

        @Test
        void theChannelServedHereAsksForTheSecret() throws Exception {
            assertTrue(JobSecret.fromEnvironment() != null);
            int p = StubFixture.freePort();
            try (Liveness l = Liveness.serve(p); Socket s = new Socket("127.0.0.1", p)) {
                String first = new BufferedReader(new InputStreamReader(s.getInputStream())).readLine();
                assertTrue(first.startsWith("CHALLENGE "), first);
            }
        }
    }

    /** FarewellTest with NCCL4J_JOB_SECRET set (its child JVM gets it by environment). */
    @Nested
    class FarewellWithSecret extends FarewellTest {
        // every test of FarewellTest
    }
}
