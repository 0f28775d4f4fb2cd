package org.nccl4j.trace;

import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.time.Instant;
import java.util.Objects;

/**
 * One recorded operation, as a {@link FlightRecorder#snapshot()} or a {@link TraceDump} holds it.
 *
 * @param sequence the communicator's sequence number of the operation, from 1
 * @param operation what was enqueued
 * @param count the element count NCCL was given (per rank for allGather and reduceScatter, per peer for
 *        alltoAll)
 * @param dataType NCCL's name of the element type ({@code "ncclFloat32"}; the names of {@code nccl.h}), or null when
 *        none was recorded
 * @param reduceOp NCCL's name of the reduction operator ({@code "ncclSum"}, {@code "ncclProd"}, {@code "ncclMax"},
 *        {@code "ncclMin"}, {@code "ncclAvg"}, or {@code "ncclPreMulSum(N)"} for the operator NCCL numbered N), or null
 *        for an operation that does not reduce
 * @param peer the root of a rooted collective, the other rank of a send or receive, else null
 * @param bytes the bytes this rank sends or reduces
 * @param stream the CUDA stream's handle ({@code cudaStream_t})
 * @param enqueuedAt when the operation was enqueued (microsecond precision; in a snapshot, derived from
 *        {@link System#nanoTime()} against the wall clock at the snapshot)
 * @param state whether the operation is still pending, completed, or failed
 * @param completedAfterMicros for a completed or failed operation, the microseconds from its enqueueing to its
 *        marking; else null
 */
public record TraceEntry(long sequence, TraceOperation operation, long count, String dataType, String reduceOp,
        Integer peer, long bytes, long stream, Instant enqueuedAt, State state, Long completedAfterMicros) {

    /** The state of a recorded operation. */
    public enum State {
        /** Enqueued; not (yet) marked completed or failed. */
        ENQUEUED,
        /** Marked completed ({@link FlightRecorder#completed(long)}). */
        COMPLETED,
        /** Marked failed ({@link FlightRecorder#failed(long)}). */
        FAILED
    }

    /**
     * Checks the components.
     *
     * @param sequence see the record's description
     * @param operation see the record's description
     * @param count see the record's description
     * @param dataType see the record's description
     * @param reduceOp see the record's description
     * @param peer see the record's description
     * @param bytes see the record's description
     * @param stream see the record's description
     * @param enqueuedAt see the record's description
     * @param state see the record's description
     * @param completedAfterMicros see the record's description
     * @throws NullPointerException when operation, enqueuedAt or state is null
     * @throws IllegalArgumentException when sequence is below 1, count or bytes is negative, peer is negative, a
     *         name is not NCCL's, or completedAfterMicros is given for an operation still enqueued
     */
    public TraceEntry {
        Objects.requireNonNull(operation, "operation");
        Objects.requireNonNull(enqueuedAt, "enqueuedAt");
        Objects.requireNonNull(state, "state");
        if (sequence < 1) {
            throw new IllegalArgumentException("sequence must be >= 1, got " + sequence);
        }
        if (count < 0 || bytes < 0) {
            throw new IllegalArgumentException("count and bytes must be >= 0, got " + count + " and " + bytes);
        }
        if (peer != null && peer < 0) {
            throw new IllegalArgumentException("peer must be a rank (>= 0) or null, got " + peer);
        }
        if (dataType != null && !TraceNames.isDataType(dataType)) {
            throw new IllegalArgumentException("dataType " + dataType + " is not one of " + TraceNames.DATA_TYPES);
        }
        if (reduceOp != null && !TraceNames.isReduceOp(reduceOp)) {
            throw new IllegalArgumentException("reduceOp " + reduceOp + " is not one of " + TraceNames.REDUCE_OPS
                    + " or ncclPreMulSum(N) with N >= 5");
        }
        if (state == State.ENQUEUED && completedAfterMicros != null) {
            throw new IllegalArgumentException("an operation still enqueued has no completedAfterMicros");
        }
    }

    /**
     * The stream as a dump writes it.
     *
     * @return the handle in hexadecimal, e.g. {@code "0x7f3a2c000b40"}
     */
    public String streamHex() {
        return "0x" + Long.toHexString(stream);
    }

    /**
     * Writes the fields that identify the operation across ranks, as a trace dump and the trace analyzer's report
     * name them: {@code seq}, {@code operation}, {@code count}, {@code dataType}, {@code reduceOp} and {@code peer}
     * (null where absent), into the JSON object {@code g} has open.
     *
     * @param g a generator inside an object
     * @throws IOException when the generator cannot write
     */
    public void writeIdentity(JsonGenerator g) throws IOException {
        g.writeNumberField("seq", sequence);
        g.writeStringField("operation", operation.name());
        g.writeNumberField("count", count);
        g.writeStringField("dataType", dataType);
        g.writeStringField("reduceOp", reduceOp);
        g.writeFieldName("peer");
        if (peer == null) {
            g.writeNull();
        } else {
            g.writeNumber(peer);
        }
    }
}
