package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nccl4j.trace.TraceDump;

@Timeout(60)
class RendezvousTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final String HOST = LOOPBACK.getHostAddress();

    private ExecutorService pool;
    private final List<Thread> rankThreads = new java.util.concurrent.CopyOnWriteArrayList<>();
    private Set<Thread> threadsBefore;

    @BeforeEach
    void startPool() {
        threadsBefore = Thread.getAllStackTraces().keySet();
        pool = Executors.newCachedThreadPool(task -> {
            Thread t = new Thread(task, "rank-" + rankThreads.size());
            rankThreads.add(t);
            return t;
        });
    }

    /** Every rank thread ends, and the code under test started no thread of its own. */
    @AfterEach
    void stopPool() throws InterruptedException {
        pool.shutdownNow();
        assertTrue(pool.awaitTermination(20, TimeUnit.SECONDS), "rank threads did not finish");
        for (Thread t : rankThreads) {
            t.join(10_000);
            assertFalse(t.isAlive(), t + " still runs");
        }
        Set<Thread> leaked = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> !threadsBefore.contains(t) && !rankThreads.contains(t) && t.isAlive() && !t.isDaemon()
                        && !t.getName().startsWith("junit-"))
                .collect(Collectors.toSet());
        assertEquals(Set.of(), leaked, "threads left running");
    }

    static byte[] id(int seed) {
        byte[] id = new byte[Rendezvous.UNIQUE_ID_BYTES];
        for (int i = 0; i < id.length; i++) {
            id[i] = (byte) (seed * 31 + i * 7);
        }
        return id;
    }

    static Rendezvous.Builder base(int rank, int worldSize) {
        return Rendezvous.builder().rank(rank).worldSize(worldSize).environment(Map.of())
                .timeout(Duration.ofSeconds(20)).bindAddress(LOOPBACK).pollInterval(Duration.ofMillis(20));
    }

    static Supplier<byte[]> neverCalled() {
        return () -> fail("the id supplier must be called on rank 0 only");
    }

    /** Starts rank 0 on a free port and returns the port once it listens. */
    private int startServer(Rendezvous.Builder b, Supplier<byte[]> ids, List<Future<byte[]>> results) throws Exception {
        CompletableFuture<InetSocketAddress> listening = new CompletableFuture<>();
        Rendezvous r = b.tcp(HOST, 0).onListening(listening::complete).build();
        results.add(pool.submit(() -> r.exchange(ids)));
        return listening.get(10, TimeUnit.SECONDS).getPort();
    }

    static <T> Throwable failure(Future<T> f) throws InterruptedException {
        try {
            f.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (java.util.concurrent.TimeoutException e) {
            fail("rank did not finish");
        }
        return fail("expected the rank to fail");
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, LOOPBACK)) {
            return s.getLocalPort();
        }
    }

    private static void assertPortFree(int port) throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(LOOPBACK, port));
        }
    }

    // ---- TCP: success ----

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 4})
    void tcpGivesEveryRankTheSameId(int worldSize) throws Exception {
        AtomicInteger calls = new AtomicInteger();
        byte[] expected = id(worldSize);
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, worldSize), () -> {
            calls.incrementAndGet();
            return expected.clone();
        }, results);
        for (int r = 1; r < worldSize; r++) {
            Rendezvous peer = base(r, worldSize).tcp(HOST, port).build();
            results.add(pool.submit(() -> peer.exchange(neverCalled())));
        }
        for (Future<byte[]> f : results) {
            assertArrayEquals(expected, f.get(30, TimeUnit.SECONDS));
        }
        assertEquals(1, calls.get(), "rank 0 calls the supplier exactly once");
        assertPortFree(port);
    }

    @Test
    void peersRetryUntilRankZeroListens() throws Exception {
        int port = freePort();
        List<Future<byte[]>> results = new ArrayList<>();
        for (int r = 1; r < 3; r++) {
            Rendezvous peer = base(r, 3).tcp(HOST, port).build();
            results.add(pool.submit(() -> peer.exchange(neverCalled())));
        }
        Thread.sleep(300);
        Rendezvous root = base(0, 3).tcp(HOST, port).build();
        byte[] expected = id(9);
        assertArrayEquals(expected, root.exchange(() -> expected));
        for (Future<byte[]> f : results) {
            assertArrayEquals(expected, f.get(30, TimeUnit.SECONDS));
        }
    }

    @Test
    void matchingTokensFromEnvironmentAndBuilder() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 3).environment(Map.of("NCCL4J_RENDEZVOUS_TOKEN", "s3cret")),
                () -> id(3), results);
        results.add(pool.submit(() -> base(1, 3).tcp(HOST, port).token("s3cret").build().exchange(neverCalled())));
        results.add(pool.submit(() -> base(2, 3).environment(Map.of("NCCL4J_RENDEZVOUS_TOKEN", "s3cret"))
                .tcp(HOST, port).build().exchange(neverCalled())));
        for (Future<byte[]> f : results) {
            assertArrayEquals(id(3), f.get(30, TimeUnit.SECONDS));
        }
    }

    @Test
    void worldOfOneNeedsNoNetwork() {
        Rendezvous r = base(0, 1).tcp("no-such-host.invalid", 1).build();
        byte[] expected = id(1);
        byte[] got = r.exchange(() -> expected);
        assertArrayEquals(expected, got);
        assertNotSame(expected, got, "a copy is returned");
    }

    // ---- TCP: refusals and failures ----

    @Test
    void wrongTokenIsRefusedAndRankZeroTimesOutListingIt() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2).token("right").timeout(Duration.ofMillis(1500)), () -> id(0), results);
        Future<byte[]> wrong = pool.submit(() -> base(1, 2).tcp(HOST, port).token("wrong").build()
                .exchange(neverCalled()));
        Throwable client = failure(wrong);
        assertTrue(client instanceof RendezvousException, client.toString());
        assertTrue(client.getMessage().contains("rank 1: rank 0 at " + HOST + ":" + port + " refused: rank 1 ("),
                client.getMessage());
        assertTrue(client.getMessage().contains("presented a token that does not match rank 0's"),
                client.getMessage());
        Throwable server = failure(results.get(0));
        assertTrue(server.getMessage().contains("missing ranks [1], joined ranks []"), server.getMessage());
        assertTrue(server.getMessage().contains("refused connections: "), server.getMessage());
        assertTrue(server.getMessage().contains("does not match"), server.getMessage());
        assertPortFree(port);
    }

    @Test
    void missingTokenIsRefused() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2).token("right").timeout(Duration.ofSeconds(2)), () -> id(0), results);
        Throwable client = failure(pool.submit(() -> base(1, 2).tcp(HOST, port).build().exchange(neverCalled())));
        assertTrue(client.getMessage().contains("sent no token but rank 0 requires one: set the same"
                + " NCCL4J_RENDEZVOUS_TOKEN"), client.getMessage());
        // the rendezvous goes on: a correct peer still gets the id
        Future<byte[]> good = pool.submit(() -> base(1, 2).tcp(HOST, port).token("right").build()
                .exchange(neverCalled()));
        assertArrayEquals(id(0), good.get(30, TimeUnit.SECONDS));
        assertArrayEquals(id(0), results.get(0).get(30, TimeUnit.SECONDS));
    }

    @Test
    void unexpectedTokenIsRefused() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2).timeout(Duration.ofSeconds(1)), () -> id(0), results);
        Throwable client = failure(pool.submit(() -> base(1, 2).tcp(HOST, port).token("t").build()
                .exchange(neverCalled())));
        assertTrue(client.getMessage().contains("sent a token but rank 0 has none configured"), client.getMessage());
        assertTrue(failure(results.get(0)).getMessage().contains("missing ranks [1]"));
    }

    /** Without a secret, anyone may claim another world size: refused, and the rendezvous goes on. */
    @Test
    void mismatchedWorldSizeWithoutASecretIsRefusedAndTheRendezvousGoesOn() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        AtomicInteger calls = new AtomicInteger();
        int port = startServer(base(0, 3), () -> {
            calls.incrementAndGet();
            return id(0);
        }, results);
        Throwable client = failure(pool.submit(() -> base(1, 2).tcp(HOST, port).build().exchange(neverCalled())));
        assertTrue(client.getMessage().contains("refused: world size mismatch: /127.0.0.1:"), client.getMessage());
        assertTrue(client.getMessage().contains(" claims rank 1 of world size 2 but rank 0 has world size 3; start"
                + " every rank with the same world size"), client.getMessage());
        assertFalse(results.get(0).isDone(), "rank 0 goes on");
        Future<byte[]> one = pool.submit(() -> base(1, 3).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(0), base(2, 3).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(0), one.get(30, TimeUnit.SECONDS));
        assertArrayEquals(id(0), results.get(0).get(30, TimeUnit.SECONDS));
        assertEquals(1, calls.get());
    }

    @Test
    void duplicateRankIsRefusedAndTheRendezvousGoesOn() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 3), () -> id(0), results);
        Future<byte[]> a = pool.submit(() -> base(1, 3).tcp(HOST, port).build().exchange(neverCalled()));
        Future<byte[]> b = pool.submit(() -> base(1, 3).tcp(HOST, port).build().exchange(neverCalled()));
        // one of the two rank 1s joins, the other is refused; rank 0 keeps waiting for rank 2
        Throwable refused = null;
        Future<byte[]> joined = null;
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (refused == null && System.nanoTime() < until) {
            if (a.isDone()) {
                refused = failure(a);
                joined = b;
            } else if (b.isDone()) {
                refused = failure(b);
                joined = a;
            } else {
                Thread.sleep(10);
            }
        }
        assertTrue(refused != null, "the duplicate is refused at once");
        assertTrue(refused.getMessage().contains("refused: duplicate rank: "), refused.getMessage());
        assertTrue(refused.getMessage().contains("claims rank 1, already taken by"), refused.getMessage());
        assertFalse(results.get(0).isDone(), "rank 0 goes on");
        assertArrayEquals(id(0), base(2, 3).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(0), joined.get(30, TimeUnit.SECONDS));
        assertArrayEquals(id(0), results.get(0).get(30, TimeUnit.SECONDS));
    }

    @Test
    void peerThatNeverComesTimesOutNamingMissingRanks() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 4).timeout(Duration.ofSeconds(1)), () -> id(0), results);
        Future<byte[]> one = pool.submit(() -> base(1, 4).tcp(HOST, port).build().exchange(neverCalled()));
        Throwable server = failure(results.get(0));
        assertTrue(server instanceof RendezvousException, server.toString());
        assertTrue(server.getMessage().startsWith("rank 0 timed out after 1 s waiting for 2 of 3 peers: missing ranks"
                + " [2, 3], joined ranks [1]"), server.getMessage());
        Throwable client = failure(one);
        assertTrue(client.getMessage().contains("rendezvous aborted by rank 0: timed out waiting for ranks [2, 3]"),
                client.getMessage());
        assertPortFree(port);
    }

    /** A raw connection to rank 0 that has read the CHALLENGE. */
    private static Socket rawPeer(int port) throws IOException {
        Socket s = new Socket(LOOPBACK, port);
        s.setSoTimeout(10_000);
        RendezvousWire.Frame challenge = RendezvousWire.read(s.getInputStream());
        assertEquals(RendezvousWire.CHALLENGE, challenge.type);
        assertEquals(RendezvousWire.NONCE_BYTES, challenge.payload.length);
        return s;
    }

    static String errorFrom(Socket s) throws IOException {
        RendezvousWire.Frame f = RendezvousWire.read(s.getInputStream());
        assertEquals(RendezvousWire.ERROR, f.type, RendezvousWire.typeName(f.type));
        return new String(f.payload, StandardCharsets.UTF_8);
    }

    @Test
    void malformedFrameIsRefusedAndTheRendezvousGoesOn() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2), () -> id(5), results);
        try (Socket raw = rawPeer(port)) {
            raw.getOutputStream().write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            raw.shutdownOutput();
            String error = errorFrom(raw);
            assertTrue(error.startsWith("malformed frame: bad magic 0x47455420"), error);
        }
        assertFalse(results.get(0).isDone(), "rank 0 keeps waiting for the real rank 1");
        byte[] got = base(1, 2).tcp(HOST, port).build().exchange(neverCalled());
        assertArrayEquals(id(5), got);
        assertArrayEquals(id(5), results.get(0).get(30, TimeUnit.SECONDS));
    }

    @Test
    void oversizedFrameIsRefusedWithoutReadingIt() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2), () -> id(6), results);
        try (Socket raw = rawPeer(port)) {
            DataOutputStream out = new DataOutputStream(raw.getOutputStream());
            out.writeInt(RendezvousWire.MAGIC);
            out.writeByte(RendezvousWire.VERSION);
            out.writeByte(RendezvousWire.HELLO);
            out.writeInt(Integer.MAX_VALUE);
            out.flush();
            String error = errorFrom(raw);
            assertEquals("oversized frame: HELLO frame announces 2147483647 bytes, above the limit of 1024 bytes",
                    error);
        }
        assertArrayEquals(id(6), base(1, 2).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(6), results.get(0).get(30, TimeUnit.SECONDS));
    }

    private static void sendHello(Socket s, int rank, int worldSize) throws IOException {
        RendezvousWire.write(s.getOutputStream(), RendezvousWire.HELLO, RendezvousWire.hello(rank, worldSize, null));
    }

    @Test
    void rankOutOfRangeIsRefusedAndTheRendezvousGoesOn() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2), () -> id(0), results);
        for (int bad : new int[] {-1, 2, Integer.MAX_VALUE}) {
            try (Socket raw = rawPeer(port)) {
                sendHello(raw, bad, 2);
                String error = errorFrom(raw);
                assertTrue(error.startsWith("rank out of range: "), error);
                assertTrue(error.endsWith("claims rank " + bad + " but ranks run from 0 to 1"), error);
            }
        }
        assertFalse(results.get(0).isDone(), "rank 0 keeps waiting for the real rank 1");
        assertArrayEquals(id(0), base(1, 2).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(0), results.get(0).get(30, TimeUnit.SECONDS));
    }

    @Test
    void secondHelloOnOneConnectionIsRefused() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2), () -> id(3), results);
        try (Socket raw = rawPeer(port)) {
            java.io.ByteArrayOutputStream two = new java.io.ByteArrayOutputStream();
            RendezvousWire.write(two, RendezvousWire.HELLO, RendezvousWire.hello(1, 2, null));
            RendezvousWire.write(two, RendezvousWire.HELLO, RendezvousWire.hello(1, 2, null));
            raw.getOutputStream().write(two.toByteArray());
            raw.getOutputStream().flush();
            String error = errorFrom(raw);
            assertTrue(error.startsWith("second HELLO: rank 1"), error);
        }
        assertFalse(results.get(0).isDone(), "rank 0 keeps waiting for the real rank 1");
        assertArrayEquals(id(3), base(1, 2).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(3), results.get(0).get(30, TimeUnit.SECONDS));
    }

    @Test
    void secondRankZeroIsRefused() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2).timeout(Duration.ofSeconds(2)), () -> id(0), results);
        try (Socket raw = rawPeer(port)) {
            sendHello(raw, 0, 2);
            assertTrue(errorFrom(raw).startsWith("rank conflict: "));
        }
        // refused, not fatal: rank 0's time-out lists it among the refused connections
        assertTrue(failure(results.get(0)).getMessage().contains("also claims rank 0"));
    }

    @Test
    void wrongFrameTypeAndBadHelloAreRefused() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2), () -> id(2), results);
        try (Socket raw = rawPeer(port)) {
            RendezvousWire.write(raw.getOutputStream(), RendezvousWire.ID, id(0));
            assertEquals("malformed exchange: expected a HELLO frame, got ID", errorFrom(raw));
        }
        try (Socket raw = rawPeer(port)) {
            RendezvousWire.write(raw.getOutputStream(), RendezvousWire.HELLO, new byte[5]);
            assertEquals("malformed HELLO: 5 bytes, expected 9 or 41", errorFrom(raw));
        }
        try (Socket raw = rawPeer(port)) {
            DataOutputStream out = new DataOutputStream(raw.getOutputStream());
            out.writeInt(RendezvousWire.MAGIC);
            out.writeByte(7);
            out.writeByte(RendezvousWire.HELLO);
            out.writeInt(0);
            out.flush();
            assertTrue(errorFrom(raw).startsWith("malformed frame: protocol version 7, but this side speaks 3"));
        }
        assertArrayEquals(id(2), base(1, 2).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(2), results.get(0).get(30, TimeUnit.SECONDS));
    }

    @Test
    void silentConnectionIsDroppedAfterTheHandshakeTimeout() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2).handshakeTimeout(Duration.ofMillis(300)), () -> id(4), results);
        try (Socket silent = rawPeer(port)) {
            String error = errorFrom(silent);
            assertTrue(error.startsWith("no HELLO within 300 ms"), error);
            assertArrayEquals(id(4), base(1, 2).tcp(HOST, port).build().exchange(neverCalled()));
        }
        assertArrayEquals(id(4), results.get(0).get(30, TimeUnit.SECONDS));
    }

    @Test
    void badIdFromSupplierFailsEveryRank() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2), () -> new byte[16], results);
        Throwable client = failure(pool.submit(() -> base(1, 2).tcp(HOST, port).build().exchange(neverCalled())));
        Throwable server = failure(results.get(0));
        assertEquals("rank 0: the unique id supplier returned 16 bytes; it must return 128 bytes (an ncclUniqueId)",
                server.getMessage());
        assertTrue(client.getMessage().endsWith("refused: " + server.getMessage()), client.getMessage());
    }

    @Test
    void peerGivesUpWhenNobodyListens() throws Exception {
        int port = freePort();
        RendezvousException e = assertThrows(RendezvousException.class,
                () -> base(1, 2).tcp(HOST, port).timeout(Duration.ofMillis(400)).build().exchange(neverCalled()));
        assertTrue(e.getMessage().startsWith("rank 1 could not connect to rank 0 at " + HOST + ":" + port
                + " within 400 ms (last error: "), e.getMessage());
    }

    /** A fake rank 0 that sends {@code bytes} to the first connection, then keeps it open until closed. */
    private Future<?> fakeServer(ServerSocket ss, byte[] bytes) {
        return pool.submit((Callable<Void>) () -> {
            try (Socket s = ss.accept()) {
                s.getOutputStream().write(bytes);
                s.getOutputStream().flush();
                s.setSoTimeout(10_000);
                InputStream in = s.getInputStream();
                while (in.read() >= 0) {
                    // wait for the client to close
                }
            } catch (IOException e) {
                // the client hung up
            }
            return null;
        });
    }

    @Test
    void peerRejectsAServiceThatIsNotRankZero() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, LOOPBACK)) {
            Future<?> server = fakeServer(ss, "SSH-2.0-OpenSSH_9.2\r\n".getBytes(StandardCharsets.US_ASCII));
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> base(1, 2).tcp(HOST, ss.getLocalPort()).build().exchange(neverCalled()));
            assertTrue(e.getMessage().contains("malformed frame: bad magic 0x5353482D"), e.getMessage());
            assertTrue(e.getMessage().contains("does not speak the nccl4j rendezvous protocol"), e.getMessage());
            server.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void peerRejectsAnOversizedFrame() throws Exception {
        ByteBuffer header = ByteBuffer.allocate(RendezvousWire.HEADER_BYTES).putInt(RendezvousWire.MAGIC)
                .put((byte) RendezvousWire.VERSION).put((byte) RendezvousWire.CHALLENGE).putInt(1 << 30);
        try (ServerSocket ss = new ServerSocket(0, 1, LOOPBACK)) {
            Future<?> server = fakeServer(ss, header.array());
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> base(1, 2).tcp(HOST, ss.getLocalPort()).build().exchange(neverCalled()));
            assertTrue(e.getMessage().contains("oversized frame: CHALLENGE frame announces 1073741824 bytes"),
                    e.getMessage());
            server.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void peerTimesOutWhenRankZeroNeverAnswers() throws Exception {
        ByteBuffer challenge = ByteBuffer.allocate(RendezvousWire.HEADER_BYTES + RendezvousWire.NONCE_BYTES)
                .putInt(RendezvousWire.MAGIC).put((byte) RendezvousWire.VERSION).put((byte) RendezvousWire.CHALLENGE)
                .putInt(RendezvousWire.NONCE_BYTES);
        try (ServerSocket ss = new ServerSocket(0, 1, LOOPBACK)) {
            Future<?> server = fakeServer(ss, challenge.array());
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> base(1, 2).tcp(HOST, ss.getLocalPort()).timeout(Duration.ofMillis(700)).build()
                            .exchange(neverCalled()));
            assertTrue(e.getMessage().startsWith("rank 1 connected to rank 0 at " + HOST + ":" + ss.getLocalPort()
                    + " but got no unique id within 700 ms"), e.getMessage());
            server.get(10, TimeUnit.SECONDS);
        }
    }

    // ---- wire format ----

    @Test
    void wireRejectsOversizedLengthBeforeReadingThePayload() {
        byte[] header = ByteBuffer.allocate(RendezvousWire.HEADER_BYTES).putInt(RendezvousWire.MAGIC)
                .put((byte) RendezvousWire.VERSION).put((byte) RendezvousWire.ID).putInt(-1).array();
        IOException e = assertThrows(RendezvousWire.ProtocolException.class,
                () -> RendezvousWire.read(new ByteArrayInputStream(header)));
        assertEquals("oversized frame: ID frame announces 4294967295 bytes, above the limit of 1024 bytes",
                e.getMessage());
        byte[] justOver = ByteBuffer.allocate(RendezvousWire.HEADER_BYTES).putInt(RendezvousWire.MAGIC)
                .put((byte) RendezvousWire.VERSION).put((byte) RendezvousWire.ERROR).putInt(1025).array();
        assertThrows(RendezvousWire.ProtocolException.class,
                () -> RendezvousWire.read(new ByteArrayInputStream(justOver)));
    }

    @Test
    void wireRoundTripsAndDetectsTruncation() throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        RendezvousWire.write(out, RendezvousWire.ID, id(8));
        byte[] bytes = out.toByteArray();
        assertEquals(RendezvousWire.HEADER_BYTES + 128, bytes.length);
        RendezvousWire.Frame f = RendezvousWire.read(new ByteArrayInputStream(bytes));
        assertEquals(RendezvousWire.ID, f.type);
        assertArrayEquals(id(8), f.payload);
        byte[] cut = java.util.Arrays.copyOf(bytes, bytes.length - 1);
        assertThrows(EOFException.class, () -> RendezvousWire.read(new ByteArrayInputStream(cut)));
        byte[] unknownType = bytes.clone();
        unknownType[5] = 9;
        assertEquals("malformed frame: unknown frame type 9", assertThrows(RendezvousWire.ProtocolException.class,
                () -> RendezvousWire.read(new ByteArrayInputStream(unknownType))).getMessage());
    }

    @Test
    void helloCarriesAnHmacBoundToTheNonce() throws IOException {
        byte[] nonce1 = new byte[32];
        byte[] nonce2 = new byte[32];
        nonce2[0] = 1;
        byte[] mac = RendezvousWire.mac("tok", nonce1, 2, 4);
        assertEquals(32, mac.length);
        assertArrayEquals(mac, RendezvousWire.mac("tok", nonce1, 2, 4));
        assertFalse(java.util.Arrays.equals(mac, RendezvousWire.mac("tok", nonce2, 2, 4)));
        assertFalse(java.util.Arrays.equals(mac, RendezvousWire.mac("tok", nonce1, 3, 4)));
        assertFalse(java.util.Arrays.equals(mac, RendezvousWire.mac("tok2", nonce1, 2, 4)));
        RendezvousWire.Hello h = RendezvousWire.parseHello(RendezvousWire.hello(2, 4, mac));
        assertEquals(2, h.rank);
        assertEquals(4, h.worldSize);
        assertArrayEquals(mac, h.mac);
        byte[] badFlags = RendezvousWire.hello(2, 4, null);
        badFlags[8] = 1;
        assertTrue(assertThrows(RendezvousWire.ProtocolException.class, () -> RendezvousWire.parseHello(badFlags))
                .getMessage().startsWith("malformed HELLO: flags 0x1"));
    }

    // ---- file ----

    private static Rendezvous.Builder fileBase(int rank, int worldSize, Path file, String runId) {
        return base(rank, worldSize).file(file).runId(runId);
    }

    @Test
    void fileArrivalsNameTheRankThatNeverCameOnEveryRankThatDid(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("id");
        Rendezvous r1 = fileBase(1, 3, file, "run-9").timeout(Duration.ofMillis(400)).build();
        Future<byte[]> one = pool.submit(() -> r1.exchange(neverCalled()));
        Rendezvous r0 = fileBase(0, 3, file, "run-9").timeout(Duration.ofMillis(400)).build();
        r0.exchange(() -> id(5));
        assertArrayEquals(id(5), one.get(30, TimeUnit.SECONDS));
        long t0 = System.nanoTime();
        for (Rendezvous r : List.of(r0, r1)) {
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> r.awaitArrivals(System.nanoTime() + 300_000_000L));
            String host = org.nccl4j.trace.TraceDump.localHost();
            long pid = ProcessHandle.current().pid();
            assertTrue(e.getMessage().contains(" at the file rendezvous " + file + ": missing ranks [2] never arrived "
                    + "(arrived: 0 (" + host + ", pid " + pid + "), 1 (" + host + ", pid " + pid + "))"), e.getMessage());
        }
        assertTrue(System.nanoTime() - t0 < 5_000_000_000L);
        Rendezvous r2 = fileBase(2, 3, file, "run-9").build();
        r2.exchange(neverCalled());
        r2.awaitArrivals(System.nanoTime() + 1_000_000_000L);   // all three there now: returns
        r0.awaitArrivals(System.nanoTime() + 1_000_000_000L);
        base(0, 1).tcp("127.0.0.1", 1).build().awaitArrivals(0);   // other routes: nothing to wait for
    }

    @Test
    void fileRouteGivesEveryRankTheSameId(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("nccl-id");
        List<Future<byte[]>> peers = new ArrayList<>();
        for (int r = 1; r < 4; r++) {
            Rendezvous peer = fileBase(r, 4, file, "run-1").build();
            peers.add(pool.submit(() -> peer.exchange(neverCalled())));
        }
        Thread.sleep(150);
        AtomicInteger calls = new AtomicInteger();
        byte[] written = fileBase(0, 4, file, "run-1").build().exchange(() -> {
            calls.incrementAndGet();
            return id(11);
        });
        assertArrayEquals(id(11), written);
        for (Future<byte[]> f : peers) {
            assertArrayEquals(id(11), f.get(30, TimeUnit.SECONDS));
        }
        assertEquals(1, calls.get());
        assertEquals(Rendezvous.FILE_BYTES, Files.size(file));
        try (var listing = Files.list(dir)) {
            List<String> names = listing.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
            assertEquals(5, names.size(), "the file and one arrival marker per rank, no temporary file: " + names);
            assertEquals("nccl-id", names.get(0));
            for (int r = 0; r < 4; r++) {
                assertTrue(names.get(1 + r).matches("nccl-id\\.[0-9a-f]{8}\\.g1\\.rank" + r), names.toString());
            }
        }
        if (Files.getFileStore(file).supportsFileAttributeView("posix")) {
            assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE),
                    Files.getPosixFilePermissions(file));
        }
    }

    @Test
    void fileRouteTimesOutWhenTheFileNeverAppears(@TempDir Path dir) {
        Path file = dir.resolve("nccl-id");
        RendezvousException e = assertThrows(RendezvousException.class, () -> fileBase(2, 3, file, "r")
                .timeout(Duration.ofMillis(300)).build().exchange(neverCalled()));
        assertEquals("rank 2 timed out after 300 ms waiting for rank 0 to write " + file + ": the file never"
                + " appeared. Check that rank 0 runs, that the path is on a file system shared by all ranks, and that"
                + " every rank has the same run id (NCCL4J_RUN_ID)", e.getMessage());
    }

    @Test
    void staleFileFromAnEarlierRunIsIgnored(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("nccl-id");
        fileBase(0, 2, file, "run-old").build().exchange(() -> id(1));
        RendezvousException stale = assertThrows(RendezvousException.class, () -> fileBase(1, 2, file, "run-new")
                .timeout(Duration.ofMillis(300)).build().exchange(neverCalled()));
        assertTrue(stale.getMessage().contains("the file present is from another run"), stale.getMessage());

        Future<byte[]> peer = pool.submit(() -> fileBase(1, 2, file, "run-new").build().exchange(neverCalled()));
        Thread.sleep(200);
        assertFalse(peer.isDone(), "the peer must not take the stale id");
        fileBase(0, 2, file, "run-new").build().exchange(() -> id(2));
        assertArrayEquals(id(2), peer.get(30, TimeUnit.SECONDS));
    }

    @Test
    void fileTokenIsPartOfTheRunHash(@TempDir Path dir) {
        Path file = dir.resolve("id");
        fileBase(0, 2, file, "run").token("a").build().exchange(() -> id(1));
        assertThrows(RendezvousException.class, () -> fileBase(1, 2, file, "run").token("b")
                .timeout(Duration.ofMillis(200)).build().exchange(neverCalled()));
        assertArrayEquals(id(1), fileBase(1, 2, file, "run").token("a").build().exchange(neverCalled()));
    }

    @Test
    void fileWorldSizeMismatchIsAnError(@TempDir Path dir) {
        Path file = dir.resolve("id");
        fileBase(0, 4, file, "run").build().exchange(() -> id(1));
        RendezvousException e = assertThrows(RendezvousException.class,
                () -> fileBase(1, 2, file, "run").build().exchange(neverCalled()));
        assertEquals("rank 1: world size mismatch: rank 0 wrote " + file + " for world size 4 but this rank has 2;"
                + " start every rank with the same world size", e.getMessage());
    }

    @Test
    void foreignFileIsNotTaken(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("id");
        Files.write(file, new byte[Rendezvous.FILE_BYTES]);
        RendezvousException e = assertThrows(RendezvousException.class, () -> fileBase(1, 2, file, "run")
                .timeout(Duration.ofMillis(200)).build().exchange(neverCalled()));
        assertTrue(e.getMessage().contains("not a valid nccl4j rendezvous file"), e.getMessage());
        Files.write(file, "hello".getBytes(StandardCharsets.US_ASCII));
        e = assertThrows(RendezvousException.class, () -> fileBase(1, 2, file, "run")
                .timeout(Duration.ofMillis(200)).build().exchange(neverCalled()));
        assertTrue(e.getMessage().contains("the file has 5 bytes, not " + Rendezvous.FILE_BYTES), e.getMessage());
        // rank 0 replaces it
        fileBase(0, 2, file, "run").build().exchange(() -> id(3));
        assertArrayEquals(id(3), fileBase(1, 2, file, "run").build().exchange(neverCalled()));
    }

    @Test
    void fileRouteNeedsARunId(@TempDir Path dir) {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> base(1, 2).file(dir.resolve("id")).build());
        assertTrue(e.getMessage().contains("needs a run id"), e.getMessage());
        assertTrue(e.getMessage().contains("NCCL4J_RUN_ID"), e.getMessage());
        assertEquals("x", Rendezvous.Builder.deriveRunId(Map.of("NCCL4J_RUN_ID", "x", "SLURM_JOB_ID", "5")));
        assertEquals("torchelastic:abc/2", Rendezvous.Builder.deriveRunId(Map.of("TORCHELASTIC_RUN_ID", "abc",
                "TORCHELASTIC_RESTART_COUNT", "2", "SLURM_JOB_ID", "5")));
        assertEquals("slurm:5.0", Rendezvous.Builder.deriveRunId(Map.of("SLURM_JOB_ID", "5", "SLURM_STEP_ID", "0")));
        assertEquals("pmix:ns1", Rendezvous.Builder.deriveRunId(Map.of("PMIX_NAMESPACE", "ns1")));
        assertEquals(null, Rendezvous.Builder.deriveRunId(Map.of("PATH", "/bin")));
        // a derived run id makes the route usable
        base(0, 2).environment(Map.of("SLURM_JOB_ID", "77", "SLURM_STEP_ID", "1")).file(dir.resolve("id")).build()
                .exchange(() -> id(4));
        assertArrayEquals(id(4), base(1, 2).environment(Map.of("SLURM_JOB_ID", "77", "SLURM_STEP_ID", "1"))
                .file(dir.resolve("id")).build().exchange(neverCalled()));
    }

    // ---- NCCL_COMM_ID ----

    @Test
    void commIdRouteCallsTheSupplierOnEveryRank() {
        MapEnvironment env = new MapEnvironment().with("NCCL_COMM_ID", "10.0.0.1:29500");
        AtomicInteger calls = new AtomicInteger();
        for (int r = 0; r < 3; r++) {
            Rendezvous rv = base(r, 3).commId().processEnvironment(env).build();
            assertEquals(Rendezvous.Route.COMM_ID, rv.route());
            assertArrayEquals(id(7), rv.exchange(() -> {
                calls.incrementAndGet();
                return id(7);
            }));
        }
        assertEquals(3, calls.get());
    }

    @Test
    void commIdRouteNeedsAWellFormedVariable() {
        RendezvousException unset = assertThrows(RendezvousException.class,
                () -> base(1, 2).commId().processEnvironment(new MapEnvironment()).build().exchange(() -> id(0)));
        assertTrue(unset.getMessage().startsWith("rank 1: the NCCL_COMM_ID route needs NCCL_COMM_ID set"),
                unset.getMessage());
        RendezvousException bad = assertThrows(RendezvousException.class, () -> base(1, 2).commId()
                .processEnvironment(new MapEnvironment().with("NCCL_COMM_ID", "node01")).build()
                .exchange(() -> id(0)));
        assertTrue(bad.getMessage().startsWith("rank 1: NCCL_COMM_ID=\"node01\": missing host or port"),
                bad.getMessage());
        RendezvousException port = assertThrows(RendezvousException.class, () -> base(0, 2).commId()
                .processEnvironment(new MapEnvironment().with("NCCL_COMM_ID", "node01:99999")).build()
                .exchange(() -> id(0)));
        assertTrue(port.getMessage().contains("invalid port \"99999\""), port.getMessage());
        RendezvousException supplier = assertThrows(RendezvousException.class, () -> base(0, 2).commId()
                .processEnvironment(new MapEnvironment().with("NCCL_COMM_ID", "node01:1")).build()
                .exchange(() -> {
                    throw new IllegalStateException("NCCL not loaded");
                }));
        assertTrue(supplier.getMessage().contains("the unique id supplier failed"), supplier.getMessage());
        assertTrue(supplier.getCause() instanceof IllegalStateException);
    }

    @Test
    void commIdRouteReadsTheLiveEnvironmentByDefault() {
        String name = "NCCL_COMM_ID";
        String before = org.nccl4j.jni.NcclNative.getenv(name);
        try {
            NcclEnvironment.builder().commId("127.0.0.1", 40000).build().apply();
            assertArrayEquals(id(1), base(0, 2).commId().build().exchange(() -> id(1)));
        } finally {
            if (before == null) {
                org.nccl4j.jni.NcclNative.unsetenv(name);
            } else {
                org.nccl4j.jni.NcclNative.setenv(name, before, 1);
            }
        }
    }

    // ---- builder ----

    @Test
    void builderTakesDefaultsFromTheLaunch() {
        Map<String, String> env = new HashMap<>(Map.of("RANK", "2", "WORLD_SIZE", "4", "MASTER_ADDR", "node01",
                "MASTER_PORT", "29500"));
        Rendezvous r = Rendezvous.builder().environment(env).tcp().build();
        assertEquals(2, r.rank());
        assertEquals(4, r.worldSize());
        assertEquals(Rendezvous.DEFAULT_TIMEOUT, r.timeout());
        assertEquals("Rendezvous[TCP rank 2 of 4 via node01:29500, timeout PT5M]", r.toString());
        Rendezvous explicit = Rendezvous.builder().launch(LaunchInfo.detect(env)).rank(3).tcp().build();
        assertEquals(3, explicit.rank());
        env.remove("MASTER_PORT");
        IllegalStateException noPort = assertThrows(IllegalStateException.class,
                () -> Rendezvous.builder().environment(env).tcp().build());
        assertTrue(noPort.getMessage().contains("set MASTER_PORT or call tcp(host, port)"), noPort.getMessage());
        env.remove("MASTER_ADDR");
        assertTrue(assertThrows(IllegalStateException.class, () -> Rendezvous.builder().environment(env).tcp().build())
                .getMessage().contains("set MASTER_ADDR"));
    }

    @Test
    void builderRejectsBadArguments() {
        assertTrue(assertThrows(IllegalStateException.class, () -> base(0, 2).build()).getMessage()
                .startsWith("no route chosen"));
        assertEquals("rank 2 is not below the world size 2", assertThrows(IllegalArgumentException.class,
                () -> base(2, 2).tcp(HOST, 1).build()).getMessage());
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().rank(-1));
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().worldSize(0));
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().tcp(HOST, 70000));
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().tcp("", 1));
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().token(""));
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().timeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().pollInterval(Duration.ofMillis(-1)));
        assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder().runId(""));
        assertTrue(assertThrows(IllegalStateException.class, () -> base(1, 2).tcp(HOST, 0).build()).getMessage()
                .contains("cannot connect to port 0"));
        assertThrows(NullPointerException.class, () -> base(0, 1).tcp(HOST, 1).build().exchange(null));
    }
}
