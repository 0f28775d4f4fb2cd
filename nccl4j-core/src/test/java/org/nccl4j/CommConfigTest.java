package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.jni.StubNccl;

/**
 * {@link CommConfig}: each setter's validation and message, toString, immutability, and (against the stub
 * reporting NCCL 2.30.7, whose ncclConfig_t has every field) that every int field index lands in the
 * {@code ncclConfig_t} field of that name. The refusal of fields newer than the loaded NCCL is tested in
 * {@link CommunicatorLifecycleTest} and {@link OldNcclFallbackTest}.
 */
class CommConfigTest extends StubFixture {
    /** ncclConfig_t's int fields in the order of NcclNative.CFG_*, named as nccl.h (and the stub) names them. */
    static final String[] FIELDS = {"blocking", "cgaClusterSize", "minCTAs", "maxCTAs", "splitShare",
        "trafficClass", "collnetEnable", "CTAPolicy", "shrinkShare", "nvlsCTAs", "nChannelsPerNetPeer",
        "nvlinkCentricSched", "graphUsageMode", "numRmaCtx", "maxP2pPeers", "graphStreamOrdering"};

    @Override
    protected Path stubLibrary() {
        return StubNccl.latest();
    }

    @ParameterizedTest(name = "{0}({1})")
    @CsvSource({"cgaClusterSize, -1, 0..8", "cgaClusterSize, 9, 0..8", "minCTAs, 0, 1..64", "minCTAs, 65, 1..64",
        "maxCTAs, 0, 1..64", "maxCTAs, 65, 1..64", "trafficClass, -1, 0..2147483647", "CTAPolicy, -1, 0..3",
        "CTAPolicy, 4, 0..3", "nvlsCTAs, 0, 1..64", "nvlsCTAs, 65, 1..64"})
    void outOfRangeValuesAreRejected(String field, int value, String range) {
        Map<String, Function<Integer, CommConfig.Builder>> setters = Map.of(
                "cgaClusterSize", v -> CommConfig.builder().cgaClusterSize(v),
                "minCTAs", v -> CommConfig.builder().minCTAs(v),
                "maxCTAs", v -> CommConfig.builder().maxCTAs(v),
                "trafficClass", v -> CommConfig.builder().trafficClass(v),
                "CTAPolicy", v -> CommConfig.builder().ctaPolicy(v),
                "nvlsCTAs", v -> CommConfig.builder().nvlsCTAs(v));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> setters.get(field).apply(value));
        assertEquals(field + " must be in " + range + ", got " + value, e.getMessage());
    }

    @Test
    void boundaryValuesAreAccepted() {
        CommConfig c = CommConfig.builder().cgaClusterSize(0).cgaClusterSize(8).minCTAs(1).maxCTAs(64)
                .trafficClass(0).ctaPolicy(0).ctaPolicy(3).nvlsCTAs(1).nvlsCTAs(64).build();
        assertEquals("CommConfig[cgaClusterSize=8, minCTAs=1, maxCTAs=64, trafficClass=0, CTAPolicy=3, nvlsCTAs=64]",
                c.toString());
        assertEquals("CommConfig[minCTAs=7, maxCTAs=7]", CommConfig.builder().minCTAs(7).maxCTAs(7).build().toString());
    }

    @Test
    void minAboveMaxIsRejectedAtBuild() {
        CommConfig.Builder b = CommConfig.builder().minCTAs(8).maxCTAs(4);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, b::build);
        assertEquals("minCTAs (8) must not exceed maxCTAs (4)", e.getMessage());
    }

    @Test
    void blankNamesAreRejectedAndNullMeansUnset() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CommConfig.builder().netName("  "));
        assertEquals("netName must not be blank (use null for NCCL's choice)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CommConfig.builder().commName(""));
        assertEquals("commName must not be blank (use null for none)", e.getMessage());
        assertEquals("CommConfig[]", CommConfig.builder().netName("IB").netName(null).commName(null).build().toString());
    }

    @Test
    void rawIndexIsChecked() {
        for (int bad : new int[] {-1, NcclNative.CFG_INTS, Integer.MAX_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> CommConfig.builder().raw(bad, 1));
            assertEquals("config field index must be in 0..15, got " + bad, e.getMessage());
        }
    }

    @Test
    void toStringListsWhatIsSet() {
        assertEquals("CommConfig[]", CommConfig.DEFAULT.toString());
        CommConfig c = CommConfig.builder().blocking(false).splitShare(true).collnetEnable(false).shrinkShare(true)
                .netName("Socket").commName("trainer").build();
        assertEquals("CommConfig[blocking=0, splitShare=1, collnetEnable=0, shrinkShare=1, netName=Socket, "
                + "commName=trainer]", c.toString());
        assertEquals("CommConfig[commName=x]", CommConfig.builder().commName("x").build().toString());
    }

    @Test
    void blockingDefaultsToTrue() {
        assertTrue(CommConfig.DEFAULT.blocking());
        assertTrue(CommConfig.builder().blocking(true).build().blocking());
        assertFalse(CommConfig.builder().blocking(false).build().blocking());
    }

    @Test
    void aBuiltConfigDoesNotChangeWithItsBuilder() {
        CommConfig.Builder b = CommConfig.builder().minCTAs(2);
        CommConfig first = b.build();
        b.minCTAs(3).commName("later");
        assertEquals("CommConfig[minCTAs=2]", first.toString());
        assertEquals("CommConfig[minCTAs=3, commName=later]", b.build().toString());
    }

    @Test
    void everyFieldIndexReachesTheFieldOfItsName() {
        assertEquals(NcclNative.CFG_INTS, FIELDS.length);
        CommConfig.Builder b = CommConfig.builder().netName("net0").commName("comm0");
        StringBuilder expected = new StringBuilder("CommConfig[");
        for (int i = 0; i < FIELDS.length; i++) {
            b.raw(i, 100 + i);
            expected.append(i == 0 ? "" : ", ").append(FIELDS[i]).append('=').append(100 + i);
        }
        CommConfig cfg = b.build();
        assertEquals(expected + ", netName=net0, commName=comm0]", cfg.toString());
        assertEquals("2.30.7", Nccl.version());
        mark();
        later(Communicator.create(0, 1, testId(), 0, cfg));
        Map<String, String> r = only("ncclCommInitRankConfig");
        // the stub records each field of NCCL 2.30.7's ncclConfig_t, read at its offset (asserted in the stub)
        for (int i = 0; i < FIELDS.length; i++) {
            assertEquals(Integer.toString(100 + i), r.get(FIELDS[i]), "field " + i + " " + FIELDS[i]);
        }
        assertEquals("net0", r.get("netName"));
        assertEquals("comm0", r.get("commName"));
        assertEquals("96", r.get("config.size"));
        assertEquals("0xcafebeef", r.get("config.magic"));
        assertEquals("23007", r.get("config.version"));
        assertEquals(3 + 3 + FIELDS.length + 2, r.size(), "nranks, rank, id; size, magic, version; the fields: " + r);
        // and the indices the setters use
        assertEquals(0, NcclNative.CFG_BLOCKING);
        assertEquals(7, NcclNative.CFG_CTA_POLICY);
        assertEquals(15, NcclNative.CFG_GRAPH_STREAM_ORDERING);
        assertEquals(16, NcclNative.CFG_INTS);
    }

    /**
     * A child made without a config has its parent's, as NCCL gives it: a later reform remembers the parent's
     * settings, and a parent whose collectives are not fingerprinted has a child whose are not either; a child made
     * with a config of its own follows that one.
     */
    @Test
    void aChildMadeWithoutAConfigRemembersItsParentsAndItsFingerprintSetting() throws Exception {
        CommConfig quiet = CommConfig.builder().fingerprint(false).initTimeout(java.time.Duration.ofSeconds(7)).build();
        Communicator parent = later(Communicator.create(0, 1, testId(), 0, quiet));
        Communicator child = later(parent.split(0, 0));
        assertSame(parent.config(), child.config(), "the parent's config, as NCCL's split without one");
        Stream s = later(Stream.create(0));
        DeviceBuffer b = later(DeviceBuffer.allocate(0, 8, DataType.FLOAT32));
        child.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        assertEquals(0, child.health().ledger.last(), "no fingerprint kept, as the parent's config says");
        Communicator own = later(parent.split(0, 0, CommConfig.builder().commName("own").build()));
        own.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
        assertEquals(1, own.health().ledger.last(), "its own config: fingerprinted (the default)");
        assertEquals("own", own.config().commName());
    }

    @Test
    void everyFieldIsAcceptedByTheNcclThatHasIt() {
        // 2.30.7 has every field: a config with all of them set is passed to a split too
        CommConfig.Builder b = CommConfig.builder().netName("n").commName("c");
        for (int i = 0; i < FIELDS.length; i++) {
            b.raw(i, i);
        }
        Communicator parent = later(Communicator.create(0, 1, testId(), 0));
        mark();
        later(parent.split(0, 0, b.raw(NcclNative.CFG_BLOCKING, 1).build()));
        Map<String, String> r = only("ncclCommSplit");
        assertEquals("15", r.get("graphStreamOrdering"));
        assertEquals("c", r.get("commName"));
    }
}
