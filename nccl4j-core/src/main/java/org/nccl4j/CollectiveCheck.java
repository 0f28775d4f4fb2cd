package org.nccl4j;

import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.trace.FlightRecorder;
import org.nccl4j.trace.TraceOperation;

/**
 * The collective check of one communicator ({@code NCCL4J_CHECK_COLLECTIVES}): before a collective is enqueued, every
 * rank all-gathers its fingerprint (sequence number, operation, count, type, operator, root) and waits; the first
 * field in which a rank differs from rank 0 ends in a {@link CollectiveMismatchException} that names every rank's
 * value, and nothing is enqueued. The watchdog watches the wait ({@link #since()}), so a rank that never arrives
 * ends in a timeout that names the fingerprint it was checking ({@link #fingerprint()}).
 */
final class CollectiveCheck {
    /** Fields of a fingerprint: sequence, operation, count, type, operator, root. */
    static final int FIELDS = 6;
    private static final String[] FIELD_NAMES = {"sequence", "operation", "count", "type", "op", "root"};

    private final Communicator comm;
    /** This rank's fingerprint, then every rank's (all-gathered); allocated on the first check. */
    private DeviceBuffer buffer;
    private final long[] fingerprint = new long[FIELDS];
    /** When the check in progress began waiting for its peers ({@link System#nanoTime()}), or 0: watched. */
    private volatile long since;

    CollectiveCheck(Communicator comm) {
        this.comm = comm;
    }

    /**
     * All-gathers this collective's fingerprint on {@code stream}, waits, and throws on the first field in which a
     * rank differs. Not during graph capture (it waits).
     */
    void agree(TraceOperation op, long count, DataType type, int redOp, int root, Stream stream) {
        if (Capture.active() != 0 && stream.captureThread() != null) {
            return;
        }
        int size = comm.size();
        FlightRecorder recorder = comm.recorder();
        long seq = recorder != null ? recorder.lastEnqueued() + 1 : comm.sequence() + 1;
        if (buffer == null) {
            buffer = DeviceBuffer.allocate(comm.device(), (long) (size + 1) * FIELDS, DataType.INT64);
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
        int field = firstDifference(all, size);
        if (field >= 0) {
            long[] values = new long[size];
            for (int r = 0; r < size; r++) {
                values[r] = all[(r + 1) * FIELDS + field];
            }
            throw mismatch(op, seq, field, values);
        }
    }

    /**
     * The first fingerprint field in which a rank differs from rank 0, or -1; {@code all} holds this rank's
     * fingerprint, then every rank's.
     */
    static int firstDifference(long[] all, int size) {
        for (int f = 0; f < FIELDS; f++) {
            for (int r = 1; r < size; r++) {
                if (all[(r + 1) * FIELDS + f] != all[FIELDS + f]) {
                    return f;
                }
            }
        }
        return -1;
    }

    /** The exception for {@code field} differing among the ranks' {@code values}. */
    CollectiveMismatchException mismatch(TraceOperation op, long seq, int field, long[] values) {
        int rank = comm.rank();
        StringBuilder sb = new StringBuilder("rank ").append(rank).append(" of ").append(comm.size());
        if (comm.name() != null) {
            sb.append(" (communicator \"").append(comm.name()).append("\")");
        }
        sb.append(": the ranks called different collectives at ").append(op.name()).append(" #").append(seq)
                .append(": ").append(FIELD_NAMES[field]).append(" differs: ");
        for (int r = 0; r < values.length; r++) {
            sb.append(r == 0 ? "" : ", ").append("rank ").append(r).append(' ').append(valueText(field, values[r]));
        }
        sb.append(". NCCL4J_CHECK_COLLECTIVES compared sequence, operation, count, type, operator and root before "
                + "enqueuing it; no rank enqueued it. Make every rank call the same collectives in the same order "
                + "with the same arguments");
        return new CollectiveMismatchException(sb.toString(), rank, seq, op.name(), FIELD_NAMES[field], values);
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
