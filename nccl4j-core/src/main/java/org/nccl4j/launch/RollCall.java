package org.nccl4j.launch;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who is still there once the liveness channel's hub is gone. Rank 0 serves the channel and tells every rank of each
 * loss; when rank 0 itself is lost, ranks lost with it (the other ranks of its host, say) are reported to nobody. The
 * remaining ranks then call the roll: each {@linkplain #answer answers} on a port of its own, {@code base + launch
 * rank}, and {@linkplain #ask asks} every other rank it still counts on, retrying for a window; a rank that never
 * answers within it is taken as lost. Every remaining rank asks everyone for the same window, so they agree on the
 * set as long as they all answer within it.
 *
 * <p>The exchange, one line each way (at most {@value #MAX_LINE} bytes): the asker sends
 * {@code ROLL <its launch rank> <nonce>}; the answerer replies {@code HERE <its launch rank> <proof>}, where the proof
 * is the job secret's HMAC ({@link JobSecret#prove}, purpose {@value #PURPOSE}) over the asker's nonce and the
 * answerer's rank, or {@code -} without a secret. An answer from another rank than the one asked, or without a valid
 * proof where the asker has the secret, does not count: a process that took a dead rank's port cannot answer for it.
 */
public final class RollCall implements AutoCloseable {
    /** The purpose the proofs are made for ({@link JobSecret#prove}). */
    public static final String PURPOSE = "roll-call";
    /** The longest line either side sends or reads. */
    public static final int MAX_LINE = 256;

    private static final Logger LOG = LoggerFactory.getLogger(RollCall.class);
    private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    private static final int CONNECT_MILLIS = 500;
    private static final int MAX_ASKING_THREADS = 32;
    /** The most askers answered at once; a connection over it is closed at accept. */
    private static final int MAX_ANSWERING = 16;
    /** How long {@link #close()} waits for the accepting thread to let go of the port. */
    private static final long CLOSE_WAIT_MILLIS = 2000;

    private final int launchRank;
    private final JobSecret secret;
    private final ServerSocket server;
    private volatile boolean closed;
    /** The accepting thread, once started. */
    private volatile Thread accepting;

    private RollCall(int launchRank, JobSecret secret, ServerSocket server) {
        this.launchRank = launchRank;
        this.secret = secret;
        this.server = server;
    }

    /**
     * Answers the roll for this rank on {@code port} (every address of the host) until {@link #close()}, or until
     * {@code linger} has passed: a daemon thread accepts, and each asker is answered on a thread of its own, at most
     * 16 at once (a connection over that is closed at accept), so that strangers that connect and stay silent cannot
     * keep this rank's answer from its peers.
     *
     * @param launchRank this rank's launch rank (the rank the channel's roster knows it by), 0 or more
     * @param port the port, 1 to 65535: {@code base + launchRank}, as the askers compute it
     * @param secret the job's secret, or null when the job has none
     * @param linger how long to answer at most, more than zero
     * @return the answering side; close it once the remaining ranks have their new communicator
     * @throws IOException when the port cannot be bound (another process holds it)
     * @throws IllegalArgumentException for a negative rank, a port out of range or a linger that is not positive
     */
    public static RollCall answer(int launchRank, int port, JobSecret secret, Duration linger) throws IOException {
        if (linger == null || linger.isNegative() || linger.isZero()) {
            throw new IllegalArgumentException("linger must be longer than zero, got " + linger);
        }
        return start(launchRank, port, secret, linger);
    }

    /**
     * Answers the roll for this rank on {@code port} until {@link #close()}, as {@link #answer(int, int, JobSecret,
     * Duration)} does but with no end of its own: for a rank that must answer every roll call for as long as it takes
     * part in the job (the owner closes it when it leaves).
     *
     * @param launchRank this rank's launch rank, 0 or more
     * @param port the port, 1 to 65535: {@code base + launchRank}
     * @param secret the job's secret, or null when the job has none
     * @return the answering side
     * @throws IOException when the port cannot be bound (another process holds it)
     * @throws IllegalArgumentException for a negative rank or a port out of range
     */
    public static RollCall answer(int launchRank, int port, JobSecret secret) throws IOException {
        return start(launchRank, port, secret, null);
    }

    private static RollCall start(int launchRank, int port, JobSecret secret, Duration linger) throws IOException {
        if (launchRank < 0) {
            throw new IllegalArgumentException("launchRank must be 0 or more, got " + launchRank);
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port must be 1 to 65535, got " + port + " (the base port plus launch "
                    + "rank " + launchRank + "; choose a lower MASTER_PORT)");
        }
        ServerSocket s = new ServerSocket();
        try {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(port), 64);
        } catch (IOException e) {
            s.close();
            throw new IOException("roll call: rank " + launchRank + " cannot answer on port " + port + " (MASTER_PORT"
                    + " + 200 + launch rank): " + e.getMessage() + (e instanceof java.net.BindException ? "; another"
                    + " job or process on this host holds it: give this job another MASTER_PORT (it moves all of"
                    + " nccl4j's ports, docs/ports.md), or end the process holding it" : ""), e);
        }
        RollCall r = new RollCall(launchRank, secret, s);
        long until = linger == null ? 0 : System.nanoTime() + linger.toNanos();
        Thread t = new Thread(() -> r.serve(linger != null, until), "nccl4j-roll-call-" + launchRank);
        t.setDaemon(true);
        r.accepting = t;
        t.start();
        return r;
    }

    /** @return the port answered on */
    public int port() {
        return server.getLocalPort();
    }

    /** Accepts until closed, and with {@code bounded} until {@code untilNanos} too. */
    private void serve(boolean bounded, long untilNanos) {
        java.util.concurrent.Semaphore slots = new java.util.concurrent.Semaphore(MAX_ANSWERING);
        try {
            while (!closed) {
                long left = bounded ? TimeUnit.NANOSECONDS.toMillis(untilNanos - System.nanoTime()) : 0;
                if (bounded && left <= 0) {
                    break;
                }
                server.setSoTimeout(bounded ? (int) Math.min(left, Integer.MAX_VALUE) : 0);   // 0: until closed
                Socket c;
                try {
                    c = server.accept();
                } catch (SocketTimeoutException e) {
                    continue;   // the linger ends
                }
                if (!slots.tryAcquire()) {   // more silent strangers than askers: they cannot hold the answers back
                    closeQuietly(c);
                    continue;
                }
                Thread t = new Thread(() -> {
                    try {
                        answerOne(c);
                    } finally {
                        closeQuietly(c);
                        slots.release();
                    }
                }, "nccl4j-roll-call-answer-" + launchRank);
                t.setDaemon(true);
                t.start();
            }
        } catch (IOException e) {
            LOG.debug("roll call: rank {} stops answering: {}", launchRank, e.toString());
        } finally {
            close();
        }
    }

    /** One asker: its ROLL line within a second, then this rank's answer; anything else gets no word. */
    private void answerOne(Socket c) {
        try {
            c.setSoTimeout(CONNECT_MILLIS * 2);
            String line = readLine(c.getInputStream());
            String[] f = line == null ? new String[0] : line.split(" ");
            if (f.length != 3 || !f[0].equals("ROLL")) {
                return;   // not an asker of ours: nothing is said to it
            }
            String proof = secret == null ? "-" : secret.prove(PURPOSE, f[2], Integer.toString(launchRank), "answer");
            write(c.getOutputStream(), "HERE " + launchRank + " " + proof);
        } catch (IOException e) {
            if (!closed) {
                LOG.debug("roll call: rank {} could not answer one asker: {}", launchRank, e.toString());
            }
        }
    }

    private static void closeQuietly(Socket c) {
        try {
            c.close();
        } catch (IOException e) {
            // closing
        }
    }

    /**
     * Asks every rank of {@code others} whether it is there, each again 50 ms after it did not answer, until all
     * answered or {@code window} has passed; at most 32 threads ask at once.
     *
     * @param launchRank the asking rank's launch rank
     * @param others the ranks to ask, by launch rank, with the address each answers on (its host, base + its rank);
     *        an unresolved address is looked up by the thread that asks it, again at each try
     * @param window how long to keep asking, more than zero
     * @param secret the job's secret, or null when the job has none (then answers need none)
     * @return the launch ranks that answered, sorted
     * @throws IllegalArgumentException for null arguments, or a window that is not positive
     * @throws InterruptedException when the asking thread is interrupted
     */
    public static Set<Integer> ask(int launchRank, Map<Integer, InetSocketAddress> others, Duration window,
            JobSecret secret) throws InterruptedException {
        if (others == null) {
            throw new IllegalArgumentException("others must not be null");
        }
        if (window == null || window.isNegative() || window.isZero()) {
            throw new IllegalArgumentException("window must be longer than zero, got " + window);
        }
        Set<Integer> answered = ConcurrentHashMap.newKeySet();
        Set<Integer> settled = ConcurrentHashMap.newKeySet();
        long deadline = System.nanoTime() + window.toNanos();
        CountDownLatch done = new CountDownLatch(others.size());
        int threads = Math.max(1, Math.min(MAX_ASKING_THREADS, others.size()));
        ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(threads, r -> {
            Thread t = new Thread(r, "nccl4j-roll-call-ask");
            t.setDaemon(true);
            return t;
        });
        try {
            for (Map.Entry<Integer, InetSocketAddress> e : others.entrySet()) {
                int r = Objects.requireNonNull(e.getKey(), "rank");
                InetSocketAddress at = Objects.requireNonNull(e.getValue(), "address of rank " + r);
                pool.execute(new Runnable() {
                    @Override
                    public void run() {
                        Boolean got = askOnce(launchRank, r, at, deadline, secret);
                        if (got == null && System.nanoTime() + RETRY_NANOS < deadline) {
                            pool.schedule(this, RETRY_NANOS, TimeUnit.NANOSECONDS);   // not there yet: again
                            return;
                        }
                        if (Boolean.TRUE.equals(got)) {
                            answered.add(r);
                        }
                        if (settled.add(r)) {
                            done.countDown();
                        }
                    }
                });
            }
            done.await(window.toNanos() + TimeUnit.SECONDS.toNanos(2), TimeUnit.NANOSECONDS);
        } finally {
            pool.shutdownNow();
        }
        return new TreeSet<>(answered);
    }

    /** One question: true when {@code rank} answered, false when another process did, null when none did. */
    private static Boolean askOnce(int me, int rank, InetSocketAddress at, long deadline, JobSecret secret) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
            return null;
        }
        try (Socket s = new Socket()) {
            InetSocketAddress to = at.isUnresolved() ? new InetSocketAddress(at.getHostString(), at.getPort()) : at;
            if (to.isUnresolved()) {
                LOG.debug("roll call: rank {}'s host {} does not resolve (yet)", rank, at.getHostString());
                return null;
            }
            s.connect(to, (int) Math.max(1, Math.min(CONNECT_MILLIS, left)));
            s.setSoTimeout((int) Math.max(1, Math.min(CONNECT_MILLIS * 2L, left)));
            String nonce = JobSecret.nonce();
            write(s.getOutputStream(), "ROLL " + me + " " + nonce);
            String line = readLine(s.getInputStream());
            if (line == null) {
                return null;   // closed without a word (the answerer was busy, or is ending): again
            }
            String[] f = line.split(" ");
            if (f.length == 3 && f[0].equals("HERE") && f[1].equals(Integer.toString(rank))
                    && (secret == null ? f[2].equals("-")
                    : secret.verify(PURPOSE, nonce, Integer.toString(rank), "answer", f[2]))) {
                return true;
            }
            LOG.warn("roll call: rank {} got a wrong answer for rank {} from {}: not counted", me, rank, at);
            return false;   // another process holds its port: asking again will not make it rank's
        } catch (IOException e) {
            return null;
        }
    }

    private static void write(OutputStream out, String line) throws IOException {
        out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** One line of at most MAX_LINE bytes, without its newline; null at the end or for a longer line. */
    private static String readLine(InputStream in) throws IOException {
        byte[] b = new byte[MAX_LINE];
        int n = 0;
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                return new String(b, 0, n, StandardCharsets.UTF_8);
            }
            if (n == MAX_LINE) {
                return null;
            }
            b[n++] = (byte) c;
        }
        return null;
    }

    /** Stops answering, and returns once the port is let go of (at most 2 s). */
    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            // closing
        }
        Thread t = accepting;
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join(CLOSE_WAIT_MILLIS);   // the socket is released once its accept returns: the port is free after
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
