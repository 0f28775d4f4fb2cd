package org.nccl4j.control;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.nccl4j.RankPhase;
import org.nccl4j.launch.JobSecret;
import org.nccl4j.launch.Refusals;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The liveness channel's state as its parts share it: {@link Liveness}, the facade the core calls, which owns it, and
 * the two ends it starts, {@link LivenessHub} (rank 0's serving side) and {@link LivenessClient} (every rank's
 * connection), which read it and report what they hear through the methods below. The ends know the channel only as
 * this, so that they name nothing above them; the helpers all three use are here too.
 */
abstract class ChannelState {
    /** The channel's logger: every part of it (facade, hub, client, wire) logs as the facade. */
    static final Logger LOG = LoggerFactory.getLogger("org.nccl4j.control.Liveness");
    /** How often each side says it is alive. */
    static final long PING_MILLIS = 1000;
    /** How long a new connection has to authenticate and say hello. */
    static final long HELLO_MILLIS = 5000;
    /** The generation of a departure during start-up: no communicator has been made yet. */
    static final int STARTUP_GENERATION = -1;

    /** This rank (the launch's). */
    final int rank;
    /** Silence taken for a loss, in milliseconds. */
    final int timeoutMillis;
    /** The job's secret (both sides), or null: the channel is then unauthenticated. */
    final JobSecret secret;
    /** How long a connection has to authenticate and say hello (both sides). */
    volatile long helloMillis = HELLO_MILLIS;
    /**
     * Says what this rank refuses of rank 0's connection (a line it cannot read, one that fails its seal): one WARN
     * line per burst, the rest at DEBUG (rank 0's hub says the refusals of its port with its own).
     */
    final Refusals said = new Refusals(LOG);
    /** By launch rank. */
    final Map<Integer, RankProcess> lost = new ConcurrentHashMap<>();
    /** By launch rank: every rank that said hello. */
    final Map<Integer, RankProcess> roster = new ConcurrentHashMap<>();
    /** The channel is closing (or this rank's process is taken for dead): what ends now is no loss. */
    volatile boolean closing;
    /** What this rank heard of departures and mismatches. */
    final Departures departures = new Departures();
    /** This rank's phase ({@link RankPhase}), told to rank 0 (by rank 0: to every rank) as it changes. */
    volatile RankPhase phase = RankPhase.JOINED;
    /** Rank 0: by launch rank, the phase each rank last said; every rank: rank 0's under key 0. */
    final Map<Integer, RankPhase> phases = new ConcurrentHashMap<>();
    /** The communicator the channel serves, once attached: its collectives are reported and compared. */
    volatile Attached owner;
    /** This rank said how it leaves ({@code DEPART}); its connection lingers for a cause. */
    volatile boolean departed;
    /** Rank 0: the unique id of this start-up, for a rank whose id frame failed its check; null until offered. */
    volatile byte[] uniqueId;
    /** Other ranks: the id rank 0 sent on this channel ({@code UNIQUEID}), once asked for. */
    final CompletableFuture<byte[]> uniqueIdHeard = new CompletableFuture<>();

    ChannelState(int rank, int timeoutMillis, JobSecret secret) {
        this.rank = rank;
        this.timeoutMillis = timeoutMillis;
        this.secret = secret;
    }

    /** @return the communicator the channel serves, or null */
    Attached owner() {
        return owner;
    }

    /** A line of news for the communicator served: a peer failed, aborted, exited or diverged. */
    abstract void news(String what);

    /** {@code JOINED} (the fields of the line): a rank said hello to rank 0. */
    abstract void joined(String[] f);

    /** {@code LOST} (the fields of the line): rank 0 found a rank gone. */
    abstract void lost(String[] f);

    /** Rank {@code who} left during start-up: gone for any communicator of this start-up. */
    abstract void goneAtStartUp(int who, String host, long pid);

    /** @return whether this is rank 0 serving the channel */
    abstract boolean serves();

    /** Every rank but 0: rank 0's connection ended (or fell silent) without its goodbye ({@code why}). */
    abstract void lostRankZero(String why, boolean warn);

    /** Starts a daemon thread named {@code name}. */
    static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** Sleeps, keeping an interrupt. */
    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Closes, ignoring a failure (it is closed either way). */
    static void closeQuietly(java.io.Closeable c) {
        try {
            if (c != null) {
                c.close();
            }
        } catch (IOException e) {
            // closed
        }
    }
}
