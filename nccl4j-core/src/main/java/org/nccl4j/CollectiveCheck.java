package org.nccl4j;

import java.util.Arrays;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.trace.FlightRecorder;
import org.nccl4j.trace.TraceOperation;

/**
 * The collective check of one communicator ({@code NCCL4J_CHECK_COLLECTIVES}): before a collective is enqueued, every
 * rank all-gathers its fingerprint (sequence number, operation, count, type, operator, root) and waits; any field in
 * which a rank differs from rank 0 ends in a {@link CollectiveMismatchException} that names every differing field
 * with every rank's value, and nothing is enqueued. The watchdog watches the wait ({@link #since()}), so a rank that
 * never arrives ends in a timeout that names the fingerprint it was checking ({@link #fingerprint()}).
 */
final class CollectiveCheck {
    /** Fields of a fingerprint: sequence, operation, count, type, operator, root. */
    static final int FIELDS = 6;
    private static final String[] FIELD_NAMES = {"sequence", "operation", "count", "type", "op", "root"};

    private final CommHealth comm;
    /** This rank's fingerprint, then every rank's (all-gathered); allocated on the first check. */
    private DeviceBuffer buffer;
    private final long[] fingerprint = new long[FIELDS];
    /** When the check in progress began waiting for its peers ({@link System#nanoTime()}), or 0: watched. */
    private volatile long since;

    CollectiveCheck(CommHealth comm) {
        this.comm = comm;
    }

    /**
     * All-gathers this collective's fingerprint on {@code stream}, waits, and throws when a rank differs in any
     * field, naming every such field. Not during graph capture (it waits).
     */
    void agree(TraceOperation op, long count, DataType type, int redOp, int root, Stream stream) {
        if (Capture.active() != 0 && stream.captureThread() != null) {
            return;
        }
        int size = comm.size;
        FlightRecorder recorder = comm.recorder;
        long seq = recorder != null ? recorder.lastEnqueued() + 1 : comm.sequence + 1;
        if (buffer == null) {
            buffer = DeviceBuffer.allocate(comm.device, (long) (size + 1) * FIELDS, DataType.INT64);
        }
        long[] fp = fingerprint;
        fp[0] = seq;
        fp[1] = op.code();
        fp[2] = count;
        fp[3] = type.code();
        fp[4] = redOp < ReduceOp.AVG.code() + 1 ? redOp : ReduceOp.AVG.code() + 1;  // every PreMulSum alike
        fp[5] = root;
        buffer.copyFrom(fp);
        long at = buffer.address();
        Errors.checkEnqueued(NcclNative.ncclAllGather(at, at + 8L * FIELDS, FIELDS, DataType.INT64.code(),
                comm.handleUnchecked(), stream.handle()), NcclFunction.ncclAllGather, comm);
        since = System.nanoTime();
        try {
            stream.synchronize();
        } finally {
            since = 0;
        }
        long[] all = buffer.copyTo(new long[(size + 1) * FIELDS]);
        CollectiveMismatchException mismatch = compare(op, seq, all, size);
        if (mismatch != null) {
            throw mismatch;
        }
    }

    /**
     * The exception naming every field in which a rank's fingerprint differs from rank 0's, or null when none
     * does; {@code all} holds this rank's fingerprint, then every rank's (what {@link #agree} gathers).
     */
    CollectiveMismatchException compare(TraceOperation op, long seq, long[] all, int size) {
        int[] fields = differences(all, size);
        if (fields.length == 0) {
            return null;
        }
        long[][] values = new long[fields.length][size];
        for (int i = 0; i < fields.length; i++) {
            for (int r = 0; r < size; r++) {
                values[i][r] = all[(r + 1) * FIELDS + fields[i]];
            }
        }
        return mismatch(op, seq, fields, values);
    }

    /**
     * Every fingerprint field in which a rank differs from rank 0, in fingerprint order (empty when none);
     * {@code all} holds this rank's fingerprint, then every rank's.
     */
    static int[] differences(long[] all, int size) {
        int[] fields = new int[FIELDS];
        int n = 0;
        for (int f = 0; f < FIELDS; f++) {
            for (int r = 1; r < size; r++) {
                if (all[(r + 1) * FIELDS + f] != all[FIELDS + f]) {
                    fields[n++] = f;
                    break;
                }
            }
        }
        return Arrays.copyOf(fields, n);
    }

    /** The first of {@link #differences}, or -1 when no rank differs. */
    static int firstDifference(long[] all, int size) {
        int[] fields = differences(all, size);
        return fields.length > 0 ? fields[0] : -1;
    }

    /** The exception for {@code field} differing among the ranks' {@code values}: the one-field case. */
    CollectiveMismatchException mismatch(TraceOperation op, long seq, int field, long[] values) {
        return mismatch(op, seq, new int[] {field}, new long[][] {values});
    }

    /**
     * The exception for {@code fields} (in fingerprint order) differing among the ranks; {@code values[i]} holds
     * field {@code fields[i]} of each rank, indexed by rank. Each field is named as
     * {@code "count differs: rank 0 10, rank 1 5"}, and the fields are joined by {@code "; "}.
     */
    CollectiveMismatchException mismatch(TraceOperation op, long seq, int[] fields, long[][] values) {
        int rank = comm.rank;
        StringBuilder sb = new StringBuilder("rank ").append(rank).append(" of ").append(comm.size);
        if (comm.name() != null) {
            sb.append(" (communicator \"").append(comm.name()).append("\")");
        }
        sb.append(": the ranks called different collectives at ").append(op.name()).append(" #").append(seq)
                .append(": ");
        String[] names = new String[fields.length];
        for (int i = 0; i < fields.length; i++) {
            int field = fields[i];
            names[i] = FIELD_NAMES[field];
            sb.append(i == 0 ? "" : "; ").append(names[i]).append(" differs: ");
            for (int r = 0; r < values[i].length; r++) {
                sb.append(r == 0 ? "" : ", ").append("rank ").append(r).append(' ')
                        .append(valueText(field, values[i][r]));
            }
        }
        sb.append(". NCCL4J_CHECK_COLLECTIVES compared sequence, operation, count, type, operator and root before "
                + "enqueuing it; no rank enqueued it. Make every rank call the same collectives in the same order "
                + "with the same arguments");
        return new CollectiveMismatchException(sb.toString(), rank, seq, op.name(), names, values);
    }

    private static String valueText(int field, long v) {
        switch (field) {
            case 1:
                return v >= 0 && v < TraceOperation.values().length ? TraceOperation.fromCode((int) v).name()
                        : Long.toString(v);
            case 3:
                return v >= 0 && v < DataType.values().length ? DataType.fromCode((int) v).ncclName()
                        : Long.toString(v);
            case 4:
                return v < 0 ? "none" : v <= ReduceOp.AVG.code() ? ReduceOp.builtIn()[(int) v].toString() : "PreMulSum";
            default:
                return Long.toString(v);
        }
    }

    /** @return when the check in progress began waiting, or 0 */
    long since() {
        return since;
    }

    /** @return this rank's fingerprint of the check in progress: sequence, operation code, count, type, op, root */
    long[] fingerprint() {
        return fingerprint;
    }

    /** Frees the device buffer (at close or abort). */
    void release() {
        DeviceBuffer b = buffer;
        if (b != null) {
            buffer = null;
            b.close();
        }
    }
}
