package org.nccl4j.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.nccl4j.DataType;
import org.nccl4j.ReduceOp;
import org.nccl4j.jni.NcclFunction;

/**
 * {@link FlightRecorder}: the ring's wrap-around, sequence numbers, the completion marks and lastCompleted (in and
 * out of order), oldestPending, the checks of its arguments, and what a snapshot holds.
 */
class FlightRecorderTest {
    private static final int AR = TraceOperation.allReduce.code();
    private static final int F32 = DataType.FLOAT32.code();
    private static final int SUM = ReduceOp.SUM.code();

    private static List<Long> sequences(FlightRecorder r) {
        return r.snapshot().stream().map(TraceEntry::sequence).collect(Collectors.toList());
    }

    @Test
    void theRingKeepsTheLastCapacityOperationsInOrder() {
        FlightRecorder r = new FlightRecorder(4);
        assertEquals(4, r.capacity());
        assertEquals(List.of(), r.snapshot());
        assertEquals(0, r.lastEnqueued());
        for (int i = 1; i <= 10; i++) {
            assertEquals(i, r.record(AR, 100 * i, F32, SUM, -1, 400 * i, 0xab00 + i));
        }
        assertEquals(10, r.lastEnqueued());
        List<TraceEntry> s = r.snapshot();
        assertEquals(List.of(7L, 8L, 9L, 10L), s.stream().map(TraceEntry::sequence).collect(Collectors.toList()));
        for (TraceEntry e : s) {
            long i = e.sequence();
            assertEquals(TraceOperation.allReduce, e.operation());
            assertEquals(100 * i, e.count());
            assertEquals("ncclFloat32", e.dataType());
            assertEquals("ncclSum", e.reduceOp());
            assertNull(e.peer());
            assertEquals(400 * i, e.bytes());
            assertEquals(0xab00 + i, e.stream());
            assertEquals("0xab0" + Long.toHexString(i), e.streamHex());
            assertEquals(TraceEntry.State.ENQUEUED, e.state());
            assertNull(e.completedAfterMicros());
        }
        for (int i = 1; i < s.size(); i++) {
            assertFalse(s.get(i).enqueuedAt().isBefore(s.get(i - 1).enqueuedAt()), s.toString());
        }
        assertFalse(s.get(3).enqueuedAt().isAfter(Instant.now()));
        assertThrows(UnsupportedOperationException.class, () -> s.remove(0));
        // one more wraps once more; a ring of one holds the last only
        r.record(AR, 1, F32, SUM, -1, 4, 0);
        assertEquals(List.of(8L, 9L, 10L, 11L), sequences(r));
        FlightRecorder one = new FlightRecorder(1);
        one.record(AR, 1, F32, SUM, -1, 4, 0);
        one.record(AR, 2, F32, SUM, -1, 8, 0);
        assertEquals(List.of(2L), sequences(one));
        assertEquals(2, one.snapshot().get(0).count());
    }

    @Test
    void eachFieldIsKeptAndNamedAsNcclNamesIt() {
        FlightRecorder r = new FlightRecorder(16);
        r.record(TraceOperation.broadcast.code(), 7, DataType.BFLOAT16.code(), -1, 3, 14, 0x10);
        r.record(TraceOperation.send.code(), 9, DataType.FLOAT8_E5M2.code(), -1, 2, 9, 0x20);
        r.record(TraceOperation.reduceScatter.code(), 5, DataType.INT64.code(), ReduceOp.AVG.code(), -1, 160, 0x30);
        r.record(TraceOperation.reduce.code(), 1, DataType.UINT8.code(), 5, 0, 1, 0x40);
        r.record(TraceOperation.group.code(), 2, -1, -1, -1, 0, -1L);
        List<TraceEntry> s = r.snapshot();
        assertEquals(List.of("broadcast 7 ncclBfloat16 null 3 14 0x10", "send 9 ncclFloat8e5m2 null 2 9 0x20",
                "reduceScatter 5 ncclInt64 ncclAvg null 160 0x30", "reduce 1 ncclUint8 ncclPreMulSum(5) 0 1 0x40",
                "group 2 null null null 0 0xffffffffffffffff"), s.stream().map(e -> e.operation() + " " + e.count() + " "
                        + e.dataType() + " " + e.reduceOp() + " " + e.peer() + " " + e.bytes() + " " + e.streamHex())
                        .collect(Collectors.toList()));
    }

    @Test
    void lastCompletedIsTheEndOfTheCompletedPrefixWhateverTheOrderOfTheMarks() {
        FlightRecorder r = new FlightRecorder(4);
        for (int i = 0; i < 4; i++) {
            r.record(AR, 1, F32, SUM, -1, 4, 0);
        }
        assertEquals(0, r.lastCompleted());
        assertEquals(1, r.oldestPending());
        r.completed(2);
        r.completed(3);
        assertEquals(0, r.lastCompleted(), "1 is not completed yet");
        assertEquals(1, r.oldestPending());
        r.completed(1);
        assertEquals(3, r.lastCompleted(), "1 fills the gap before the out-of-order 2 and 3");
        assertEquals(4, r.oldestPending());
        r.completed(3); // again: nothing changes
        assertEquals(3, r.lastCompleted());
        r.completed(4);
        assertEquals(4, r.lastCompleted());
        assertEquals(0, r.oldestPending(), "none pending");
        assertEquals(List.of(TraceEntry.State.COMPLETED), r.snapshot().stream().map(TraceEntry::state).distinct()
                .collect(Collectors.toList()));
        r.snapshot().forEach(e -> assertTrue(e.completedAfterMicros() >= 0, e.toString()));

        // the ring wraps: 5..8 overwrite 1..4
        for (int i = 0; i < 4; i++) {
            r.record(AR, 1, F32, SUM, -1, 4, 0);
        }
        assertEquals(4, r.lastCompleted());
        assertEquals(5, r.oldestPending());
        r.completed(7);
        r.failed(6);
        assertEquals(4, r.lastCompleted());
        assertEquals(5, r.oldestPending());
        r.completed(5);
        assertEquals(5, r.lastCompleted(), "the failed 6 holds it back");
        assertEquals(8, r.oldestPending(), "6 failed and 7 completed: 8 is the oldest pending");
        r.completed(6); // a failed operation keeps its mark
        assertEquals(5, r.lastCompleted());
        r.completed(8);
        assertEquals(5, r.lastCompleted());
        assertEquals(0, r.oldestPending());
        List<TraceEntry> s = r.snapshot();
        assertEquals(List.of("5 COMPLETED", "6 FAILED", "7 COMPLETED", "8 COMPLETED"), s.stream()
                .map(e -> e.sequence() + " " + e.state()).collect(Collectors.toList()));
        s.forEach(e -> assertNotNull(e.completedAfterMicros(), e.toString()));
    }

    @Test
    void oneStreamsMarkerCompletesOnlyThatStreamsOperations() {
        FlightRecorder r = new FlightRecorder(8);
        long a = 0xa0;
        long b = 0xb0;
        for (long stream : new long[] {a, b, a, a, b}) {
            r.record(AR, 1, F32, SUM, -1, 4, stream);
        }
        r.completedThroughOn(4, a);   // a's marker after #4: #1, #3 and #4 (not #5, recorded later)
        assertEquals(1, r.lastCompleted());
        assertEquals(2, r.oldestPending(), "#2 runs on b");
        assertEquals(List.of("1 COMPLETED", "2 ENQUEUED", "3 COMPLETED", "4 COMPLETED", "5 ENQUEUED"),
                r.snapshot().stream().map(e -> e.sequence() + " " + e.state()).collect(Collectors.toList()));
        r.completedThroughOn(0, b);   // none
        assertEquals(2, r.oldestPending());
        r.completedThroughOn(2, b);
        assertEquals(4, r.lastCompleted(), "#2 fills the gap");
        assertEquals(5, r.oldestPending());
        r.completedThroughOn(5, 0xc0);   // a stream none of them ran on
        assertEquals(5, r.oldestPending());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> r.completedThroughOn(6, a));
        assertEquals("sequence 6 was never recorded (recorded: 1..5)", e.getMessage());
    }

    @Test
    void inOrderMarksCountEvenForOperationsTheRingNoLongerHolds() {
        FlightRecorder r = new FlightRecorder(2);
        for (int i = 0; i < 6; i++) {
            r.record(AR, 1, F32, SUM, -1, 4, 0);
        }
        for (int i = 1; i <= 6; i++) {
            r.completed(i);
            assertEquals(i, r.lastCompleted());
        }
        assertEquals(List.of("5 COMPLETED", "6 COMPLETED"), r.snapshot().stream().map(e -> e.sequence() + " " + e.state())
                .collect(Collectors.toList()));

        // an out-of-order mark of an operation already overwritten is lost (documented)
        FlightRecorder lost = new FlightRecorder(2);
        for (int i = 0; i < 4; i++) {
            lost.record(AR, 1, F32, SUM, -1, 4, 0);
        }
        lost.completed(2); // its slot holds 4 now: dropped
        lost.completed(1);
        assertEquals(1, lost.lastCompleted());
        assertEquals(2, lost.oldestPending(), "an operation overwritten before its mark counts as pending");
        lost.completed(2); // marked again in order: counts
        assertEquals(2, lost.lastCompleted());
        assertEquals(List.of("3 ENQUEUED", "4 ENQUEUED"), lost.snapshot().stream().map(e -> e.sequence() + " " + e.state())
                .collect(Collectors.toList()));
    }

    @Test
    void capacityOutOfRangeIsRefusedNamingTheVariableAndTheRange() {
        for (int bad : new int[] {0, -1, 10_000_001, Integer.MAX_VALUE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new FlightRecorder(bad));
            assertEquals("flight recorder capacity (NCCL4J_TRACE_BUFFER) must be from 1 to 10000000 operations, got "
                    + bad, e.getMessage());
        }
        assertEquals(10_000_000, FlightRecorder.MAX_CAPACITY);
        assertEquals(66, FlightRecorder.BYTES_PER_ENTRY);
    }

    @Test
    void invalidRecordsAndMarksAreRefusedAndRecordNothing() {
        FlightRecorder r = new FlightRecorder(8);
        String[] bad = {"12 1 0 0 0 0", "-1 1 0 0 0 0", "0 1 12 0 0 0", "0 1 -2 0 0 0", "0 1 0 -2 0 0", "0 1 0 0 -2 0",
            "0 -1 0 0 0 0", "0 1 0 0 0 -1"};
        for (String b : bad) {
            long[] v = java.util.Arrays.stream(b.split(" ")).mapToLong(Long::parseLong).toArray();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> r.record((int) v[0], v[1], (int) v[2], (int) v[3], (int) v[4], v[5], 0), b);
            assertTrue(e.getMessage().startsWith("cannot record operation " + v[0] + " (codes 0..11), dataType " + v[2]
                    + " (-1 or 0..11), reduceOp " + v[3]), e.getMessage());
        }
        assertEquals(0, r.lastEnqueued());
        r.record(AR, 1, F32, SUM, -1, 4, 0);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> r.completed(2));
        assertEquals("sequence 2 was never recorded (recorded: 1..1)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> r.failed(0));
        assertEquals("sequence 0 was never recorded (recorded: 1..1)", e.getMessage());
        assertEquals(0, r.lastCompleted());
    }

    @Test
    void operationsHaveStableCodesAndComeFromNcclFunctions() {
        assertEquals(List.of("allReduce", "broadcast", "reduce", "allGather", "reduceScatter", "alltoAll", "gather",
                "scatter", "send", "recv", "group", "graphLaunch"), java.util.Arrays.stream(TraceOperation.values()).map(Enum::name)
                        .collect(Collectors.toList()));
        for (TraceOperation o : TraceOperation.values()) {
            assertEquals(o.ordinal(), o.code());
            assertEquals(o, TraceOperation.fromCode(o.code()));
        }
        assertEquals(TraceOperation.allReduce, TraceOperation.of(NcclFunction.ncclAllReduce));
        assertEquals(TraceOperation.alltoAll, TraceOperation.of(NcclFunction.ncclAlltoAll));
        assertEquals(TraceOperation.recv, TraceOperation.of(NcclFunction.ncclRecv));
        assertEquals(TraceOperation.group, TraceOperation.of(NcclFunction.ncclGroupEnd));
        assertEquals("ncclCommSplit is not an operation the flight recorder records", assertThrows(
                IllegalArgumentException.class, () -> TraceOperation.of(NcclFunction.ncclCommSplit)).getMessage());
        assertEquals("trace operation code 12 is not one of 0..11", assertThrows(IllegalArgumentException.class,
                () -> TraceOperation.fromCode(12)).getMessage());
        assertEquals(List.of(TraceOperation.broadcast, TraceOperation.reduce, TraceOperation.gather,
                TraceOperation.scatter), java.util.Arrays.stream(TraceOperation.values()).filter(TraceOperation::rooted)
                        .collect(Collectors.toList()));
        assertEquals(List.of(TraceOperation.send, TraceOperation.recv), java.util.Arrays.stream(TraceOperation.values())
                .filter(TraceOperation::pointToPoint).collect(Collectors.toList()));
        assertEquals(List.of(TraceOperation.allReduce, TraceOperation.reduce, TraceOperation.reduceScatter),
                java.util.Arrays.stream(TraceOperation.values()).filter(TraceOperation::reduces)
                        .collect(Collectors.toList()));
        // the names of the data types follow DataType's codes
        for (DataType t : DataType.values()) {
            assertEquals("nccl" + switch (t) {
                case INT8 -> "Int8";
                case UINT8 -> "Uint8";
                case INT32 -> "Int32";
                case UINT32 -> "Uint32";
                case INT64 -> "Int64";
                case UINT64 -> "Uint64";
                case FLOAT16 -> "Float16";
                case FLOAT32 -> "Float32";
                case FLOAT64 -> "Float64";
                case BFLOAT16 -> "Bfloat16";
                case FLOAT8_E4M3 -> "Float8e4m3";
                case FLOAT8_E5M2 -> "Float8e5m2";
            }, TraceNames.dataType(t.code()));
        }
        assertEquals(List.of("ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"), java.util.Arrays.stream(
                ReduceOp.builtIn()).map(o -> TraceNames.reduceOp(o.code())).collect(Collectors.toList()));
    }
}
