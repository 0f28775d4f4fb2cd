package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.nccl4j.CollectiveForms.Args;
import org.nccl4j.CollectiveForms.Form;
import org.nccl4j.jni.NcclFunction;

/**
 * Statuses become exceptions in one format: every ncclResult_t, and codes NCCL does not define, programmed
 * into the stub; the fields of {@link NcclException} and its message; ncclInProgress, which is not an error
 * for an enqueue on a nonblocking communicator; and {@link CudaException}s from {@link FakeCuda} failures.
 */
class ErrorMappingTest extends StubFixture {
    static final String[] NAMES = {"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
        "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"};

    @org.junit.jupiter.api.Test
    void ncclsFailureOfACallOnACommunicatorFoundBrokenIsThrownAsThatFailureWithNcclsSuppressed() {
        Communicator c = comm(0, 2);
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 4, DataType.FLOAT32);
        // what the watchdog set while this thread was inside the enqueue: a peer's departure
        CommunicatorFailedException.Details d = new CommunicatorFailedException.Details(0, 2, "comm", "ncclAllReduce", 2,
                4, "ncclFloat32", "ncclSum", -1, 16, 0, java.time.Duration.ofMillis(13), java.time.Duration.ofMinutes(10),
                6, null, null, "rank 1 (gpu7, pid 934) is exiting after allReduce #1, its last (SIGTERM)", false,
                new int[] {1});
        PeerDepartedException known = new PeerDepartedException(d);
        c.health().failure = known;
        stub.result(NcclFunction.ncclAllReduce, 3);   // NCCL's own error, later: ncclInternalError
        PeerDepartedException e = assertThrows(PeerDepartedException.class,
                () -> c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s));
        assertSame(known, e.getCause(), "the watchdog's failure, as later calls throw it");
        assertEquals(1, e.getSuppressed().length);
        NcclException nccl = (NcclException) e.getSuppressed()[0];
        assertEquals(3, nccl.code());
        assertEquals("ncclAllReduce", nccl.operation());
        c.health().failure = null;   // NCCL's status alone, with no failure known: NcclException as before
        assertEquals(3, assertThrows(NcclException.class, () -> c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s))
                .code());
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1234})
    void allReduceFailureCarriesEverything(int code) {
        Communicator c = comm(2, 3);
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 4, DataType.FLOAT32);
        stub.result(NcclFunction.ncclAllReduce, code);
        mark();
        NcclException e = assertThrows(NcclException.class, () -> c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s));
        boolean known = code <= 8;
        assertEquals(code, e.code());
        assertEquals(known ? NcclResult.values()[code] : NcclResult.UNKNOWN, e.result());
        assertEquals(known ? NAMES[code] : "unknown(" + code + ")", e.ncclName());
        assertEquals("stub last error after ncclAllReduce", e.lastError());
        assertEquals(2, e.rank());
        assertEquals("ncclAllReduce", e.operation());
        assertEquals("ncclAllReduce failed on rank 2: " + (known ? NAMES[code] : "unknown ncclResult_t") + " (" + code
                + "): stub error string " + code + "; last error: stub last error after ncclAllReduce", e.getMessage());
        assertEquals(Map.of("comm", hex(c.handle())), only("ncclGetLastError"), "asked of this communicator");
        assertEquals(0, c.operationsEnqueued(), "a failed call is not counted");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("org.nccl4j.CollectiveForms#all")
    void everyCollectiveReportsItsOwnFunction(Form f) {
        Args a = new Args();
        a.comm = comm(CollectiveForms.RANK, CollectiveForms.SIZE);
        a.stream = stream(0);
        f.setup().accept(n -> buffer(0, n, DataType.FLOAT32), a);
        stub.result(NcclFunction.valueOf(f.fn()), 5);
        NcclException e = assertThrows(NcclException.class, () -> f.call().run(a));
        assertEquals(f.fn(), e.operation());
        assertEquals(NcclResult.INVALID_USAGE, e.result());
        assertEquals(CollectiveForms.RANK, e.rank());
        assertEquals("stub last error after " + f.fn(), e.lastError());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("org.nccl4j.CollectiveForms#all")
    void inProgressIsAnEnqueueOnANonblockingCommunicator(Form f) {
        Args a = new Args();
        a.comm = nonblockingComm(CollectiveForms.RANK, CollectiveForms.SIZE);
        a.stream = stream(0);
        f.setup().accept(n -> buffer(0, n, DataType.FLOAT32), a);
        stub.result(NcclFunction.valueOf(f.fn()), 7);
        f.call().run(a);
        assertEquals(1, a.comm.operationsEnqueued());
        stub.result(NcclFunction.valueOf(f.fn()), 4);
        NcclException e = assertThrows(NcclException.class, () -> f.call().run(a), "other codes still are errors");
        assertEquals(NcclResult.INVALID_ARGUMENT, e.result());
    }

    @Test
    void aDuplicateGpuSaysHowRanksShareOne() {
        NcclException e = new NcclException("ncclCommInitRank", 5, "invalid usage",
                "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60", -1);
        assertEquals("ncclCommInitRank failed: ncclInvalidUsage (5): invalid usage; last error: Duplicate GPU detected :"
                + " rank 0 and rank 1 both on CUDA device 60; ranks that share a GPU need their own NCCL_HOSTID: launch"
                + " with scripts/nccl4j-run --share-gpu, or give each rank NCCL_HOSTID=<its own name> and"
                + " NCCL_SOCKET_IFNAME=lo", e.getMessage());
        assertEquals("Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60", e.lastError());
        assertEquals("ncclCommInitRank failed: ncclInvalidUsage (5): invalid usage; last error: something else",
                new NcclException("ncclCommInitRank", 5, "invalid usage", "something else", -1).getMessage());
    }

    @Test
    void inProgressIsAnErrorOnABlockingCommunicator() {
        Communicator c = comm(0, 2);
        Stream s = stream(0);
        stub.result(NcclFunction.ncclSend, 7);
        NcclException e = assertThrows(NcclException.class, () -> c.send(0x1000, 1, DataType.INT8, 1, s));
        assertEquals(NcclResult.IN_PROGRESS, e.result());
        assertEquals("ncclInProgress", e.ncclName());
    }

    @Test
    void failuresWithoutACommunicatorHaveNoRank() {
        stub.result(NcclFunction.ncclGetUniqueId, 2);
        mark();
        NcclException e = assertThrows(NcclException.class, UniqueId::generate);
        assertEquals("ncclGetUniqueId failed: ncclSystemError (2): stub error string 2; last error: stub last error "
                + "after ncclGetUniqueId", e.getMessage());
        assertEquals(-1, e.rank());
        assertEquals(Map.of("comm", "0x0"), only("ncclGetLastError"));
    }

    @Test
    void aFailedInitReportsTheFunctionAndTracksNothing() {
        List<String> open = Nccl.openResources();
        stub.result(NcclFunction.ncclCommInitRank, 6);
        NcclException e = assertThrows(NcclException.class, () -> Communicator.create(0, 2, testId(), 0));
        assertEquals("ncclCommInitRank", e.operation());
        assertEquals(NcclResult.REMOTE_ERROR, e.result());
        assertEquals(-1, e.rank());
        stub.result(NcclFunction.ncclCommInitRankConfig, 1);
        e = assertThrows(NcclException.class, () -> Communicator.create(0, 2, testId(), 0, CommConfig.DEFAULT));
        assertEquals("ncclCommInitRankConfig", e.operation());
        stub.result(NcclFunction.ncclCommInitAll, 3);
        e = assertThrows(NcclException.class, () -> Communicator.initAll(0, 1));
        assertEquals("ncclCommInitAll", e.operation());
        assertEquals(open, Nccl.openResources());
        assertEquals(List.of(), stub.calls("ncclCommUserRank"), "no communicator was queried");
    }

    @Test
    void aCommunicatorWhoseQueriesFailIsAbortedNotLeaked() {
        stub.result(NcclFunction.ncclCommCount, 3);
        mark();
        NcclException e = assertThrows(NcclException.class, () -> Communicator.create(0, 2, testId(), 0));
        assertEquals("ncclCommCount", e.operation());
        String handle = only("ncclCommUserRank").get("comm");
        assertEquals(Map.of("comm", handle), only("ncclCommAbort"), "the half-made communicator is torn down");
    }

    @Test
    void initAllAbortsEveryCommunicatorWhenOneCannotBeQueried() {
        // the stub programs results per function, not per call: every ncclCommCount fails, so the first
        // Communicator cannot be made; all three communicators NCCL made must be aborted
        List<String> open = Nccl.openResources();
        stub.result(NcclFunction.ncclCommCount, 3);
        mark();
        NcclException e = assertThrows(NcclException.class, () -> Communicator.initAll(0, 1, 2));
        assertEquals("ncclCommCount", e.operation());
        List<String> aborted = newCalls().stream().filter(l -> l.startsWith("ncclCommAbort ")).toList();
        assertEquals(3, aborted.size(), "every communicator of the failed initAll is aborted: " + newCalls());
        assertEquals(3, aborted.stream().distinct().count());
        assertTrue(aborted.contains("ncclCommAbort comm=" + only("ncclCommUserRank").get("comm")));
        assertEquals(open, Nccl.openResources(), "nothing left tracked as open");
    }

    @Test
    void theExceptionWithoutOptionalParts() {
        NcclException e = new NcclException("ncclCommSplit", 5, null, "", -1);
        assertEquals("ncclCommSplit failed: ncclInvalidUsage (5)", e.getMessage());
        assertEquals("", e.lastError());
        e = new NcclException("ncclRecv", -7, "", null, 0);
        assertEquals("ncclRecv failed on rank 0: unknown ncclResult_t (-7)", e.getMessage());
        assertEquals(NcclResult.UNKNOWN, e.result());
        assertEquals("unknown(-7)", e.ncclName());
        assertNull(e.lastError());
    }

    // ---------------------------------------------------------------- CUDA

    @Test
    void cudaFailuresCarryTheOperationCodeAndDevice() {
        cuda.fail("malloc", FakeCuda.MEMORY_ALLOCATION);
        CudaException e = assertThrows(CudaException.class, () -> DeviceBuffer.allocate(1, 64));
        assertEquals("cudaMalloc(64 bytes) failed on device 1: cudaErrorMemoryAllocation (2): out of memory",
                e.getMessage());
        assertEquals(2, e.code());
        assertEquals("cudaMalloc(64 bytes)", e.operation());
        assertEquals(1, e.device());
        assertEquals(0, cuda.current(), "the previous device is current again after the failure");
        assertEquals(0, cuda.liveAllocations());
        cuda.fail("malloc", 0);

        DeviceBuffer b = buffer(0, 16, DataType.FLOAT32);
        cuda.fail("memcpy", FakeCuda.INVALID_VALUE);
        e = assertThrows(CudaException.class, () -> b.copyFrom(new float[4]));
        assertEquals("cudaMemcpy(host to device) failed on device 0: cudaErrorInvalidValue (1): invalid argument",
                e.getMessage());
        e = assertThrows(CudaException.class, () -> b.copyTo(new int[4]));
        assertEquals("cudaMemcpy(device to host) failed on device 0: cudaErrorInvalidValue (1): invalid argument",
                e.getMessage());
        cuda.fail("memcpy", 0);

        cuda.fail("getDeviceCount", 100);
        e = assertThrows(CudaException.class, Cuda::deviceCount);
        assertEquals("cudaGetDeviceCount failed: cudaErrorUnknown (100): unrecognized error code", e.getMessage());
        assertEquals(-1, e.device());
        cuda.fail("getDeviceCount", 0);
        assertEquals(DEVICES, Cuda.deviceCount());
    }

    @Test
    void cudaFailureWithoutNamesFromTheRuntime() {
        cuda.errorNames(false);
        cuda.fail("streamCreate", 700);
        CudaException e = assertThrows(CudaException.class, () -> Stream.create(3));
        assertEquals("cudaStreamCreateWithFlags failed on device 3: cudaError (700)", e.getMessage());
    }

    @Test
    void aFailedFreeIsReportedOnceAndTheBufferStaysClosed() {
        DeviceBuffer b = DeviceBuffer.allocate(2, 8);
        cuda.fail("free", FakeCuda.INVALID_VALUE);
        CudaException e = assertThrows(CudaException.class, b::close);
        assertEquals("cudaFree failed on device 2: cudaErrorInvalidValue (1): invalid argument", e.getMessage());
        assertTrue(b.isClosed());
        cuda.fail("free", 0);
        b.close();
        assertEquals(1, cuda.calls("free").size(), "not retried");
    }

    @Test
    void cudaQueries() {
        assertEquals(DEVICES, Cuda.deviceCount());
        Cuda.setDevice(3);
        assertEquals(3, Cuda.currentDevice());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Cuda.setDevice(-1));
        assertEquals("device must be >= 0, got -1", e.getMessage());
        CudaException c = assertThrows(CudaException.class, () -> Cuda.setDevice(DEVICES));
        assertEquals(FakeCuda.INVALID_DEVICE, c.code());
        Stream s = stream(1);
        Cuda.synchronize(s);
        assertEquals(List.of("streamSynchronize stream=" + hex(s.handle())), cuda.calls("streamSynchronize"));
        Cuda.setDevice(0);
    }
}
