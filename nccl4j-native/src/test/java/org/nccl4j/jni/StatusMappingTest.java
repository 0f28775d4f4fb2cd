package org.nccl4j.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.FieldSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The raw layer passes NCCL's status through unchanged: every {@code ncclResult_t} (0 ncclSuccess ..
 * 8 ncclTimeout), 9 (ncclNumResults) and codes NCCL never returns, programmed in the stub, come back as they
 * are from every entry point that returns a status.
 */
class StatusMappingTest {
    /** ncclSuccess, ncclUnhandledCudaError, ncclSystemError, ncclInternalError, ncclInvalidArgument,
     * ncclInvalidUsage, ncclRemoteError, ncclInProgress, ncclTimeout, ncclNumResults, and two unknown codes. */
    static final int[] CODES = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1234, -5};

    private StubNccl stub;
    private long comm;

    @BeforeEach
    void loadFullStub() {
        stub = StubNccl.useFull();
        comm = NcclCalls.stubComm(4, 2); // before any result is programmed
    }

    static Stream<Arguments> functionsAndCodes() {
        return NcclCalls.statusFunctions().stream()
                .flatMap(f -> Arrays.stream(CODES).mapToObj(code -> Arguments.of(f, code)));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("functionsAndCodes")
    void rawStatusComesBackUnchanged(NcclFunction f, int code) {
        int before = stub.calls(f.name()).size();
        stub.result(f, code);
        assertEquals(code, NcclCalls.invoke(f, comm), f + " with the stub programmed to return " + code);
        assertEquals(before + 1, stub.calls(f.name()).size(), "the call reached the stub once");
    }

    @ParameterizedTest(name = "ncclRedOpCreatePreMulSum (host immediate) -> {0}")
    @FieldSource("CODES")
    void hostImmediatePreMulSumStatusComesBackUnchanged(int code) {
        stub.result(NcclFunction.ncclRedOpCreatePreMulSum, code);
        assertEquals(code, NcclCalls.invokePreMulSumHost(comm));
    }

    @Test
    void theStubsDefaultResultReachesEveryEntryPointAndAPerFunctionResultBeatsIt() {
        stub.resultForAll(5);
        stub.result(NcclFunction.ncclAllReduce, 8);
        for (NcclFunction f : NcclCalls.statusFunctions()) {
            assertEquals(f == NcclFunction.ncclAllReduce ? 8 : 5, NcclCalls.invoke(f, comm), f.name());
        }
    }

    @ParameterizedTest(name = "ncclGetErrorString({0})")
    @FieldSource("CODES")
    void errorStringIsTheStubs(int code) {
        assertEquals("stub error string " + code, NcclNative.ncclGetErrorString(code));
    }

    @Test
    void lastErrorIsTheStubs() {
        stub.result(NcclFunction.ncclBroadcast, 3);
        assertEquals(3, NcclCalls.invoke(NcclFunction.ncclBroadcast, comm));
        assertEquals("stub last error after ncclBroadcast", NcclNative.ncclGetLastError(comm));
    }

    @Test
    void checkLinkedPassesNcclStatusesThroughAndRefusesUnknownNegativeOnes() {
        for (int code : IntStream.rangeClosed(0, 9).toArray()) {
            assertEquals(code, NcclLibrary.checkLinked(code, NcclFunction.ncclAllReduce));
        }
        assertEquals(1234, NcclLibrary.checkLinked(1234, NcclFunction.ncclAllReduce));
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> NcclLibrary.checkLinked(-5, NcclFunction.ncclSend));
        assertTrue(e.getMessage().contains("ncclSend") && e.getMessage().contains("-5"), e.getMessage());
        // with the full stub loaded, NOT_LOADED can only mean a call before load(): an IllegalStateException
        IllegalStateException notLoaded = assertThrows(IllegalStateException.class,
                () -> NcclLibrary.checkLinked(NcclNative.NOT_LOADED, NcclFunction.ncclRecv));
        assertTrue(notLoaded.getMessage().contains("ncclRecv"), notLoaded.getMessage());
    }
}
