package org.nccl4j.tools.perf;

import java.util.Locale;

/**
 * The operations nccl4j-perf measures, named as nccl-tests' binaries are (all_reduce for all_reduce_perf), with
 * the size rules and bus-bandwidth factors of nccl-tests.
 *
 * <h2>Sizes</h2>
 * A size S from the ladder (-b/-e/-f) becomes counts exactly as in nccl-tests: {@code c = S / sizeof(type)}
 * elements; operations that split a buffer among the n ranks use a per-rank count
 * {@code b = floor(c / n)} rounded down to a multiple of 16 bytes. The "size" column is the larger of the send
 * and receive buffers in bytes, and the "count" column is the count given to NCCL:
 * <table>
 * <caption>counts per operation (n ranks)</caption>
 * <tr><th>operation</th><th>send elements</th><th>receive elements</th><th>count given to NCCL</th>
 *     <th>busbw factor</th></tr>
 * <tr><td>all_reduce</td><td>c</td><td>c</td><td>c</td><td>2(n-1)/n</td></tr>
 * <tr><td>all_gather</td><td>b</td><td>n b</td><td>b</td><td>(n-1)/n</td></tr>
 * <tr><td>reduce_scatter</td><td>n b</td><td>b</td><td>b</td><td>(n-1)/n</td></tr>
 * <tr><td>broadcast</td><td>c</td><td>c</td><td>c</td><td>1</td></tr>
 * <tr><td>reduce</td><td>c</td><td>c</td><td>c</td><td>1</td></tr>
 * <tr><td>sendrecv</td><td>c</td><td>c</td><td>c</td><td>1</td></tr>
 * <tr><td>alltoall</td><td>n b</td><td>n b</td><td>b (per peer)</td><td>(n-1)/n</td></tr>
 * <tr><td>gather</td><td>b</td><td>n b</td><td>b</td><td>(n-1)/n</td></tr>
 * <tr><td>scatter</td><td>n b</td><td>b</td><td>b</td><td>(n-1)/n</td></tr>
 * </table>
 * algbw = size / time, busbw = algbw x factor (GB/s = 10^9 bytes per second).
 *
 * <h2>In place</h2>
 * The in-place run uses the receive buffer for both sides, as nccl-tests does: all_gather and gather send from
 * block rank of it; reduce_scatter and scatter receive into block rank of it; the others pass the same address
 * twice.
 */
public enum Operation {
    /** {@code ncclAllReduce} (nccl-tests' all_reduce_perf). */
    ALL_REDUCE("all_reduce", true, false),
    /** {@code ncclAllGather} (all_gather_perf). */
    ALL_GATHER("all_gather", false, false),
    /** {@code ncclReduceScatter} (reduce_scatter_perf). */
    REDUCE_SCATTER("reduce_scatter", true, false),
    /** {@code ncclBroadcast} (broadcast_perf). */
    BROADCAST("broadcast", false, true),
    /** {@code ncclReduce} (reduce_perf). */
    REDUCE("reduce", true, true),
    /** {@code ncclSend} to rank + 1 and {@code ncclRecv} from rank - 1, in a ring (sendrecv_perf). */
    SENDRECV("sendrecv", false, false),
    /** {@code ncclAlltoAll} (alltoall_perf). */
    ALLTOALL("alltoall", false, false),
    /** {@code ncclGather} (gather_perf). */
    GATHER("gather", false, true),
    /** {@code ncclScatter} (scatter_perf). */
    SCATTER("scatter", false, true);

    private final String perfName;
    private final boolean reduces;
    private final boolean rooted;

    Operation(String perfName, boolean reduces, boolean rooted) {
        this.perfName = perfName;
        this.reduces = reduces;
        this.rooted = rooted;
    }

    /** @return the nccl-tests name, e.g. "all_reduce" */
    public String perfName() {
        return perfName;
    }

    /** @return whether the operation takes a reduction operator (-o applies) */
    public boolean reduces() {
        return reduces;
    }

    /** @return whether the operation takes a root (-r applies); the root column shows -1 otherwise */
    public boolean rooted() {
        return rooted;
    }

    /**
     * @param name "all_reduce", "all_reduce_perf", "allreduce", ... (case-insensitive)
     * @return the operation, or null when the name is none of them
     */
    public static Operation byName(String name) {
        String n = name.toLowerCase(Locale.ROOT).replace("-", "_");
        if (n.endsWith("_perf")) {
            n = n.substring(0, n.length() - 5);
        }
        for (Operation o : values()) {
            if (o.perfName.equals(n) || o.perfName.replace("_", "").equals(n)) {
                return o;
            }
        }
        return null;
    }

    /**
     * The counts of one size, as nccl-tests computes them.
     *
     * @param bytes a size from the ladder
     * @param typeSize bytes per element
     * @param nranks ranks in the communicator
     * @return the counts
     */
    public Counts counts(long bytes, int typeSize, int nranks) {
        long c = bytes / typeSize;
        long align = Math.max(1, 16 / typeSize);
        long b = (c / nranks) / align * align;
        switch (this) {
            case ALL_GATHER:
            case GATHER:
                return new Counts(b, b * nranks, b, b, 0);
            case REDUCE_SCATTER:
            case SCATTER:
                return new Counts(b * nranks, b, b, 0, b);
            case ALLTOALL:
                return new Counts(b * nranks, b * nranks, b, 0, 0);
            default:
                return new Counts(c, c, c, 0, 0);
        }
    }

    /**
     * @param nranks ranks in the communicator
     * @return busbw / algbw: 2(n-1)/n for all_reduce; (n-1)/n for all_gather, reduce_scatter, alltoall, gather
     *     and scatter; 1 for broadcast, reduce and sendrecv
     */
    public double busFactor(int nranks) {
        switch (this) {
            case ALL_REDUCE:
                return 2.0 * (nranks - 1) / nranks;
            case ALL_GATHER:
            case REDUCE_SCATTER:
            case ALLTOALL:
            case GATHER:
            case SCATTER:
                return (double) (nranks - 1) / nranks;
            default:
                return 1.0;
        }
    }

    /**
     * Element counts of one size.
     *
     * @param send elements in the send buffer
     * @param recv elements in the receive buffer
     * @param param the count passed to NCCL (the "count" column)
     * @param sendInPlaceOffset in place, the send side starts at rank x this many elements into the buffer
     * @param recvInPlaceOffset in place, the receive side starts at rank x this many elements into the buffer
     */
    public record Counts(long send, long recv, long param, long sendInPlaceOffset, long recvInPlaceOffset) {
        /**
         * @param typeSize bytes per element
         * @return the "size" column: the larger buffer in bytes
         */
        public long sizeBytes(int typeSize) {
            return Math.max(send, recv) * typeSize;
        }
    }

    @Override
    public String toString() {
        return perfName;
    }
}
