package org.nccl4j.trace;

import java.util.List;

/**
 * The names a dump gives data types and reduction operators: NCCL's own ({@code ncclFloat32}, {@code ncclSum}).
 * {@link FlightRecorder} stores the codes ({@code ncclDataType_t}, {@code ncclRedOp_t}); names are made only when a
 * snapshot is taken. The liveness channel's comparison of the ranks' collectives names them the same way.
 */
public final class TraceNames {
    /** {@code ncclDataType_t} names, indexed by code (as {@link org.nccl4j.DataType#code()}). */
    static final List<String> DATA_TYPES = List.of("ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64",
            "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
            "ncclFloat8e5m2");
    /** The built-in {@code ncclRedOp_t} names, indexed by code (as {@link org.nccl4j.ReduceOp#code()}). */
    static final List<String> REDUCE_OPS = List.of("ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg");
    /** The prefix of a pre-multiplied sum's name: {@code ncclPreMulSum(5)} for the operator NCCL numbered 5. */
    static final String PRE_MUL_SUM = "ncclPreMulSum(";

    private TraceNames() {
    }

    /**
     * The name of a data type code.
     *
     * @param code an {@code ncclDataType_t} (0..11), or -1 for none
     * @return its name, e.g. {@code ncclFloat32}; null for -1 or a code NCCL does not define
     */
    public static String dataType(int code) {
        return code < 0 || code >= DATA_TYPES.size() ? null : DATA_TYPES.get(code);
    }

    /**
     * The name of a reduction operator code.
     *
     * @param code an {@code ncclRedOp_t}, or -1 for none
     * @return a built-in's name ({@code ncclSum}, ...), {@code ncclPreMulSum(N)} from 5 on, or null for -1
     */
    public static String reduceOp(int code) {
        if (code < 0) {
            return null;
        }
        return code < REDUCE_OPS.size() ? REDUCE_OPS.get(code) : PRE_MUL_SUM + code + ")";
    }

    /** Whether {@code name} is a data type's name. */
    static boolean isDataType(String name) {
        return DATA_TYPES.contains(name);
    }

    /** Whether {@code name} is an operator's name: a built-in's or {@code ncclPreMulSum(N)} with N >= 5. */
    static boolean isReduceOp(String name) {
        if (REDUCE_OPS.contains(name)) {
            return true;
        }
        if (!name.startsWith(PRE_MUL_SUM) || !name.endsWith(")")) {
            return false;
        }
        String digits = name.substring(PRE_MUL_SUM.length(), name.length() - 1);
        if (digits.isEmpty() || digits.length() > 10 || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return false;
        }
        long n = Long.parseLong(digits);
        return n >= REDUCE_OPS.size() && n <= Integer.MAX_VALUE;
    }
}
