package org.nccl4j;

/**
 * The ranks called different collectives at the same point: found by the collective check
 * ({@link CommConfig.Builder#checkCollectives}, {@code NCCL4J_CHECK_COLLECTIVES=1}), which compares each collective's
 * sequence number, operation, count, data type, reduction operator and root across ranks before enqueuing it. Every
 * rank throws the same finding, and none enqueued the collective, so the communicator stays usable.
 */
public class CollectiveMismatchException extends NcclException {
    private static final long serialVersionUID = 1L;

    private final long sequence;
    private final String pendingOperation;
    private final String field;
    private final long[] values;

    CollectiveMismatchException(String message, int rank, long sequence, String operation, String field,
            long[] values) {
        super(message, "nccl" + Character.toUpperCase(operation.charAt(0)) + operation.substring(1),
                NcclResult.INVALID_USAGE.code(), null, rank, null);
        this.sequence = sequence;
        this.pendingOperation = operation;
        this.field = field;
        this.values = values.clone();
    }

    /** @return this rank's sequence number of the collective (1 for the communicator's first operation) */
    public long sequence() {
        return sequence;
    }

    /** @return the operation this rank called, e.g. {@code "allReduce"} */
    public String pendingOperation() {
        return pendingOperation;
    }

    /** @return the first field that differs: sequence, operation, count, type, op or root */
    public String field() {
        return field;
    }

    /** @return that field's value on each rank, indexed by rank (codes for operation, type and op) */
    public long[] values() {
        return values.clone();
    }
}
