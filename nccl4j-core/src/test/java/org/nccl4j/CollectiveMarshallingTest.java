package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What the idiomatic API passes to NCCL for each collective, as the full stub recorded it: buffers' addresses
 * (with the in-place offsets of rank x count x element size), counts derived from the buffers, the
 * {@code ncclDataType_t} and {@code ncclRedOp_t} codes, root or peer, the communicator and the stream. Each
 * assertion compares the whole record of the call, so a missing or extra argument fails too.
 *
 * <p>The communicator is rank 1 of 4, so that in-place offsets are not zero.
 */
class CollectiveMarshallingTest extends StubFixture {
    static final int RANK = 1;
    static final int SIZE = 4;
    static final long N = 8;
    static final long SEND = 0x7f00_1234_5600L;
    static final long RECV = 0x7f00_8765_4300L;
    static final long BIG = 0x1_0000_0003L; // a count above 2^32

    private Communicator comm;
    private Stream stream;
    private String c;
    private String s;

    @BeforeEach
    void makeCommunicatorAndStream() {
        comm = comm(RANK, SIZE);
        stream = stream(0);
        c = hex(comm.handle());
        s = hex(stream.handle());
        mark();
    }

    private DeviceBuffer buf(long count, DataType type) {
        DeviceBuffer b = buffer(0, count, type);
        mark();
        return b;
    }

    /** The record the stub makes of a collective: sendbuff, recvbuff, count, datatype, then the rest. */
    private Map<String, String> coll(long send, long recv, long count, DataType type, Object... rest) {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("sendbuff", hex(send));
        m.put("recvbuff", hex(recv));
        m.put("count", Long.toString(count));
        m.put("datatype", Integer.toString(type.code()));
        for (int i = 0; i < rest.length; i += 2) {
            m.put((String) rest[i], String.valueOf(rest[i + 1]));
        }
        m.put("comm", c);
        m.put("stream", s);
        return m;
    }

    private Map<String, String> p2p(String bufKey, long buf, long count, DataType type, int peer) {
        Map<String, String> m = new LinkedHashMap<>();
        m.put(bufKey, hex(buf));
        m.put("count", Long.toString(count));
        m.put("datatype", Integer.toString(type.code()));
        m.put("peer", Integer.toString(peer));
        m.put("comm", c);
        m.put("stream", s);
        return m;
    }

    // ---------------------------------------------------------------- all-reduce

    @Test
    void allReduceOutOfPlaceTakesTheCountFromSend() {
        DeviceBuffer send = buf(N, DataType.FLOAT32);
        DeviceBuffer recv = buf(N + 4, DataType.FLOAT32); // larger than needed: the count is send's
        mark();
        comm.allReduce(send, recv, DataType.FLOAT32, ReduceOp.MAX, stream);
        assertEquals(coll(send.address(), recv.address(), N, DataType.FLOAT32, "op", 2), only("ncclAllReduce"));
    }

    @Test
    void allReduceInPlacePassesOneAddressTwice() {
        DeviceBuffer b = buf(5, DataType.FLOAT64);
        comm.allReduce(b, DataType.FLOAT64, ReduceOp.PROD, stream);
        assertEquals(coll(b.address(), b.address(), 5, DataType.FLOAT64, "op", 1), only("ncclAllReduce"));
    }

    @Test
    void allReduceRawPassesItsArguments() {
        comm.allReduce(SEND, RECV, BIG, DataType.BFLOAT16, ReduceOp.AVG, stream);
        assertEquals(coll(SEND, RECV, BIG, DataType.BFLOAT16, "op", 4), only("ncclAllReduce"));
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void everyDataTypeReachesNcclAsItsCode(DataType t) {
        DeviceBuffer b = buf(6, t);
        comm.allReduce(b, t, ReduceOp.MIN, stream);
        assertEquals(coll(b.address(), b.address(), 6, t, "op", 3), only("ncclAllReduce"));
    }

    @Test
    void everyBuiltInOperatorReachesNcclAsItsCode() {
        ReduceOp[] ops = ReduceOp.builtIn();
        assertEquals(List.of("SUM", "PROD", "MAX", "MIN", "AVG"), List.of(ops).stream().map(ReduceOp::toString).toList());
        for (int i = 0; i < ops.length; i++) {
            assertEquals(i, ops[i].code());
            mark();
            comm.allReduce(SEND, SEND, 1, DataType.INT32, ops[i], stream);
            assertEquals(Integer.toString(i), only("ncclAllReduce").get("op"));
        }
        ops[0] = null;
        assertEquals(ReduceOp.SUM, ReduceOp.builtIn()[0], "builtIn() returns a copy");
    }

    // ---------------------------------------------------------------- broadcast

    @Test
    void broadcastTakesTheCountFromRecv() {
        DeviceBuffer send = buf(N + 3, DataType.INT32);
        DeviceBuffer recv = buf(N, DataType.INT32);
        comm.broadcast(send, recv, DataType.INT32, RANK, stream);
        assertEquals(coll(send.address(), recv.address(), N, DataType.INT32, "root", RANK), only("ncclBroadcast"));
    }

    @Test
    void broadcastOffTheRootMayOmitSend() {
        DeviceBuffer recv = buf(N, DataType.INT32);
        comm.broadcast(null, recv, DataType.INT32, 3, stream);
        assertEquals(coll(0, recv.address(), N, DataType.INT32, "root", 3), only("ncclBroadcast"));
    }

    @Test
    void broadcastInPlaceAndRaw() {
        DeviceBuffer b = buf(13, DataType.INT8);
        comm.broadcast(b, DataType.INT8, 0, stream);
        assertEquals(coll(b.address(), b.address(), 13, DataType.INT8, "root", 0), only("ncclBroadcast"));
        mark();
        comm.broadcast(0, RECV, BIG, DataType.UINT8, 2, stream); // send is not read off the root
        assertEquals(coll(0, RECV, BIG, DataType.UINT8, "root", 2), only("ncclBroadcast"));
        mark();
        comm.broadcast(SEND, RECV, 0, DataType.UINT8, RANK, stream);
        assertEquals(coll(SEND, RECV, 0, DataType.UINT8, "root", RANK), only("ncclBroadcast"));
    }

    // ---------------------------------------------------------------- reduce

    @Test
    void reduceTakesTheCountFromSend() {
        DeviceBuffer send = buf(N, DataType.UINT32);
        DeviceBuffer recv = buf(N * 2, DataType.UINT32);
        comm.reduce(send, recv, DataType.UINT32, ReduceOp.SUM, RANK, stream);
        assertEquals(coll(send.address(), recv.address(), N, DataType.UINT32, "op", 0, "root", RANK),
                only("ncclReduce"));
    }

    @Test
    void reduceOffTheRootMayOmitRecv() {
        DeviceBuffer send = buf(N, DataType.UINT32);
        comm.reduce(send, null, DataType.UINT32, ReduceOp.MAX, 0, stream);
        assertEquals(coll(send.address(), 0, N, DataType.UINT32, "op", 2, "root", 0), only("ncclReduce"));
    }

    @Test
    void reduceInPlaceAndRaw() {
        DeviceBuffer b = buf(3, DataType.INT64);
        comm.reduce(b, DataType.INT64, ReduceOp.MIN, 3, stream);
        assertEquals(coll(b.address(), b.address(), 3, DataType.INT64, "op", 3, "root", 3), only("ncclReduce"));
        mark();
        comm.reduce(SEND, 0, BIG, DataType.UINT64, ReduceOp.PROD, 2, stream);
        assertEquals(coll(SEND, 0, BIG, DataType.UINT64, "op", 1, "root", 2), only("ncclReduce"));
    }

    // ---------------------------------------------------------------- all-gather

    @Test
    void allGatherTakesTheCountFromSend() {
        DeviceBuffer send = buf(N, DataType.FLOAT32);
        DeviceBuffer recv = buf(SIZE * N + 1, DataType.FLOAT32);
        comm.allGather(send, recv, DataType.FLOAT32, stream);
        assertEquals(coll(send.address(), recv.address(), N, DataType.FLOAT32), only("ncclAllGather"));
    }

    @Test
    void allGatherInPlaceSendsThisRanksBlock() {
        DeviceBuffer b = buf(SIZE * N, DataType.FLOAT16);
        comm.allGather(b, DataType.FLOAT16, stream);
        // send = base + rank * count * 2 bytes
        assertEquals(coll(b.address() + RANK * N * 2, b.address(), N, DataType.FLOAT16), only("ncclAllGather"));
        assertEquals(b.address() + 16, b.address() + RANK * N * 2);
    }

    @Test
    void allGatherRaw() {
        comm.allGather(SEND, RECV, BIG, DataType.FLOAT8_E5M2, stream);
        assertEquals(coll(SEND, RECV, BIG, DataType.FLOAT8_E5M2), only("ncclAllGather"));
    }

    // ---------------------------------------------------------------- reduce-scatter

    @Test
    void reduceScatterTakesTheCountFromRecv() {
        DeviceBuffer send = buf(SIZE * N, DataType.FLOAT32);
        DeviceBuffer recv = buf(N, DataType.FLOAT32);
        comm.reduceScatter(send, recv, DataType.FLOAT32, ReduceOp.SUM, stream);
        assertEquals(coll(send.address(), recv.address(), N, DataType.FLOAT32, "op", 0), only("ncclReduceScatter"));
    }

    @Test
    void reduceScatterInPlaceReceivesIntoThisRanksBlock() {
        DeviceBuffer b = buf(SIZE * N, DataType.INT64);
        comm.reduceScatter(b, DataType.INT64, ReduceOp.MAX, stream);
        // recv = base + rank * count * 8 bytes
        assertEquals(coll(b.address(), b.address() + RANK * N * 8, N, DataType.INT64, "op", 2),
                only("ncclReduceScatter"));
    }

    @Test
    void reduceScatterRaw() {
        comm.reduceScatter(SEND, RECV, 7, DataType.FLOAT64, ReduceOp.AVG, stream);
        assertEquals(coll(SEND, RECV, 7, DataType.FLOAT64, "op", 4), only("ncclReduceScatter"));
    }

    // ---------------------------------------------------------------- all-to-all, gather, scatter (native on 2.28)

    @Test
    void alltoAllTakesTheBlockFromSend() {
        DeviceBuffer send = buf(SIZE * N, DataType.INT32);
        DeviceBuffer recv = buf(SIZE * N, DataType.INT32);
        comm.alltoAll(send, recv, DataType.INT32, stream);
        assertEquals(coll(send.address(), recv.address(), N, DataType.INT32), only("ncclAlltoAll"));
        assertEquals(List.of("ncclAlltoAll"), newCallNames(), "NCCL's own all-to-all, no send/recv");
        mark();
        comm.alltoAll(SEND, RECV, BIG, DataType.INT8, stream);
        assertEquals(coll(SEND, RECV, BIG, DataType.INT8), only("ncclAlltoAll"));
    }

    @Test
    void gatherOnAndOffTheRoot() {
        DeviceBuffer send = buf(N, DataType.FLOAT32);
        DeviceBuffer recv = buf(SIZE * N, DataType.FLOAT32);
        comm.gather(send, recv, DataType.FLOAT32, RANK, stream);
        assertEquals(coll(send.address(), recv.address(), N, DataType.FLOAT32, "root", RANK), only("ncclGather"));
        mark();
        comm.gather(send, null, DataType.FLOAT32, 0, stream);
        assertEquals(coll(send.address(), 0, N, DataType.FLOAT32, "root", 0), only("ncclGather"));
        mark();
        comm.gather(SEND, 0, BIG, DataType.FLOAT32, 3, stream);
        assertEquals(coll(SEND, 0, BIG, DataType.FLOAT32, "root", 3), only("ncclGather"));
        assertEquals(List.of("ncclGather"), newCallNames());
    }

    @Test
    void gatherInPlaceSendsThisRanksBlock() {
        DeviceBuffer b = buf(SIZE * N, DataType.FLOAT32);
        comm.gather(b, DataType.FLOAT32, 2, stream);
        assertEquals(coll(b.address() + RANK * N * 4, b.address(), N, DataType.FLOAT32, "root", 2), only("ncclGather"));
    }

    @Test
    void scatterOnAndOffTheRoot() {
        DeviceBuffer send = buf(SIZE * N, DataType.UINT8);
        DeviceBuffer recv = buf(N, DataType.UINT8);
        comm.scatter(send, recv, DataType.UINT8, RANK, stream);
        assertEquals(coll(send.address(), recv.address(), N, DataType.UINT8, "root", RANK), only("ncclScatter"));
        mark();
        comm.scatter(null, recv, DataType.UINT8, 3, stream);
        assertEquals(coll(0, recv.address(), N, DataType.UINT8, "root", 3), only("ncclScatter"));
        mark();
        comm.scatter(0, RECV, BIG, DataType.UINT8, 0, stream);
        assertEquals(coll(0, RECV, BIG, DataType.UINT8, "root", 0), only("ncclScatter"));
        assertEquals(List.of("ncclScatter"), newCallNames());
    }

    @Test
    void scatterInPlaceReceivesIntoThisRanksBlock() {
        DeviceBuffer b = buf(SIZE * N, DataType.BFLOAT16);
        comm.scatter(b, DataType.BFLOAT16, 0, stream);
        assertEquals(coll(b.address(), b.address() + RANK * N * 2, N, DataType.BFLOAT16, "root", 0), only("ncclScatter"));
    }

    // ---------------------------------------------------------------- point-to-point

    @Test
    void sendAndRecvTakeTheCountFromTheBuffer() {
        DeviceBuffer b = buf(11, DataType.FLOAT64);
        comm.send(b, DataType.FLOAT64, 3, stream);
        assertEquals(p2p("sendbuff", b.address(), 11, DataType.FLOAT64, 3), only("ncclSend"));
        comm.recv(b, DataType.FLOAT64, 0, stream);
        assertEquals(p2p("recvbuff", b.address(), 11, DataType.FLOAT64, 0), only("ncclRecv"));
        mark();
        comm.send(SEND, BIG, DataType.INT8, 2, stream);
        assertEquals(p2p("sendbuff", SEND, BIG, DataType.INT8, 2), only("ncclSend"));
        comm.recv(RECV, 0, DataType.INT8, 1, stream);
        assertEquals(p2p("recvbuff", RECV, 0, DataType.INT8, 1), only("ncclRecv"));
    }

    @Test
    void aSliceIsPassedAtItsOffset() {
        DeviceBuffer b = buf(SIZE * N, DataType.FLOAT32);
        DeviceBuffer part = b.slice(12, 20); // 5 floats, 12 bytes in
        comm.allReduce(part, DataType.FLOAT32, ReduceOp.SUM, stream);
        assertEquals(coll(b.address() + 12, b.address() + 12, 5, DataType.FLOAT32, "op", 0), only("ncclAllReduce"));
    }

    @Test
    void aWrappedStreamAndTheDefaultStreamArePassedAsTheirHandles() {
        DeviceBuffer b = buf(N, DataType.FLOAT32);
        Stream wrapped = Stream.wrap(0x7f55_aa00_0010L, 0);
        comm.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, wrapped);
        assertEquals("0x7f55aa000010", only("ncclAllReduce").get("stream"));
        mark();
        comm.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, Stream.defaultStream(0));
        assertEquals("0x0", only("ncclAllReduce").get("stream"));
    }

    @Test
    void operationsAreCounted() {
        assertEquals(0, comm.operationsEnqueued());
        for (int i = 1; i <= 5; i++) {
            comm.send(SEND, 1, DataType.INT8, 0, stream);
            assertEquals(i, comm.operationsEnqueued());
        }
    }
}
