package org.nccl4j.tools.analyze;

import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.nccl4j.trace.TraceDump.ThreadStack;
import org.nccl4j.trace.TraceEntry;

/**
 * What the analyzer concluded about one communicator's dumps ({@link TraceComparer#analyze}): the state of each
 * rank, the ranks without a dump, the problems found and who waits in what.
 *
 * @param communicator the communicator's name, or null for an unnamed one
 * @param size its number of ranks (the dumps' {@code size})
 * @param ranks each rank that left a dump, ascending
 * @param missingRanks the ranks from 0 to size-1 that left no dump, ascending
 * @param reference the rank the others are compared with, or null when fewer than two ranks left a dump
 * @param referenceNote why that rank, e.g. {@code "the majority"} or {@code "no majority: the lowest rank"}; empty
 *        when there is no reference
 * @param findings the problems, in the order of the verdict line; empty when the dumps agree
 * @param waiting who waits in what, e.g. {@code "ranks 0, 2, 3 wait in allReduce #3"} (not problems by
 *        themselves: every operation waits for a while)
 * @param notes what else a reader should know: failures, dumps replaced by later ones, rings that do not overlap
 * @param summary the verdict of this communicator in one line, without the {@code nccl4j-trace: } prefix
 */
public record TraceVerdict(String communicator, int size, List<RankState> ranks, List<Integer> missingRanks,
        Integer reference, String referenceNote, List<TraceFinding> findings, List<String> waiting, List<String> notes,
        String summary) {

    /**
     * One rank's state at its dump.
     *
     * @param rank the rank
     * @param file the dump's file
     * @param host the host that wrote it
     * @param pid the process that wrote it
     * @param reason why it was written ({@code "timeout"}, ...)
     * @param failure the failure's text, or null
     * @param lastEnqueued the last sequence number enqueued (0: none)
     * @param lastCompleted every operation up to this one completed (0: none)
     * @param firstHeld the first sequence number the dump's ring still holds, 0 when it holds none
     * @param oldestPending the oldest operation of the ring still enqueued (not completed or failed), or null
     * @param collectives the collectives it issued: lastEnqueued less the sends and receives its ring holds
     * @param threads the stacks of the threads that issued its operations, from its dump; empty when it has none
     */
    public record RankState(int rank, Path file, String host, long pid, String reason, String failure,
            long lastEnqueued, long lastCompleted, long firstHeld, TraceEntry oldestPending, long collectives,
            List<ThreadStack> threads) {
        /**
         * Checks the components and makes threads an unmodifiable copy.
         *
         * @param rank see the record's description
         * @param file see the record's description
         * @param host see the record's description
         * @param pid see the record's description
         * @param reason see the record's description
         * @param failure see the record's description
         * @param lastEnqueued see the record's description
         * @param lastCompleted see the record's description
         * @param firstHeld see the record's description
         * @param oldestPending see the record's description
         * @param collectives see the record's description
         * @param threads see the record's description
         * @throws NullPointerException when threads is null
         */
        public RankState {
            threads = List.copyOf(threads);
        }
    }

    /**
     * Checks the components and makes the lists unmodifiable copies.
     *
     * @param communicator see the record's description
     * @param size see the record's description
     * @param ranks see the record's description
     * @param missingRanks see the record's description
     * @param reference see the record's description
     * @param referenceNote see the record's description
     * @param findings see the record's description
     * @param waiting see the record's description
     * @param notes see the record's description
     * @param summary see the record's description
     * @throws NullPointerException when a list, referenceNote or summary is null
     */
    public TraceVerdict {
        ranks = List.copyOf(ranks);
        missingRanks = List.copyOf(missingRanks);
        findings = List.copyOf(findings);
        waiting = List.copyOf(waiting);
        notes = List.copyOf(notes);
        Objects.requireNonNull(referenceNote, "referenceNote");
        Objects.requireNonNull(summary, "summary");
    }

    /**
     * Whether the dumps agree: every rank left one, and no rank skipped, added or differs, and none waits for
     * another.
     *
     * @return true when there is no finding
     */
    public boolean consistent() {
        return findings.isEmpty();
    }

    /**
     * How the report names the communicator.
     *
     * @return {@code communicator "dp" (4 ranks)} or {@code unnamed communicator (4 ranks)}
     */
    public String label() {
        return (communicator == null ? "unnamed communicator" : "communicator \"" + communicator + "\"") + " ("
                + size + (size == 1 ? " rank)" : " ranks)");
    }

    /**
     * The report's details for this communicator: a header, a table of the ranks, then the problems, who waits,
     * the thread stacks of the ranks whose dumps hold them (where each thread is, and its first eight frames) and the
     * notes, one per line.
     *
     * @return the text, ending with a newline
     */
    public String details() {
        StringBuilder b = new StringBuilder();
        b.append(label()).append(": ").append(ranks.size()).append(" of ").append(size)
                .append(size == 1 ? " dump" : " dumps");
        if (reference != null) {
            b.append("; reference: rank ").append(reference).append(" (").append(referenceNote).append(')');
        }
        b.append('\n');
        b.append(String.format("  %5s  %13s  %14s  %-24s  %-12s  %s%n", "rank", "last enqueued", "last completed",
                "oldest pending", "reason", "dump"));
        for (RankState r : ranks) {
            String pending = r.oldestPending() == null ? "-" : r.oldestPending().operation() + " #"
                    + r.oldestPending().sequence();
            b.append(String.format("  %5d  %13d  %14d  %-24s  %-12s  %s (%s, pid %d)%n", r.rank(), r.lastEnqueued(),
                    r.lastCompleted(), pending, r.reason(), r.file(), r.host(), r.pid()));
        }
        section(b, "problems", findings.stream().map(TraceFinding::detail).toList());
        section(b, "waiting", waiting);
        List<String> threads = new ArrayList<>();
        for (RankState r : ranks) {
            r.threads().forEach(t -> threads.addAll(TraceThreads.lines(r.rank(), t)));
        }
        section(b, "threads", threads);
        section(b, "notes", notes);
        return b.toString();
    }

    private static void section(StringBuilder b, String title, List<String> lines) {
        if (!lines.isEmpty()) {
            b.append(title).append(":\n");
            lines.forEach(l -> b.append("  ").append(l).append('\n'));
        }
    }

    /**
     * Writes this verdict as one JSON object: communicator, size, consistent, summary, reference, referenceNote,
     * missingRanks, ranks (rank, file, host, pid, reason, failure, lastEnqueued, lastCompleted, firstHeld,
     * oldestPending as {@code {seq, operation, count, dataType, reduceOp, peer}} or null, collectives, threads as
     * {@code {name, id, state, location, at, userFrame, frames}}), findings (kind, ranks, seq, summary, detail,
     * differences as {@code {field: {value: [ranks]}}}), waiting, notes.
     *
     * @param g the generator, at a place where a value may be written
     * @throws IOException when the generator fails
     */
    public void writeJson(JsonGenerator g) throws IOException {
        g.writeStartObject();
        g.writeStringField("communicator", communicator);
        g.writeNumberField("size", size);
        g.writeBooleanField("consistent", consistent());
        g.writeStringField("summary", summary);
        g.writeFieldName("reference");
        if (reference == null) {
            g.writeNull();
        } else {
            g.writeNumber(reference);
        }
        g.writeStringField("referenceNote", referenceNote);
        g.writeFieldName("missingRanks");
        ints(g, missingRanks);
        g.writeArrayFieldStart("ranks");
        for (RankState r : ranks) {
            g.writeStartObject();
            g.writeNumberField("rank", r.rank());
            g.writeStringField("file", r.file().toString());
            g.writeStringField("host", r.host());
            g.writeNumberField("pid", r.pid());
            g.writeStringField("reason", r.reason());
            g.writeStringField("failure", r.failure());
            g.writeNumberField("lastEnqueued", r.lastEnqueued());
            g.writeNumberField("lastCompleted", r.lastCompleted());
            g.writeNumberField("firstHeld", r.firstHeld());
            g.writeFieldName("oldestPending");
            TraceEntry e = r.oldestPending();
            if (e == null) {
                g.writeNull();
            } else {
                g.writeStartObject();
                e.writeIdentity(g);
                g.writeEndObject();
            }
            g.writeNumberField("collectives", r.collectives());
            g.writeArrayFieldStart("threads");
            for (ThreadStack t : r.threads()) {
                TraceThreads.writeJson(t, g);
            }
            g.writeEndArray();
            g.writeEndObject();
        }
        g.writeEndArray();
        g.writeArrayFieldStart("findings");
        for (TraceFinding f : findings) {
            g.writeStartObject();
            g.writeStringField("kind", f.kind().label());
            g.writeFieldName("ranks");
            ints(g, f.ranks());
            g.writeFieldName("seq");
            if (f.sequence() == null) {
                g.writeNull();
            } else {
                g.writeNumber(f.sequence());
            }
            g.writeStringField("summary", f.summary());
            g.writeStringField("detail", f.detail());
            g.writeObjectFieldStart("differences");
            for (Map.Entry<String, Map<String, List<Integer>>> d : f.differences().entrySet()) {
                g.writeObjectFieldStart(d.getKey());
                for (Map.Entry<String, List<Integer>> v : d.getValue().entrySet()) {
                    g.writeFieldName(v.getKey());
                    ints(g, v.getValue());
                }
                g.writeEndObject();
            }
            g.writeEndObject();
            g.writeEndObject();
        }
        g.writeEndArray();
        strings(g, "waiting", waiting);
        strings(g, "notes", notes);
        g.writeEndObject();
    }

    private static void ints(JsonGenerator g, List<Integer> values) throws IOException {
        g.writeStartArray();
        for (int v : values) {
            g.writeNumber(v);
        }
        g.writeEndArray();
    }

    private static void strings(JsonGenerator g, String name, List<String> values) throws IOException {
        g.writeArrayFieldStart(name);
        for (String v : values) {
            g.writeString(v);
        }
        g.writeEndArray();
    }
}
