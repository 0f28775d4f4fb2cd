package org.nccl4j.tools.analyze;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.nccl4j.tools.analyze.TraceFinding.Kind;
import org.nccl4j.trace.TraceDump;
import org.nccl4j.trace.TraceEntry;
import org.nccl4j.trace.TraceOperation;

/**
 * Compares the dumps of one communicator's ranks and says what went wrong ({@link #analyze(List)}).
 *
 * <h2>How operations are compared</h2>
 * NCCL needs every rank to issue the same collectives in the same order; sends and receives pair up between two
 * ranks and legitimately differ from rank to rank (the first and last stages of a pipeline issue different numbers
 * of them). So the ranks' <em>collectives</em> are compared, in their order among collectives: the k-th collective
 * of one rank with the k-th of every other, sends and receives left out. (A collective's place k is its sequence
 * number less the sends and receives before it in the ring: exact when the ring holds the rank's operations from #1,
 * and, in a ring that wrapped, as if no send or receive came before the oldest entry it holds; a note says so.)
 * Two collectives match when:
 * <ul>
 *   <li>allReduce, broadcast, reduce, allGather, reduceScatter, alltoAll, gather, scatter: the operation, the count,
 *       the data type, the reduction operator (allReduce, reduce, reduceScatter) and the root (broadcast, reduce,
 *       gather, scatter) are equal;</li>
 *   <li>group entries match any group entry (their fields are the caller's); graphLaunch entries must agree in
 *       count (the operations the graph holds).</li>
 * </ul>
 * Reports name each operation by its rank's own sequence number ({@code allReduce #3}), as the dumps do; without
 * sends and receives, place and sequence number are the same. Only the places that both rings still hold are
 * compared (rings wrap; a dump holds the last {@code capacity} operations).
 *
 * <h2>The reference</h2>
 * Each rank is compared with a reference rank: the rank that agrees with the most ranks over the most collectives
 * (for each other rank, the number of common places that match before the first difference, summed), the
 * majority's view of what the program did. Of tied ranks, the one that issued the most collectives is taken, then
 * the lowest, so that with two ranks the one that issued fewer is the one said to have skipped.
 *
 * <h2>What is reported</h2>
 * For each rank, its first difference from the reference, at place {@code k}:
 * <ul>
 *   <li>skipped: from {@code k} on, the rank's collectives match the reference's from {@code k + d} on
 *       ({@code d} from 1 to {@value #MAX_SHIFT}): it did not issue the reference's {@code k .. k+d-1}; the report
 *       names them and the rank's own collectives they are missing between;</li>
 *   <li>added: from {@code k + d} on, the rank's collectives match the reference's from {@code k} on: it issued
 *       {@code k .. k+d-1} that the reference did not;</li>
 *   <li>shifted: both fit, because the collectives that follow repeat;</li>
 *   <li>a mismatch: when the collectives after {@code k} still match unshifted, or no shift fits: the fields that
 *       differ at {@code k} (operation, else count, type, operator, root), with each rank's value.</li>
 * </ul>
 * When a rank's collectives and the others' differ in number, the counts lead the finding: {@code rank 1 issued 3
 * collectives, rank 0 issued 4: rank 1 skipped ...}.
 *
 * <p>Then who waits: a rank's oldest entry still {@code ENQUEUED} is the operation it waits in. When ranks wait in
 * the collective at place {@code k} and other ranks have not issued {@code k} collectives, those are the ranks
 * everyone waits for. If every rank left a dump and those ranks have nothing pending (their collectives all
 * completed), they did not get stuck in NCCL but stopped issuing: when the collective waited in is like the one
 * before it, where the rank skipped one cannot be told and the finding says it {@code skipped one}; else it
 * {@code left early} (stopped before that collective, or is busy before it). A rank waiting in a send or receive
 * waits for its peer when the peer has nothing pending. The rank to look at is named, with its thread stacks'
 * first user frame when its dump holds stacks ({@code TraceThreads}). Ranks of the communicator without a dump are
 * reported as lost or not dumped.
 */
public final class TraceComparer {
    /** The most operations a rank may have skipped or added in a row for the analyzer to say so. */
    public static final int MAX_SHIFT = 4;
    /** The most findings the verdict line names; the rest are in the details. */
    public static final int MAX_SUMMARIES = 4;

    private TraceComparer() {
    }

    /** One rank's dump, its collectives indexed by place. */
    private static final class Rank {
        final int rank;
        final TraceInput input;
        final TraceDump dump;
        final List<TraceEntry> entries;
        /** The collectives (all but send and recv), oldest first. */
        final List<TraceEntry> collectives = new ArrayList<>();
        /** Place among the collectives (from 1) to entry. */
        final Map<Long, TraceEntry> byPlace = new LinkedHashMap<>();
        /** Sequence number to place, of the collectives. */
        final Map<Long, Long> placeOf = new HashMap<>();
        /** The sends and receives the ring holds. */
        final int pointToPoint;
        /** The collectives issued: the last sequence number less the sends and receives held. */
        final long issued;
        /** The oldest entry still enqueued, or null. */
        final TraceEntry pending;

        Rank(TraceInput input) {
            this.input = input;
            this.dump = input.dump();
            this.rank = dump.rank();
            this.entries = dump.entries();
            TraceEntry p = null;
            int p2p = 0;
            for (TraceEntry e : entries) {
                if (e.operation().pointToPoint()) {
                    p2p++;
                } else {
                    long place = e.sequence() - p2p;
                    collectives.add(e);
                    byPlace.put(place, e);
                    placeOf.put(e.sequence(), place);
                }
                if (p == null && e.state() == TraceEntry.State.ENQUEUED) {
                    p = e;
                }
            }
            pending = p;
            pointToPoint = p2p;
            issued = Math.max(0, dump.lastEnqueued() - p2p);
        }

        long place(TraceEntry e) {
            return placeOf.get(e.sequence());
        }

        long firstHeld() {
            return entries.isEmpty() ? 0 : entries.get(0).sequence();
        }

        long lastHeld() {
            return entries.isEmpty() ? 0 : entries.get(entries.size() - 1).sequence();
        }

        /** Whether the ring no longer holds the first operation. */
        boolean wrapped() {
            return firstHeld() > 1;
        }
    }

    /** A rank's first difference from the reference, at place k. */
    private record Divergence(Rank rank, Kind kind, long place, int shift) {
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
            List<Rank> agreeing = new ArrayList<>();
            for (Rank x : ranks) {
                Divergence d = x == reference ? null : diverge(x, reference, notes);
                if (d != null) {
                    divergences.add(d);
                } else {
                    agreeing.add(x);
                }
            }
            findings.addAll(shiftFindings(divergences, reference, agreeing));
            findings.addAll(mismatchFindings(divergences, reference, ranks));
        }

        List<String> waiting = new ArrayList<>();
        Set<Integer> coveredWaiters = new TreeSet<>();
        findings.addAll(waits(ranks, missing.isEmpty(), waiting, coveredWaiters));
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
                    r.dump.failure(), r.dump.lastEnqueued(), r.dump.lastCompleted(), r.firstHeld(), r.pending,
                    r.issued, r.dump.threads()));
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

    // ---------------------------------------------------------------- comparing collectives

    /**
     * The fields in which two collectives of the same place differ: {@code operation}, else any of {@code count},
     * {@code type}, {@code op}, {@code root} (see the class description). Sends and receives are never compared
     * (none, for two of them).
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

    /** What a collective is compared by, as a string: equal keys match (see {@link #differences}). */
    private static String key(TraceEntry e) {
        TraceOperation op = e.operation();
        if (op == TraceOperation.group) {
            return "group";
        }
        if (op == TraceOperation.graphLaunch) {
            return "graphLaunch " + e.count();
        }
        return op + " " + e.count() + " " + e.dataType() + " " + (op.reduces() ? e.reduceOp() : "") + " "
                + (op.rooted() ? e.peer() : "");
    }

    /** How many common places of a and b match before their first difference. */
    private static int agreed(Rank a, Rank b) {
        int n = 0;
        for (TraceEntry e : a.collectives) {
            TraceEntry f = b.byPlace.get(a.place(e));
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
     * The rank that agrees with the most ranks over the most collectives; of tied ranks, the one that issued the
     * most collectives, then the lowest. Ranks with the same collectives (by {@link #key}) form one class and are
     * compared once.
     */
    private static Rank chooseReference(List<Rank> ranks, String[] note) {
        Map<List<String>, List<Rank>> classes = new LinkedHashMap<>();
        for (Rank r : ranks) {
            List<String> k = new ArrayList<>(r.collectives.size());
            for (TraceEntry e : r.collectives) {
                k.add(r.place(e) + ":" + key(e));
            }
            classes.computeIfAbsent(k, x -> new ArrayList<>()).add(r);
        }
        if (classes.size() == 1) {
            note[0] = "every rank has the same collectives";
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
                if (chosen == null || first.issued > chosen.issued
                        || first.issued == chosen.issued && first.rank < chosen.rank) {
                    chosen = first;
                }
            }
        }
        note[0] = tied > 1 ? "no majority: of the ranks that agree with the most ranks, the one that issued the most"
                + " collectives, then the lowest"
                : "the majority: it agrees with the most ranks over the most collectives";
        return chosen;
    }

    /** x's first difference from the reference r, or null when they agree wherever both hold a collective. */
    private static Divergence diverge(Rank x, Rank r, List<String> notes) {
        long k = -1;
        int common = 0;
        for (TraceEntry e : x.collectives) {
            TraceEntry f = r.byPlace.get(x.place(e));
            if (f != null) {
                common++;
                if (!matches(e, f)) {
                    k = x.place(e);
                    break;
                }
            }
        }
        if (common == 0) {
            if (!x.collectives.isEmpty() && !r.collectives.isEmpty()) {
                notes.add("rank " + x.rank + " holds #" + x.firstHeld() + " to #" + x.lastHeld() + ", rank " + r.rank
                        + " (the reference) #" + r.firstHeld() + " to #" + r.lastHeld()
                        + ": no collective in common to compare");
            }
            return null;
        }
        if (k < 0) {
            return null;
        }
        // the collectives after k still match unshifted: a difference at k only
        int after = 0;
        boolean alignedTail = true;
        for (TraceEntry e : x.collectives) {
            long place = x.place(e);
            TraceEntry f = place > k ? r.byPlace.get(place) : null;
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
     * Whether a's collectives from place k on match b's from k + d on: at least one pair compared, and every pair
     * that both rings hold matches.
     */
    private static boolean shiftFits(Rank a, Rank b, long k, int d) {
        int compared = 0;
        for (TraceEntry e : a.collectives) {
            long place = a.place(e);
            if (place < k) {
                continue;
            }
            TraceEntry f = b.byPlace.get(place + d);
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

    /**
     * The collectives at places k .. k+d-1 of a rank, named with their fields: {@code allReduce #3 (count 3000
     * float32 sum)}, {@code allReduce #2 (...) and broadcast #3 (...)}.
     */
    private static String collectives(Rank r, long k, int d) {
        List<String> named = new ArrayList<>();
        for (long p = k; p < k + d; p++) {
            TraceEntry e = r.byPlace.get(p);
            named.add(e == null ? "collective " + p + " (no longer in rank " + r.rank + "'s ring)"
                    : TraceText.entry(e));
        }
        return TraceText.and(named);
    }

    /**
     * Where, among a rank's own collectives, the place k falls: {@code allReduce #2 and #3} (the collectives at
     * k-1 and k), {@code allReduce #2 and broadcast #3}; "before" the one at k when the ring holds none before it.
     */
    private static String between(Rank r, long k) {
        TraceEntry before = r.byPlace.get(k - 1);
        TraceEntry at = r.byPlace.get(k);
        if (at == null) {
            return before == null ? "collective " + k : "after " + TraceText.name(before);
        }
        if (before == null) {
            return "before " + TraceText.name(at);
        }
        return "between " + TraceText.name(before) + " and " + (before.operation() == at.operation() ? ""
                : at.operation() + " ") + "#" + at.sequence();
    }

    /**
     * The counts that lead a finding when they differ: {@code rank 1 issued 3 collectives, ranks 0, 2, 3 issued 4: }
     * (the ranks named first, then the others); empty when every rank named has the same count.
     */
    private static String issued(List<Rank> named, List<Rank> others) {
        Map<Long, List<Integer>> first = new LinkedHashMap<>();
        named.forEach(r -> first.computeIfAbsent(r.issued, x -> new ArrayList<>()).add(r.rank));
        Map<Long, List<Integer>> second = new LinkedHashMap<>();
        for (Rank r : others) {
            if (!named.contains(r)) {
                second.computeIfAbsent(r.issued, x -> new ArrayList<>()).add(r.rank);
            }
        }
        Set<Long> counts = new TreeSet<>(first.keySet());
        counts.addAll(second.keySet());
        if (counts.size() < 2) {
            return "";
        }
        List<String> parts = new ArrayList<>();
        for (Map<Long, List<Integer>> m : List.of(first, second)) {
            m.forEach((n, rs) -> parts.add(TraceText.ranks(rs) + " issued " + n + (parts.isEmpty()
                    ? (n == 1 ? " collective" : " collectives") : "")));
        }
        return String.join(", ", parts) + ": ";
    }

    private static List<TraceFinding> shiftFindings(List<Divergence> divergences, Rank ref, List<Rank> agreeing) {
        // the ranks that skipped or added the same collectives at the same place (and the same own numbers), together
        Map<String, List<Divergence>> groups = new LinkedHashMap<>();
        for (Divergence d : divergences) {
            if (d.kind() == Kind.MISMATCH) {
                continue;
            }
            Rank x = d.rank();
            String own = between(x, d.place()) + "|" + collectives(x, d.place(), d.shift());
            groups.computeIfAbsent(d.kind() + "|" + d.place() + "|" + d.shift() + "|" + own,
                    k -> new ArrayList<>()).add(d);
        }
        List<TraceFinding> out = new ArrayList<>();
        for (List<Divergence> g : groups.values()) {
            Divergence d = g.get(0);
            Rank x = d.rank();
            long k = d.place();
            List<Rank> whoRanks = g.stream().map(Divergence::rank).toList();
            List<Integer> who = whoRanks.stream().map(r -> r.rank).toList();
            String its = TraceText.one(who) ? "its" : "their";
            String refs = "rank " + ref.rank + "'s " + collectives(ref, k, d.shift());
            String what = switch (d.kind()) {
                case SKIPPED -> "skipped " + refs + ", " + between(x, k).replaceFirst(" ", " " + its + " ");
                case ADDED -> "added " + collectives(x, k, d.shift()) + ", " + between(ref, k)
                        .replaceFirst(" ", " rank " + ref.rank + "'s ");
                default -> "skipped " + refs + " or added " + its + " " + collectives(x, k, d.shift());
            };
            String summary = issued(whoRanks, agreeing) + TraceText.ranks(who) + " " + what;
            String ops = its + " collectives";
            TraceEntry xAt = x.byPlace.get(k);
            TraceEntry xAfter = x.byPlace.get(k + d.shift());
            TraceEntry refAt = ref.byPlace.get(k);
            TraceEntry refAfter = ref.byPlace.get(k + d.shift());
            String detail = switch (d.kind()) {
                case SKIPPED -> summary + ": from " + number(xAt, k) + " on, " + ops + " match rank " + ref.rank
                        + "'s from " + number(refAfter, k + d.shift()) + " on";
                case ADDED -> summary + ": from " + number(xAfter, k + d.shift()) + " on, " + ops + " match rank "
                        + ref.rank + "'s from " + number(refAt, k) + " on";
                default -> summary + ": " + ops + " are shifted by " + d.shift() + " against rank " + ref.rank
                        + "'s from " + number(refAt, k) + " on, and the collectives that follow repeat, so both fit";
            };
            long seq = d.kind() == Kind.ADDED ? (xAt == null ? k : xAt.sequence()) : (refAt == null ? k
                    : refAt.sequence());
            out.add(new TraceFinding(d.kind(), who, seq, summary, detail, Map.of()));
        }
        return out;
    }

    /** {@code #7}, the entry's sequence number, or {@code collective 5} when the ring does not hold it. */
    private static String number(TraceEntry e, long place) {
        return e == null ? "collective " + place : "#" + e.sequence();
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
        Map<Long, List<Rank>> byPlace = new TreeMap<>();
        for (Divergence d : divergences) {
            if (d.kind() == Kind.MISMATCH) {
                byPlace.computeIfAbsent(d.place(), x -> new ArrayList<>()).add(d.rank());
            }
        }
        // the ranks whose collectives are shifted from some place on: their values there are not the same one's
        Map<Integer, Long> shiftedFrom = new TreeMap<>();
        for (Divergence d : divergences) {
            if (d.kind() != Kind.MISMATCH) {
                shiftedFrom.put(d.rank().rank, d.place());
            }
        }
        List<TraceFinding> out = new ArrayList<>();
        for (Map.Entry<Long, List<Rank>> m : byPlace.entrySet()) {
            long k = m.getKey();
            TraceEntry refEntry = ref.byPlace.get(k);
            Set<String> fields = new LinkedHashSet<>();
            for (Rank x : m.getValue()) {
                fields.addAll(differences(refEntry, x.byPlace.get(k)));
            }
            if (fields.contains("operation")) {
                fields.retainAll(Set.of("operation"));
            }
            List<Rank> shown = new ArrayList<>();
            shown.add(ref);
            for (Rank r : ranks) {
                Long from = shiftedFrom.get(r.rank);
                if (r != ref && r.byPlace.containsKey(k) && (from == null || from > k)) {
                    shown.add(r);
                }
            }
            Map<String, Map<String, List<Integer>>> diffs = new LinkedHashMap<>();
            List<String> parts = new ArrayList<>();
            for (String f : fields) {
                Map<String, List<Integer>> values = new LinkedHashMap<>();
                for (Rank r : shown) {
                    values.computeIfAbsent(value(f, r.byPlace.get(k)), x -> new ArrayList<>()).add(r.rank);
                }
                values.values().forEach(l -> l.sort(null));
                diffs.put(f, values);
                List<String> each = new ArrayList<>();
                values.forEach((v, rs) -> each.add(TraceText.ranks(rs) + ": " + v));
                parts.add(f + " (" + String.join("; ", each) + ")");
            }
            // where the ranks number it differently (sends and receives before it), each rank's own number
            List<String> others = new ArrayList<>();
            for (Rank r : shown) {
                long seq = r.byPlace.get(k).sequence();
                if (seq != refEntry.sequence()) {
                    others.add("rank " + r.rank + "'s #" + seq);
                }
            }
            String number = "#" + refEntry.sequence() + (others.isEmpty() ? "" : " (" + String.join(", ", others)
                    + ")");
            String summary;
            if (fields.contains("operation")) {
                List<String> each = new ArrayList<>();
                diffs.get("operation").forEach((v, rs) -> each.add(v + " on " + TraceText.ranks(rs)));
                summary = number + " is " + each.get(0) + " but " + String.join(", ", each.subList(1, each.size()));
            } else {
                summary = refEntry.operation() + " " + number + " differs: " + String.join(", ", parts);
            }
            String detail = summary + ": every rank must issue the same collective with the same count, type, operator"
                    + " and root";
            List<Integer> who = m.getValue().stream().map(r -> r.rank).sorted().toList();
            out.add(new TraceFinding(Kind.MISMATCH, who, refEntry.sequence(), summary, detail, diffs));
        }
        return out;
    }

    // ---------------------------------------------------------------- who waits for whom

    /** The place a rank waits at: its oldest pending collective's, or null when it waits in a send or receive. */
    private static Long waitPlace(Rank r) {
        return r.pending == null || r.pending.operation().pointToPoint() ? null : r.place(r.pending);
    }

    /**
     * Fills waiting (who waits in what) and returns the findings about the ranks waited for: those that have not
     * issued the lowest place that ranks wait at, or the peer of a rank waiting in a send or receive that has
     * nothing pending. The waiters named in a finding go into covered.
     */
    private static List<TraceFinding> waits(List<Rank> ranks, boolean allDumped, List<String> waiting,
            Set<Integer> covered) {
        Map<Long, List<Rank>> waiters = new TreeMap<>();
        List<Rank> p2pWaiters = new ArrayList<>();
        for (Rank r : ranks) {
            Long place = waitPlace(r);
            if (place != null) {
                waiters.computeIfAbsent(place, x -> new ArrayList<>()).add(r);
            } else if (r.pending != null) {
                p2pWaiters.add(r);
            }
        }
        waiters.forEach((place, w) -> waiting.add(waitText(w, ranks, allDumped)));
        p2pWaiters.forEach(r -> waiting.add(waitText(List.of(r), ranks, allDumped)));
        for (Map.Entry<Long, List<Rank>> w : waiters.entrySet()) {
            long place = w.getKey();
            List<Rank> laggards = ranks.stream().filter(r -> r.issued < place).toList();
            if (!laggards.isEmpty()) {
                w.getValue().forEach(r -> covered.add(r.rank));
                return laggardFindings(place, w.getValue(), laggards, ranks, allDumped);
            }
        }
        for (Rank r : p2pWaiters) {
            Integer peer = r.pending.peer();
            Rank other = peer == null ? null : ranks.stream().filter(x -> x.rank == peer).findFirst().orElse(null);
            if (other != null && other.pending == null) {
                covered.add(r.rank);
                String base = "rank " + r.rank + " waits for rank " + peer + " in " + TraceText.entry(r.pending)
                        + ", and rank " + peer + " has nothing pending (last enqueued #" + other.dump.lastEnqueued()
                        + ")";
                String why = ": rank " + peer + " did not post the matching " + (r.pending.operation()
                        == TraceOperation.send ? "recv" : "send");
                return List.of(lookingAt(Kind.WAITS_FOR, List.of(other), r.pending.sequence(), base, why));
            }
        }
        return List.of();
    }

    /**
     * The findings for the ranks that have not issued the collective at place that the waiters wait in: "skipped
     * one" or "left early" when every rank dumped and they have nothing pending, else "waits for".
     */
    private static List<TraceFinding> laggardFindings(long place, List<Rank> waiters, List<Rank> laggards,
            List<Rank> ranks, boolean allDumped) {
        TraceEntry op = waiters.get(0).pending;
        List<Integer> waiting = waiters.stream().map(r -> r.rank).toList();
        List<Integer> who = laggards.stream().map(r -> r.rank).toList();
        boolean quiet = laggards.stream().allMatch(r -> r.pending == null);
        if (allDumped && quiet) {
            List<Rank> others = ranks.stream().filter(r -> !laggards.contains(r)).toList();
            Map<Long, List<Rank>> byIssued = new TreeMap<>();
            laggards.forEach(r -> byIssued.computeIfAbsent(r.issued, x -> new ArrayList<>()).add(r));
            List<TraceFinding> out = new ArrayList<>();
            for (Map.Entry<Long, List<Rank>> g : byIssued.entrySet()) {
                List<Rank> group = g.getValue();
                List<Integer> rs = group.stream().map(r -> r.rank).toList();
                String names = TraceText.ranks(rs);
                String its = TraceText.one(rs) ? "its" : "their";
                TraceEntry before = waiters.get(0).byPlace.get(place - 1);
                boolean alike = g.getKey() == place - 1 && before != null && matches(before, op);
                String partner = whose(waiters, place) + (waiters.size() == 1 || sameNumber(waiters, place) ? " has"
                        : " have") + " no partner";
                if (alike) {
                    String base = issued(group, others) + names + " skipped one (" + partner + ")";
                    String why = ": " + its + " collectives all completed and " + (TraceText.one(rs) ? "it" : "they")
                            + " issued no more; " + TraceText.entry(op) + " is like " + TraceText.name(before)
                            + " before it, so where cannot be told (or " + names + " stopped before the last)";
                    out.add(lookingAt(Kind.SKIPPED, group, op.sequence(), base, why));
                } else {
                    String base = issued(group, others) + names + " left early: " + its + " collectives all completed,"
                            + " and " + partner;
                    String why = ": " + TraceText.ranks(waiting) + (TraceText.one(waiting) ? " waits" : " wait")
                            + " in " + TraceText.entry(op) + ", which " + names + (TraceText.one(rs) ? " has" : " have")
                            + " not issued: " + (TraceText.one(rs) ? "it" : "they") + " left early, skipped it, or "
                            + (TraceText.one(rs) ? "is" : "are") + " busy before it";
                    out.add(lookingAt(Kind.LEFT_EARLY, group, op.sequence(), base, why));
                }
            }
            return out;
        }
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
        String verb = TraceText.one(waiting) ? " waits" : " wait";
        String has = TraceText.one(who) ? " has" : " have";
        boolean everyone = allDumped && waiting.size() + who.size() == ranks.size();
        String base = everyone
                ? "everyone waits for " + TraceText.ranks(who) + ": " + TraceText.ranks(waiting) + verb + " in "
                        + op.operation() + " #" + op.sequence() + ", which " + TraceText.ranks(who) + has
                        + " not enqueued (" + last + ")"
                : TraceText.ranks(waiting) + verb + " for " + TraceText.ranks(who) + " in " + op.operation() + " #"
                        + op.sequence() + ", which " + TraceText.ranks(who) + has + " not enqueued (" + last + ")";
        String why = "; " + TraceText.ranks(waiting) + verb + " in " + TraceText.entry(op);
        return List.of(lookingAt(Kind.WAITS_FOR, laggards, op.sequence(), base, why));
    }

    /**
     * A finding that names ranks to look at: the summary is base and where their threads are
     * ({@link #lookAt}); the detail is base, why, which of them dumped no thread stacks, and where their threads
     * are.
     */
    private static TraceFinding lookingAt(Kind kind, List<Rank> look, long seq, String base, String why) {
        String threads = lookAt(look);
        return new TraceFinding(kind, look.stream().map(r -> r.rank).toList(), seq, base + threads,
                base + why + noStacks(look) + threads, Map.of());
    }

    /** Whether the waiters number the collective at place the same. */
    private static boolean sameNumber(List<Rank> waiters, long place) {
        return waiters.stream().map(r -> r.byPlace.get(place).sequence()).distinct().count() == 1;
    }

    /**
     * The waiters' collective at place: {@code rank 0's allReduce #6}, {@code allReduce #6 of ranks 0, 2, 3}, or
     * {@code rank 0's allReduce #6, rank 2's #8} where they number it differently.
     */
    private static String whose(List<Rank> waiters, long place) {
        TraceEntry e = waiters.get(0).byPlace.get(place);
        if (waiters.size() == 1) {
            return "rank " + waiters.get(0).rank + "'s " + TraceText.name(e);
        }
        if (sameNumber(waiters, place)) {
            return TraceText.name(e) + " of " + TraceText.ranks(waiters.stream().map(r -> r.rank).toList());
        }
        List<String> each = new ArrayList<>();
        for (Rank r : waiters) {
            TraceEntry x = r.byPlace.get(place);
            each.add("rank " + r.rank + "'s " + (each.isEmpty() ? TraceText.name(x) : "#" + x.sequence()));
        }
        return String.join(", ", each);
    }

    /**
     * What the verdict says of the ranks to look at that dumped thread stacks: {@code ; look at rank 1: thread
     * "main" RUNNABLE in its own code at com.example.Loader.next(Loader.java:42)}; empty when none did.
     */
    private static String lookAt(List<Rank> ranks) {
        List<String> parts = new ArrayList<>();
        for (Rank r : ranks) {
            var t = TraceThreads.pick(r.dump.threads());
            if (t != null) {
                parts.add("rank " + r.rank + ": " + TraceThreads.describe(t));
            }
        }
        return parts.isEmpty() ? "" : "; look at " + String.join("; ", parts);
    }

    /** For the details: which of those ranks' dumps hold no thread stacks, to look at by other means. */
    private static String noStacks(List<Rank> ranks) {
        List<Integer> without = ranks.stream().filter(r -> r.dump.threads().isEmpty()).map(r -> r.rank).toList();
        if (without.isEmpty()) {
            return "";
        }
        return " (" + TraceText.ranks(without) + (TraceText.one(without) ? "'s dump holds" : "' dumps hold")
                + " no thread stacks: jstack shows where " + (TraceText.one(without) ? "it is" : "they are") + ")";
    }

    /** Who waits in what, for ranks waiting at one place (or in one send or receive). */
    private static String waitText(List<Rank> waiters, List<Rank> ranks, boolean allDumped) {
        // the waiters of one place may be in different operations (a rank that skipped one)
        Map<String, List<Integer>> byOp = new LinkedHashMap<>();
        for (Rank r : waiters) {
            TraceEntry e = r.pending;
            String peer = !e.operation().pointToPoint() || e.peer() == null ? ""
                    : (e.operation() == TraceOperation.send ? " to rank " : " from rank ") + e.peer();
            byOp.computeIfAbsent(TraceText.name(e) + peer, x -> new ArrayList<>()).add(r.rank);
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

    /** The waiting clauses for the verdict line: those not already in a finding about the ranks waited for. */
    private static List<String> waitClauses(List<Rank> ranks, Set<Integer> covered, boolean allDumped) {
        Map<Long, List<Rank>> waiters = new TreeMap<>();
        List<String> out = new ArrayList<>();
        for (Rank r : ranks) {
            Long place = waitPlace(r);
            if (place != null && !covered.contains(r.rank)) {
                waiters.computeIfAbsent(place, x -> new ArrayList<>()).add(r);
            }
        }
        waiters.forEach((s, w) -> out.add(waitText(w, ranks, allDumped)));
        for (Rank r : ranks) {
            if (r.pending != null && waitPlace(r) == null && !covered.contains(r.rank)) {
                out.add(waitText(List.of(r), ranks, allDumped));
            }
        }
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
                if (e.state() == TraceEntry.State.FAILED) {
                    notes.add("rank " + r.rank + ": " + TraceText.entry(e) + " FAILED after " + e.completedAfterMicros()
                            + " us");
                }
            }
            p2p |= r.pointToPoint > 0;
            if (r.pointToPoint > 0 && r.wrapped()) {
                notes.add("rank " + r.rank + "'s ring holds #" + r.firstHeld() + " to #" + r.lastHeld() + " with sends"
                        + " or receives: its collectives are counted as if none came before #" + r.firstHeld());
            }
            long next = d.lastCompleted() + 1;
            if (next <= d.lastEnqueued() && (r.entries.isEmpty() || next < r.firstHeld())) {
                notes.add("rank " + r.rank + ": #" + next + " is not marked completed, and its ring no longer holds it"
                        + " (it holds "
                        + (r.entries.isEmpty() ? "nothing" : "#" + r.firstHeld() + " to #" + r.lastHeld()) + ")");
            }
        }
        if (p2p) {
            notes.add("sends and receives are not compared (their peers and counts differ by design): collectives are"
                    + " compared in their order among collectives");
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
