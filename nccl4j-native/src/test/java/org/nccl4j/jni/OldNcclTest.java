package org.nccl4j.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * An NCCL older than nccl4j's newest entry points (the stub built as NCCL 2.19.3, which lacks everything
 * added after 2.19): the missing ones are reported, return {@link NcclNative#MISSING_SYMBOL} without reaching
 * the library, and {@link NcclLibrary#checkLinked} turns that into an UnsupportedOperationException that says
 * what to do; the ones it has still work.
 */
class OldNcclTest {
    /** Exactly the entry points added after NCCL 2.19. */
    static final Set<NcclFunction> POST_2_19 = EnumSet.of(
            NcclFunction.ncclCommInitRankScalable, NcclFunction.ncclCommShrink, NcclFunction.ncclCommGetUniqueId,
            NcclFunction.ncclCommGrow, NcclFunction.ncclCommRevoke, NcclFunction.ncclGroupSimulateEnd,
            NcclFunction.ncclAlltoAll, NcclFunction.ncclGather, NcclFunction.ncclScatter,
            NcclFunction.ncclCommWindowRegister, NcclFunction.ncclCommWindowDeregister, NcclFunction.ncclCommSuspend,
            NcclFunction.ncclCommResume, NcclFunction.ncclCommMemStats, NcclFunction.ncclWinGetUserPtr,
            NcclFunction.ncclPutSignal, NcclFunction.ncclSignal, NcclFunction.ncclWaitSignal);

    private StubNccl stub;
    private NcclLibrary lib;

    @BeforeEach
    void loadOldStub() {
        stub = StubNccl.use(StubNccl.old());
        lib = NcclLibrary.load();
    }

    @AfterEach
    void restoreFullStub() {
        StubNccl.useFull();
    }

    @Test
    void reportsVersion2193AndItsPath() {
        assertEquals(21903, lib.versionCode());
        assertEquals("2.19.3", lib.version());
        assertEquals(StubNccl.old().toAbsolutePath().toString(), lib.path());
        assertEquals(lib.path(), NcclNative.loadedPath());
    }

    @Test
    void missingIsExactlyThePost219Set() {
        assertEquals(18, POST_2_19.size());
        assertEquals(POST_2_19, lib.missing());
        for (NcclFunction f : NcclFunction.values()) {
            assertEquals(!POST_2_19.contains(f), lib.has(f), f.name());
            assertEquals(POST_2_19.contains(f) ? 0 : 1, NcclNative.hasFunction(f.ordinal()), f.name());
        }
    }

    @Test
    void theMissingSetAgreesWithEachFunctionsSince() {
        // NcclFunction.since() is what the error message quotes: it must say "after 2.19" for exactly these
        for (NcclFunction f : NcclFunction.values()) {
            String[] mm = f.since().split("\\.");
            boolean after219 = Integer.parseInt(mm[0]) > 2 || (Integer.parseInt(mm[0]) == 2 && Integer.parseInt(mm[1]) > 19);
            assertEquals(POST_2_19.contains(f), after219, f + " since " + f.since());
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(names = {"ncclCommInitRankScalable", "ncclCommShrink", "ncclCommGetUniqueId", "ncclCommGrow",
        "ncclCommRevoke", "ncclGroupSimulateEnd", "ncclAlltoAll", "ncclGather", "ncclScatter", "ncclCommWindowRegister",
        "ncclCommWindowDeregister", "ncclCommSuspend", "ncclCommResume", "ncclCommMemStats", "ncclWinGetUserPtr",
        "ncclPutSignal", "ncclSignal", "ncclWaitSignal"})
    void missingEntryPointReturnsMissingSymbolAndCheckLinkedExplains(NcclFunction f) {
        stub.resultForAll(0);
        assertEquals(NcclNative.MISSING_SYMBOL, NcclCalls.invoke(f, NcclCalls.FAKE_COMM));
        assertEquals(List.of(), stub.calls(), "nothing reached the library");

        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> NcclLibrary.checkLinked(NcclNative.MISSING_SYMBOL, f));
        String m = e.getMessage();
        assertTrue(m.contains(f.name()), m);
        assertTrue(m.contains("2.19.3"), m);
        assertTrue(m.contains(StubNccl.old().toAbsolutePath().toString()), m);
        assertTrue(m.contains("NCCL " + f.since()), m);
        assertTrue(m.contains("-Dnccl4j.library") && m.contains("NCCL4J_LIBRARY"), m);
    }

    @Test
    void missingSimulateEndLeavesTheEstimateAlone() {
        float[] t = {-7f};
        assertEquals(NcclNative.MISSING_SYMBOL, NcclNative.ncclGroupSimulateEnd(t));
        assertEquals(-7f, t[0]);
        long[] comm = {0x1234L};
        assertEquals(NcclNative.MISSING_SYMBOL, NcclNative.ncclCommShrink(0, null, 0, comm, null, null, null, 0));
        assertEquals(0x1234L, comm[0], "no out-value is written");
    }

    @Test
    void presentEntryPointsStillWork() {
        long comm = NcclCalls.stubComm(3, 1);
        for (NcclFunction f : NcclFunction.values()) {
            if (POST_2_19.contains(f) || !NcclCalls.returnsStatus(f)) {
                continue;
            }
            int before = stub.calls(f.name()).size();
            assertEquals(0, NcclCalls.invoke(f, comm), f.name());
            assertEquals(before + 1, stub.calls(f.name()).size(), f + " reached the old stub");
        }
        assertEquals(0, NcclCalls.invokePreMulSumHost(comm));
        assertEquals("stub error string 2", NcclNative.ncclGetErrorString(2));
        assertNotEquals(null, NcclNative.ncclGetLastError(comm));
        // a present entry point's status is passed through by checkLinked
        assertEquals(4, NcclLibrary.checkLinked(4, NcclFunction.ncclCommRegister));
    }

    @Test
    void reportListsTheMissingWithTheirVersions() {
        String r = lib.report();
        assertTrue(r.startsWith("NCCL 2.19.3 (version code 21903)\n"), r);
        assertTrue(r.contains("library: " + StubNccl.old().toAbsolutePath() + "\n"), r);
        assertTrue(r.contains("entry points: 30 of 48 present\n"), r);
        String missingLine = r.lines().filter(l -> l.startsWith("missing: ")).findFirst().orElseThrow();
        for (NcclFunction f : POST_2_19) {
            assertTrue(missingLine.contains(f.name() + " (" + f.since() + "+)"), missingLine);
        }
        String presentLine = r.lines().filter(l -> l.startsWith("present: ")).findFirst().orElseThrow();
        for (NcclFunction f : POST_2_19) {
            assertFalse((" " + presentLine + " ").contains(" " + f.name() + " "), f + " listed as present");
        }
    }
}
