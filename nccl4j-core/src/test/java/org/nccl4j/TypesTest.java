package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** {@link DataType} and {@link NcclResult} against NCCL's own enums (nccl.h's ncclDataType_t and ncclResult_t). */
class TypesTest {

    @Test
    void dataTypesHaveNcclsCodesAndSizes() {
        // ncclInt8 0 ... ncclFloat8e5m2 11, with sizeof of the element
        Object[][] nccl = {{DataType.INT8, 0, 1}, {DataType.UINT8, 1, 1}, {DataType.INT32, 2, 4},
            {DataType.UINT32, 3, 4}, {DataType.INT64, 4, 8}, {DataType.UINT64, 5, 8}, {DataType.FLOAT16, 6, 2},
            {DataType.FLOAT32, 7, 4}, {DataType.FLOAT64, 8, 8}, {DataType.BFLOAT16, 9, 2},
            {DataType.FLOAT8_E4M3, 10, 1}, {DataType.FLOAT8_E5M2, 11, 1}};
        assertEquals(nccl.length, DataType.values().length);
        for (Object[] row : nccl) {
            DataType t = (DataType) row[0];
            assertEquals(row[1], t.code(), t.name());
            assertEquals(row[2], t.size(), t.name());
            assertSame(t, DataType.fromCode(t.code()));
        }
    }

    @Test
    void fromCodeRejectsCodesNcclDoesNotDefine() {
        for (int bad : new int[] {-1, 12, 255}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DataType.fromCode(bad));
            assertEquals("datatype code " + bad + " is not an ncclDataType_t (0..11)", e.getMessage());
        }
    }

    @Test
    void floatingAndFp8() {
        Set<DataType> floating = EnumSet.of(DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64, DataType.BFLOAT16,
                DataType.FLOAT8_E4M3, DataType.FLOAT8_E5M2);
        for (DataType t : DataType.values()) {
            assertEquals(floating.contains(t), t.isFloating(), t.name());
            assertEquals(t == DataType.FLOAT8_E4M3 || t == DataType.FLOAT8_E5M2, t.isFp8(), t.name());
        }
        assertEquals(22400, DataType.FP8_SINCE);
    }

    @Test
    void resultsHaveNcclsCodesAndNames() {
        String[] names = {"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
            "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"};
        for (int code = 0; code < names.length; code++) {
            NcclResult r = NcclResult.of(code);
            assertEquals(code, r.code());
            assertEquals(names[code], r.ncclName());
            assertSame(NcclResult.values()[code], r);
        }
        assertEquals(names.length + 1, NcclResult.values().length, "the nine codes and UNKNOWN");
    }

    @Test
    void unknownCodesMapToUnknown() {
        for (int code : new int[] {9, 10, 1234, -1, -1000, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
            assertSame(NcclResult.UNKNOWN, NcclResult.of(code), Integer.toString(code));
        }
        assertEquals(-1, NcclResult.UNKNOWN.code());
        assertEquals("unknown", NcclResult.UNKNOWN.ncclName());
        assertFalse(NcclResult.UNKNOWN.ncclName().startsWith("nccl"));
        assertTrue(NcclResult.valueOf("TIMEOUT").ncclName().startsWith("nccl"));
    }
}
