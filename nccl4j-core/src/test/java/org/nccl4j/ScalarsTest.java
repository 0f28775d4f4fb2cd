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

    // ---------------------------------------------------------------- host scalars a type cannot hold

    private static final String I32 = "-2147483648..2147483647";

    @ParameterizedTest(name = "{1} {0}")
    @CsvSource(delimiter = '|', value = {
        // a fraction on an integer type
        "0.5 | INT32 | scalar 0.5 cannot be held exactly by INT32: an integer type has no fraction (it would be "
            + "truncated to 0, multiplying every element by 0); pass a whole number in " + I32 + ", or use a floating "
            + "type",
        "7.9 | UINT32 | scalar 7.9 cannot be held exactly by UINT32: an integer type has no fraction (it would be "
            + "truncated to 7, multiplying every element by 7); pass a whole number in 0..4294967295, or use a "
            + "floating type",
        "-0.25 | INT8 | scalar -0.25 cannot be held exactly by INT8: an integer type has no fraction (it would be "
            + "truncated to 0, multiplying every element by 0); pass a whole number in -128..127, or use a floating "
            + "type",
        "1.5 | UINT64 | scalar 1.5 cannot be held exactly by UINT64: an integer type has no fraction (it would be "
            + "truncated to 1, multiplying every element by 1); pass a whole number in 0..18446744073709551615, or "
            + "use a floating type",
        // NaN and the infinities on an integer type
        "NaN | INT32 | scalar NaN cannot be held exactly by INT32: an integer type has no NaN; pass a whole number in "
            + I32 + ", or use a floating type",
        "Infinity | INT64 | scalar Infinity cannot be held exactly by INT64: an integer type has no infinity; pass a "
            + "whole number in -9223372036854775808..9223372036854775807, or use a floating type",
        "-Infinity | UINT8 | scalar -Infinity cannot be held exactly by UINT8: an integer type has no infinity; pass a "
            + "whole number in 0..255, or use a floating type",
        // outside the integer type's range
        "128 | INT8 | scalar 128 cannot be held exactly by INT8: it is outside INT8's range; pass a whole number in "
            + "-128..127, or use a wider type",
        "-129 | INT8 | scalar -129 cannot be held exactly by INT8: it is outside INT8's range; pass a whole number in "
            + "-128..127, or use a wider type",
        "256 | UINT8 | scalar 256 cannot be held exactly by UINT8: it is outside UINT8's range; pass a whole number in "
            + "0..255, or use a wider type",
        "2147483648 | INT32 | scalar 2147483648 cannot be held exactly by INT32: it is outside INT32's range; pass a "
            + "whole number in " + I32 + ", or use a wider type",
        "-2147483649 | INT32 | scalar -2147483649 cannot be held exactly by INT32: it is outside INT32's range; pass a "
            + "whole number in " + I32 + ", or use a wider type",
        "4294967296 | UINT32 | scalar 4294967296 cannot be held exactly by UINT32: it is outside UINT32's range; pass "
            + "a whole number in 0..4294967295, or use a wider type",
        "9.223372036854775808E18 | INT64 | scalar 9223372036854775808 cannot be held exactly by INT64: it is outside "
            + "INT64's range; pass a whole number in -9223372036854775808..9223372036854775807, or use a floating type",
        "-9.223372036854777856E18 | INT64 | scalar -9223372036854777856 cannot be held exactly by INT64: it is outside "
            + "INT64's range; pass a whole number in -9223372036854775808..9223372036854775807, or use a floating type",
        "1.8446744073709551616E19 | UINT64 | scalar 18446744073709551616 cannot be held exactly by UINT64: it is "
            + "outside UINT64's range; pass a whole number in 0..18446744073709551615, or use a floating type",
        "1.0E30 | INT64 | scalar 1.0E30 cannot be held exactly by INT64: it is outside INT64's range; pass a whole "
            + "number in -9223372036854775808..9223372036854775807, or use a floating type",
        // a negative value on an unsigned type
        "-1 | UINT8 | scalar -1 cannot be held exactly by UINT8: UINT8 is unsigned; pass a whole number in 0..255, or "
            + "use a signed type",
        "-3 | UINT32 | scalar -3 cannot be held exactly by UINT32: UINT32 is unsigned; pass a whole number in "
            + "0..4294967295, or use a signed type",
        "-1 | UINT64 | scalar -1 cannot be held exactly by UINT64: UINT64 is unsigned; pass a whole number in "
            + "0..18446744073709551615, or use a signed type",
        // a finite value that overflows a floating type
        "1.0E6 | FLOAT16 | scalar 1000000 overflows FLOAT16, whose largest finite value is 65504 (it would round to "
            + "infinity): pass a magnitude of at most 65504, or use FLOAT32",
        "-65520 | FLOAT16 | scalar -65520 overflows FLOAT16, whose largest finite value is 65504 (it would round to "
            + "infinity): pass a magnitude of at most 65504, or use FLOAT32",
        "1.0E39 | FLOAT16 | scalar 1.0E39 overflows FLOAT16, whose largest finite value is 65504 (it would round to "
            + "infinity): pass a magnitude of at most 65504, or use FLOAT64",
        "3.4E38 | BFLOAT16 | scalar 3.4E38 overflows BFLOAT16, whose largest finite value is 3.3895314E38 (it would "
            + "round to infinity): pass a magnitude of at most 3.3895314E38, or use FLOAT32",
        "1.0E39 | BFLOAT16 | scalar 1.0E39 overflows BFLOAT16, whose largest finite value is 3.3895314E38 (it would "
            + "round to infinity): pass a magnitude of at most 3.3895314E38, or use FLOAT64",
        "1.0E39 | FLOAT32 | scalar 1.0E39 overflows FLOAT32, whose largest finite value is 3.4028235E38 (it would "
            + "round to infinity): pass a magnitude of at most 3.4028235E38, or use FLOAT64",
        "-1.7976931348623157E308 | FLOAT32 | scalar -1.7976931348623157E308 overflows FLOAT32, whose largest finite "
            + "value is 3.4028235E38 (it would round to infinity): pass a magnitude of at most 3.4028235E38, or use "
            + "FLOAT64"
    })
    void aScalarTheTypeCannotHoldIsRefused(double scalar, DataType type, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Scalars.checkedBits(scalar, type));
        assertEquals(message, e.getMessage());
    }

    @ParameterizedTest(name = "{1} {0} -> {2}")
    @CsvSource({
        // whole numbers at both ends of each integer type's range, and -0.0
        "-128, INT8, 0x80", "127, INT8, 0x7f", "0, UINT8, 0x0", "255, UINT8, 0xff", "-0.0, UINT8, 0x0",
        "-2147483648, INT32, 0x80000000", "2147483647, INT32, 0x7fffffff", "3, INT32, 0x3",
        "4294967295, UINT32, 0xffffffff", "-0.0, UINT32, 0x0",
        "-9.223372036854775808E18, INT64, 0x8000000000000000", "9.223372036854774784E18, INT64, 0x7ffffffffffffc00",
        "9.223372036854775808E18, UINT64, 0x8000000000000000", // 2^63: above the long range, still a UINT64
        "1.8446744073709549568E19, UINT64, 0xfffffffffffff800", // the largest double below 2^64
        // floating types: the largest finite values, rounding into range, NaN and the infinities
        "65504, FLOAT16, 0x7bff", "-65504, FLOAT16, 0xfbff", "65519, FLOAT16, 0x7bff", "1.0E-10, FLOAT16, 0x0",
        "0.1, FLOAT16, 0x2e66", "NaN, FLOAT16, 0x7e00", "Infinity, FLOAT16, 0x7c00", "-Infinity, FLOAT16, 0xfc00",
        "3.3895313892515355E38, BFLOAT16, 0x7f7f", "3.3895314E38, BFLOAT16, 0x7f7f", "Infinity, BFLOAT16, 0x7f80",
        "3.4028234663852886E38, FLOAT32, 0x7f7fffff", "3.4028235E38, FLOAT32, 0x7f7fffff",
        "1.0E-50, FLOAT32, 0x0", "NaN, FLOAT32, 0x7fc00000", "-Infinity, FLOAT32, 0xff800000",
        "1.7976931348623157E308, FLOAT64, 0x7fefffffffffffff", "1.0E-320, FLOAT64, 0x7e8",
        "0.5, FLOAT32, 0x3f000000"
    })
    void aScalarTheTypeHoldsIsConverted(double scalar, DataType type, String bits) {
        assertEquals(bits, "0x" + Long.toHexString(Scalars.checkedBits(scalar, type)));
        assertEquals(Scalars.bits(scalar, type), Scalars.checkedBits(scalar, type), "the check changes no bits");
    }

    @Test
    void fp8HostScalarsStayUnsupportedBeforeAnyRangeCheck() {
        for (DataType t : new DataType[] {DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2}) {
            assertThrows(UnsupportedOperationException.class, () -> Scalars.checkedBits(1.0E6, t));
        }
    }

    @Test
    void everyTypeButFp8IsChecked() {
        for (DataType t : DataType.values()) {
            if (t.isFp8()) {
                continue;
            }
            assertEquals(0L, Scalars.checkedBits(0, t), t + " holds 0");
            if (t.isFloating()) {
                Scalars.checkedBits(0.5, t);
                Scalars.checkedBits(Double.NaN, t);
                Scalars.checkedBits(Double.NEGATIVE_INFINITY, t);
                if (t == DataType.FLOAT64) {
                    Scalars.checkedBits(Double.MAX_VALUE, t);
                } else {
                    assertThrows(IllegalArgumentException.class, () -> Scalars.checkedBits(1.0E39, t), t.toString());
                }
            } else {
                for (double v : new double[] {0.5, Double.NaN, Double.POSITIVE_INFINITY, 0x1p64, -0x1p64}) {
                    assertThrows(IllegalArgumentException.class, () -> Scalars.checkedBits(v, t), t + " " + v);
                }
            }
        }
    }
}
