package org.nccl4j.tools.analyze;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One problem the analyzer found in a communicator's dumps: ranks without a dump, a rank that skipped or added
 * collectives or left early, fields that differ at one collective, or ranks waiting for a rank that has not
 * enqueued the operation they wait in. Each makes {@link TraceVerdict#consistent()} false and the exit status 1.
 *
 * @param kind what was found
 * @param ranks the ranks it names: those without a dump, those that skipped, added or left early, those whose values
 *        differ from the reference's, or those that have not enqueued what the others wait in (ascending)
 * @param sequence the sequence number it is about: the reference's for a skip or a mismatch, the rank's own for
 *        an addition, the first waiting rank's for a rank that skipped one or left early or that others wait for; null
 *        for ranks without a dump
 * @param summary one clause for the verdict line, e.g. {@code rank 1 issued 5 collectives, rank 0 issued 6: rank 1
 *        skipped one (rank 0's allReduce #6 has no partner)}
 * @param detail the longer explanation for the report's details (may equal the summary)
 * @param differences for {@link Kind#MISMATCH}: each differing field ({@code operation}, {@code count},
 *        {@code type}, {@code op}, {@code root}) with each value and the ranks that have it, the reference's value
 *        first; empty for the other kinds
 */
public record TraceFinding(Kind kind, List<Integer> ranks, Long sequence, String summary, String detail,
        Map<String, Map<String, List<Integer>>> differences) {

    /** What a finding is about. */
    public enum Kind {
        /** Ranks of the communicator left no dump (lost, or their process did not get to write one). */
        MISSING("missing"),
        /**
         * Ranks lack collectives that the reference has: their later collectives match the reference's later ones;
         * or they issued one collective fewer than the ranks that wait, all theirs completed, and the one waited in
         * is like the one before it (so where they skipped it cannot be told).
         */
        SKIPPED("skipped"),
        /** Ranks have operations the reference lacks: their later operations match the reference's earlier ones. */
        ADDED("added"),
        /** Ranks are shifted by as many operations as could be skipped or added: the operations repeat, both fit. */
        SHIFTED("shifted"),
        /** At one sequence number, ranks have a different operation, count, data type, operator or root. */
        MISMATCH("mismatch"),
        /**
         * Ranks issued fewer collectives than the ranks that wait, and all theirs completed: they stopped before the
         * collective the others wait in (or are busy before it); the ranks to look at.
         */
        LEFT_EARLY("leftEarly"),
        /**
         * Ranks wait in an operation that other ranks have not enqueued (or in a send or receive whose peer has
         * nothing pending): those are the ranks waited for.
         */
        WAITS_FOR("waitsFor");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        /**
         * The name {@code --json} gives this kind.
         *
         * @return e.g. {@code "skipped"}, {@code "waitsFor"}
         */
        public String label() {
            return label;
        }
    }

    /**
     * Checks the components and makes unmodifiable copies.
     *
     * @param kind see the record's description
     * @param ranks see the record's description
     * @param sequence see the record's description
     * @param summary see the record's description
     * @param detail see the record's description
     * @param differences see the record's description
     * @throws NullPointerException when kind, ranks, summary, detail or differences is null
     */
    public TraceFinding {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(summary, "summary");
        Objects.requireNonNull(detail, "detail");
        ranks = List.copyOf(ranks);
        Map<String, Map<String, List<Integer>>> copy = new LinkedHashMap<>();
        differences.forEach((field, values) -> {
            Map<String, List<Integer>> v = new LinkedHashMap<>();
            values.forEach((value, r) -> v.put(value, List.copyOf(r)));
            copy.put(field, Collections.unmodifiableMap(v));
        });
        differences = Collections.unmodifiableMap(copy);
    }
}
