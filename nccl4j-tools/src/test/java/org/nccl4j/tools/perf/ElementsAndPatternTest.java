package org.nccl4j.tools.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;
import org.nccl4j.DataType;
import org.nccl4j.ReduceOp;

class ElementsAndPatternTest {
    private static double roundTrip(DataType t, double v) {
        ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        Elements.put(b, t, v);
        assertEquals(t.size(), b.position(), "bytes written for " + t);
        return Elements.get(b, t, 0);
    }

    @Test
    void smallWholeNumbersAreExactInEveryType() {
        for (DataType t : DataType.values()) {
            for (int v = 0; v <= 8; v++) {
                assertEquals(v, roundTrip(t, v), 0, t + " " + v);
            }
            assertEquals(64, roundTrip(t, 64), 0, t + " 64");
        }
    }

    @Test
    void knownBitPatterns() {
        assertEquals(0x3c00, Elements.encodeMinifloat(1.0, 5, 10, false));       // half 1.0
        assertEquals(0xc000, Elements.encodeMinifloat(-2.0, 5, 10, false));      // half -2.0
        assertEquals(0x7bff, Elements.encodeMinifloat(65504, 5, 10, false));     // half max
        assertEquals(0x0001, Elements.encodeMinifloat(Math.scalb(1.0, -24), 5, 10, false)); // smallest subnormal
        assertEquals(0x38, Elements.encodeMinifloat(1.0, 4, 3, true));            // e4m3 1.0
        assertEquals(0x7e, Elements.encodeMinifloat(448, 4, 3, true));            // e4m3 max
        assertEquals(0x7e, Elements.encodeMinifloat(1000, 4, 3, true));           // saturates
        assertEquals(0x3c, Elements.encodeMinifloat(1.0, 5, 2, false));           // e5m2 1.0
        assertEquals(0x3f80, Elements.bfloat16Bits(1.0f));
        assertEquals(0.34375, Elements.decodeMinifloat(Elements.encodeMinifloat(0.33, 4, 3, true), 4, 3, true));
        assertEquals(0.3125, Elements.decodeMinifloat(Elements.encodeMinifloat(0.328125, 4, 3, true), 4, 3, true)); // tie to even
        assertTrue(Double.isNaN(Elements.decodeMinifloat(0x7f, 4, 3, true)));
        assertEquals(Double.POSITIVE_INFINITY, Elements.decodeMinifloat(0x7c, 5, 2, false));
        assertEquals(4294967295.0, roundTrip(DataType.UINT32, 4294967295.0));
        assertEquals(255, roundTrip(DataType.UINT8, 255));
        assertEquals(-1, roundTrip(DataType.INT8, -1));
    }

    @Test
    void reductionsOfThePatternAreExactForUpTo8Ranks() {
        for (ReduceOp op : Elements.allOps()) {
            for (int n = 1; n <= 8; n++) {
                for (long i = 0; i < 64; i++) {
                    double r = Pattern.reduced(op, DataType.FLOAT32, n, i);
                    if (op != ReduceOp.AVG) {
                        for (DataType t : DataType.values()) {
                            assertEquals(r, roundTrip(t, r), 0, op + " n=" + n + " i=" + i + " " + t);
                        }
                    }
                    assertTrue(r >= 0 && r <= 64, op + " " + r);
                }
            }
        }
        assertEquals(1.0, Pattern.reduced(ReduceOp.AVG, DataType.INT32, 2, 2) + 0.5, 0.5); // whole division
    }

    @Test
    void expectedValuesPerOperation() {
        int n = 4;
        long b = 3;
        // all_gather: block q of the result is rank q's input
        for (int q = 0; q < n; q++) {
            for (long i = 0; i < b; i++) {
                assertEquals(Pattern.input(null, q, i),
                        Pattern.expected(Operation.ALL_GATHER, null, DataType.FLOAT32, n, 0, 2, b, q * b + i), 0);
                // alltoall: rank 2 receives, at block q, rank q's block 2
                assertEquals(Pattern.input(null, q, 2 * b + i),
                        Pattern.expected(Operation.ALLTOALL, null, DataType.FLOAT32, n, 0, 2, b, q * b + i), 0);
            }
        }
        assertEquals(Pattern.input(null, 1, 5), Pattern.expected(Operation.BROADCAST, null, DataType.INT8, n, 1, 3, 9, 5), 0);
        assertEquals(Pattern.input(null, 3, 5), Pattern.expected(Operation.SENDRECV, null, DataType.INT8, n, 0, 0, 9, 5), 0);
        assertEquals(Pattern.input(null, 0, 2 * b + 1),
                Pattern.expected(Operation.SCATTER, null, DataType.INT8, n, 0, 2, b, 1), 0);
        assertEquals(Pattern.reduced(ReduceOp.SUM, DataType.FLOAT32, n, 2 * b + 1),
                Pattern.expected(Operation.REDUCE_SCATTER, ReduceOp.SUM, DataType.FLOAT32, n, 0, 2, b, 1), 0);
        assertTrue(Double.isNaN(Pattern.expected(Operation.REDUCE, ReduceOp.SUM, DataType.FLOAT32, n, 0, 1, b, 0)));
        assertTrue(Pattern.checked(Operation.GATHER, 0, 0) && !Pattern.checked(Operation.GATHER, 1, 0));
        assertEquals(0, Pattern.tolerance(DataType.FLOAT32, ReduceOp.SUM, 3));
        assertTrue(Pattern.tolerance(DataType.FLOAT16, ReduceOp.AVG, 0.5) > 0);
    }
}
