package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.nccl4j.jni.NcclNative;

/**
 * Communicators, operators, groups, ids and registrations through the idiomatic API, against the full stub:
 * what reaches NCCL (the stub's record) and what comes back (ranks, sizes, devices, handles, estimates).
 */
class CommunicatorLifecycleTest extends StubFixture {
    static final String UNDEF = Integer.toString(NcclNative.CONFIG_UNDEF_INT);

    // ---------------------------------------------------------------- creation

    @Test
    void createWithoutConfigCallsInitRankAndQueriesTheStub() {
        mark();
        Communicator c = comm(2, 5);
        Map<String, String> init = only("ncclCommInitRank");
        assertEquals("5", init.get("nranks"));
        assertEquals("2", init.get("rank"));
        assertEquals(HexFormat.of().formatHex(testId().toBytes()), init.get("id"));
        String h = hex(c.handle());
        assertEquals(Map.of("comm", h), only("ncclCommUserRank"));
        assertEquals(Map.of("comm", h), only("ncclCommCount"));
        assertEquals(Map.of("comm", h), only("ncclCommCuDevice"));
        assertEquals(List.of(), stub.calls("ncclCommInitRankConfig"));
        assertEquals(2, c.rank());
        assertEquals(5, c.size());
        assertEquals(0, c.device());
        assertTrue(c.isBlocking());
        assertFalse(c.isClosed());
        assertEquals("Communicator[rank 2 of 5, device 0]", c.toString());
        assertEquals(List.of("setDevice device=0"), cuda.calls("setDevice"), "cudaSetDevice(device) first");
        assertTrue(Nccl.isInitialized());
    }

    @Test
    void createWithAGeneratedId() {
        UniqueId id = UniqueId.generate();
        mark();
        Communicator c = later(Communicator.create(0, 2, id, 0));
        assertEquals(HexFormat.of().formatHex(id.toBytes()), only("ncclCommInitRank").get("id"));
        assertEquals(0, c.rank());
    }

    @Test
    void createWithConfigPassesEveryField() {
        CommConfig cfg = CommConfig.builder().blocking(false).cgaClusterSize(2).minCTAs(4).maxCTAs(16)
                .netName("Socket").splitShare(true).trafficClass(5).commName("trainer").collnetEnable(false)
                .ctaPolicy(1).shrinkShare(true).nvlsCTAs(8).raw(NcclNative.CFG_N_CHANNELS_PER_NET_PEER, 3)
                .raw(NcclNative.CFG_NVLINK_CENTRIC_SCHED, 1).build();
        mark();
        Communicator c = later(Communicator.create(1, 3, testId(), 0, cfg));
        Map<String, String> r = only("ncclCommInitRankConfig");
        assertEquals("3", r.get("nranks"));
        assertEquals("1", r.get("rank"));
        assertEquals("0xcafebeef", r.get("config.magic"));
        Map<String, String> expected = Map.ofEntries(Map.entry("blocking", "0"), Map.entry("cgaClusterSize", "2"),
                Map.entry("minCTAs", "4"), Map.entry("maxCTAs", "16"), Map.entry("netName", "Socket"),
                Map.entry("splitShare", "1"), Map.entry("trafficClass", "5"), Map.entry("commName", "trainer"),
                Map.entry("collnetEnable", "0"), Map.entry("CTAPolicy", "1"), Map.entry("shrinkShare", "1"),
                Map.entry("nvlsCTAs", "8"), Map.entry("nChannelsPerNetPeer", "3"),
                Map.entry("nvlinkCentricSched", "1"), Map.entry("graphUsageMode", UNDEF),
                Map.entry("numRmaCtx", UNDEF), Map.entry("maxP2pPeers", UNDEF),
                Map.entry("graphStreamOrdering", UNDEF));
        expected.forEach((k, v) -> assertEquals(v, r.get(k), "config field " + k));
        assertEquals("96", r.get("config.size"));
        assertEquals("23007", r.get("config.version"));
        assertEquals(List.of(), stub.calls("ncclCommInitRank"));
        assertFalse(c.isBlocking());
        assertEquals(1, c.rank());
        assertEquals(3, c.size());
    }

    @Test
    void createWithTheDefaultConfigLeavesEveryFieldUnset() {
        mark();
        Communicator c = later(Communicator.create(0, 1, testId(), 0, CommConfig.DEFAULT));
        Map<String, String> r = only("ncclCommInitRankConfig");
        for (String k : List.of("blocking", "cgaClusterSize", "minCTAs", "maxCTAs", "splitShare", "trafficClass",
                "collnetEnable", "CTAPolicy", "shrinkShare", "nvlsCTAs", "nChannelsPerNetPeer", "nvlinkCentricSched",
                "graphUsageMode", "numRmaCtx", "maxP2pPeers", "graphStreamOrdering")) {
            assertEquals(UNDEF, r.get(k), k);
        }
        assertEquals("(null)", r.get("netName"));
        assertEquals("(null)", r.get("commName"));
        assertTrue(c.isBlocking(), "an unset blocking field means NCCL's default, blocking");
    }

    /**
     * The stub reports NCCL 2.28.3, whose ncclConfig_t ends at nvlinkCentricSched: a field added later would be
     * silently ignored by it, so the communicator is not made. (Each field's first release: CommConfig.)
     */
    @ParameterizedTest(name = "{0} needs {2}")
    @CsvSource({"12, graphUsageMode, 2.29.2", "13, numRmaCtx, 2.29.2", "14, maxP2pPeers, 2.30.3",
        "15, graphStreamOrdering, 2.30.7"})
    void aFieldNewerThanTheLoadedNcclIsRefusedBeforeNccl(int index, String field, String since) {
        assertEquals(field, CommConfigTest.FIELDS[index]);
        CommConfig cfg = CommConfig.builder().minCTAs(2).raw(index, 1).build();
        mark();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> later(Communicator.create(0, 1, testId(), 0, cfg)));
        assertEquals("CommConfig field " + field + " needs NCCL " + since + " or newer, but the loaded NCCL is 2.28.3 ("
                + Nccl.library().path() + "), whose ncclConfig_t has no " + field + " and would silently ignore it. "
                + "Leave " + field + " unset, or load a newer NCCL.", e.getMessage());
        assertEquals(List.of(), newCalls(), "nothing reached NCCL");

        Communicator parent = comm(0, 1);
        mark();
        e = assertThrows(IllegalArgumentException.class, () -> later(parent.split(0, 0, cfg)));
        assertTrue(e.getMessage().startsWith("CommConfig field " + field + " needs NCCL " + since + " "), e.getMessage());
        assertEquals(List.of(), newCalls(), "nothing reached NCCL");
    }

    @Test
    void aNewerFieldLeftUnsetOrUndefIsNotRefused() {
        // CONFIG_UNDEF_INT is "unset": NCCL's default, which an older NCCL gives too
        CommConfig cfg = CommConfig.builder().raw(NcclNative.CFG_GRAPH_STREAM_ORDERING, NcclNative.CONFIG_UNDEF_INT)
                .raw(NcclNative.CFG_NVLINK_CENTRIC_SCHED, 0).build();
        mark();
        later(Communicator.create(0, 1, testId(), 0, cfg));
        assertEquals(UNDEF, only("ncclCommInitRankConfig").get("graphStreamOrdering"));
    }

    @Test
    void initAllMakesOneCommunicatorPerDeviceInRankOrder() {
        mark();
        List<Communicator> comms = Communicator.initAll(2, 0, 3);
        comms.forEach(this::later);
        assertEquals(Map.of("ndev", "3", "devlist", "2,0,3"), only("ncclCommInitAll"));
        int[] devices = {2, 0, 3};
        for (int i = 0; i < 3; i++) {
            assertEquals(i, comms.get(i).rank());
            assertEquals(3, comms.get(i).size());
            assertEquals(devices[i], comms.get(i).device());
            assertTrue(comms.get(i).isBlocking());
        }
        assertThrows(UnsupportedOperationException.class, () -> comms.add(null), "the list is unmodifiable");
        assertEquals(3, comms.stream().mapToLong(Communicator::handle).distinct().count());
    }

    @Test
    void splitPassesColorKeyAndConfigAndReturnsTheChild() {
        List<Communicator> all = Communicator.initAll(0, 2);
        all.forEach(this::later);
        Communicator parent = all.get(1); // on device 2
        mark();
        Communicator child = later(parent.split(5, 9));
        assertEquals(Map.of("comm", hex(parent.handle()), "color", "5", "key", "9", "config", "null"),
                only("ncclCommSplit"));
        assertEquals(0, child.rank());
        assertEquals(1, child.size());
        assertEquals(2, child.device(), "the stub's child is on the parent's device");
        assertTrue(child.isBlocking(), "inherits the parent's blocking");
        assertNotEquals(parent.handle(), child.handle());

        mark();
        Communicator nb = later(parent.split(0, 1, CommConfig.builder().blocking(false).commName("child").build()));
        Map<String, String> r = only("ncclCommSplit");
        assertEquals("0", r.get("blocking"));
        assertEquals("child", r.get("commName"));
        assertFalse(nb.isBlocking());
    }

    @Test
    void splitWithNoColorReturnsNull() {
        Communicator c = comm(0, 2);
        mark();
        assertNull(c.split(Communicator.NO_COLOR, 3));
        assertEquals("-1", only("ncclCommSplit").get("color"));
        assertEquals(-1, Communicator.NO_COLOR);
    }

    // ---------------------------------------------------------------- teardown

    @Test
    void closeFinalizesThenDestroysOnce() {
        Communicator c = Communicator.create(0, 2, testId(), 0);
        String h = hex(c.handle());
        mark();
        c.close();
        assertEquals(List.of("ncclCommFinalize comm=" + h, "ncclCommDestroy comm=" + h), newCalls());
        assertTrue(c.isClosed());
        c.close();
        c.abort();
        assertEquals(2, newCalls().size(), "close and abort after close reach nothing");
    }

    @Test
    void closeWaitsOutAnInProgressFinalize() {
        Communicator c = Communicator.create(0, 2, testId(), 0);
        String h = hex(c.handle());
        stub.result(org.nccl4j.jni.NcclFunction.ncclCommFinalize, 7);
        mark();
        c.close();
        assertEquals(List.of("ncclCommFinalize comm=" + h, "ncclCommGetAsyncError comm=" + h,
                "ncclCommDestroy comm=" + h), newCalls());
    }

    @Test
    void abortAbortsOnce() {
        Communicator c = Communicator.create(0, 2, testId(), 0);
        String h = hex(c.handle());
        mark();
        c.abort();
        c.abort();
        c.close();
        assertEquals(List.of("ncclCommAbort comm=" + h), newCalls());
        assertTrue(c.isClosed());
    }

    @Test
    void closeReportsAFailedDestroyAndStaysClosed() {
        Communicator c = Communicator.create(0, 2, testId(), 0);
        stub.result(org.nccl4j.jni.NcclFunction.ncclCommDestroy, 3);
        NcclException e = assertThrows(NcclException.class, c::close);
        assertEquals("ncclCommDestroy", e.operation());
        assertEquals(NcclResult.INTERNAL_ERROR, e.result());
        assertEquals(-1, e.rank(), "close reports without a rank");
        assertTrue(c.isClosed());
        mark();
        c.close();
        assertEquals(List.of(), newCalls());
        stub.result(org.nccl4j.jni.NcclFunction.ncclCommDestroy, 0);
    }

    @Test
    void closeReportsAFailedFinalizeButStillDestroys() {
        Communicator c = Communicator.create(0, 2, testId(), 0);
        stub.result(org.nccl4j.jni.NcclFunction.ncclCommFinalize, 6);
        mark();
        NcclException e = assertThrows(NcclException.class, c::close);
        assertEquals("ncclCommFinalize", e.operation());
        assertEquals(List.of("ncclCommFinalize", "ncclGetLastError", "ncclCommDestroy"), newCallNames());
    }

    // ---------------------------------------------------------------- asynchronous errors

    @ParameterizedTest
    @CsvSource({"0,SUCCESS", "1,UNHANDLED_CUDA_ERROR", "2,SYSTEM_ERROR", "3,INTERNAL_ERROR", "4,INVALID_ARGUMENT",
        "5,INVALID_USAGE", "6,REMOTE_ERROR", "7,IN_PROGRESS", "8,TIMEOUT", "9,UNKNOWN", "1234,UNKNOWN"})
    void asyncErrorMapsNcclsState(int state, NcclResult expected) {
        Communicator c = comm(1, 2);
        stub.asyncError(state);
        mark();
        assertEquals(expected, c.asyncError());
        assertEquals(Map.of("comm", hex(c.handle())), only("ncclCommGetAsyncError"));
        if (state == 0 || state == 7) {
            c.checkAsyncError();
        } else {
            NcclException e = assertThrows(NcclException.class, c::checkAsyncError);
            assertEquals(state, e.code());
            assertEquals(expected, e.result());
            assertEquals("ncclCommGetAsyncError", e.operation());
            assertEquals(1, e.rank());
        }
    }

    @Test
    void asyncErrorReportsAFailedQuery() {
        Communicator c = comm(0, 2);
        stub.result(org.nccl4j.jni.NcclFunction.ncclCommGetAsyncError, 5);
        NcclException e = assertThrows(NcclException.class, c::asyncError);
        assertEquals(NcclResult.INVALID_USAGE, e.result());
        assertEquals("ncclCommGetAsyncError", e.operation());
    }

    // ---------------------------------------------------------------- pre-multiplied sums

    @ParameterizedTest(name = "{0} {1} -> {2}")
    @CsvSource({"FLOAT32, 2.5, 0x40200000", "FLOAT64, 2.5, 0x4004000000000000", "FLOAT16, 2.5, 0x4100",
        "BFLOAT16, 2.5, 0x4020", "FLOAT16, -0.5, 0xb800", "BFLOAT16, 1.0, 0x3f80", "INT32, -3, 0xfffffffd",
        "UINT32, 7, 0x7", "INT64, -3, 0xfffffffffffffffd", "UINT8, 200, 0xc8", "INT8, -1, 0xff",
        "FLOAT32, 0.1, 0x3dcccccd", "UINT64, 9.223372036854775808E18, 0x8000000000000000", "FLOAT16, 65519, 0x7bff",
        "FLOAT64, 1.0E300, 0x7e37e43c8800759c"})
    void hostScalarReachesNcclAsTheTypesBits(DataType type, double scalar, String bits) {
        Communicator c = comm(0, 2);
        mark();
        ReduceOp.PreMulSum op = later(c.createPreMulSum(scalar, type));
        assertEquals(Map.of("scalar_bits", bits, "datatype", Integer.toString(type.code()), "residence", "1",
                "comm", hex(c.handle())), only("ncclRedOpCreatePreMulSum"));
        assertSame(c, op.communicator());
        assertEquals(type, op.type());
        assertEquals("PreMulSum(host " + scalar + ", " + type + ")", op.toString());
        assertTrue(op.code() >= 5, "NCCL numbers user operators after the built-in ones: " + op.code());
    }

    @Test
    void deviceScalarReachesNcclAsItsAddress() {
        Communicator c = comm(0, 2);
        DeviceBuffer scalar = buffer(0, 1, DataType.FLOAT64);
        mark();
        ReduceOp.PreMulSum op = later(c.createPreMulSum(scalar, DataType.FLOAT64));
        assertEquals(Map.of("scalar", hex(scalar.address()), "datatype", "8", "residence", "0",
                "comm", hex(c.handle())), only("ncclRedOpCreatePreMulSum"));
        assertEquals("PreMulSum(device " + hex(scalar.address()) + ", FLOAT64)", op.toString());
    }

    @Test
    void preMulSumIsUsedByCodeAndDestroyedOnce() {
        Communicator c = comm(1, 4);
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 8, DataType.FLOAT32);
        ReduceOp.PreMulSum op = c.createPreMulSum(0.25, DataType.FLOAT32);
        mark();
        c.allReduce(b, DataType.FLOAT32, op, s);
        c.reduce(b, DataType.FLOAT32, op, 0, s);
        DeviceBuffer big = buffer(0, 32, DataType.FLOAT32);
        mark();
        c.reduceScatter(big, DataType.FLOAT32, op, s);
        assertEquals(Integer.toString(op.code()), only("ncclReduceScatter").get("op"));
        assertEquals(Integer.toString(op.code()), stub.last("ncclAllReduce").get("op"));
        assertEquals(Integer.toString(op.code()), stub.last("ncclReduce").get("op"));
        mark();
        op.close();
        op.close();
        assertEquals(List.of("ncclRedOpDestroy op=" + op.code() + " comm=" + hex(c.handle())), newCalls());
    }

    @Test
    void preMulSumClosedAfterItsCommunicatorReachesNothing() {
        Communicator c = Communicator.create(0, 2, testId(), 0);
        ReduceOp.PreMulSum op = c.createPreMulSum(3.0, DataType.FLOAT64);
        c.close();
        mark();
        op.close();
        assertEquals(List.of(), newCalls());
    }

    @Test
    void aFailedPreMulSumDestroyIsReportedOnceAndTheOperatorStaysClosed() {
        Communicator c = comm(1, 4);
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 8, DataType.FLOAT32);
        ReduceOp.PreMulSum op = c.createPreMulSum(0.5, DataType.FLOAT32);
        stub.result(org.nccl4j.jni.NcclFunction.ncclRedOpDestroy, 5);
        NcclException e = assertThrows(NcclException.class, op::close);
        assertEquals("ncclRedOpDestroy", e.operation());
        assertEquals(NcclResult.INVALID_USAGE, e.result());
        assertEquals(1, e.rank());
        assertEquals("ncclRedOpDestroy failed on rank 1: ncclInvalidUsage (5): stub error string 5; last error: "
                + "stub last error after ncclRedOpDestroy", e.getMessage());
        stub.result(org.nccl4j.jni.NcclFunction.ncclRedOpDestroy, 0);
        mark();
        op.close();
        assertEquals(List.of(), newCalls(), "not retried");
        IllegalStateException closed = assertThrows(IllegalStateException.class,
                () -> c.allReduce(b, DataType.FLOAT32, op, s));
        assertEquals("PreMulSum(host 0.5, FLOAT32) is closed", closed.getMessage());
    }

    @Test
    void twoPreMulSumsGetDistinctCodes() {
        Communicator c = comm(0, 2);
        ReduceOp.PreMulSum a = later(c.createPreMulSum(1.0, DataType.FLOAT32));
        ReduceOp.PreMulSum b = later(c.createPreMulSum(1.0, DataType.FLOAT32));
        assertNotEquals(a.code(), b.code());
    }

    // ---------------------------------------------------------------- groups

    @Test
    void groupStartsAndEndsOnce() {
        mark();
        Group g = Nccl.group();
        assertEquals(List.of("ncclGroupStart"), newCallNames());
        g.close();
        g.close();
        assertEquals(List.of("ncclGroupStart", "ncclGroupEnd"), newCallNames());
    }

    @Test
    void groupInTryWithResourcesWrapsTheCollectives() {
        List<Communicator> comms = Communicator.initAll(0, 1);
        comms.forEach(this::later);
        Stream s0 = stream(0);
        Stream s1 = stream(1);
        DeviceBuffer b0 = buffer(0, 4, DataType.INT32);
        DeviceBuffer b1 = buffer(1, 4, DataType.INT32);
        mark();
        try (Group g = Nccl.group()) {
            comms.get(0).allReduce(b0, DataType.INT32, ReduceOp.SUM, s0);
            comms.get(1).allReduce(b1, DataType.INT32, ReduceOp.SUM, s1);
        }
        assertEquals(List.of("ncclGroupStart", "ncclAllReduce", "ncclAllReduce", "ncclGroupEnd"), newCallNames());
    }

    @Test
    void simulateEndReturnsTheEstimateAndEndsTheGroup() {
        Group g = Nccl.group();
        mark();
        assertEquals(42.5f, g.simulateEnd());
        assertEquals(List.of("ncclGroupSimulateEnd"), newCallNames());
        IllegalStateException e = assertThrows(IllegalStateException.class, g::simulateEnd);
        assertEquals("this group has already ended", e.getMessage());
        g.close();
        assertEquals(List.of("ncclGroupSimulateEnd"), newCallNames(), "no ncclGroupEnd after the simulated end");
    }

    @Test
    void groupEndInProgressIsNotAnErrorButAFailureIs() {
        stub.result(org.nccl4j.jni.NcclFunction.ncclGroupEnd, 7);
        Nccl.group().close();
        stub.result(org.nccl4j.jni.NcclFunction.ncclGroupEnd, 5);
        Group g = Nccl.group();
        NcclException e = assertThrows(NcclException.class, g::close);
        assertEquals("ncclGroupEnd", e.operation());
        assertEquals(NcclResult.INVALID_USAGE, e.result());
        assertEquals("ncclGroupEnd failed: ncclInvalidUsage (5): stub error string 5; last error: stub last error "
                + "after ncclGroupEnd", e.getMessage());
        mark();
        g.close();
        assertEquals(List.of(), newCalls(), "a failed end is not retried");
    }

    @Test
    void groupStartFailureThrows() {
        stub.result(org.nccl4j.jni.NcclFunction.ncclGroupStart, 3);
        NcclException e = assertThrows(NcclException.class, Nccl::group);
        assertEquals("ncclGroupStart", e.operation());
    }

    // ---------------------------------------------------------------- ids

    @Test
    void generatedIdHasTheStubsBytes() {
        mark();
        UniqueId id = UniqueId.generate();
        assertEquals(List.of("ncclGetUniqueId"), newCallNames());
        byte[] b = id.toBytes();
        assertEquals(UniqueId.BYTES, b.length);
        for (int i = 0; i < b.length; i++) {
            assertEquals((byte) ((i * 7 + 1) & 0xff), b[i], "byte " + i);
        }
        b[0] = 99;
        assertEquals(1, id.toBytes()[0], "toBytes returns a copy");
        assertEquals(id, Nccl.uniqueId());
        assertEquals(id, UniqueId.fromBase64(id.toBase64()));
        assertEquals(id.hashCode(), UniqueId.of(id.toBytes()).hashCode());
        assertNotEquals(id, testId());
        assertEquals("UniqueId[" + id.toBase64().substring(0, 12) + "...]", id.toString());
        byte[] src = id.toBytes();
        UniqueId copy = UniqueId.of(src);
        src[5] = 0;
        assertArrayEquals(id.toBytes(), copy.toBytes(), "of() copies its argument");
    }

    // ---------------------------------------------------------------- registration and NCCL memory

    @Test
    void registerAndDeregister() {
        Communicator c = comm(0, 2);
        DeviceBuffer b = buffer(0, 1000, DataType.UINT8);
        mark();
        Communicator.Registration r = c.register(b);
        assertEquals(Map.of("comm", hex(c.handle()), "buff", hex(b.address()), "size", "1000"),
                only("ncclCommRegister"));
        assertTrue(r.handle() >= 0xB000_0000L && r.handle() < 0xC000_0000L, hex(r.handle()));
        r.close();
        r.close();
        assertEquals(Map.of("comm", hex(c.handle()), "handle", hex(r.handle())), only("ncclCommDeregister"));
    }

    @Test
    void registrationClosedAfterItsCommunicatorReachesNothing() {
        Communicator c = Communicator.create(0, 2, testId(), 0);
        DeviceBuffer b = buffer(0, 64, DataType.UINT8);
        Communicator.Registration r = c.register(b);
        c.close();
        mark();
        r.close();
        assertEquals(List.of(), newCalls());
    }

    @Test
    void aFailedDeregisterIsReportedOnceAndNotRetried() {
        Communicator c = comm(0, 2);
        DeviceBuffer b = buffer(0, 64, DataType.UINT8);
        Communicator.Registration r = c.register(b);
        stub.result(org.nccl4j.jni.NcclFunction.ncclCommDeregister, 5);
        NcclException e = assertThrows(NcclException.class, r::close);
        assertEquals("ncclCommDeregister", e.operation());
        assertEquals(NcclResult.INVALID_USAGE, e.result());
        assertEquals(0, e.rank());
        assertEquals("ncclCommDeregister failed on rank 0: ncclInvalidUsage (5): stub error string 5; last error: "
                + "stub last error after ncclCommDeregister", e.getMessage());
        stub.result(org.nccl4j.jni.NcclFunction.ncclCommDeregister, 0);
        mark();
        r.close();
        assertEquals(List.of(), newCalls(), "not retried");
    }

    @Test
    void ncclMemoryIsAllocatedAndFreedOnceByNccl() {
        mark();
        DeviceBuffer b = DeviceBuffer.allocateNccl(2, 4096);
        assertEquals(Map.of("size", "4096"), only("ncclMemAlloc"));
        assertTrue(b.address() >= 0xA000_0000L && b.address() < 0xB000_0000L, hex(b.address()));
        assertEquals(2, b.device());
        assertEquals(4096, b.bytes());
        assertTrue(b.toString().endsWith(", 4096 bytes, device 2, NCCL_MEM_ALLOC]"), b.toString());
        assertTrue(cuda.calls("setDevice").contains("setDevice device=2"), "allocated with device 2 current");
        assertEquals(0, cuda.current(), "the previous device is current again");
        b.close();
        b.close();
        assertEquals(Map.of("ptr", hex(b.address())), only("ncclMemFree"));
        assertEquals(List.of(), cuda.calls("free"), "not cudaFree");
    }

    @Test
    void libraryFacts() {
        assertEquals("2.28.3", Nccl.version());
        assertEquals(22803, Nccl.library().versionCode());
    }
}
