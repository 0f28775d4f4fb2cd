package org.nccl4j.examples.perf;

import org.nccl4j.Communicator;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.NcclResult;
import org.nccl4j.jni.NcclNative;

/**
 * nccl4j-perf's {@code -R 2}: a buffer registered as a symmetric window ({@code ncclCommWindowRegister} with
 * {@code NCCL_WIN_COLL_SYMMETRIC}, NCCL 2.27+), deregistered on close. The only place in nccl4j-perf that calls the
 * raw layer, so that it can give way to a typed window API of the core.
 *
 * <p>The registration is collective: every rank of the communicator registers its buffer in the same order. It is
 * made outside any NCCL group (one communicator per process), so NCCL has written the handle when the call returns.
 */
final class SymmetricWindow implements AutoCloseable {
    /** {@code NCCL_WIN_COLL_SYMMETRIC}. */
    static final int COLL_SYMMETRIC = 1;

    private final Communicator comm;
    private final long window;
    private boolean closed;

    private SymmetricWindow(Communicator comm, long window) {
        this.comm = comm;
        this.window = window;
    }

    /**
     * Registers the whole of {@code buffer} as a symmetric window of {@code comm}.
     *
     * @param comm the communicator, blocking, not inside a group
     * @param buffer a buffer on its device, best from {@link DeviceBuffer#allocateNccl}
     * @return the window; close it before the buffer and the communicator
     * @throws IllegalStateException naming NCCL's status and message when the registration fails
     */
    static SymmetricWindow register(Communicator comm, DeviceBuffer buffer) {
        long[] win = new long[1];
        int rc = NcclNative.ncclCommWindowRegister(comm.handle(), buffer.address(), buffer.bytes(), win,
                COLL_SYMMETRIC);
        check(rc, "ncclCommWindowRegister(" + buffer.bytes() + " bytes, NCCL_WIN_COLL_SYMMETRIC)", comm);
        return new SymmetricWindow(comm, win[0]);
    }

    /** {@code ncclCommWindowDeregister}; idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        check(NcclNative.ncclCommWindowDeregister(comm.handle(), window), "ncclCommWindowDeregister", comm);
    }

    private static void check(int rc, String call, Communicator comm) {
        if (rc != 0) {
            String last = NcclNative.ncclGetLastError(comm.handle());
            throw new IllegalStateException("-R 2: " + call + " failed on rank " + comm.rank() + " with "
                    + NcclResult.of(rc).ncclName() + " (" + rc + ")" + (last == null || last.isBlank() ? ""
                    : ": " + last));
        }
    }
}
