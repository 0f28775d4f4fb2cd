package org.nccl4j;

import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.trace.TraceOperation;

/**
 * The one path of a {@link Communicator}'s collectives and point-to-point calls: each public form (on buffers, in
 * place, on raw addresses) is a one-line call into {@link #collective}, {@link #inPlace} or {@link #raw}, which check
 * the arguments ({@link Arguments}) and derive the count and addresses as {@link Collective} describes the operation;
 * then {@link #enqueue} makes the one NCCL call and {@link #enqueued} records and publishes it. One per communicator,
 * made with it. Allocates nothing on the Java heap unless it throws.
 */
final class Dispatch {
    private final long handle;
    private final int rank;
    private final int size;
    private final NcclLibrary library;
    private final CommHealth health;
    private final boolean nativeAlltoAll;
    private final boolean nativeGather;
    private final boolean nativeScatter;
    /** Whether the ledger keeps its collectives' fingerprint ({@link CommConfig.Builder#fingerprint}). */
    private final boolean fingerprinted;

    Dispatch(long handle, NcclLibrary library, CommHealth health, boolean fingerprinted) {
        this.handle = handle;
        this.rank = health.rank;
        this.size = health.size;
        this.library = library;
        this.health = health;
        this.fingerprinted = fingerprinted;
        this.nativeAlltoAll = library.has(NcclFunction.ncclAlltoAll);
        this.nativeGather = library.has(NcclFunction.ncclGather);
        this.nativeScatter = library.has(NcclFunction.ncclScatter);
    }

    /**
     * The form on two buffers: the count from the one {@link Collective} names, the other buffer checked to hold what
     * the operation reads or writes there (skipped on a non-root rank where only the root uses it and it is null).
     */
    void collective(Collective c, DeviceBuffer send, DeviceBuffer recv, DataType type, ReduceOp op, int root,
            Stream stream) {
        checkCommon(c, type, root, stream);
        boolean fromRecv = c.countFromRecv;
        String countedName = fromRecv ? "recv" : "send";
        String otherName = fromRecv ? "send" : "recv";
        DeviceBuffer counted = fromRecv ? recv : send;
        DeviceBuffer other = fromRecv ? send : recv;
        long count = Arguments.elements(health, counted, type, countedName);
        if (fromRecv ? c.recvPerRank : c.sendPerRank) {
            count = Arguments.perRank(health, count, countedName, type);
        }
        long otherAddress = 0;
        if (!(fromRecv ? c.sendAtRoot : c.recvAtRoot) || rank == root || other != null) {
            Arguments.buffer(health, other, otherName);
            Arguments.fits(other, (fromRecv ? c.sendPerRank : c.recvPerRank) ? count * size : count, type, otherName);
            otherAddress = other.address();
        }
        long send0 = fromRecv ? otherAddress : counted.address();
        long recv0 = fromRecv ? counted.address() : otherAddress;
        enqueue(c, send0, recv0, count, type, op, root, stream);
    }

    /**
     * The form on one buffer: in place, or this rank's block of it when the operation moves a block per rank; for
     * send and recv, the buffer itself.
     */
    void inPlace(Collective c, DeviceBuffer buffer, DataType type, ReduceOp op, int root, Stream stream) {
        checkCommon(c, type, root, stream);
        long count = Arguments.elements(health, buffer, type, "buffer");
        long send = buffer.address();
        long recv = send;
        if (c.sendPerRank || c.recvPerRank) {
            count = Arguments.perRank(health, count, "buffer", type);
            long mine = buffer.address() + rank * count * type.size();
            if (c.recvPerRank) {
                send = mine;      // all-gather, gather: this rank's block is the data it contributes
            } else {
                recv = mine;      // reduce-scatter, scatter: this rank's block is where its result lands
            }
        }
        enqueue(c, send, recv, count, type, op, root, stream);
    }

    /** The form on device addresses and an explicit count: addresses must not be 0 where they are used. */
    void raw(Collective c, long send, long recv, long count, DataType type, ReduceOp op, int root,
            Stream stream) {
        checkCommon(c, type, root, stream);
        if (c.pointToPoint) {
            Arguments.raw(send, "buffer", count);
        } else {
            if (!c.sendAtRoot || rank == root) {
                Arguments.raw(send, "send", count);
            }
            if (!c.recvAtRoot || rank == root) {
                Arguments.raw(recv, "recv", count);
            }
        }
        enqueue(c, send, recv, count, type, op, root, stream);
    }

    /**
     * Every operation ends here with checked arguments: the operator's check, the collective check when it is on,
     * one NCCL call (or, before NCCL 2.28, the group of sends and receives that composes all-to-all, gather or
     * scatter), then {@link #enqueued} records it. Allocates nothing.
     */
    private void enqueue(Collective c, long send, long recv, long count, DataType type, ReduceOp op, int root,
            Stream stream) {
        int redOp = -1;
        if (c.reduces) {
            checkOp(op, type);
            redOp = op.code();
        }
        CollectiveCheck check = health.check;
        if (check != null && !c.pointToPoint) {
            check.agree(c.operation, count, type, redOp, root, stream);
        }
        int t = type.code();
        long s = stream.handle();
        int status;
        long traced;
        long bytes = c.bytes(count, type, size);
        // then the open check: a teardown either sees this call or this call sees it; the call is over once the
        // ledger has it, so that a close() on another thread reads this rank's true last collective
        health.enterIfOpen();
        try {
            status = switch (c) {
                case ALL_REDUCE -> NcclNative.ncclAllReduce(send, recv, count, t, redOp, handle, s);
                case BROADCAST -> NcclNative.ncclBroadcast(send, recv, count, t, root, handle, s);
                case REDUCE -> NcclNative.ncclReduce(send, recv, count, t, redOp, root, handle, s);
                case ALL_GATHER -> NcclNative.ncclAllGather(send, recv, count, t, handle, s);
                case REDUCE_SCATTER -> NcclNative.ncclReduceScatter(send, recv, count, t, redOp, handle, s);
                case ALL_TO_ALL -> nativeAlltoAll ? NcclNative.ncclAlltoAll(send, recv, count, t, handle, s)
                        : ComposedCollectives.alltoAll(health, send, recv, count, type, s);
                case GATHER -> nativeGather ? NcclNative.ncclGather(send, recv, count, t, root, handle, s)
                        : ComposedCollectives.gather(health, send, recv, count, type, root, s);
                case SCATTER -> nativeScatter ? NcclNative.ncclScatter(send, recv, count, t, root, handle, s)
                        : ComposedCollectives.scatter(health, send, recv, count, type, root, s);
                case SEND -> NcclNative.ncclSend(send, count, t, root, handle, s);
                case RECV -> NcclNative.ncclRecv(recv, count, t, root, handle, s);
            };
            traced = enqueued(status, c.function, c.operation, count, type, redOp, root, bytes, stream);
            if (c.pointToPoint || !fingerprinted) {
                health.ledger.sawIssuer();
            } else {
                health.ledger.issued(c.operation.code(), count, t, redOp, root, traced);
            }
        } finally {
            health.leaveCall();
        }
        health.hooks().enqueued(health.sequence, c.function, bytes, s);
    }

    /**
     * After NCCL took an operation: checks its status, records it in the flight recorder and publishes it to the
     * watchdog. Allocates nothing; a handful of array stores and two release stores besides the recorder's.
     */
    private long enqueued(int status, NcclFunction fn, TraceOperation operation, long count, DataType type,
            int reduceOp, int peer, long bytes, Stream stream) {
        if (status != 0) {
            explained(status, fn);
            Errors.checkEnqueued(status, fn, health);
        }
        ++health.sequence;
        return health.record(operation, count, type, reduceOp, peer, bytes, stream);
    }

    /**
     * NCCL's failure of a call on a communicator the watchdog has found broken (a peer departed or lost: NCCL's own
     * error, e.g. {@code ncclInternalError} from a connection to the dead peer, comes later and says less) is thrown
     * as that failure, NCCL's exception suppressed in it; nothing when the status is success or "enqueued", or no
     * failure is known.
     */
    private void explained(int status, NcclFunction fn) {
        CommunicatorFailedException known = health.failure;
        if (known != null && Errors.enqueueFailed(status, health)) {
            CommunicatorFailedException thrown = known.toProgram();
            thrown.addSuppressed(Errors.failure(status, fn, health));
            throw thrown;
        }
    }

    private void checkOp(ReduceOp op, DataType type) {
        if (op == null) {
            throw Errors.nullArgument("op");
        }
        op.checkUsable(health, type);
    }

    /** The checks of every form: open, the type, the stream, and the root or peer of an operation that has one. */
    private void checkCommon(Collective c, DataType type, int root, Stream stream) {
        if (health.refusing) {
            throw health.closedError();
        }
        Arguments.type(library, type);
        Arguments.stream(health, stream);
        if (c.rooted) {
            Arguments.rank(health, root, c.rootName);
        }
    }
}
