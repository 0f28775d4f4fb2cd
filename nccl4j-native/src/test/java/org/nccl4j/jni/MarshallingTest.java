package org.nccl4j.jni;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.nccl4j.jni.StubNccl.hex;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.HexFormat;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Argument marshalling of every entry point against the full stub: each argument gets a distinct,
 * recognizable value, and the stub's record of what it received is compared with what was passed (the whole
 * record, so a missing or extra argument fails too); out-parameters are compared with what the stub wrote.
 *
 * <p>Each test names the entry points it covers with {@link Covers}; {@link #everyEntryPointIsCovered()}
 * fails when one of {@link NcclFunction} has no test here.
 */
class MarshallingTest {
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.METHOD)
    @interface Covers {
        NcclFunction[] value();
    }

    // ncclDataType_t and ncclRedOp_t, as nccl.h numbers them
    static final String[] DATATYPES = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64",
        "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
    static final int INT8 = 0, UINT8 = 1, INT32 = 2, UINT32 = 3, INT64 = 4, UINT64 = 5, FLOAT16 = 6, FLOAT32 = 7,
            FLOAT64 = 8, BFLOAT16 = 9, FP8E4M3 = 10, FP8E5M2 = 11;
    static final String[] OPS = {"ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"};
    static final int SUM = 0, PROD = 1, MAX = 2, MIN = 3, AVG = 4;
    // ncclScalarResidence_t
    static final int SCALAR_DEVICE = 0, SCALAR_HOST_IMMEDIATE = 1;

    // Addresses: distinct, above 2^32, one with the sign bit set (printed by the stub as unsigned hex).
    static final long SEND = 0x7f00_1234_5678L;
    static final long RECV = 0x7f00_8765_4320L;
    static final long COMM = 0x5555_0000_1000L;
    static final long STREAM = 0x7f11_2233_4450L;
    static final long HIGH = 0xffff_8000_dead_beefL;
    // size_t counts above 2^32, and the largest size_t
    static final long BIG = 0x1_2345_6789L;
    static final long SIZE_MAX = -1L;

    /** The stub's register handles, windows and allocations are base + its call counter. */
    static final long HANDLE_BASE = 0xB000_0000L, WINDOW_BASE = 0xC000_0000L, MEM_BASE = 0xA000_0000L;

    private StubNccl stub;

    @BeforeEach
    void loadFullStub() {
        stub = StubNccl.useFull();
    }

    // ---------------------------------------------------------------- helpers

    /** Asserts that the stub's record of the last call of {@code fn} is exactly these key/value pairs. */
    private void assertArgs(String fn, Map<String, String> expected) {
        assertEquals(expected, stub.last(fn), "arguments of " + fn + " as the stub received them");
    }

    private static Map<String, String> args(Object... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], String.valueOf(kv[i + 1]));
        }
        return m;
    }

    private static Map<String, String> with(Map<String, String> a, Map<String, String> b) {
        Map<String, String> m = new LinkedHashMap<>(a);
        m.putAll(b);
        return m;
    }

    /** 128 distinct id bytes (37 is odd, so i*37 is a permutation of 0..255 mod 256). */
    static byte[] uniqueId(int salt) {
        byte[] id = new byte[NcclNative.UNIQUE_ID_BYTES];
        for (int i = 0; i < id.length; i++) {
            id[i] = (byte) (i * 37 + salt);
        }
        return id;
    }

    static String hexOf(byte[] bytes, int from, int to) {
        return HexFormat.of().formatHex(bytes, from, to);
    }

    /** The stub's names of the config's int fields, indexed by NcclNative.CFG_*. */
    static final String[] CFG_NAMES = new String[NcclNative.CFG_INTS];

    static {
        CFG_NAMES[NcclNative.CFG_BLOCKING] = "blocking";
        CFG_NAMES[NcclNative.CFG_CGA_CLUSTER_SIZE] = "cgaClusterSize";
        CFG_NAMES[NcclNative.CFG_MIN_CTAS] = "minCTAs";
        CFG_NAMES[NcclNative.CFG_MAX_CTAS] = "maxCTAs";
        CFG_NAMES[NcclNative.CFG_SPLIT_SHARE] = "splitShare";
        CFG_NAMES[NcclNative.CFG_TRAFFIC_CLASS] = "trafficClass";
        CFG_NAMES[NcclNative.CFG_COLLNET_ENABLE] = "collnetEnable";
        CFG_NAMES[NcclNative.CFG_CTA_POLICY] = "CTAPolicy";
        CFG_NAMES[NcclNative.CFG_SHRINK_SHARE] = "shrinkShare";
        CFG_NAMES[NcclNative.CFG_NVLS_CTAS] = "nvlsCTAs";
        CFG_NAMES[NcclNative.CFG_N_CHANNELS_PER_NET_PEER] = "nChannelsPerNetPeer";
        CFG_NAMES[NcclNative.CFG_NVLINK_CENTRIC_SCHED] = "nvlinkCentricSched";
        CFG_NAMES[NcclNative.CFG_GRAPH_USAGE_MODE] = "graphUsageMode";
        CFG_NAMES[NcclNative.CFG_NUM_RMA_CTX] = "numRmaCtx";
        CFG_NAMES[NcclNative.CFG_MAX_P2P_PEERS] = "maxP2pPeers";
        CFG_NAMES[NcclNative.CFG_GRAPH_STREAM_ORDERING] = "graphStreamOrdering";
    }

    /** sizeof(ncclConfig_t) of NCCL 2.30.7 as laid out on LP64 (see LoaderTest#configSizeIsTheCLayout). */
    static final int CONFIG_SIZE = 96;
    /** The config's version field: NCCL_VERSION(2,30,7). */
    static final int CONFIG_VERSION = 23007;

    /** 16 distinct ints, including NCCL_CONFIG_UNDEF_INT, INT_MAX and negatives; {@code salt} varies them per call. */
    static int[] config(int salt) {
        int[] c = new int[NcclNative.CFG_INTS];
        for (int i = 0; i < c.length; i++) {
            c[i] = (i % 2 == 0 ? 1 : -1) * (salt * 1000 + (i + 1) * 11);
        }
        c[(salt + 3) % c.length] = NcclNative.CONFIG_UNDEF_INT;
        c[(salt + 11) % c.length] = Integer.MAX_VALUE;
        assertEquals(c.length, Arrays.stream(c).distinct().count(), "config values must be distinct");
        return c;
    }

    /** What the stub records for a config built by the shim from {@code ints} and the two strings. */
    static Map<String, String> configArgs(int[] ints, String netName, String commName) {
        Map<String, String> m = args("config.size", CONFIG_SIZE, "config.magic", "0xcafebeef",
                "config.version", CONFIG_VERSION);
        for (int i = 0; i < ints.length; i++) {
            m.put(CFG_NAMES[i], Integer.toString(ints[i]));
        }
        m.put("netName", netName == null ? "(null)" : netName);
        m.put("commName", commName == null ? "(null)" : commName);
        return m;
    }

    static final Map<String, String> NULL_CONFIG = Map.of("config", "null");

    private static int count(long comm) {
        int[] v = {-99};
        assertEquals(0, NcclNative.ncclCommCount(comm, v));
        return v[0];
    }

    private static int rank(long comm) {
        int[] v = {-99};
        assertEquals(0, NcclNative.ncclCommUserRank(comm, v));
        return v[0];
    }

    private static int device(long comm) {
        int[] v = {-99};
        assertEquals(0, NcclNative.ncclCommCuDevice(comm, v));
        return v[0];
    }

    /** Asserts that {@code comm} is a communicator the stub made, with this size, rank and device. */
    private static void assertComm(long comm, int nranks, int rank, int device) {
        assertNotEquals(0L, comm, "the stub returned no communicator");
        assertEquals(nranks, count(comm), "nranks of " + hex(comm));
        assertEquals(rank, rank(comm), "rank of " + hex(comm));
        assertEquals(device, device(comm), "device of " + hex(comm));
    }

    /**
     * The stub's call counter: the next handle, window, allocation or operator it hands out is derived from the
     * value returned here (one registration is spent to read it).
     */
    private static long nextCounter() {
        long[] h = {0};
        assertEquals(0, NcclNative.ncclCommRegister(COMM, SEND, 1, h));
        long c = h[0] - HANDLE_BASE;
        assertTrue(c >= 0 && c < (1L << 31), "register handle " + hex(h[0]) + " is not the stub's base + counter");
        return c + 1;
    }

    private static void assertAddress(String value) {
        assertTrue(value.matches("0x[0-9a-f]+") && !value.equals("0x0"), "expected a non-null address, got " + value);
    }

    // ---------------------------------------------------------------- coverage guard

    @Test
    void everyEntryPointIsCovered() {
        Set<NcclFunction> covered = EnumSet.noneOf(NcclFunction.class);
        for (Method m : MarshallingTest.class.getDeclaredMethods()) {
            Covers c = m.getAnnotation(Covers.class);
            if (c != null) {
                covered.addAll(Arrays.asList(c.value()));
            }
        }
        Set<NcclFunction> uncovered = EnumSet.allOf(NcclFunction.class);
        uncovered.removeAll(covered);
        assertEquals(Set.of(), uncovered, "entry points without a marshalling test");
    }

    // ---------------------------------------------------------------- version, ids

    @Test
    @Covers(NcclFunction.ncclGetVersion)
    void getVersion() {
        int[] v = {-1};
        assertEquals(0, NcclNative.ncclGetVersion(v));
        assertEquals(22803, v[0]);
        assertArgs("ncclGetVersion", Map.of());
        assertEquals(0, NcclNative.setenv("NCCL_STUB_VERSION", "2804", 1));
        try {
            assertEquals(0, NcclNative.ncclGetVersion(v));
            assertEquals(2804, v[0]);
        } finally {
            NcclNative.unsetenv("NCCL_STUB_VERSION");
        }
    }

    @Test
    @Covers(NcclFunction.ncclGetUniqueId)
    void getUniqueId() {
        assertEquals(0, NcclNative.setenv("NCCL_STUB_ID_SEED", "3", 1));
        byte[] id = new byte[NcclNative.UNIQUE_ID_BYTES];
        assertEquals(0, NcclNative.ncclGetUniqueId(id));
        byte[] expected = new byte[128];
        for (int i = 0; i < 128; i++) {
            expected[i] = (byte) (i * 7 + 3);
        }
        assertEquals(hexOf(expected, 0, 128), hexOf(id, 0, 128));
        Map<String, String> a = stub.last("ncclGetUniqueId");
        assertEquals(Set.of("id"), a.keySet());
        assertAddress(a.get("id"));
    }

    // ---------------------------------------------------------------- communicators

    @Test
    @Covers({NcclFunction.ncclCommInitRank, NcclFunction.ncclCommCount, NcclFunction.ncclCommUserRank,
        NcclFunction.ncclCommCuDevice})
    void commInitRank() {
        byte[] id = uniqueId(11);
        long[] comm = {0};
        assertEquals(0, NcclNative.ncclCommInitRank(comm, 0x10203, id, 0x405));
        assertArgs("ncclCommInitRank", args("nranks", 0x10203, "rank", 0x405, "id", hexOf(id, 0, 128)));
        assertComm(comm[0], 0x10203, 0x405, 0);

        assertEquals(0, NcclNative.ncclCommInitRank(comm, Integer.MAX_VALUE, uniqueId(200), Integer.MIN_VALUE));
        assertArgs("ncclCommInitRank", args("nranks", Integer.MAX_VALUE, "rank", Integer.MIN_VALUE,
                "id", hexOf(uniqueId(200), 0, 128)));
        assertComm(comm[0], Integer.MAX_VALUE, Integer.MIN_VALUE, 0);
    }

    @Test
    @Covers({NcclFunction.ncclCommCount, NcclFunction.ncclCommUserRank, NcclFunction.ncclCommCuDevice})
    void queriesReachTheStubWithTheHandle() {
        long bogus = 0x7f00_0bad_c0deL;
        int[] out = {-7};
        // the stub refuses a handle it did not make with ncclInvalidArgument (4) and leaves the out-value alone
        assertEquals(4, NcclNative.ncclCommCount(bogus, out));
        assertArgs("ncclCommCount", args("comm", hex(bogus)));
        assertEquals(4, NcclNative.ncclCommCuDevice(bogus, out));
        assertArgs("ncclCommCuDevice", args("comm", hex(bogus)));
        assertEquals(4, NcclNative.ncclCommUserRank(bogus, out));
        assertArgs("ncclCommUserRank", args("comm", hex(bogus)));
        assertEquals(-7, out[0]);
    }

    /** Ranks' threads make communicators at once (recover's rendezvous does): the stub knows every one it made. */
    @Test
    void communicatorsMadeByThreadsAtOnceAreEachKnown() throws Exception {
        int threads = 8;
        int each = 300;
        java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(threads);
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
        try {
            List<java.util.concurrent.Future<long[]>> made = new java.util.ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int rank = t;
                made.add(pool.submit(() -> {
                    start.await();
                    long[] comms = new long[each];
                    for (int i = 0; i < each; i++) {
                        comms[i] = NcclCalls.stubComm(threads, rank);
                    }
                    return comms;
                }));
            }
            for (int t = 0; t < threads; t++) {
                for (long comm : made.get(t).get(30, java.util.concurrent.TimeUnit.SECONDS)) {
                    assertEquals(t, rank(comm), "rank of a communicator made by thread " + t);
                    assertEquals(0, NcclNative.ncclCommDestroy(comm));
                    assertEquals(4, NcclNative.ncclCommUserRank(comm, new int[1]), "destroyed, then unknown");
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    @Covers(NcclFunction.ncclCommInitRankConfig)
    void commInitRankConfig() {
        byte[] id = uniqueId(5);
        int[] cfg = config(1);
        long[] comm = {0};
        assertEquals(0, NcclNative.ncclCommInitRankConfig(comm, 64, id, 63, cfg, "IB-rail0", "trainer/job-17"));
        assertArgs("ncclCommInitRankConfig", with(args("nranks", 64, "rank", 63, "id", hexOf(id, 0, 128)),
                configArgs(cfg, "IB-rail0", "trainer/job-17")));
        assertComm(comm[0], 64, 63, 0);

        assertEquals(0, NcclNative.ncclCommInitRankConfig(comm, 3, uniqueId(6), -1, null, "ignored", "ignored"));
        assertArgs("ncclCommInitRankConfig", with(args("nranks", 3, "rank", -1, "id", hexOf(uniqueId(6), 0, 128)),
                NULL_CONFIG));

        int[] undef = NcclCalls.undefConfig();
        assertEquals(0, NcclNative.ncclCommInitRankConfig(comm, 2, id, 1, undef, null, null));
        assertArgs("ncclCommInitRankConfig", with(args("nranks", 2, "rank", 1, "id", hexOf(id, 0, 128)),
                configArgs(undef, null, null)));
    }

    @Test
    @Covers(NcclFunction.ncclCommInitAll)
    void commInitAll() {
        long[] comms = new long[3];
        int[] devs = {7, -2, 123456};
        assertEquals(0, NcclNative.ncclCommInitAll(comms, 3, devs));
        assertArgs("ncclCommInitAll", args("ndev", 3, "devlist", "7,-2,123456"));
        assertEquals(3, Arrays.stream(comms).distinct().count(), "three distinct communicators");
        for (int i = 0; i < 3; i++) {
            assertComm(comms[i], 3, i, devs[i]);
        }

        long[] two = new long[2];
        assertEquals(0, NcclNative.ncclCommInitAll(two, 2, null));
        assertArgs("ncclCommInitAll", args("ndev", 2, "devlist", "null"));
        assertComm(two[0], 2, 0, 0);
        assertComm(two[1], 2, 1, 1);
    }

    @Test
    @Covers(NcclFunction.ncclCommInitRankScalable)
    void commInitRankScalable() {
        byte[] ids = new byte[3 * 128];
        for (int k = 0; k < 3; k++) {
            System.arraycopy(uniqueId(40 + k), 0, ids, k * 128, 128);
        }
        int[] cfg = config(2);
        long[] comm = {0};
        assertEquals(0, NcclNative.ncclCommInitRankScalable(comm, 4096, 4001, 3, ids, cfg, "Socket", "scalable-A"));
        assertArgs("ncclCommInitRankScalable", with(args("nranks", 4096, "rank", 4001, "nIds", 3,
                "firstId", hexOf(ids, 0, 128), "lastId", hexOf(ids, 256, 384)), configArgs(cfg, "Socket", "scalable-A")));
        assertComm(comm[0], 4096, 4001, 0);

        assertEquals(0, NcclNative.ncclCommInitRankScalable(comm, 2, 0, 1, uniqueId(9), null, null, null));
        assertArgs("ncclCommInitRankScalable", with(args("nranks", 2, "rank", 0, "nIds", 1,
                "firstId", hexOf(uniqueId(9), 0, 128), "lastId", hexOf(uniqueId(9), 0, 128)), NULL_CONFIG));
    }

    @Test
    @Covers({NcclFunction.ncclCommFinalize, NcclFunction.ncclCommDestroy, NcclFunction.ncclCommAbort})
    void finalizeDestroyAbort() {
        long a = NcclCalls.stubComm(2, 0);
        long b = NcclCalls.stubComm(2, 1);
        assertEquals(0, NcclNative.ncclCommFinalize(a));
        assertArgs("ncclCommFinalize", args("comm", hex(a)));
        assertEquals(2, count(a), "finalize leaves the communicator");
        assertEquals(0, NcclNative.ncclCommDestroy(a));
        assertArgs("ncclCommDestroy", args("comm", hex(a)));
        assertEquals(0, NcclNative.ncclCommAbort(b));
        assertArgs("ncclCommAbort", args("comm", hex(b)));
        // the stub freed exactly these two: it no longer knows them
        assertEquals(4, NcclNative.ncclCommCount(a, new int[1]));
        assertEquals(4, NcclNative.ncclCommCount(b, new int[1]));

        assertEquals(0, NcclNative.ncclCommFinalize(HIGH));
        assertArgs("ncclCommFinalize", args("comm", hex(HIGH)));
        assertEquals(0, NcclNative.ncclCommDestroy(HIGH));
        assertArgs("ncclCommDestroy", args("comm", "0xffff8000deadbeef"));
        assertEquals(0, NcclNative.ncclCommAbort(COMM));
        assertArgs("ncclCommAbort", args("comm", "0x555500001000"));
    }

    @Test
    @Covers(NcclFunction.ncclCommSplit)
    void commSplit() {
        long[] parent = new long[1];
        assertEquals(0, NcclNative.ncclCommInitAll(parent, 1, new int[] {5}));
        int[] cfg = config(3);
        long[] child = {0};
        assertEquals(0, NcclNative.ncclCommSplit(parent[0], 0x1234, -77, child, cfg, "NET-x", "split-child"));
        assertArgs("ncclCommSplit", with(args("comm", hex(parent[0]), "color", 0x1234, "key", -77),
                configArgs(cfg, "NET-x", "split-child")));
        assertComm(child[0], 1, 0, 5);

        // NCCL_SPLIT_NOCOLOR (-1): no communicator comes back
        long[] none = {0x1111L};
        assertEquals(0, NcclNative.ncclCommSplit(parent[0], -1, Integer.MIN_VALUE, none, null, null, null));
        assertArgs("ncclCommSplit", with(args("comm", hex(parent[0]), "color", -1, "key", Integer.MIN_VALUE),
                NULL_CONFIG));
        assertEquals(0L, none[0]);
    }

    @Test
    @Covers(NcclFunction.ncclCommShrink)
    void commShrink() {
        long parent = NcclCalls.stubComm(8, 2);
        int[] cfg = config(4);
        long[] child = {0};
        assertEquals(0, NcclNative.ncclCommShrink(parent, new int[] {6, 0, 3}, 3, child, cfg, "IB", "shrunk", 0x5a5a));
        assertArgs("ncclCommShrink", with(args("comm", hex(parent), "exclude", "6,0,3", "count", 3, "flags", 0x5a5a),
                configArgs(cfg, "IB", "shrunk")));
        assertComm(child[0], 5, 0, 0);

        assertEquals(0, NcclNative.ncclCommShrink(parent, null, 0, child, null, null, null, Integer.MIN_VALUE));
        assertArgs("ncclCommShrink", with(args("comm", hex(parent), "exclude", "", "count", 0,
                "flags", Integer.MIN_VALUE), NULL_CONFIG));
        assertComm(child[0], 8, 0, 0);
    }

    @Test
    @Covers(NcclFunction.ncclCommGetUniqueId)
    void commGetUniqueId() {
        byte[] id = new byte[128];
        assertEquals(0, NcclNative.ncclCommGetUniqueId(HIGH, id));
        assertArgs("ncclCommGetUniqueId", args("comm", hex(HIGH)));
        byte[] expected = new byte[128];
        for (int i = 0; i < 128; i++) {
            expected[i] = (byte) (255 - i);
        }
        assertArrayEquals(expected, id);
    }

    @Test
    @Covers(NcclFunction.ncclCommGrow)
    void commGrow() {
        long parent = NcclCalls.stubComm(4, 1);
        byte[] id = uniqueId(77);
        int[] cfg = config(5);
        long[] grown = {0};
        assertEquals(0, NcclNative.ncclCommGrow(parent, 12, id, 11, grown, cfg, "grow-net", "grown"));
        assertArgs("ncclCommGrow", with(args("comm", hex(parent), "nranks", 12, "rank", 11, "id", hexOf(id, 0, 128)),
                configArgs(cfg, "grow-net", "grown")));
        assertComm(grown[0], 12, 11, 0);

        // existing ranks pass no id (null) and rank -1
        assertEquals(0, NcclNative.ncclCommGrow(parent, 12, null, -1, grown, null, null, null));
        assertArgs("ncclCommGrow", with(args("comm", hex(parent), "nranks", 12, "rank", -1, "id", "null"), NULL_CONFIG));
        assertComm(grown[0], 12, 0, 0);
    }

    @Test
    @Covers(NcclFunction.ncclCommRevoke)
    void commRevoke() {
        assertEquals(0, NcclNative.ncclCommRevoke(COMM, Integer.MIN_VALUE));
        assertArgs("ncclCommRevoke", args("comm", hex(COMM), "flags", Integer.MIN_VALUE));
        assertEquals(0, NcclNative.ncclCommRevoke(HIGH, 0x7));
        assertArgs("ncclCommRevoke", args("comm", hex(HIGH), "flags", 7));
    }

    @Test
    @Covers(NcclFunction.ncclCommGetAsyncError)
    void commGetAsyncError() {
        int[] err = {-1};
        assertEquals(0, NcclNative.ncclCommGetAsyncError(COMM, err));
        assertEquals(0, err[0], "ncclSuccess when nothing is pending");
        assertArgs("ncclCommGetAsyncError", args("comm", hex(COMM)));
        stub.asyncError(7); // ncclInProgress
        assertEquals(0, NcclNative.ncclCommGetAsyncError(HIGH, err));
        assertEquals(7, err[0]);
        assertArgs("ncclCommGetAsyncError", args("comm", hex(HIGH)));
    }

    @Test
    @Covers({NcclFunction.ncclGetLastError, NcclFunction.ncclGetErrorString})
    void errorStrings() {
        assertEquals(0, NcclNative.ncclAllReduce(SEND, RECV, 1, FLOAT32, SUM, COMM, STREAM));
        assertEquals("stub last error after ncclAllReduce", NcclNative.ncclGetLastError(COMM));
        assertArgs("ncclGetLastError", args("comm", hex(COMM)));
        assertEquals("stub last error after ncclGetLastError", NcclNative.ncclGetLastError(0));
        assertArgs("ncclGetLastError", args("comm", "0x0"));
        for (int code : new int[] {0, 3, 8, 9, 1234, -5, Integer.MIN_VALUE}) {
            assertEquals("stub error string " + code, NcclNative.ncclGetErrorString(code));
        }
    }

    // ---------------------------------------------------------------- groups

    @Test
    @Covers({NcclFunction.ncclGroupStart, NcclFunction.ncclGroupEnd})
    void groupStartEnd() {
        assertEquals(0, NcclNative.ncclGroupStart());
        assertEquals(0, NcclNative.ncclSend(SEND, 1, INT8, 1, COMM, STREAM));
        assertEquals(0, NcclNative.ncclRecv(RECV, 1, INT8, 1, COMM, STREAM));
        assertEquals(0, NcclNative.ncclGroupEnd());
        List<String> names = stub.calls().stream().map(l -> l.split(" ")[0]).toList();
        assertEquals(List.of("ncclGroupStart", "ncclSend", "ncclRecv", "ncclGroupEnd"), names);
        assertArgs("ncclGroupStart", Map.of());
        assertArgs("ncclGroupEnd", Map.of());
    }

    @Test
    @Covers(NcclFunction.ncclGroupSimulateEnd)
    void groupSimulateEnd() {
        float[] t = {-3f};
        assertEquals(0, NcclNative.ncclGroupSimulateEnd(t));
        assertEquals(42.5f, t[0]);
        // ncclSimInfo_t as the shim fills it: sizeof = 8 + 4 + 4 + 4, padded to 24; NCCL_SIM_INFO_INITIALIZER's magic and version
        assertArgs("ncclGroupSimulateEnd", args("size", 24, "magic", "0x74685283", "version", 22200));
        assertEquals(0, NcclNative.ncclGroupSimulateEnd(null), "a null out-array is allowed");
    }

    // ---------------------------------------------------------------- collectives

    static Stream<Arguments> datatypesAndOps() {
        return IntStream.range(0, DATATYPES.length).boxed()
                .flatMap(dt -> IntStream.range(0, OPS.length).mapToObj(op -> Arguments.of(dt, DATATYPES[dt], op, OPS[op])));
    }

    @ParameterizedTest(name = "{1} {3}")
    @MethodSource("datatypesAndOps")
    @Covers(NcclFunction.ncclAllReduce)
    void allReduceEveryDatatypeAndOp(int dt, String dtName, int op, String opName) {
        long count = BIG + dt * 1000L + op;
        assertEquals(0, NcclNative.ncclAllReduce(SEND, RECV, count, dt, op, COMM, STREAM));
        assertArgs("ncclAllReduce", args("sendbuff", hex(SEND), "recvbuff", hex(RECV), "count", count,
                "datatype", dt, "op", op, "comm", hex(COMM), "stream", hex(STREAM)));
    }

    @Test
    @Covers(NcclFunction.ncclAllReduce)
    void allReduceExtremes() {
        // SIZE_MAX, a user-defined (premulsum) op id, a null stream (the legacy default stream)
        assertEquals(0, NcclNative.ncclAllReduce(HIGH, HIGH + 8, SIZE_MAX, UINT64, 5, -1L, 0));
        assertArgs("ncclAllReduce", args("sendbuff", "0xffff8000deadbeef", "recvbuff", "0xffff8000deadbef7",
                "count", "18446744073709551615", "datatype", UINT64, "op", 5, "comm", "0xffffffffffffffff",
                "stream", "0x0"));
        assertEquals(0, NcclNative.ncclAllReduce(0, 0, 0, -1, Integer.MIN_VALUE, 0, 0));
        assertArgs("ncclAllReduce", args("sendbuff", "0x0", "recvbuff", "0x0", "count", 0, "datatype", -1,
                "op", Integer.MIN_VALUE, "comm", "0x0", "stream", "0x0"));
    }

    @Test
    @Covers(NcclFunction.ncclBroadcast)
    void broadcast() {
        assertEquals(0, NcclNative.ncclBroadcast(SEND, RECV, BIG, BFLOAT16, 1023, COMM, STREAM));
        assertArgs("ncclBroadcast", args("sendbuff", hex(SEND), "recvbuff", hex(RECV), "count", 4886718345L,
                "datatype", BFLOAT16, "root", 1023, "comm", hex(COMM), "stream", hex(STREAM)));
    }

    @Test
    @Covers(NcclFunction.ncclReduce)
    void reduce() {
        assertEquals(0, NcclNative.ncclReduce(RECV, SEND, BIG + 1, FP8E4M3, AVG, Integer.MAX_VALUE, HIGH, COMM));
        assertArgs("ncclReduce", args("sendbuff", hex(RECV), "recvbuff", hex(SEND), "count", 4886718346L,
                "datatype", FP8E4M3, "op", AVG, "root", Integer.MAX_VALUE, "comm", hex(HIGH), "stream", hex(COMM)));
    }

    @Test
    @Covers(NcclFunction.ncclAllGather)
    void allGather() {
        assertEquals(0, NcclNative.ncclAllGather(SEND, RECV, BIG + 2, FP8E5M2, COMM, STREAM));
        assertArgs("ncclAllGather", args("sendbuff", hex(SEND), "recvbuff", hex(RECV), "count", 4886718347L,
                "datatype", FP8E5M2, "comm", hex(COMM), "stream", hex(STREAM)));
    }

    @Test
    @Covers(NcclFunction.ncclReduceScatter)
    void reduceScatter() {
        assertEquals(0, NcclNative.ncclReduceScatter(SEND, RECV, BIG + 3, FLOAT16, MIN, COMM, STREAM));
        assertArgs("ncclReduceScatter", args("sendbuff", hex(SEND), "recvbuff", hex(RECV), "count", 4886718348L,
                "datatype", FLOAT16, "op", MIN, "comm", hex(COMM), "stream", hex(STREAM)));
    }

    @Test
    @Covers(NcclFunction.ncclAlltoAll)
    void alltoAll() {
        assertEquals(0, NcclNative.ncclAlltoAll(SEND, RECV, BIG + 4, UINT32, COMM, STREAM));
        assertArgs("ncclAlltoAll", args("sendbuff", hex(SEND), "recvbuff", hex(RECV), "count", 4886718349L,
                "datatype", UINT32, "comm", hex(COMM), "stream", hex(STREAM)));
    }

    @Test
    @Covers(NcclFunction.ncclGather)
    void gather() {
        assertEquals(0, NcclNative.ncclGather(SEND, RECV, BIG + 5, INT64, -3, COMM, STREAM));
        assertArgs("ncclGather", args("sendbuff", hex(SEND), "recvbuff", hex(RECV), "count", 4886718350L,
                "datatype", INT64, "root", -3, "comm", hex(COMM), "stream", hex(STREAM)));
    }

    @Test
    @Covers(NcclFunction.ncclScatter)
    void scatter() {
        assertEquals(0, NcclNative.ncclScatter(SEND, RECV, BIG + 6, UINT8, 65537, COMM, STREAM));
        assertArgs("ncclScatter", args("sendbuff", hex(SEND), "recvbuff", hex(RECV), "count", 4886718351L,
                "datatype", UINT8, "root", 65537, "comm", hex(COMM), "stream", hex(STREAM)));
    }

    @Test
    @Covers({NcclFunction.ncclSend, NcclFunction.ncclRecv})
    void sendRecv() {
        assertEquals(0, NcclNative.ncclSend(SEND, BIG + 7, INT32, 31, COMM, STREAM));
        assertArgs("ncclSend", args("sendbuff", hex(SEND), "count", 4886718352L, "datatype", INT32, "peer", 31,
                "comm", hex(COMM), "stream", hex(STREAM)));
        assertEquals(0, NcclNative.ncclRecv(RECV, BIG + 8, FLOAT64, -31, HIGH, STREAM));
        assertArgs("ncclRecv", args("recvbuff", hex(RECV), "count", 4886718353L, "datatype", FLOAT64, "peer", -31,
                "comm", hex(HIGH), "stream", hex(STREAM)));
    }

    // ---------------------------------------------------------------- reduction operators

    @Test
    @Covers({NcclFunction.ncclRedOpCreatePreMulSum, NcclFunction.ncclRedOpDestroy})
    void preMulSumWithDeviceScalar() {
        long c = nextCounter();
        int[] op = {-1};
        assertEquals(0, NcclNative.ncclRedOpCreatePreMulSum(op, SEND, FLOAT32, SCALAR_DEVICE, COMM));
        assertArgs("ncclRedOpCreatePreMulSum", args("scalar", hex(SEND), "datatype", FLOAT32,
                "residence", SCALAR_DEVICE, "comm", hex(COMM)));
        assertEquals(5 + (int) (c % 1000), op[0], "the stub's operator id");

        assertEquals(0, NcclNative.ncclRedOpDestroy(op[0], COMM));
        assertArgs("ncclRedOpDestroy", args("op", op[0], "comm", hex(COMM)));
        assertEquals(0, NcclNative.ncclRedOpDestroy(Integer.MIN_VALUE, HIGH));
        assertArgs("ncclRedOpDestroy", args("op", Integer.MIN_VALUE, "comm", hex(HIGH)));
    }

    static Stream<Arguments> hostScalars() {
        long junk = 0x5a5a_5a5a_0000_0000L; // high bytes a 2- or 4-byte type must not read
        return Stream.of(
                Arguments.of(FLOAT64, Double.doubleToRawLongBits(Math.PI), "0x400921fb54442d18"),
                Arguments.of(FLOAT32, junk | Float.floatToRawIntBits(0.25f), "0x3e800000"),
                Arguments.of(FLOAT16, junk | 0x3c00L, "0x3c00"), // 1.0 in half precision
                Arguments.of(BFLOAT16, junk | 0xbf80L, "0xbf80"), // -1.0 in bfloat16
                Arguments.of(INT32, junk | 0xffff_fffeL, "0xfffffffe"),
                Arguments.of(UINT32, junk | 0x8000_0001L, "0x80000001"),
                Arguments.of(INT64, Long.MIN_VALUE + 1, "0x8000000000000001"),
                Arguments.of(UINT64, -2L, "0xfffffffffffffffe"),
                Arguments.of(INT8, junk | 0x7fL, "0x7f"),
                Arguments.of(UINT8, junk | 0x80L, "0x80"),
                Arguments.of(FP8E4M3, junk | 0x38L, "0x38"),
                Arguments.of(FP8E5M2, junk | 0x3cL, "0x3c"));
    }

    @ParameterizedTest(name = "datatype {0}: {2}")
    @MethodSource("hostScalars")
    @Covers(NcclFunction.ncclRedOpCreatePreMulSum)
    void preMulSumWithHostImmediateScalar(int dt, long bits, String seenByNccl) {
        long c = nextCounter();
        int[] op = {-1};
        assertEquals(0, NcclNative.ncclRedOpCreatePreMulSumHost(op, bits, dt, HIGH));
        assertArgs("ncclRedOpCreatePreMulSum", args("scalar_bits", seenByNccl, "datatype", dt,
                "residence", SCALAR_HOST_IMMEDIATE, "comm", hex(HIGH)));
        assertEquals(5 + (int) (c % 1000), op[0]);
    }

    // ---------------------------------------------------------------- registration and memory

    @Test
    @Covers({NcclFunction.ncclCommRegister, NcclFunction.ncclCommDeregister})
    void registerDeregister() {
        long c = nextCounter();
        long[] handle = {0};
        assertEquals(0, NcclNative.ncclCommRegister(COMM, SEND, BIG, handle));
        assertArgs("ncclCommRegister", args("comm", hex(COMM), "buff", hex(SEND), "size", 4886718345L));
        assertEquals(HANDLE_BASE + c, handle[0]);
        assertEquals(0, NcclNative.ncclCommDeregister(COMM, handle[0]));
        assertArgs("ncclCommDeregister", args("comm", hex(COMM), "handle", hex(HANDLE_BASE + c)));
        assertEquals(0, NcclNative.ncclCommDeregister(HIGH, SEND));
        assertArgs("ncclCommDeregister", args("comm", hex(HIGH), "handle", hex(SEND)));
    }

    @Test
    @Covers({NcclFunction.ncclCommWindowRegister, NcclFunction.ncclCommWindowDeregister})
    void windowRegisterDeregister() {
        long c = nextCounter();
        long[] win = {0};
        assertEquals(0, NcclNative.ncclCommWindowRegister(COMM, RECV, SIZE_MAX, win, -3));
        assertArgs("ncclCommWindowRegister", args("comm", hex(COMM), "buff", hex(RECV),
                "size", "18446744073709551615", "flags", -3));
        assertEquals(WINDOW_BASE + c, win[0]);
        assertEquals(0, NcclNative.ncclCommWindowDeregister(COMM, win[0]));
        assertArgs("ncclCommWindowDeregister", args("comm", hex(COMM), "window", hex(WINDOW_BASE + c)));
    }

    @Test
    @Covers({NcclFunction.ncclMemAlloc, NcclFunction.ncclMemFree})
    void memAllocFree() {
        long c = nextCounter();
        long[] ptr = {0};
        assertEquals(0, NcclNative.ncclMemAlloc(ptr, (1L << 32) + 17));
        assertArgs("ncclMemAlloc", args("size", 4294967313L));
        assertEquals(MEM_BASE + c * 0x1000L, ptr[0]);
        assertEquals(0, NcclNative.ncclMemFree(ptr[0]));
        assertArgs("ncclMemFree", args("ptr", hex(MEM_BASE + c * 0x1000L)));
        assertEquals(0, NcclNative.ncclMemFree(HIGH));
        assertArgs("ncclMemFree", args("ptr", hex(HIGH)));
    }

    // ---------------------------------------------------------------- suspend/resume, statistics, windows, one-sided

    @Test
    @Covers({NcclFunction.ncclCommSuspend, NcclFunction.ncclCommResume})
    void suspendResume() {
        assertEquals(0, NcclNative.ncclCommSuspend(COMM, 0x10001));
        assertArgs("ncclCommSuspend", args("comm", hex(COMM), "flags", 0x10001));
        assertEquals(0, NcclNative.ncclCommResume(HIGH));
        assertArgs("ncclCommResume", args("comm", hex(HIGH)));
    }

    @Test
    @Covers(NcclFunction.ncclCommMemStats)
    void memStats() {
        // the stub answers stat * 1000 + 7; 2_000_000 gives a value above 2^31, which must not be truncated
        for (int stat : new int[] {0, 1, 2, 3, 4, 5, 2_000_000}) {
            long[] v = {-1};
            assertEquals(0, NcclNative.ncclCommMemStats(COMM, stat, v));
            assertArgs("ncclCommMemStats", args("comm", hex(COMM), "stat", stat));
            assertEquals(stat * 1000L + 7, v[0], "stat " + stat);
        }
    }

    @Test
    @Covers(NcclFunction.ncclWinGetUserPtr)
    void winGetUserPtr() {
        long[] p = {0};
        assertEquals(0, NcclNative.ncclWinGetUserPtr(COMM, WINDOW_BASE + 42, p));
        assertArgs("ncclWinGetUserPtr", args("comm", hex(COMM), "window", "0xc000002a"));
        assertEquals(0xD000_0000L, p[0], "a pointer above 2^31 comes back without sign extension");
    }

    @Test
    @Covers(NcclFunction.ncclPutSignal)
    void putSignal() {
        assertEquals(0, NcclNative.ncclPutSignal(SEND, BIG, FLOAT64, 7, WINDOW_BASE + 1, (1L << 33) + 64, 3, 2, -1,
                COMM, STREAM));
        // flags is unsigned int in NCCL: -1 arrives as UINT_MAX
        assertArgs("ncclPutSignal", args("localbuff", hex(SEND), "count", 4886718345L, "datatype", FLOAT64,
                "peer", 7, "peerWin", "0xc0000001", "offset", 8589934656L, "sigIdx", 3, "ctx", 2,
                "flags", 4294967295L, "comm", hex(COMM), "stream", hex(STREAM)));
    }

    @Test
    @Covers(NcclFunction.ncclSignal)
    void signal() {
        assertEquals(0, NcclNative.ncclSignal(9, -4, 1 << 20, 0x8000_0000, HIGH, STREAM));
        assertArgs("ncclSignal", args("peer", 9, "sigIdx", -4, "ctx", 1048576, "flags", 2147483648L,
                "comm", hex(HIGH), "stream", hex(STREAM)));
    }

    @Test
    @Covers(NcclFunction.ncclWaitSignal)
    void waitSignal() {
        int[] descs = {
            1, 2, 3, 4,
            100, -1, 0, 7,
            Integer.MAX_VALUE, 5, Integer.MIN_VALUE, 6};
        assertEquals(0, NcclNative.ncclWaitSignal(3, descs, COMM, STREAM));
        assertArgs("ncclWaitSignal", args("nDesc", 3, "descs", "1/2/3/4,100/-1/0/7,2147483647/5/-2147483648/6",
                "comm", hex(COMM), "stream", hex(STREAM)));
        assertEquals(0, NcclNative.ncclWaitSignal(0, null, 0, 0));
        assertArgs("ncclWaitSignal", args("nDesc", 0, "descs", "", "comm", "0x0", "stream", "0x0"));
    }

    /** Sanity of the helpers themselves: the 16 config names are distinct and all set. */
    @Test
    void configNamesAreComplete() {
        assertEquals(NcclNative.CFG_INTS, new HashSet<>(Arrays.asList(CFG_NAMES)).size());
        assertTrue(Arrays.stream(CFG_NAMES).allMatch(n -> n != null));
    }
}
