package org.nccl4j.jni;

import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * One raw call of every {@link NcclFunction} that returns a status, with harmless arguments, for the sweeps
 * that only look at the status (status mapping, missing symbols, no library loaded). The switch is a switch
 * expression over the enum, so a new {@link NcclFunction} constant does not compile until it is added here.
 */
final class NcclCalls {
    /** A communicator address the stub does not know; fine for every entry point that does not query it. */
    static final long FAKE_COMM = 0x7f00_0c0c_0000L;
    static final long BUF = 0x7f00_1234_5678L;
    static final long STREAM = 0x7f00_5700_0000L;

    private NcclCalls() {
    }

    /** Whether {@code f} returns an {@code ncclResult_t} (all but the two that return a string). */
    static boolean returnsStatus(NcclFunction f) {
        return f != NcclFunction.ncclGetLastError && f != NcclFunction.ncclGetErrorString;
    }

    /** The entry points that return a status. */
    static List<NcclFunction> statusFunctions() {
        return Arrays.stream(NcclFunction.values()).filter(NcclCalls::returnsStatus).collect(Collectors.toList());
    }

    /** A config with NCCL's "undefined" in every field, as the checked API passes by default. */
    static int[] undefConfig() {
        int[] c = new int[NcclNative.CFG_INTS];
        Arrays.fill(c, NcclNative.CONFIG_UNDEF_INT);
        return c;
    }

    /**
     * Calls {@code f} once and returns its status.
     *
     * @param comm a communicator the stub made: the queries (count, device, rank) need one, the others get it too
     */
    static int invoke(NcclFunction f, long comm) {
        byte[] id = new byte[NcclNative.UNIQUE_ID_BYTES];
        return switch (f) {
            case ncclGetVersion -> NcclNative.ncclGetVersion(new int[1]);
            case ncclGetUniqueId -> NcclNative.ncclGetUniqueId(id);
            case ncclCommInitRank -> NcclNative.ncclCommInitRank(new long[1], 2, id, 1);
            case ncclCommInitRankConfig -> NcclNative.ncclCommInitRankConfig(new long[1], 2, id, 1, undefConfig(), null, null);
            case ncclCommInitAll -> NcclNative.ncclCommInitAll(new long[2], 2, new int[] {0, 1});
            case ncclCommInitRankScalable -> NcclNative.ncclCommInitRankScalable(new long[1], 2, 1, 1, id, null, null, null);
            case ncclCommFinalize -> NcclNative.ncclCommFinalize(FAKE_COMM);
            // destroy and abort free a communicator the stub knows: never hand them 'comm'
            case ncclCommDestroy -> NcclNative.ncclCommDestroy(FAKE_COMM);
            case ncclCommAbort -> NcclNative.ncclCommAbort(FAKE_COMM);
            case ncclCommSplit -> NcclNative.ncclCommSplit(comm, 0, 0, new long[1], null, null, null);
            case ncclCommShrink -> NcclNative.ncclCommShrink(comm, new int[] {1}, 1, new long[1], null, null, null, 0);
            case ncclCommGetUniqueId -> NcclNative.ncclCommGetUniqueId(comm, id);
            case ncclCommGrow -> NcclNative.ncclCommGrow(comm, 3, null, -1, new long[1], null, null, null);
            case ncclCommRevoke -> NcclNative.ncclCommRevoke(comm, 0);
            case ncclCommGetAsyncError -> NcclNative.ncclCommGetAsyncError(comm, new int[1]);
            case ncclGetLastError, ncclGetErrorString -> throw new IllegalArgumentException(f + " returns a string");
            case ncclCommCount -> NcclNative.ncclCommCount(comm, new int[1]);
            case ncclCommCuDevice -> NcclNative.ncclCommCuDevice(comm, new int[1]);
            case ncclCommUserRank -> NcclNative.ncclCommUserRank(comm, new int[1]);
            case ncclGroupStart -> NcclNative.ncclGroupStart();
            case ncclGroupEnd -> NcclNative.ncclGroupEnd();
            case ncclGroupSimulateEnd -> NcclNative.ncclGroupSimulateEnd(new float[1]);
            case ncclAllReduce -> NcclNative.ncclAllReduce(BUF, BUF, 1, 7, 0, comm, STREAM);
            case ncclBroadcast -> NcclNative.ncclBroadcast(BUF, BUF, 1, 7, 0, comm, STREAM);
            case ncclReduce -> NcclNative.ncclReduce(BUF, BUF, 1, 7, 0, 0, comm, STREAM);
            case ncclAllGather -> NcclNative.ncclAllGather(BUF, BUF, 1, 7, comm, STREAM);
            case ncclReduceScatter -> NcclNative.ncclReduceScatter(BUF, BUF, 1, 7, 0, comm, STREAM);
            case ncclAlltoAll -> NcclNative.ncclAlltoAll(BUF, BUF, 1, 7, comm, STREAM);
            case ncclGather -> NcclNative.ncclGather(BUF, BUF, 1, 7, 0, comm, STREAM);
            case ncclScatter -> NcclNative.ncclScatter(BUF, BUF, 1, 7, 0, comm, STREAM);
            case ncclSend -> NcclNative.ncclSend(BUF, 1, 7, 0, comm, STREAM);
            case ncclRecv -> NcclNative.ncclRecv(BUF, 1, 7, 0, comm, STREAM);
            case ncclRedOpCreatePreMulSum -> NcclNative.ncclRedOpCreatePreMulSum(new int[1], BUF, 7, 0, comm);
            case ncclRedOpDestroy -> NcclNative.ncclRedOpDestroy(5, comm);
            case ncclCommRegister -> NcclNative.ncclCommRegister(comm, BUF, 4096, new long[1]);
            case ncclCommDeregister -> NcclNative.ncclCommDeregister(comm, 0xB000_0000L);
            case ncclCommWindowRegister -> NcclNative.ncclCommWindowRegister(comm, BUF, 4096, new long[1], 0);
            case ncclCommWindowDeregister -> NcclNative.ncclCommWindowDeregister(comm, 0xC000_0000L);
            case ncclMemAlloc -> NcclNative.ncclMemAlloc(new long[1], 4096);
            case ncclMemFree -> NcclNative.ncclMemFree(0xA000_0000L);
            case ncclCommSuspend -> NcclNative.ncclCommSuspend(comm, 1);
            case ncclCommResume -> NcclNative.ncclCommResume(comm);
            case ncclCommMemStats -> NcclNative.ncclCommMemStats(comm, 0, new long[1]);
            case ncclWinGetUserPtr -> NcclNative.ncclWinGetUserPtr(comm, 0xC000_0000L, new long[1]);
            case ncclPutSignal -> NcclNative.ncclPutSignal(BUF, 1, 7, 1, 0xC000_0000L, 0, 0, 0, 0, comm, STREAM);
            case ncclSignal -> NcclNative.ncclSignal(1, 0, 0, 0, comm, STREAM);
            case ncclWaitSignal -> NcclNative.ncclWaitSignal(1, new int[] {1, 1, 0, 0}, comm, STREAM);
        };
    }

    /** The host-immediate variant of ncclRedOpCreatePreMulSum (its own JNI method over the same entry point). */
    static int invokePreMulSumHost(long comm) {
        return NcclNative.ncclRedOpCreatePreMulSumHost(new int[1], Double.doubleToRawLongBits(0.5), 8, comm);
    }

    /** A communicator made by the loaded stub (ncclCommInitRank), which the stub's queries accept. */
    static long stubComm(int nranks, int rank) {
        long[] comm = new long[1];
        int rc = NcclNative.ncclCommInitRank(comm, nranks, new byte[NcclNative.UNIQUE_ID_BYTES], rank);
        if (rc != 0 || comm[0] == 0) {
            throw new IllegalStateException("the stub's ncclCommInitRank failed: " + rc);
        }
        return comm[0];
    }
}
