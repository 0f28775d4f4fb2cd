package org.nccl4j;

import java.util.List;

/**
 * The ranks called different collectives at the same point: found by the collective check
 * ({@link CommConfig.Builder#checkCollectives}, {@code NCCL4J_CHECK_COLLECTIVES=1}), which compares each collective's
 * sequence number, operation, count, data type, reduction operator and root across ranks before enqueuing it. The
 * message names every field that differs, each with every rank's value; {@link #fields()} lists them and
 * {@link #values(String)} gives each one's values. Every rank throws the same finding, and none enqueued the
 * collective, so the communicator stays usable.
 */
public class CollectiveMismatchException extends NcclException {
    private static final long serialVersionUID = 1L;

    private final long sequence;
    private final String pendingOperation;
    /** The fields that differ, in fingerprint order; {@code values[i]} holds {@code fields[i]}'s value per rank. */
    private final String[] fields;
    private final long[][] values;

    CollectiveMismatchException(String message, int rank, long sequence, String operation, String[] fields,
            long[][] values) {
        super(message, "nccl" + Character.toUpperCase(operation.charAt(0)) + operation.substring(1),
                NcclResult.INVALID_USAGE.code(), null, rank, null);
        if (fields.length == 0 || fields.length != values.length) {
            throw new IllegalArgumentException("fields (" + fields.length + ") must be one or more, each with its "
                    + "values (" + values.length + ")");
        }
        this.sequence = sequence;
        this.pendingOperation = operation;
        this.fields = fields.clone();
        this.values = new long[values.length][];
        for (int i = 0; i < values.length; i++) {
            this.values[i] = values[i].clone();
        }
    }

    /** @return this rank's sequence number of the collective (1 for the communicator's first operation) */
    public long sequence() {
        return sequence;
    }

    /** @return the operation this rank called, e.g. {@code "allReduce"} */
    public String pendingOperation() {
        return pendingOperation;
    }

    /**
     * @return the first field that differs: sequence, operation, count, type, op or root (in that order); the
     *     first of {@link #fields()}
     */
    public String field() {
        return fields[0];
    }

    /** @return that first field's value on each rank, indexed by rank (codes for operation, type and op) */
    public long[] values() {
        return values[0].clone();
    }

    /**
     * @return every field that differs (one or more), unmodifiable, in the order sequence, operation, count, type,
     *     op, root
     */
    public List<String> fields() {
        return List.of(fields);
    }

    /**
     * @param field one of {@link #fields()}
     * @return that field's value on each rank, indexed by rank (codes for operation, type and op)
     * @throws IllegalArgumentException when {@code field} is not one of {@link #fields()}: pass a name it lists
     */
    public long[] values(String field) {
        for (int i = 0; i < fields.length; i++) {
            if (fields[i].equals(field)) {
                return values[i].clone();
            }
        }
        throw new IllegalArgumentException("field \"" + field + "\" did not differ; the fields that differ are "
                + List.of(fields) + ": pass one of them");
    }
}
