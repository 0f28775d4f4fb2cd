package org.nccl4j.tools.perf;

import java.nio.ByteBuffer;
import java.util.Locale;
import org.nccl4j.DataType;
import org.nccl4j.ReduceOp;

/**
 * nccl-tests' names for data types and reduction operators, and the host side of the data check: encoding a
 * value as one element of any NCCL type (little-endian) and decoding it back.
 */
public final class Elements {
    private Elements() {
    }

    /**
     * @param t a data type
     * @return its nccl-tests name: float, half, bfloat16, double, int8, uint8, int32, uint32, int64, uint64, f8e4m3,
     *     f8e5m2
     */
    public static String name(DataType t) {
        switch (t) {
            case INT8: return "int8";
            case UINT8: return "uint8";
            case INT32: return "int32";
            case UINT32: return "uint32";
            case INT64: return "int64";
            case UINT64: return "uint64";
            case FLOAT16: return "half";
            case FLOAT32: return "float";
            case FLOAT64: return "double";
            case BFLOAT16: return "bfloat16";
            case FLOAT8_E4M3: return "f8e4m3";
            case FLOAT8_E5M2: return "f8e5m2";
            default: throw new IllegalArgumentException(String.valueOf(t));
        }
    }

    /**
     * @param s a type name: nccl-tests' (float, half, ...), or fp8_e4m3, fp8_e5m2, float16, float32, float64, bf16
     * @return the type, or null when the name is unknown
     */
    public static DataType type(String s) {
        switch (s.toLowerCase(Locale.ROOT)) {
            case "int8": case "char": return DataType.INT8;
            case "uint8": return DataType.UINT8;
            case "int32": case "int": return DataType.INT32;
            case "uint32": return DataType.UINT32;
            case "int64": return DataType.INT64;
            case "uint64": return DataType.UINT64;
            case "half": case "float16": case "fp16": return DataType.FLOAT16;
            case "float": case "float32": case "fp32": return DataType.FLOAT32;
            case "double": case "float64": case "fp64": return DataType.FLOAT64;
            case "bfloat16": case "bf16": return DataType.BFLOAT16;
            case "f8e4m3": case "fp8_e4m3": case "e4m3": return DataType.FLOAT8_E4M3;
            case "f8e5m2": case "fp8_e5m2": case "e5m2": return DataType.FLOAT8_E5M2;
            default: return null;
        }
    }

    /** @return nccl-tests' order of types for "-d all" */
    public static DataType[] allTypes() {
        return new DataType[] {DataType.INT8, DataType.UINT8, DataType.INT32, DataType.UINT32, DataType.INT64,
            DataType.UINT64, DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64, DataType.BFLOAT16,
            DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2};
    }

    /** @return the operators of "-o all", in nccl-tests' order: sum, prod, max, min, avg */
    public static ReduceOp[] allOps() {
        return new ReduceOp[] {ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.AVG};
    }

    /**
     * @param op a built-in operator
     * @return its nccl-tests name (sum, prod, max, min, avg)
     */
    public static String name(ReduceOp op) {
        return op.toString().toLowerCase(Locale.ROOT);
    }

    /**
     * @param s sum, prod, max, min or avg
     * @return the operator, or null when unknown
     */
    public static ReduceOp op(String s) {
        switch (s.toLowerCase(Locale.ROOT)) {
            case "sum": return ReduceOp.SUM;
            case "prod": return ReduceOp.PROD;
            case "max": return ReduceOp.MAX;
            case "min": return ReduceOp.MIN;
            case "avg": return ReduceOp.AVG;
            default: return null;
        }
    }

    // ------------------------------------------------------------------ host encoding

    /**
     * Writes {@code v} as one element of {@code t} at the buffer's position, which advances by the element size.
     * The bytes are little-endian when {@code b} is set so, as nccl4j-perf's buffers are.
     *
     * @param b the buffer
     * @param t the element type
     * @param v the value; integer types take it truncated toward zero, floating types rounded to nearest even
     *         (fp16 and fp8 saturate at their largest finite value)
     */
    public static void put(ByteBuffer b, DataType t, double v) {
        switch (t) {
            case INT8: case UINT8: b.put((byte) (long) v); break;
            case INT32: case UINT32: b.putInt((int) (long) v); break;
            case INT64: case UINT64: b.putLong((long) v); break;
            case FLOAT16: b.putShort((short) encodeMinifloat(v, 5, 10, false)); break;
            case BFLOAT16: b.putShort((short) (bfloat16Bits((float) v))); break;
            case FLOAT32: b.putFloat((float) v); break;
            case FLOAT64: b.putDouble(v); break;
            case FLOAT8_E4M3: b.put((byte) encodeMinifloat(v, 4, 3, true)); break;
            case FLOAT8_E5M2: b.put((byte) encodeMinifloat(v, 5, 2, false)); break;
            default: throw new IllegalArgumentException(String.valueOf(t));
        }
    }

    /**
     * Reads one element of {@code t} at absolute byte {@code index} as a double (unsigned types as unsigned).
     *
     * @param b the buffer; its position is not changed
     * @param t the element type
     * @param index the element's first byte, an absolute index into {@code b}
     * @return the value
     */
    public static double get(ByteBuffer b, DataType t, int index) {
        switch (t) {
            case INT8: return b.get(index);
            case UINT8: return b.get(index) & 0xff;
            case INT32: return b.getInt(index);
            case UINT32: return b.getInt(index) & 0xffffffffL;
            case INT64: return b.getLong(index);
            case UINT64: {
                long x = b.getLong(index);
                return x >= 0 ? x : (double) (x >>> 1) * 2.0 + (x & 1);
            }
            case FLOAT16: return decodeMinifloat(b.getShort(index) & 0xffff, 5, 10, false);
            case BFLOAT16: return Float.intBitsToFloat((b.getShort(index) & 0xffff) << 16);
            case FLOAT32: return b.getFloat(index);
            case FLOAT64: return b.getDouble(index);
            case FLOAT8_E4M3: return decodeMinifloat(b.get(index) & 0xff, 4, 3, true);
            case FLOAT8_E5M2: return decodeMinifloat(b.get(index) & 0xff, 5, 2, false);
            default: throw new IllegalArgumentException(String.valueOf(t));
        }
    }

    static int bfloat16Bits(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (bits >>> 16) | 0x40;
        }
        int lsb = (bits >>> 16) & 1;
        return (bits + 0x7fff + lsb) >>> 16; // round to nearest, ties to even
    }

    /**
     * Encodes a finite value as a small float with one sign bit, {@code e} exponent bits and {@code m} mantissa
     * bits (IEEE layout, bias 2^(e-1)-1), rounding to nearest even and saturating at the largest finite value.
     * {@code fn} selects the "finite, NaN only" variant (OCP E4M3), whose top exponent still holds normal numbers.
     */
    static int encodeMinifloat(double v, int e, int m, boolean fn) {
        int sign = (v < 0 || (v == 0 && 1 / v < 0)) ? 1 << (e + m) : 0;
        double a = Math.abs(v);
        int bias = (1 << (e - 1)) - 1;
        int maxExp = fn ? (1 << e) - 1 : (1 << e) - 2;           // largest biased exponent of a finite number
        int maxMan = fn ? (1 << m) - 2 : (1 << m) - 1;           // E4M3FN: S.1111.111 is NaN
        double max = Math.scalb(1.0 + maxMan / (double) (1 << m), maxExp - bias);
        if (Double.isNaN(v)) {
            return fn ? sign | ((1 << (e + m)) - 1) : sign | (((1 << e) - 1) << m) | 1;
        }
        if (a >= max) {
            return sign | (maxExp << m) | maxMan;
        }
        double minNormal = Math.scalb(1.0, 1 - bias);
        if (a < minNormal) {                                     // subnormal: units of 2^(1-bias-m)
            double exact = Math.scalb(a, bias - 1 + m);
            long q = (long) Math.floor(exact);
            double rest = exact - q;
            if (rest > 0.5 || (rest == 0.5 && (q & 1) == 1)) {
                q++;
            }
            return sign | (int) q;                               // q == 2^m rolls into the smallest normal
        }
        int exp = Math.getExponent(a);
        double frac = Math.scalb(a, -exp) - 1.0;                 // in [0, 1)
        double scaled = frac * (1 << m);
        long q = (long) Math.floor(scaled);
        double rest = scaled - q;
        if (rest > 0.5 || (rest == 0.5 && (q & 1) == 1)) {
            q++;
        }
        int biased = exp + bias;
        if (q == (1 << m)) {
            q = 0;
            biased++;
        }
        if (biased > maxExp || (biased == maxExp && q > maxMan)) {
            return sign | (maxExp << m) | maxMan;
        }
        return sign | (biased << m) | (int) q;
    }

    static double decodeMinifloat(int bits, int e, int m, boolean fn) {
        int sign = (bits >>> (e + m)) & 1;
        int exp = (bits >>> m) & ((1 << e) - 1);
        int man = bits & ((1 << m) - 1);
        int bias = (1 << (e - 1)) - 1;
        double v;
        if (fn && exp == (1 << e) - 1 && man == (1 << m) - 1) {
            v = Double.NaN;
        } else if (!fn && exp == (1 << e) - 1) {
            v = man == 0 ? Double.POSITIVE_INFINITY : Double.NaN;
        } else if (exp == 0) {
            v = Math.scalb((double) man, 1 - bias - m);
        } else {
            v = Math.scalb(1.0 + man / (double) (1 << m), exp - bias);
        }
        return sign == 1 ? -v : v;
    }
}
