package org.nccl4j.control;


import static org.nccl4j.control.LivenessWire.printable;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.nccl4j.RankPhase;
import org.nccl4j.control.LivenessWire.Refused;
import org.nccl4j.launch.JobSecret;
import org.nccl4j.launch.RecordSeal;

/**
 * Rank 0's side of the liveness channel, the hub: it accepts the ranks' connections, checks who they are, keeps the
 * roster, relays every loss, departure and mismatch to every rank, and compares the ranks' collectives
 * ({@link Agreement}). The lines are {@link LivenessWire}'s; the facade the rest of the core calls is
 * {@link Liveness}, whose state (the roster, the losses, the phases) the hub fills for rank 0.
 *
 * <h2>Who may speak</h2>
 * Rank 0's port is open to any process that reaches its host, so rank 0 trusts nothing a connection says until it has
 * proved itself, and nothing it claims that contradicts what it knows:
 * <ul>
 * <li><b>Authentication.</b> With the job's secret ({@link JobSecret}: {@code NCCL4J_JOB_SECRET} or
 * {@code NCCL4J_JOB_SECRET_FILE}), rank 0 sends {@code CHALLENGE <serverNonce>} on accept; the rank answers
 * {@code AUTH <clientNonce> <proof>} (the client's proof, purpose {@value LivenessWire#PURPOSE}); rank 0 checks it
 * and answers {@code OK <proof>} (the server's), which the rank checks before its {@code HELLO}, so that a false rank
 * 0 is refused too. A captured exchange is worth nothing on another connection (rank 0's nonce differs). After it,
 * every line both ways ({@code HELLO} on) is sealed ({@link org.nccl4j.launch.RecordSeal}, purpose
 * {@value LivenessWire#PURPOSE}, keys of this connection and direction): a line forged, replayed or reordered on the
 * way fails to open, and the connection is refused and closed, said once (rank 0 declares no loss for it). Without a
 * secret the exchange is skipped (rank 0 says {@code OPEN} on accept instead), said once per process at INFO; both
 * sides must agree: a rank with a secret facing a rank 0 without one (it hears {@code OPEN}), or the reverse, fails at
 * join time naming {@code NCCL4J_JOB_SECRET}, and rank 0 refuses it. A rank that hears nothing within its hello time
 * (rank 0 busy with thousands of arrivals) connects again, until its join deadline.</li>
 * <li><b>Claims.</b> Rank 0 refuses a hello for a rank outside [0, world size), for a rank connected already, or for a
 * rank that joined from another address; a second {@code HELLO} on one connection; any line before the hello but the
 * handshake's; and any line only rank 0 sends ({@code JOINED}, {@code LOST}, {@code LEFT}, {@code DEPARTED},
 * {@code CAUSED}, {@code AHEAD}, {@code CHECK}, {@code DESCRIBE}, {@code MISMATCH}, {@code CHALLENGE}, {@code OK},
 * {@code OPEN}) or it does not know. A refused connection is closed and said with its address
 * ({@code nccl4j liveness: refused the connection from <address>: <why>; the job goes on}), at WARN once per burst
 * of refusals ({@link org.nccl4j.launch.Refusals}: the others at DEBUG, counted in the next WARN line; a flood's
 * connections that time out waiting are said with the flood's line); it is never a loss, a join or a departure, and
 * the rank it claimed is untouched. A rank ignores the lines of rank 0 it does not expect. Without a secret, a
 * stranger that said hello for a rank not yet joined and then dropped is a loss told to every rank; the real rank's
 * hello afterwards clears it everywhere ({@code JOINED} after {@code LOST}).</li>
 * <li><b>Bounds.</b> The lines' bounds are {@link LivenessWire}'s; a longer one is refused without reading it whole.
 * A connection has {@value Liveness#HELLO_MILLIS} ms to authenticate and say hello ({@code NCCL4J_LIVENESS_TIMEOUT}
 * bounds the silence after it); at most {@value #MAX_PENDING} connections more than the world's ranks wait for their
 * hello at once (none holds a thread, so every rank of a large job may arrive at once); a connection has
 * {@value #FIRST_BYTE_MILLIS} ms for its first byte. Over the cap, each new connection takes the place of the one that
 * waited longest without a byte (else without authenticating): a stranger that holds every slot and reconnects at
 * once churns its own connections while the ranks, which answer at once, get in. Said once per flood at WARN (a flood
 * ends {@value org.nccl4j.launch.Refusals#FLOOD_GAP_MILLIS} ms after the last such close). A rank that leaves more
 * than {@value #MAX_OUTBOX} bytes waiting and takes none of them for the liveness timeout, or more than
 * {@value #HARD_OUTBOX} however fast it reads, is lost ({@code it did not read rank 0's lines}), as one whose
 * heartbeats stop; a rank that reads, only slower for a moment, is not.</li>
 * </ul>
 *
 * <h2>Thousands of ranks</h2>
 * The hub runs on two threads whatever the number of ranks: a {@link java.nio.channels.Selector} thread
 * ({@code nccl4j-liveness-server}) accepts, authenticates, reads every connection's lines, serves them, and enforces
 * the hello deadline, the silence timeout and the line bounds above; the heartbeat thread
 * ({@code nccl4j-liveness-ping}, {@link LivenessClient#pingLoop}) sends the pings and drives the comparison
 * ({@link #tick}, {@link #pingAll}). A line to a rank never waits for that rank: it goes to the connection's outbox,
 * written at once without blocking as far as the socket takes it, the rest by the selector thread when the socket can
 * take more (a line fanned out to every rank is one array shared by their outboxes); a rank that lets more than
 * {@value #MAX_OUTBOX} bytes wait and reads none of them for the liveness timeout (or lets {@value #HARD_OUTBOX}
 * wait) is lost, so that a stopped process cannot hold up the news of every other rank. When ranks arrive in a burst,
 * their {@code JOINED} lines are gathered for {@value #JOIN_BATCH_MILLIS} ms and each rank is sent what it has not had
 * in one write (at once when ranks arrive one by one, with at most {@value #JOIN_BATCH_PEERS} ranks connected, or when
 * the last arrives). The figures from 64 to 4,096 simulated ranks are in
 * docs/gpu-runs/2026-11-26-control-plane-scale.md (scripts/bench/control-plane-scale.sh).
 *
 * <p>Why the JDK's NIO and not a library: Netty would bring buffers, an event loop and a line decoder, but none of what
 * the channel is made of (the challenge and response, the claims, the bounds and refusals, the roster and departures),
 * which stay nccl4j's own code whichever way the bytes travel; it would add four to six jars (Netty 4.2's buffer,
 * common, transport, resolver, codec and handler) to a library whose core depends on slf4j alone, and those jars would
 * land on the class paths of the Spark and Flink jobs that embed it, which bring Netty versions of their own. JGroups
 * solves a harder problem (group membership with views, merges and reliable multicast among peers) with its own
 * discovery, failure detection and security stack, which would overlap and contradict this channel's: here rank 0 is
 * the authority by construction (the launcher names it), a lost rank is a fact its kernel reports, and the job ends or
 * recovers rather than merging partitions. One selector over plain sockets is a few hundred lines, keeps the protocol
 * that the scripts, the attack tests and the other ranks speak, and served 2,048 simulated ranks on one thread (4,096
 * did not all join on the 2-core machine: see the report). A tree of relays (ranks forwarding rank 0's lines) is the
 * next step if one host's fan-out ever becomes the limit; rank 0's own fan-out does not call for it yet.
 */
final class LivenessHub {
    private static final org.slf4j.Logger LOG = ChannelState.LOG;
    /**
     * The most connections at once beyond the world's ranks that have not said hello; further ones are closed at
     * accept.
     */
    static final int MAX_PENDING = 64;
    /**
     * The most bytes rank 0 holds for one connection that does not read them (beyond what the kernel's buffers hold):
     * a rank whose outbox grows past it is taken for lost, as one that stopped sending heartbeats.
     */
    static final int MAX_OUTBOX = 1 << 20;
    /** The most bytes that may wait for a rank, however fast it reads. */
    static final int HARD_OUTBOX = 16 << 20;
    /** How long rank 0 gathers JOINED lines, while ranks arrive in a burst, before fanning them out. */
    static final long JOIN_BATCH_MILLIS = 50;
    /** Up to this many ranks connected, every JOINED line is fanned out at once. */
    static final int JOIN_BATCH_PEERS = 64;
    /** How often rank 0's selector thread looks for silent connections and passed hello deadlines, at least. */
    static final long SWEEP_MILLIS = 100;
    /**
     * How long rank 0 waits for a joined rank whose connection was closed after a line failed its check (either side's,
     * {@link LivenessWire#AGAIN}) to connect again, before it tells the rank's loss.
     */
    static final long REJOIN_MILLIS = 3000;
    /**
     * How long a new connection has to send its first byte (or its hello deadline, when shorter). A rank answers rank
     * 0's {@code CHALLENGE} (or, without a secret, says its {@code HELLO}) at once: one round trip and one HMAC, well
     * under a millisecond on loopback and a few on a loaded host; 1.5 s leaves room for a scheduling delay or a
     * collection on either side, yet lets go of a connection that holds a waiting slot without a word three times
     * sooner than the hello deadline.
     */
    static final long FIRST_BYTE_MILLIS = 1500;

    /** Rank 0's facade: the roster, losses and phases the hub keeps for it. */
    private final ChannelState l;
    /** The world size; a hello claiming a rank outside [0, size) is refused. */
    private final int size;
    /**
     * Under the roster's lock, by launch rank, until a communicator is made: the start-up's news (each DEPARTED line of
     * a rank that left during start-up, rank 0's own included, and each LOST line) that a rank arriving later gets
     * with the roster, so that it ends its start-up at once instead of waiting for a rank that is gone. A rank's
     * hello clears its own (a false loss, or the rank back).
     */
    private final Map<Integer, byte[]> startupNews = new java.util.LinkedHashMap<>();
    /** The selector thread only: the connections that have not said hello yet. */
    private final java.util.Set<Peer> early = new java.util.LinkedHashSet<>();
    /**
     * Says refused connections, one WARN line per burst, and each flood of connections closed at accept once (a flood
     * ends {@value org.nccl4j.launch.Refusals#FLOOD_GAP_MILLIS} ms after its last close; the connections that waited
     * during it are said at DEBUG).
     */
    private final org.nccl4j.launch.Refusals refusals = new org.nccl4j.launch.Refusals(ChannelState.LOG);
    /** By launch rank, the address each rank said hello from. */
    private final Map<Integer, InetAddress> joinedFrom = new ConcurrentHashMap<>();
    /** The selector thread only: joined ranks connecting again after a failed check, with their hello and deadline. */
    private final Map<Integer, Rejoin> rejoining = new TreeMap<>();

    /** Ranks that asked for the unique id ({@link LivenessWire#ID_ASK}) before rank 0 had it. */
    private final java.util.Set<Peer> idAskers = ConcurrentHashMap.newKeySet();

    /** Rank 0: answers every rank that asked for the unique id, once the facade holds it. */
    void uniqueIdOffered() {
        byte[] id = l.uniqueId;
        if (id == null) {
            return;
        }
        String answer = LivenessWire.ID_IS + " " + java.util.HexFormat.of().formatHex(id) + "\n";
        for (java.util.Iterator<Peer> it = idAskers.iterator(); it.hasNext();) {
            Peer p = it.next();
            it.remove();
            send(p, answer);
            LOG.warn("nccl4j liveness: rank {} asked for the unique id on the liveness channel (its id frame from the "
                    + "rendezvous failed its check): sent, sealed", p.who);
        }
    }

    /** A rank connecting again: its hello, when its loss is told if it has not, and why its connection was closed. */
    private record Rejoin(String[] hello, long deadline, String why) {
    }
    /** The connections that said hello and are open. */
    private final java.util.Set<Peer> peers = ConcurrentHashMap.newKeySet();
    /** The launch rank of each connection that said hello. */
    private final Map<Peer, Integer> rankOfPeer = new ConcurrentHashMap<>();
    /** By launch rank, the open connection that said hello as that rank. */
    private final Map<Integer, Peer> connectedAs = new ConcurrentHashMap<>();
    /** Connections whose outbox overflowed, for the selector thread to end. */
    private final java.util.Queue<Peer> overflowed = new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** Guards the log of JOINED lines and what each connection was sent of it. */
    private final Object joinLock = new Object();
    /** Every JOINED line so far, in order (append-only: a part once written never changes). */
    private byte[] joinedLog = new byte[4096];
    private int joinedLength;
    /** How much of the log has been fanned out to every connection, and when last. */
    private int joinedFannedOut;
    private long lastJoinFanOut;
    private final ServerSocketChannel server;
    private final Selector selector;
    private volatile Thread serverThread;
    /** The selector thread: the lines it broadcast during the present round, fanned out at its end. */
    private final java.io.ByteArrayOutputStream roundLines = new java.io.ByteArrayOutputStream();
    /** The comparison of the ranks' collectives. */
    private final Agreement agreement;
    /** By launch rank, the connection of every rank that said hello and has not departed or been lost. */
    private final Map<Integer, Peer> online = new ConcurrentHashMap<>();
    /** By launch rank, the last collective of each rank that is closing, to tell it when others go past. */
    private final Map<Integer, Long> closingAt = new ConcurrentHashMap<>();
    /** The highest collective number reported, per generation (the newest only). */
    private volatile long highest;
    private volatile int highestGeneration;

    /**
     * Listens on {@code bind} (null: every address) at {@code port} and starts the selector thread; ranks claimed must
     * be in [0, {@code worldSize}).
     */
    LivenessHub(ChannelState l, int port, int worldSize, InetAddress bind) throws IOException {
        this.l = l;
        this.size = worldSize;
        this.agreement = new Agreement(this::sendToRank, text -> broadcast(LivenessWire.mismatch(text)));
        ServerSocketChannel s = ServerSocketChannel.open();
        Selector sel = null;
        try {
            s.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            // room in the backlog for every rank arriving at once (the kernel caps it at somaxconn)
            try {
                s.bind(new InetSocketAddress(bind, port), Math.max(50, Math.min(worldSize, 65_536)));
            } catch (java.net.BindException e) {
                throw (java.net.BindException) new java.net.BindException("port " + port + ", the liveness channel"
                        + " (MASTER_PORT + 50, or NCCL4J_LIVENESS_PORT), is taken on this host (" + e.getMessage()
                        + "; by another job whose rank 0 shares this node, or another process): give this job another"
                        + " MASTER_PORT (it moves all of nccl4j's ports, docs/ports.md), or end the process holding it")
                        .initCause(e);
            }
            s.configureBlocking(false);
            sel = Selector.open();
            s.register(sel, SelectionKey.OP_ACCEPT);
        } catch (IOException | RuntimeException e) {
            ChannelState.closeQuietly(s);
            ChannelState.closeQuietly(sel);
            throw e;
        }
        this.server = s;
        this.selector = sel;
        serverThread = ChannelState.daemon(this::serveAll, "nccl4j-liveness-server");
    }

    /** For tests: the quiet time that ends a burst of refusals; zero says every refusal at WARN. */
    void refusalQuiet(long millis) {
        refusals.quietMillis(millis);
    }

    /** The heartbeat thread's turn ({@link LivenessClient#pingLoop}): drives the comparison of the collectives. */
    void tick(long nowMillis) {
        agreement.tick(online.keySet(), nowMillis);
    }

    /** The heartbeat thread: a {@code PING} to every rank that said hello. */
    void pingAll() {
        for (Peer p : peers) {
            send(p, ByteBuffer.wrap(PING_LINE));
        }
    }

    private static final byte[] PING_LINE = (LivenessWire.PING + "\n").getBytes(StandardCharsets.UTF_8);

    /** @return whether no rank is online (every other rank departed or was lost) */
    boolean nobodyOnline() {
        return online.isEmpty();
    }

    /**
     * Rank 0's selector thread: accepts connections, reads every connection's lines and serves them, writes what the
     * connections' outboxes hold, fans out the JOINED lines gathered, and ends the connections that overflowed, that
     * passed their hello deadline or that fell silent. Rank 0 serves any number of ranks on this one thread; a line
     * to a rank never waits for that rank to read it (see {@link #send}).
     */
    private void serveAll() {
        ByteBuffer in = ByteBuffer.allocate(64 * 1024);
        long nextSweep = System.nanoTime();
        try {
            while (!l.closing) {
                long now = System.nanoTime();
                long wake = Math.min(nextSweep, nextDeadline(now + SWEEP_MILLIS * 1_000_000L));
                synchronized (joinLock) {
                    if (joinedFannedOut < joinedLength) {
                        wake = Math.min(wake, lastJoinFanOut + JOIN_BATCH_MILLIS * 1_000_000L);
                    }
                }
                selector.select(Math.max(1, (wake - now + 999_999L) / 1_000_000L));
                for (SelectionKey k : selector.selectedKeys()) {
                    handle(k, in);
                }
                selector.selectedKeys().clear();
                Peer o;
                while ((o = overflowed.poll()) != null) {
                    end(o, null, false, "it did not read rank 0's lines (over " + MAX_OUTBOX + " bytes waited for it, "
                            + "none taken for " + l.timeoutMillis + " ms, or over " + HARD_OUTBOX + ": the process is "
                            + "stopped or too slow)");
                }
                fanOutJoins(false);
                now = System.nanoTime();
                boolean sweep = now - nextSweep >= 0;
                // in accept order, which is nearly deadline order (a connection that spoke has until its hello
                // deadline, a silent one until its first byte's): the oldest ones each round, all on a sweep
                for (java.util.Iterator<Peer> it = early.iterator(); it.hasNext();) {
                    Peer p = it.next();
                    if (now - p.deadline() >= 0) {
                        it.remove();
                        end(p, p.any ? "it did not authenticate and say hello within " + p.helloMillis + " ms"
                                : "it sent nothing within " + p.firstByteMillis + " ms", false, null);
                    } else if (!sweep) {
                        break;
                    }
                }
                if (sweep) {
                    nextSweep = now + SWEEP_MILLIS * 1_000_000L;
                    for (java.util.Iterator<Map.Entry<Integer, Rejoin>> it = rejoining.entrySet().iterator();
                            it.hasNext();) {
                        Rejoin r = it.next().getValue();
                        if (now - r.deadline() >= 0) {
                            it.remove();
                            tellLost(r.hello(), r.why() + ", and it did not connect again within " + REJOIN_MILLIS
                                    + " ms");
                        }
                    }
                    for (Peer p : peers) {
                        if (overflowIfStalled(p, now)) {
                            continue;
                        }
                        if (now - p.lastHeard > l.timeoutMillis * 1_000_000L) {
                            end(p, null, false, "it sent nothing for " + l.timeoutMillis + " ms (no heartbeat: the "
                                    + "process is stopped or its host is unreachable)");
                        }
                    }
                }
                endRound();
            }
        } catch (IOException | java.nio.channels.ClosedSelectorException e) {
            if (!l.closing) {
                LOG.warn("nccl4j liveness: rank 0 stopped accepting: {}", e.toString());
            }
        } finally {
            try {
                for (SelectionKey k : selector.keys()) {
                    ChannelState.closeQuietly(k.channel());
                }
            } catch (java.nio.channels.ClosedSelectorException e) {
                // closed already
            }
            ChannelState.closeQuietly(server);
            ChannelState.closeQuietly(selector);   // a registered channel's socket closes once its selector lets it go
        }
    }

    /** The deadline of the oldest connection that has not said hello, or {@code latest} when earlier. */
    private long nextDeadline(long latest) {
        if (early.isEmpty()) {
            return latest;
        }
        long first = early.iterator().next().deadline();
        return first - latest < 0 ? first : latest;
    }

    /** One ready key of the selector thread: new connections, or a connection to write to or read from. */
    private void handle(SelectionKey k, ByteBuffer in) throws IOException {
        if (!k.isValid()) {
            return;
        }
        if (k.isAcceptable()) {
            acceptAll(in);
            return;
        }
        Peer p = (Peer) k.attachment();
        try {
            if (k.isWritable()) {
                flush(p);
            }
            if (k.isValid() && k.isReadable()) {
                read(p, in);
            }
        } catch (java.nio.channels.CancelledKeyException e) {
            end(p, null, false, null);
        } catch (RuntimeException e) {
            end(p, "rank 0 could not serve it (" + e + ")", false, null);
        }
    }

    /**
     * @return the most connections that may wait for their hello at once: {@value #MAX_PENDING} more than the world's
     *         ranks, so that every rank may arrive at once (only {@value #MAX_PENDING} with no bound on the ranks)
     */
    private int maxPending() {
        return size >= Integer.MAX_VALUE - MAX_PENDING ? MAX_PENDING : MAX_PENDING + size;
    }

    /**
     * Accepts every connection the backlog holds: each gets its challenge. Over the cap on connections waiting for
     * their hello, the one that waited longest without a byte is let go for it (else the one that waited longest
     * without proving itself; the new one only when every waiting one has authenticated): a stranger that holds every
     * slot and reconnects the moment one is closed then churns its own connections, while a rank, which answers at
     * once, keeps its slot. Closing the newest instead gave every freed slot to such a stranger.
     */
    private void acceptAll(ByteBuffer in) throws IOException {
        SocketChannel c;
        while ((c = server.accept()) != null) {
            if (early.size() >= maxPending()) {   // at most so many connections wait for a hello
                String from = remote(c);
                if (refusals.flooded()) {
                    LOG.warn("nccl4j liveness: {} connections have not said hello yet (the most at once): letting go "
                            + "of the one that waited longest without a byte (else without proving itself) for each "
                            + "new one (the first from {}); the job goes on", maxPending(), from);
                }
                Peer victim = longestWaiting(in);
                if (victim == null) {
                    ChannelState.closeQuietly(c);
                    continue;
                }
                end(victim, "it waited longest without " + (victim.any ? "proving itself" : "a byte") + " while "
                        + maxPending() + " connections waited for their hello (the most at once)", false, null);
            }
            try {
                c.configureBlocking(false);
                c.setOption(StandardSocketOptions.TCP_NODELAY, true);
                Peer p = new Peer(c, c.register(selector, SelectionKey.OP_READ), refusals.now(), l.helloMillis);
                p.key.attach(p);
                early.add(p);
                if (l.secret != null) {
                    p.serverNonce = JobSecret.nonce();
                    send(p, "CHALLENGE " + p.serverNonce + "\n");
                } else {
                    // no secret here: a rank with one knows at once, and never waits
                    send(p, LivenessWire.OPEN + "\n");
                    p.stage = 1;
                }
            } catch (IOException | RuntimeException e) {
                ChannelState.closeQuietly(c);
            }
        }
    }

    /**
     * The connection to let go for a new one: the one that waited longest without a byte (what it sent meanwhile is
     * read first, so a rank whose answer is on its way keeps its slot), else the one that waited longest without
     * authenticating (without a secret: the oldest); null when every waiting one has authenticated.
     */
    private Peer longestWaiting(ByteBuffer in) {
        boolean search = true;
        while (search) {
            search = false;
            for (Peer p : early) {
                if (!p.any && !p.ended) {
                    read(p, in);   // may end it, or take it out of the waiting ones
                    if (!p.any && !p.ended) {
                        return p;
                    }
                    search = true;   // the waiting ones may have changed: look again
                    break;
                }
            }
        }
        for (Peer p : early) {
            if (l.secret == null || p.stage == 0) {
                return p;
            }
        }
        return null;
    }

    private static String remote(SocketChannel c) {
        try {
            java.net.SocketAddress a = c.getRemoteAddress();
            return a instanceof InetSocketAddress i ? i.getAddress().getHostAddress() + ":" + i.getPort()
                    : String.valueOf(a);
        } catch (IOException e) {
            return "an unknown address";
        }
    }

    /**
     * Rank 0: one connection, served by the selector thread (its handshake, its lines, its deadlines); its outbox is
     * written by any thread, under the connection's lock.
     */
    private static final class Peer {
        final SocketChannel channel;
        final SelectionKey key;
        final String remote;
        final InetAddress address;
        /** When it was accepted, on {@link #refusals}' clock. */
        final long accepted;
        final long helloMillis;
        final long helloDeadline;
        /** How long it has for its first byte ({@link #FIRST_BYTE_MILLIS}, or its hello time when shorter). */
        final long firstByteMillis;
        final long firstByteDeadline;
        /**
         * The seal of its lines after the handshake (with a secret), or null: set on the selector thread before any
         * other thread may write to it; used under this connection's lock, so that sequence order is write order.
         */
        RecordSeal seal;
        /** Where its handshake is: 0 waits for AUTH (with a secret), 1 for HELLO, 2 said hello. */
        int stage;
        String serverNonce;
        String[] hello;
        int who = -1;
        boolean bye;
        /** Whether it sent anything after its hello (a heartbeat, a phase): a real rank does within a second. */
        boolean spoke;
        /** Whether any byte was read from it. */
        boolean any;
        long lastHeard = System.nanoTime();
        /** The line being read: at most {@code MAX_EARLY_LINE} bytes before the hello, then {@code MAX_OPS_LINE}. */
        byte[] line = new byte[256];
        int length;
        /** How much of the JOINED log it has been sent (under {@code joinLock}). */
        int joinedSent;
        /** What it has not read yet, in order (under this connection's lock). */
        final java.util.ArrayDeque<ByteBuffer> outbox = new java.util.ArrayDeque<>();
        long queued;
        /** When rank 0 last wrote any of its outbox to it (or found the outbox empty): a rank that reads drains. */
        long lastDrained = System.nanoTime();
        boolean writing;
        boolean overflowed;
        volatile boolean ended;

        Peer(SocketChannel channel, SelectionKey key, long accepted, long helloMillis) {
            this.channel = channel;
            this.key = key;
            this.remote = remote(channel);
            this.address = channel.socket().getInetAddress();
            this.accepted = accepted;
            this.helloMillis = helloMillis;
            long now = System.nanoTime();
            this.helloDeadline = now + helloMillis * 1_000_000L;
            this.firstByteMillis = Math.min(FIRST_BYTE_MILLIS, helloMillis);
            this.firstByteDeadline = now + firstByteMillis * 1_000_000L;
        }

        /** When it is let go unless it said hello: its first byte's deadline while silent, then its hello's. */
        long deadline() {
            return any ? helloDeadline : firstByteDeadline;
        }
    }

    /**
     * Rank 0: reads what a connection sent and serves its complete lines; a line longer than its bound is refused
     * without reading it whole, and the end of the connection ends it.
     */
    private void read(Peer p, ByteBuffer in) {
        in.clear();
        int n;
        try {
            n = p.channel.read(in);
        } catch (IOException e) {
            end(p, null, false, null);   // the connection broke: the rank is gone unless it said goodbye
            return;
        }
        if (n < 0) {
            end(p, p.stage < 2 ? "it closed the connection before its hello" : null, p.stage < 2 && !p.any, null);
            return;
        }
        if (n == 0) {
            return;
        }
        p.any = true;
        p.lastHeard = System.nanoTime();
        in.flip();
        try {
            while (in.hasRemaining() && !p.ended) {
                byte b = in.get();
                if (b == '\n') {
                    String line = new String(p.line, 0, p.length, StandardCharsets.UTF_8);
                    p.length = 0;
                    String opened;
                    try {
                        opened = p.seal == null ? line : LivenessWire.open(p.seal, line);
                    } catch (Refused e) {
                        if (p.stage < 2) {
                            throw e;
                        }
                        // a joined rank's connection was tampered with: nothing more on it can be trusted, so it is
                        // closed, and the rank, told so in a sealed line, connects again (one WARN line)
                        again(p, "a line from it failed its check (" + e.getMessage() + ")");
                        return;
                    }
                    line(p, opened);
                    continue;
                }
                int max = (p.stage < 2 ? LivenessWire.MAX_EARLY_LINE : LivenessWire.MAX_OPS_LINE)
                        + (p.seal == null ? 0 : LivenessWire.SEAL_CHARS);
                if (p.length >= max) {
                    throw new Refused("it sent a line longer than " + max + " bytes");
                }
                if (p.length == p.line.length) {
                    p.line = java.util.Arrays.copyOf(p.line, Math.min(max, 2 * p.line.length));
                }
                p.line[p.length++] = b;
            }
        } catch (Refused e) {
            end(p, e.getMessage(), e.silent, null);
        }
    }

    /**
     * Rank 0: one line of a connection: its challenge's answer ({@code AUTH}, with a secret), its hello, then the
     * rank's lines ({@link #served}).
     *
     * @throws Refused when the line refuses the connection, with why
     */
    private void line(Peer p, String line) throws Refused {
        if (p.stage == 0) {
            String[] a = line.split(" ", -1);
            if (!a[0].equals("AUTH")) {
                throw new Refused("it did not authenticate (sent '" + printable(line, 60) + "' where AUTH was due): "
                        + "every rank needs this job's " + JobSecret.VARIABLE);
            }
            if (a.length != 3 || !LivenessWire.hex(a[1]) || !LivenessWire.hex(a[2])
                    || !l.secret.verify(LivenessWire.PURPOSE, p.serverNonce, a[1], "client", a[2])) {
                send(p, LivenessWire.DENIED + "\n");   // written at once: the rank stops trying, and says why
                throw new Refused("its AUTH proof is wrong (not this job's " + JobSecret.VARIABLE
                        + ", or an answer to another challenge)");
            }
            send(p, "OK " + l.secret.prove(LivenessWire.PURPOSE, p.serverNonce, a[1], "server") + "\n");
            // from here on every line, both ways, is sealed (RecordSeal): forged, replayed or reordered ones fail
            RecordSeal seal = RecordSeal.of(l.secret, LivenessWire.PURPOSE, p.serverNonce, a[1], true);
            synchronized (p) {
                p.seal = seal;
            }
            p.stage = 1;
            return;
        }
        if (p.stage == 1) {
            String[] hello = greet(p, line);
            p.who = Integer.parseInt(hello[1]);
            p.hello = hello;
            p.stage = 2;
            p.lastHeard = System.nanoTime();
            early.remove(p);
            return;
        }
        if (line.length() > LivenessWire.MAX_RANK_LINE && !line.startsWith("OPS ")) {
            throw new Refused("rank " + p.who + "'s connection sent a line longer than " + LivenessWire.MAX_RANK_LINE
                    + " bytes");
        }
        p.spoke = true;
        if (line.equals(LivenessWire.ID_ASK)) {   // its id frame failed its check: the id, sealed, on this line
            if (p.seal != null) {
                idAskers.add(p);
                uniqueIdOffered();
            }
            return;
        }
        if (line.equals(LivenessWire.AGAIN)) {   // the rank found one of rank 0's lines failed its check
            again(p, "it refused a line on its connection, which failed its check");
            return;
        }
        if (line.equals("BYE")) {
            p.bye = true;
        } else {
            p.bye |= served(p.who, p.hello, line);
        }
    }

    /**
     * Rank 0: the end of a connection. A refused one ({@code refused}: why) is closed and said with its address
     * ({@link org.nccl4j.launch.Refusals}: at WARN once per burst) and is no loss; a rank's that ends without BYE
     * (why: {@code why}, else the end of its connection) is lost, and every other rank is told.
     *
     * @param silent whether a refused connection sent nothing at all (a port probe: said at DEBUG only)
     */
    private void end(Peer p, String refused, boolean silent, String why) {
        if (p.ended) {
            return;
        }
        p.ended = true;
        early.remove(p);
        peers.remove(p);
        p.key.cancel();
        ChannelState.closeQuietly(p.channel);
        synchronized (p) {
            p.outbox.clear();
            p.queued = 0;
        }
        if (p.who >= 0 && rankOfPeer.remove(p, p.who)) {
            connectedAs.remove(p.who, p);
            online.remove(p.who, p);
            closingAt.remove(p.who);
            agreement.left(p.who);
        }
        if (refused != null) {
            if (silent) {   // connected and left without a byte: a port probe, no claim to refuse
                LOG.debug("nccl4j liveness: the connection from {} ended without a byte", p.remote);
            } else if (!l.closing) {
                refusals.refused("nccl4j liveness: refused the connection from " + p.remote + ": " + refused
                        + "; the job goes on", p.accepted);
            }
            return;
        }
        String[] hello = p.hello;
        if (p.bye || l.closing || hello == null) {
            return;
        }
        if (l.secret == null && !p.spoke && l.owner() == null) {
            // without a secret a hello proves nothing, and a real rank follows it at once (a heartbeat right after its
            // hello, then its start-up steps): one that ends having said nothing more may have been a stranger's
            // claim, and a false loss would end every rank's start-up. Not told: the rank is waited for (init timeout)
            refusals.refused("nccl4j liveness: the connection from " + p.remote + " that claimed rank " + hello[1]
                    + " (" + hello[2] + ", pid " + hello[3] + ") ended having said nothing after its hello; without "
                    + JobSecret.VARIABLE + " nothing proves it was rank " + hello[1] + ", so no loss is told and the"
                    + " job waits for it (set the same " + JobSecret.VARIABLE + " on every rank to have every loss"
                    + " told)",
                    p.accepted);
            return;
        }
        tellLost(hello, why != null ? why : "its connection ended without a goodbye");
    }

    /**
     * Rank 0: a joined rank whose line failed its check (or that refused one of rank 0's lines): its connection is
     * closed after a sealed {@link LivenessWire#AGAIN}, and its loss is told only if it does not connect again within
     * {@link #REJOIN_MILLIS} ms. One WARN line.
     */
    private void again(Peer p, String why) {
        String[] hello = p.hello;
        if (hello == null || l.closing || p.bye) {
            end(p, null, false, "its connection to rank 0 failed its check: " + why);
            return;
        }
        send(p, LivenessWire.AGAIN + "\n");
        rejoining.put(p.who, new Rejoin(hello, System.nanoTime() + REJOIN_MILLIS * 1_000_000L,
                "its connection to rank 0 was closed after " + why));
        end(p, "rank " + p.who + "'s connection: " + why + "; rank 0 closed it and waits up to " + REJOIN_MILLIS
                + " ms for the rank to connect again", false, null);
    }

    /** Rank 0: rank {@code hello[1]} is lost, {@code why}: said once at WARN, told to every rank. */
    private void tellLost(String[] hello, String why) {
        int who = Integer.parseInt(hello[1]);
        RankPhase was = l.phases.getOrDefault(who, RankPhase.JOINED);
        String how = LivenessWire.oneLine(why);
        LOG.warn("nccl4j liveness: rank {} ({}, pid {}) is lost: {} ({})", hello[1], hello[2], hello[3], how,
                was.during());
        // LOST <rank> <host> <pid> <phase> <how...>: a reader of the first four fields only reads them unchanged
        String message = "LOST " + hello[1] + " " + hello[2] + " " + hello[3] + " " + LivenessWire.wire(was) + " "
                + how + "\n";
        l.lost(message.trim().split(" ", 6));
        startupNews(who, message);
        broadcast(message);
    }

    /** Rank 0: keeps {@code line} (rank {@code who}'s departure or loss) for the ranks arriving later in start-up. */
    private void startupNews(int who, String line) {
        if (l.owner() == null) {
            synchronized (l.roster) {
                startupNews.put(who, line.getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    /** @return the world size: ranks [0, size) may join */
    int worldSize() {
        return size;
    }

    /**
     * Rank 0: a new connection's hello, after its challenge and response (with a secret); its claims are checked and,
     * when they hold, the rank is welcomed.
     *
     * @return its hello's fields
     * @throws Refused when it is refused, with why
     */
    private String[] greet(Peer p, String line) throws Refused {
        if (line.startsWith("AUTH ") && l.secret == null) {
            throw new Refused("it sent AUTH, but rank 0 has no " + JobSecret.VARIABLE + ": give every rank the same "
                    + JobSecret.VARIABLE + ", or none");
        }
        if (!line.startsWith("HELLO ")) {
            throw new Refused("it sent '" + printable(line, 60) + "' before its hello");
        }
        String[] hello = line.split(" ", -1);
        int who;
        try {
            who = Integer.parseInt(hello[1]);
            if (hello.length != 4 || hello[2].isEmpty() || !hello[2].chars().allMatch(c -> c > ' ' && c < 127)) {
                throw new NumberFormatException();
            }
            Long.parseLong(hello[3]);
        } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
            throw new Refused("its hello is malformed: '" + printable(line, 80) + "'");
        }
        if (who < 0 || who >= size) {
            throw new Refused("it claims rank " + who + ", outside this job's ranks 0.." + (size - 1));
        }
        welcome(p, hello, who);
        return hello;
    }

    /**
     * Rank 0: one line of rank {@code who} after its hello. Returns true for a departure (the end of the connection is
     * then no loss).
     *
     * @throws Refused for a line a rank may not send
     */
    private boolean served(int who, String[] hello, String line) throws Refused {
        String[] f = line.split(" ", 2);
        String rest = f.length > 1 ? f[1] : "";
        try {
            switch (f[0]) {
                case "PING": {
                    if (!rest.isEmpty()) {
                        String[] g = rest.split(" ");
                        reportedBy(who, Integer.parseInt(g[0]), Long.parseLong(g[1]));
                    }
                    return false;
                }
                case "FP": {
                    String[] g = rest.split(" ");
                    int gen = Integer.parseInt(g[0]);
                    reportedBy(who, gen, Long.parseLong(g[3]));
                    agreement.fingerprint(who, gen, Long.parseLong(g[1]), g[2]);
                    return false;
                }
                case "OPS": {
                    String[] g = rest.split(" ");
                    String[] list = java.util.Arrays.copyOfRange(g, 3, g.length);
                    agreement.shapes(who, Integer.parseInt(g[0]), Long.parseLong(g[1]), Long.parseLong(g[2]), list);
                    return false;
                }
                case "DEPART":
                    relayDeparture(who, hello[2], hello[3], rest);
                    return true;
                case "CAUSE":
                    broadcast("CAUSED " + who + " " + rest + "\n");
                    return false;
                case "PHASE": {
                    RankPhase said = LivenessWire.phaseOf(rest.trim());
                    if (said == null) {
                        throw new IllegalArgumentException("no such phase");
                    }
                    l.phases.put(who, said);
                    return false;
                }
                case "HELLO":
                    throw new Refused("a second HELLO on the connection of rank " + who + " ('"
                            + printable(line, 60) + "')");
                default:
                    throw new Refused("rank " + who + "'s connection sent '" + printable(line, 60) + "', a line a "
                            + "rank may not send");
            }
        } catch (RuntimeException e) {
            // through the refusals' one line per burst: a connection that floods unreadable lines fills no log
            refusals.refused("nccl4j liveness: a line from rank " + who + " it cannot read: " + printable(line, 200)
                    + "; the job goes on");
            return false;
        }
    }

    /**
     * Rank 0: rank {@code who} leaves ({@code rest}: {@code <g> <kind> <last> <name> <cause...>}): it is no longer
     * compared, a closing rank is told when others went past its last collective, and every rank hears of it.
     */
    void relayDeparture(int who, String host, String pid, String rest) {
        String[] g = rest.split(" ", 5);
        long last = Long.parseLong(g[2].split(":")[0]);
        online.remove(who);
        agreement.left(who);
        if (g[1].equals("close")) {
            closingAt.put(who, last);
            String[] lastAndFingerprint = g[2].split(":");
            if (lastAndFingerprint.length > 1) {
                closedWith(who, Integer.parseInt(g[0]), last, lastAndFingerprint[1]);
            }
            if (highest > last && highestGeneration == Integer.parseInt(g[0])) {
                sendToRank(who, "AHEAD " + g[0] + " " + highest + "\n");
            }
        }
        String line = "DEPARTED " + who + " " + host + " " + pid + " " + rest + "\n";
        boolean startup = Integer.parseInt(g[0]) == ChannelState.STARTUP_GENERATION;
        if (startup) {
            startupNews(who, line);
        }
        broadcast(line);
        if (startup && who != l.rank) {
            // rank 0's own start-up waits read it here: its connection to itself may not be up yet to hear it
            l.departures.heard(new Departures.Departure(who, host, Long.parseLong(pid),
                    Departures.Kind.valueOf(g[1].toUpperCase(java.util.Locale.ROOT)),
                    ChannelState.STARTUP_GENERATION, 0, g[3],
                    g.length > 4 && !g[4].isBlank() ? g[4] : null, System.nanoTime()));
            l.goneAtStartUp(who, host, Long.parseLong(pid));
        }
    }

    /** Rank 0: by launch rank, the generation, last collective and fingerprint each closing rank closed with. */
    private final Map<Integer, String> closedWith = new ConcurrentHashMap<>();

    /**
     * Rank 0: rank {@code who} closes communicator {@code gen} after collective #{@code last} with fingerprint
     * {@code fp}; when it differs from another closing rank's at the same collective, the closing ranks' shapes are
     * compared at once, so that the first collective that differs is named before they close
     * ({@link Agreement#closedDiffering}).
     */
    private void closedWith(int who, int gen, long last, String fp) {
        String at = gen + " " + last + " ";
        synchronized (closedWith) {
            closedWith.put(who, at + fp);
            List<Integer> same = new ArrayList<>();
            boolean differ = false;
            for (Map.Entry<Integer, String> e : new TreeMap<>(closedWith).entrySet()) {
                if (e.getValue().startsWith(at)) {
                    same.add(e.getKey());
                    differ |= !e.getValue().equals(at + fp);
                }
            }
            if (differ) {
                agreement.closedDiffering(same, gen, last);
            }
        }
    }

    /** Rank 0: rank {@code who} has issued up to collective #n of communicator {@code gen}. */
    private void reportedBy(int who, int gen, long n) {
        agreement.reported(who, gen, n);
        if (gen > highestGeneration) {
            highestGeneration = gen;
            highest = 0;
        }
        if (gen == highestGeneration && n > highest) {
            highest = n;
            for (Map.Entry<Integer, Long> c : closingAt.entrySet()) {
                if (n > c.getValue()) {
                    sendToRank(c.getKey(), "AHEAD " + gen + " " + n + "\n");
                }
            }
        }
    }

    /** Rank 0: a line to one rank's connection, or to every connection with rank -1. */
    private void sendToRank(int r, String line) {
        if (Thread.currentThread() == serverThread) {
            endRound();   // what was broadcast before goes first
        }
        fanOutJoins(true);
        if (r < 0) {
            byte[] bytes = line.getBytes(StandardCharsets.UTF_8);
            for (Peer p : online.values()) {
                send(p, ByteBuffer.wrap(bytes));
            }
            return;
        }
        Peer p = online.get(r);
        if (p == null) {   // a closing rank is no longer online, but still connected
            p = connectedAs.get(r);
        }
        if (p != null) {
            send(p, line);
        }
    }

    /**
     * Rank 0: checks a hello's claim (a rank connected already, or one that joined from another address, is refused);
     * then a newcomer gets the roster so far (every JOINED line, its own included) and everyone gets the newcomer: at
     * once when ranks arrive one by one (or at most {@value #JOIN_BATCH_PEERS} are connected), gathered for
     * {@value #JOIN_BATCH_MILLIS} ms when more arrive in a burst.
     */
    private void welcome(Peer p, String[] hello, int who) throws Refused {
        synchronized (l.roster) {
            Peer already = connectedAs.get(who);
            if (already != null) {
                throw new Refused("it claims rank " + who + ", which is connected already (from " + already.remote
                        + ")");
            }
            InetAddress before = joinedFrom.get(who);
            if (before != null && !before.equals(p.address)) {
                throw new Refused("it claims rank " + who + ", which joined from " + before.getHostAddress());
            }
            Rejoin back = rejoining.get(who);
            boolean again = back != null && back.hello()[2].equals(hello[2]) && back.hello()[3].equals(hello[3]);
            if (back != null && !again) {
                throw new Refused("it claims rank " + who + ", which is connecting again from " + back.hello()[2]
                        + ", pid " + back.hello()[3]);
            }
            if (again) {
                rejoining.remove(who);
                LOG.info("nccl4j liveness: rank {} ({}, pid {}) connected again after its connection was closed",
                        hello[1], hello[2], hello[3]);
            }
            joinedFrom.put(who, p.address);
            rankOfPeer.put(p, who);
            connectedAs.put(who, p);
            byte[] line = again ? new byte[0] : ("JOINED " + hello[1] + " " + hello[2] + " " + hello[3] + "\n")
                    .getBytes(StandardCharsets.UTF_8);
            if (!again) {
                l.joined(hello);
                startupNews.remove(who);
            }
            synchronized (joinLock) {
                if (joinedLength + line.length > joinedLog.length) {
                    joinedLog = java.util.Arrays.copyOf(joinedLog, Math.max(2 * joinedLog.length,
                            joinedLength + line.length));
                }
                System.arraycopy(line, 0, joinedLog, joinedLength, line.length);
                joinedLength += line.length;
                send(p, ByteBuffer.wrap(joinedLog, 0, joinedLength));
                p.joinedSent = joinedLength;
                peers.add(p);
                online.put(who, p);
            }
            RankPhase mine = l.phase;
            if (mine != RankPhase.JOINED) {   // rank 0's own phase, which it told the earlier ranks
                send(p, "PHASE " + LivenessWire.wire(mine) + "\n");
            }
            if (!startupNews.isEmpty() && l.owner() == null) {   // who left before this rank came
                for (byte[] news : startupNews.values()) {
                    send(p, ByteBuffer.wrap(news));
                }
            }
        }
        fanOutJoins(false);
    }

    /**
     * Rank 0: sends every connection the JOINED lines it has not had, in one write: when {@code now}, with at most
     * {@value #JOIN_BATCH_PEERS} ranks connected, when the last such fan-out was {@value #JOIN_BATCH_MILLIS} ms ago or
     * more, or when every rank has arrived; else the selector thread does it when that time comes.
     */
    private void fanOutJoins(boolean now) {
        synchronized (joinLock) {
            if (joinedFannedOut == joinedLength) {
                return;
            }
            long t = System.nanoTime();
            if (!now && peers.size() > JOIN_BATCH_PEERS && t - lastJoinFanOut < JOIN_BATCH_MILLIS * 1_000_000L
                    && l.roster.size() < size) {
                return;
            }
            lastJoinFanOut = t;
            joinedFannedOut = joinedLength;
            for (Peer p : peers) {
                if (p.joinedSent < joinedLength) {
                    send(p, ByteBuffer.wrap(joinedLog, p.joinedSent, joinedLength - p.joinedSent));
                    p.joinedSent = joinedLength;
                }
            }
        }
    }

    /**
     * Rank 0: a line to every connection that said hello. On the selector thread, the lines of one round of the
     * selector (the losses of many ranks gone at once, say) are gathered and fanned out together at its end
     * ({@link #endRound}): one write per rank.
     */
    void broadcast(String message) {
        byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
        if (Thread.currentThread() == serverThread) {
            roundLines.writeBytes(bytes);
            return;
        }
        fanOut(bytes);
    }

    /** Rank 0: {@code bytes} to every connection that said hello, after the JOINED lines they have not had. */
    private void fanOut(byte[] bytes) {
        fanOutJoins(true);
        for (Peer p : peers) {
            send(p, ByteBuffer.wrap(bytes));
        }
    }

    /** Rank 0's selector thread: fans out the lines broadcast during this round. */
    private void endRound() {
        if (roundLines.size() > 0) {
            byte[] bytes = roundLines.toByteArray();
            roundLines.reset();
            fanOut(bytes);
        }
    }

    private void send(Peer p, String line) {
        send(p, ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * Rank 0: queues {@code data} for a connection (its own view: the bytes may be shared) and writes what it can at
     * once, without blocking; the selector thread writes the rest when the connection can take it. A connection that
     * {@linkplain #stalled stopped reading} is ended by the selector thread as lost.
     */
    private void send(Peer p, ByteBuffer data) {
        boolean wake = false;
        synchronized (p) {
            if (p.ended || p.overflowed) {
                return;
            }
            if (p.seal != null) {   // sealed in write order: under this lock, in the order of the outbox
                data = LivenessWire.seal(p.seal, data);
            }
            if (p.outbox.isEmpty()) {
                p.lastDrained = System.nanoTime();
                try {
                    p.channel.write(data);
                } catch (IOException e) {
                    return;   // the selector thread sees the end
                }
                if (!data.hasRemaining()) {
                    return;
                }
            }
            p.outbox.add(data);
            p.queued += data.remaining();
            if (overflowIfStalled(p, System.nanoTime())) {
                wake = true;
            } else if (!p.writing) {
                p.writing = true;
                try {
                    p.key.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
                } catch (java.nio.channels.CancelledKeyException e) {
                    return;   // ended
                }
                wake = true;
            }
        }
        if (wake && Thread.currentThread() != serverThread) {
            selector.wakeup();
        }
    }

    /**
     * Whether a connection stopped reading: more than {@value #MAX_OUTBOX} bytes wait for it and it has taken none of
     * them for the liveness timeout, or more than {@value #HARD_OUTBOX} wait whatever it takes. A rank that reads,
     * only slower for a moment (a collection, a busy core), is not taken for lost (under this connection's lock).
     */
    private boolean stalled(Peer p, long now) {
        return p.queued > HARD_OUTBOX
                || p.queued > MAX_OUTBOX && now - p.lastDrained > l.timeoutMillis * 1_000_000L;
    }

    /**
     * When the connection {@linkplain #stalled stopped reading}: drops its outbox and hands it to the selector thread
     * to end, once; returns whether it did.
     */
    private boolean overflowIfStalled(Peer p, long now) {
        synchronized (p) {
            if (p.overflowed || p.ended || !stalled(p, now)) {
                return false;
            }
            p.overflowed = true;
            p.outbox.clear();
        }
        overflowed.add(p);
        return true;
    }

    /** Rank 0's selector thread: writes what a connection's outbox holds, as much as it takes now. */
    private void flush(Peer p) {
        boolean broke = false;
        synchronized (p) {
            try {
                while (!p.outbox.isEmpty()) {
                    ByteBuffer[] batch = new ByteBuffer[Math.min(64, p.outbox.size())];
                    java.util.Iterator<ByteBuffer> it = p.outbox.iterator();
                    for (int i = 0; i < batch.length; i++) {
                        batch[i] = it.next();
                    }
                    long wrote = p.channel.write(batch);
                    p.queued -= wrote;
                    if (wrote > 0) {
                        p.lastDrained = System.nanoTime();
                    }
                    while (!p.outbox.isEmpty() && !p.outbox.peekFirst().hasRemaining()) {
                        p.outbox.removeFirst();
                    }
                    if (batch[batch.length - 1].hasRemaining()) {
                        break;   // the connection takes no more now
                    }
                }
                if (p.outbox.isEmpty() && p.writing) {
                    p.writing = false;
                    p.key.interestOps(SelectionKey.OP_READ);
                }
            } catch (IOException e) {
                broke = true;
            }
        }
        if (broke) {
            end(p, null, false, null);
        }
    }


    /**
     * Stops the selector thread, which closes every connection and the listening socket; waits for it (at most 2 s)
     * unless called on it.
     */
    void stop() {
        l.closing = true;
        selector.wakeup();
        Thread t = serverThread;
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
