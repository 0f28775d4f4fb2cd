package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.nccl4j.StubFixture;

/** The roll call: who answers is there; silence, another rank's answer or a wrong proof is not. */
class RollCallTest {
    private static final Duration LINGER = Duration.ofSeconds(30);

    @Test
    void everyRankThatAnswersIsThereAndASilentOneIsNot() throws Exception {
        int[] ports = {StubFixture.freePort(), StubFixture.freePort(), StubFixture.freePort()};
        try (RollCall one = RollCall.answer(1, ports[0], null, LINGER);
             RollCall three = RollCall.answer(3, ports[2], null, LINGER)) {
            Map<Integer, InetSocketAddress> ask = new TreeMap<>();
            ask.put(1, local(ports[0]));
            ask.put(2, local(ports[1]));   // nobody answers there
            ask.put(3, local(ports[2]));
            long t0 = System.nanoTime();
            Set<Integer> there = RollCall.ask(0, ask, Duration.ofMillis(800), null);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(Set.of(1, 3), there);
            assertTrue(ms >= 700, "a silent rank is asked for the whole window: " + ms + " ms");
        }
    }

    @Test
    void withoutALingerItAnswersUntilClosedAndThenFreesItsPort() throws Exception {
        int port = StubFixture.freePort();
        RollCall r = RollCall.answer(4, port, null);
        try {
            assertEquals(port, r.port());
            assertEquals(Set.of(4), RollCall.ask(0, Map.of(4, local(port)), Duration.ofSeconds(2), null));
            Thread.sleep(300);   // no end of its own: still there for a later roll call
            assertEquals(Set.of(4), RollCall.ask(1, Map.of(4, local(port)), Duration.ofSeconds(2), null));
        } finally {
            r.close();
        }
        try (ServerSocket again = new ServerSocket()) {
            again.setReuseAddress(true);
            again.bind(new InetSocketAddress(port));   // closed: the port is free for the next job
        }
        assertEquals(Set.of(), RollCall.ask(0, Map.of(4, local(port)), Duration.ofMillis(300), null));
    }

    @Test
    void aRankThatStartsAnsweringWithinTheWindowCounts() throws Exception {
        int port = StubFixture.freePort();
        Thread late = new Thread(() -> {
            try {
                Thread.sleep(400);
                RollCall.answer(2, port, null, LINGER);
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        late.start();
        assertEquals(Set.of(2), RollCall.ask(0, Map.of(2, local(port)), Duration.ofSeconds(5), null));
        late.join();
    }

    @Test
    void anAnswerForAnotherRankOrWithoutTheSecretDoesNotCount() throws Exception {
        JobSecret secret = JobSecret.of("roll-call-test-secret-0123456789");
        int[] ports = {StubFixture.freePort(), StubFixture.freePort(), StubFixture.freePort()};
        try (RollCall wrongRank = RollCall.answer(5, ports[0], secret, LINGER);
             RollCall noSecret = RollCall.answer(2, ports[1], null, LINGER);
             RollCall good = RollCall.answer(3, ports[2], secret, LINGER)) {
            Map<Integer, InetSocketAddress> ask = Map.of(1, local(ports[0]), 2, local(ports[1]), 3, local(ports[2]));
            assertEquals(Set.of(3), RollCall.ask(0, ask, Duration.ofMillis(600), secret));
            assertEquals(Set.of(), RollCall.ask(0, Map.of(3, local(ports[2])), Duration.ofMillis(300),
                    JobSecret.of("another-secret-0123456789abcdef")), "a proof of another secret");
        }
    }

    @Test
    void aStrangerGetsNoAnswerAndTheRollGoesOn() throws Exception {
        int port = StubFixture.freePort();
        try (RollCall r = RollCall.answer(1, port, null, LINGER)) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setSoTimeout(2000);
                s.getOutputStream().write("HELLO there\n".getBytes(StandardCharsets.UTF_8));
                assertEquals(-1, s.getInputStream().read(), "closed without a word");
            }
            assertEquals(Set.of(1), RollCall.ask(0, Map.of(1, local(port)), Duration.ofSeconds(2), null));
            assertEquals(port, r.port());
        }
    }

    @Test
    void silentStrangersCannotHoldTheAnswerBack() throws Exception {
        int port = StubFixture.freePort();
        java.util.List<Socket> silent = new java.util.ArrayList<>();
        try (RollCall r = RollCall.answer(1, port, null, LINGER)) {
            for (int i = 0; i < 40; i++) {   // connect and say nothing, more of them than the answering slots
                silent.add(new Socket("127.0.0.1", port));
            }
            long t0 = System.nanoTime();
            assertEquals(Set.of(1), RollCall.ask(0, Map.of(1, local(port)), Duration.ofSeconds(3), null));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 2500, "answered within the window despite 40 silent connections: " + ms + " ms");
        } finally {
            for (Socket s : silent) {
                s.close();
            }
        }
    }

    @Test
    void badArgumentsAreNamed() throws Exception {
        assertEquals("launchRank must be 0 or more, got -1", assertThrows(IllegalArgumentException.class,
                () -> RollCall.answer(-1, 30000, null, LINGER)).getMessage());
        assertEquals("port must be 1 to 65535, got 70000 (the base port plus launch rank 7; choose a lower "
                + "MASTER_PORT)", assertThrows(IllegalArgumentException.class,
                () -> RollCall.answer(7, 70000, null, LINGER)).getMessage());
        assertEquals("linger must be longer than zero, got PT0S", assertThrows(IllegalArgumentException.class,
                () -> RollCall.answer(1, 30000, null, Duration.ZERO)).getMessage());
        assertEquals("port must be 1 to 65535, got 0 (the base port plus launch rank 2; choose a lower MASTER_PORT)",
                assertThrows(IllegalArgumentException.class, () -> RollCall.answer(2, 0, null)).getMessage());
        assertEquals("window must be longer than zero, got null", assertThrows(IllegalArgumentException.class,
                () -> RollCall.ask(0, Map.of(), null, null)).getMessage());
        assertEquals("others must not be null", assertThrows(IllegalArgumentException.class,
                () -> RollCall.ask(0, null, Duration.ofSeconds(1), null)).getMessage());
        int port = StubFixture.freePort();
        try (ServerSocket taken = new ServerSocket(port)) {
            IOException e = assertThrows(IOException.class, () -> RollCall.answer(4, port, null, LINGER));
            assertTrue(e.getMessage().startsWith("roll call: rank 4 cannot answer on port " + port
                    + " (MASTER_PORT + 200 + launch rank): "), e.getMessage());
        }
        assertEquals(Set.of(), RollCall.ask(0, Map.of(), Duration.ofSeconds(1), null), "nobody to ask");
    }

    private static InetSocketAddress local(int port) {
        return new InetSocketAddress("127.0.0.1", port);
    }

}
