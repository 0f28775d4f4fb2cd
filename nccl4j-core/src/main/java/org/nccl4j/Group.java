package org.nccl4j;

import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;

/**
 * An NCCL group ({@code ncclGroupStart} ... {@code ncclGroupEnd}): the operations issued inside are fused and
 * launched together at {@link #close()}. Needed to drive several GPUs from one thread and to pair sends and
 * receives. Made by {@link Nccl#group()}.
 */
public final class Group implements AutoCloseable {
    private boolean ended;

    Group() {
    }

    /**
     * {@code ncclGroupSimulateEnd}: ends the group without launching, returning NCCL's estimate (NCCL 2.22+).
     *
     * @return the estimated time of the grouped operations, in microseconds
     */
    public float simulateEnd() {
        ensureOpen();
        float[] t = new float[1];
        int rc = NcclNative.ncclGroupSimulateEnd(t);
        if (rc >= 0) {
            // NCCL took the call, so the group is over whatever it returned; a negative status is nccl4j's
            // (the loaded NCCL lacks the function): nothing reached NCCL and close() must still end the group
            ended = true;
            Groups.over();
        }
        Errors.check(rc, NcclFunction.ncclGroupSimulateEnd, null);
        return t[0];
    }

    private void ensureOpen() {
        if (ended) {
            throw new IllegalStateException("this group has already ended");
        }
    }

    /** {@code ncclGroupEnd}: launches the group's operations. Idempotent. */
    @Override
    public void close() {
        if (ended) {
            return;
        }
        ended = true;
        Groups.end();
    }
}
