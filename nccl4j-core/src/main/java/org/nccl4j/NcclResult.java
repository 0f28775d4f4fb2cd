package org.nccl4j;

/** NCCL's status codes ({@code ncclResult_t}), plus {@link #UNKNOWN} for a code NCCL does not define. */
public enum NcclResult {
    /** {@code ncclSuccess} (0). */
    SUCCESS(0, "ncclSuccess"),
    /** {@code ncclUnhandledCudaError} (1): a CUDA call inside NCCL failed. */
    UNHANDLED_CUDA_ERROR(1, "ncclUnhandledCudaError"),
    /** {@code ncclSystemError} (2): a system call failed (memory, sockets, files). */
    SYSTEM_ERROR(2, "ncclSystemError"),
    /** {@code ncclInternalError} (3): an NCCL bug or memory corruption. */
    INTERNAL_ERROR(3, "ncclInternalError"),
    /** {@code ncclInvalidArgument} (4): a bad argument reached NCCL. */
    INVALID_ARGUMENT(4, "ncclInvalidArgument"),
    /** {@code ncclInvalidUsage} (5): the API was used the wrong way. */
    INVALID_USAGE(5, "ncclInvalidUsage"),
    /** {@code ncclRemoteError} (6): a remote peer or the network failed. */
    REMOTE_ERROR(6, "ncclRemoteError"),
    /** {@code ncclInProgress} (7): a nonblocking operation has not completed yet. */
    IN_PROGRESS(7, "ncclInProgress"),
    /** {@code ncclTimeout} (8): an operation timed out. */
    TIMEOUT(8, "ncclTimeout"),
    /** A code that is not an {@code ncclResult_t} of any NCCL nccl4j knows (e.g. {@code ncclNumResults}, 9). */
    UNKNOWN(-1, "unknown");

    private static final NcclResult[] BY_CODE = {SUCCESS, UNHANDLED_CUDA_ERROR, SYSTEM_ERROR, INTERNAL_ERROR,
        INVALID_ARGUMENT, INVALID_USAGE, REMOTE_ERROR, IN_PROGRESS, TIMEOUT};

    private final int code;
    private final String ncclName;

    NcclResult(int code, String ncclName) {
        this.code = code;
        this.ncclName = ncclName;
    }

    /** @return the {@code ncclResult_t} value, or -1 for {@link #UNKNOWN} */
    public int code() {
        return code;
    }

    /** @return NCCL's own name, e.g. {@code ncclInvalidArgument} */
    public String ncclName() {
        return ncclName;
    }

    /**
     * @param code a status returned by NCCL
     * @return its constant, or {@link #UNKNOWN}
     */
    public static NcclResult of(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : UNKNOWN;
    }
}
