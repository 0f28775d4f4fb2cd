package org.nccl4j.examples.trace;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.nccl4j.examples.trace.TraceFinding.Kind;
import org.nccl4j.trace.TraceDump;
import org.nccl4j.trace.TraceEntry;
import org.nccl4j.trace.TraceOperation;

/**
 * Compares the dumps of one communicator's ranks and says what went wrong ({@link #analyze(List)}).
 *
 * <h2>How operations are compared</h2>
 * Every rank numbers its operations on the communicator 1, 2, 3, ...; NCCL needs every rank to issue the same
 * collectives in the same order, so the entries with the same sequence number are compared:
 * <ul>
 *   <li>collectives (allReduce, broadcast, reduce, allGather, reduceScatter, alltoAll, gather, scatter): the
 *       operation, the count, the data type, the reduction operator (allReduce, reduce, reduceScatter) and the root
 *       (broadcast, reduce, gather, scatter) must be equal;</li>
 *   <li>point-to-point operations (send, recv) are <em>not</em> compared field by field: a send on one rank pairs
 *       with a recv on another, and peers and counts differ by design. Only their place in the order is: any send or
 *       recv matches any other send or recv, so the number of operations per rank must still align. A program whose
 *       ranks issue different numbers of sends and receives on the communicator (the first and last stages of a
 *       pipeline, say) shows as ranks that skipped or added operations;</li>
 *   <li>group entries match any group entry (their fields are the caller's); graphLaunch entries must agree in
 *       count (the operations the graph holds).</li>
 * </ul>
 * Only the sequence numbers that both rings still hold are compared (rings wrap; a dump holds the last
 * {@code capacity} operations).
 *
 * <h2>The reference</h2>
 * Each rank is compared with a reference rank: the rank that agrees with the most ranks over the most operations
 * (for each other rank, the number of common sequence numbers that match before the first difference, summed),
 * the majority's view of what the program did. Ties go to the lowest rank, so with two ranks, "rank 1 skipped X"
 * means as much as "rank 0 added X".
 *
 * <h2>What is reported</h2>
 * For each rank, its first difference from the reference, at sequence number {@code k}:
 * <ul>
 *   <li>skipped: from {@code k} on, the rank's entries match the reference's from {@code k + d} on
 *       ({@code d} from 1 to {@value #MAX_SHIFT}): it did not issue the reference's {@code k .. k+d-1};</li>
 *   <li>added: from {@code k + d} on, the rank's entries match the reference's from {@code k} on: it issued
 *       {@code k .. k+d-1} that the reference did not;</li>
 *   <li>shifted: both fit, because the operations that follow repeat;</li>
 *   <li>a mismatch: when the entries after {@code k} still match unshifted, or no shift fits: the fields that
 *       differ at {@code k}, with each rank's value.</li>
 * </ul>
 * Then who waits: a rank's oldest entry still {@code ENQUEUED} is the operation it waits in. When ranks wait in
 * sequence number {@code s} and other ranks have not enqueued {@code s} (their last enqueued is lower), those are
 * the ranks everyone waits for. Ranks of the communicator without a dump are reported as lost or not dumped.
 */
public final class TraceComparer {
    /** The most operations a rank may have skipped or added in a row for the analyzer to say so. */
    public static final int MAX_SHIFT = 4;
    /** The most findings the verdict line names; the rest are in the details. */
    public static final int MAX_SUMMARIES = 4;

    private TraceComparer() {
    }

    /** One rank's dump, indexed by sequence number. */
    private static final class Rank {
        final int rank;
        final TraceInput input;
        final TraceDump dump;
        final List<TraceEntry> entries;
        final Map<Long, TraceEntry> bySeq = new LinkedHashMap<>();
        final TraceEntry pending;

        Rank(TraceInput input) {
            this.input = input;
            this.dump = input.dump();
            this.rank = dump.rank();
            this.entries = dump.entries();
            TraceEntry p = null;
            for (TraceEntry e : entries) {
                bySeq.put(e.sequence(), e);
                if (p == null && e.state() == TraceEntry.State.ENQUEUED) {
                    p = e;
                }
            }
            pending = p;
        }

        long firstHeld() {
            return entries.isEmpty() ? 0 : entries.get(0).sequence();
        }

        long lastHeld() {
            return entries.isEmpty() ? 0 : entries.get(entries.size() - 1).sequence();
        }
    }

    /** A rank's first difference from the reference. */
    private record Divergence(Rank rank, Kind kind, long seq, int shift) {
    }

    /**
     * Analyzes the dumps of one communicator.
     *
     * @param inputs the dumps, all of the same communicator name and size; of a rank with more than one dump, the
     *        latest ({@code dumpedAt}) is used and the others are named in the notes
     * @return the verdict
     * @throws IllegalArgumentException when inputs is empty or the dumps are of different communicators or sizes
     */
    public static TraceVerdict analyze(List<TraceInput> inputs) {
        if (inputs.isEmpty()) {
            throw new IllegalArgumentException("no dumps to analyze");
        }
        String name = inputs.get(0).dump().communicator();
        int size = inputs.get(0).dump().size();
        for (TraceInput in : inputs) {
            if (!Objects.equals(name, in.dump().communicator()) || size != in.dump().size()) {
                throw new IllegalArgumentException(in.file() + " is of another communicator ("
                        + in.dump().communicator() + ", size " + in.dump().size() + ") than " + inputs.get(0).file()
                        + " (" + name + ", size " + size + ")");
            }
        }
        List<String> notes = new ArrayList<>();
        List<Rank> ranks = latestPerRank(inputs, notes);
        Set<Integer> present = new TreeSet<>();
        ranks.forEach(r -> present.add(r.rank));
        List<Integer> missing = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            if (!present.contains(r)) {
                missing.add(r);
            }
        }
        List<TraceFinding> findings = new ArrayList<>();
        if (!missing.isEmpty()) {
            String s = TraceText.ranks(missing) + (missing.size() == 1 ? " has" : " have")
                    + " no dump (lost or not dumped)";
            findings.add(new TraceFinding(Kind.MISSING, missing, null, s, s + ": " + present.size() + " of " + size
                    + " ranks dumped", Map.of()));
        }

        Rank reference = null;
        String referenceNote = "";
        if (ranks.size() >= 2) {
            String[] note = new String[1];
            reference = chooseReference(ranks, note);
            referenceNote = note[0];
            List<Divergence> divergences = new ArrayList<>();
            for (Rank x : ranks) {
                if (x != reference) {
                    Divergence d = diverge(x, reference, notes);
                    if (d != null) {
                        divergences.add(d);
                    }
                }
            }
            findings.addAll(shiftFindings(divergences, reference));
            findings.addAll(mismatchFindings(divergences, reference, ranks));
        }

        List<String> waiting = new ArrayList<>();
        Set<Integer> coveredWaiters = new TreeSet<>();
        TraceFinding waitsFor = waits(ranks, missing.isEmpty(), waiting, coveredWaiters);
        if (waitsFor != null) {
            findings.add(waitsFor);
        }
        notes(ranks, notes);

        List<String> clauses = new ArrayList<>();
        for (int i = 0; i < findings.size() && i < MAX_SUMMARIES; i++) {
            clauses.add(findings.get(i).summary());
        }
        if (findings.size() > MAX_SUMMARIES) {
            int more = findings.size() - MAX_SUMMARIES;
            clauses.add("and " + more + " more problem" + (more == 1 ? "" : "s") + " (below)");
        }
        clauses.addAll(waitClauses(ranks, coveredWaiters, missing.isEmpty()));
        String summary;
        if (findings.isEmpty()) {
            summary = consistentSummary(ranks, size) + (clauses.isEmpty() ? "; nothing pending"
                    : "; " + String.join("; ", clauses));
        } else {
            summary = String.join("; ", clauses);
        }
        List<TraceVerdict.RankState> states = new ArrayList<>();
        for (Rank r : ranks) {
            states.add(new TraceVerdict.RankState(r.rank, r.input.file(), r.dump.host(), r.dump.pid(), r.dump.reason(),
                    r.dump.failure(), r.dump.lastEnqueued(), r.dump.lastCompleted(), r.firstHeld(), r.pending));
        }
        return new TraceVerdict(name, size, states, missing, reference == null ? null : reference.rank, referenceNote,
                findings, waiting, notes, summary);
    }

    // ---------------------------------------------------------------- dumps per rank

    private static List<Rank> latestPerRank(List<TraceInput> inputs, List<String> notes) {
        Map<Integer, List<TraceInput>> byRank = new TreeMap<>();
        for (TraceInput in : inputs) {
            byRank.computeIfAbsent(in.dump().rank(), k -> new ArrayList<>()).add(in);
        }
        List<Rank> ranks = new ArrayList<>();
        for (Map.Entry<Integer, List<TraceInput>> e : byRank.entrySet()) {
            List<TraceInput> all = new ArrayList<>(e.getValue());
            all.sort(Comparator.comparing((TraceInput i) -> i.dump().dumpedAt())
                    .thenComparing(i -> i.file().toString()));
            TraceInput latest = all.get(all.size() - 1);
            if (all.size() > 1) {
                List<String> older = all.subList(0, all.size() - 1).stream()
                        .map(i -> i.file() + " (dumped at " + i.dump().dumpedAt() + ")").toList();
                notes.add("rank " + e.getKey() + " has " + all.size() + " dumps: used the latest, " + latest.file()
                        + " (dumped at " + latest.dump().dumpedAt() + "); ignored " + String.join(", ", older)
                        + ": pass the dumps of one run only, or name the communicators");
            }
            ranks.add(new Rank(latest));
        }
        return ranks;
    }

    // ---------------------------------------------------------------- comparing entries

    /**
     * The fields in which two entries of the same sequence number differ: {@code operation}, else any of
     * {@code count}, {@code type}, {@code op}, {@code root} (see the class description).
     */
    static List<String> differences(TraceEntry a, TraceEntry b) {
        if (a.operation().pointToPoint() && b.operation().pointToPoint()) {
            return List.of();
        }
        if (a.operation() != b.operation()) {
            return List.of("operation");
        }
        TraceOperation op = a.operation();
        if (op == TraceOperation.group) {
            return List.of();
        }
        List<String> d = new ArrayList<>();
        if (a.count() != b.count()) {
            d.add("count");
        }
        if (op == TraceOperation.graphLaunch) {
            return d;
        }
        if (!Objects.equals(a.dataType(), b.dataType())) {
            d.add("type");
        }
        if (op.reduces() && !Objects.equals(a.reduceOp(), b.reduceOp())) {
            d.add("op");
        }
        if (op.rooted() && !Objects.equals(a.peer(), b.peer())) {
            d.add("root");
        }
        return d;
    }

    private static boolean matches(TraceEntry a, TraceEntry b) {
        return differences(a, b).isEmpty();
    }

    /** What an entry is compared by, as a string: equal keys match (see {@link #differences}). */
    private static String key(TraceEntry e) {
        TraceOperation op = e.operation();
        if (op.pointToPoint()) {
            return "p2p";
        }
        if (op == TraceOperation.group) {
            return "group";
        }
        if (op == TraceOperation.graphLaunch) {
            return "graphLaunch " + e.count();
        }
        return op + " " + e.count() + " " + e.dataType() + " " + (op.reduces() ? e.reduceOp() : "") + " "
                + (op.rooted() ? e.peer() : "");
    }

    /** How many common sequence numbers of a and b match before their first difference. */
    private static int agreed(Rank a, Rank b) {
        int n = 0;
        for (TraceEntry e : a.entries) {
            TraceEntry f = b.bySeq.get(e.sequence());
            if (f != null) {
                if (!matches(e, f)) {
                    break;
                }
                n++;
            }
        }
        return n;
    }

    /**
     * The rank that agrees with the most ranks over the most operations. Ranks with the same entries (by
     * {@link #key}) form one class and are compared once.
     */
    private static Rank chooseReference(List<Rank> ranks, String[] note) {
        Map<List<String>, List<Rank>> classes = new LinkedHashMap<>();
        for (Rank r : ranks) {
            List<String> k = new ArrayList<>(r.entries.size());
            for (TraceEntry e : r.entries) {
                k.add(e.sequence() + ":" + key(e));
            }
            classes.computeIfAbsent(k, x -> new ArrayList<>()).add(r);
        }
        if (classes.size() == 1) {
            note[0] = "every rank has the same operations";
            return ranks.get(0);
        }
        List<List<Rank>> list = new ArrayList<>(classes.values());
        long[] score = new long[list.size()];
        for (int i = 0; i < list.size(); i++) {
            for (int j = 0; j < list.size(); j++) {
                long a = agreed(list.get(i).get(0), list.get(j).get(0));
                score[i] += a * (list.get(j).size() - (i == j ? 1 : 0));
            }
        }
        long best = Long.MIN_VALUE;
        for (long s : score) {
            best = Math.max(best, s);
        }
        Rank chosen = null;
        int tied = 0;
        for (int i = 0; i < list.size(); i++) {
            if (score[i] == best) {
                tied++;
                Rank first = list.get(i).get(0);
                if (chosen == null || first.rank < chosen.rank) {
                    chosen = first;
                }
            }
        }
        note[0] = tied > 1 ? "no majority: the lowest of the ranks that agree with the most ranks"
                : "the majority: it agrees with the most ranks over the most operations";
        return chosen;
    }

    /** x's first difference from the reference r, or null when they agree wherever both hold an entry. */
    private static Divergence diverge(Rank x, Rank r, List<String> notes) {
        long k = -1;
        int common = 0;
        for (TraceEntry e : x.entries) {
            TraceEntry f = r.bySeq.get(e.sequence());
            if (f != null) {
                common++;
                if (!matches(e, f)) {
                    k = e.sequence();
                    break;
                }
            }
        }
        if (common == 0) {
            if (!x.entries.isEmpty() && !r.entries.isEmpty()) {
                notes.add("rank " + x.rank + " holds #" + x.firstHeld() + " to #" + x.lastHeld() + ", rank " + r.rank
                        + " (the reference) #" + r.firstHeld() + " to #" + r.lastHeld()
                        + ": no operation in common to compare");
            }
            return null;
        }
        if (k < 0) {
            return null;
        }
        // the entries after k still match unshifted: a difference at k only
        int after = 0;
        boolean alignedTail = true;
        for (TraceEntry e : x.entries) {
            TraceEntry f = e.sequence() > k ? r.bySeq.get(e.sequence()) : null;
            if (f != null) {
                after++;
                if (!matches(e, f)) {
                    alignedTail = false;
                    break;
                }
            }
        }
        if (after == 0 || !alignedTail) {
            for (int d = 1; d <= MAX_SHIFT; d++) {
                boolean skipped = shiftFits(x, r, k, d);
                boolean added = shiftFits(r, x, k, d);
                if (skipped || added) {
                    Kind kind = skipped && added ? Kind.SHIFTED : skipped ? Kind.SKIPPED : Kind.ADDED;
                    return new Divergence(x, kind, k, d);
                }
            }
        }
        return new Divergence(x, Kind.MISMATCH, k, 0);
    }

    /**
     * Whether a's entries from k on match b's from k + d on: at least one pair compared, and every pair that both
     * rings hold matches.
     */
    private static boolean shiftFits(Rank a, Rank b, long k, int d) {
        int compared = 0;
        for (TraceEntry e : a.entries) {
            if (e.sequence() < k) {
                continue;
            }
            TraceEntry f = b.bySeq.get(e.sequence() + d);
            if (f != null) {
                if (!matches(e, f)) {
                    return false;
                }
                compared++;
            }
        }
        return compared > 0;
    }

    // ---------------------------------------------------------------- findings

    /** The operations k .. k+d-1 of a rank, named: one, or {@code "2 operations from #3: a, b"}. */
    private static String operations(Rank r, long k, int d) {
        List<String> named = new ArrayList<>();
        for (long s = k; s < k + d; s++) {
            TraceEntry e = r.bySeq.get(s);
            named.add(e == null ? "#" + s + " (no longer in rank " + r.rank + "'s ring)" : TraceText.entry(e));
        }
        return d == 1 ? named.get(0) : d + " operations from #" + k + ": " + String.join(", ", named);
    }

    private static List<TraceFinding> shiftFindings(List<Divergence> divergences, Rank ref) {
        // the ranks that skipped or added the same operations at the same place, together
        Map<String, List<Divergence>> groups = new LinkedHashMap<>();
        for (Divergence d : divergences) {
            if (d.kind() == Kind.MISMATCH) {
                continue;
            }
            String what = switch (d.kind()) {
                case SKIPPED -> "skipped " + operations(ref, d.seq(), d.shift());
                case ADDED -> "added " + operations(d.rank(), d.seq(), d.shift());
                default -> "skipped " + operations(ref, d.seq(), d.shift()) + " or added "
                        + operations(d.rank(), d.seq(), d.shift());
            };
            String key = d.kind() + "|" + d.seq() + "|" + d.shift() + "|" + what;
            groups.computeIfAbsent(key, x -> new ArrayList<>()).add(d);
        }
        List<TraceFinding> out = new ArrayList<>();
        for (Map.Entry<String, List<Divergence>> g : groups.entrySet()) {
            Divergence d = g.getValue().get(0);
            List<Integer> who = g.getValue().stream().map(v -> v.rank().rank).toList();
            String what = g.getKey().substring(g.getKey().lastIndexOf('|') + 1);
            String summary = TraceText.ranks(who) + " " + what;
            long k = d.seq();
            String ops = (TraceText.one(who) ? "its" : "their") + " operations";
            String detail = switch (d.kind()) {
                case SKIPPED -> summary + ": from #" + k + " on, " + ops + " match rank " + ref.rank + "'s from #"
                        + (k + d.shift()) + " on";
                case ADDED -> summary + ": from #" + (k + d.shift()) + " on, " + ops + " match rank " + ref.rank
                        + "'s from #" + k + " on";
                default -> summary + ": " + ops + " are shifted by " + d.shift() + " against rank " + ref.rank
                        + "'s from #" + k + " on, and the operations that follow repeat, so both fit";
            };
            out.add(new TraceFinding(d.kind(), who, k, summary, detail, Map.of()));
        }
        return out;
    }

    /** A field's value in a mismatch, as the report prints it. */
    private static String value(String field, TraceEntry e) {
        return switch (field) {
            case "operation" -> e.operation() + " (" + TraceText.fields(e) + ")";
            case "count" -> Long.toString(e.count());
            case "type" -> e.dataType() == null ? "none" : TraceText.shortName(e.dataType());
            case "op" -> e.reduceOp() == null ? "none" : TraceText.shortName(e.reduceOp());
            case "root" -> e.peer() == null ? "none" : e.peer().toString();
            default -> throw new IllegalArgumentException(field);
        };
    }

    private static List<TraceFinding> mismatchFindings(List<Divergence> divergences, Rank ref, List<Rank> ranks) {
        Map<Long, List<Rank>> bySeq = new TreeMap<>();
        for (Divergence d : divergences) {
            if (d.kind() == Kind.MISMATCH) {
                bySeq.computeIfAbsent(d.seq(), x -> new ArrayList<>()).add(d.rank());
            }
        }
        // the ranks whose entries are shifted from some point on: their values there are not the same operation's
        Map<Integer, Long> shiftedFrom = new TreeMap<>();
        for (Divergence d : divergences) {
            if (d.kind() != Kind.MISMATCH) {
                shiftedFrom.put(d.rank().rank, d.seq());
            }
        }
        List<TraceFinding> out = new ArrayList<>();
        for (Map.Entry<Long, List<Rank>> m : bySeq.entrySet()) {
            long k = m.getKey();
            TraceEntry refEntry = ref.bySeq.get(k);
            Set<String> fields = new LinkedHashSet<>();
            for (Rank x : m.getValue()) {
                fields.addAll(differences(refEntry, x.bySeq.get(k)));
            }
            if (fields.contains("operation")) {
                fields.retainAll(Set.of("operation"));
            }
            List<Rank> shown = new ArrayList<>();
            shown.add(ref);
            for (Rank r : ranks) {
                Long from = shiftedFrom.get(r.rank);
                if (r != ref && r.bySeq.containsKey(k) && (from == null || from > k)) {
                    shown.add(r);
                }
            }
            Map<String, Map<String, List<Integer>>> diffs = new LinkedHashMap<>();
            List<String> parts = new ArrayList<>();
            for (String f : fields) {
                Map<String, List<Integer>> values = new LinkedHashMap<>();
                for (Rank r : shown) {
                    values.computeIfAbsent(value(f, r.bySeq.get(k)), x -> new ArrayList<>()).add(r.rank);
                }
                values.values().forEach(l -> l.sort(null));
                diffs.put(f, values);
                List<String> each = new ArrayList<>();
                values.forEach((v, rs) -> each.add(TraceText.ranks(rs) + ": " + v));
                parts.add(f + " (" + String.join("; ", each) + ")");
            }
            String summary;
            if (fields.contains("operation")) {
                List<String> each = new ArrayList<>();
                diffs.get("operation").forEach((v, rs) -> each.add(v + " on " + TraceText.ranks(rs)));
                summary = "#" + k + " is " + each.get(0) + " but " + String.join(", ", each.subList(1, each.size()));
            } else {
                summary = refEntry.operation() + " #" + k + " differs: " + String.join(", ", parts);
            }
            String detail = summary + ": every rank must issue the same collective with the same count, type, operator"
                    + " and root";
            List<Integer> who = m.getValue().stream().map(r -> r.rank).sorted().toList();
            out.add(new TraceFinding(Kind.MISMATCH, who, k, summary, detail, diffs));
        }
        return out;
    }

    /**
     * Fills waiting (who waits in what) and returns the finding for the ranks waited for, if any: the lowest
     * sequence number s that ranks wait in and other ranks have not enqueued. The waiters named in that finding
     * go into covered.
     */
    private static TraceFinding waits(List<Rank> ranks, boolean allDumped, List<String> waiting, Set<Integer> covered) {
        Map<Long, List<Rank>> waiters = new TreeMap<>();
        for (Rank r : ranks) {
            if (r.pending != null) {
                waiters.computeIfAbsent(r.pending.sequence(), x -> new ArrayList<>()).add(r);
            }
        }
        for (Map.Entry<Long, List<Rank>> w : waiters.entrySet()) {
            waiting.add(waitText(w.getKey(), w.getValue(), ranks, allDumped));
        }
        for (Map.Entry<Long, List<Rank>> w : waiters.entrySet()) {
            long s = w.getKey();
            List<Rank> laggards = ranks.stream().filter(r -> r.dump.lastEnqueued() < s).toList();
            if (laggards.isEmpty()) {
                continue;
            }
            List<Integer> who = laggards.stream().map(r -> r.rank).toList();
            List<Integer> waiting0 = w.getValue().stream().map(r -> r.rank).toList();
            covered.addAll(waiting0);
            String last;
            if (laggards.size() == 1) {
                long l = laggards.get(0).dump.lastEnqueued();
                last = l == 0 ? "it enqueued nothing" : "last enqueued #" + l;
            } else {
                List<String> each = new ArrayList<>();
                for (Rank r : laggards) {
                    each.add("rank " + r.rank + " #" + r.dump.lastEnqueued());
                }
                last = "last enqueued: " + String.join(", ", each);
            }
            TraceEntry op = w.getValue().get(0).pending;
            String verb = TraceText.one(waiting0) ? " waits" : " wait";
            String has = TraceText.one(who) ? " has" : " have";
            boolean everyone = allDumped && waiting0.size() + who.size() == ranks.size();
            String summary = everyone
                    ? "everyone waits for " + TraceText.ranks(who) + ": " + TraceText.ranks(waiting0) + verb + " in "
                            + op.operation() + " #" + s + ", which " + TraceText.ranks(who) + has + " not enqueued ("
                            + last + ")"
                    : TraceText.ranks(waiting0) + verb + " for " + TraceText.ranks(who) + " in " + op.operation() + " #"
                            + s + ", which " + TraceText.ranks(who) + has + " not enqueued (" + last + ")";
            String detail = summary + "; " + TraceText.ranks(waiting0) + verb + " in " + TraceText.entry(op);
            return new TraceFinding(Kind.WAITS_FOR, who, s, summary, detail, Map.of());
        }
        return null;
    }

    private static String waitText(long s, List<Rank> waiters, List<Rank> ranks, boolean allDumped) {
        // the waiters of one sequence number may be in different operations (a rank that skipped one)
        Map<String, List<Integer>> byOp = new LinkedHashMap<>();
        for (Rank r : waiters) {
            byOp.computeIfAbsent(r.pending.operation() + " #" + s, x -> new ArrayList<>()).add(r.rank);
        }
        List<String> parts = new ArrayList<>();
        byOp.forEach((op, rs) -> parts.add(TraceText.ranks(rs) + (TraceText.one(rs) ? " waits" : " wait") + " in "
                + op));
        String text = String.join("; ", parts);
        if (allDumped && byOp.size() == 1 && waiters.size() == ranks.size() && ranks.size() > 1) {
            text += " (every rank enqueued it)";
        }
        return text;
    }

    /** The waiting clauses for the verdict line: those not already in the finding of the ranks waited for. */
    private static List<String> waitClauses(List<Rank> ranks, Set<Integer> covered, boolean allDumped) {
        Map<Long, List<Rank>> waiters = new TreeMap<>();
        for (Rank r : ranks) {
            if (r.pending != null && !covered.contains(r.rank)) {
                waiters.computeIfAbsent(r.pending.sequence(), x -> new ArrayList<>()).add(r);
            }
        }
        List<String> out = new ArrayList<>();
        waiters.forEach((s, w) -> out.add(waitText(s, w, ranks, allDumped)));
        return out;
    }

    private static void notes(List<Rank> ranks, List<String> notes) {
        boolean p2p = false;
        for (Rank r : ranks) {
            TraceDump d = r.dump;
            if (d.failure() != null) {
                notes.add("rank " + r.rank + " (" + d.reason() + "): " + d.failure());
            }
            for (TraceEntry e : r.entries) {
                p2p |= e.operation().pointToPoint();
                if (e.state() == TraceEntry.State.FAILED) {
                    notes.add("rank " + r.rank + ": " + TraceText.entry(e) + " FAILED after " + e.completedAfterMicros()
                            + " us");
                }
            }
            long next = d.lastCompleted() + 1;
            if (next <= d.lastEnqueued() && (r.entries.isEmpty() || next < r.firstHeld())) {
                notes.add("rank " + r.rank + ": #" + next + " is not marked completed, and its ring no longer holds it"
                        + " (it holds "
                        + (r.entries.isEmpty() ? "nothing" : "#" + r.firstHeld() + " to #" + r.lastHeld()) + ")");
            }
        }
        if (p2p) {
            notes.add("send and recv are compared by their place in the order only: their peers and counts differ by"
                    + " design");
        }
    }

    private static String consistentSummary(List<Rank> ranks, int size) {
        long first = Long.MAX_VALUE;
        long last = 0;
        for (Rank r : ranks) {
            if (!r.entries.isEmpty()) {
                first = Math.min(first, r.firstHeld());
                last = Math.max(last, r.lastHeld());
            }
        }
        String who = size == 1 ? "rank 0 alone" : "all " + size + " ranks agree";
        return "consistent: " + who + (last == 0 ? ", no operation recorded" : " (#" + first + " to #" + last + ")");
    }
}
