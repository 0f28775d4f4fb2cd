package org.nccl4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Host-side values of every {@link DataType}: the test inputs of each rank, encoded to the type's bytes, and
 * the decoding of results, so that expected values are computed on the host in double precision.
 */
final class HostData {
    private HostData() {
    }

    /**
     * Input of {@code rank} at element {@code i}: small integers, exact in every type, that differ per rank
     * and per element; for integer AVG the sum over ranks is a multiple of the rank count.
     */
    static double input(DataType type, int rank, long i) {
        if (type.isFp8()) {
            return 1 + ((i + rank) % 2);
        }
        return 1 + (i % 3) + 2 * rank;
    }

    /**
     * Input of {@code rank} at element {@code i} for a reduction by {@code op}: for PROD 1 or 2, so that a product
     * over any number of ranks is a power of two, exact in every floating type (integer types wrap, as on the GPU:
     * see {@link #reduce}); else {@link #input(DataType, int, long)}.
     */
    static double input(DataType type, ReduceOp op, int rank, long i) {
        if (op == ReduceOp.PROD) {
            return 1 + ((i + rank) % 2);
        }
        return input(type, rank, i);
    }

    static ByteBuffer encode(DataType type, double[] values) {
        ByteBuffer b = ByteBuffer.allocateDirect(values.length * type.size()).order(ByteOrder.LITTLE_ENDIAN);
        for (double v : values) {
            put(b, type, v);
        }
        b.flip();
        return b;
    }

    static void put(ByteBuffer b, DataType type, double v) {
        switch (type) {
            case INT8, UINT8 -> b.put((byte) (long) v);
            case INT32, UINT32 -> b.putInt((int) (long) v);
            case INT64, UINT64 -> b.putLong((long) v);
            case FLOAT16 -> b.putShort(Scalars.halfBits((float) v));
            case BFLOAT16 -> b.putShort(Scalars.bfloat16Bits((float) v));
            case FLOAT32 -> b.putFloat((float) v);
            case FLOAT64 -> b.putDouble(v);
            case FLOAT8_E4M3 -> b.put(fp8(v, 4, 3, 7));
            case FLOAT8_E5M2 -> b.put(fp8(v, 5, 2, 15));
            default -> throw new IllegalArgumentException(type.toString());
        }
    }

    static double get(ByteBuffer b, DataType type, int index) {
        int at = index * type.size();
        return switch (type) {
            case INT8 -> b.get(at);
            case UINT8 -> b.get(at) & 0xff;
            case INT32 -> b.getInt(at);
            case UINT32 -> b.getInt(at) & 0xffff_ffffL;
            case INT64, UINT64 -> b.getLong(at);
            case FLOAT16 -> Scalars.halfToFloat(b.getShort(at));
            case BFLOAT16 -> Scalars.bfloat16ToFloat(b.getShort(at));
            case FLOAT32 -> b.getFloat(at);
            case FLOAT64 -> b.getDouble(at);
            case FLOAT8_E4M3 -> fp8ToDouble(b.get(at), 4, 3, 7);
            case FLOAT8_E5M2 -> fp8ToDouble(b.get(at), 5, 2, 15);
        };
    }

    /** Encodes a positive, exactly representable normal value (the tests use only such values) or zero. */
    static byte fp8(double v, int expBits, int mantBits, int bias) {
        if (v == 0) {
            return 0;
        }
        int sign = v < 0 ? 0x80 : 0;
        double a = Math.abs(v);
        int e = Math.getExponent(a);
        double frac = a / Math.scalb(1.0, e) - 1.0;
        int mant = (int) Math.round(frac * (1 << mantBits));
        if (mant == (1 << mantBits)) {
            mant = 0;
            e++;
        }
        return (byte) (sign | ((e + bias) << mantBits) | mant);
    }

    static double fp8ToDouble(byte bits, int expBits, int mantBits, int bias) {
        int u = bits & 0xff;
        int sign = (u & 0x80) != 0 ? -1 : 1;
        int e = (u >>> mantBits) & ((1 << expBits) - 1);
        int m = u & ((1 << mantBits) - 1);
        if (e == 0) {
            return sign * Math.scalb((double) m / (1 << mantBits), 1 - bias);
        }
        return sign * Math.scalb(1.0 + (double) m / (1 << mantBits), e - bias);
    }

    /**
     * The reduction of {@code values} (one per rank) by a built-in operator, computed in double; for an integer type
     * the result wraps to the type's width as the GPU's arithmetic does (exact: wrapping commutes with + and *).
     */
    static double reduce(ReduceOp op, DataType type, double[] values) {
        double r = values[0];
        for (int k = 1; k < values.length; k++) {
            double v = values[k];
            switch (op.code()) {
                case 0, 4 -> r += v;
                case 1 -> r *= v;
                case 2 -> r = Math.max(r, v);
                case 3 -> r = Math.min(r, v);
                default -> throw new IllegalArgumentException(op.toString());
            }
        }
        if (op == ReduceOp.AVG) {
            r = type.isFloating() ? r / values.length : Math.floor(r / values.length);
        }
        return type.isFloating() ? r : wrap(type, (long) r);
    }

    /**
     * The relative error allowed in a result of {@code op} over {@code ranks} ranks: 0 (exact) but for a floating AVG
     * over a rank count that is not a power of two. NCCL computes a floating AVG as a sum of inputs each multiplied by
     * 1/n, rounded in the type, and 1/3 (say) is not exact in any binary type: each of the n terms may be off by half a
     * unit in the last place, so the result by n of them.
     */
    static double avgTolerance(ReduceOp op, DataType type, int ranks) {
        if (op != ReduceOp.AVG || !type.isFloating() || Integer.bitCount(ranks) == 1) {
            return 0;
        }
        int mantissaBits = switch (type) {
            case FLOAT64 -> 52;
            case FLOAT32 -> 23;
            case FLOAT16 -> 10;
            case BFLOAT16 -> 7;
            case FLOAT8_E4M3 -> 3;
            case FLOAT8_E5M2 -> 2;
            default -> throw new IllegalArgumentException(type.toString());
        };
        return ranks * Math.scalb(1.0, -mantissaBits);
    }

    /** {@code v} as the integer type {@code type} holds it. */
    static double wrap(DataType type, long v) {
        return switch (type) {
            case INT8 -> (byte) v;
            case UINT8 -> v & 0xff;
            case INT32 -> (int) v;
            case UINT32 -> v & 0xffff_ffffL;
            default -> v;
        };
    }
}
