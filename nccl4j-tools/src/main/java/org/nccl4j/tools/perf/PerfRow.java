package org.nccl4j.tools.perf;

import java.util.Arrays;
import java.util.Objects;

/**
 * One row of nccl4j-perf's table and one record of its JSON: the measurement of an operation at one size, type,
 * operator, root and placement.
 *
 * @param operation the operation
 * @param size the "size" column in bytes
 * @param count the "count" column (the count given to NCCL)
 * @param type nccl-tests' type name
 * @param redop the operator's name, or "none"
 * @param root the root, or -1
 * @param inPlace whether the run was in place
 * @param timeUs microseconds per operation
 * @param algbw size / time in GB/s
 * @param busbw algbw x the operation's bus factor
 * @param wrong elements found wrong over all ranks, or -1 when not checked (N/A)
 * @param allocBytes Java heap bytes allocated per iteration while issuing the eager loop (this process),
 *     or NaN when not measured (CUDA graph runs, -z, results read from a file)
 * @param opTimeUs with --op_times: p10, p50, p90 and max of this process's first GPU's per-operation times in
 *     microseconds, its first operation's time and the spread of the timed loop's start across processes (us); else
 *     null (compared, hashed and printed by content, not by array identity)
 */
public record PerfRow(Operation operation, long size, long count, String type, String redop, int root,
        boolean inPlace, double timeUs, double algbw, double busbw, long wrong, double allocBytes,
        double[] opTimeUs) {

    /**
     * A result without an allocation figure ({@code allocBytes} is NaN).
     *
     * @param operation the operation
     * @param size the "size" column in bytes
     * @param count the "count" column (the count given to NCCL)
     * @param type nccl-tests' type name
     * @param redop the operator's name, or "none"
     * @param root the root, or -1
     * @param inPlace whether the run was in place
     * @param timeUs microseconds per operation
     * @param algbw size / time in GB/s
     * @param busbw algbw x the operation's bus factor
     * @param wrong elements found wrong over all ranks, or -1 when not checked (N/A)
     */
    public PerfRow(Operation operation, long size, long count, String type, String redop, int root, boolean inPlace,
            double timeUs, double algbw, double busbw, long wrong) {
        this(operation, size, count, type, redop, root, inPlace, timeUs, algbw, busbw, wrong, Double.NaN, null);
    }

    /** A copy of the --op_times array, so that the record stays a value. */
    public PerfRow {
        opTimeUs = opTimeUs == null ? null : opTimeUs.clone();
    }

    /** @return the --op_times percentiles (a copy), or null */
    @Override
    public double[] opTimeUs() {
        return opTimeUs == null ? null : opTimeUs.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PerfRow r && operation == r.operation && size == r.size && count == r.count
                && type.equals(r.type) && redop.equals(r.redop) && root == r.root && inPlace == r.inPlace
                && Double.compare(timeUs, r.timeUs) == 0 && Double.compare(algbw, r.algbw) == 0
                && Double.compare(busbw, r.busbw) == 0 && wrong == r.wrong
                && Double.compare(allocBytes, r.allocBytes) == 0 && Arrays.equals(opTimeUs, r.opTimeUs);
    }

    @Override
    public int hashCode() {
        return 31 * Objects.hash(operation, size, count, type, redop, root, inPlace, timeUs, algbw, busbw, wrong,
                allocBytes) + Arrays.hashCode(opTimeUs);
    }

    @Override
    public String toString() {
        return "PerfRow[" + operation + " " + size + " B, count " + count + ", " + type + ", " + redop + ", root "
                + root + ", " + placement() + ", " + timeUs + " us, algbw " + algbw + ", busbw " + busbw + ", wrong "
                + wrong + ", alloc " + allocBytes + " B, op times " + Arrays.toString(opTimeUs) + "]";
    }

    /** @return "in-place" or "out-of-place" */
    public String placement() {
        return inPlace ? "in-place" : "out-of-place";
    }
}
