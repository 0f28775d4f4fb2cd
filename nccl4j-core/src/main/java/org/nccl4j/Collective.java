package org.nccl4j;

import org.nccl4j.jni.NcclFunction;
import org.nccl4j.trace.TraceOperation;

/**
 * What {@link Communicator}'s one path of a collective needs to know of each operation: its NCCL function and
 * recorder name, whether it reduces, whether it has a root (or a peer), and how its two buffers relate to its count.
 * The public overloads of Communicator name an operation and hand their arguments on; the checks, the recording and
 * the dispatch read these facts instead of repeating them per overload.
 *
 * <pre>
 * operation       count from  send holds      recv holds      at the root only
 * allReduce       send        count           count
 * broadcast       recv        count           count           send
 * reduce          send        count           count           recv
 * allGather       send        count           count x size
 * reduceScatter   recv        count x size    count
 * alltoAll        send        count x size    count x size
 * gather          send        count           count x size    recv
 * scatter         recv        count x size    count           send
 * send, recv      buffer      count (to or from one peer)
 * </pre>
 */
enum Collective {
    ALL_REDUCE(NcclFunction.ncclAllReduce, TraceOperation.allReduce, Collective.REDUCES),
    BROADCAST(NcclFunction.ncclBroadcast, TraceOperation.broadcast,
            Collective.ROOTED | Collective.COUNT_FROM_RECV | Collective.SEND_AT_ROOT),
    REDUCE(NcclFunction.ncclReduce, TraceOperation.reduce,
            Collective.REDUCES | Collective.ROOTED | Collective.RECV_AT_ROOT),
    ALL_GATHER(NcclFunction.ncclAllGather, TraceOperation.allGather, Collective.RECV_PER_RANK),
    REDUCE_SCATTER(NcclFunction.ncclReduceScatter, TraceOperation.reduceScatter,
            Collective.REDUCES | Collective.COUNT_FROM_RECV | Collective.SEND_PER_RANK),
    ALL_TO_ALL(NcclFunction.ncclAlltoAll, TraceOperation.alltoAll, Collective.SEND_PER_RANK | Collective.RECV_PER_RANK),
    GATHER(NcclFunction.ncclGather, TraceOperation.gather,
            Collective.ROOTED | Collective.RECV_PER_RANK | Collective.RECV_AT_ROOT),
    SCATTER(NcclFunction.ncclScatter, TraceOperation.scatter,
            Collective.ROOTED | Collective.COUNT_FROM_RECV | Collective.SEND_PER_RANK | Collective.SEND_AT_ROOT),
    SEND(NcclFunction.ncclSend, TraceOperation.send, Collective.PEER),
    RECV(NcclFunction.ncclRecv, TraceOperation.recv, Collective.PEER);

    private static final int REDUCES = 1;
    private static final int ROOTED = 2;
    private static final int PEER = 4;
    private static final int COUNT_FROM_RECV = 8;
    private static final int SEND_PER_RANK = 16;
    private static final int RECV_PER_RANK = 32;
    private static final int SEND_AT_ROOT = 64;
    private static final int RECV_AT_ROOT = 128;

    /** The NCCL function, for errors and observers. */
    final NcclFunction function;
    /** The flight recorder's name of it. */
    final TraceOperation operation;
    /** Takes a reduction operator. */
    final boolean reduces;
    /** Takes a root rank ({@code "root"}) or, for send and recv, a peer ({@code "peer"}). */
    final boolean rooted;
    /** Point-to-point: one buffer, one peer, no collective check. */
    final boolean pointToPoint;
    /** The count is {@code recv}'s length (else {@code send}'s). */
    final boolean countFromRecv;
    /** {@code send} holds one block of count elements per rank. */
    final boolean sendPerRank;
    /** {@code recv} holds one block of count elements per rank. */
    final boolean recvPerRank;
    /** {@code send} is read at the root only (it may be null elsewhere). */
    final boolean sendAtRoot;
    /** {@code recv} is written at the root only (it may be null elsewhere). */
    final boolean recvAtRoot;
    /** The name of the root argument in messages. */
    final String rootName;

    Collective(NcclFunction function, TraceOperation operation, int flags) {
        this.function = function;
        this.operation = operation;
        this.reduces = (flags & REDUCES) != 0;
        this.pointToPoint = (flags & PEER) != 0;
        this.rooted = (flags & (ROOTED | PEER)) != 0;
        this.countFromRecv = (flags & COUNT_FROM_RECV) != 0;
        this.sendPerRank = (flags & SEND_PER_RANK) != 0;
        this.recvPerRank = (flags & RECV_PER_RANK) != 0;
        this.sendAtRoot = (flags & SEND_AT_ROOT) != 0;
        this.recvAtRoot = (flags & RECV_AT_ROOT) != 0;
        this.rootName = pointToPoint ? "peer" : "root";
    }

    /**
     * The bytes this rank sends or reduces, as the recorder and observers count them: a block per rank for
     * reduce-scatter and all-to-all, one block otherwise (a scatter's root counts one, as every rank does).
     */
    long bytes(long count, DataType type, int size) {
        long block = count * type.size();
        return sendPerRank && !sendAtRoot ? block * size : block;
    }
}
