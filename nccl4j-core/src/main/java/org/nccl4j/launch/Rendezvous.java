package org.nccl4j.launch;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.zip.CRC32;
import org.nccl4j.jni.NcclNative;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings NCCL's 128-byte unique id from rank 0 to every rank, before {@code ncclCommInitRank}.
 *
 * <p>Three routes, chosen on the {@link Builder}:
 * <ul>
 * <li>{@link Route#COMM_ID}: nothing is exchanged. With {@code NCCL_COMM_ID=host:port} set on every rank, NCCL
 *     derives the same id on every rank, so every rank calls the id supplier ({@code ncclGetUniqueId}). This route
 *     checks that {@code NCCL_COMM_ID} is set in the live process environment and well-formed, then calls the
 *     supplier.</li>
 * <li>{@link Route#TCP}: rank 0 listens on the rendezvous port (normally {@code MASTER_PORT}); the other ranks
 *     connect to {@code MASTER_ADDR:MASTER_PORT}, retrying until the timeout. When the job has a secret
 *     ({@link JobSecret}: {@code NCCL4J_JOB_SECRET} or {@code NCCL4J_JOB_SECRET_FILE}, or {@link Builder#jobSecret}),
 *     every connection is authenticated both ways before anything else (HMAC challenge-response with nonces from
 *     both sides): rank 0 sends the id only to peers that proved the secret, and a peer takes an id only from a
 *     rank 0 that proved it. A side with a secret refuses one without (the peer fails naming
 *     {@code NCCL4J_JOB_SECRET}); with none on either side, the rendezvous is unauthenticated (said once at INFO).
 *     Rank 0 then checks each peer's rank and world size and, when a token is configured ({@link Builder#token} or
 *     {@code NCCL4J_RENDEZVOUS_TOKEN}), that the peer knows it (by HMAC over a fresh nonce; the token is never
 *     sent). After the handshake, every frame either way (the HELLO, the id, an error) carries a MAC under keys of
 *     that connection ({@link RecordSeal}, purpose {@code rendezvous}): a frame forged, altered or replayed on the
 *     way is refused (rank 0 refuses the connection; a rank refuses the id, naming its MAC). Once all
 *     {@code worldSize - 1} peers have joined, rank 0 stops listening, calls the supplier and sends the id to each.
 *     <p>What rank 0 refuses, and keeps waiting (it may be a stranger): a wrong or missing proof, a wrong token, a
 *     malformed or oversized message, a rank out of range, rank 0's rank, a rank held by a connection that is still
 *     there, a second HELLO, and, without a secret, a world size other than rank 0's. Each refused connection gets an
 *     ERROR frame, goes through one WARN line per burst of refusals ({@link Refusals}) and is listed in rank 0's
 *     time-out. With a secret, a peer that proved it and has another world size ends the rendezvous on every rank
 *     with an error naming the values (it is of this job, misconfigured).
 *     <p>Who holds a rank: the first HELLO that claims it, while its connection stays. Rank 0 watches the joined
 *     connections: one that ends before the id leaves its rank free again (one line through the refusals), and a
 *     later claim of a rank looks first whether its holder is still there; if not, the later claim takes it. So a
 *     stranger that claims a rank not yet arrived and leaves loses it to the real rank; a stranger that claims it and
 *     stays (possible only without a secret) keeps it, and the real rank is refused at once with an error naming the
 *     holder's address and {@code NCCL4J_JOB_SECRET}, and said at WARN on rank 0: never silently lost. With a secret,
 *     only a process holding it can claim a rank.
 *     <p>Rank 0's time: it serves every connection on one thread and one selector and never blocks on one: each
 *     connection has the handshake timeout in all to identify itself, and 2 s for its first byte; a refused one's
 *     last frame drains for at most 200 ms in all, on the selector.
 *     Up to 16 connections more than the world's peers wait side by side; when that many wait, a new connection
 *     takes the slot of the one that has waited longest without proving anything (the secret, or a HELLO that
 *     holds), which gets a RETRY frame and connects again if it is a rank: strangers that hold the slots and
 *     reconnect at once cannot keep a real rank's retry out, as they could when the newest was closed. Only when
 *     every waiting connection proved the secret is a new one closed at accept (one WARN line per flood).
 *     <p>Rank 0 listens on {@code MASTER_ADDR} when that is an address of its host, else on every interface (said at
 *     INFO); {@value #BIND_VARIABLE} ({@code any} or an address) overrides. See {@code RendezvousWire} for the
 *     format. A connection that is refused, that ends or is reset before rank 0's CHALLENGE frame, or that gets a
 *     RETRY, is retried until the timeout: it did not reach rank 0 of this rendezvous but, say, the server of the
 *     previous rendezvous on the same port, closing with the connection still in its backlog. After the CHALLENGE, a
 *     lost connection or an ERROR frame (sent whenever rank 0 refuses or gives up) ends the rendezvous. So rendezvous
 *     may follow each other on one port at once, as when a run creates several communicators.</li>
 * <li>{@link Route#FILE}: rank 0 removes the file, then writes it anew atomically (a temporary file in the same
 *     directory, flushed to disk, then renamed over the path); the others poll until it appears. To tell a file
 *     of this run from one left by an earlier run, the file carries a SHA-256 hash of a <b>run id</b> that must be
 *     the same on every rank of this run and differ between runs: {@link Builder#runId}, else
 *     {@code NCCL4J_RUN_ID}, else one derived from the launcher ({@code TORCHELASTIC_RUN_ID} with
 *     {@code TORCHELASTIC_RESTART_COUNT}, {@code SLURM_JOB_ID} with {@code SLURM_STEP_ID}, {@code PMIX_NAMESPACE},
 *     or Open MPI's job id). A file with another run's hash is ignored and polling goes on; a file of this run with
 *     another world size is an error. The file holds a CRC32 of its contents and is created readable by its owner
 *     only; it is left in place for the next run to replace.
 *     <p>Several rendezvous of one run may use the same path and run id (one per communicator, say), so the file
 *     also carries a <b>generation</b>: the number of the rendezvous among those of its rank with this path and run
 *     id, 1 for the first. Each process counts the file rendezvous that completed, per absolute path, run id and
 *     rank; rank 0 writes the next generation, and the others take only a file of the generation they count, never
 *     the id of an earlier rendezvous. A peer that finds an older generation keeps polling; one that finds a newer
 *     generation fails at once, as it fell behind. Hence the rule: <b>every rank must make the same sequence of file
 *     rendezvous with one path and run id</b>. A rendezvous that failed does not count, so a retry waits for the
 *     same generation. Rank 0 does not wait for the others to read the file, so it must not begin the next
 *     rendezvous on the path before they have ({@code ncclCommInitRank} between the two ensures that). Ranks run as
 *     threads of one process (in tests) count separately, since their ranks differ.</li>
 * </ul>
 *
 * <p>Every route returns a fresh copy of the 128-byte id and throws {@link RendezvousException} on failure.
 * A {@code Rendezvous} is immutable; {@link #exchange} uses no threads of its own and closes every socket and
 * temporary file on every path.
 */
public final class Rendezvous {
    private static final Logger LOG = LoggerFactory.getLogger(Rendezvous.class);

    /** The size of NCCL's unique id ({@code NCCL_UNIQUE_ID_BYTES}). */
    public static final int UNIQUE_ID_BYTES = 128;
    /** The variable holding the shared token of the TCP route. */
    public static final String TOKEN_VARIABLE = "NCCL4J_RENDEZVOUS_TOKEN";
    /** The variable naming a shared file for the id exchange of {@link #forLaunch}: the file route. */
    public static final String FILE_VARIABLE = "NCCL4J_RENDEZVOUS_FILE";
    /** The variable holding the run id of the file route. */
    public static final String RUN_ID_VARIABLE = "NCCL4J_RUN_ID";
    private static final long CONNECT_BACKOFF_START_MS = 2;
    private static final long CONNECT_BACKOFF_MAX_MS = 250;

    /** The default time to wait for all ranks: 300 seconds. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(300);

    /** How the id travels. */
    public enum Route {
        /** NCCL derives the id from {@code NCCL_COMM_ID}; nothing is exchanged. */
        COMM_ID,
        /** Rank 0 serves the id over TCP. */
        TCP,
        /**
         * Rank 0 writes the id to a file on a shared file system. Every rank must make the same sequence of file
         * rendezvous with one path and run id (see the generation in the {@linkplain Rendezvous class description}).
         */
        FILE
    }

    static final int FILE_MAGIC = 0x4E344A46; // "N4JF"
    /** 2 added the generation; 1 had none. */
    static final int FILE_VERSION = 2;
    /** Magic, version, world size, generation, run hash, id, CRC32. */
    static final int FILE_BYTES = 4 + 1 + 4 + 8 + 32 + UNIQUE_ID_BYTES + 4;
    /** Files up to this size are read to tell another format version from a foreign file. */
    private static final int FILE_READ_LIMIT = 4096;

    /** The file rendezvous completed so far, per file, run id and rank; see {@link Route#FILE}. */
    private static final ConcurrentMap<FileSequence, AtomicLong> FILE_EXCHANGES = new ConcurrentHashMap<>();

    /** Whose file rendezvous are counted together: one rank's with one file (absolute, normalized) and run id. */
    private record FileSequence(Path file, String runId, int rank) {
    }

    private static final SecureRandom RANDOM = new SecureRandom();

    /** The variable that chooses the address rank 0 listens on: {@code any}, or an address of this host. */
    public static final String BIND_VARIABLE = "NCCL4J_RENDEZVOUS_BIND";

    /** Whether this process said that its rendezvous is unauthenticated (said once). */
    private static final java.util.concurrent.atomic.AtomicBoolean SAID_UNAUTHENTICATED =
            new java.util.concurrent.atomic.AtomicBoolean();

    /** Lets the next unauthenticated rendezvous say so again (tests). */
    static void forgetUnauthenticatedNotice() {
        SAID_UNAUTHENTICATED.set(false);
    }

    private static void sayUnauthenticated() {
        if (SAID_UNAUTHENTICATED.compareAndSet(false, true)) {
            LOG.info("the TCP rendezvous is unauthenticated: no job secret is set; set the same {} (or {}) on every"
                    + " rank so that only the job's ranks can join and only the job's rank 0 can hand out the id",
                    JobSecret.VARIABLE, JobSecret.FILE_VARIABLE);
        }
    }

    private final Route route;
    private final int rank;
    private final int worldSize;
    private final String host;
    private final int port;
    private final InetAddress bindAddress;
    private final Consumer<InetSocketAddress> onListening;
    private final String token;
    private final JobSecret secret;
    private final String bindSetting;
    private final Path file;
    private final String runId;
    private final Duration timeout;
    private final Duration handshakeTimeout;
    private final int maxPending;
    private final Duration pollInterval;
    private final ProcessEnvironment processEnvironment;
    /** Asked while the TCP route waits: a reason (a rank known lost) ends the rendezvous on every rank; or null. */
    private final Supplier<String> abandonWhen;

    private Rendezvous(Builder b, int rank, int worldSize, String host, int port, String token, String runId,
            InetAddress bindAddress, ProcessEnvironment processEnvironment) {
        this.route = b.route;
        this.rank = rank;
        this.worldSize = worldSize;
        this.host = host;
        this.port = port;
        this.bindAddress = bindAddress;
        this.onListening = b.onListening;
        this.token = token;
        this.secret = b.secret;
        this.bindSetting = b.bindSetting;
        this.file = b.file;
        this.runId = runId;
        this.timeout = b.timeout;
        this.handshakeTimeout = b.handshakeTimeout;
        this.maxPending = b.maxPending > 0 ? b.maxPending : MAX_PENDING + Math.max(0, worldSize - 1);
        this.pollInterval = b.pollInterval;
        this.processEnvironment = processEnvironment;
        this.abandonWhen = b.abandonWhen;
    }

    /**
     * The rendezvous {@link org.nccl4j.Communicator#fromEnvironment()} uses for {@code launch}, by the first route that
     * applies: {@code NCCL_COMM_ID} set: {@link Route#COMM_ID}; else {@value #FILE_VARIABLE}
     * set: {@link Route#FILE} on that file; else {@link Route#TCP} to {@code MASTER_ADDR}/{@code MASTER_PORT}.
     * Variables are read from the live process environment.
     *
     * @param launch the rank, world size and launch variables of this process
     * @return the rendezvous, not yet exchanged
     * @throws IllegalStateException when the chosen route lacks what it needs (see {@link Builder#build()})
     */
    public static Rendezvous forLaunch(LaunchInfo launch) {
        return forLaunch(launch, DEFAULT_TIMEOUT);
    }

    /**
     * The route {@link #forLaunch} takes in this process's environment.
     *
     * @return the route
     */
    public static Route forLaunchRoute() {
        String file = NcclNative.getenv(FILE_VARIABLE);
        if (NcclNative.getenv(NcclEnvironment.COMM_ID) != null) {
            return Route.COMM_ID;
        }
        return file != null && !file.isBlank() ? Route.FILE : Route.TCP;
    }

    /**
     * As {@link #forLaunch(LaunchInfo)}, giving up after {@code timeout} (the deadline of initialization,
     * {@code NCCL4J_INIT_TIMEOUT}).
     *
     * @param launch the detected launch
     * @param timeout how long to wait, positive
     * @return the rendezvous
     */
    public static Rendezvous forLaunch(LaunchInfo launch, Duration timeout) {
        return forLaunch(launch, timeout, null);
    }

    /**
     * As {@link #forLaunch(LaunchInfo, Duration)}, ending the wait early when {@code abandonWhen} gives a reason
     * ({@link Builder#abandonWhen}).
     *
     * @param launch the detected launch
     * @param timeout how long to wait, positive
     * @param abandonWhen asked while waiting; null for none
     * @return the rendezvous
     */
    public static Rendezvous forLaunch(LaunchInfo launch, Duration timeout, Supplier<String> abandonWhen) {
        Builder rb = builder().launch(launch).timeout(timeout);
        if (abandonWhen != null) {
            rb.abandonWhen(abandonWhen);
        }
        switch (forLaunchRoute()) {
            case COMM_ID -> rb.commId();
            case FILE -> rb.file(Path.of(NcclNative.getenv(FILE_VARIABLE)));
            default -> rb.tcp();
        }
        return rb.build();
    }

    /**
     * A builder; rank and world size default to {@link LaunchInfo#detect()}.
     *
     * @return a new builder with no route chosen
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The route.
     *
     * @return the route by which the id travels
     */
    public Route route() {
        return route;
    }

    /**
     * This process's rank.
     *
     * @return this process's rank, from 0 to {@code worldSize() - 1}
     */
    public int rank() {
        return rank;
    }

    /**
     * The number of ranks.
     *
     * @return the number of ranks, 1 or more
     */
    public int worldSize() {
        return worldSize;
    }

    /**
     * The time to wait for the other ranks.
     *
     * @return the time {@link #exchange} waits for the other ranks
     */
    public Duration timeout() {
        return timeout;
    }

    /** E.g. {@code Rendezvous[TCP rank 1 of 4 via node01:29500, timeout PT5M]}. */
    @Override
    public String toString() {
        String where = route == Route.TCP ? " via " + host + ":" + port : route == Route.FILE ? " via " + file : "";
        return "Rendezvous[" + route + " rank " + rank + " of " + worldSize + where + ", timeout " + timeout + "]";
    }

    /**
     * Runs the rendezvous and returns the unique id, identical on every rank.
     *
     * @param idSupplier makes a new unique id (normally {@code ncclGetUniqueId}); called on rank 0 only for the TCP
     *                   and file routes, on every rank for the {@code NCCL_COMM_ID} route. It must return
     *                   {@value #UNIQUE_ID_BYTES} bytes.
     * @return a new array of {@value #UNIQUE_ID_BYTES} bytes
     * @throws RendezvousException when the exchange fails; the message names the ranks and the fix
     */
    public byte[] exchange(Supplier<byte[]> idSupplier) {
        Objects.requireNonNull(idSupplier, "idSupplier");
        switch (route) {
            case COMM_ID:
                return viaCommId(idSupplier);
            case TCP:
                if (worldSize == 1) {
                    return newId(idSupplier);
                }
                return rank == 0 ? serve(idSupplier) : fetch();
            case FILE:
                return viaFile(idSupplier);
            default:
                throw new AssertionError(route);
        }
    }

    private byte[] newId(Supplier<byte[]> idSupplier) {
        byte[] id;
        try {
            id = idSupplier.get();
        } catch (RuntimeException e) {
            throw new RendezvousException("rank " + rank + ": the unique id supplier failed: " + e, e);
        }
        if (id == null || id.length != UNIQUE_ID_BYTES) {
            throw new RendezvousException("rank " + rank + ": the unique id supplier returned "
                    + (id == null ? "null" : id.length + " bytes") + "; it must return " + UNIQUE_ID_BYTES
                    + " bytes (an ncclUniqueId)");
        }
        return id.clone();
    }

    // ---- NCCL_COMM_ID ----

    private byte[] viaCommId(Supplier<byte[]> idSupplier) {
        String value = processEnvironment.get(NcclEnvironment.COMM_ID);
        if (value == null || value.isEmpty()) {
            throw new RendezvousException("rank " + rank + ": the NCCL_COMM_ID route needs NCCL_COMM_ID set to rank 0's"
                    + " host:port on every rank before NCCL starts; set it in the launch environment or with"
                    + " NcclEnvironment.builder().commId(host, port).build().apply()");
        }
        try {
            NcclEnvironment.parseHostPort(NcclEnvironment.COMM_ID, value);
        } catch (IllegalArgumentException e) {
            throw new RendezvousException("rank " + rank + ": " + e.getMessage(), e);
        }
        return newId(idSupplier);
    }

    // ---- TCP, rank 0 ----

    /**
     * The connections beyond the world's peers that may wait to identify themselves at once; when that many wait, a
     * new one takes the place of the one that has waited longest without proving anything.
     */
    static final int MAX_PENDING = 16;

    /**
     * How long a connection may stay silent after its challenge before rank 0 lets go of it (ms), unless the handshake
     * timeout is shorter. A rank answers its challenge within one round trip and one HMAC (well under a millisecond on
     * one host, a few across a cluster); 2 s also covers a congested network and a long stop-the-world pause, and a
     * silent stranger holds its slot for a fifth of the 10 s handshake timeout.
     */
    static final long FIRST_BYTE_MILLIS = 2000;

    /** The refused connections whose last frame may drain at once; beyond, the oldest is closed without waiting. */
    static final int MAX_CLOSING = 64;

    /** The most bytes rank 0 reads and discards from one refused connection before it closes it. */
    private static final int DRAIN_BYTES = 65536;

    private byte[] serve(Supplier<byte[]> idSupplier) {
        Serving serving = new Serving(System.nanoTime() + timeout.toNanos());
        try {
            return serving.run(idSupplier);
        } finally {
            serving.closeAll();
        }
    }

    /** Where a connection to rank 0 stands. */
    private enum Stage {
        /** Has its challenge; has proved nothing yet. */
        CHALLENGED,
        /** Proved the job's secret; its sealed HELLO is awaited. */
        AUTHENTICATED,
        /** Holds a rank; waits for the id. */
        JOINED,
        /** Refused or let go: its last frame was sent, what it still sends is read and discarded until it closes. */
        CLOSING,
        /** Closed. */
        CLOSED
    }

    /**
     * One connection to rank 0. Its bytes are read without blocking into a buffer of at most one frame: the header
     * first, whose length is checked before the payload is read, then exactly the payload.
     */
    private static final class Conn {
        final java.nio.channels.SocketChannel channel;
        final String from;
        /** When it was accepted, on {@link Refusals#now()}'s clock. */
        final long accepted;
        final long acceptedNanos;
        /** Its whole handshake's deadline, from accept to a HELLO that holds. */
        final long deadline;
        final long handshakeMillis;
        /** When it must have sent its first byte. */
        final long firstByteBy;
        final byte[] nonce = new byte[RendezvousWire.NONCE_BYTES];
        final ByteBuffer header = ByteBuffer.allocate(RendezvousWire.HEADER_BYTES);
        ByteBuffer payload;
        int type;
        long bytes;
        Stage stage = Stage.CHALLENGED;
        RecordSeal seal;
        int rank = -1;
        long closeBy;
        int drained;

        Conn(java.nio.channels.SocketChannel channel, String from, long accepted, long now, long deadline,
                long handshakeMillis) {
            this.channel = channel;
            this.from = from;
            this.accepted = accepted;
            this.acceptedNanos = now;
            this.deadline = deadline;
            this.handshakeMillis = handshakeMillis;
            this.firstByteBy = now + TimeUnit.MILLISECONDS.toNanos(FIRST_BYTE_MILLIS);
            RANDOM.nextBytes(nonce);
        }

        /** The earliest either deadline could be: accept order is the order of these. */
        long earliest() {
            return Math.min(deadline, firstByteBy);
        }

        /** Its next deadline: the handshake's, or the first byte's while it has sent none. */
        long next() {
            return bytes == 0 ? earliest() : deadline;
        }

        /** The next whole frame that has arrived, or null; never blocks. */
        RendezvousWire.Frame frame() throws IOException {
            while (true) {
                ByteBuffer into = payload != null ? payload : header;
                if (into.hasRemaining()) {
                    int n = channel.read(into);
                    if (n < 0) {
                        throw new EOFException();
                    }
                    bytes += n;
                    if (into.hasRemaining()) {
                        return null;
                    }
                }
                if (payload == null) {
                    RendezvousWire.Frame h = RendezvousWire.readHeader(header.array());
                    type = h.type;
                    payload = ByteBuffer.wrap(h.payload);
                    continue;
                }
                RendezvousWire.Frame f = new RendezvousWire.Frame(type, payload.array());
                header.clear();
                payload = null;
                return f;
            }
        }

        /** Writes {@code frame} without blocking; a frame this small fits a fresh socket's buffer. */
        void send(byte[] frame) throws IOException {
            ByteBuffer b = ByteBuffer.wrap(frame);
            channel.write(b);
            if (b.hasRemaining()) {
                throw new IOException("could not send a " + frame.length + "-byte frame at once");
            }
        }

        void close() {
            stage = Stage.CLOSED;
            closeQuietly(channel);
        }
    }

    /**
     * Rank 0's side of one TCP rendezvous: one thread and one selector, never a blocking read or write on one
     * connection, so that its deadlines and the time-out are checked whatever any connection does.
     */
    private final class Serving {
        final long deadline;
        final Map<Integer, Conn> peers = new TreeMap<>();
        /** The connections with a challenge that have not joined, in accept order. */
        final java.util.LinkedHashSet<Conn> waiting = new java.util.LinkedHashSet<>();
        /** The refused connections draining, oldest first. */
        final java.util.ArrayDeque<Conn> closing = new java.util.ArrayDeque<>();
        final Strangers refused = new Strangers(new Refusals(LOG));
        final ByteBuffer sink = ByteBuffer.allocate(4096);
        java.nio.channels.ServerSocketChannel server;
        java.nio.channels.Selector selector;

        Serving(long deadline) {
            this.deadline = deadline;
        }

        byte[] run(Supplier<byte[]> idSupplier) {
            try {
                listen();
                while (peers.size() < worldSize - 1) {
                    long remaining = remainingMillis(deadline);
                    if (remaining <= 0) {
                        throw timeoutOnServer();
                    }
                    String gaveUp = abandonWhen == null ? null : abandonWhen.get();
                    if (gaveUp != null) {
                        abortPeers("rendezvous aborted by rank 0: " + gaveUp, null);
                        throw new RendezvousException("rank 0 gave up the rendezvous: " + gaveUp);
                    }
                    long wait = abandonWhen == null ? remaining : Math.min(remaining, ABANDON_POLL_MILLIS);
                    long next = nextDeadline();
                    if (next != Long.MAX_VALUE) {
                        wait = Math.min(wait, TimeUnit.NANOSECONDS.toMillis(next - System.nanoTime()) + 1);
                    }
                    selector.select(Math.max(1, wait));
                    // what arrived first, then new connections (which may take an unproven one's slot), then deadlines
                    for (java.nio.channels.SelectionKey k : selector.selectedKeys()) {
                        if (k.isValid() && k.attachment() instanceof Conn c) {
                            readable(c);
                        }
                    }
                    selector.selectedKeys().clear();
                    acceptAll();
                    expire(System.nanoTime());
                    if (peers.size() == worldSize - 1) {
                        for (Conn c : new ArrayList<>(peers.values())) {
                            stillThere(c);   // one that left or sent more since it joined frees its rank
                        }
                    }
                }
                // Stop listening before any peer gets the id. A peer that has it may at once connect for the next
                // rendezvous on this port; were this socket still open, the kernel could complete that connection's
                // handshake here and then drop it when the socket closes, without a reset: the peer would wait for a
                // CHALLENGE that never comes. Once closed, the peer is refused until the next server listens.
                for (Conn c : waiting) {
                    c.close();   // strangers, or a rank that came twice: all ranks have joined
                }
                waiting.clear();
                server.close();
                selector.close();   // a registered channel's socket closes only once its selector lets it go
                byte[] id;
                try {
                    id = newId(idSupplier);
                } catch (RendezvousException e) {
                    abortPeers(e.getMessage(), null);
                    throw e;
                }
                for (Map.Entry<Integer, Conn> p : peers.entrySet()) {
                    Conn c = p.getValue();
                    try {
                        c.send(RendezvousWire.bytes(c.seal, RendezvousWire.ID, id));
                    } catch (IOException e) {
                        abortPeers("rank 0 could not send the unique id to rank " + p.getKey() + ": " + e, null);
                        throw new RendezvousException("rank 0 could not send the unique id to rank " + p.getKey()
                                + " at " + c.from + ": " + e + "; that rank may have timed out or died", e);
                    }
                }
                LOG.info("rank 0 sent the unique id to ranks 1..{}", worldSize - 1);
                return id;
            } catch (IOException e) {
                abortPeers("rank 0 failed: " + e, null);
                throw new RendezvousException("rank 0 rendezvous failed: " + e, e);
            }
        }

        private void listen() throws IOException {
            server = java.nio.channels.ServerSocketChannel.open();
            server.setOption(java.net.StandardSocketOptions.SO_REUSEADDR, true);
            List<String> why = new ArrayList<>();
            InetAddress where = bindAddress != null ? bindAddress : bindFor(host, bindSetting, why);
            why.forEach(LOG::info);
            if (secret == null) {
                sayUnauthenticated();
            }
            InetSocketAddress bind = new InetSocketAddress(where, port);
            try {
                server.bind(bind, Math.max(50, worldSize));
            } catch (IOException e) {
                throw new RendezvousException("rank 0 cannot listen on " + describe(bind) + " for the rendezvous: " + e
                        + (e instanceof java.net.BindException ? "; port " + port + " is taken on this host (by another"
                        + " job whose rank 0 shares this node, or another process): give this job another MASTER_PORT"
                        + " (it moves all of nccl4j's ports, docs/ports.md), or end the process holding it"
                        : "; choose a free port (MASTER_PORT) or stop the process holding it"), e);
            }
            server.configureBlocking(false);
            selector = java.nio.channels.Selector.open();
            server.register(selector, java.nio.channels.SelectionKey.OP_ACCEPT);
            InetSocketAddress local = (InetSocketAddress) server.getLocalAddress();
            LOG.info("rank 0 waiting on {} for {} peers", describe(local), worldSize - 1);
            if (onListening != null) {
                onListening.accept(local);
            }
        }

        /** The nearest deadline of a waiting or draining connection, or {@link Long#MAX_VALUE}. */
        private long nextDeadline() {
            long best = Long.MAX_VALUE;
            for (Conn c : waiting) {
                if (best != Long.MAX_VALUE && c.earliest() - best >= 0) {
                    break;   // accept order: the later ones' deadlines are later still
                }
                best = best == Long.MAX_VALUE || c.next() - best < 0 ? c.next() : best;
            }
            Conn first = closing.peekFirst();
            if (first != null && (best == Long.MAX_VALUE || first.closeBy - best < 0)) {
                best = first.closeBy;
            }
            return best;
        }

        /** Refuses or lets go of the connections whose deadline passed, and closes the drained ones. */
        private void expire(long now) {
            List<Conn> due = new ArrayList<>();
            for (Conn c : waiting) {
                if (c.earliest() - now > 0) {
                    break;
                }
                if (c.next() - now <= 0) {
                    due.add(c);
                }
            }
            for (Conn c : due) {
                if (c.deadline - now <= 0) {
                    refuse(c, "no HELLO within " + c.handshakeMillis + " ms");
                } else {
                    letGo(c, "it sent nothing within " + FIRST_BYTE_MILLIS + " ms of its challenge");
                }
            }
            while (!closing.isEmpty() && closing.peekFirst().closeBy - now <= 0) {
                Conn c = closing.pollFirst();
                LOG.debug("{} sent more after its last frame for {} ms; closed", c.from, DRAIN_MILLIS);
                c.close();
            }
        }

        /** Accepts every connection the backlog holds; each gets its challenge. */
        private void acceptAll() throws IOException {
            java.nio.channels.SocketChannel ch;
            while ((ch = server.accept()) != null) {
                String from = String.valueOf(ch.socket().getRemoteSocketAddress());
                if (waiting.size() >= maxPending && !makeRoom(from)) {
                    closeQuietly(ch);
                    continue;
                }
                long now = System.nanoTime();
                long until = now + handshakeTimeout.toNanos();
                Conn c = new Conn(ch, from, refused.say.now(), now, Math.min(deadline, until),
                        until <= deadline ? handshakeTimeout.toMillis() : Math.max(1, remainingMillis(deadline)));
                try {
                    ch.configureBlocking(false);
                    ch.socket().setTcpNoDelay(true);
                    c.send(RendezvousWire.bytes(null, secret != null ? RendezvousWire.AUTH_CHALLENGE
                            : RendezvousWire.CHALLENGE, c.nonce));
                    ch.register(selector, java.nio.channels.SelectionKey.OP_READ, c);
                    waiting.add(c);
                } catch (IOException e) {
                    note(refused, from + ": " + e);
                    refused.say.refused("rank 0 dropped a connection from " + from + ": " + e);
                    c.close();
                }
            }
        }

        /**
         * The waiting slots are full: lets go of the connection that has waited longest without proving anything (no
         * proof of the secret, no HELLO that holds), after reading what it sent meanwhile. Returns false when every
         * waiting connection has proved the secret: the new one is closed at accept.
         */
        private boolean makeRoom(String newcomer) {
            while (true) {
                Conn victim = null;
                for (Conn c : waiting) {
                    if (c.stage == Stage.CHALLENGED) {
                        victim = c;
                        break;
                    }
                }
                if (victim == null) {
                    if (refused.say.flooded()) {   // one line per flood
                        LOG.warn("rank 0 closed a connection from {} at accept: {} connections are already waiting to"
                                + " identify themselves, each having proved the job's secret; further ones are closed"
                                + " at accept without a line until fewer wait", newcomer, waiting.size());
                        note(refused, newcomer + ": closed at accept, " + waiting.size() + " connections already"
                                + " waiting");
                    }
                    return false;
                }
                readable(victim);   // its answer may have come since the selector looked
                if (victim.stage != Stage.CHALLENGED) {
                    if (waiting.size() < maxPending) {
                        return true;
                    }
                    continue;
                }
                long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - victim.acceptedNanos);
                if (refused.say.flooded()) {
                    LOG.warn("rank 0 let go of the connection from {}, which had waited {} ms without proving anything,"
                            + " for a new one from {}: {} connections are already waiting to identify themselves; for"
                            + " each new one, the one that has waited longest without proving anything is let go"
                            + " (it may connect again), without a line until fewer wait", victim.from, waited,
                            newcomer, waiting.size());
                    note(refused, victim.from + ": let go for a new connection, " + waiting.size()
                            + " connections already waiting");
                }
                letGo(victim, "it had waited " + waited + " ms without proving anything and " + waiting.size()
                        + " connections were waiting to identify themselves");
                return true;
            }
        }

        /** Reads what a connection sent and acts on it. */
        private void readable(Conn c) {
            switch (c.stage) {
                case CLOSING -> drain(c);
                case JOINED -> stillThere(c);
                case CHALLENGED, AUTHENTICATED -> {
                    try {
                        RendezvousWire.Frame f;
                        while ((c.stage == Stage.CHALLENGED || c.stage == Stage.AUTHENTICATED)
                                && (f = c.frame()) != null) {
                            frame(c, f);
                        }
                    } catch (RendezvousWire.ProtocolException e) {
                        refuse(c, e.getMessage());
                    } catch (EOFException e) {
                        note(refused, c.from + ": closed the connection before its HELLO");
                        if (c.bytes == 0) {   // connected and left without a byte: a port probe, no claim to refuse
                            LOG.debug("rank 0: the connection from {} ended without a byte", c.from);
                        } else {
                            refused.say.refused("rank 0 dropped a connection from " + c.from + ": closed before its"
                                    + " HELLO", c.accepted);
                        }
                        forget(c);
                        c.close();
                    } catch (IOException e) {
                        note(refused, c.from + ": " + e);
                        refused.say.refused("rank 0 dropped a connection from " + c.from + ": " + e, c.accepted);
                        forget(c);
                        c.close();
                    }
                }
                default -> {
                }
            }
        }

        /** One whole frame from a connection that has not joined. */
        private void frame(Conn c, RendezvousWire.Frame f) throws IOException {
            if (secret != null && c.stage == Stage.CHALLENGED) {
                authenticate(c, f);
                return;
            }
            if (secret == null && (f.type == RendezvousWire.AUTH || f.type == RendezvousWire.ERROR)) {
                refuse(c, "the peer holds a job secret but rank 0 has none: set the same " + JobSecret.VARIABLE
                        + " on every rank, or on none");
                return;
            }
            if (c.seal != null) {
                try {
                    f = RendezvousWire.open(c.seal, f);
                } catch (RecordSeal.Broken e) {
                    refuse(c, "its " + RendezvousWire.typeName(f.type) + " frame after the handshake failed its MAC ("
                            + e.getMessage() + ")");
                    return;
                }
                if (f.type == RendezvousWire.ERROR) {
                    String why = new String(f.payload, java.nio.charset.StandardCharsets.UTF_8);
                    note(refused, c.from + ": gave up: " + why);
                    refused.say.refused("rank 0 dropped a connection from " + c.from + ": it gave up: " + why,
                            c.accepted);
                    forget(c);
                    c.close();
                    return;
                }
            }
            if (f.type != RendezvousWire.HELLO) {
                throw new RendezvousWire.ProtocolException("malformed exchange: expected a HELLO frame, got "
                        + RendezvousWire.typeName(f.type));
            }
            hello(c, RendezvousWire.parseHello(f.payload));
        }

        /**
         * Checks the peer's AUTH (its answer to the AUTH_CHALLENGE) and, when it proves the job's secret, sends rank
         * 0's own proof and seals what follows.
         */
        private void authenticate(Conn c, RendezvousWire.Frame f) throws IOException {
            String fix = "set the same " + JobSecret.VARIABLE + " (or " + JobSecret.FILE_VARIABLE + ") on every rank";
            if (f.type == RendezvousWire.ERROR || f.type == RendezvousWire.HELLO) {
                refuse(c, "no proof of the job's secret: the peer has no " + JobSecret.VARIABLE + " (or runs an older"
                        + " nccl4j); " + fix);
                return;
            }
            if (f.type != RendezvousWire.AUTH || f.payload.length != RendezvousWire.AUTH_BYTES) {
                refuse(c, "malformed exchange: expected a " + RendezvousWire.AUTH_BYTES + "-byte AUTH frame, got "
                        + RendezvousWire.typeName(f.type) + " of " + f.payload.length + " bytes");
                return;
            }
            String serverNonce = RendezvousWire.hex(c.nonce);
            String clientNonce = RendezvousWire.hex(java.util.Arrays.copyOf(f.payload, RendezvousWire.NONCE_BYTES));
            String proof = RendezvousWire.hex(java.util.Arrays.copyOfRange(f.payload, RendezvousWire.NONCE_BYTES,
                    RendezvousWire.AUTH_BYTES));
            if (!secret.verify(RendezvousWire.PURPOSE, serverNonce, clientNonce, "client", proof)) {
                refuse(c, "wrong proof of the job's secret: the peer's " + JobSecret.VARIABLE + " differs from rank"
                        + " 0's (or it is not of this job); " + fix);
                return;
            }
            c.send(RendezvousWire.bytes(null, RendezvousWire.AUTH_OK, RendezvousWire.unhex(
                    secret.prove(RendezvousWire.PURPOSE, serverNonce, clientNonce, "server"))));
            c.seal = RecordSeal.of(secret, RendezvousWire.PURPOSE, serverNonce, clientNonce, true);
            c.stage = Stage.AUTHENTICATED;
        }

        /** A HELLO: the connection joins with its rank, is refused, or (with a secret) ends the rendezvous. */
        private void hello(Conn c, RendezvousWire.Hello hello) {
            String who = "rank " + hello.rank + " (" + c.from + ")";
            String setToken = "set the same " + TOKEN_VARIABLE + " (or Rendezvous.Builder.token) on every rank";
            if (token != null && hello.mac == null) {
                refuse(c, who + " sent no token but rank 0 requires one: " + setToken);
                return;
            }
            if (token == null && hello.mac != null) {
                refuse(c, who + " sent a token but rank 0 has none configured: " + setToken + ", or on none");
                return;
            }
            if (token != null && !MessageDigest.isEqual(hello.mac,
                    RendezvousWire.mac(token, c.nonce, hello.rank, hello.worldSize))) {
                refuse(c, who + " presented a token that does not match rank 0's: " + setToken);
                return;
            }
            if (hello.worldSize != worldSize) {
                if (c.seal == null) {
                    // anyone may send this without a secret: refused, and the rendezvous goes on
                    refuse(c, "world size mismatch: " + c.from + " claims rank " + hello.rank + " of world size "
                            + hello.worldSize + " but rank 0 has world size " + worldSize + "; start every rank with"
                            + " the same world size (without a job secret, rank 0 cannot tell a rank from a stranger,"
                            + " so it refuses the claim and goes on waiting)");
                    return;
                }
                String fatal = "world size mismatch: " + who + " has world size " + hello.worldSize + " but rank 0"
                        + " has " + worldSize + "; start every rank with the same world size";
                abortPeers("rendezvous aborted by rank 0: " + fatal, c, fatal);
                throw new RendezvousException("rank 0: " + fatal);
            }
            if (hello.rank == 0) {
                refuse(c, "rank conflict: " + c.from + " also claims rank 0; rank 0 is the process serving on this"
                        + " port. Check each process's rank");
                return;
            }
            if (hello.rank < 0 || hello.rank >= worldSize) {
                refuse(c, "rank out of range: " + c.from + " claims rank " + hello.rank + " but ranks run from 0 to "
                        + (worldSize - 1));
                return;
            }
            Conn holder = peers.get(hello.rank);
            if (holder != null && stillThere(holder)) {
                refuse(c, "duplicate rank: " + c.from + " claims rank " + hello.rank + ", already taken by "
                        + holder.from + " (still connected); two processes were given the same rank"
                        + (secret == null ? ", or a stranger took it: set " + JobSecret.VARIABLE + " on every rank so"
                        + " that only the job's ranks can join" : ""));
                return;
            }
            waiting.remove(c);
            c.stage = Stage.JOINED;
            c.rank = hello.rank;
            peers.put(hello.rank, c);
            if (stillThere(c)) {
                LOG.debug("rank 0: rank {} joined from {} ({} of {})", hello.rank, c.from, peers.size(),
                        worldSize - 1);
            }
        }

        /**
         * Whether a joined connection is still there and quiet. One that ended leaves its rank free again (said
         * through the refusals: a stranger that claims a rank and leaves, again and again, is one line per burst);
         * one that sent more after its HELLO is refused and its rank is free again.
         */
        private boolean stillThere(Conn c) {
            int n = readAway(c);
            if (n == 0) {
                return true;
            }
            peers.remove(c.rank, c);
            if (n < 0) {
                note(refused, c.from + ": rank " + c.rank + " left before the id");
                refused.say.refused("rank 0: rank " + c.rank + " (" + c.from + ") closed its connection before the"
                        + " unique id; its rank is free again and rank 0 waits for it", c.accepted);
                c.close();
            } else {
                refuse(c, "second HELLO: rank " + c.rank + " (" + c.from + ") sent more after its HELLO; one HELLO"
                        + " per connection");
            }
            return false;
        }

        /** No longer waiting or joined. */
        private void forget(Conn c) {
            waiting.remove(c);
            if (c.rank >= 0) {
                peers.remove(c.rank, c);
            }
        }

        /** Refuses a connection: notes it, says it (one WARN per burst), sends it an ERROR and lets it drain. */
        private void refuse(Conn c, String why) {
            note(refused, c.from + ": " + why);
            refused.say.refused("rank 0 refused a connection from " + c.from + ": " + why, c.accepted);
            finish(c, RendezvousWire.ERROR, why);
        }

        /** Lets go of a connection that proved nothing: says it, sends it a RETRY (it may connect again). */
        private void letGo(Conn c, String why) {
            note(refused, c.from + ": let go: " + why);
            refused.say.refused("rank 0 let go of a connection from " + c.from + ": " + why + "; it may connect"
                    + " again", c.accepted);
            finish(c, RendezvousWire.RETRY, "rank 0 let go of this connection: " + why + "; connect again");
        }

        /**
         * Sends the last frame and ends the output; what the peer still sends is read and discarded, on the selector,
         * for at most {@value Rendezvous#DRAIN_MILLIS} ms in all and {@value Rendezvous#DRAIN_BYTES} bytes, so that
         * the close is no reset that could discard the frame before the peer reads it, and no connection holds the
         * serving thread.
         */
        private void finish(Conn c, int type, String message) {
            forget(c);
            try {
                c.send(RendezvousWire.messageBytes(c.seal, type, message));
                c.channel.shutdownOutput();
            } catch (IOException e) {
                LOG.debug("could not send the {} to {}: {}", RendezvousWire.typeName(type), c.from, e.toString());
                c.close();
                return;
            }
            c.stage = Stage.CLOSING;
            c.closeBy = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DRAIN_MILLIS);
            closing.addLast(c);
            if (closing.size() > MAX_CLOSING) {
                closing.pollFirst().close();
            }
            drain(c);
        }

        private void drain(Conn c) {
            int n;
            do {
                n = readAway(c);
                if (n == 0) {
                    return;
                }
            } while (!drainedOut(c, n));
            closing.remove(c);
            c.close();
        }

        /** Reads what {@code c} sent into the sink, to be thrown away: the bytes read, or -1 at its end or reset. */
        private int readAway(Conn c) {
            try {
                sink.clear();
                return c.channel.read(sink);
            } catch (IOException e) {
                return -1;
            }
        }

        /** Counts {@code n} bytes drained from {@code c}: whether its drain is over (ended, or the most read). */
        private boolean drainedOut(Conn c, int n) {
            c.drained += Math.max(n, 0);
            return n < 0 || c.drained >= DRAIN_BYTES;
        }

        /**
         * Tells every joined peer (and {@code also}, with its own message, when not null) that the rendezvous ends,
         * then lets them drain for at most {@value Rendezvous#DRAIN_MILLIS} ms in all, and closes them.
         */
        private void abortPeers(String message, Conn also, String alsoMessage) {
            List<Conn> told = new ArrayList<>();
            if (also != null) {
                forget(also);
                told.add(also);
            }
            told.addAll(peers.values());
            peers.clear();
            java.nio.channels.Selector drain = null;
            try {
                drain = java.nio.channels.Selector.open();
                for (Conn c : told) {
                    try {
                        c.send(RendezvousWire.messageBytes(c.seal, RendezvousWire.ERROR,
                                c == also ? alsoMessage : message));
                        c.channel.shutdownOutput();
                        c.channel.register(drain, java.nio.channels.SelectionKey.OP_READ, c);
                    } catch (IOException e) {
                        LOG.debug("could not send the error to {}: {}", c.from, e.toString());
                        c.close();
                    }
                }
                long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DRAIN_MILLIS);
                while (!drain.keys().isEmpty()) {
                    long left = TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime());
                    if (left <= 0) {
                        break;
                    }
                    drain.select(left);
                    for (java.nio.channels.SelectionKey k : drain.selectedKeys()) {
                        Conn c = (Conn) k.attachment();
                        if (drainedOut(c, readAway(c))) {
                            k.cancel();
                            c.close();
                        }
                    }
                    drain.selectedKeys().clear();
                }
            } catch (IOException e) {
                LOG.debug("rank 0 could not wait for its peers to read the error: {}", e.toString());
            } finally {
                for (Conn c : told) {
                    c.close();
                }
                closeQuietly(drain);
            }
        }

        private void abortPeers(String message, Conn also) {
            abortPeers(message, also, message);
        }

        private RendezvousException timeoutOnServer() {
            TreeSet<Integer> missing = new TreeSet<>();
            for (int r = 1; r < worldSize; r++) {
                if (!peers.containsKey(r)) {
                    missing.add(r);
                }
            }
            String message = "rank 0 timed out after " + seconds(timeout) + " waiting for " + missing.size() + " of "
                    + (worldSize - 1) + " peers: missing ranks " + missing + ", joined ranks " + peers.keySet()
                    + (refused.listed.isEmpty() ? "" : "; refused connections: " + String.join("; ", refused.listed))
                    + ". Check that the missing ranks started and reach this host on port " + port
                    + ", or raise the timeout";
            abortPeers("rendezvous aborted by rank 0: timed out waiting for ranks " + missing, null);
            return new RendezvousException(message);
        }

        void closeAll() {
            for (Conn c : peers.values()) {
                c.close();
            }
            for (Conn c : waiting) {
                c.close();
            }
            for (Conn c : closing) {
                c.close();
            }
            closeQuietly(selector);
            closeQuietly(server);
        }
    }

    /**
     * The address rank 0 listens on: {@value #BIND_VARIABLE} ({@code any} for every interface, else an address of
     * this host) when set; else {@code masterAddr} when it is an address of this host; else every interface, with a
     * line for {@code info} saying why. The liveness channel binds by the same rule, so that both ports listen on one
     * address.
     *
     * @param masterAddr {@code MASTER_ADDR}, or null
     * @param setting the value of {@value #BIND_VARIABLE}, or null
     * @param info receives a line saying why rank 0 listens on every interface, when it does
     * @return the address; the wildcard address for every interface
     * @throws RendezvousException when {@code setting} is not an address
     */
    public static InetAddress bindFor(String masterAddr, String setting, List<String> info) {
        InetAddress wildcard = new InetSocketAddress(0).getAddress();
        if (setting != null && !setting.isBlank()) {
            String v = setting.strip();
            if (v.equalsIgnoreCase("any")) {
                return wildcard;
            }
            try {
                return InetAddress.getByName(v);
            } catch (java.net.UnknownHostException e) {
                throw new RendezvousException(BIND_VARIABLE + "=" + v + " is not an address: use any, or an address"
                        + " of this host");
            }
        }
        if (masterAddr == null || masterAddr.isBlank()) {
            return wildcard;
        }
        InetAddress a;
        try {
            a = InetAddress.getByName(masterAddr);
        } catch (java.net.UnknownHostException e) {
            info.add("rank 0 listens on every interface: MASTER_ADDR " + masterAddr + " does not resolve here (set "
                    + BIND_VARIABLE + " to choose the address)");
            return wildcard;
        }
        boolean local;
        try {
            local = a.isAnyLocalAddress() || a.isLoopbackAddress() || java.net.NetworkInterface.getByInetAddress(a)
                    != null;
        } catch (SocketException e) {
            local = false;
        }
        if (local) {
            return a;
        }
        info.add("rank 0 listens on every interface: MASTER_ADDR " + masterAddr + " (" + a.getHostAddress() + ") is"
                + " not an address of this host (set " + BIND_VARIABLE + " to choose the address)");
        return wildcard;
    }

    /** The refused connections rank 0's time-out lists: the first few, so that a flood cannot fill memory. */
    private static void note(Strangers refused, String what) {
        if (refused.listed.size() < 20) {
            refused.listed.add(what);
        } else if (refused.listed.size() == 20) {
            refused.listed.add("more not listed");
        }
    }

    /**
     * The connections rank 0 refused during one rendezvous: the first few listed for its time-out's message, every one
     * said through {@link Refusals} (one WARN line per burst).
     */
    private static final class Strangers {
        final List<String> listed = new ArrayList<>();
        final Refusals say;

        Strangers(Refusals say) {
            this.say = say;
        }
    }

    // ---- TCP, other ranks ----

    /** The longest rank 0 reads what a refused connection still sends, in all. */
    static final long DRAIN_MILLIS = 200;

    /** How often a wait that may be abandoned ({@link Builder#abandonWhen}) asks. */
    private static final long ABANDON_POLL_MILLIS = 20;

    /** How much longer than the timeout a connected rank waits for rank 0's answer (rank 0 may have started later). */
    private static final long ANSWER_GRACE_NANOS = TimeUnit.SECONDS.toNanos(2);

    private byte[] fetch() {
        long deadline = System.nanoTime() + timeout.toNanos();
        String target = host + ":" + port;
        String lastError = null;
        IOException lastCause = null;
        // Connection retries start fast and back off to at most 250 ms: rank 0 usually starts listening
        // within milliseconds of the others, and every millisecond here is communicator start-up time.
        long backoff = Math.min(CONNECT_BACKOFF_START_MS, Math.max(1, pollInterval.toMillis()));
        while (true) {
            long remaining = remainingMillis(deadline);
            String why = abandonWhen == null ? null : abandonWhen.get();
            if (why != null) {
                throw new RendezvousException("rank " + rank + " gave up the rendezvous with rank 0 at " + target
                        + ": " + why);
            }
            if (remaining <= 0) {
                throw new RendezvousException("rank " + rank + " could not connect to rank 0 at " + target
                        + " within " + seconds(timeout)
                        + (lastError == null ? "" : " (last error: " + lastError + ")") + "; check that rank 0"
                        + " runs, that MASTER_ADDR/MASTER_PORT name it, and that no firewall blocks the port",
                        lastCause);
            }
            Socket attempt = new Socket();
            try {
                RendezvousWire.Frame challenge = null;
                try {
                    attempt.connect(new InetSocketAddress(host, port), (int) Math.min(remaining, 10_000));
                    if (attempt.getLocalPort() == attempt.getPort()
                            && attempt.getLocalAddress().equals(attempt.getInetAddress())) {
                        // TCP's simultaneous open joins a socket to itself when nothing listens on a local port
                        throw new ConnectException("connected to itself (nothing listens on " + target + ")");
                    }
                    attempt.setTcpNoDelay(true);
                    challenge = readOnClient(attempt, attempt.getInputStream(), deadline, target, true, null);
                } catch (IOException e) {
                    // refused, or closed or reset before the CHALLENGE: not rank 0 of this rendezvous (yet); it may be
                    // the server of an earlier rendezvous on this port, closing with our connection in its backlog
                    lastError = e instanceof EarlyClose ? e.getMessage() : e.toString();
                    lastCause = e;
                }
                if (challenge != null) {
                    try {
                        return afterChallenge(attempt, challenge, deadline, target);
                    } catch (Retry e) {
                        // rank 0 let go of this connection before it proved anything (its slots were full): again
                        LOG.debug("rank {}: {}; connecting again", rank, e.getMessage());
                        lastError = e.getMessage();
                        lastCause = e;
                    } catch (IOException e) {
                        throw new RendezvousException("rank " + rank + ": rendezvous with rank 0 at " + target
                                + " failed: " + e, e);
                    }
                }
            } finally {
                closeQuietly(attempt);
            }
            sleep(Math.min(backoff, Math.max(1, remainingMillis(deadline))));
            backoff = Math.min(backoff * 2, CONNECT_BACKOFF_MAX_MS);
        }
    }

    /** The exchange after rank 0's challenge: its proof (with a secret), this rank's HELLO, and the id. */
    private byte[] afterChallenge(Socket s, RendezvousWire.Frame challenge, long deadline, String target)
            throws IOException {
        if (challenge.type != RendezvousWire.CHALLENGE && challenge.type != RendezvousWire.AUTH_CHALLENGE
                || challenge.payload.length != RendezvousWire.NONCE_BYTES) {
            throw new RendezvousException("rank " + rank + ": malformed exchange from " + target + ": expected a "
                    + RendezvousWire.NONCE_BYTES + "-byte CHALLENGE, got " + RendezvousWire.typeName(challenge.type)
                    + " of " + challenge.payload.length + " bytes");
        }
        RecordSeal seal = authenticateRankZero(s, challenge, deadline, target);
        byte[] mac = token == null ? null : RendezvousWire.mac(token, challenge.payload, rank, worldSize);
        s.getOutputStream().write(RendezvousWire.bytes(seal, RendezvousWire.HELLO,
                RendezvousWire.hello(rank, worldSize, mac)));
        // a little longer than rank 0 waits: its answer at its deadline names the ranks that never came
        RendezvousWire.Frame answer = readOnClient(s, awaitAnswer(s, deadline + ANSWER_GRACE_NANOS, target),
                deadline + ANSWER_GRACE_NANOS, target, false, seal);
        if (answer.type != RendezvousWire.ID || answer.payload.length != UNIQUE_ID_BYTES) {
            throw new RendezvousException("rank " + rank + ": malformed exchange from " + target + ": expected a "
                    + UNIQUE_ID_BYTES + "-byte ID, got " + RendezvousWire.typeName(answer.type) + " of "
                    + answer.payload.length + " bytes");
        }
        LOG.debug("rank {} received the unique id from {}", rank, target);
        return answer.payload;
    }

    /**
     * The peer's side of the authentication: with a secret, proves it, checks rank 0's proof and returns the seal of
     * the records that follow; without, only talks to a rank 0 without one and returns null. Throws, after telling
     * rank 0 with an ERROR frame where that helps.
     */
    private RecordSeal authenticateRankZero(Socket s, RendezvousWire.Frame challenge, long deadline, String target)
            throws IOException {
        boolean asked = challenge.type == RendezvousWire.AUTH_CHALLENGE;
        if (!asked && secret == null) {
            sayUnauthenticated();
            return null;
        }
        if (!asked) {
            tellRankZero(s, "rank " + rank + " holds a job secret but rank 0 has none");
            throw new RendezvousException("rank " + rank + ": rank 0 at " + target + " does not authenticate (it has"
                    + " no " + JobSecret.VARIABLE + ") but this rank has a job secret; refusing an id from an"
                    + " unauthenticated rank 0: set the same " + JobSecret.VARIABLE + " (or " + JobSecret.FILE_VARIABLE
                    + ") on every rank, or on none");
        }
        if (secret == null) {
            tellRankZero(s, "rank " + rank + " has no job secret");
            throw new RendezvousException("rank " + rank + ": rank 0 at " + target + " requires the job's secret but"
                    + " this rank has none: set " + JobSecret.VARIABLE + " (or " + JobSecret.FILE_VARIABLE + ") to"
                    + " rank 0's value on every rank");
        }
        String serverNonce = RendezvousWire.hex(challenge.payload);
        String clientNonce = JobSecret.nonce();
        byte[] auth = java.nio.ByteBuffer.allocate(RendezvousWire.AUTH_BYTES).put(RendezvousWire.unhex(clientNonce))
                .put(RendezvousWire.unhex(secret.prove(RendezvousWire.PURPOSE, serverNonce, clientNonce, "client")))
                .array();
        RendezvousWire.write(s.getOutputStream(), RendezvousWire.AUTH, auth);
        RendezvousWire.Frame ok = readOnClient(s, s.getInputStream(), deadline, target, false, null);
        if (ok.type != RendezvousWire.AUTH_OK || ok.payload.length != RendezvousWire.MAC_BYTES
                || !secret.verify(RendezvousWire.PURPOSE, serverNonce, clientNonce, "server",
                        RendezvousWire.hex(ok.payload))) {
            throw new RendezvousException("rank " + rank + ": the process at " + target + " failed to prove the job's"
                    + " secret (" + (ok.type == RendezvousWire.AUTH_OK ? "wrong proof" : "sent "
                    + RendezvousWire.typeName(ok.type) + " instead of its proof") + "): it is not this job's rank 0,"
                    + " or its " + JobSecret.VARIABLE + " differs; refusing its id");
        }
        return RecordSeal.of(secret, RendezvousWire.PURPOSE, serverNonce, clientNonce, false);
    }

    private static void tellRankZero(Socket s, String message) {
        try {
            RendezvousWire.writeError(s.getOutputStream(), message);
        } catch (IOException e) {
            LOG.debug("could not tell rank 0: {}", e.toString());
        }
    }

    /** A connection that ended before its first frame: not (yet) the rank 0 of this rendezvous; worth a retry. */
    private static final class EarlyClose extends IOException {
        private static final long serialVersionUID = 1L;

        EarlyClose(IOException cause) {
            super("the connection closed before rank 0's CHALLENGE (" + cause + ")", cause);
        }
    }

    /** Rank 0 let go of this connection before it proved anything (a RETRY frame): connect again. */
    private static final class Retry extends IOException {
        private static final long serialVersionUID = 1L;

        Retry(String message) {
            super(message);
        }
    }

    /**
     * Reads one frame from rank 0 within {@code deadline} in all, and opens it when {@code seal} is not null. A
     * time-out, a malformed frame, a frame that fails its MAC and an ERROR frame throw {@link RendezvousException}; a
     * RETRY frame throws {@link Retry}. The end of the stream or a reset throws {@link EarlyClose} for the
     * {@code first} frame, when rank 0 of this rendezvous has not spoken yet, and {@link RendezvousException} after it.
     */
    private RendezvousWire.Frame readOnClient(Socket s, InputStream in, long deadline, String target, boolean first,
            RecordSeal seal) throws IOException {
        if (remainingMillis(deadline) <= 0) {
            throw clientTimeout(target);
        }
        RendezvousWire.Frame f;
        try {
            f = RendezvousWire.read(s, in, deadline);
        } catch (SocketTimeoutException e) {
            throw clientTimeout(target);
        } catch (RendezvousWire.ProtocolException e) {
            throw new RendezvousException("rank " + rank + ": " + e.getMessage() + " (from " + target + ")", e);
        } catch (EOFException e) {
            if (first) {
                throw new EarlyClose(e);
            }
            throw new RendezvousException("rank " + rank + ": rank 0 at " + target + " closed the connection without"
                    + " an answer; see rank 0's log", e);
        } catch (SocketException e) {
            if (first) {
                throw new EarlyClose(e);
            }
            throw e;
        }
        if (seal != null) {
            try {
                f = RendezvousWire.open(seal, f);
            } catch (RecordSeal.Broken e) {
                String says = "rank " + rank + ": the " + (f.type == RendezvousWire.ID ? "unique id"
                        : RendezvousWire.typeName(f.type)) + " frame from rank 0 failed its MAC (record #" + e.record()
                        + " after the handshake): it was forged, replayed or altered between rank 0 at " + target
                        + " and this rank; refusing it";
                throw f.type == RendezvousWire.ID ? new UniqueIdCheckException(says, e)
                        : new RendezvousException(says, e);
            }
        }
        if (f.type == RendezvousWire.ERROR) {
            throw new RendezvousException("rank " + rank + ": rank 0 at " + target + " refused: "
                    + new String(f.payload, java.nio.charset.StandardCharsets.UTF_8));
        }
        if (f.type == RendezvousWire.RETRY) {
            throw new Retry(new String(f.payload, java.nio.charset.StandardCharsets.UTF_8));
        }
        return f;
    }

    /**
     * The stream of rank 0's answer, once its first byte has come: while it waits, asks {@link Builder#abandonWhen}
     * every {@value #ABANDON_POLL_MILLIS} ms (rank 0 may be waiting for a rank that is gone, or be gone itself), and
     * gives up with its reason. Without it, the connection's own stream.
     */
    private InputStream awaitAnswer(Socket s, long deadline, String target) throws IOException {
        InputStream in = s.getInputStream();
        if (abandonWhen == null) {
            return in;
        }
        java.io.PushbackInputStream back = new java.io.PushbackInputStream(in, 1);
        while (true) {
            String why = abandonWhen.get();
            if (why != null) {
                throw new RendezvousException("rank " + rank + " gave up waiting for the unique id from rank 0 at "
                        + target + ": " + why);
            }
            long remaining = remainingMillis(deadline);
            if (remaining <= 0) {
                throw clientTimeout(target);
            }
            s.setSoTimeout((int) Math.max(1, Math.min(remaining, ABANDON_POLL_MILLIS)));
            try {
                int b = back.read();
                if (b >= 0) {
                    back.unread(b);
                }
                return back;   // a byte, or the end: the frame's reader says which
            } catch (SocketTimeoutException e) {
                // nothing yet: ask again
            }
        }
    }

    private RendezvousException clientTimeout(String target) {
        return new RendezvousException("rank " + rank + " connected to rank 0 at " + target + " but got no unique id"
                + " within " + seconds(timeout) + "; rank 0 is probably still waiting for other ranks (its error"
                + " lists the missing ones), or raise the timeout");
    }

    // ---- file ----

    private byte[] viaFile(Supplier<byte[]> idSupplier) {
        AtomicLong completed = FILE_EXCHANGES.computeIfAbsent(
                new FileSequence(file.toAbsolutePath().normalize(), runId, rank), k -> new AtomicLong());
        long generation = completed.get() + 1;
        byte[] id = rank == 0 ? writeFile(idSupplier, generation) : readFile(generation);
        arrive(generation);
        // only a rendezvous that completed counts: a retry after a failure waits for the same generation
        completed.accumulateAndGet(generation, Math::max);
        return id;
    }

    /** This rank's arrival marker of {@code generation}: {@code <file>.<run>.g<generation>.rank<r>}. */
    private Path marker(long generation, int r) {
        String run = java.util.HexFormat.of().formatHex(runHash(), 0, 4);
        return file.resolveSibling(file.getFileName() + "." + run + ".g" + generation + ".rank" + r);
    }

    /** The generation of this rendezvous's last file exchange, for {@link #awaitArrivals}; 0 before one. */
    private long arrivedGeneration;

    /**
     * Every rank leaves a marker beside the file ({@code host pid}), so that {@link #awaitArrivals} can name a rank
     * that never came. The markers of the previous generation are removed (the communicator made between two
     * rendezvous synchronized every rank); the last generation's stay, a few bytes each.
     */
    private void arrive(long generation) {
        try {
            Files.deleteIfExists(marker(generation - 1, rank));
            Files.writeString(marker(generation, rank), LaunchInfo.localHost() + " "
                    + ProcessHandle.current().pid() + "\n");
        } catch (IOException e) {
            throw new RendezvousException("rank " + rank + " cannot write its arrival marker beside " + file + ": " + e
                    + "; check that the directory is shared by all ranks and writable", e);
        }
        arrivedGeneration = generation;
    }

    /**
     * After a file exchange: waits until every rank has left its arrival marker, or the deadline, so that a rank that
     * never came is named on every rank, as the TCP route names it (rank 0 there knows who connected). Returns at
     * once for the other routes. {@link org.nccl4j.Communicator#fromEnvironment} calls it before NCCL, which would
     * wait for ever.
     *
     * @param deadlineNanos the deadline, as {@link System#nanoTime()}
     * @throws RendezvousException naming the ranks that never arrived and those that did (host, pid)
     */
    public void awaitArrivals(long deadlineNanos) {
        if (route != Route.FILE || arrivedGeneration == 0) {
            return;
        }
        long generation = arrivedGeneration;
        long deadline = deadlineNanos;
        while (true) {
            List<Integer> missing = new ArrayList<>();
            for (int r = 0; r < worldSize; r++) {
                if (!Files.exists(marker(generation, r))) {
                    missing.add(r);
                }
            }
            if (missing.isEmpty()) {
                return;
            }
            long remaining = remainingMillis(deadline);
            if (remaining <= 0) {
                StringBuilder came = new StringBuilder();
                for (int r = 0; r < worldSize; r++) {
                    if (!missing.contains(r)) {
                        String who;
                        try {
                            who = Files.readString(marker(generation, r)).trim();
                        } catch (IOException e) {
                            who = "?";
                        }
                        came.append(came.length() == 0 ? "" : ", ").append(r).append(" (").append(who.replace(" ",
                                ", pid ")).append(')');
                    }
                }
                throw new RendezvousException("rank " + rank + " timed out after " + seconds(timeout) + " at the file "
                        + "rendezvous " + file + ": missing ranks " + missing + " never arrived (arrived: " + came
                        + "). Check that the missing ranks started, that they see this file system, and that they "
                        + "have the same run id (" + RUN_ID_VARIABLE + "), or raise the timeout");
            }
            sleep(Math.min(remaining, Math.max(1, pollInterval.toMillis())));
        }
    }

    private byte[] writeFile(Supplier<byte[]> idSupplier, long generation) {
        byte[] id = newId(idSupplier);
        ByteBuffer b = ByteBuffer.allocate(FILE_BYTES);
        b.putInt(FILE_MAGIC).put((byte) FILE_VERSION).putInt(worldSize).putLong(generation).put(runHash()).put(id);
        CRC32 crc = new CRC32();
        crc.update(b.array(), 0, FILE_BYTES - 4);
        b.putInt((int) crc.getValue());
        Path dir = file.toAbsolutePath().getParent();
        Path tmp = null;
        try {
            Files.deleteIfExists(file);
            tmp = Files.createTempFile(dir, "." + file.getFileName() + ".", ".tmp");
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                ByteBuffer data = ByteBuffer.wrap(b.array());
                while (data.hasRemaining()) {
                    ch.write(data);
                }
                ch.force(true);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            tmp = null;
            LOG.info("rank 0 wrote the unique id to {} (generation {})", file, generation);
            return id;
        } catch (AtomicMoveNotSupportedException e) {
            throw new RendezvousException("rank 0 cannot rename atomically in " + dir + " (" + e + "); put the"
                    + " rendezvous file on a file system that supports atomic rename", e);
        } catch (IOException e) {
            throw new RendezvousException("rank 0 cannot write the rendezvous file " + file + ": " + e
                    + "; check that the directory exists, is shared by all ranks and is writable", e);
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException e) {
                    LOG.warn("could not delete the temporary file {}: {}", tmp, e.toString());
                }
            }
        }
    }

    private byte[] readFile(long generation) {
        long deadline = System.nanoTime() + timeout.toNanos();
        byte[] expected = runHash();
        String lastProblem = "the file never appeared";
        while (true) {
            byte[] content = null;
            try {
                long size = Files.size(file);
                if (size <= FILE_READ_LIMIT) {
                    content = Files.readAllBytes(file);
                } else {
                    lastProblem = fileSizeProblem(size);
                }
            } catch (NoSuchFileException e) {
                // not there yet
            } catch (IOException e) {
                lastProblem = "reading it failed: " + e;
            }
            if (content != null) {
                ByteBuffer b = ByteBuffer.wrap(content);
                int magic = content.length >= 5 ? b.getInt() : 0;
                int version = content.length >= 5 ? b.get() & 0xff : -1;
                if (magic == FILE_MAGIC && version != FILE_VERSION) {
                    lastProblem = "the file has format version " + version + " but this nccl4j reads version "
                            + FILE_VERSION + " (written by another nccl4j version?)";
                } else if (content.length != FILE_BYTES) {
                    lastProblem = fileSizeProblem(content.length);
                } else {
                    CRC32 crc = new CRC32();
                    crc.update(content, 0, FILE_BYTES - 4);
                    int size = b.getInt();
                    long written = b.getLong();
                    byte[] hash = new byte[32];
                    b.get(hash);
                    byte[] id = new byte[UNIQUE_ID_BYTES];
                    b.get(id);
                    int sum = b.getInt();
                    if (magic != FILE_MAGIC || sum != (int) crc.getValue()) {
                        lastProblem = "the file is not a valid nccl4j rendezvous file (bad magic or checksum)";
                    } else if (!MessageDigest.isEqual(hash, expected)) {
                        lastProblem = "the file present is from another run (its run id differs), so it is stale or"
                                + " belongs to another job";
                    } else if (written < generation) {
                        lastProblem = "it saw generation " + written + " of this run's file but waits for generation "
                                + generation + " (this rank's file rendezvous number " + generation + " with this path"
                                + " and run id); every rank must make the same sequence of file rendezvous with one"
                                + " path and run id";
                    } else if (written > generation) {
                        throw new RendezvousException("rank " + rank + " waits for generation " + generation + " of "
                                + file + " but rank 0 already wrote generation " + written + " of this run, so this"
                                + " rank fell behind; every rank must make the same sequence of file rendezvous with"
                                + " one path and run id, and rank 0 must not begin the next before every rank has"
                                + " read the file (ncclCommInitRank between them ensures that)");
                    } else if (size != worldSize) {
                        throw new RendezvousException("rank " + rank + ": world size mismatch: rank 0 wrote " + file
                                + " for world size " + size + " but this rank has " + worldSize
                                + "; start every rank with the same world size");
                    } else {
                        LOG.debug("rank {} read the unique id from {} (generation {})", rank, file, generation);
                        return id;
                    }
                }
            }
            long remaining = remainingMillis(deadline);
            if (remaining <= 0) {
                throw new RendezvousException("rank " + rank + " timed out after " + seconds(timeout) + " waiting for"
                        + " rank 0 to write " + file + ": " + lastProblem + ". Check that rank 0 runs, that the path is"
                        + " on a file system shared by all ranks, and that every rank has the same run id ("
                        + RUN_ID_VARIABLE + ")");
            }
            sleep(Math.min(remaining, Math.max(1, pollInterval.toMillis())));
        }
    }

    private static String fileSizeProblem(long size) {
        return "the file has " + size + " bytes, not " + FILE_BYTES + " (not an nccl4j rendezvous file?)";
    }

    private byte[] runHash() {
        return RendezvousWire.sha256("nccl4j-file-rendezvous", runId, token);
    }

    // ---- helpers ----

    private static long remainingMillis(long deadline) {
        return TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
    }

    private static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }

    private static String describe(InetSocketAddress a) {
        return (a.getAddress() == null ? a.getHostString() : a.getAddress().getHostAddress()) + ":" + a.getPort();
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RendezvousException("interrupted while waiting for the rendezvous", e);
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception e) {
                LOG.debug("close failed: {}", e.toString());
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------

    /**
     * Configures a {@link Rendezvous}. Pick one route with {@link #commId()}, {@link #tcp()},
     * {@link #tcp(String, int)} or {@link #file(Path)}. Rank and world size come from {@link #launch(LaunchInfo)} or
     * {@link #rank(int)}/{@link #worldSize(int)}, else from {@link LaunchInfo#detect()}. Not thread-safe.
     */
    public static final class Builder {
        private Route route;
        private Integer rank;
        private Integer worldSize;
        private LaunchInfo launch;
        private String host;
        private Integer port;
        private InetAddress bindAddress;
        private Consumer<InetSocketAddress> onListening;
        private String token;
        private boolean tokenSet;
        private JobSecret secret;
        private boolean secretSet;
        private String bindSetting;
        private Path file;
        private String runId;
        private Duration timeout = DEFAULT_TIMEOUT;
        private Duration handshakeTimeout = Duration.ofSeconds(10);
        /** 0: {@link #MAX_PENDING} more than the world's peers. */
        private int maxPending;
        private Duration pollInterval = Duration.ofMillis(100);
        private Map<String, String> environment;
        private ProcessEnvironment processEnvironment;
        private Supplier<String> abandonWhen;

        private Builder() {
        }

        /**
         * Asked every few milliseconds while the TCP route waits (rank 0 for its peers, a peer for rank 0 to listen):
         * when it returns a reason (say, that a rank was lost), the rendezvous ends with a
         * {@link RendezvousException} naming it, and rank 0 tells every peer connected so far, so that no rank waits
         * for one that will never come. {@link org.nccl4j.Communicator#fromEnvironment()} asks its liveness channel.
         *
         * @param reason returns why to give up, or null to go on; not null
         * @return this builder
         */
        public Builder abandonWhen(Supplier<String> reason) {
            this.abandonWhen = Objects.requireNonNull(reason, "reason");
            return this;
        }

        /**
         * Takes rank, world size, {@code MASTER_ADDR} and {@code MASTER_PORT} from {@code launch}.
         *
         * @param launch the launch information, not null
         * @return this builder
         */
        public Builder launch(LaunchInfo launch) {
            this.launch = Objects.requireNonNull(launch, "launch");
            return this;
        }

        /**
         * Sets this process's rank (0 or more, below the world size).
         *
         * @param rank this process's rank, 0 or more; {@link #build()} checks that it is below the world size
         * @return this builder
         */
        public Builder rank(int rank) {
            if (rank < 0) {
                throw new IllegalArgumentException("rank is " + rank + ": ranks are 0 or more");
            }
            this.rank = rank;
            return this;
        }

        /**
         * Sets the number of ranks (1 or more).
         *
         * @param worldSize the number of ranks, 1 or more
         * @return this builder
         */
        public Builder worldSize(int worldSize) {
            if (worldSize < 1) {
                throw new IllegalArgumentException("worldSize is " + worldSize + ": it must be 1 or more");
            }
            this.worldSize = worldSize;
            return this;
        }

        /**
         * Chooses the {@code NCCL_COMM_ID} route: nothing is exchanged; see {@link Route#COMM_ID}.
         *
         * @return this builder
         */
        public Builder commId() {
            this.route = Route.COMM_ID;
            return this;
        }

        /**
         * Chooses the TCP route to {@code MASTER_ADDR:MASTER_PORT} (from the launch or the environment).
         *
         * @return this builder
         */
        public Builder tcp() {
            this.route = Route.TCP;
            return this;
        }

        /**
         * Chooses the TCP route to {@code host:port}: rank 0 listens on {@code port} (0 picks a free port, reported
         * to {@link #onListening}); the others connect to {@code host:port}.
         *
         * @param host rank 0's host name or address, not null or empty
         * @param port the port, 1 to 65535, or 0 on rank 0 for any free port
         * @return this builder
         */
        public Builder tcp(String host, int port) {
            Objects.requireNonNull(host, "host");
            if (host.isEmpty()) {
                throw new IllegalArgumentException("host is empty: give rank 0's host name or address");
            }
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port is " + port + ": use 1 to 65535 (or 0 on rank 0 for any"
                        + " free port)");
            }
            this.route = Route.TCP;
            this.host = host;
            this.port = port;
            return this;
        }

        /**
         * Chooses the file route with the file {@code path}, on a file system shared by all ranks.
         *
         * @param path the file that carries the id, with a file name, not null
         * @return this builder
         */
        public Builder file(Path path) {
            Objects.requireNonNull(path, "path");
            if (path.getFileName() == null) {
                throw new IllegalArgumentException("path " + path + " has no file name: give a file path");
            }
            this.route = Route.FILE;
            this.file = path;
            return this;
        }

        /**
         * The address rank 0 listens on; by default {@value Rendezvous#BIND_VARIABLE} ({@code any} or an address), else
         * {@code MASTER_ADDR} when it is an address of this host, else every interface (said at INFO).
         *
         * @param address the local address to bind, not null
         * @return this builder
         */
        public Builder bindAddress(InetAddress address) {
            this.bindAddress = Objects.requireNonNull(address, "address");
            return this;
        }

        /**
         * Called on rank 0 with the bound address once it listens; useful with port 0.
         *
         * @param callback receives the address and port rank 0 listens on, not null
         * @return this builder
         */
        public Builder onListening(Consumer<InetSocketAddress> callback) {
            this.onListening = Objects.requireNonNull(callback, "callback");
            return this;
        }

        /**
         * The token that every rank must share (by default {@code NCCL4J_RENDEZVOUS_TOKEN}, or none); null for none.
         * Over TCP it proves each peer belongs to the job; in the file route it is mixed into the run hash.
         *
         * @param token the shared token, not empty; null for none (the environment variable is then not read)
         * @return this builder
         */
        public Builder token(String token) {
            if (token != null && token.isEmpty()) {
                throw new IllegalArgumentException("token is empty: give a non-empty token, or null for none");
            }
            this.token = token;
            this.tokenSet = true;
            return this;
        }

        /**
         * The job's secret that authenticates every connection of the TCP route both ways (by default
         * {@link JobSecret#fromEnvironment()}: {@code NCCL4J_JOB_SECRET} or {@code NCCL4J_JOB_SECRET_FILE}); null
         * for none (the environment is then not read). See {@link JobSecret} and {@code RendezvousWire}.
         *
         * @param secret the job's secret, the same on every rank; null for none
         * @return this builder
         */
        public Builder jobSecret(JobSecret secret) {
            this.secret = secret;
            this.secretSet = true;
            return this;
        }

        /**
         * The run id of the file route: the same on every rank of this run, different between runs.
         *
         * @param runId the run id, not null or empty
         * @return this builder
         */
        public Builder runId(String runId) {
            Objects.requireNonNull(runId, "runId");
            if (runId.isEmpty()) {
                throw new IllegalArgumentException("runId is empty: give an id unique to this run");
            }
            this.runId = runId;
            return this;
        }

        /**
         * How long to wait for all ranks (default 300 s); positive.
         *
         * @param timeout the time to wait, positive
         * @return this builder
         */
        public Builder timeout(Duration timeout) {
            this.timeout = positive("timeout", timeout);
            return this;
        }

        /**
         * How long rank 0 waits for one connection's HELLO before dropping it (default 10 s), in all from its accept,
         * however it trickles its bytes; a connection that sends nothing at all is let go after 2 s already (when
         * that is shorter); positive.
         *
         * @param timeout the time to wait for one HELLO, positive
         * @return this builder
         */
        public Builder handshakeTimeout(Duration timeout) {
            this.handshakeTimeout = positive("handshakeTimeout", timeout);
            return this;
        }

        /**
         * The file route's polling interval and the TCP route's first reconnect delay (default 100 ms); positive.
         *
         * @param interval the interval, positive
         * @return this builder
         */
        public Builder pollInterval(Duration interval) {
            this.pollInterval = positive("pollInterval", interval);
            return this;
        }

        /**
         * The connections that may wait to identify themselves at once (tests); otherwise 16 more than the world's
         * peers, so that every peer may arrive at once.
         */
        Builder maxPending(int n) {
            this.maxPending = Math.max(1, n);
            return this;
        }

        /** Environment variables for defaults (tests); System.getenv() otherwise. */
        Builder environment(Map<String, String> env) {
            this.environment = Objects.requireNonNull(env, "env");
            return this;
        }

        /** The live environment read for NCCL_COMM_ID (tests). */
        Builder processEnvironment(ProcessEnvironment env) {
            this.processEnvironment = Objects.requireNonNull(env, "env");
            return this;
        }

        private static Duration positive(String name, Duration d) {
            Objects.requireNonNull(d, name);
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " is " + d + ": it must be positive");
            }
            return d;
        }

        /**
         * Checks the configuration and returns the rendezvous.
         *
         * @return the rendezvous, ready for {@link Rendezvous#exchange}
         * @throws IllegalStateException when no route was chosen, or the route lacks its address, port or run id
         * @throws IllegalArgumentException when the rank is not below the world size, or a launch variable is bad
         */
        public Rendezvous build() {
            if (route == null) {
                throw new IllegalStateException("no route chosen: call commId(), tcp(), tcp(host, port) or file(path)");
            }
            Map<String, String> env = environment != null ? environment : System.getenv();
            LaunchInfo l = launch;
            boolean incomplete = rank == null || worldSize == null
                    || route == Route.TCP && (host == null || port == null);
            if (l == null && incomplete) {
                // the JVM's own environment may need the GPU count (PET_NPROC_PER_NODE=auto); a given map is a test's
                l = environment == null ? LaunchInfo.detect() : LaunchInfo.detect(env);
            }
            int r = rank != null ? rank : l.rank();
            int n = worldSize != null ? worldSize : l.worldSize();
            if (r >= n) {
                throw new IllegalArgumentException("rank " + r + " is not below the world size " + n);
            }
            String h = host;
            int p = port != null ? port : -1;
            if (route == Route.TCP) {
                if (h == null) {
                    h = l.masterAddr().orElseThrow(() -> new IllegalStateException("the TCP route needs rank 0's"
                            + " address: set MASTER_ADDR or call tcp(host, port)"));
                }
                if (p < 0) {
                    p = l.masterPort().orElseThrow(() -> new IllegalStateException("the TCP route needs a port: set"
                            + " MASTER_PORT or call tcp(host, port)"));
                }
                if (p == 0 && r != 0 && n > 1) {
                    throw new IllegalStateException("rank " + r + " cannot connect to port 0: give the port rank 0"
                            + " listens on (see onListening)");
                }
            }
            String t = tokenSet ? token : emptyToNull(env.get(TOKEN_VARIABLE));
            String run = runId;
            if (route == Route.FILE && run == null) {
                run = deriveRunId(env);
                if (run == null) {
                    throw new IllegalStateException("the file route needs a run id, the same on every rank of this run"
                            + " and different from earlier runs, to tell this run's file from a stale one: call"
                            + " runId(...) or set " + RUN_ID_VARIABLE);
                }
            }
            ProcessEnvironment pe = processEnvironment != null ? processEnvironment
                    : route == Route.COMM_ID ? ProcessEnvironment.liveOrJvmCopy() : null;
            if (!secretSet && route == Route.TCP) {
                secret = environment != null ? JobSecret.from(environment) : JobSecret.fromEnvironment();
            }
            bindSetting = env.get(BIND_VARIABLE);
            return new Rendezvous(this, r, n, h, p, t, run, bindAddress, pe);
        }

        private static String emptyToNull(String s) {
            return s == null || s.isEmpty() ? null : s;
        }

        /** The run id from the environment, or null. */
        static String deriveRunId(Map<String, String> env) {
            String v = emptyToNull(env.get(RUN_ID_VARIABLE));
            if (v != null) {
                return v;
            }
            v = emptyToNull(env.get("TORCHELASTIC_RUN_ID"));
            if (v != null) {
                return "torchelastic:" + v + "/" + env.getOrDefault("TORCHELASTIC_RESTART_COUNT", "0");
            }
            v = emptyToNull(env.get("SLURM_JOB_ID"));
            if (v != null) {
                return "slurm:" + v + "." + env.getOrDefault("SLURM_STEP_ID", env.getOrDefault("SLURM_STEPID", ""));
            }
            v = emptyToNull(env.get("PMIX_NAMESPACE"));
            if (v != null) {
                return "pmix:" + v;
            }
            v = emptyToNull(env.get("OMPI_MCA_ess_base_jobid"));
            if (v != null) {
                return "ompi:" + v;
            }
            return null;
        }
    }
}
