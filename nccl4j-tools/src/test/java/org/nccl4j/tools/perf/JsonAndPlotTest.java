package org.nccl4j.tools.perf;

import org.nccl4j.tools.cli.JsonDocs;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JsonAndPlotTest {
    private static final List<PerfRow> RESULTS = List.of(
            new PerfRow(Operation.ALL_REDUCE, 8, 2, "float", "sum", -1, false, 6.7, 0.0012, 0.0012, 0),
            new PerfRow(Operation.ALL_REDUCE, 8, 2, "float", "sum", -1, true, 6.5, 0.00123, 0.00123, 0),
            new PerfRow(Operation.ALL_REDUCE, 1024, 256, "float", "sum", -1, false, 7.9, 0.13, 0.13, -1),
            new PerfRow(Operation.ALL_REDUCE, 1024, 256, "float", "sum", -1, true, 7.8, 0.131, 0.131, -1),
            new PerfRow(Operation.BROADCAST, 1024, 256, "float", "none", 0, false, 9.0, 0.11, 0.11, 0),
            new PerfRow(Operation.BROADCAST, 1024, 256, "float", "none", 0, true, 9.1, 0.11, 0.11, 0));

    @Test
    @SuppressWarnings("unchecked")
    void jsonHasOneRecordPerMeasurementAndTheRunMetadata() {
        PerfArgs a = PerfArgs.parse("-b", "8", "-e", "1K", "-f", "128", "-n", "1000", "-G", "5");
        List<Object> records = Perf.records(RESULTS, a);
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("tool", "nccl4j-perf");
        doc.put("date", "2026-11-22T10:00:00Z");
        doc.put("hostname", "gpu-host");
        doc.put("nccl_version", "2.28.3");
        doc.put("ranks", 2);
        doc.put("mode", "single-process");
        doc.put("config", Perf.config(a));
        doc.put("results", records);
        String text = JsonDocs.write(doc);

        Map<String, Object> back = (Map<String, Object>) JsonDocs.read(text);
        assertEquals("2.28.3", back.get("nccl_version"));
        assertEquals(2.0, back.get("ranks"));
        assertEquals(1000.0, ((Map<String, Object>) back.get("config")).get("iters"));
        List<Object> rs = (List<Object>) back.get("results");
        assertEquals(6, rs.size());
        Map<String, Object> first = (Map<String, Object>) rs.get(0);
        assertEquals(Set.of("op", "size", "count", "type", "redop", "root", "placement", "graph", "time_us", "algbw",
                "busbw", "wrong"), first.keySet());
        assertEquals(List.of("op", "size", "count", "type", "redop", "root", "placement", "graph", "time_us", "algbw",
                "busbw", "wrong"), List.copyOf(first.keySet()));
        assertEquals("all_reduce", first.get("op"));
        assertEquals(8.0, first.get("size"));
        assertEquals("out-of-place", first.get("placement"));
        assertEquals(Boolean.TRUE, first.get("graph"));
        assertEquals(6.7, (Double) first.get("time_us"), 1e-9);
        assertEquals(0.0012, (Double) first.get("busbw"), 1e-12);
        assertEquals(0.0, first.get("wrong"));
        assertNull(((Map<String, Object>) rs.get(2)).get("wrong"), "unchecked is null");
        assertEquals("in-place", ((Map<String, Object>) rs.get(5)).get("placement"));
        assertEquals(0.0, ((Map<String, Object>) rs.get(5)).get("root"));
    }

    @Test
    void jsonWriterEscapesAndParserRejectsGarbage() {
        String t = JsonDocs.write(Map.of("s", "a\"b\\c\n\u0001"));
        assertEquals(Map.of("s", "a\"b\\c\n\u0001"), JsonDocs.read(t));
        assertEquals(List.of(1.0, 2.5, -3.0E-5), JsonDocs.read("[1, 2.5, -3e-5]"));
        assertEquals(Arrays.asList(true, false, null), JsonDocs.read(" [true,false,null] "));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> JsonDocs.read("{\"a\": }")).getMessage()
                .startsWith("malformed JSON at line 1, column "));
        assertThrows(IllegalArgumentException.class, () -> JsonDocs.read("[1] x"));
        assertEquals("0.5\n", JsonDocs.write(0.5));
        assertEquals("331.482\n", JsonDocs.write(331.48213));
        assertEquals("null\n", JsonDocs.write(Double.NaN));
    }

    @Test
    void theResultsNameTheirFormatAndVersionAndOldFilesStillLoad() throws Exception {
        Map<String, Object> doc = (Map<String, Object>) JsonDocs.read(JsonDocs.write(Map.of("results", List.of())));
        assertEquals(0, JsonDocs.versionOf(doc), "a document without a version is version 0");
        // files of 2026-11-22, written by the hand-made writer nccl4j had: nccl4j-perf's and the C baseline's
        for (String name : List.of("results-2026-11-22.json", "baseline-results-2026-11-22.json")) {
            Path old = Path.of(JsonAndPlotTest.class.getResource(name).toURI());
            Map<String, Object> legacy = (Map<String, Object>) JsonDocs.read(Files.readString(old));
            assertEquals(0, JsonDocs.versionOf(legacy), name);
            List<PerfRow> results = Plot.readResults(old);
            assertEquals(54, results.size(), name);
            assertEquals(67108864, results.get(0).size());
            assertEquals(250.04, results.get(0).timeUs(), name.startsWith("results") ? 1e-9 : 0.1);
        }
        Path summary = Path.of("..", "docs", "gpu-runs", "benchmark-latest.json");   // the performance summary in the tree
        assertEquals("2.28.3", ((Map<String, Object>) JsonDocs.read(Files.readString(summary))).get("nccl_version"));

    }

    @Test
    void resultsRoundTripThroughAFile(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("r.json");
        Files.writeString(f, JsonDocs.write(Map.of("tool", "x", "results", Perf.records(RESULTS, PerfArgs.parse()))));
        List<PerfRow> back = Plot.readResults(f);
        assertEquals(RESULTS, back);
    }

    @Test
    void pngIsWrittenHeadless(@TempDir Path dir) throws Exception {
        Path png = dir.resolve("sub/bw.png");
        List<Plot.Series> series = Plot.seriesOf(RESULTS, "", List.of("out-of-place", "in-place"));
        assertEquals(List.of("all_reduce out-of-place", "all_reduce in-place", "broadcast out-of-place",
                "broadcast in-place"), series.stream().map(Plot.Series::name).toList());
        assertArrayEquals(new double[] {8, 1024}, series.get(0).sizes());
        Plot.write(png, "test", series);
        byte[] b = Files.readAllBytes(png);
        assertTrue(b.length > 1000, "a PNG of " + b.length + " bytes");
        assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}, Arrays.copyOf(b, 8));
        assertEquals("true", System.getProperty("java.awt.headless"));
    }

    @Test
    void plotProgramDrawsJsonFiles(@TempDir Path dir) throws Exception {
        Path a = dir.resolve("a.json");
        Path b = dir.resolve("b.json");
        Files.writeString(a, JsonDocs.write(Map.of("results", Perf.records(RESULTS, PerfArgs.parse()))));
        Files.writeString(b, JsonDocs.write(Map.of("results", Perf.records(RESULTS.subList(0, 4), PerfArgs.parse()))));
        Path png = dir.resolve("cmp.png");
        Plot.main(new String[] {png.toString(), "--title", "C vs Java", "C=" + a, "Java=" + b});
        byte[] bytes = Files.readAllBytes(png);
        assertEquals((byte) 0x89, bytes[0]);
        assertEquals('P', bytes[1]);
    }

    @Test
    void frontierTsvGivesALinePerSideAndRegistrationWithTheMedianOfTheRounds(@TempDir Path dir) throws Exception {
        // the in-place columns (1 us, 9 GB/s) are not drawn: the chart is out of place
        List<String> tsv = List.of("lib\tnp\treg\tcase\tround\tside\tsize\ttime_us\tbusbw\tin_place_time_us\t"
                + "in_place_busbw",
                "system\t2\t0\tall_reduce_perf -b 8 -e 16 -c 0\t1\tc\t8\t6.0\t0.00\t1\t9",
                "system\t2\t0\tall_reduce_perf -b 8 -e 16 -c 0\t1\tjava\t8\t6.5\t0.00\t1\t9",
                "system\t2\t0\tall_reduce_perf -b 8 -e 16 -c 0\t2\tjava\t8\t6.1\t0.00\t1\t9",
                "system\t2\t0\tall_reduce_perf -b 8 -e 16 -c 0\t3\tjava\t8\t9.0\t0.00\t1\t9",
                "system\t2\t0\tall_reduce_perf -b 8 -e 16 -c 0\t1\tjava\t16\t7.0\t0.01\t1\t9",
                "system\t2\t0\tall_reduce_perf -b 8 -e 16 -c 0\t2\tjava\t16\t8.0\t0.02\t1\t9",
                "system\t2\t2\tall_reduce_perf -b 8 -e 16 -c 0\t1\tc\t8\t5.3\t0.00\t1\t9");
        List<Plot.Series> times = Plot.frontierSeries(tsv, true);
        assertEquals(List.of("nccl-tests -R 0", "nccl4j -R 0", "nccl-tests -R 2"),
                times.stream().map(Plot.Series::name).toList());
        assertArrayEquals(new double[] {8, 16}, times.get(1).sizes());
        assertArrayEquals(new double[] {6.5, 7.5}, times.get(1).y(), "median of 3 rounds, then of 2");
        assertArrayEquals(new double[] {0.00, 0.015}, Plot.frontierSeries(tsv, false).get(1).y(), 1e-12);
        // another library and operation in the file: named in each line
        List<String> more = new java.util.ArrayList<>(tsv);
        more.add("torch\t2\t0\tbroadcast_perf -b 8 -e 8\t1\tjava\t8\t7.0\t0.00\t1\t9");
        assertEquals("nccl4j -R 0 broadcast torch", Plot.frontierSeries(more, true).get(3).name());
        Path f = dir.resolve("frontier.tsv");
        Files.write(f, tsv);
        Path png = dir.resolve("frontier.png");
        Plot.main(new String[] {png.toString(), "--frontier", "--y", "time", "--title", "small", f.toString()});
        assertEquals((byte) 0x89, Files.readAllBytes(png)[0]);
        // a file from before the in-place columns: the same lines
        List<String> old = tsv.stream().map(l -> l.replaceAll("\t[^\t]+\t[^\t]+$", "")).toList();
        assertEquals("system\t2\t0\tall_reduce_perf -b 8 -e 16 -c 0\t1\tc\t8\t6.0\t0.00", old.get(1));
        assertArrayEquals(new double[] {6.5, 7.5}, Plot.frontierSeries(old, true).get(1).y());
    }

    @Test
    void aFileThatIsNotAFrontierTsvIsRefusedWithTheLineNamed() {
        assertEquals("not a frontier.tsv (scripts/bench/frontier.sh): the first line must be the header lib np reg "
                + "case round side size time_us busbw in_place_time_us in_place_busbw (or its first 9 names)",
                assertThrows(IllegalArgumentException.class,
                () -> Plot.frontierSeries(List.of("size\ttime"), true)).getMessage());
        String header = "lib\tnp\treg\tcase\tround\tside\tsize\ttime_us\tbusbw";
        assertEquals("frontier.tsv line 2 is not a row of frontier.sh (For input string: \"8x\"): "
                + "system\t2\t0\tc\t1\tc\t8x\t6.0\t0.00", assertThrows(IllegalArgumentException.class,
                () -> Plot.frontierSeries(List.of(header, "system\t2\t0\tc\t1\tc\t8x\t6.0\t0.00"), true))
                .getMessage());
        assertEquals("frontier.tsv line 3 is not a row of frontier.sh (2 fields, not 9): a\tb",
                assertThrows(IllegalArgumentException.class, () -> Plot.frontierSeries(List.of(header, "",
                "a\tb"), true)).getMessage());
        assertEquals("frontier.tsv line 2 is not a row of frontier.sh (9 fields, not 11): "
                + "system\t2\t0\tc\t1\tc\t8\t6.0\t0.00", assertThrows(IllegalArgumentException.class,
                () -> Plot.frontierSeries(List.of(header + "\tin_place_time_us\tin_place_busbw",
                "system\t2\t0\tc\t1\tc\t8\t6.0\t0.00"), true)).getMessage());
    }

    @Test
    void log2AxisLabelsAreByteSizes() {
        assertEquals("8", Plot.bytesLabel(3.0));
        assertEquals("1K", Plot.bytesLabel(10.0));
        assertEquals("64K", Plot.bytesLabel(16.0));
        assertEquals("1M", Plot.bytesLabel(20.0));
        assertEquals("1G", Plot.bytesLabel(30.0));
        assertEquals("1.4K", Plot.bytesLabel(10.5));
    }

    @Test
    @SuppressWarnings("unchecked")
    void opTimesGoIntoTheRecordsOfTheirResultsAndAUnderTheRow() {
        PerfArgs a = PerfArgs.parse("-b", "8", "-e", "1K", "-f", "128", "--op_times", "1");
        PerfRow r0 = RESULTS.get(0);
        List<PerfRow> results = new java.util.ArrayList<>(RESULTS);
        results.set(0, new PerfRow(r0.operation(), r0.size(), r0.count(), r0.type(), r0.redop(), r0.root(), r0.inPlace(),
                r0.timeUs(), r0.algbw(), r0.busbw(), r0.wrong(), r0.allocBytes(),
                new double[] {6.5, 6.7, 7.0, 12.25, 12.25, 3.5}));
        List<Object> records = Perf.records(results, a);
        Map<String, Object> first = (Map<String, Object>) records.get(0);
        assertEquals(Map.of("p10", 6.5, "p50", 6.7, "p90", 7.0, "max", 12.25, "first", 12.25, "start_spread", 3.5),
                first.get("op_time_us"));
        assertEquals(List.of("p10", "p50", "p90", "max", "first", "start_spread"),
                List.copyOf(((Map<String, Object>) first.get("op_time_us")).keySet()), "in this order");
        for (Object r : records.subList(1, records.size())) {
            assertNull(((Map<String, Object>) r).get("op_time_us"));
        }
        assertEquals("#  per operation (us, rank 1): out-of-place p10 6.50 p50 6.70 p90 7.00 max 12.25 first 12.25 "
                + "start spread 3.50; in-place p10 1.00 p50 2.00 p90 3.00 max 4.50 first 1.00 start spread 0.00",
                Perf.opTimesLine(1, new double[] {6.5, 6.7, 7.0, 12.25, 12.25, 3.5}, new double[] {1, 2, 3, 4.5, 1, 0}));
    }

    @Test
    void percentilesAreNearestRankAndTheMaximum() {
        double[] v = new double[100];
        for (int i = 0; i < 100; i++) {
            v[i] = 100 - i; // 100 .. 1, unsorted on purpose
        }
        assertArrayEquals(new double[] {10, 50, 90, 100}, Bench.percentiles(v));
        assertArrayEquals(new double[] {7, 7, 7, 7}, Bench.percentiles(new double[] {7}));
        assertArrayEquals(new double[] {1, 2, 3, 3}, Bench.percentiles(new double[] {3, 1, 2}));
    }

    @Test
    void jitQuietWaitEndsOnceTheTotalStandsStillLongEnoughOrAtTheLimit() {
        // the clock advances 1 ms per reading; the total changes at the readings listed
        long[] now = {0};
        java.util.function.LongSupplier clock = () -> (now[0] += 1_000_000L);
        long[] totals = {5, 5, 6, 6, 6, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
        int[] i = {0};
        java.util.function.LongSupplier total = () -> totals[Math.min(i[0]++, totals.length - 1)];
        // start at 1 ms (total 5); 6 seen at 3 ms, 9 at 6 ms; quiet for 4 ms at 10 ms: 9 ms waited
        assertEquals(9_000_000L, Bench.quietWait(total, clock, 4_000_000L, 1_000_000_000L));

        now[0] = 0;
        java.util.function.LongSupplier busy = () -> now[0]; // changes at every reading: never quiet
        assertEquals(50_000_000L, Bench.quietWait(busy, clock, 4_000_000L, 50_000_000L));

        now[0] = 0;
        assertEquals(1_000_000L, Bench.quietWait(() -> 7, clock, 1_000_000L, 50_000_000L)); // quiet from the start
    }

    @Test
    void resultsCompareTheirOpTimesByContentAndKeepTheirOwnCopy() {
        double[] p = {1, 2, 3, 4};
        PerfRow a = new PerfRow(Operation.ALL_REDUCE, 8, 2, "float", "sum", -1, false, 6.0, 0.001, 0.001, -1, 0, p);
        PerfRow b = new PerfRow(Operation.ALL_REDUCE, 8, 2, "float", "sum", -1, false, 6.0, 0.001, 0.001, -1, 0,
                new double[] {1, 2, 3, 4});
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertTrue(a.toString().contains("op times [1.0, 2.0, 3.0, 4.0]"), a.toString());
        p[0] = 9;                   // the caller's array is not the record's
        assertEquals(1.0, a.opTimeUs()[0]);
        a.opTimeUs()[1] = 9;        // nor is the one it hands out
        assertEquals(a, b);
        PerfRow c = new PerfRow(Operation.ALL_REDUCE, 8, 2, "float", "sum", -1, false, 6.0, 0.001, 0.001, -1, 0,
                new double[] {1, 2, 3, 5});
        assertTrue(!a.equals(c), "a different p90..max differs");
        PerfRow n1 = new PerfRow(Operation.ALL_REDUCE, 8, 2, "float", "sum", -1, false, 6.0, 0.001, 0.001, -1);
        PerfRow n2 = new PerfRow(Operation.ALL_REDUCE, 8, 2, "float", "sum", -1, false, 6.0, 0.001, 0.001, -1);
        assertEquals(n1, n2);       // NaN allocation figures and no op times compare equal
        assertNull(n1.opTimeUs());
        assertTrue(!n1.equals(a));
    }
}
