package org.nccl4j.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The loader: the shim's table against {@link NcclFunction}, the ABI sizes, version decoding, the report,
 * and every way opening a library can fail. Tests that close or switch the library put the full stub back.
 */
class LoaderTest {
    @AfterEach
    void restoreFullStub() {
        System.clearProperty(NcclLibrary.LIBRARY_PROPERTY);
        NcclNative.unsetenv("NCCL_STUB_VERSION");
        NcclNative.unsetenv("NCCL_STUB_RESULT_ncclGetVersion");
        StubNccl.reloadFull();
    }

    // ---------------------------------------------------------------- the shim's tables and sizes

    @Test
    void functionTableOrderIsTheEnumOrder() {
        NcclFunction[] all = NcclFunction.values();
        assertEquals(48, all.length);
        assertEquals(all.length, NcclNative.functionCount());
        for (NcclFunction f : all) {
            assertEquals(f.name(), NcclNative.functionName(f.ordinal()), "shim entry " + f.ordinal());
        }
        assertNull(NcclNative.functionName(-1));
        assertNull(NcclNative.functionName(all.length));
        assertEquals(0, NcclNative.hasFunction(-1));
        assertEquals(0, NcclNative.hasFunction(all.length));
    }

    @Test
    void uniqueIdIs128Bytes() {
        assertEquals(128, NcclNative.uniqueIdBytes());
        assertEquals(NcclNative.UNIQUE_ID_BYTES, NcclNative.uniqueIdBytes());
    }

    /** Lays out a C struct of the given field sizes (each aligned to its own size, as on x86-64 LP64). */
    private static int cLayoutSize(int... fieldSizes) {
        int offset = 0;
        int maxAlign = 1;
        for (int size : fieldSizes) {
            offset = (offset + size - 1) / size * size;
            offset += size;
            maxAlign = Math.max(maxAlign, size);
        }
        return (offset + maxAlign - 1) / maxAlign * maxAlign;
    }

    @Test
    void configSizeIsTheCLayout() {
        final int sizeT = 8, uint = 4, i = 4, ptr = 8;
        int computed = cLayoutSize(
                sizeT, uint, uint,                        // size, magic, version: 0..16
                i, i, i, i,                               // blocking, cgaClusterSize, minCTAs, maxCTAs: 16..32
                ptr,                                      // netName: 32..40
                i, i,                                     // splitShare, trafficClass: 40..48
                ptr,                                      // commName: 48..56
                i, i, i, i, i, i, i, i, i, i);          // collnetEnable .. graphStreamOrdering: 56..96
        // NCCL 2.30.7's ncclConfig_v23000: 4 + 2 + 10 = 16 ints (CFG_INTS) and 2 pointers, with no padding
        // (the 4 ints before netName end at 32 and the 2 before commName at 48, both 8-aligned): 96 bytes.
        assertEquals(96, computed);
        assertEquals(computed, NcclNative.configSize());
        assertEquals(MarshallingTest.CONFIG_SIZE, NcclNative.configSize());
        assertEquals(16, NcclNative.CFG_INTS);
        // ncclSimInfo_t: size_t, 2 x unsigned int, float -> 20, padded to 24 (the stub checks what it receives)
        assertEquals(24, cLayoutSize(sizeT, uint, uint, 4));
    }

    // ---------------------------------------------------------------- versions

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "2804, 2.8.4", // before 2.9: X*1000 + Y*100 + Z
        "2000, 2.0.0",
        "2999, 2.9.99",
        "20900, 2.9.0", // from 2.9: X*10000 + Y*100 + Z
        "21903, 2.19.3",
        "22803, 2.28.3",
        "23007, 2.30.7",
        "30102, 3.1.2"})
    void versionString(int code, String expected) {
        assertEquals(expected, NcclLibrary.versionString(code));
    }

    @Test
    void anOldStyleVersionCodeFromTheLibraryIsDecoded() {
        assertEquals(0, NcclNative.setenv("NCCL_STUB_VERSION", "2804", 1));
        NcclLibrary lib = NcclLibrary.reload(StubNccl.full().toString());
        assertEquals(2804, lib.versionCode());
        assertEquals("2.8.4", lib.version());
        assertTrue(lib.report().startsWith("NCCL 2.8.4 (version code 2804)\n"), lib.report());
    }

    // ---------------------------------------------------------------- the full stub, loaded

    @Test
    void fullStubIsReportedCompletely() {
        StubNccl.useFull();
        NcclLibrary lib = NcclLibrary.load();
        String path = StubNccl.full().toAbsolutePath().toString();
        assertSame(lib, NcclLibrary.load(), "loaded once");
        assertEquals(22803, lib.versionCode());
        assertEquals("2.28.3", lib.version());
        assertEquals(path, lib.path());
        assertEquals(Set.of(), lib.missing());
        for (NcclFunction f : NcclFunction.values()) {
            assertTrue(lib.has(f), f.name());
        }
        assertTrue(NcclLibrary.isAvailable());
        assertNull(NcclLibrary.unavailabilityCause());
        NcclLibrary.ensureAvailability();
        assertEquals(1, NcclNative.isLoaded());
        assertEquals("NCCL 2.28.3 at " + path, lib.toString());

        String r = lib.report();
        String[] lines = r.split("\n");
        assertEquals(6, lines.length, r);
        assertEquals("NCCL 2.28.3 (version code 22803)", lines[0]);
        assertEquals("library: " + path, lines[1]);
        assertTrue(lines[2].startsWith("chosen by: " + lib.source() + " (" + lib.requestedName() + ")"), lines[2]);
        assertEquals("entry points: 48 of 48 present", lines[3]);
        StringBuilder all = new StringBuilder("present:");
        for (NcclFunction f : NcclFunction.values()) {
            all.append(' ').append(f.name());
        }
        assertEquals(all.toString(), lines[4]);
        assertEquals("missing: none", lines[5]);
    }

    @Test
    void theFullStubReportingTwoThirtySevenIsTheSameStub() {
        NcclLibrary lib = NcclLibrary.reload(StubNccl.latest().toString());
        assertEquals(23007, lib.versionCode());
        assertEquals("2.30.7", lib.version());
        assertEquals(Set.of(), lib.missing());
    }

    // ---------------------------------------------------------------- since-versions

    /**
     * The first release of each entry point added since 2.28, from the release tags of NVIDIA/nccl
     * (src/nccl.h.in of v2.28.3-1, v2.28.7-1, v2.29.2-1, v2.29.7-1): where a patch release added it, major.minor
     * alone would claim that 2.28.3 has ncclCommRevoke or 2.29.2 has ncclCommSuspend, which they lack.
     */
    @ParameterizedTest(name = "{0} since {1}")
    @CsvSource({
        "ncclCommRevoke, 2.28.7",
        "ncclCommSuspend, 2.29.7", "ncclCommResume, 2.29.7", "ncclCommMemStats, 2.29.7",
        "ncclCommGrow, 2.29.2", "ncclCommGetUniqueId, 2.29.2", "ncclWinGetUserPtr, 2.29.2",
        "ncclPutSignal, 2.29.2", "ncclSignal, 2.29.2", "ncclWaitSignal, 2.29.2",
        "ncclAlltoAll, 2.28.3", "ncclGather, 2.28.3", "ncclScatter, 2.28.3"})
    void entryPointsAddedSince228CarryTheirExactFirstRelease(NcclFunction f, String since) {
        assertEquals(since, f.since());
    }

    @Test
    void aMissingEntryPointIsExplainedWithItsPatchRelease() {
        // A 2.28.3 library lacks ncclCommRevoke: the message must not suggest that 2.28 is enough.
        NcclLibrary lib = NcclLibrary.reload(StubNccl.full().toString());
        String m = lib.missing(NcclFunction.ncclCommRevoke).getMessage();
        assertTrue(m.contains("the loaded NCCL 2.28.3 ("), m);
        assertTrue(m.contains("it first appeared in NCCL 2.28.7)"), m);
        m = lib.missing(NcclFunction.ncclCommSuspend).getMessage();
        assertTrue(m.contains("it first appeared in NCCL 2.29.7)"), m);
    }

    @Test
    void reloadByNameRecordsTheNameAndTheTestSource() {
        String name = StubNccl.full().toString();
        NcclLibrary lib = NcclLibrary.reload(name);
        assertEquals(name, lib.requestedName());
        assertEquals("test", lib.source());
        assertTrue(lib.report().contains("chosen by: test (" + name + ")\n"), lib.report());
    }

    @Test
    void reloadWithoutANameFollowsTheSystemProperty() {
        System.setProperty(NcclLibrary.LIBRARY_PROPERTY, "  " + StubNccl.old() + "\t");
        NcclLibrary lib = NcclLibrary.reload(null);
        assertEquals("system property nccl4j.library", lib.source());
        assertEquals(StubNccl.old().toString(), lib.requestedName(), "whitespace stripped");
        assertEquals("2.19.3", lib.version());
    }

    // ---------------------------------------------------------------- failures

    @Test
    void aLibraryWithoutNcclSymbolsIsRefused() {
        Path notNccl = StubNccl.notNccl();
        NcclUnavailableException e = assertThrows(NcclUnavailableException.class,
                () -> NcclLibrary.reload(notNccl.toString()));
        String m = e.getMessage();
        assertTrue(m.contains("not an NCCL library"), m);
        assertTrue(m.contains(notNccl.toString()), m);
        assertTrue(m.contains("does not export ncclGetVersion"), m);
        assertEquals(0, NcclNative.isLoaded(), "nothing stays open");
        assertNull(NcclNative.loadedPath());
    }

    @Test
    void aNonexistentPathIsNamedWithItsSourceAndTheFix() {
        String missing = "/nonexistent/nccl4j-test/libnccl.so.2";
        NcclUnavailableException e = assertThrows(NcclUnavailableException.class, () -> NcclLibrary.reload(missing));
        String m = e.getMessage();
        assertTrue(m.startsWith("No NCCL library could be loaded: tried " + missing + " from the test: "), m);
        assertTrue(m.contains("No such file or directory"), m); // dlerror()'s reason
        assertTrue(m.contains("-Dnccl4j.library=/path/to/libnccl.so.2"), m);
        assertTrue(m.contains("NCCL4J_LIBRARY=/path/to/libnccl.so.2"), m);
        assertTrue(m.contains("Install NCCL 2.19 or newer"), m);
    }

    @Test
    void anEmptyNameIsRefused() {
        NcclUnavailableException e = assertThrows(NcclUnavailableException.class, () -> NcclLibrary.reload(""));
        assertTrue(e.getMessage().contains("empty library name"), e.getMessage());
    }

    @Test
    void aFailingGetVersionIsRefusedAndClosesTheLibrary() {
        assertEquals(0, NcclNative.setenv("NCCL_STUB_RESULT_ncclGetVersion", "3", 1));
        NcclUnavailableException e = assertThrows(NcclUnavailableException.class,
                () -> NcclLibrary.reload(StubNccl.full().toString()));
        String m = e.getMessage();
        assertTrue(m.contains(StubNccl.full().toAbsolutePath() + " (from the test) failed ncclGetVersion with status 3"), m);
        assertEquals(0, NcclNative.isLoaded());
    }

    @Test
    void withNoLibraryLoadedEveryCallReturnsNotLoaded() {
        String missing = "/nonexistent/nccl4j-test/libnccl.so.2";
        assertThrows(NcclUnavailableException.class, () -> NcclLibrary.reload(missing));
        assertEquals(0, NcclNative.isLoaded());
        for (NcclFunction f : NcclFunction.values()) {
            assertEquals(0, NcclNative.hasFunction(f.ordinal()), f.name());
            if (NcclCalls.returnsStatus(f)) {
                assertEquals(NcclNative.NOT_LOADED, NcclCalls.invoke(f, NcclCalls.FAKE_COMM), f.name());
            }
        }
        assertEquals(NcclNative.NOT_LOADED, NcclCalls.invokePreMulSumHost(NcclCalls.FAKE_COMM));
        float[] t = {-2f};
        assertEquals(NcclNative.NOT_LOADED, NcclNative.ncclGroupSimulateEnd(t));
        assertEquals(-2f, t[0]);
        // the two string entry points answer null when the library lacks them (here: has nothing)
        assertNull(NcclNative.ncclGetErrorString(0));
        assertNull(NcclNative.ncclGetLastError(0));

        // the remembered failure is what every availability query reports
        assertFalse(NcclLibrary.isAvailable());
        Throwable cause = NcclLibrary.unavailabilityCause();
        assertNotNull(cause);
        assertTrue(cause.getMessage().contains(missing), cause.getMessage());
        NcclUnavailableException again = assertThrows(NcclUnavailableException.class, NcclLibrary::load);
        assertTrue(again.getMessage().contains(missing), again.getMessage());
        assertThrows(NcclUnavailableException.class, NcclLibrary::ensureAvailability);
        NcclUnavailableException linked = assertThrows(NcclUnavailableException.class,
                () -> NcclLibrary.checkLinked(NcclNative.NOT_LOADED, NcclFunction.ncclAllReduce));
        assertTrue(linked.getMessage().contains(missing), linked.getMessage());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"ncclGetUniqueId", "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitAll",
        "ncclCommInitRankScalable"})
    void aCallThatInitializesNcclMarksItInitializedUntilTheLibraryCloses(String function) {
        StubNccl.reloadFull();
        assertEquals(0, NcclNative.ncclInitialized(), "a library just opened");
        assertEquals(0, NcclNative.ncclGetVersion(new int[1]));
        assertEquals(0, NcclNative.ncclCommGetAsyncError(NcclCalls.FAKE_COMM, new int[1]));
        assertEquals(0, NcclNative.ncclInitialized(), "ncclGetVersion and ncclCommGetAsyncError initialize nothing");

        byte[] id = new byte[NcclNative.UNIQUE_ID_BYTES];
        int[] config = new int[NcclNative.CFG_INTS];
        java.util.Arrays.fill(config, NcclNative.CONFIG_UNDEF_INT);
        long[] comm = new long[1];
        int status = switch (function) {
            case "ncclGetUniqueId" -> NcclNative.ncclGetUniqueId(id);
            case "ncclCommInitRank" -> NcclNative.ncclCommInitRank(comm, 2, id, 0);
            case "ncclCommInitRankConfig" -> NcclNative.ncclCommInitRankConfig(comm, 2, id, 0, config, null, null);
            case "ncclCommInitAll" -> NcclNative.ncclCommInitAll(new long[1], 1, new int[] {0});
            case "ncclCommInitRankScalable" ->
                    NcclNative.ncclCommInitRankScalable(comm, 2, 0, 1, id, config, null, null);
            default -> throw new IllegalArgumentException(function);
        };
        assertEquals(0, status, function);
        assertEquals(1, NcclNative.ncclInitialized(), function + " initializes NCCL");

        NcclNative.close();
        assertEquals(0, NcclNative.ncclInitialized(), "closing the library forgets it");
    }

    @Test
    void anInitEntryPointTheLibraryLacksInitializesNothing() {
        StubNccl.use(StubNccl.old());
        assertFalse(NcclLibrary.load().has(NcclFunction.ncclCommInitRankScalable), "the 2.19 look-alike lacks it");
        int[] config = new int[NcclNative.CFG_INTS];
        assertEquals(NcclNative.MISSING_SYMBOL, NcclNative.ncclCommInitRankScalable(new long[1], 2, 0, 1,
                new byte[NcclNative.UNIQUE_ID_BYTES], config, null, null));
        assertEquals(0, NcclNative.ncclInitialized());
        NcclNative.close();
        assertEquals(NcclNative.NOT_LOADED, NcclNative.ncclGetUniqueId(new byte[NcclNative.UNIQUE_ID_BYTES]));
        assertEquals(0, NcclNative.ncclInitialized(), "no library: nothing reached NCCL");
    }

    @Test
    void closeThenReloadRestoresEveryEntryPoint() {
        StubNccl.useFull();
        NcclNative.close();
        assertEquals(0, NcclNative.isLoaded());
        assertEquals(NcclNative.NOT_LOADED, NcclNative.ncclAllReduce(1, 2, 3, 7, 0, 4, 5));
        NcclLibrary lib = NcclLibrary.reload(StubNccl.full().toString());
        assertEquals(Set.of(), lib.missing());
        assertEquals(EnumSet.allOf(NcclFunction.class).size(), NcclNative.functionCount());
        assertEquals(0, NcclNative.ncclAllReduce(1, 2, 3, 7, 0, 4, 5));
    }
}
