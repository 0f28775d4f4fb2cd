package org.nccl4j;

import org.nccl4j.jni.NcclFunction;

/**
 * The closing of an NCCL object that belongs to a communicator and dies with it (a buffer registration, a
 * PreMulSum operator), shared by their {@code close()}: once only, and while the communicator is open, one
 * release call ({@code ncclCommDeregister}, {@code ncclRedOpDestroy}) whose failure becomes an
 * {@link NcclException}. Once the communicator is closed, NCCL has freed the object with it: closing calls
 * nothing.
 */
final class CommBound {
    /** The release call, given the communicator's handle; returns an {@code ncclResult_t}. */
    interface Release {
        int call(long comm);
    }

    private final CommHealth comm;
    private final NcclFunction function;
    private volatile boolean closed;

    /**
     * @param comm the communicator the object belongs to
     * @param function the NCCL function that releases it, for the exception of a failed release
     */
    CommBound(CommHealth comm, NcclFunction function) {
        this.comm = comm;
        this.function = function;
    }

    /** @return whether {@link #close(Release)} was called */
    boolean isClosed() {
        return closed;
    }

    /**
     * Marks the object closed and, the first time and while the communicator is open, calls {@code release}.
     * Idempotent: a later call (or a failed first one) calls nothing.
     *
     * @throws NcclException when the release call fails
     */
    void close(Release release) {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        if (!comm.closed) {
            Errors.check(release.call(comm.handleUnchecked()), function, comm);
        }
    }
}
