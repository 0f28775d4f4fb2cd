package org.nccl4j.tools.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

class TableTest {
    private static PerfRow r(Operation o, long size, long count, String type, String redop, int root, boolean inPlace,
            double us, double alg, double bus, long wrong) {
        return new PerfRow(o, size, count, type, redop, root, inPlace, us, alg, bus, wrong);
    }

    @Test
    void aLineHasNcclTestsColumns() {
        String line = Table.line(r(Operation.ALL_REDUCE, 8, 2, "float", "sum", -1, false, 10.38, 0.0, 0.0, 0),
                r(Operation.ALL_REDUCE, 8, 2, "float", "sum", -1, true, 10.11, 0.0, 0.0, 0));
        // size(12) count(12) type(8) redop(6) root(6); then time(7) algbw(6) busbw(6) #wrong(6) twice, 2 spaces apart
        assertEquals("           8             2     float     sum      -1"
                + "    10.38    0.00    0.00       0"
                + "    10.11    0.00    0.00       0", line);
    }

    @Test
    void wideNumbersLoseDecimalsAndUncheckedIsNA() {
        String line = Table.line(
                r(Operation.ALL_GATHER, 1073741824, 134217728, "bfloat16", "none", -1, false, 12345.678, 86.97, 1234.5, -1),
                r(Operation.ALL_GATHER, 1073741824, 134217728, "bfloat16", "none", -1, true, 3239.0, 331.48, 331.48, -1));
        assertEquals("  1073741824     134217728  bfloat16    none      -1"
                + "  12345.7   86.97  1234.5    N/A"
                + "  3239.00  331.48  331.48    N/A", line);
    }

    @Test
    void numbersAndCountsAsC() {
        assertEquals("   0.00", Table.number(0, 7));
        assertEquals("1.2e+07", Table.number(12_345_678, 7));
        assertEquals("123457", Table.number(123456.7, 6));
        assertEquals(" 1e+06", Table.number(1_234_567, 6));
        assertEquals("     0", Table.count(0, 6));
        assertEquals("999999", Table.count(999_999, 6));
        assertEquals(" 2e+06", Table.count(2_000_000, 6));
        assertEquals("1.23457e+06", Table.count(1_234_567, 6));
        assertEquals("12.3457", Table.g(12.345678));
        assertEquals("331.5", Table.g(331.5));
        assertEquals("0", Table.g(0));
    }

    @Test
    void headerAndFooter() {
        List<String> h = Table.header();
        assertEquals(3, h.size());
        assertEquals("#       size         count      type   redop    root     time   algbw   busbw  #wrong"
                + "     time   algbw   busbw  #wrong", h.get(1));
        assertEquals("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
                + "     (us)  (GB/s)  (GB/s)        ", h.get(2));
        assertEquals(List.of("# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 12.5 ", "#",
                "# Collective test concluded: all_reduce"), Table.footer(0, 12.5, "all_reduce"));
        assertEquals("# Out of bounds values : 3 FAILED", Table.footer(3, 1, "x").get(0));
    }
}
