package org.nccl4j;

import java.math.BigDecimal;

/**
 * Converts a host scalar to the bit pattern of a {@link DataType}, in the low bytes of a long; {@link #checkedBits}
 * first refuses a scalar the type cannot hold.
 */
final class Scalars {
    private Scalars() {
    }

    /**
     * {@link #bits} of a host scalar, refusing one that {@code type} cannot hold: on an integer type a fraction, NaN,
     * an infinity, a negative value on an unsigned type, or a value outside the type's range; on a floating type a
     * finite value that would round to infinity. A floating type may round a finite value to its nearest
     * representable one, and holds NaN and the infinities.
     *
     * @throws IllegalArgumentException naming {@code scalar}, its value, the type and what to pass instead
     * @throws UnsupportedOperationException for the fp8 types (as {@link #bits})
     */
    static long checkedBits(double v, DataType type) {
        if (!type.isFloating()) {
            checkInteger(v, type);
        }
        long bits = bits(v, type);
        if (type.isFloating() && !Double.isInfinite(v) && isInfinite(bits, type)) {
            throw new IllegalArgumentException("scalar " + text(v) + " overflows " + type
                    + ", whose largest finite value is " + largestFinite(type) + " (it would round to infinity): pass "
                    + "a magnitude of at most " + largestFinite(type) + ", or use "
                    + (type != DataType.FLOAT32 && Float.isFinite((float) v) ? DataType.FLOAT32 : DataType.FLOAT64));
        }
        return bits;
    }

    private static void checkInteger(double v, DataType type) {
        boolean unsigned = type == DataType.UINT8 || type == DataType.UINT32 || type == DataType.UINT64;
        int width = 8 * type.size();
        // the type's whole numbers are [low, high): high is exclusive so that 2^63 and 2^64 need no long
        double low = unsigned ? 0 : -Math.scalb(1.0, width - 1);
        double high = Math.scalb(1.0, unsigned ? width : width - 1);
        String range = text(low) + ".." + new BigDecimal(high).subtract(BigDecimal.ONE).toPlainString();
        String why;
        String instead = "use a floating type";
        if (Double.isNaN(v)) {
            why = "an integer type has no NaN";
        } else if (Double.isInfinite(v)) {
            why = "an integer type has no infinity";
        } else if (v != Math.rint(v)) {
            long truncated = (long) v;
            why = "an integer type has no fraction (it would be truncated to " + truncated
                    + ", multiplying every element by " + truncated + ")";
        } else if (unsigned && v < 0) {
            why = type + " is unsigned";
            instead = "use a signed type";
        } else if (v < low || v >= high) {
            why = "it is outside " + type + "'s range";
            instead = width < 64 ? "use a wider type" : instead;
        } else {
            return;
        }
        throw new IllegalArgumentException("scalar " + text(v) + " cannot be held exactly by " + type + ": " + why
                + "; pass a whole number in " + range + ", or " + instead);
    }

    /** Whether {@code bits} of a floating {@code type} are an infinity. */
    private static boolean isInfinite(long bits, DataType type) {
        switch (type) {
            case FLOAT16:
                return Float.isInfinite(halfToFloat((short) bits));
            case BFLOAT16:
                return Float.isInfinite(bfloat16ToFloat((short) bits));
            case FLOAT32:
                return Float.isInfinite(Float.intBitsToFloat((int) bits));
            default:
                return Double.isInfinite(Double.longBitsToDouble(bits));
        }
    }

    private static String largestFinite(DataType type) {
        switch (type) {
            case FLOAT16:
                return text(halfToFloat((short) 0x7bff));
            case BFLOAT16:
                return Float.toString(bfloat16ToFloat((short) 0x7f7f));
            case FLOAT32:
                return Float.toString(Float.MAX_VALUE);
            default:
                return Double.toString(Double.MAX_VALUE);
        }
    }

    /** A scalar as a reader wrote it: a whole number up to 2^64 in digits, anything else as {@link Double}. */
    private static String text(double v) {
        if (v == Math.rint(v) && Math.abs(v) <= 0x1p64) {
            return new BigDecimal(v).toPlainString();
        }
        return Double.toString(v);
    }

    /** {@code v} as the bits of {@code type}, unchecked: integers truncate toward zero, floats round to nearest. */
    static long bits(double v, DataType type) {
        switch (type) {
            case INT8:
            case UINT8:
                return ((long) v) & 0xffL;
            case INT32:
            case UINT32:
                return ((long) v) & 0xffff_ffffL;
            case INT64:
                return (long) v;
            case UINT64:
                return v >= 0x1p63 ? (long) (v - 0x1p63) | Long.MIN_VALUE : (long) v;
            case FLOAT16:
                return halfBits((float) v) & 0xffffL;
            case BFLOAT16:
                return bfloat16Bits((float) v) & 0xffffL;
            case FLOAT32:
                return Float.floatToRawIntBits((float) v) & 0xffff_ffffL;
            case FLOAT64:
                return Double.doubleToRawLongBits(v);
            default:
                throw new UnsupportedOperationException("a host scalar of type " + type
                        + " is not supported: pass the scalar in a DeviceBuffer instead");
        }
    }

    /** IEEE 754 binary16, round to nearest even. */
    static short halfBits(float f) {
        int x = Float.floatToRawIntBits(f);
        int sign = (x >>> 16) & 0x8000;
        int exp = (x >>> 23) & 0xff;
        int mant = x & 0x7fffff;
        if (exp == 0xff) {
            return (short) (sign | 0x7c00 | (mant != 0 ? 0x200 : 0));
        }
        int e = exp - 127 + 15;
        if (e >= 0x1f) {
            return (short) (sign | 0x7c00);
        }
        if (e <= 0) {
            if (e < -10) {
                return (short) sign;
            }
            mant |= 0x800000;
            int shift = 14 - e;
            int half = mant >> shift;
            int rem = mant & ((1 << shift) - 1);
            int mid = 1 << (shift - 1);
            if (rem > mid || (rem == mid && (half & 1) != 0)) {
                half++;
            }
            return (short) (sign | half);
        }
        int half = (e << 10) | (mant >> 13);
        int rem = mant & 0x1fff;
        if (rem > 0x1000 || (rem == 0x1000 && (half & 1) != 0)) {
            half++;
        }
        return (short) (sign | half);
    }

    /** binary16 bits to float. */
    static float halfToFloat(short h) {
        int bits = h & 0xffff;
        int sign = (bits & 0x8000) << 16;
        int exp = (bits >>> 10) & 0x1f;
        int mant = bits & 0x3ff;
        if (exp == 0x1f) {
            return Float.intBitsToFloat(sign | 0x7f800000 | (mant << 13));
        }
        if (exp == 0) {
            float v = mant * 0x1p-24f;
            return sign != 0 ? -v : v;
        }
        return Float.intBitsToFloat(sign | ((exp - 15 + 127) << 23) | (mant << 13));
    }

    /** bfloat16, round to nearest even. */
    static short bfloat16Bits(float f) {
        int x = Float.floatToRawIntBits(f);
        if ((x & 0x7f800000) == 0x7f800000 && (x & 0x7fffff) != 0) {
            return (short) ((x >>> 16) | 0x40);
        }
        int rounding = 0x7fff + ((x >>> 16) & 1);
        return (short) ((x + rounding) >>> 16);
    }

    /** bfloat16 bits to float. */
    static float bfloat16ToFloat(short b) {
        return Float.intBitsToFloat((b & 0xffff) << 16);
    }
}
