package org.nccl4j;

/**
 * NCCL's element types ({@code ncclDataType_t}), with their size in bytes.
 *
 * <p>The 8-bit floating types ({@link #FLOAT8_E4M3}, {@link #FLOAT8_E5M2}) need NCCL 2.24 or newer and a GPU
 * of compute capability 9.0 or newer; {@link Communicator} refuses them on an older library.
 */
public enum DataType {
    /** {@code ncclInt8}. */
    INT8(0, 1),
    /** {@code ncclUint8}. */
    UINT8(1, 1),
    /** {@code ncclInt32}. */
    INT32(2, 4),
    /** {@code ncclUint32}. */
    UINT32(3, 4),
    /** {@code ncclInt64}. */
    INT64(4, 8),
    /** {@code ncclUint64}. */
    UINT64(5, 8),
    /** {@code ncclFloat16} (IEEE half). */
    FLOAT16(6, 2),
    /** {@code ncclFloat32}. */
    FLOAT32(7, 4),
    /** {@code ncclFloat64}. */
    FLOAT64(8, 8),
    /** {@code ncclBfloat16}. */
    BFLOAT16(9, 2),
    /** {@code ncclFloat8e4m3} (NCCL 2.24+). */
    FLOAT8_E4M3(10, 1),
    /** {@code ncclFloat8e5m2} (NCCL 2.24+). */
    FLOAT8_E5M2(11, 1);

    /** NCCL version code from which the fp8 types exist. */
    static final int FP8_SINCE = 22400;

    private final int code;
    private final int size;

    DataType(int code, int size) {
        this.code = code;
        this.size = size;
    }

    /** @return the {@code ncclDataType_t} value */
    public int code() {
        return code;
    }

    /** @return NCCL's name of the type ({@code ncclDataType_t}), e.g. {@code ncclFloat32} */
    public String ncclName() {
        return NCCL_NAMES[ordinal()];
    }

    /** {@code ncclDataType_t}'s names, in the order of the constants (which is their codes' order). */
    private static final String[] NCCL_NAMES = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64",
        "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};

    /** @return the size of one element in bytes */
    public int size() {
        return size;
    }

    /** @return whether this is a floating-point type */
    public boolean isFloating() {
        return this == FLOAT16 || this == FLOAT32 || this == FLOAT64 || this == BFLOAT16 || isFp8();
    }

    boolean isFp8() {
        return this == FLOAT8_E4M3 || this == FLOAT8_E5M2;
    }

    /**
     * @param code an {@code ncclDataType_t} value
     * @return the type with that code
     * @throws IllegalArgumentException for a code NCCL does not define
     */
    public static DataType fromCode(int code) {
        for (DataType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        throw new IllegalArgumentException("datatype code " + code + " is not an ncclDataType_t (0..11)");
    }
}
