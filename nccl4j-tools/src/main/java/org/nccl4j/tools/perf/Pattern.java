package org.nccl4j.tools.perf;

import org.nccl4j.DataType;
import org.nccl4j.ReduceOp;

/**
 * The input every rank writes before a checked run, and the value each received element must then hold.
 *
 * <p>Inputs are small whole numbers, exact in every NCCL type (fp8 included), chosen so that every reduction
 * of up to 8 ranks is exact too: sum and avg add 0s and 1s, prod multiplies 1s and 2s (at most 6 ranks
 * contribute a 2, so a product never exceeds 64, which int8 holds), min and max pick among 0..4. Operations
 * that move data send {@code (3q + i) mod 8} from rank q at element i, so a block that lands in the wrong place
 * or comes from the wrong rank is seen. Floating-point results of avg (a division by the rank count) are
 * compared within a tolerance of the type's precision; everything else must match exactly.
 */
public final class Pattern {
    private Pattern() {
    }

    /**
     * The input of rank {@code q} at element {@code i} of its send buffer.
     *
     * @param op the operator for reducing operations, null for the others
     * @param q the rank that writes the input
     * @param i the element index in the send buffer
     * @return the value, a whole number from 0 to 7
     */
    public static double input(ReduceOp op, int q, long i) {
        if (op == null) {
            return (3L * q + i) % 8;
        }
        long shifted = i / (q + 1);
        switch (op.code()) {
            case 0: // sum
            case 4: // avg
                return shifted % 2;
            case 1: // prod
                return q < 6 && shifted % 4 == 0 ? 2 : 1;
            default: // max, min
                return (shifted + q) % 5;
        }
    }

    /**
     * The reduction over all {@code nranks} ranks of their inputs at element {@code i}.
     *
     * @param op the operator, not null
     * @param t the data type (avg divides exactly for floating types and rounds down for integer ones)
     * @param nranks ranks in the communicator
     * @param i the element index
     * @return the exact reduced value
     */
    public static double reduced(ReduceOp op, DataType t, int nranks, long i) {
        double acc;
        switch (op.code()) {
            case 1:
                acc = 1;
                for (int q = 0; q < nranks; q++) {
                    acc *= input(op, q, i);
                }
                return acc;
            case 2:
                acc = Double.NEGATIVE_INFINITY;
                for (int q = 0; q < nranks; q++) {
                    acc = Math.max(acc, input(op, q, i));
                }
                return acc;
            case 3:
                acc = Double.POSITIVE_INFINITY;
                for (int q = 0; q < nranks; q++) {
                    acc = Math.min(acc, input(op, q, i));
                }
                return acc;
            default:
                acc = 0;
                for (int q = 0; q < nranks; q++) {
                    acc += input(op, q, i);
                }
                if (op.code() == 4) {
                    return t.isFloating() ? acc / nranks : Math.floor(acc / nranks);
                }
                return acc;
        }
    }

    /**
     * What rank {@code rank} must hold at element {@code j} of the result after the operation.
     *
     * @param o the operation
     * @param op the operator (reducing operations), or null
     * @param t the data type
     * @param nranks ranks in the communicator
     * @param root the root (rooted operations)
     * @param rank the rank whose result this is
     * @param perRank the per-rank count (the count given to NCCL)
     * @param j an element of the result: of the receive buffer, or of this rank's block of it when in place
     * @return the expected value, or NaN where this rank receives nothing to check (reduce and gather off the root)
     */
    public static double expected(Operation o, ReduceOp op, DataType t, int nranks, int root, int rank, long perRank,
            long j) {
        switch (o) {
            case ALL_REDUCE:
                return reduced(op, t, nranks, j);
            case REDUCE:
                return rank == root ? reduced(op, t, nranks, j) : Double.NaN;
            case BROADCAST:
                return input(null, root, j);
            case ALL_GATHER:
                return input(null, (int) (j / perRank), j % perRank);
            case GATHER:
                return rank == root ? input(null, (int) (j / perRank), j % perRank) : Double.NaN;
            case REDUCE_SCATTER:
                return reduced(op, t, nranks, rank * perRank + j);
            case SCATTER:
                return input(null, root, rank * perRank + j);
            case ALLTOALL:
                return input(null, (int) (j / perRank), rank * perRank + j % perRank);
            case SENDRECV:
                return input(null, (rank - 1 + nranks) % nranks, j);
            default:
                throw new IllegalArgumentException(String.valueOf(o));
        }
    }

    /**
     * Whether rank {@code rank} has a result to check: all but the non-root ranks of reduce and gather.
     *
     * @param o the operation
     * @param rank the rank in question
     * @param root the root (rooted operations)
     * @return whether rank {@code rank} has a result to check
     */
    public static boolean checked(Operation o, int rank, int root) {
        return !((o == Operation.REDUCE || o == Operation.GATHER) && rank != root);
    }

    /**
     * The largest accepted difference between a result and its expected value.
     *
     * @param t the data type
     * @param op the operator, or null for operations that do not reduce
     * @param expected the expected value
     * @return 0 (exact) except for avg on floating types, where it is a relative tolerance of the type's precision
     *         times {@code max(1, |expected|)}
     */
    public static double tolerance(DataType t, ReduceOp op, double expected) {
        if (op == null || op.code() != 4 || !t.isFloating()) {
            return 0;
        }
        double rel;
        switch (t) {
            case FLOAT64: rel = 1e-12; break;
            case FLOAT32: rel = 1e-6; break;
            case FLOAT16: rel = 1.0 / 512; break;
            case BFLOAT16: rel = 1.0 / 64; break;
            default: rel = 0.25; break; // fp8
        }
        return rel * Math.max(1.0, Math.abs(expected));
    }
}
