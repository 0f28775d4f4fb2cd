package org.nccl4j.trace;

import org.nccl4j.jni.NcclFunction;

/**
 * The operations a {@link FlightRecorder} records, with stable codes: {@link FlightRecorder#record} takes the
 * {@link #code()}, a dump names the operation by its constant's name ({@code "allReduce"}), never by its code.
 *
 * <p>The constants are named as a dump writes them, after NCCL's functions without the {@code nccl} prefix (as
 * {@link NcclFunction} is named after NCCL's functions). Codes are never reused or reordered; a new operation
 * gets the next code.
 */
public enum TraceOperation {
    /** {@code ncclAllReduce}: count, type and operator must agree on every rank. */
    allReduce(0),
    /** {@code ncclBroadcast}: rooted (the peer field holds the root). */
    broadcast(1),
    /** {@code ncclReduce}: rooted (the peer field holds the root). */
    reduce(2),
    /** {@code ncclAllGather}: count is per rank and must agree. */
    allGather(3),
    /** {@code ncclReduceScatter}: count is per rank and must agree. */
    reduceScatter(4),
    /** {@code ncclAlltoAll} (or nccl4j's composition of sends and receives): count is per peer and must agree. */
    alltoAll(5),
    /** {@code ncclGather}: rooted (the peer field holds the root). */
    gather(6),
    /** {@code ncclScatter}: rooted (the peer field holds the root). */
    scatter(7),
    /** {@code ncclSend}: point to point (the peer field holds the receiving rank). */
    send(8),
    /** {@code ncclRecv}: point to point (the peer field holds the sending rank). */
    recv(9),
    /** A group ({@code ncclGroupStart} to {@code ncclGroupEnd}) recorded as one entry, fields as the caller gives. */
    group(10),
    /** A launch of a CUDA graph that holds this communicator's operations ({@code cudaGraphLaunch}): count is the
     *  number of the communicator's operations captured in the graph. */
    graphLaunch(11);

    private static final TraceOperation[] BY_CODE = values();

    private final int code;

    TraceOperation(int code) {
        this.code = code;
    }

    /**
     * The stable code that {@link FlightRecorder#record} takes for this operation.
     *
     * @return the code, 0 for {@link #allReduce} up to 11 for {@link #graphLaunch}
     */
    public int code() {
        return code;
    }

    /**
     * Whether the peer field of this operation holds the root rank: broadcast, reduce, gather, scatter.
     *
     * @return true for the rooted collectives
     */
    public boolean rooted() {
        return this == broadcast || this == reduce || this == gather || this == scatter;
    }

    /**
     * Whether this is a point-to-point operation, whose peer field holds the other rank and legitimately differs
     * from rank to rank: send, recv.
     *
     * @return true for send and recv
     */
    public boolean pointToPoint() {
        return this == send || this == recv;
    }

    /**
     * Whether this operation takes a reduction operator: allReduce, reduce, reduceScatter.
     *
     * @return true for the reducing collectives
     */
    public boolean reduces() {
        return this == allReduce || this == reduce || this == reduceScatter;
    }

    /**
     * The operation with a code.
     *
     * @param code a code from {@link #code()}
     * @return the operation
     * @throws IllegalArgumentException when no operation has that code
     */
    public static TraceOperation fromCode(int code) {
        if (code < 0 || code >= BY_CODE.length) {
            throw new IllegalArgumentException("trace operation code " + code + " is not one of 0.."
                    + (BY_CODE.length - 1));
        }
        return BY_CODE[code];
    }

    /**
     * The operation that records a call of an NCCL function, for a communicator that reports what it enqueues
     * as {@link NcclFunction}s.
     *
     * @param function an NCCL function
     * @return the operation ({@code ncclAllReduce} gives {@link #allReduce}, and so on; {@code ncclGroupEnd} gives
     *         {@link #group})
     * @throws IllegalArgumentException for a function that is not a collective, a send, a receive or the end of a
     *         group
     */
    public static TraceOperation of(NcclFunction function) {
        switch (function) {
            case ncclAllReduce:
                return allReduce;
            case ncclBroadcast:
                return broadcast;
            case ncclReduce:
                return reduce;
            case ncclAllGather:
                return allGather;
            case ncclReduceScatter:
                return reduceScatter;
            case ncclAlltoAll:
                return alltoAll;
            case ncclGather:
                return gather;
            case ncclScatter:
                return scatter;
            case ncclSend:
                return send;
            case ncclRecv:
                return recv;
            case ncclGroupEnd:
                return group;
            default:
                throw new IllegalArgumentException(function + " is not an operation the flight recorder records");
        }
    }

    /**
     * The operation a dump names.
     *
     * @param name a constant's name, e.g. {@code "allReduce"}
     * @return the operation, or null when no operation has that name
     */
    static TraceOperation byName(String name) {
        for (TraceOperation o : BY_CODE) {
            if (o.name().equals(name)) {
                return o;
            }
        }
        return null;
    }
}
