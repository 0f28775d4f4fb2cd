package org.nccl4j.control;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.nccl4j.trace.TraceNames;

/**
 * Rank 0's comparison of what the ranks issued, without debug mode and at no cost per operation: each rank reports
 * the number of its last collective with its heartbeat ({@link Ledger}); rank 0 picks the highest number every rank
 * has reached, {@code T}, and asks each for its running fingerprint through {@code T} ({@code CHECK}); equal
 * fingerprints mean equal collectives through {@code T}. When they differ, it asks for the shapes of the collectives
 * since the last agreement ({@code DESCRIBE}, at most {@value #WINDOW} at a time), finds the first that differs, and
 * tells every rank ({@code MISMATCH}), naming every differing field on every rank. A comparison that agrees is
 * followed by the next as soon as the ranks have moved on (at most every {@value #MIN_INTERVAL_MILLIS} ms), so a
 * divergence is named well within two seconds of the collective that diverged.
 *
 * <p>Driven by the liveness server's threads: {@link #tick} from its clock, the others from the readers of the
 * ranks' lines; every method is synchronized. Ranks are launch ranks; names in the verdict are the communicator's
 * ranks, through the channel's mapping.
 */
final class Agreement {
    /** The most shapes asked for at once. */
    static final int WINDOW = 64;
    /** The least time between two comparisons. */
    static final long MIN_INTERVAL_MILLIS = 200;
    /** A comparison not answered by every rank in this time is dropped (a rank may be stopped: liveness tells). */
    static final long ANSWER_MILLIS = 3000;

    /** Sends a line to one rank ({@code rank}, line), or to every rank with rank -1. */
    interface Wire {
        void send(int rank, String line);
    }

    private final Wire wire;
    private final Consumer<String> onMismatch;
    private int generation;
    /** By launch rank: the last collective number each reported. */
    private final Map<Integer, Long> reported = new HashMap<>();
    private long agreedThrough;
    private long checking;   // T of the comparison under way, 0 when none
    private long askedAt;
    private final Map<Integer, String> answers = new TreeMap<>();
    private long describeFrom;
    private long describeTo;
    private final Map<Integer, String[]> shapes = new TreeMap<>();
    private boolean done;
    /**
     * The closing ranks whose close fingerprints differ, compared window by window through {@link #closedAt}: the
     * ranks may close before the next heartbeat's comparison, so their closes start one of their own. Null: none.
     */
    private List<Integer> closing;
    /** The last collective of the closing ranks compared. */
    private long closedAt;

    Agreement(Wire wire, Consumer<String> onMismatch) {
        this.wire = wire;
        this.onMismatch = onMismatch;
    }

    /** A rank reported collective #n of communicator {@code gen} (its heartbeat or its answer). */
    synchronized void reported(int rank, int gen, long n) {
        if (gen > generation) {
            reset(gen);
        }
        if (gen == generation) {
            reported.merge(rank, n, Math::max);
        }
    }

    private void reset(int gen) {
        closing = null;
        generation = gen;
        reported.clear();
        answers.clear();
        shapes.clear();
        agreedThrough = 0;
        checking = 0;
        describeTo = 0;
        done = false;
    }

    /**
     * Ranks {@code ranks} closed communicator {@code gen} after collective #{@code last} with differing fingerprints:
     * their shapes since the last agreement are compared now, window by window, so that the first collective that
     * differs is named ({@code MISMATCH}) while they wait to close, as the heartbeats' comparison would have.
     */
    synchronized void closedDiffering(List<Integer> ranks, int gen, long last) {
        if (gen < generation || done || ranks.size() < 2) {
            return;
        }
        if (gen > generation) {
            reset(gen);
        }
        closing = new ArrayList<>(ranks);
        closedAt = last;
        checking = 0;
        answers.clear();
        describe(closing, agreedThrough + 1, last);
    }

    /** A rank left the comparison (it departed or is lost). */
    synchronized void left(int rank) {
        reported.remove(rank);
        answers.remove(rank);
        shapes.remove(rank);
        settle();
    }

    /** The clock: starts a comparison when none is under way and every rank is past the last agreement. */
    synchronized void tick(Set<Integer> ranks, long nowMillis) {
        if (done) {
            return;
        }
        if (checking != 0 || describeTo != 0) {
            if (nowMillis - askedAt > ANSWER_MILLIS) {
                checking = 0;
                describeTo = 0;
                answers.clear();
                shapes.clear();
            }
            return;
        }
        if (nowMillis - askedAt < MIN_INTERVAL_MILLIS || ranks.size() < 2) {
            return;
        }
        long t = Long.MAX_VALUE;
        for (int r : ranks) {
            Long n = reported.get(r);
            if (n == null) {
                return;   // a rank has not reported yet
            }
            t = Math.min(t, n);
        }
        if (t <= agreedThrough) {
            return;
        }
        checking = t;
        askedAt = nowMillis;
        answers.clear();
        for (int r : ranks) {
            answers.put(r, null);
        }
        wire.send(-1, "CHECK " + generation + " " + t + "\n");
    }

    /** A rank's fingerprint through collective #t ({@code ?}: it no longer holds it). */
    synchronized void fingerprint(int rank, int gen, long t, String fp) {
        if (gen != generation || t != checking || !answers.containsKey(rank)) {
            return;
        }
        answers.put(rank, fp);
        settle();
    }

    /** A rank's shapes of collectives #from..#to ({@code ?} for one it no longer holds). */
    synchronized void shapes(int rank, int gen, long from, long to, String[] list) {
        if (gen != generation || from != describeFrom || to != describeTo || !shapes.containsKey(rank)) {
            return;
        }
        shapes.put(rank, list);
        settle();
    }

    private void settle() {
        if (checking != 0 && !answers.isEmpty() && !answers.containsValue(null)) {
            String seen = null;
            boolean differ = false;
            for (String fp : answers.values()) {
                if (!fp.equals("?")) {
                    differ |= seen != null && !seen.equals(fp);
                    seen = seen == null ? fp : seen;
                }
            }
            List<Integer> ranks = new ArrayList<>(answers.keySet());
            long t = checking;
            checking = 0;
            answers.clear();
            if (!differ) {
                agreedThrough = t;
                return;
            }
            describe(ranks, agreedThrough + 1, t);
            return;
        }
        if (describeTo != 0 && !shapes.isEmpty() && !shapes.containsValue(null)) {
            String verdict = firstDifference();
            long to = describeTo;
            List<Integer> ranks = new ArrayList<>(shapes.keySet());
            describeTo = 0;
            shapes.clear();
            if (verdict != null) {
                done = true;
                closing = null;
                onMismatch.accept(generation + " " + verdict);
                return;
            }
            agreedThrough = to;   // nothing differs in this window: the next comparison goes on from here
            if (closing != null && to < closedAt) {   // the closing ranks' next window, at once
                describe(closing, to + 1, closedAt);
            } else {
                closing = null;
            }
        }
    }

    private void describe(List<Integer> ranks, long from, long t) {
        describeFrom = from;
        describeTo = Math.min(t, from + WINDOW - 1);
        askedAt = System.currentTimeMillis();
        shapes.clear();
        for (int r : ranks) {
            shapes.put(r, null);
        }
        String line = "DESCRIBE " + generation + " " + describeFrom + " " + describeTo + "\n";
        if (closing == null) {
            wire.send(-1, line);
        } else {
            for (int r : ranks) {   // closing ranks are no longer among those a broadcast reaches
                wire.send(r, line);
            }
        }
    }

    /** The first collective whose shape differs between ranks, described with every differing field; or null. */
    private String firstDifference() {
        int n = (int) (describeTo - describeFrom + 1);
        for (int i = 0; i < n; i++) {
            Map<Integer, Ledger.Shape> at = new TreeMap<>();
            for (Map.Entry<Integer, String[]> e : shapes.entrySet()) {
                String[] list = e.getValue();
                if (i < list.length && !list[i].equals("?")) {
                    try {
                        at.put(e.getKey(), Ledger.Shape.parse(describeFrom + i, list[i]));
                    } catch (RuntimeException x) {
                        // a malformed shape: not compared
                    }
                }
            }
            String d = differences(describeFrom + i, at);
            if (d != null) {
                return d;
            }
        }
        return null;
    }

    /**
     * {@code collective #4 differs between ranks: rank 0 allReduce count 1048576 float32 sum, rank 1 allReduce count
     * 2097152 float16 sum (count and data type differ)}; null when every rank's shape is the same.
     */
    static String differences(long number, Map<Integer, Ledger.Shape> at) {
        if (at.size() < 2) {
            return null;
        }
        Ledger.Shape first = at.values().iterator().next();
        boolean op = false, count = false, type = false, red = false, root = false;
        for (Ledger.Shape s : at.values()) {
            op |= s.operation() != first.operation();
            count |= s.count() != first.count();
            type |= s.type() != first.type();
            red |= s.reduceOp() != first.reduceOp();
            root |= s.root() != first.root();
        }
        if (!(op || count || type || red || root)) {
            return null;
        }
        StringBuilder sb = new StringBuilder("collective #").append(number).append(" differs between ranks: ");
        boolean comma = false;
        for (Map.Entry<Integer, Ledger.Shape> e : at.entrySet()) {
            Ledger.Shape s = e.getValue();
            sb.append(comma ? ", " : "").append("rank ").append(e.getKey()).append(' ').append(s.name())
                    .append(" count ").append(s.count()).append(' ').append(typeName(s.type()));
            if (s.reduceOp() >= 0) {
                sb.append(' ').append(TraceNames.reduceOp(s.reduceOp()));
            }
            if (s.root() >= 0) {
                sb.append(" root ").append(s.root());
            }
            comma = true;
        }
        List<String> fields = new ArrayList<>();
        if (op) {
            fields.add("operation");
        }
        if (count) {
            fields.add("count");
        }
        if (type) {
            fields.add("data type");
        }
        if (red) {
            fields.add("reduction operator");
        }
        if (root) {
            fields.add("root");
        }
        sb.append(" (").append(String.join(" and ", fields)).append(fields.size() == 1 ? " differs)" : " differ)");
        return sb.toString();
    }

    private static String typeName(int code) {
        String name = TraceNames.dataType(code);
        return name != null ? name : "type " + code;
    }
}
