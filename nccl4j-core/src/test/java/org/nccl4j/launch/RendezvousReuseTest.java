package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nccl4j.Communicator;

/**
 * Consecutive rendezvous on one port or one file, as {@link Communicator#fromEnvironment()} makes them when a run
 * creates several communicators. Ranks are threads of this JVM.
 */
@Timeout(120)
class RendezvousReuseTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final String HOST = LOOPBACK.getHostAddress();

    private ExecutorService pool;

    @BeforeEach
    void startPool() {
        pool = Executors.newCachedThreadPool();
    }

    @AfterEach
    void stopPool() throws InterruptedException {
        pool.shutdownNow();
        assertTrue(pool.awaitTermination(20, TimeUnit.SECONDS), "rank threads did not finish");
    }

    private static byte[] id(int seed) {
        byte[] id = new byte[Rendezvous.UNIQUE_ID_BYTES];
        for (int i = 0; i < id.length; i++) {
            id[i] = (byte) (seed * 31 + i * 7);
        }
        return id;
    }

    private static byte[] randomId() {
        byte[] id = new byte[Rendezvous.UNIQUE_ID_BYTES];
        ThreadLocalRandom.current().nextBytes(id);
        return id;
    }

    private static Rendezvous.Builder base(int rank, int worldSize) {
        return Rendezvous.builder().rank(rank).worldSize(worldSize).environment(Map.of())
                .timeout(Duration.ofSeconds(20)).bindAddress(LOOPBACK).pollInterval(Duration.ofMillis(20));
    }

    private static Rendezvous.Builder fileBase(int rank, int worldSize, Path file, String runId) {
        return base(rank, worldSize).file(file).runId(runId);
    }

    private static Supplier<byte[]> neverCalled() {
        return () -> fail("the id supplier must be called on rank 0 only");
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, LOOPBACK)) {
            return s.getLocalPort();
        }
    }

    private static ServerSocket listen(int port) throws IOException {
        ServerSocket ss = new ServerSocket();
        ss.setReuseAddress(true);
        ss.bind(new InetSocketAddress(LOOPBACK, port), 50);
        return ss;
    }

    /** What a finished rank returned or threw, for messages. */
    private static String outcome(Future<byte[]> f) {
        try {
            byte[] id = f.get(1, TimeUnit.SECONDS);
            return "returned " + HexFormat.of().formatHex(id, 0, 8) + "...";
        } catch (ExecutionException e) {
            return "threw " + e.getCause();
        } catch (Exception e) {
            return e.toString();
        }
    }

    /**
     * Checks that round {@code i} gave every rank rank 0's id of round {@code i}, and that no two rounds share an id.
     */
    private static void assertRoundsAgreeAndDiffer(List<List<byte[]>> byRank, int rounds) {
        Set<String> distinct = new HashSet<>();
        for (int round = 0; round < rounds; round++) {
            byte[] root = byRank.get(0).get(round);
            for (int r = 1; r < byRank.size(); r++) {
                assertArrayEquals(root, byRank.get(r).get(round), "rank " + r + ", round " + round);
            }
            distinct.add(HexFormat.of().formatHex(root));
        }
        assertEquals(rounds, distinct.size(), "every round has its own id");
    }

    // ---- TCP ----

    /**
     * Every rank runs {@code rounds} exchanges back to back on one fixed port, with nothing in between: a peer done
     * with round k connects for round k + 1 at once, while rank 0 may still be sending round k's id, closing round
     * k's server socket, or not yet listening again.
     */
    @ParameterizedTest
    @ValueSource(ints = {2, 4})
    void tcpConsecutiveExchangesOnOnePort(int worldSize) throws Exception {
        int rounds = 50;
        int port = freePort();
        AtomicInteger supplied = new AtomicInteger();
        List<Future<List<byte[]>>> ranks = new ArrayList<>();
        for (int r = 0; r < worldSize; r++) {
            int rank = r;
            ranks.add(pool.submit(() -> {
                List<byte[]> got = new ArrayList<>();
                for (int round = 0; round < rounds; round++) {
                    Rendezvous rv = base(rank, worldSize).tcp(HOST, port).build();
                    got.add(rv.exchange(rank == 0 ? () -> {
                        supplied.incrementAndGet();
                        return randomId();
                    } : neverCalled()));
                }
                return got;
            }));
        }
        List<List<byte[]>> byRank = new ArrayList<>();
        for (Future<List<byte[]>> f : ranks) {
            byRank.add(f.get(100, TimeUnit.SECONDS));
        }
        assertEquals(rounds, supplied.get(), "rank 0 makes one id per round");
        assertRoundsAgreeAndDiffer(byRank, rounds);
    }

    /**
     * Rank 0 stops listening once every peer has joined, before the id goes out: a peer that has the id and connects
     * for the next rendezvous at once is refused (and retries) rather than caught in the backlog of a closing socket.
     */
    @Test
    void rankZeroStopsListeningBeforeTheIdGoesOut() throws Exception {
        CompletableFuture<InetSocketAddress> listening = new CompletableFuture<>();
        AtomicReference<Object> connectWhileSupplying = new AtomicReference<>();
        Rendezvous root = base(0, 3).tcp(HOST, 0).onListening(listening::complete).build();
        Future<byte[]> rootResult = pool.submit(() -> root.exchange(() -> {
            try (Socket s = new Socket(LOOPBACK, listening.join().getPort())) {
                connectWhileSupplying.set("connected to " + s.getRemoteSocketAddress());
            } catch (IOException e) {
                connectWhileSupplying.set(e);
            }
            return id(8);
        }));
        int port = listening.get(10, TimeUnit.SECONDS).getPort();
        List<Future<byte[]>> peers = new ArrayList<>();
        for (int r = 1; r < 3; r++) {
            Rendezvous peer = base(r, 3).tcp(HOST, port).build();
            peers.add(pool.submit(() -> peer.exchange(neverCalled())));
        }
        for (Future<byte[]> f : peers) {
            assertArrayEquals(id(8), f.get(30, TimeUnit.SECONDS));
        }
        assertArrayEquals(id(8), rootResult.get(30, TimeUnit.SECONDS));
        assertTrue(connectWhileSupplying.get() instanceof ConnectException, String.valueOf(connectWhileSupplying));
    }

    /**
     * A server that accepts and closes without a CHALLENGE (closing cleanly, then with a reset), then stops listening
     * with the peer's next connection possibly still in its backlog, is not rank 0: the peer retries and gets the id
     * from the real rank 0 that listens on the port afterwards.
     */
    @Test
    void peerRetriesWhenAServerClosesBeforeTheChallenge() throws Exception {
        int port = freePort();
        Future<byte[]> peer;
        try (ServerSocket old = listen(port)) {
            peer = pool.submit(() -> base(1, 2).tcp(HOST, port).build().exchange(neverCalled()));
            old.setSoTimeout(10_000);
            try (Socket s = old.accept()) {
                s.shutdownOutput(); // a clean end of stream before any frame
            }
            try (Socket s = old.accept()) {
                s.setSoLinger(true, 0); // a reset
            }
            Thread.sleep(100);
            assertFalse(peer.isDone(), () -> "the peer keeps trying, but ended: " + outcome(peer));
        } // closing the listener resets a connection still in its backlog
        Thread.sleep(100);
        assertFalse(peer.isDone(), () -> "the peer keeps trying while nothing listens, but ended: " + outcome(peer));
        byte[] got = base(0, 2).tcp(HOST, port).build().exchange(() -> id(21));
        assertArrayEquals(id(21), got);
        assertArrayEquals(id(21), peer.get(30, TimeUnit.SECONDS));
    }

    /** A fake server that accepts connections and closes each at once, until its socket is closed. */
    private Future<Integer> closingServer(ServerSocket ss) {
        return pool.submit(() -> {
            int accepted = 0;
            while (true) {
                Socket s;
                try {
                    s = ss.accept();
                } catch (IOException e) {
                    return accepted;
                }
                accepted++;
                s.close();
            }
        });
    }

    @Test
    void peerThatOnlyMeetsEarlyClosesTimesOutNamingTheLastError() throws Exception {
        ServerSocket ss = listen(0);
        Future<Integer> server = closingServer(ss);
        RendezvousException e;
        long tookMs;
        try {
            long start = System.nanoTime();
            e = assertThrows(RendezvousException.class, () -> base(1, 2).tcp(HOST, ss.getLocalPort())
                    .timeout(Duration.ofMillis(600)).build().exchange(neverCalled()));
            tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        } finally {
            ss.close();
        }
        assertTrue(e.getMessage().startsWith("rank 1 could not connect to rank 0 at " + HOST + ":" + ss.getLocalPort()
                + " within 600 ms (last error: the connection closed before rank 0's CHALLENGE"), e.getMessage());
        assertTrue(tookMs >= 550, "it retried until the timeout, took " + tookMs + " ms");
        assertTrue(server.get(10, TimeUnit.SECONDS) >= 2, "the peer connected more than once");
    }

    /** A fake rank 0 that sends {@code bytes} to the first connection, then closes it. */
    private Future<?> answerOnceAndClose(ServerSocket ss, byte[] bytes) {
        return pool.submit((Callable<Void>) () -> {
            try (Socket s = ss.accept()) {
                s.getOutputStream().write(bytes);
                s.getOutputStream().flush();
                s.shutdownOutput();
                s.setSoTimeout(10_000);
                InputStream in = s.getInputStream();
                while (in.read() >= 0) {
                    // wait for the client to close
                }
            }
            return null;
        });
    }

    @Test
    void closeAfterTheChallengeStaysFatal() throws Exception {
        ByteBuffer challenge = ByteBuffer.allocate(RendezvousWire.HEADER_BYTES + RendezvousWire.NONCE_BYTES)
                .putInt(RendezvousWire.MAGIC).put((byte) RendezvousWire.VERSION).put((byte) RendezvousWire.CHALLENGE)
                .putInt(RendezvousWire.NONCE_BYTES);
        try (ServerSocket ss = listen(0)) {
            Future<?> server = answerOnceAndClose(ss, challenge.array());
            long start = System.nanoTime();
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> base(1, 2).tcp(HOST, ss.getLocalPort()).build().exchange(neverCalled()));
            assertEquals("rank 1: rank 0 at " + HOST + ":" + ss.getLocalPort() + " closed the connection without an"
                    + " answer; see rank 0's log", e.getMessage());
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10), "fails at once, not at the timeout");
            server.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void errorFrameBeforeTheChallengeStaysFatal() throws Exception {
        ByteArrayOutputStream error = new ByteArrayOutputStream();
        RendezvousWire.writeError(error, "go away");
        try (ServerSocket ss = listen(0)) {
            Future<?> server = answerOnceAndClose(ss, error.toByteArray());
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> base(1, 2).tcp(HOST, ss.getLocalPort()).build().exchange(neverCalled()));
            assertEquals("rank 1: rank 0 at " + HOST + ":" + ss.getLocalPort() + " refused: go away", e.getMessage());
            server.get(10, TimeUnit.SECONDS);
        }
    }

    /** A connection that closes before its HELLO, like a peer's attempt left over from an earlier exchange. */
    @Test
    void rankZeroDropsAConnectionThatClosesBeforeItsHello() throws Exception {
        CompletableFuture<InetSocketAddress> listening = new CompletableFuture<>();
        Rendezvous root = base(0, 2).tcp(HOST, 0).onListening(listening::complete).build();
        Future<byte[]> rootResult = pool.submit(() -> root.exchange(() -> id(5)));
        int port = listening.get(10, TimeUnit.SECONDS).getPort();
        try (Socket stale = new Socket(LOOPBACK, port)) {
            stale.setSoLinger(true, 0);
        }
        new Socket(LOOPBACK, port).close();
        Thread.sleep(100);
        assertFalse(rootResult.isDone(), "rank 0 keeps waiting for the real rank 1");
        assertArrayEquals(id(5), base(1, 2).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(5), rootResult.get(30, TimeUnit.SECONDS));
    }

    // ---- file ----

    /**
     * Three ranks make 20 exchanges through one file with one run id. The barrier after each exchange stands in for
     * {@code ncclCommInitRank}, which rank 0 cannot leave before every rank has read the id: without it rank 0 could
     * overwrite the file before a peer read it. After the barrier the peers look for the next id at once, mostly
     * while the previous exchange's file is still there.
     */
    @Test
    void fileConsecutiveExchangesOnOnePath(@TempDir Path dir) throws Exception {
        int rounds = 20;
        int worldSize = 3;
        Path file = dir.resolve("nccl-id");
        CyclicBarrier initRank = new CyclicBarrier(worldSize);
        List<Future<List<byte[]>>> ranks = new ArrayList<>();
        for (int r = 0; r < worldSize; r++) {
            int rank = r;
            ranks.add(pool.submit(() -> {
                List<byte[]> got = new ArrayList<>();
                for (int round = 0; round < rounds; round++) {
                    Rendezvous rv = fileBase(rank, worldSize, file, "run-reuse")
                            .pollInterval(Duration.ofMillis(2)).build();
                    got.add(rv.exchange(rank == 0 ? RendezvousReuseTest::randomId : neverCalled()));
                    initRank.await(20, TimeUnit.SECONDS);
                }
                return got;
            }));
        }
        List<List<byte[]>> byRank = new ArrayList<>();
        for (Future<List<byte[]>> f : ranks) {
            byRank.add(f.get(100, TimeUnit.SECONDS));
        }
        assertRoundsAgreeAndDiffer(byRank, rounds);
    }

    @Test
    void filePeerNeverTakesTheIdOfThePreviousExchange(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("nccl-id");
        // exchange 1, done by both ranks
        assertArrayEquals(id(1), fileBase(0, 2, file, "run").build().exchange(() -> id(1)));
        assertArrayEquals(id(1), fileBase(1, 2, file, "run").build().exchange(neverCalled()));
        // exchange 2: the peer comes first and finds the file of exchange 1
        Future<byte[]> peer = pool.submit(() -> fileBase(1, 2, file, "run").build().exchange(neverCalled()));
        Thread.sleep(300);
        assertFalse(peer.isDone(), () -> "the peer must wait for exchange 2, but ended: " + outcome(peer));
        assertArrayEquals(id(2), fileBase(0, 2, file, "run").build().exchange(() -> id(2)));
        assertArrayEquals(id(2), peer.get(30, TimeUnit.SECONDS));
    }

    @Test
    void filePeerTimeoutNamesTheGenerationsAndAFailedExchangeDoesNotCount(@TempDir Path dir) {
        Path file = dir.resolve("nccl-id");
        fileBase(0, 2, file, "run").build().exchange(() -> id(1));
        fileBase(1, 2, file, "run").build().exchange(neverCalled());
        RendezvousException e = assertThrows(RendezvousException.class, () -> fileBase(1, 2, file, "run")
                .timeout(Duration.ofMillis(300)).build().exchange(neverCalled()));
        assertEquals("rank 1 timed out after 300 ms waiting for rank 0 to write " + file + ": it saw generation 1"
                + " of this run's file but waits for generation 2 (this rank's file rendezvous number 2 with this"
                + " path and run id); every rank must make the same sequence of file rendezvous with one path and run"
                + " id. Check that rank 0 runs, that the path is on a file system shared by all ranks, and that every"
                + " rank has the same run id (NCCL4J_RUN_ID)", e.getMessage());
        // the failed attempt did not count: the retry still waits for generation 2, which rank 0 writes now
        fileBase(0, 2, file, "run").build().exchange(() -> id(2));
        assertArrayEquals(id(2), fileBase(1, 2, file, "run").build().exchange(neverCalled()));
    }

    @Test
    void filePeerThatFallsBehindFailsAtOnce(@TempDir Path dir) {
        Path file = dir.resolve("nccl-id");
        fileBase(0, 2, file, "run").build().exchange(() -> id(1));
        fileBase(0, 2, file, "run").build().exchange(() -> id(2));
        long start = System.nanoTime();
        RendezvousException e = assertThrows(RendezvousException.class,
                () -> fileBase(1, 2, file, "run").build().exchange(neverCalled()));
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10), "fails at once, not at the timeout");
        assertTrue(e.getMessage().startsWith("rank 1 waits for generation 1 of " + file + " but rank 0 already wrote"
                + " generation 2"), e.getMessage());
        assertTrue(e.getMessage().contains("every rank must make the same sequence of file rendezvous"),
                e.getMessage());
    }

    /** Each rank counts its own exchanges, so ranks that share a process (threads here) keep separate counts. */
    @Test
    void fileGenerationsAreCountedPerRankAndRunId(@TempDir Path dir) {
        Path file = dir.resolve("nccl-id");
        fileBase(0, 3, file, "a").build().exchange(() -> id(1));
        assertArrayEquals(id(1), fileBase(2, 3, file, "a").build().exchange(neverCalled()));
        // a new run id starts at generation 1 again, even on the same path
        fileBase(0, 3, file, "b").build().exchange(() -> id(2));
        assertArrayEquals(id(2), fileBase(1, 3, file, "b").build().exchange(neverCalled()));
        // rank 0 writes generation 2 of run "a"; rank 1, at its first exchange of run "a", waits for generation 1
        fileBase(0, 3, file, "a").build().exchange(() -> id(3));
        RendezvousException behind = assertThrows(RendezvousException.class,
                () -> fileBase(1, 3, file, "a").build().exchange(neverCalled()));
        assertTrue(behind.getMessage().contains("waits for generation 1 of " + file + " but rank 0 already wrote"
                + " generation 2"), behind.getMessage());
        // rank 2 is at generation 2 of run "a", as rank 0 is; a relative path names the same file
        Path relative = Path.of("").toAbsolutePath().relativize(file.toAbsolutePath());
        assertArrayEquals(id(3), fileBase(2, 3, relative, "a").build().exchange(neverCalled()));
    }

    @Test
    void fileOfAnotherFormatVersionIsNamedAndReplaced(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("nccl-id");
        // the layout of format version 1: magic, version, world size, run hash, id, CRC32
        ByteBuffer old = ByteBuffer.allocate(4 + 1 + 4 + 32 + Rendezvous.UNIQUE_ID_BYTES + 4);
        old.putInt(Rendezvous.FILE_MAGIC).put((byte) 1).putInt(2)
                .put(RendezvousWire.sha256("nccl4j-file-rendezvous", "run", null)).put(id(9));
        CRC32 crc = new CRC32();
        crc.update(old.array(), 0, old.capacity() - 4);
        old.putInt((int) crc.getValue());
        Files.write(file, old.array());
        RendezvousException e = assertThrows(RendezvousException.class, () -> fileBase(1, 2, file, "run")
                .timeout(Duration.ofMillis(200)).build().exchange(neverCalled()));
        assertTrue(e.getMessage().contains(": the file has format version 1 but this nccl4j reads version "
                + Rendezvous.FILE_VERSION + " (written by another nccl4j version?)"), e.getMessage());
        fileBase(0, 2, file, "run").build().exchange(() -> id(3));
        assertArrayEquals(id(3), fileBase(1, 2, file, "run").build().exchange(neverCalled()));
        assertEquals(Rendezvous.FILE_BYTES, Files.size(file));
        assertEquals(2, Rendezvous.FILE_VERSION);
    }
}
