package org.nccl4j;

import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.jni.NcclNative;

/** The one place where statuses become exceptions (as Netty's Errors). */
final class Errors {
    private Errors() {
    }

    /** Throws unless {@code status} is ncclSuccess. */
    static void check(int status, NcclFunction function, Communicator comm) {
        if (status != 0) {
            throw failure(status, function, comm);
        }
    }

    /**
     * Throws unless {@code status} is ncclSuccess, or ncclInProgress on a nonblocking communicator (where it
     * means "enqueued, completing in the background").
     */
    static void checkEnqueued(int status, NcclFunction function, Communicator comm) {
        if (status != 0 && !(status == 7 && !comm.isBlocking())) {
            throw failure(status, function, comm);
        }
    }

    /** The exception for a failed call: link errors for shim statuses, NcclException for NCCL's. */
    static RuntimeException failure(int status, NcclFunction function, Communicator comm) {
        if (status < 0) {
            try {
                NcclLibrary.checkLinked(status, function);
            } catch (RuntimeException e) {
                return e;
            }
        }
        String errorString = NcclNative.ncclGetErrorString(status);
        String lastError = NcclNative.ncclGetLastError(comm == null ? 0L : comm.handleUnchecked());
        return new NcclException(function.name(), status, errorString, lastError, comm == null ? -1 : comm.rankUnchecked());
    }

    // ---- argument checks, thrown from small out-of-line helpers so that callers inline ----

    static IllegalArgumentException argument(String message) {
        return new IllegalArgumentException(message);
    }

    static NullPointerException nullArgument(String name) {
        return new NullPointerException(name + " must not be null");
    }
}
