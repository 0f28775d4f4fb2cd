package org.nccl4j.control;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.nccl4j.trace.FlightRecorder;

/**
 * What a rank has heard of its peers' departures over the liveness channel, and what that means for its own pending
 * operations. Every rank that leaves says how ({@link Kind}: a clean close, an abort, a failure, the end of its
 * process) and where it stood (the number of its last collective, see {@link Ledger}), with its cause when it has one;
 * rank 0 relays it to every rank. A rank that issued a collective the departed rank never issued fails at once,
 * naming both, whether the collective is still waiting or has ended (without the departed rank's part: see
 * {@link #endedWithout}); one whose pending collectives the departed rank did issue is left alone after a clean close
 * (the departed rank's finalize completes them) and failed after a short grace otherwise (an abort cancels them).
 *
 * <p>Also kept here: the verdict of a mismatch that rank 0 found by comparing fingerprints ({@link Agreement}), and
 * the highest collective number any rank has reported, which tells a closing rank that a peer went on without it.
 * Departures carry the communicator's generation (its number of recoveries): news of an earlier communicator is
 * ignored.
 */
public final class Departures {
    /** How long a pending collective that the departed rank did issue may still take after an abort or failure. */
    static final long GRACE_NANOS = 1_000_000_000L;
    /** How long a failure waits for the cause that may follow a clean close (the exception leaving the rank). */
    static final long CAUSE_WAIT_NANOS = 400_000_000L;

    /** How a rank left. */
    public enum Kind {
        /** {@link org.nccl4j.Communicator#close()}: it will issue nothing more, and finalizes what it issued. */
        CLOSE("closed its communicator"),
        /** {@link org.nccl4j.Communicator#abort()}: it issued nothing more, and cancelled what was in flight. */
        ABORT("aborted its communicator"),
        /** The watchdog failed its communicator (a timeout, an error, a peer's departure). */
        FAILURE("failed"),
        /** Its process is ending (System.exit, the end of main, an uncaught exception, SIGTERM or SIGINT). */
        EXIT("is exiting");

        /** What a rank that left so does, in a message: {@code closed its communicator}. */
        public final String says;

        Kind(String says) {
            this.says = says;
        }
    }

    /**
     * One rank's departure as heard.
     *
     * @param rank its launch rank
     * @param host its host
     * @param pid its process id
     * @param kind how it left
     * @param generation the generation of the communicator it left
     * @param last the number of its last collective (0: none)
     * @param lastName {@code allReduce #3}, or {@code none}
     * @param cause why, one line, or null
     * @param heardNanos when this rank heard of it ({@link System#nanoTime()})
     */
    public record Departure(int rank, String host, long pid, Kind kind, int generation, long last, String lastName,
            String cause, long heardNanos) {
        Departure withCause(String c) {
            return new Departure(rank, host, pid, kind, generation, last, lastName, c, heardNanos);
        }

        /** {@code rank 1 (host, pid 42) closed its communicator after allReduce #3, its last (cause)}. */
        String describe(int asRank) {
            StringBuilder sb = new StringBuilder("rank ").append(asRank);
            if (host != null) {
                sb.append(" (").append(host).append(", pid ").append(pid).append(')');
            }
            sb.append(' ').append(kind.says);
            sb.append(last == 0 ? " before its first collective" : " after " + lastName + ", its last");
            if (cause != null && !cause.isEmpty()) {
                sb.append(" (").append(cause).append(')');
            }
            return sb.toString();
        }
    }

    /**
     * What the watchdog is to do: fail with {@code text}; {@code mismatch} for a divergence found by rank 0;
     * {@code leftBehind} when a peer that issued an operation this rank has not issued failed, aborted or exited
     * (this rank can never catch up: {@code LeftBehindExit} in {@code org.nccl4j}); {@code operation}, the flight
     * recorder's number of the collective the text names (0: none, or no longer in the recorder), which the failure
     * describes.
     */
    public record Verdict(String text, boolean mismatch, int[] ranks, boolean leftBehind, long operation) {
    }

    private final Map<Integer, Departure> byLaunchRank = new ConcurrentHashMap<>();
    /** Causes heard before the departure they belong to (an exception may travel ahead of the exit). */
    private final Map<Integer, String> causes = new ConcurrentHashMap<>();
    /** By launch rank: the running fingerprint through the last collective a closing rank announced. */
    private final Map<Integer, String> fingerprints = new ConcurrentHashMap<>();
    private volatile String mismatch;
    private volatile int mismatchGeneration = -1;
    private volatile long highestReported;

    /** A departure heard (or this rank's own). A second one of the same rank keeps the first kind, adds a cause. */
    void heard(Departure d) {
        String early = causes.remove(d.rank());
        Departure with = d.cause() == null && early != null ? d.withCause(early) : d;
        byLaunchRank.merge(d.rank(), with, (old, now) -> old.generation() != now.generation() ? now
                : old.kind() == Kind.FAILURE && now.kind() == Kind.EXIT ? now.withCause(old.cause())
                : old.cause() == null && now.cause() != null ? old.withCause(now.cause()) : old);
    }

    /** A closing rank's fingerprint through its last collective. */
    void fingerprint(int launchRank, String fingerprint) {
        fingerprints.put(launchRank, fingerprint);
    }

    /**
     * @param launchRank a rank that closed
     * @return the fingerprint through its last collective that it closed with, or null
     */
    public String fingerprintOf(int launchRank) {
        return fingerprints.get(launchRank);
    }

    /** A departing rank's cause, heard on its own (its uncaught exception). */
    void cause(int launchRank, String cause) {
        Departure d = byLaunchRank.get(launchRank);
        if (d == null) {
            causes.put(launchRank, cause);
        } else if (d.cause() == null) {
            byLaunchRank.put(launchRank, d.withCause(cause));
        }
    }

    /** Rank 0 found that the ranks issued different collectives. */
    void mismatch(int generation, String text) {
        if (mismatch == null || mismatchGeneration != generation) {
            mismatchGeneration = generation;
            mismatch = text;
        }
    }

    /**
     * @param generation the communicator's generation
     * @return the mismatch rank 0 found on it, or null
     */
    public String mismatch(int generation) {
        return mismatchGeneration == generation ? mismatch : null;
    }

    /** Rank 0 says: some rank has issued up to collective #n. */
    void reported(long n) {
        if (n > highestReported) {
            highestReported = n;
        }
    }

    /** @return the highest collective number a rank has reported */
    public long highestReported() {
        return highestReported;
    }

    /**
     * @param generation the communicator's generation
     * @return its departures, by launch rank
     */
    public Map<Integer, Departure> of(int generation) {
        Map<Integer, Departure> out = new TreeMap<>();
        for (Departure d : byLaunchRank.values()) {
            if (d.generation() == generation) {
                out.put(d.rank(), d);
            }
        }
        return out;
    }

    /**
     * The departures of communicator {@code generation} by ranks other than {@code self} that are still in it.
     *
     * @param rankOf maps a launch rank to the communicator's rank (-1: left out by a recovery)
     */
    private List<Departure> others(int self, int generation, java.util.function.IntUnaryOperator rankOf) {
        List<Departure> out = new ArrayList<>();
        for (Departure d : byLaunchRank.values()) {
            if (d.generation() == generation && d.rank() != self && rankOf.applyAsInt(d.rank()) >= 0) {
                out.add(d);
            }
        }
        return out;
    }

    /**
     * The unclean departures (abort, failure, exit) of the others, described as a failure names them.
     *
     * @param self this rank's launch rank
     * @param generation the communicator's generation
     * @param rankOf maps a launch rank to the communicator's rank (-1: not in it)
     * @return them joined by {@code ; }; null when there is none
     */
    public String unclean(int self, int generation, java.util.function.IntUnaryOperator rankOf) {
        StringBuilder sb = new StringBuilder();
        for (Departure d : others(self, generation, rankOf)) {
            if (d.kind() != Kind.CLOSE) {
                sb.append(sb.length() == 0 ? "" : "; ").append(d.describe(rankOf.applyAsInt(d.rank())));
            }
        }
        return sb.length() == 0 ? null : sb.toString();
    }

    /**
     * Rank {@code launchRank} said hello after a departure of communicator {@code generation} was heard for it: that
     * one was a stranger's that claimed its rank first (without the job's secret), and is forgotten.
     */
    void arrived(int launchRank, int generation) {
        byLaunchRank.computeIfPresent(launchRank, (r, d) -> d.generation() == generation ? null : d);
    }

    /** Forgets everything (after a recovery the channel serves a new communicator). */
    void clear() {
        byLaunchRank.clear();
        causes.clear();
        fingerprints.clear();
        highestReported = 0;
    }

    /** @return whether any departure has been heard (of any communicator's generation): one read, no allocation */
    public boolean any() {
        return !byLaunchRank.isEmpty();
    }

    /**
     * A wait of this rank's returned normally over collectives up to the flight recorder's {@code coveredTrace}: the
     * departure of another member that never issued one of them, described as a failure names it, or null. Such a
     * collective did not reduce every rank's data, although it ended: seen on 4 x H200 with NCCL 2.28.3, where a
     * survivor aborting in the middle of a collective let a third rank's all-reduce end with two ranks' sum.
     *
     * @param self this rank's launch rank
     * @param ledger this rank's collectives on the communicator
     * @param coveredTrace the flight recorder's number of the last operation the wait covered
     * @param generation the communicator's generation
     * @param rankOf maps a launch rank to the communicator's rank (-1: not in it)
     * @return {@code allReduce #3 ended without rank 1's part: rank 1 (host, pid 42) closed ...}, or null
     */
    public String endedWithout(int self, Ledger ledger, long coveredTrace, int generation,
            java.util.function.IntUnaryOperator rankOf) {
        for (Departure d : others(self, generation, rankOf)) {
            long t = ledger.traceSeq(d.last() + 1);
            if (t != 0 && t <= coveredTrace) {
                int r = rankOf.applyAsInt(d.rank());
                return ledger.describe(d.last() + 1) + " ended without rank " + r + "'s part: " + d.describe(r);
            }
        }
        return null;
    }

    /**
     * Whether this rank's pending operations can no longer complete because of a departure or a mismatch, and
     * why. Called by the watchdog each poll; allocates only when it finds something.
     *
     * @param self this rank's launch rank
     * @param ledger this rank's collectives on the communicator
     * @param recorder its flight recorder (what has completed)
     * @param generation the communicator's generation
     * @param rankOf maps a launch rank to the communicator's rank (-1: not in it)
     * @param now {@link System#nanoTime()}
     * @return the verdict, or null
     */
    public Verdict verdict(int self, Ledger ledger, FlightRecorder recorder, int generation,
            java.util.function.IntUnaryOperator rankOf, long now) {
        String m = mismatch(generation);
        if (m != null) {
            return new Verdict(m, true, new int[0], false, 0);
        }
        if (byLaunchRank.isEmpty()) {
            return null;
        }
        long mine = ledger.last();
        boolean anyPending = recorder.oldestPending() != 0;
        List<Departure> blocking = new ArrayList<>();
        long first = 0;
        boolean behind = false;
        for (Departure d : others(self, generation, rankOf)) {
            // a collective it never issued: one that ended did so without its part (see endedWithout)
            boolean beyond = mine > d.last();
            if (beyond && d.kind() == Kind.CLOSE && d.cause() == null && now - d.heardNanos() < CAUSE_WAIT_NANOS) {
                return null;   // its exception may follow in a moment: look again next poll
            }
            // an unclean departure ends the communicator for every rank: at once when nothing of this rank's can
            // still complete, after the grace when an operation the departed rank issued is pending
            boolean unclean = d.kind() != Kind.CLOSE && (!anyPending || now - d.heardNanos() > GRACE_NANOS);
            if (beyond || unclean) {
                blocking.add(d);
                behind |= unclean && d.last() > mine;
                long n = beyond ? d.last() + 1 : anyPending ? Math.max(1, Math.min(mine, d.last())) : 0;
                first = first == 0 ? n : n == 0 ? first : Math.min(first, n);
            }
        }
        if (blocking.isEmpty()) {
            return null;
        }
        // a rank that failed only because another left echoes it: name the first cause, not the echoes
        List<Departure> primary = new ArrayList<>();
        for (Departure d : blocking) {
            if (!echo(d)) {
                primary.add(d);
            }
        }
        if (!primary.isEmpty()) {
            blocking = primary;
        }
        // a first collective that ended already ended without the departed rank's part: it says so
        boolean ended = first != 0 && completedThrough(ledger, first, recorder.lastCompleted());
        StringBuilder sb = new StringBuilder(first == 0 ? "no collective can complete any more"
                : ledger.describe(first) + (ended ? " ended without the part of a rank that left" : " cannot complete"))
                .append(": ");
        int[] ranks = new int[blocking.size()];
        for (int i = 0; i < blocking.size(); i++) {
            Departure d = blocking.get(i);
            ranks[i] = rankOf.applyAsInt(d.rank());
            sb.append(i == 0 ? "" : "; ").append(d.describe(ranks[i]));
        }
        return new Verdict(sb.toString(), false, ranks, behind, first == 0 ? 0 : ledger.traceSeq(first));
    }

    /** Whether collective #n has completed on this rank (unknown, e.g. out of the ring: taken as not). */
    private static boolean completedThrough(Ledger ledger, long n, long completedTrace) {
        long t = ledger.traceSeq(n);
        return t != 0 && t <= completedTrace;
    }

    /** A failure caused by another rank's departure (its peer's news relayed again). */
    private static boolean echo(Departure d) {
        return d.kind() == Kind.FAILURE && d.cause() != null && d.cause().startsWith("PeerDepartedException: ");
    }
}
