package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.StubNccl;

/** Shrink, revoke and grow against the stub NCCL: what reaches NCCL, the renumbering, and the refusals. */
class RecoveryTest extends StubFixture {
    @Test
    void shrinkLeavesOutTheRanksAndKeepsTheConfiguration() {
        Communicator c = comm(1, 4);
        Communicator child = later(c.shrink(3));
        Map<String, String> call = stub.last("ncclCommShrink");
        assertEquals("3", call.get("exclude"));
        assertEquals("1", call.get("count"));
        assertEquals("0", call.get("flags"), "NCCL_SHRINK_DEFAULT on a healthy communicator");
        assertEquals(3, child.size());
        Communicator named = later(c.shrink(CommConfig.builder().commName("survivors").build(), 0, 2));
        call = stub.last("ncclCommShrink");
        assertEquals("0,2", call.get("exclude"));
        assertEquals("2", call.get("count"));
        assertEquals("survivors", call.get("commName"));
        assertEquals(2, named.size());
        assertTrue(!c.isClosed(), "the parent stays open");
    }

    @Test
    void aBrokenParentIsShrunkWithTheAbortFlag() {
        Communicator c = comm(0, 3);
        stub.asyncError(6);
        try {
            later(c.shrink(2));
        } finally {
            stub.asyncError(0);
        }
        assertEquals("1", stub.last("ncclCommShrink").get("flags"), "NCCL_SHRINK_ABORT after ncclRemoteError");
    }

    @Test
    void theRenumberingKeepsTheOrder() {
        assertEquals(0, Communicator.rankAfterShrink(0, 1));
        assertEquals(1, Communicator.rankAfterShrink(2, 1));
        assertEquals(2, Communicator.rankAfterShrink(3, 1));
        assertEquals(1, Communicator.rankAfterShrink(3, 0, 1));
        assertEquals(5, Communicator.rankAfterShrink(5, 7, 9));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Communicator.rankAfterShrink(2, 1, 2));
        assertEquals("rank 2 is excluded: it has no rank after the shrink", e.getMessage());
    }

    @Test
    void badExclusionsAreRefusedBeforeNccl() {
        Communicator c = comm(1, 4);
        mark();
        String[][] cases = {
            {"", "excludedRanks must name at least one rank to leave out, got none"},
            {"4", "excludedRanks[0] = 4 is not a rank of this communicator (0..3)"},
            {"-1", "excludedRanks[0] = -1 is not a rank of this communicator (0..3)"},
            {"0,1", "excludedRanks[1] = 1 is this rank: a rank cannot shrink itself out; the ranks that leave do not "
                + "call shrink (they close or abort their communicator)"},
            {"2,3,2", "excludedRanks names rank 2 twice (at 0 and 2)"},
        };
        for (String[] k : cases) {
            int[] ranks = k[0].isEmpty() ? new int[0]
                    : java.util.Arrays.stream(k[0].split(",")).mapToInt(Integer::parseInt).toArray();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.shrink(ranks), k[0]);
            assertEquals(k[1], e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> c.shrink((int[]) null));
        assertEquals(java.util.List.of(), newCallNames(), "nothing reached NCCL");
        c.close();
        IllegalStateException closed = assertThrows(IllegalStateException.class, () -> c.shrink(2));
        assertEquals("this Communicator (rank 1 of 4) is closed", closed.getMessage());
    }

    @Test
    void aCloseOnAnotherThreadWaitsForAShrinkUnderWayAndThenRefusesRecovery() throws Exception {
        Communicator c = comm(1, 4);
        String hold = "NCCL_STUB_SLEEP_MS_ncclCommShrink";
        org.nccl4j.jni.NcclNative.setenv(hold, "700", 1);   // the shrink stays inside NCCL 0.7 s
        try {
            long[] shrinkEnd = new long[1];
            java.util.concurrent.CompletableFuture<Communicator> shrunk = java.util.concurrent.CompletableFuture
                    .supplyAsync(() -> {
                        Communicator child = c.shrink(3);
                        shrinkEnd[0] = System.nanoTime();
                        return child;
                    });
            Thread.sleep(200);
            c.close();
            long closeEnd = System.nanoTime();
            Communicator child = later(shrunk.get(5, java.util.concurrent.TimeUnit.SECONDS));
            assertEquals(3, child.size(), "the shrink under way made its communicator");
            assertTrue(closeEnd >= shrinkEnd[0], "close() freed the communicator while ncclCommShrink still used it");
        } finally {
            org.nccl4j.jni.NcclNative.unsetenv(hold);
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> c.shrink(3));
        assertEquals("this Communicator (rank 1 of 4) is closed", e.getMessage());
        assertThrows(IllegalStateException.class, () -> c.split(0, 0));
        assertThrows(IllegalStateException.class, c::growId);
    }

    @Test
    void revokeAndGrowReachNccl() {
        Communicator c = comm(0, 2);
        c.revoke();
        assertEquals("0", stub.last("ncclCommRevoke").get("flags"));
        UniqueId id = c.growId();
        assertEquals((byte) 255, id.toBytes()[0]);
        Communicator grown = later(c.grow(4, id, null));
        Map<String, String> call = stub.last("ncclCommGrow");
        assertEquals("4", call.get("nranks"));
        assertEquals("-1", call.get("rank"), "an existing rank keeps its rank");
        assertEquals(4, grown.size());
        Communicator joined = later(Communicator.join(4, 3, id, 0, null));
        call = stub.last("ncclCommGrow");
        assertEquals("0x0", call.get("comm"));
        assertEquals("3", call.get("rank"));
        assertEquals(3, joined.rank());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.grow(2, null, null));
        assertEquals("newSize must be more than the communicator's 2 ranks, got 2", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Communicator.join(4, 0, id, 0, null));
        assertEquals("rank must be in 1..3 (a joining rank comes after the existing ones), got 0", e.getMessage());
        assertThrows(NullPointerException.class, () -> Communicator.join(4, 2, null, 0, null));
    }

    @Test
    void aFailingShrinkNamesNccl() {
        Communicator c = comm(0, 2);
        stub.result(NcclFunction.ncclCommShrink, 5);
        NcclException e = assertThrows(NcclException.class, () -> c.shrink(1));
        assertEquals(5, e.code());
        assertTrue(e.getMessage().startsWith("ncclCommShrink failed on rank 0: ncclInvalidUsage (5)"), e.getMessage());
    }

    @Test
    void recoverFallsBackToARendezvousOfTheSurvivorsWhenNcclRefusesToShrink() throws Exception {
        Communicator r0 = comm(0, 3);
        Communicator r2 = comm(2, 3);
        int port;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort() - 101;   // recover's first rendezvous: MASTER_PORT + 100 + 1
        }
        String addr = org.nccl4j.jni.NcclNative.getenv("MASTER_ADDR");
        String mport = org.nccl4j.jni.NcclNative.getenv("MASTER_PORT");
        org.nccl4j.jni.NcclNative.setenv("MASTER_ADDR", "127.0.0.1", 1);
        org.nccl4j.jni.NcclNative.setenv("MASTER_PORT", Integer.toString(port), 1);
        stub.result(NcclFunction.ncclCommShrink, 6);   // as NCCL 2.28.3 answers after a lost peer
        try {
            java.util.concurrent.CompletableFuture<Communicator> a =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> r0.recover(null, 1));
            java.util.concurrent.CompletableFuture<Communicator> b =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> r2.recover(null, 1));
            Communicator n0 = later(a.get(30, java.util.concurrent.TimeUnit.SECONDS));
            Communicator n1 = later(b.get(30, java.util.concurrent.TimeUnit.SECONDS));
            assertEquals(java.util.Set.of(0, 1), java.util.Set.of(n0.rank(), n1.rank()));
            assertEquals(2, n0.size());
            assertEquals(2, n1.size());
            java.util.List<Map<String, String>> inits = stub.calls("ncclCommInitRank").stream()
                    .map(StubNccl::parse).filter(m -> m.get("nranks").equals("2"))
                    .collect(java.util.stream.Collectors.toList());
            assertEquals(2, inits.size(), inits.toString());
            assertEquals(inits.get(0).get("id"), inits.get(1).get("id"), "one new id for both survivors");
            assertEquals(java.util.Set.of("0", "1"), java.util.Set.of(inits.get(0).get("rank"), inits.get(1).get("rank")));
        } finally {
            restore("MASTER_ADDR", addr);
            restore("MASTER_PORT", mport);
        }
        stub.result(NcclFunction.ncclCommShrink, 0);
    }

    @Test
    void recoverWithoutARendezvousSaysWhatToSet() {
        Communicator c = comm(0, 3);
        String addr = org.nccl4j.jni.NcclNative.getenv("MASTER_ADDR");
        org.nccl4j.jni.NcclNative.unsetenv("MASTER_ADDR");
        stub.result(NcclFunction.ncclCommShrink, 6);
        try {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> c.recover(null, 2));
            assertTrue(e.getMessage().startsWith("Communicator.recover needs a rendezvous for the remaining ranks and "
                    + "none is set: set NCCL4J_RENDEZVOUS_FILE"), e.getMessage());
        } finally {
            restore("MASTER_ADDR", addr);
            stub.result(NcclFunction.ncclCommShrink, 0);
        }
        assertEquals(2, later(c.recover(null, 2)).size(), "where NCCL shrinks, recover is a shrink");
        assertEquals("2", stub.last("ncclCommShrink").get("exclude"));
    }

    private static void restore(String name, String value) {
        if (value == null) {
            org.nccl4j.jni.NcclNative.unsetenv(name);
        } else {
            org.nccl4j.jni.NcclNative.setenv(name, value, 1);
        }
    }

    /** The same calls on an NCCL that lacks them (2.19.3): a clear refusal naming the release that adds each. */
    @Nested
    class OnAnOldNccl extends StubFixture {
        @Override
        protected Path stubLibrary() {
            return StubNccl.old();
        }

        @Test
        void eachNamesTheReleaseThatAddsIt() {
            Communicator c = comm(0, 2);
            String[][] expected = {
                {"shrink", "Communicator.shrink needs ncclCommShrink, added in NCCL 2.27; the loaded NCCL is 2.19.3"},
                {"revoke", "Communicator.revoke needs ncclCommRevoke, added in NCCL 2.28.7; the loaded NCCL is 2.19.3"},
                {"growId", "Communicator.growId needs ncclCommGetUniqueId, added in NCCL 2.29.2; the loaded NCCL is "
                    + "2.19.3"},
                {"grow", "Communicator.grow needs ncclCommGrow, added in NCCL 2.29.2; the loaded NCCL is 2.19.3"},
            };
            for (String[] k : expected) {
                UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> {
                    switch (k[0]) {
                        case "shrink":
                            c.shrink(1);
                            break;
                        case "revoke":
                            c.revoke();
                            break;
                        case "growId":
                            c.growId();
                            break;
                        default:
                            c.grow(3, null, null);
                            break;
                    }
                }, k[0]);
                assertTrue(e.getMessage().startsWith(k[1]), e.getMessage());
                assertTrue(e.getMessage().contains("load NCCL "), e.getMessage());
            }
        }
    }
}
