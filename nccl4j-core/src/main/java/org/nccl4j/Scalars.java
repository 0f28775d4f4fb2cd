package org.nccl4j;

/** Converts a host scalar to the bit pattern of a {@link DataType}, in the low bytes of a long. */
final class Scalars {
    private Scalars() {
    }

    static long bits(double v, DataType type) {
        switch (type) {
            case INT8:
            case UINT8:
                return ((long) v) & 0xffL;
            case INT32:
            case UINT32:
                return ((long) v) & 0xffff_ffffL;
            case INT64:
            case UINT64:
                return (long) v;
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
