package org.nccl4j.jni;

/**
 * The NCCL host entry points that nccl4j resolves, in the order of the native shim's table, each with the
 * NCCL release that introduced it. Which of them the loaded library exports is reported by
 * {@link NcclLibrary#has(NcclFunction)} and {@link NcclLibrary#report()}.
 *
 * <p>The entry points added since 2.28 carry the exact first release (major.minor.patch), checked against the
 * release tags of NVIDIA/nccl ({@code src/nccl.h.in}): some arrived in a later patch release of their minor,
 * e.g. {@code ncclCommRevoke} is in 2.28.7 but not in 2.28.3, and {@code ncclCommSuspend}, {@code ncclCommResume}
 * and {@code ncclCommMemStats} are in 2.29.7 but not in 2.29.2. The older ones carry major.minor.
 */
public enum NcclFunction {
    /** {@code ncclGetVersion}. */ ncclGetVersion("2.3"),
    /** {@code ncclGetUniqueId}. */ ncclGetUniqueId("2.0"),
    /** {@code ncclCommInitRank}. */ ncclCommInitRank("2.0"),
    /** {@code ncclCommInitRankConfig}. */ ncclCommInitRankConfig("2.14"),
    /** {@code ncclCommInitAll}. */ ncclCommInitAll("2.0"),
    /** {@code ncclCommInitRankScalable}. */ ncclCommInitRankScalable("2.23"),
    /** {@code ncclCommFinalize}. */ ncclCommFinalize("2.14"),
    /** {@code ncclCommDestroy}. */ ncclCommDestroy("2.0"),
    /** {@code ncclCommAbort}. */ ncclCommAbort("2.4"),
    /** {@code ncclCommSplit}. */ ncclCommSplit("2.18"),
    /** {@code ncclCommShrink}. */ ncclCommShrink("2.27"),
    /** {@code ncclCommGetUniqueId}. */ ncclCommGetUniqueId("2.29.2"),
    /** {@code ncclCommGrow}. */ ncclCommGrow("2.29.2"),
    /** {@code ncclCommRevoke}. */ ncclCommRevoke("2.28.7"),
    /** {@code ncclCommGetAsyncError}. */ ncclCommGetAsyncError("2.4"),
    /** {@code ncclGetLastError}. */ ncclGetLastError("2.13"),
    /** {@code ncclGetErrorString}. */ ncclGetErrorString("2.0"),
    /** {@code ncclCommCount}. */ ncclCommCount("2.0"),
    /** {@code ncclCommCuDevice}. */ ncclCommCuDevice("2.0"),
    /** {@code ncclCommUserRank}. */ ncclCommUserRank("2.0"),
    /** {@code ncclGroupStart}. */ ncclGroupStart("2.0"),
    /** {@code ncclGroupEnd}. */ ncclGroupEnd("2.0"),
    /** {@code ncclGroupSimulateEnd}. */ ncclGroupSimulateEnd("2.22"),
    /** {@code ncclAllReduce}. */ ncclAllReduce("2.0"),
    /** {@code ncclBroadcast}. */ ncclBroadcast("2.2"),
    /** {@code ncclReduce}. */ ncclReduce("2.0"),
    /** {@code ncclAllGather}. */ ncclAllGather("2.0"),
    /** {@code ncclReduceScatter}. */ ncclReduceScatter("2.0"),
    /** {@code ncclAlltoAll}. */ ncclAlltoAll("2.28.3"),
    /** {@code ncclGather}. */ ncclGather("2.28.3"),
    /** {@code ncclScatter}. */ ncclScatter("2.28.3"),
    /** {@code ncclSend}. */ ncclSend("2.7"),
    /** {@code ncclRecv}. */ ncclRecv("2.7"),
    /** {@code ncclRedOpCreatePreMulSum}. */ ncclRedOpCreatePreMulSum("2.11"),
    /** {@code ncclRedOpDestroy}. */ ncclRedOpDestroy("2.11"),
    /** {@code ncclCommRegister}. */ ncclCommRegister("2.19"),
    /** {@code ncclCommDeregister}. */ ncclCommDeregister("2.19"),
    /** {@code ncclCommWindowRegister}. */ ncclCommWindowRegister("2.27"),
    /** {@code ncclCommWindowDeregister}. */ ncclCommWindowDeregister("2.27"),
    /** {@code ncclMemAlloc}. */ ncclMemAlloc("2.19"),
    /** {@code ncclMemFree}. */ ncclMemFree("2.19"),
    /** {@code ncclCommSuspend}. */ ncclCommSuspend("2.29.7"),
    /** {@code ncclCommResume}. */ ncclCommResume("2.29.7"),
    /** {@code ncclCommMemStats}. */ ncclCommMemStats("2.29.7"),
    /** {@code ncclWinGetUserPtr}. */ ncclWinGetUserPtr("2.29.2"),
    /** {@code ncclPutSignal}. */ ncclPutSignal("2.29.2"),
    /** {@code ncclSignal}. */ ncclSignal("2.29.2"),
    /** {@code ncclWaitSignal}. */ ncclWaitSignal("2.29.2");

    private final String since;

    NcclFunction(String since) {
        this.since = since;
    }

    /**
     * The NCCL release whose header first declared this entry point, as far as nccl4j knows.
     *
     * @return the release as {@code "major.minor.patch"} for the entry points added since 2.28 (e.g.
     *         {@code "2.28.7"}), else as {@code "major.minor"} (e.g. {@code "2.19"})
     */
    public String since() {
        return since;
    }
}
