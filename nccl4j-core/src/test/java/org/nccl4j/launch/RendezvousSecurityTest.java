package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.launch.RendezvousTest.errorFrom;
import static org.nccl4j.launch.RendezvousTest.failure;
import static org.nccl4j.launch.RendezvousTest.id;
import static org.nccl4j.launch.RendezvousTest.neverCalled;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/** The job's secret on the TCP rendezvous, the claims rank 0 checks, and where rank 0 listens. */
@Timeout(60)
class RendezvousSecurityTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final String HOST = LOOPBACK.getHostAddress();
    private static final JobSecret SECRET = JobSecret.of("0123456789abcdef0123456789abcdef");
    private static final JobSecret OTHER = JobSecret.of("fedcba9876543210fedcba9876543210");

    private ExecutorService pool;
    private Logger logger;
    private ListAppender<ILoggingEvent> appender;

    @BeforeEach
    void start() {
        pool = Executors.newCachedThreadPool();
        logger = (Logger) LoggerFactory.getLogger(Rendezvous.class);
        appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
    }

    @AfterEach
    void stop() throws InterruptedException {
        logger.detachAppender(appender);
        pool.shutdownNow();
        assertTrue(pool.awaitTermination(20, TimeUnit.SECONDS));
    }

    private List<String> logged(Level level) {
        return appender.list.stream().filter(e -> e.getLevel() == level).map(ILoggingEvent::getFormattedMessage)
                .collect(Collectors.toList());
    }

    private static Rendezvous.Builder base(int rank, int worldSize, JobSecret secret) {
        return RendezvousTest.base(rank, worldSize).jobSecret(secret);
    }

    private int startServer(Rendezvous.Builder b, Supplier<byte[]> ids, List<Future<byte[]>> results)
            throws Exception {
        CompletableFuture<InetSocketAddress> listening = new CompletableFuture<>();
        Rendezvous r = b.tcp(HOST, 0).onListening(listening::complete).build();
        results.add(pool.submit(() -> r.exchange(ids)));
        return listening.get(10, TimeUnit.SECONDS).getPort();
    }

    /** A raw connection that has read rank 0's AUTH_CHALLENGE; returns the socket and fills {@code nonce}. */
    private static Socket rawAuthPeer(int port, byte[] nonce) throws IOException {
        Socket s = new Socket(LOOPBACK, port);
        s.setSoTimeout(10_000);
        RendezvousWire.Frame c = RendezvousWire.read(s.getInputStream());
        assertEquals(RendezvousWire.AUTH_CHALLENGE, c.type, RendezvousWire.typeName(c.type));
        assertEquals(RendezvousWire.NONCE_BYTES, c.payload.length);
        System.arraycopy(c.payload, 0, nonce, 0, nonce.length);
        return s;
    }

    private static byte[] authPayload(JobSecret secret, byte[] serverNonce, String clientNonce) {
        String proof = secret.prove("rendezvous", RendezvousWire.hex(serverNonce), clientNonce, "client");
        return ByteBuffer.allocate(RendezvousWire.AUTH_BYTES).put(RendezvousWire.unhex(clientNonce))
                .put(RendezvousWire.unhex(proof)).array();
    }

    /**
     * Proves {@code secret} on a raw connection that has read its AUTH_CHALLENGE ({@code nonce}) and checks rank 0's
     * AUTH_OK; returns the seal of the records that follow, as a rank's.
     */
    static RecordSeal authenticate(Socket raw, JobSecret secret, byte[] nonce) throws IOException {
        String clientNonce = JobSecret.nonce();
        RendezvousWire.write(raw.getOutputStream(), RendezvousWire.AUTH, authPayload(secret, nonce, clientNonce));
        RendezvousWire.Frame ok = RendezvousWire.read(raw.getInputStream());
        assertEquals(RendezvousWire.AUTH_OK, ok.type, RendezvousWire.typeName(ok.type));
        assertTrue(secret.verify("rendezvous", RendezvousWire.hex(nonce), clientNonce, "server",
                RendezvousWire.hex(ok.payload)), "rank 0 proved the secret");
        return RecordSeal.of(secret, "rendezvous", RendezvousWire.hex(nonce), clientNonce, false);
    }

    /** The text of the sealed ERROR frame that comes next on {@code raw}. */
    static String sealedErrorFrom(Socket raw, RecordSeal seal) throws IOException {
        RendezvousWire.Frame f = RendezvousWire.open(seal, RendezvousWire.read(raw.getInputStream()));
        assertEquals(RendezvousWire.ERROR, f.type, RendezvousWire.typeName(f.type));
        return new String(f.payload, java.nio.charset.StandardCharsets.UTF_8);
    }

    @Test
    void authenticatedPeerWithAnotherWorldSizeEndsTheRendezvousOnEveryRank() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 3, SECRET), () -> id(14), results);
        byte[] nonce = new byte[32];
        try (Socket one = rawAuthPeer(port, nonce)) {
            RecordSeal seal = authenticate(one, SECRET, nonce);
            one.getOutputStream().write(RendezvousWire.bytes(seal, RendezvousWire.HELLO,
                    RendezvousWire.hello(1, 3, null)));
            // the job's own rank 2, started with another world size: it proved the secret, so it ends the rendezvous
            Throwable two = failure(pool.submit(() -> base(2, 4, SECRET).tcp(HOST, port).build()
                    .exchange(neverCalled())));
            assertTrue(two.getMessage().contains("refused: world size mismatch: rank 2 (/127.0.0.1:"),
                    two.getMessage());
            assertTrue(two.getMessage().endsWith("has world size 4 but rank 0 has 3; start every rank with the same"
                    + " world size"), two.getMessage());
            Throwable zero = failure(results.get(0));
            assertTrue(zero.getMessage().startsWith("rank 0: world size mismatch: rank 2 (/127.0.0.1:"),
                    zero.getMessage());
            String first = sealedErrorFrom(one, seal);
            assertTrue(first.startsWith("rendezvous aborted by rank 0: world size mismatch: rank 2 (/127.0.0.1:"),
                    first);
        }
    }

    // ---- the secret ----

    @Test
    void rightSecretGivesEveryRankTheId() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 3, SECRET), () -> id(1), results);
        results.add(pool.submit(() -> base(1, 3, SECRET).tcp(HOST, port).build().exchange(neverCalled())));
        // the default comes from the environment (here the builder's map)
        results.add(pool.submit(() -> Rendezvous.builder().rank(2).worldSize(3).timeout(Duration.ofSeconds(20))
                .environment(Map.of(JobSecret.VARIABLE, "0123456789abcdef0123456789abcdef")).tcp(HOST, port).build()
                .exchange(neverCalled())));
        for (Future<byte[]> f : results) {
            assertArrayEquals(id(1), f.get(30, TimeUnit.SECONDS));
        }
        assertEquals(List.of(), logged(Level.WARN));
    }

    @Test
    void noSecretAnywhereIsSaidOnceAtInfo() throws Exception {
        Rendezvous.forgetUnauthenticatedNotice();
        for (int round = 0; round < 2; round++) {
            List<Future<byte[]>> results = new ArrayList<>();
            int port = startServer(base(0, 2, null), () -> id(13), results);
            assertArrayEquals(id(13), base(1, 2, null).tcp(HOST, port).build().exchange(neverCalled()));
            assertArrayEquals(id(13), results.get(0).get(30, TimeUnit.SECONDS));
        }
        List<String> said = logged(Level.INFO).stream().filter(l -> l.contains("unauthenticated"))
                .collect(Collectors.toList());
        assertEquals(1, said.size(), said.toString());
        assertTrue(said.get(0).contains("set the same NCCL4J_JOB_SECRET (or NCCL4J_JOB_SECRET_FILE) on every rank"),
                said.get(0));
        assertEquals(List.of(), logged(Level.WARN));
    }

    @Test
    void wrongSecretIsRefusedAndRankZeroGoesOn() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2, SECRET), () -> id(2), results);
        Throwable wrong = failure(pool.submit(() -> base(1, 2, OTHER).tcp(HOST, port).build()
                .exchange(neverCalled())));
        assertTrue(wrong.getMessage().contains("refused: wrong proof of the job's secret: the peer's"
                + " NCCL4J_JOB_SECRET differs from rank 0's"), wrong.getMessage());
        assertFalse(results.get(0).isDone(), "rank 0 keeps waiting for the real rank 1");
        assertArrayEquals(id(2), base(1, 2, SECRET).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(2), results.get(0).get(30, TimeUnit.SECONDS));
        List<String> warns = logged(Level.WARN);
        assertEquals(1, warns.size(), warns.toString());
        assertTrue(warns.get(0).startsWith("rank 0 refused a connection from /127.0.0.1:"), warns.get(0));
        assertTrue(warns.get(0).contains("wrong proof of the job's secret"), warns.get(0));
    }

    @Test
    void aPeerTricklingBytesAfterItsRefusalDoesNotHoldRankZero() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2, SECRET), () -> id(9), results);
        byte[] nonce = new byte[RendezvousWire.NONCE_BYTES];
        try (Socket stranger = rawAuthPeer(port, nonce)) {
            // a proof under another secret: refused; then one byte every 100 ms, as long as rank 0 reads
            RendezvousWire.write(stranger.getOutputStream(), RendezvousWire.AUTH,
                    authPayload(OTHER, nonce, JobSecret.nonce()));
            Future<?> trickle = pool.submit(() -> {
                try {
                    for (int i = 0; i < 300; i++) {
                        stranger.getOutputStream().write('x');
                        Thread.sleep(100);
                    }
                } catch (IOException | InterruptedException e) {
                    // rank 0 closed it: the point
                }
                return null;
            });
            Thread.sleep(300);   // refused, and trickling
            long t0 = System.nanoTime();
            assertArrayEquals(id(9), base(1, 2, SECRET).tcp(HOST, port).build().exchange(neverCalled()));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 2000, "the real rank waited " + ms + " ms behind the trickle");
            assertArrayEquals(id(9), results.get(0).get(30, TimeUnit.SECONDS));
            trickle.cancel(true);
        }
    }

    @Test
    void secretOnRankZeroOnly() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2, SECRET), () -> id(3), results);
        Throwable none = failure(pool.submit(() -> base(1, 2, null).tcp(HOST, port).build()
                .exchange(neverCalled())));
        assertTrue(none.getMessage().contains("requires the job's secret but this rank has none: set"
                + " NCCL4J_JOB_SECRET"), none.getMessage());
        assertArrayEquals(id(3), base(1, 2, SECRET).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(3), results.get(0).get(30, TimeUnit.SECONDS));
        List<String> warns = logged(Level.WARN);
        assertEquals(1, warns.size(), warns.toString());
        assertTrue(warns.get(0).contains("no proof of the job's secret: the peer has no NCCL4J_JOB_SECRET"),
                warns.get(0));
    }

    @Test
    void secretOnThePeerOnly() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2, null), () -> id(4), results);
        Throwable peer = failure(pool.submit(() -> base(1, 2, SECRET).tcp(HOST, port).build()
                .exchange(neverCalled())));
        assertTrue(peer.getMessage().contains("does not authenticate (it has no NCCL4J_JOB_SECRET) but this rank"
                + " has a job secret"), peer.getMessage());
        assertArrayEquals(id(4), base(1, 2, null).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(4), results.get(0).get(30, TimeUnit.SECONDS));
        List<String> warns = logged(Level.WARN);
        assertEquals(1, warns.size(), warns.toString());
        assertTrue(warns.get(0).contains("the peer holds a job secret but rank 0 has none: set the same"
                + " NCCL4J_JOB_SECRET"), warns.get(0));
    }

    @Test
    void replayedAnswerFailsOnANewNonce() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 3, SECRET), () -> id(5), results);
        byte[] n1 = new byte[RendezvousWire.NONCE_BYTES];
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try (Socket legit = rawAuthPeer(port, n1)) {
            RendezvousWire.write(captured, RendezvousWire.AUTH, authPayload(SECRET, n1, JobSecret.nonce()));
            legit.getOutputStream().write(captured.toByteArray());
            RendezvousWire.Frame ok = RendezvousWire.read(legit.getInputStream());
            assertEquals(RendezvousWire.AUTH_OK, ok.type, "the captured exchange was a good one");
        }
        byte[] n2 = new byte[RendezvousWire.NONCE_BYTES];
        try (Socket replay = rawAuthPeer(port, n2)) {
            assertFalse(java.util.Arrays.equals(n1, n2), "a fresh nonce per connection");
            replay.getOutputStream().write(captured.toByteArray());
            String error = errorFrom(replay);
            assertTrue(error.startsWith("wrong proof of the job's secret"), error);
        }
        assertFalse(results.get(0).isDone());
        results.add(pool.submit(() -> base(1, 3, SECRET).tcp(HOST, port).build().exchange(neverCalled())));
        results.add(pool.submit(() -> base(2, 3, SECRET).tcp(HOST, port).build().exchange(neverCalled())));
        for (Future<byte[]> f : results) {
            assertArrayEquals(id(5), f.get(30, TimeUnit.SECONDS));
        }
    }

    /** A fake rank 0: {@code script} talks to the first connection. */
    private interface Script {
        void run(Socket s) throws IOException;
    }

    private Future<?> fake(ServerSocket ss, Script script) {
        return pool.submit(() -> {
            try (Socket s = ss.accept()) {
                s.setSoTimeout(10_000);
                script.run(s);
                InputStream in = s.getInputStream();
                while (in.read() >= 0) {
                    // until the peer hangs up
                }
            }
            return null;
        });
    }

    @Test
    void peerRefusesAFakeRankZeroThatCannotProveTheSecret() throws Exception {
        List<Integer> seen = new ArrayList<>();
        try (ServerSocket ss = new ServerSocket(0, 1, LOOPBACK)) {
            Future<?> server = fake(ss, s -> {
                byte[] nonce = new byte[RendezvousWire.NONCE_BYTES];
                RendezvousWire.write(s.getOutputStream(), RendezvousWire.AUTH_CHALLENGE, nonce);
                RendezvousWire.Frame auth = RendezvousWire.read(s.getInputStream());
                seen.add(auth.type);
                // it does not know the secret: a proof made with another one, then its own id
                String clientNonce = RendezvousWire.hex(java.util.Arrays.copyOf(auth.payload, 32));
                RendezvousWire.write(s.getOutputStream(), RendezvousWire.AUTH_OK, RendezvousWire.unhex(
                        OTHER.prove("rendezvous", RendezvousWire.hex(nonce), clientNonce, "server")));
                RendezvousWire.write(s.getOutputStream(), RendezvousWire.ID, id(66));
            });
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> base(1, 2, SECRET).tcp(HOST, ss.getLocalPort()).build().exchange(neverCalled()));
            assertTrue(e.getMessage().contains("failed to prove the job's secret (wrong proof): it is not this job's"
                    + " rank 0, or its NCCL4J_JOB_SECRET differs; refusing its id"), e.getMessage());
            server.get(10, TimeUnit.SECONDS);
        }
        assertEquals(List.of(RendezvousWire.AUTH), seen, "the peer sent nothing but its proof");
        try (ServerSocket ss = new ServerSocket(0, 1, LOOPBACK)) {
            // a fake that skips authentication altogether
            Future<?> server = fake(ss, s -> {
                RendezvousWire.write(s.getOutputStream(), RendezvousWire.CHALLENGE, new byte[32]);
                RendezvousWire.write(s.getOutputStream(), RendezvousWire.ID, id(66));
            });
            RendezvousException e = assertThrows(RendezvousException.class,
                    () -> base(1, 2, SECRET).tcp(HOST, ss.getLocalPort()).build().exchange(neverCalled()));
            assertTrue(e.getMessage().contains("does not authenticate"), e.getMessage());
            server.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void oversizedAuthFrameIsRefusedBeforeAllocation() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2, SECRET), () -> id(7), results);
        try (Socket raw = rawAuthPeer(port, new byte[32])) {
            DataOutputStream out = new DataOutputStream(raw.getOutputStream());
            out.writeInt(RendezvousWire.MAGIC);
            out.writeByte(RendezvousWire.VERSION);
            out.writeByte(RendezvousWire.AUTH);
            out.writeInt(Integer.MAX_VALUE);
            out.flush();
            assertEquals("oversized frame: AUTH frame announces 2147483647 bytes, above the limit of 1024 bytes",
                    errorFrom(raw));
        }
        assertArrayEquals(id(7), base(1, 2, SECRET).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(7), results.get(0).get(30, TimeUnit.SECONDS));
    }

    @Test
    void authenticatedClaimsAreStillChecked() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2, SECRET), () -> id(8), results);
        byte[] nonce = new byte[32];
        try (Socket raw = rawAuthPeer(port, nonce)) {
            RecordSeal seal = authenticate(raw, SECRET, nonce);
            raw.getOutputStream().write(RendezvousWire.bytes(seal, RendezvousWire.HELLO,
                    RendezvousWire.hello(7, 2, null)));
            String error = sealedErrorFrom(raw, seal);
            assertTrue(error.startsWith("rank out of range: "), error);
        }
        assertArrayEquals(id(8), base(1, 2, SECRET).tcp(HOST, port).build().exchange(neverCalled()));
        assertArrayEquals(id(8), results.get(0).get(30, TimeUnit.SECONDS));
        List<String> warns = logged(Level.WARN);
        assertEquals(1, warns.size(), warns.toString());
        assertTrue(warns.get(0).matches("rank 0 refused a connection from /127\\.0\\.0\\.1:\\d+: rank out of range:"
                + " .*"), warns.get(0));
    }

    @Test
    void theSecretIsReadFromTheEnvironmentOnlyForTcp() {
        // a too-short secret is an error for the TCP route...
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Rendezvous.builder()
                .rank(0).worldSize(2).environment(Map.of(JobSecret.VARIABLE, "short")).tcp(HOST, 1).build());
        assertTrue(e.getMessage().startsWith("NCCL4J_JOB_SECRET must hold at least 16 characters"), e.getMessage());
        // ...and not read by the others
        Rendezvous.builder().rank(0).worldSize(2).environment(Map.of(JobSecret.VARIABLE, "short")).commId().build();
    }

    /** The text of the RETRY frame that comes next on a connection that has read its challenge. */
    static String retryFrom(Socket s) throws IOException {
        RendezvousWire.Frame f = RendezvousWire.read(s.getInputStream());
        assertEquals(RendezvousWire.RETRY, f.type, RendezvousWire.typeName(f.type));
        return new String(f.payload, java.nio.charset.StandardCharsets.UTF_8);
    }

    @Test
    void aFullHouseLetsGoOfTheConnectionThatWaitedLongestWithoutProvingAnything() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2, SECRET).maxPending(3), () -> id(11), results);
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < 7; i++) {
                held.add(rawAuthPeer(port, new byte[32])); // challenged, never answers
            }
            // the cap is 3: each of the 4 after the first 3 took the slot of the oldest one
            for (int i = 0; i < 4; i++) {
                String retry = retryFrom(held.get(i));
                assertTrue(retry.matches("rank 0 let go of this connection: it had waited \\d+ ms without proving"
                        + " anything and 3 connections were waiting to identify themselves; connect again"), retry);
                assertEquals(-1, held.get(i).getInputStream().read(), "then closed");
            }
            List<String> warns = logged(Level.WARN);
            assertEquals(1, warns.size(), "one line per flood: " + warns);
            assertTrue(warns.get(0).startsWith("rank 0 let go of the connection from /127.0.0.1:"), warns.get(0));
            assertTrue(warns.get(0).contains("without proving anything, for a new one from /127.0.0.1:"),
                    warns.get(0));
            assertTrue(warns.get(0).contains("3 connections are already waiting to identify themselves"),
                    warns.get(0));
            // the real rank takes the slot of the oldest of the last 3, which are still held
            assertArrayEquals(id(11), base(1, 2, SECRET).tcp(HOST, port).build().exchange(neverCalled()));
            assertArrayEquals(id(11), results.get(0).get(30, TimeUnit.SECONDS));
            assertTrue(retryFrom(held.get(4)).startsWith("rank 0 let go of this connection: it had waited"));
        } finally {
            for (Socket s : held) {
                s.close();
            }
        }
    }

    @Test
    void connectionsThatProvedTheSecretAreNotLetGoAndNewOnesAreClosedAtAccept() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 2, SECRET).maxPending(2).handshakeTimeout(Duration.ofMillis(1500)),
                () -> id(15), results);
        List<Socket> proved = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                byte[] nonce = new byte[32];
                Socket s = rawAuthPeer(port, nonce);
                authenticate(s, SECRET, nonce);   // then no HELLO: it holds its slot until its handshake timeout
                proved.add(s);
            }
            try (Socket over = new Socket(LOOPBACK, port)) {
                over.setSoTimeout(10_000);
                assertEquals(-1, over.getInputStream().read(), "closed at accept, without a challenge");
            }
            List<String> warns = logged(Level.WARN);
            assertEquals(1, warns.size(), warns.toString());
            assertTrue(warns.get(0).startsWith("rank 0 closed a connection from /127.0.0.1:"), warns.get(0));
            assertTrue(warns.get(0).contains("at accept: 2 connections are already waiting to identify themselves,"
                    + " each having proved the job's secret"), warns.get(0));
            // the real rank retries until a slot frees (the proved ones' handshake timeout)
            assertArrayEquals(id(15), base(1, 2, SECRET).tcp(HOST, port).build().exchange(neverCalled()));
            assertArrayEquals(id(15), results.get(0).get(30, TimeUnit.SECONDS));
        } finally {
            for (Socket s : proved) {
                s.close();
            }
        }
    }

    @Test
    void silentConnectionsDoNotHoldUpTheRealRanks() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        int port = startServer(base(0, 3, SECRET), () -> id(12), results);
        List<Socket> silent = new ArrayList<>();
        try {
            for (int i = 0; i < 5; i++) {
                silent.add(rawAuthPeer(port, new byte[32]));
            }
            long t0 = System.nanoTime();
            results.add(pool.submit(() -> base(1, 3, SECRET).tcp(HOST, port).build().exchange(neverCalled())));
            results.add(pool.submit(() -> base(2, 3, SECRET).tcp(HOST, port).build().exchange(neverCalled())));
            for (Future<byte[]> f : results) {
                assertArrayEquals(id(12), f.get(30, TimeUnit.SECONDS));
            }
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5), "handshakes run side by side, not"
                    + " one after another behind the silent ones");
        } finally {
            for (Socket s : silent) {
                s.close();
            }
        }
    }

    // ---- where rank 0 listens ----

    @Test
    void bindsToALocalMasterAddr() throws Exception {
        List<String> info = new ArrayList<>();
        assertEquals(LOOPBACK, Rendezvous.bindFor("127.0.0.1", null, info));
        assertEquals(List.of(), info);
        List<Future<byte[]>> results = new ArrayList<>();
        CompletableFuture<InetSocketAddress> listening = new CompletableFuture<>();
        Rendezvous r = Rendezvous.builder().rank(0).worldSize(2).environment(Map.of()).jobSecret(SECRET)
                .tcp(HOST, 0).onListening(listening::complete).timeout(Duration.ofSeconds(20)).build();
        results.add(pool.submit(() -> r.exchange(() -> id(9))));
        InetSocketAddress at = listening.get(10, TimeUnit.SECONDS);
        assertEquals(LOOPBACK, at.getAddress(), "listens on MASTER_ADDR, not every interface");
        assertArrayEquals(id(9), base(1, 2, SECRET).tcp(HOST, at.getPort()).build().exchange(neverCalled()));
        assertArrayEquals(id(9), results.get(0).get(30, TimeUnit.SECONDS));
        assertTrue(logged(Level.INFO).stream().anyMatch(l -> l.startsWith("rank 0 waiting on 127.0.0.1:")),
                logged(Level.INFO).toString());
    }

    @Test
    void aMasterAddrOfAnotherHostFallsBackToEveryInterfaceSayingWhy() {
        List<String> info = new ArrayList<>();
        InetAddress a = Rendezvous.bindFor("192.0.2.1", null, info);
        assertTrue(a.isAnyLocalAddress(), a.toString());
        assertEquals(List.of("rank 0 listens on every interface: MASTER_ADDR 192.0.2.1 (192.0.2.1) is not an address"
                + " of this host (set NCCL4J_RENDEZVOUS_BIND to choose the address)"), info);
        info.clear();
        assertTrue(Rendezvous.bindFor("no-such-host.invalid", null, info).isAnyLocalAddress());
        assertTrue(info.get(0).contains("does not resolve here"), info.toString());
    }

    @Test
    void theBindVariableOverrides() {
        List<String> info = new ArrayList<>();
        assertTrue(Rendezvous.bindFor("127.0.0.1", "any", info).isAnyLocalAddress());
        assertEquals(LOOPBACK, Rendezvous.bindFor("192.0.2.1", "127.0.0.1", info));
        assertEquals(List.of(), info);
        RendezvousException e = assertThrows(RendezvousException.class,
                () -> Rendezvous.bindFor("127.0.0.1", "no-such-host.invalid", info));
        assertTrue(e.getMessage().startsWith("NCCL4J_RENDEZVOUS_BIND=no-such-host.invalid is not an address"));
    }

    @Test
    void theBindVariableIsReadFromTheEnvironment() throws Exception {
        List<Future<byte[]>> results = new ArrayList<>();
        CompletableFuture<InetSocketAddress> listening = new CompletableFuture<>();
        Rendezvous r = Rendezvous.builder().rank(0).worldSize(2).jobSecret(null)
                .environment(Map.of(Rendezvous.BIND_VARIABLE, "any")).tcp(HOST, 0)
                .onListening(listening::complete).timeout(Duration.ofSeconds(20)).build();
        results.add(pool.submit(() -> r.exchange(() -> id(10))));
        InetSocketAddress at = listening.get(10, TimeUnit.SECONDS);
        assertTrue(at.getAddress().isAnyLocalAddress(), at.toString());
        assertArrayEquals(id(10), base(1, 2, null).tcp(HOST, at.getPort()).build().exchange(neverCalled()));
        assertArrayEquals(id(10), results.get(0).get(30, TimeUnit.SECONDS));
        assertNotEquals(List.of(), results);
    }
}
