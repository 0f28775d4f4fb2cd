package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.nccl4j.CollectiveForms.Args;
import org.nccl4j.CollectiveForms.Form;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.StubNccl;

/**
 * The idiomatic API on an NCCL 2.19.3 look-alike (the old stub, which lacks ncclAlltoAll, ncclGather,
 * ncclScatter, ncclGroupSimulateEnd and the other entry points added after 2.19): all-to-all, gather and
 * scatter are composed of ncclSend/ncclRecv inside one group, with the addresses, peers and counts checked
 * call by call; fp8 is refused before NCCL; a missing entry point is an UnsupportedOperationException that
 * names it, the version and the library. Communicators are made while the old stub is loaded.
 */
class OldNcclFallbackTest extends StubFixture {
    static final int RANK = 1;
    static final int SIZE = 4;
    static final long N = 8;

    private Communicator comm;
    private Stream stream;
    private String c;
    private String s;
    private String oldPath;

    @Override
    protected Path stubLibrary() {
        return StubNccl.old();
    }

    @BeforeEach
    void makeCommunicator() {
        oldPath = StubNccl.realPath(StubNccl.old());
        assertEquals("2.19.3", Nccl.version());
        assertEquals(oldPath, Nccl.library().path());
        comm = comm(RANK, SIZE);
        stream = stream(0);
        c = hex(comm.handle());
        s = hex(stream.handle());
        mark();
    }

    private DeviceBuffer floats(long count) {
        return buffer(0, count, DataType.FLOAT32);
    }

    private String send(long addr, long count, int peer) {
        return "ncclSend sendbuff=" + hex(addr) + " count=" + count + " datatype=7 peer=" + peer + " comm=" + c
                + " stream=" + s;
    }

    private String recv(long addr, long count, int peer) {
        return "ncclRecv recvbuff=" + hex(addr) + " count=" + count + " datatype=7 peer=" + peer + " comm=" + c
                + " stream=" + s;
    }

    /** The stub's record since the mark, trailing blanks of argument-less calls trimmed. */
    private List<String> calls() {
        List<String> out = new ArrayList<>();
        for (String l : newCalls()) {
            out.add(l.strip());
        }
        return out;
    }

    private static List<String> group(List<String> inside) {
        List<String> out = new ArrayList<>();
        out.add("ncclGroupStart");
        out.addAll(inside);
        out.add("ncclGroupEnd");
        return out;
    }

    // ---------------------------------------------------------------- all-to-all

    @Test
    void alltoAllSendsAndReceivesEachBlock() {
        DeviceBuffer sb = floats(SIZE * N);
        DeviceBuffer rb = floats(SIZE * N);
        mark();
        comm.alltoAll(sb, rb, DataType.FLOAT32, stream);
        List<String> inside = new ArrayList<>();
        for (int p = 0; p < SIZE; p++) {
            inside.add(send(sb.address() + p * N * 4, N, p));
            inside.add(recv(rb.address() + p * N * 4, N, p));
        }
        assertEquals(group(inside), calls());
        assertEquals(1, comm.operationsEnqueued(), "one operation, however many calls");
    }

    @Test
    void alltoAllRaw() {
        long sa = 0x7f00_0000_0000L;
        long ra = 0x7f00_1000_0000L;
        comm.alltoAll(sa, ra, 3, DataType.FLOAT32, stream);
        List<String> inside = new ArrayList<>();
        for (int p = 0; p < SIZE; p++) {
            inside.add(send(sa + p * 12, 3, p));
            inside.add(recv(ra + p * 12, 3, p));
        }
        assertEquals(group(inside), calls());
    }

    // ---------------------------------------------------------------- gather

    @Test
    void gatherOffTheRootOnlySendsToTheRoot() {
        DeviceBuffer sb = floats(N);
        mark();
        comm.gather(sb, null, DataType.FLOAT32, 2, stream);
        assertEquals(group(List.of(send(sb.address(), N, 2))), calls());
    }

    @Test
    void gatherOnTheRootSendsToItselfAndReceivesEveryBlock() {
        DeviceBuffer sb = floats(N);
        DeviceBuffer rb = floats(SIZE * N);
        mark();
        comm.gather(sb, rb, DataType.FLOAT32, RANK, stream);
        List<String> inside = new ArrayList<>();
        inside.add(send(sb.address(), N, RANK));
        for (int p = 0; p < SIZE; p++) {
            inside.add(recv(rb.address() + p * N * 4, N, p));
        }
        assertEquals(group(inside), calls());
    }

    @Test
    void gatherInPlaceOnTheRootSendsItsOwnBlock() {
        DeviceBuffer b = floats(SIZE * N);
        mark();
        comm.gather(b, DataType.FLOAT32, RANK, stream);
        List<String> inside = new ArrayList<>();
        inside.add(send(b.address() + RANK * N * 4, N, RANK));
        for (int p = 0; p < SIZE; p++) {
            inside.add(recv(b.address() + p * N * 4, N, p));
        }
        assertEquals(group(inside), calls());
    }

    @Test
    void gatherInPlaceOffTheRootAndRaw() {
        DeviceBuffer b = floats(SIZE * N);
        mark();
        comm.gather(b, DataType.FLOAT32, 0, stream);
        assertEquals(group(List.of(send(b.address() + RANK * N * 4, N, 0))), calls());
        mark();
        comm.gather(0x7f00_0000_0040L, 0, 5, DataType.FLOAT32, 3, stream);
        assertEquals(group(List.of(send(0x7f00_0000_0040L, 5, 3))), calls());
    }

    // ---------------------------------------------------------------- scatter

    @Test
    void scatterOnTheRootSendsEveryBlockAndReceivesItsOwn() {
        DeviceBuffer sb = floats(SIZE * N);
        DeviceBuffer rb = floats(N);
        mark();
        comm.scatter(sb, rb, DataType.FLOAT32, RANK, stream);
        List<String> inside = new ArrayList<>();
        for (int p = 0; p < SIZE; p++) {
            inside.add(send(sb.address() + p * N * 4, N, p));
        }
        inside.add(recv(rb.address(), N, RANK));
        assertEquals(group(inside), calls());
    }

    @Test
    void scatterOffTheRootOnlyReceives() {
        DeviceBuffer rb = floats(N);
        mark();
        comm.scatter(null, rb, DataType.FLOAT32, 0, stream);
        assertEquals(group(List.of(recv(rb.address(), N, 0))), calls());
    }

    @Test
    void scatterInPlaceReceivesIntoItsBlock() {
        DeviceBuffer b = floats(SIZE * N);
        mark();
        comm.scatter(b, DataType.FLOAT32, RANK, stream);
        List<String> inside = new ArrayList<>();
        for (int p = 0; p < SIZE; p++) {
            inside.add(send(b.address() + p * N * 4, N, p));
        }
        inside.add(recv(b.address() + RANK * N * 4, N, RANK));
        assertEquals(group(inside), calls());
        mark();
        comm.scatter(b, DataType.FLOAT32, 3, stream);
        assertEquals(group(List.of(recv(b.address() + RANK * N * 4, N, 3))), calls());
    }

    @Test
    void observerSeesOneOperationPerComposedCollective() {
        List<String> seen = new ArrayList<>();
        comm.observe((cm, seq, fn, bytes, st) -> seen.add(seq + " " + fn + " " + bytes));
        DeviceBuffer big = floats(SIZE * N);
        DeviceBuffer small = floats(N);
        comm.alltoAll(big, big.slice(0, SIZE * N * 4), DataType.FLOAT32, stream);
        comm.gather(small, big, DataType.FLOAT32, RANK, stream);
        comm.scatter(big, small, DataType.FLOAT32, RANK, stream);
        assertEquals(List.of("1 ncclAlltoAll " + SIZE * N * 4, "2 ncclGather " + N * 4, "3 ncclScatter " + N * 4),
                seen);
    }

    // ---------------------------------------------------------------- failures inside the group

    @Test
    void aFailedRecvIsReportedAsNcclRecvAndTheGroupIsStillEnded() {
        DeviceBuffer sb = floats(SIZE * N);
        DeviceBuffer rb = floats(SIZE * N);
        stub.result(NcclFunction.ncclRecv, 4);
        mark();
        NcclException e = assertThrows(NcclException.class, () -> comm.alltoAll(sb, rb, DataType.FLOAT32, stream));
        assertEquals("ncclRecv", e.operation(), e.getMessage());
        assertEquals(NcclResult.INVALID_ARGUMENT, e.result());
        assertEquals(RANK, e.rank());
        assertEquals("stub last error after ncclRecv", e.lastError(), "NCCL's text for the failed call");
        assertEquals(List.of("ncclGroupStart", "ncclSend", "ncclRecv", "ncclGetLastError", "ncclGroupEnd"),
                newCallNames(), "stops at the failure, ends the group");
        assertEquals(0, comm.operationsEnqueued());
    }

    @Test
    void aFailedSendIsReportedAsNcclSend() {
        DeviceBuffer sb = floats(SIZE * N);
        DeviceBuffer rb = floats(N);
        stub.result(NcclFunction.ncclSend, 2);
        NcclException e = assertThrows(NcclException.class, () -> comm.scatter(sb, rb, DataType.FLOAT32, RANK, stream));
        assertEquals("ncclSend", e.operation(), e.getMessage());
        e = assertThrows(NcclException.class, () -> comm.gather(rb, sb, DataType.FLOAT32, RANK, stream));
        assertEquals("ncclSend", e.operation(), e.getMessage());
        e = assertThrows(NcclException.class, () -> comm.alltoAll(sb, sb, DataType.FLOAT32, stream));
        assertEquals("ncclSend", e.operation(), e.getMessage());
        assertEquals(stub.calls("ncclGroupStart").size(), stub.calls("ncclGroupEnd").size(), "every group ended");
    }

    @Test
    void aFailedRecvOfScatterAndGatherIsReportedAsNcclRecv() {
        DeviceBuffer sb = floats(SIZE * N);
        DeviceBuffer rb = floats(N);
        stub.result(NcclFunction.ncclRecv, 6);
        NcclException e = assertThrows(NcclException.class, () -> comm.scatter(sb, rb, DataType.FLOAT32, 0, stream));
        assertEquals("ncclRecv", e.operation(), e.getMessage());
        e = assertThrows(NcclException.class, () -> comm.gather(rb, sb, DataType.FLOAT32, RANK, stream));
        assertEquals("ncclRecv", e.operation(), e.getMessage());
    }

    @Test
    void aFailedGroupEndIsReportedAsNcclGroupEnd() {
        DeviceBuffer sb = floats(SIZE * N);
        stub.result(NcclFunction.ncclGroupEnd, 5);
        NcclException e = assertThrows(NcclException.class, () -> comm.alltoAll(sb, sb, DataType.FLOAT32, stream));
        assertEquals("ncclGroupEnd", e.operation());
        assertEquals(NcclResult.INVALID_USAGE, e.result());
    }

    @Test
    void aFailedGroupStartSendsNothing() {
        DeviceBuffer sb = floats(SIZE * N);
        stub.result(NcclFunction.ncclGroupStart, 3);
        mark();
        NcclException e = assertThrows(NcclException.class, () -> comm.alltoAll(sb, sb, DataType.FLOAT32, stream));
        assertEquals("ncclGroupStart", e.operation());
        assertEquals(List.of(), stub.calls("ncclSend"));
    }

    @Test
    void groupEndInProgressOnANonblockingCommunicatorIsNotAnError() {
        Communicator nb = nonblockingComm(RANK, SIZE);
        DeviceBuffer sb = floats(SIZE * N);
        stub.result(NcclFunction.ncclGroupEnd, 7);
        nb.alltoAll(sb, sb, DataType.FLOAT32, stream);
        assertEquals(1, nb.operationsEnqueued());
        NcclException e = assertThrows(NcclException.class, () -> comm.alltoAll(sb, sb, DataType.FLOAT32, stream));
        assertEquals(NcclResult.IN_PROGRESS, e.result(), "but it is on a blocking one");
    }

    // ---------------------------------------------------------------- fp8 and missing entry points

    @ParameterizedTest(name = "{0}")
    @MethodSource("org.nccl4j.CollectiveForms#all")
    void fp8IsRefusedBeforeNccl(Form f) {
        for (DataType t : new DataType[] {DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2}) {
            Args a = new Args();
            a.comm = comm;
            a.stream = stream;
            f.setup().accept(this::floats, a);
            a.type = t;
            mark();
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> f.call().run(a));
            assertEquals(t + " needs NCCL 2.24 or newer; the loaded NCCL is 2.19.3 (" + oldPath + ")", e.getMessage());
            assertEquals(List.of(), newCalls(), "nothing reached NCCL");
        }
    }

    @Test
    void fp8DeviceScalarIsRefusedBeforeNccl() {
        DeviceBuffer scalar = buffer(0, 1, DataType.FLOAT8_E4M3);
        mark();
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> comm.createPreMulSum(scalar, DataType.FLOAT8_E4M3));
        assertTrue(e.getMessage().contains("needs NCCL 2.24 or newer"), e.getMessage());
        assertEquals(List.of(), newCalls());
    }

    @Test
    void simulateEndIsMissingAndSaysWhy() {
        Group g = Nccl.group();
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, g::simulateEnd);
        String m = e.getMessage();
        assertTrue(m.startsWith("ncclGroupSimulateEnd is not available: the loaded NCCL 2.19.3 (" + oldPath + ")"), m);
        assertTrue(m.contains("first appeared in NCCL 2.22"), m);
        assertTrue(m.contains("-Dnccl4j.library"), m);
        mark();
        g.close();
        assertEquals(List.of("ncclGroupEnd"), newCallNames(),
                "nothing reached NCCL, so the group is still open and close() must end it");
    }

    @Test
    void closeFinalizesAndDestroysOn219() {
        Communicator x = Communicator.create(0, 2, testId(), 0);
        String h = hex(x.handle());
        mark();
        x.close();
        assertEquals(List.of("ncclCommFinalize comm=" + h, "ncclCommDestroy comm=" + h), newCalls());
    }

    @Test
    void configFieldsNewerThan219AreRefusedAndTheOlderOnesPass() {
        // 2.19.3's ncclConfig_t ends at splitShare: trafficClass (2.26.2) and commName (2.27.3) would be ignored
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> later(Communicator.create(0, 1, testId(), 0, CommConfig.builder().trafficClass(3).build())));
        assertTrue(e.getMessage().startsWith("CommConfig field trafficClass needs NCCL 2.26.2 or newer, but the "
                + "loaded NCCL is 2.19.3 (" + oldPath + ")"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> later(comm.split(0, 0, CommConfig.builder().commName("child").build())));
        assertTrue(e.getMessage().startsWith("CommConfig field commName needs NCCL 2.27.3 or newer"), e.getMessage());
        assertEquals(List.of(), newCalls(), "nothing reached NCCL");

        Communicator ok = later(Communicator.create(0, 1, testId(), 0, CommConfig.builder().blocking(true)
                .cgaClusterSize(2).minCTAs(1).maxCTAs(2).netName("IB").splitShare(true).build()));
        assertEquals("IB", only("ncclCommInitRankConfig").get("netName"));
        assertEquals(0, ok.rank());
    }

    @Test
    void symmetricWindowsAndTheCtaPolicyAreRefusedNamingNccl227() {
        DeviceBuffer b = later(DeviceBuffer.allocateNccl(0, 4096));
        String tail = ", added in NCCL 2.27; the loaded NCCL is 2.19.3 (" + oldPath + "): load NCCL 2.27 or newer "
                + "(-Dnccl4j.library, NCCL4J_LIBRARY, or the library search path)";
        mark();
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> comm.registerWindow(b));
        assertEquals("Communicator.registerWindow (ncclCommWindowRegister) needs ncclCommWindowRegister" + tail,
                e.getMessage());
        e = assertThrows(UnsupportedOperationException.class, () -> Window.allocate(comm, 16, DataType.FLOAT32));
        assertEquals("Window.allocate (ncclMemAlloc, ncclCommWindowRegister) needs ncclCommWindowRegister" + tail,
                e.getMessage());
        e = assertThrows(UnsupportedOperationException.class,
                () -> GradientBuckets.builder(comm).symmetric(true).add(4).build());
        assertTrue(e.getMessage().endsWith("needs ncclCommWindowRegister" + tail), e.getMessage());
        assertEquals(List.of(), newCalls(), "nothing allocated or registered");
        assertEquals(1, later(GradientBuckets.builder(comm).add(4).build()).bucketCount(), "the default needs no window");

        IllegalArgumentException a = assertThrows(IllegalArgumentException.class, () -> later(
                Communicator.create(0, 1, testId(), 0, CommConfig.builder().ctaPolicy(CtaPolicy.EFFICIENCY).build())));
        assertTrue(a.getMessage().startsWith("CommConfig field CTAPolicy needs NCCL 2.27.3 or newer, but the loaded "
                + "NCCL is 2.19.3 (" + oldPath + ")"), a.getMessage());
    }
}
