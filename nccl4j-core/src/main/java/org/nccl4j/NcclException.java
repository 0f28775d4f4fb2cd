package org.nccl4j;

/**
 * An NCCL call failed. Carries the raw code, its {@link NcclResult}, NCCL's name for it, the text of
 * {@code ncclGetLastError}, the rank of the communicator involved (-1 if none) and the operation.
 *
 * <p>Message format: {@code ncclAllReduce failed on rank 1: ncclInvalidArgument (4): <ncclGetErrorString>;
 * last error: <ncclGetLastError>}, followed for causes nccl4j recognizes by what to do, e.g. for NCCL's
 * {@code Duplicate GPU detected} (two ranks of one host on one GPU) {@code ; ranks that share a GPU need their own
 * NCCL_HOSTID: ...}.
 */
public class NcclException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The raw status code. */
    private final int code;
    /** The status as an enum. */
    private final NcclResult result;
    /** {@code ncclGetLastError}'s text, or null. */
    private final String lastError;
    /** The communicator's rank, or -1. */
    private final int rank;
    /** The NCCL function that failed. */
    private final String operation;

    /**
     * @param operation the NCCL function that failed, e.g. {@code ncclAllReduce}
     * @param code the status it returned
     * @param errorString NCCL's {@code ncclGetErrorString(code)}, or null
     * @param lastError NCCL's {@code ncclGetLastError}, or null
     * @param rank the communicator's rank, or -1
     */
    public NcclException(String operation, int code, String errorString, String lastError, int rank) {
        super(message(operation, code, errorString, lastError, rank));
        this.code = code;
        this.result = NcclResult.of(code);
        this.lastError = lastError;
        this.rank = rank;
        this.operation = operation;
    }

    /**
     * For subclasses that compose their own message (the watchdog's failures).
     *
     * @param message the whole message
     * @param operation the NCCL function involved
     * @param code the {@code ncclResult_t}
     * @param lastError {@code ncclGetLastError}'s text, or null
     * @param rank the communicator's rank, or -1
     * @param cause the cause, or null
     */
    protected NcclException(String message, String operation, int code, String lastError, int rank, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.result = NcclResult.of(code);
        this.lastError = lastError;
        this.rank = rank;
        this.operation = operation;
    }

    private static String message(String operation, int code, String errorString, String lastError, int rank) {
        NcclResult r = NcclResult.of(code);
        StringBuilder sb = new StringBuilder(operation).append(" failed");
        if (rank >= 0) {
            sb.append(" on rank ").append(rank);
        }
        sb.append(": ").append(r == NcclResult.UNKNOWN ? "unknown ncclResult_t" : r.ncclName())
                .append(" (").append(code).append(')');
        if (errorString != null && !errorString.isEmpty()) {
            sb.append(": ").append(errorString);
        }
        if (lastError != null && !lastError.isEmpty()) {
            sb.append("; last error: ").append(lastError);
            if (lastError.contains(DUPLICATE_GPU)) {
                sb.append("; ranks that share a GPU need their own NCCL_HOSTID: launch with scripts/nccl4j-run"
                        + " --share-gpu, or give each rank NCCL_HOSTID=<its own name> and NCCL_SOCKET_IFNAME=lo");
            }
        }
        return sb.toString();
    }

    /** What NCCL's last error says when two ranks of one host use one GPU. */
    private static final String DUPLICATE_GPU = "Duplicate GPU detected";

    /** @return the raw status code */
    public int code() {
        return code;
    }

    /** @return the status as an enum ({@link NcclResult#UNKNOWN} for undefined codes) */
    public NcclResult result() {
        return result;
    }

    /** @return NCCL's name of the status, e.g. {@code ncclRemoteError} */
    public String ncclName() {
        return result == NcclResult.UNKNOWN ? "unknown(" + code + ")" : result.ncclName();
    }

    /** @return {@code ncclGetLastError}'s text at the time of failure, or null */
    public String lastError() {
        return lastError;
    }

    /** @return the rank of the communicator involved, or -1 */
    public int rank() {
        return rank;
    }

    /** @return the NCCL function that failed */
    public String operation() {
        return operation;
    }
}
