package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.nccl4j.jni.NcclNative;

/**
 * {@link ParameterShards} on the stub NCCL and {@link FakeCuda}: the shard arithmetic (padding, offsets, the last
 * ranks' short or empty shards), the gather schedule (prefetch, reuse of held groups, the buffers it may not
 * overwrite), the order of the all-gathers and reduce-scatters a step enqueues, the waits of the gradient buffers,
 * the optimizer hook, the refusals of bad input, and a step that allocates nothing on the Java heap.
 */
class ParameterShardsTest extends StubFixture {

    // ---------------------------------------------------------------- arithmetic

    @Test
    void groupsArePaddedToWholeAlignedShardsAndTheLastRanksHoldTheShortOnes() {
        assertEquals(12, ParameterShards.paddedCount(10, 4, 1));
        assertEquals(16, ParameterShards.paddedCount(10, 4, 2));
        assertEquals(8, ParameterShards.paddedCount(8, 4, 1), "a multiple is not padded");
        assertEquals(512, ParameterShards.paddedCount(1, 2, 256));
        // 10 elements over 4 ranks, shards of 3: 3, 3, 3, 1
        assertArrayEquals(new long[] {3, 3, 3, 1}, valid(10, 3, 4));
        // 5 elements over 4 ranks with shards of 2: the last rank holds only padding
        assertArrayEquals(new long[] {2, 2, 1, 0}, valid(5, 2, 4));

        Communicator comm = comm(3, 4);
        ParameterShards s = later(ParameterShards.builder(comm).alignment(1).add(10).add(8).add(5).build());
        assertEquals(3, s.groupCount());
        assertArrayEquals(new long[] {12, 8, 8}, new long[] {s.paddedCount(0), s.paddedCount(1), s.paddedCount(2)});
        assertArrayEquals(new long[] {3, 2, 2}, new long[] {s.shardCount(0), s.shardCount(1), s.shardCount(2)});
        assertArrayEquals(new long[] {0, 3, 5}, new long[] {s.shardOffset(0), s.shardOffset(1), s.shardOffset(2)});
        assertArrayEquals(new long[] {1, 2, 0}, new long[] {s.validCount(0), s.validCount(1), s.validCount(2)},
                "rank 3 of 4 holds the end of group 0, a whole shard of group 1 and only padding of group 2");
        assertEquals(7, s.shardElements());
        assertEquals(28, s.parameterShards().bytes());
        assertEquals(s.parameterShards().address() + 12, s.parameterShard(1).address());
        assertEquals(8, s.parameterShard(1).bytes());
        assertEquals(s.gradientShards().address() + 20, s.gradientShard(2).address());
        // shards (2 x 28 bytes) + 2 gathered and 2 gradient buffers of the widest group (12 floats, 48 bytes)
        assertEquals(2 * 28 + 4 * 48, s.deviceBytes());
        assertEquals(0, s.count(2) - 5);
    }

    private static long[] valid(long count, long shard, int ranks) {
        long[] v = new long[ranks];
        for (int r = 0; r < ranks; r++) {
            v[r] = ParameterShards.validCount(count, shard, r);
        }
        return v;
    }

    @Test
    void theDefaultAlignmentStartsEveryShardOn256Bytes() {
        ParameterShards s = later(ParameterShards.builder(comm(0, 2)).add(3).add(1000).build());
        assertEquals(128, s.paddedCount(0));
        assertEquals(64, s.shardCount(0));
        assertEquals(1024, s.paddedCount(1));
        assertEquals(256, s.parameterShard(1).address() - s.parameterShards().address());
    }

    // ---------------------------------------------------------------- the schedule

    @Test
    void twoBuffersPrefetchOneAheadAndBackwardReusesTheLastTwoGroupsOfForward() {
        ParameterShards.Schedule s = ParameterShards.Schedule.plan(4, 2);
        assertArrayEquals(new int[] {0, 1, 2, 3, 3, 2, 1, 0}, s.group);
        assertArrayEquals(new boolean[] {true, true, true, true, false, false, true, true}, s.loads);
        assertArrayEquals(new int[] {0, 1, 0, 1, 1, 0, 1, 0}, s.slot);
        assertArrayEquals(new int[] {0, 1, 2, 3, 3, 2, 6, 7}, s.source);
        assertArrayEquals(new int[] {0, 1}, s.issues[0], "the first call gathers its group and the next");
        assertArrayEquals(new int[] {2}, s.issues[1]);
        assertArrayEquals(new int[] {3}, s.issues[2]);
        assertArrayEquals(new int[] {}, s.issues[3]);
        assertArrayEquals(new int[] {}, s.issues[4]);
        assertArrayEquals(new int[] {6}, s.issues[5]);
        assertArrayEquals(new int[] {7}, s.issues[6]);
        assertArrayEquals(new int[] {}, s.issues[7]);
    }

    @Test
    void noGatherLandsInABufferThatWorkBetweenItsIssueAndItsUseReads() {
        for (int groups = 1; groups <= 9; groups++) {
            for (int buffers = 1; buffers <= groups; buffers++) {
                ParameterShards.Schedule s = ParameterShards.Schedule.plan(groups, buffers);
                int[] holder = new int[buffers];   // the group each buffer holds, replayed in issue order
                java.util.Arrays.fill(holder, -1);
                int gathers = 0;
                for (int call = 0; call < 2 * groups; call++) {
                    for (int q : s.issues[call]) {
                        assertTrue(q >= call && q - call <= buffers - 1, "prefetch distance " + groups + "/" + buffers);
                        for (int r = call; r < q; r++) {
                            assertNotEquals(s.slot[r], s.slot[q], "position " + q + " overwrites the buffer of " + r
                                    + " (" + groups + " groups, " + buffers + " buffers)");
                        }
                        holder[s.slot[q]] = s.group[q];
                        gathers++;
                    }
                    assertEquals(s.group[call], holder[s.slot[call]], "position " + call + " reads its group");
                }
                int expected = 2 * groups - buffers;   // backward reuses the groups still held at the end of forward
                assertEquals(expected, gathers, groups + " groups, " + buffers + " buffers");
            }
        }
    }

    // ---------------------------------------------------------------- a step on the stub

    /** A step of the schedule's calls; returns the observed collectives as "name bytes". */
    private List<String> step(ParameterShards s, Stream compute, List<String> seen) {
        int g = s.groupCount();
        for (int l = 0; l < g; l++) {
            s.gather(l, compute);
        }
        for (int l = g - 1; l >= 0; l--) {
            s.gather(l, compute);
            s.gradient(l, compute);
            s.reduceScatter(l, compute);
        }
        s.finish(compute);
        return seen;
    }

    @Test
    void aStepGathersInScheduleOrderAndReduceScattersEachGradientAsBackwardMakesIt() {
        Communicator comm = comm(0, 2);
        Stream compute = stream(0);
        // groups of 2, 4, 6, 8 floats: shards of 1, 2, 3, 4 floats (4..16 bytes sent by each all-gather)
        ParameterShards s = later(ParameterShards.builder(comm).alignment(1).add(2).add(4).add(6).add(8).build());
        List<String> seen = new ArrayList<>();
        comm.observe((c, seq, fn, bytes, st) -> seen.add(fn.name().substring(4) + " " + bytes
                + (st == s.communicationStream().handle() ? "" : " on another stream")));
        step(s, compute, seen);
        List<String> expected = List.of("AllGather 4", "AllGather 8", "AllGather 12", "AllGather 16",
                "ReduceScatter 32", "AllGather 8", "ReduceScatter 24", "AllGather 4", "ReduceScatter 16",
                "ReduceScatter 8");
        assertEquals(expected, seen);
        seen.clear();
        step(s, compute, seen);
        assertEquals(expected, seen, "the next step gathers again: the optimizer changed the shards");
        assertEquals(0, s.position());
    }

    @Test
    void theGatheredBuffersAreReusedAndBackwardGetsTheBufferForwardFilled() {
        Communicator comm = comm(1, 2);
        Stream compute = stream(0);
        ParameterShards s = later(ParameterShards.builder(comm).alignment(1).add(2).add(4).add(6).add(8).build());
        long[] at = new long[8];
        long[] bytes = new long[8];
        for (int p = 0; p < 8; p++) {
            DeviceBuffer b = s.gather(s.scheduledGroup(p), compute);
            at[p] = b.address();
            bytes[p] = b.bytes();
            if (p >= 4) {
                DeviceBuffer d = s.gradient(s.scheduledGroup(p), compute);
                assertEquals(4 * s.paddedCount(s.scheduledGroup(p)), d.bytes());
                s.reduceScatter(s.scheduledGroup(p), compute);
            }
        }
        s.finish(compute);
        assertEquals(at[0], at[2]);
        assertNotEquals(at[0], at[1]);
        assertEquals(at[3], at[4], "backward reads group 3 where forward gathered it");
        assertEquals(at[2], at[5]);
        assertArrayEquals(new long[] {8, 16, 24, 32, 32, 24, 16, 8}, bytes);
        assertFalse(s.gathersAt(4));
        assertTrue(s.gathersAt(6));
    }

    @Test
    void asManyBuffersAsGroupsGatherEverythingAtTheFirstCallAndNothingInBackward() {
        Communicator comm = comm(0, 2);
        Stream compute = stream(0);
        ParameterShards s = later(ParameterShards.builder(comm).alignment(1).add(2).add(4).add(6)
                .gatheredBuffers(3).gradientBuffers(3).build());
        List<String> seen = new ArrayList<>();
        comm.observe((c, seq, fn, bytes, st) -> seen.add(fn.name().substring(4) + " " + bytes));
        s.gather(0, compute);
        assertEquals(List.of("AllGather 4", "AllGather 8", "AllGather 12"), seen);
        s.gather(1, compute);
        s.gather(2, compute);
        for (int l = 2; l >= 0; l--) {
            s.gather(l, compute);
            s.gradient(l, compute);
            s.reduceScatter(l, compute);
        }
        s.finish(compute);
        assertEquals(List.of("AllGather 4", "AllGather 8", "AllGather 12", "ReduceScatter 24", "ReduceScatter 16",
                "ReduceScatter 8"), seen);
    }

    @Test
    void aGradientBufferWaitsForTheReduceScatterThatLastReadIt() {
        Communicator comm = comm(0, 2);
        Stream compute = stream(0);
        ParameterShards s = later(ParameterShards.builder(comm).alignment(1).add(2).add(2).add(2).build());
        for (int l = 0; l < 3; l++) {
            s.gather(l, compute);
        }
        long[] addresses = new long[3];
        int[] waits = new int[3];
        for (int l = 2; l >= 0; l--) {
            s.gather(l, compute);
            int before = computeWaits(compute);
            addresses[l] = s.gradient(l, compute).address();
            waits[l] = computeWaits(compute) - before;
            s.reduceScatter(l, compute);
        }
        assertArrayEquals(new int[] {1, 0, 0}, waits, "group 0 reuses group 2's buffer: waits for its reduce-scatter");
        assertEquals(addresses[2], addresses[0]);
        assertNotEquals(addresses[2], addresses[1]);
        s.finish(compute);
    }

    private int computeWaits(Stream compute) {
        String h = "0x" + Long.toHexString(compute.handle());
        int n = 0;
        for (String c : cuda.calls("streamWaitEvent")) {
            if (h.equals(FakeCuda.args(c).get("stream"))) {
                n++;
            }
        }
        return n;
    }

    @Test
    void theOptimizerHookUpdatesEachGroupInReduceScatterOrderAfterWaitingForIt() {
        Communicator comm = comm(1, 2);
        Stream compute = stream(0);
        List<String> updates = new ArrayList<>();
        int[] waitsSeen = new int[1];
        ParameterShards s = later(ParameterShards.builder(comm).alignment(1).add(4).add(6).add(10)
                .optimizer((group, offset, count, st) -> {
                    updates.add(group + "@" + offset + "+" + count + (st == compute ? "" : " other stream"));
                    waitsSeen[0] = computeWaits(compute);
                }).build());
        for (int l = 0; l < 3; l++) {
            s.gather(l, compute);
        }
        for (int l = 2; l >= 0; l--) {
            s.gather(l, compute);
            s.gradient(l, compute);
            s.reduceScatter(l, compute);
        }
        assertEquals(List.of(), updates, "nothing is updated before finish");
        int before = computeWaits(compute);
        s.finish(compute);
        assertEquals(List.of("2@5+5", "1@2+3", "0@0+2"), updates);
        assertEquals(before + 3, waitsSeen[0], "the compute stream waited for each reduce-scatter before its update");
    }

    @Test
    void anOverlappedOptimizerUpdatesEachGroupOnTheCommunicationStreamBehindItsReduceScatter() {
        Communicator comm = comm(1, 2);
        Stream compute = stream(0);
        List<String> order = new ArrayList<>();
        ParameterShards[] holder = new ParameterShards[1];
        ParameterShards s = later(ParameterShards.builder(comm).alignment(1).add(4).add(6).add(10)
                .overlapOptimizer(true)
                .optimizer((group, offset, count, st) -> order.add("update " + group + "@" + offset + "+" + count
                        + (st == holder[0].communicationStream() ? "" : " on another stream"))).build());
        holder[0] = s;
        comm.observe((c, seq, fn, bytes, st) -> order.add(fn.name().substring(4)));
        for (int l = 0; l < 3; l++) {
            s.gather(l, compute);
        }
        order.clear();
        for (int l = 2; l >= 0; l--) {
            s.gather(l, compute);
            s.gradient(l, compute);
            s.reduceScatter(l, compute);
        }
        assertEquals(List.of("ReduceScatter", "update 2@5+5", "AllGather", "ReduceScatter", "update 1@2+3",
                "ReduceScatter", "update 0@0+2"), order, "each update right behind its group's reduce-scatter");
        int before = computeWaits(compute);
        s.finish(compute);
        assertEquals(7, order.size(), "finish calls no hook");
        assertEquals(before + 1, computeWaits(compute), "finish: one wait, for the communication stream's updates");
        assertEquals(0, s.position(), "the schedule is reset for the next step");
    }

    @Test
    void awaitGradientWaitsForOneReduceScatterAndRefusesOneNotLaunched() {
        Communicator comm = comm(0, 2);
        Stream compute = stream(0);
        ParameterShards s = later(ParameterShards.builder(comm).alignment(1).add(2).add(2).build());
        s.gather(0, compute);
        s.gather(1, compute);
        s.gather(1, compute);
        s.gradient(1, compute);
        s.reduceScatter(1, compute);
        int before = computeWaits(compute);
        s.awaitGradient(1, compute);
        assertEquals(before + 1, computeWaits(compute));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> s.awaitGradient(0, compute));
        assertEquals("awaitGradient(0): its reduceScatter was not called in this step (the next is group 0)",
                e.getMessage());
    }

    // ---------------------------------------------------------------- refusals

    @Test
    void callsOutOfTheSchedulesOrderAreRefusedNamingTheExpectedGroup() {
        Communicator comm = comm(0, 2);
        Stream compute = stream(0);
        ParameterShards s = later(ParameterShards.builder(comm).add(2).add(2).add(2).build());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> s.gather(1, compute));
        assertEquals("gather(1) out of order: position 0 of the step expects group 0 (forward, groups 0..2)",
                e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> s.gradient(0, compute));
        assertEquals("gradient(0) out of order: the next gradient of backward is group 2 (groups 2 down to 0)",
                e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> s.finish(compute));
        assertEquals("finish: groups 2..0 have no reduceScatter in this step: call gradient(g) and reduceScatter(g)"
                + " for each group in backward order first", e.getMessage());
        for (int l = 0; l < 3; l++) {
            s.gather(l, compute);
        }
        e = assertThrows(IllegalStateException.class, () -> s.gather(0, compute));
        assertEquals("gather(0) out of order: position 3 of the step expects group 2 (backward, groups 2..0)",
                e.getMessage());
        for (int l = 2; l >= 0; l--) {
            s.gather(l, compute);
            s.gradient(l, compute);
            s.reduceScatter(l, compute);
        }
        e = assertThrows(IllegalStateException.class, () -> s.reduceScatter(0, compute));
        assertEquals("reduceScatter(0) out of order: every group's gradient was reduce-scattered in this step: call"
                + " finish(compute)", e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> s.gather(0, compute));
        assertEquals("gather(0): this step's 6 gathers are done (forward then backward): call finish(compute) to end"
                + " the step", e.getMessage());
        s.finish(compute);
        assertEquals(0, s.position());
        s.close();
        assertEquals("ParameterShards is closed",
                assertThrows(IllegalStateException.class, () -> s.gather(0, compute)).getMessage());
        s.close();   // idempotent
    }

    @Test
    void badArgumentsAreRefusedNamingTheArgumentAndTheFix() {
        Communicator comm = comm(0, 2);
        assertEquals("comm must not be null",
                assertThrows(NullPointerException.class, () -> ParameterShards.builder(null)).getMessage());
        ParameterShards.Builder b = ParameterShards.builder(comm);
        assertEquals("register at least one parameter group with add(count)",
                assertThrows(IllegalArgumentException.class, b::build).getMessage());
        assertEquals("group 0: count must be > 0, got 0",
                assertThrows(IllegalArgumentException.class, () -> b.add(0)).getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> b.gatheredBuffers(0)).getMessage()
                .startsWith("gatheredBuffers must be >= 1"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> b.gradientBuffers(-1)).getMessage()
                .startsWith("gradientBuffers must be >= 1"));
        assertEquals("alignment must be >= 1 element, got 0",
                assertThrows(IllegalArgumentException.class, () -> b.alignment(0)).getMessage());
        b.add(4).add(4);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> b.gatheredBuffers(3).build());
        assertEquals("gatheredBuffers(3) exceeds the 2 groups: use at most 2 (every group stays gathered)",
                e.getMessage());
        ParameterShards s = later(b.gatheredBuffers(2).alignment(1).build());
        assertEquals("group must be in 0..1, got 2",
                assertThrows(IllegalArgumentException.class, () -> s.shardCount(2)).getMessage());
        Stream st = stream(0);
        DeviceBuffer small = buffer(0, 3, DataType.FLOAT32);
        e = assertThrows(IllegalArgumentException.class, () -> s.gatherTo(1, small, st));
        assertEquals("dst holds 12 bytes but group 1 gathers 4 elements (16 bytes, padding included): pass a buffer of"
                + " at least paddedCount(1) elements", e.getMessage());
        assertEquals("compute must not be null",
                assertThrows(NullPointerException.class, () -> s.gather(0, null)).getMessage());
        assertEquals(0, s.position(), "a refused call does not advance the schedule");
    }

    @Test
    void gatherToAllGathersOneGroupIntoTheCallersBuffer() {
        Communicator comm = comm(0, 2);
        Stream st = stream(0);
        ParameterShards s = later(ParameterShards.builder(comm).alignment(1).add(3).build());
        DeviceBuffer big = buffer(0, 10, DataType.FLOAT32);
        List<String> seen = new ArrayList<>();
        comm.observe((c, seq, fn, bytes, h) -> seen.add(fn + " " + bytes));
        s.gatherTo(0, big, st);
        assertEquals(List.of("ncclAllGather 8"), seen, "the 2-float shard of a group padded to 4");
    }

    // ---------------------------------------------------------------- allocation

    @Test
    void aStepAllocatesNothingOnTheJavaHeap() {
        com.sun.management.ThreadMXBean bean = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assumeTrue(bean.isThreadAllocatedMemorySupported(), "this JVM cannot count allocated bytes per thread");
        bean.setThreadAllocatedMemoryEnabled(true);
        assumeTrue(bean.isThreadAllocatedMemoryEnabled(), "per-thread allocation counting could not be enabled");
        NcclNative.unsetenv("NCCL_STUB_LOG");
        Communicator comm = comm(0, 2);
        Stream compute = stream(0);
        long[] updated = new long[1];
        ParameterShards s = later(ParameterShards.builder(comm).add(1000).add(3000).add(2000).add(500)
                .optimizer((group, offset, count, st) -> updated[0] += count).build());
        CudaCalls.useBackend(new QuietCuda(cuda));   // FakeCuda records every call as a string: this one does not
        try {
            int steps = 20_000;
            for (int i = 0; i < steps; i++) {
                step(s, compute, null);
            }
            long before = bean.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < steps; i++) {
                step(s, compute, null);
            }
            long allocated = bean.getCurrentThreadAllocatedBytes() - before;
            assertTrue(allocated < 1024, steps + " steps allocated " + allocated + " bytes");
        } finally {
            CudaCalls.useBackend(cuda);
        }
        assertEquals(2 * 20_000L * s.shardElements(), updated[0], "the hook ran for every group of every step");
        assertEquals(2 * 20_000L * 10, comm.operationsEnqueued(), "6 gathers and 4 reduce-scatters a step");
    }

    /** {@link FakeCuda} without the record of event and wait calls, which allocates. */
    private static final class QuietCuda implements CudaBackend {
        private final FakeCuda f;

        QuietCuda(FakeCuda f) {
            this.f = f;
        }

        @Override public int getDeviceCount(int[] count) {
            return f.getDeviceCount(count);
        }

        @Override public int setDevice(int device) {
            return f.setDevice(device);
        }

        @Override public int getDevice(int[] device) {
            return f.getDevice(device);
        }

        @Override public int malloc(long[] address, long bytes) {
            return f.malloc(address, bytes);
        }

        @Override public int free(long address) {
            return f.free(address);
        }

        @Override public int memcpy(long dst, long src, long bytes, int kind) {
            return f.memcpy(dst, src, bytes, kind);
        }

        @Override public int memset(long address, int value, long bytes) {
            return f.memset(address, value, bytes);
        }

        @Override public int streamCreate(long[] stream, int flags) {
            return f.streamCreate(stream, flags);
        }

        @Override public int streamDestroy(long stream) {
            return f.streamDestroy(stream);
        }

        @Override public int streamSynchronize(long stream) {
            return f.streamSynchronize(stream);
        }

        @Override public int streamQuery(long stream) {
            return 0;
        }

        @Override public int streamIsCapturing(long stream, int[] status) {
            status[0] = 0;
            return 0;
        }

        @Override public int eventCreate(long[] event, int flags) {
            return f.eventCreate(event, flags);
        }

        @Override public int eventDestroy(long event) {
            return f.eventDestroy(event);
        }

        @Override public int eventRecord(long event, long stream) {
            return 0;
        }

        @Override public int eventSynchronize(long event) {
            return 0;
        }

        @Override public int eventQuery(long event) {
            return 0;
        }

        @Override public int eventElapsedTime(float[] ms, long start, long end) {
            return f.eventElapsedTime(ms, start, end);
        }

        @Override public int streamWaitEvent(long stream, long event) {
            return 0;
        }

        @Override public int streamBeginCapture(long stream, int mode) {
            return f.streamBeginCapture(stream, mode);
        }

        @Override public int streamEndCapture(long stream, long[] graph) {
            return f.streamEndCapture(stream, graph);
        }

        @Override public int graphInstantiate(long[] exec, long graph) {
            return f.graphInstantiate(exec, graph);
        }

        @Override public int graphLaunch(long exec, long stream) {
            return f.graphLaunch(exec, stream);
        }

        @Override public int graphExecDestroy(long exec) {
            return f.graphExecDestroy(exec);
        }

        @Override public int graphDestroy(long graph) {
            return f.graphDestroy(graph);
        }

        @Override public int pointerDevice(long address, int[] device) {
            return f.pointerDevice(address, device);
        }

        @Override public String errorName(int code) {
            return f.errorName(code);
        }

        @Override public String errorString(int code) {
            return f.errorString(code);
        }
    }
}
