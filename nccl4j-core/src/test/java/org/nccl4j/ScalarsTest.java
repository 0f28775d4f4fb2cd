package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Host scalars as the bits of each {@link DataType}: IEEE binary16 and bfloat16 against known bit patterns,
 * round to nearest even at every kind of boundary (normal, subnormal, overflow), and exhaustive round trips
 * over all 65,536 patterns of each 16-bit format.
 */
class ScalarsTest {

    private static String h(short bits) {
        return String.format("0x%04x", bits & 0xffff);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "1.0, 0x3c00", "-2.0, 0xc000", "65504.0, 0x7bff", "0.0, 0x0000", "-0.0, 0x8000", "0.5, 0x3800",
        "2.5, 0x4100", "0.333333343267, 0x3555", "6.103515625E-5, 0x0400", // smallest normal, 2^-14
        "5.9604644775390625E-8, 0x0001", // smallest subnormal, 2^-24
        "-5.9604644775390625E-8, 0x8001",
        "6.097555160522461E-5, 0x03ff", // largest subnormal, 1023 x 2^-24
        "Infinity, 0x7c00", "-Infinity, 0xfc00", "1.0E10, 0x7c00", "-1.0E10, 0xfc00", "1.0E-10, 0x0000",
        "-1.0E-10, 0x8000",
        // round to nearest even
        "1.00048828125, 0x3c00", // 1 + 2^-11: halfway between 0x3c00 and 0x3c01, to even 0x3c00
        "1.00146484375, 0x3c02", // 1 + 3 x 2^-11: halfway between 0x3c01 and 0x3c02, to even 0x3c02
        "2049.0, 0x6800", "2051.0, 0x6802", // spacing 2: ties to even
        "65519.0, 0x7bff", "65520.0, 0x7c00", // halfway to 65536: rounds to even, which overflows to infinity
        "2.98023223876953125E-8, 0x0000", // 2^-25, half the smallest subnormal: ties to even 0
        "8.940696716308594E-8, 0x0002", // 1.5 x 2^-24: halfway between 1 and 2 units, to even 2
        "1.4901161193847656E-7, 0x0002", // 2.5 x 2^-24: halfway between 2 and 3 units, to even 2
        "6.1005353927612305E-5, 0x0400", // 1023.5 x 2^-24: rounds up out of the subnormals
        "1.4901161193847656E-8, 0x0000" // 2^-26
    })
    void halfBitsOfKnownValues(double value, String bits) {
        assertEquals(bits, h(Scalars.halfBits((float) value)));
    }

    @Test
    void justAboveOrBelowAHalfwayPointRoundsToTheNearest() {
        assertEquals("0x3c01", h(Scalars.halfBits(Math.nextUp(1.00048828125f))));
        assertEquals("0x3c00", h(Scalars.halfBits(Math.nextDown(1.00048828125f))));
        assertEquals("0x0001", h(Scalars.halfBits(Math.nextUp(0x1p-25f))));
        assertEquals("0x0000", h(Scalars.halfBits(Math.nextDown(0x1p-25f))));
        assertEquals("0x7bff", h(Scalars.halfBits(Math.nextDown(65520f))));
        assertEquals("0x3f81", h(Scalars.bfloat16Bits(Math.nextUp(1.00390625f))));
        assertEquals("0x3f80", h(Scalars.bfloat16Bits(Math.nextDown(1.00390625f))));
        assertEquals("0x3f81", h(Scalars.bfloat16Bits(Math.nextDown(1.01171875f))));
        assertEquals("0x3f82", h(Scalars.bfloat16Bits(Math.nextUp(1.01171875f))));
    }

    @Test
    void halfBitsOfNaNIsAQuietNaNKeepingTheSign() {
        assertEquals("0x7e00", h(Scalars.halfBits(Float.NaN)));
        assertEquals("0x7e00", h(Scalars.halfBits(Float.intBitsToFloat(0x7f800001)))); // signaling, tiny payload
        assertEquals("0xfe00", h(Scalars.halfBits(Float.intBitsToFloat(0xffc00000))));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({"0x3c00, 1.0", "0xc000, -2.0", "0x7bff, 65504.0", "0x0001, 5.9604644775390625E-8",
        "0x8001, -5.9604644775390625E-8", "0x03ff, 6.097555160522461E-5", "0x0400, 6.103515625E-5",
        "0x3555, 0.333251953125", "0x7c00, Infinity", "0xfc00, -Infinity", "0x0000, 0.0"})
    void halfToFloatOfKnownPatterns(String bits, double value) {
        assertEquals((float) value, Scalars.halfToFloat((short) Integer.parseInt(bits.substring(2), 16)));
    }

    @Test
    void halfToFloatOfSpecials() {
        assertEquals(Float.floatToRawIntBits(-0.0f), Float.floatToRawIntBits(Scalars.halfToFloat((short) 0x8000)));
        assertTrue(Float.isNaN(Scalars.halfToFloat((short) 0x7e00)));
        assertTrue(Float.isNaN(Scalars.halfToFloat((short) 0x7c01)));
        assertTrue(Float.isNaN(Scalars.halfToFloat((short) 0xffff)));
    }

    @Test
    void everyHalfPatternRoundTrips() {
        for (int b = 0; b <= 0xffff; b++) {
            short h = (short) b;
            float f = Scalars.halfToFloat(h);
            boolean nan = (b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0;
            if (nan) {
                assertTrue(Float.isNaN(f), h(h));
            } else {
                assertEquals(h(h), h(Scalars.halfBits(f)), "round trip of " + f);
            }
        }
    }

    @Test
    void everyHalfMidpointRoundsToEven() {
        // between consecutive positive finite halves a and a+1 the float midpoint must go to the even one
        for (int a = 0; a < 0x7bff; a++) {
            float lo = Scalars.halfToFloat((short) a);
            float hi = Scalars.halfToFloat((short) (a + 1));
            float mid = (float) (((double) lo + hi) / 2);
            assertEquals((double) lo + hi, 2.0 * mid, "the midpoint is exact in float");
            int expected = (a & 1) == 0 ? a : a + 1;
            assertEquals(h((short) expected), h(Scalars.halfBits(mid)), "midpoint of " + h((short) a));
            assertEquals(h((short) a), h(Scalars.halfBits(Math.nextDown(mid))));
            assertEquals(h((short) (a + 1)), h(Scalars.halfBits(Math.nextUp(mid))));
        }
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({"1.0, 0x3f80", "-2.0, 0xc000", "3.0, 0x4040", "2.5, 0x4020", "0.0, 0x0000", "-0.0, 0x8000",
        "Infinity, 0x7f80", "-Infinity, 0xff80", "3.3895313892515355E38, 0x7f7f", // largest finite bfloat16
        "3.4028234663852886E38, 0x7f80", // Float.MAX_VALUE rounds up to infinity
        "1.00390625, 0x3f80", // 1 + 2^-8: halfway, to even
        "1.01171875, 0x3f82", // 1 + 3 x 2^-8: halfway, to even
        "9.183549615799121E-41, 0x0001"}) // smallest bfloat16 subnormal, 2^-133
    void bfloat16BitsOfKnownValues(double value, String bits) {
        assertEquals(bits, h(Scalars.bfloat16Bits((float) value)));
    }

    @Test
    void bfloat16OfNaNStaysNaN() {
        assertEquals("0x7fc0", h(Scalars.bfloat16Bits(Float.NaN)));
        assertEquals("0x7fc0", h(Scalars.bfloat16Bits(Float.intBitsToFloat(0x7f800001))), "never rounds to infinity");
        assertEquals("0xffc0", h(Scalars.bfloat16Bits(Float.intBitsToFloat(0xff800001))));
        assertEquals("0x7fc1", h(Scalars.bfloat16Bits(Float.intBitsToFloat(0x7f810000))), "keeps the payload's top");
        assertTrue(Float.isNaN(Scalars.bfloat16ToFloat((short) 0x7fc0)));
    }

    @Test
    void everyBfloat16PatternRoundTrips() {
        for (int b = 0; b <= 0xffff; b++) {
            short x = (short) b;
            float f = Scalars.bfloat16ToFloat(x);
            assertEquals(b << 16, Float.floatToRawIntBits(f), "bfloat16 is the top half of a float");
            if (!Float.isNaN(f)) {
                assertEquals(h(x), h(Scalars.bfloat16Bits(f)));
            }
        }
    }

    @Test
    void bitsOfEachTypeAreInTheLowBytes() {
        assertEquals(0x40200000L, Scalars.bits(2.5, DataType.FLOAT32));
        assertEquals(Double.doubleToRawLongBits(2.5), Scalars.bits(2.5, DataType.FLOAT64));
        assertEquals(0x4100L, Scalars.bits(2.5, DataType.FLOAT16));
        assertEquals(0xb800L, Scalars.bits(-0.5, DataType.FLOAT16), "no sign extension");
        assertEquals(0xbf80L, Scalars.bits(-1, DataType.BFLOAT16));
        assertEquals(0xfffffffdL, Scalars.bits(-3, DataType.INT32));
        assertEquals(7L, Scalars.bits(7.9, DataType.UINT32), "integers truncate toward zero");
        assertEquals(-3L, Scalars.bits(-3, DataType.INT64));
        assertEquals(0xffL, Scalars.bits(-1, DataType.INT8));
        assertEquals(0xc8L, Scalars.bits(200, DataType.UINT8));
        assertEquals(1L << 40, Scalars.bits(0x1p40, DataType.UINT64));
        for (DataType t : new DataType[] {DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2}) {
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> Scalars.bits(1, t));
            assertEquals("a host scalar of type " + t + " is not supported: pass the scalar in a DeviceBuffer instead",
                    e.getMessage());
        }
    }
}
