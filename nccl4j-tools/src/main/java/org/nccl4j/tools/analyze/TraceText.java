package org.nccl4j.tools.analyze;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeSet;
import org.nccl4j.trace.TraceEntry;
import org.nccl4j.trace.TraceOperation;

/**
 * How the analyzer names ranks and operations in its text: {@code rank 1}, {@code ranks 0-3, 6},
 * {@code allReduce #3 (count 3000 float32 sum)}.
 */
final class TraceText {
    private TraceText() {
    }

    /**
     * Ranks as a reader wants them: {@code "rank 1"}, {@code "ranks 0, 2"}, runs of three or more as a range
     * ({@code "ranks 0-3, 6"}).
     */
    static String ranks(Collection<Integer> ranks) {
        List<Integer> sorted = new ArrayList<>(new TreeSet<>(ranks));
        return (sorted.size() == 1 ? "rank " : "ranks ") + numbers(sorted);
    }

    /** The numbers of {@link #ranks} without the word: {@code "0-3, 6"}. */
    static String numbers(List<Integer> sorted) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < sorted.size(); ) {
            int j = i;
            while (j + 1 < sorted.size() && sorted.get(j + 1) == sorted.get(j) + 1) {
                j++;
            }
            if (b.length() > 0) {
                b.append(", ");
            }
            if (j - i >= 2) {
                b.append(sorted.get(i)).append('-').append(sorted.get(j));
                i = j + 1;
            } else {
                b.append(sorted.get(i));
                i++;
            }
        }
        return b.toString();
    }

    /** Whether the ranks are one: picks "waits" over "wait", "it" over "they". */
    static boolean one(Collection<Integer> ranks) {
        return new TreeSet<>(ranks).size() == 1;
    }

    /** NCCL's name without its prefix, as people say it: {@code ncclFloat32} gives {@code float32}. */
    static String shortName(String ncclName) {
        if (ncclName == null) {
            return null;
        }
        String s = ncclName.startsWith("nccl") ? ncclName.substring(4) : ncclName;
        return s.isEmpty() ? s : Character.toLowerCase(s.charAt(0)) + s.substring(1);
    }

    /** An operation with its sequence number and fields: {@code allReduce #3 (count 3000 float32 sum)}. */
    static String entry(TraceEntry e) {
        return name(e) + " (" + fields(e) + ")";
    }

    /** An operation with its sequence number: {@code allReduce #3}. */
    static String name(TraceEntry e) {
        return e.operation() + " #" + e.sequence();
    }

    /** Items as a sentence lists them: {@code a}, {@code a and b}, {@code a, b and c}. */
    static String and(List<String> items) {
        if (items.size() <= 1) {
            return String.join("", items);
        }
        return String.join(", ", items.subList(0, items.size() - 1)) + " and " + items.get(items.size() - 1);
    }

    /**
     * An operation's fields: {@code count 3000 float32 sum}, {@code count 8 int32 root 0},
     * {@code count 4 float32 to rank 1}.
     */
    static String fields(TraceEntry e) {
        StringBuilder b = new StringBuilder("count ").append(e.count());
        if (e.dataType() != null) {
            b.append(' ').append(shortName(e.dataType()));
        }
        if (e.reduceOp() != null) {
            b.append(' ').append(shortName(e.reduceOp()));
        }
        if (e.peer() != null) {
            if (e.operation() == TraceOperation.send) {
                b.append(" to rank ").append(e.peer());
            } else if (e.operation() == TraceOperation.recv) {
                b.append(" from rank ").append(e.peer());
            } else if (e.operation().rooted()) {
                b.append(" root ").append(e.peer());
            } else {
                b.append(" peer ").append(e.peer());
            }
        }
        return b.toString();
    }
}
