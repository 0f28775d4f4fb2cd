package org.nccl4j;

import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.jni.NcclNative;

/** The one place where statuses become exceptions (as Netty's Errors). */
final class Errors {
    /** {@code ncclSuccess}. */
    static final int SUCCESS = 0;
    /** {@code ncclRemoteError}: a peer or the network failed. */
    static final int REMOTE_ERROR = 6;
    /** {@code ncclInProgress}: a nonblocking call goes on in the background. */
    static final int IN_PROGRESS = 7;

    /** The communicator a failed call was made on, as an exception names it. */
    interface Source {
        /** @return its handle, or 0 once it is closed (for ncclGetLastError) */
        long handleUnchecked();

        /** @return its rank */
        int rankUnchecked();

        /** @return whether its NCCL calls block (else ncclInProgress means enqueued) */
        boolean isBlocking();
    }

    private Errors() {
    }

    /** Whether an asynchronous state ({@code ncclCommGetAsyncError}) is an error: neither success nor in progress. */
    static boolean isFailure(int state) {
        return state != SUCCESS && state != IN_PROGRESS;
    }

    /** Throws unless {@code status} is ncclSuccess. */
    static void check(int status, NcclFunction function, Source comm) {
        if (status != SUCCESS) {
            throw failure(status, function, comm);
        }
    }

    /**
     * Throws unless {@code status} is ncclSuccess, or ncclInProgress on a nonblocking communicator (where it
     * means "enqueued, completing in the background").
     */
    static void checkEnqueued(int status, NcclFunction function, Source comm) {
        if (enqueueFailed(status, comm)) {
            throw failure(status, function, comm);
        }
    }

    /** Whether an enqueueing call's {@code status} is a failure: neither success nor, when nonblocking, in progress. */
    static boolean enqueueFailed(int status, Source comm) {
        return status != SUCCESS && !(status == IN_PROGRESS && !comm.isBlocking());
    }

    /** The exception for a failed call: link errors for shim statuses, NcclException for NCCL's. */
    static RuntimeException failure(int status, NcclFunction function, Source comm) {
        if (status < 0) {
            try {
                NcclLibrary.checkLinked(status, function);
            } catch (RuntimeException e) {
                return e;
            }
        }
        String errorString = NcclNative.ncclGetErrorString(status);
        String lastError = NcclNative.ncclGetLastError(comm == null ? 0L : comm.handleUnchecked());
        int rank = comm == null ? -1 : comm.rankUnchecked();
        return new NcclException(function.name(), status, errorString, lastError, rank);
    }

    /** The exception for an API that needs {@code fn} when the loaded NCCL {@code lib} is older than it. */
    static UnsupportedOperationException unsupported(String api, NcclFunction fn, NcclLibrary lib) {
        return new UnsupportedOperationException(api + " needs " + fn + ", added in NCCL " + fn.since()
                + "; the loaded NCCL is " + lib.version() + " (" + lib.path() + "): load NCCL " + fn.since()
                + " or newer (-Dnccl4j.library, NCCL4J_LIBRARY, or the library search path)");
    }

    // ---- argument checks, thrown from small out-of-line helpers so that callers inline ----

    static IllegalArgumentException argument(String message) {
        return new IllegalArgumentException(message);
    }

    static NullPointerException nullArgument(String name) {
        return new NullPointerException(name + " must not be null");
    }
}
