package org.nccl4j;

import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;

/**
 * All-to-all, gather and scatter for an NCCL older than 2.28, which lacks {@code ncclAlltoAll}, {@code ncclGather}
 * and {@code ncclScatter}: each composed from {@code ncclSend}/{@code ncclRecv} inside one group. Called from
 * Communicator's one path in place of the NCCL call; allocates nothing.
 */
final class ComposedCollectives {
    private ComposedCollectives() {
    }

    /** ncclAlltoAll before NCCL 2.28: a send to and a receive from every peer, in one group. */
    static int alltoAll(CommHealth c, long send, long recv, long count, DataType type, long stream) {
        long block = count * type.size();
        Groups.start();
        int rc = 0;
        NcclFunction last = NcclFunction.ncclSend;
        for (int peer = 0; peer < c.size && rc == 0; peer++) {
            last = NcclFunction.ncclSend;
            rc = NcclNative.ncclSend(send + peer * block, count, type.code(), peer, c.handle, stream);
            if (rc == 0) {
                last = NcclFunction.ncclRecv;
                rc = NcclNative.ncclRecv(recv + peer * block, count, type.code(), peer, c.handle, stream);
            }
        }
        groupEnd(c, rc, last);
        return 0;
    }

    /** ncclGather before NCCL 2.28: every rank sends to the root, which receives a block from each, in one group. */
    static int gather(CommHealth c, long send, long recv, long count, DataType type, int root, long stream) {
        long block = count * type.size();
        Groups.start();
        NcclFunction last = NcclFunction.ncclSend;
        int rc = NcclNative.ncclSend(send, count, type.code(), root, c.handle, stream);
        if (c.rank == root) {
            for (int peer = 0; peer < c.size && rc == 0; peer++) {
                last = NcclFunction.ncclRecv;
                rc = NcclNative.ncclRecv(recv + peer * block, count, type.code(), peer, c.handle, stream);
            }
        }
        groupEnd(c, rc, last);
        return 0;
    }

    /** ncclScatter before NCCL 2.28: the root sends a block to every rank, each receives its own, in one group. */
    static int scatter(CommHealth c, long send, long recv, long count, DataType type, int root, long stream) {
        long block = count * type.size();
        Groups.start();
        int rc = 0;
        NcclFunction last = NcclFunction.ncclSend;
        if (c.rank == root) {
            for (int peer = 0; peer < c.size && rc == 0; peer++) {
                rc = NcclNative.ncclSend(send + peer * block, count, type.code(), peer, c.handle, stream);
            }
        }
        if (rc == 0) {
            last = NcclFunction.ncclRecv;
            rc = NcclNative.ncclRecv(recv, count, type.code(), root, c.handle, stream);
        }
        groupEnd(c, rc, last);
        return 0;
    }

    /**
     * Ends the group of a composed collective. {@code rc} is the status of the last call made inside it,
     * {@code last}; a failure of that call is reported as {@code last}'s, with NCCL's last-error text taken
     * before ncclGroupEnd can replace it, and the group is ended all the same.
     */
    private static void groupEnd(CommHealth c, int rc, NcclFunction last) {
        RuntimeException failure = null;
        if (rc != Errors.SUCCESS && !(rc == Errors.IN_PROGRESS && !c.blocking)) {
            failure = Errors.failure(rc, last, c);
        }
        int end = Groups.endStatus();
        if (failure != null) {
            throw failure;
        }
        Errors.checkEnqueued(end, NcclFunction.ncclGroupEnd, c);
    }
}
