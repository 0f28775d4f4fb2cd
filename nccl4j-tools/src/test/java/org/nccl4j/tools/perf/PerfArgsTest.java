package org.nccl4j.tools.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.nccl4j.DataType;
import org.nccl4j.ReduceOp;

class PerfArgsTest {
    private static String refused(String... argv) {
        return assertThrows(IllegalArgumentException.class, () -> PerfArgs.parse(argv)).getMessage();
    }

    @Test
    void defaultsAreNcclTests() {
        PerfArgs a = PerfArgs.parse();
        assertEquals(32L << 20, a.minBytes);
        assertEquals(32L << 20, a.maxBytes);
        assertEquals(1L << 20, a.stepBytes);
        assertEquals(1, a.stepFactor);
        assertEquals(20, a.iters);
        assertEquals(1, a.warmup);
        assertEquals(1, a.check);
        assertEquals(List.of(ReduceOp.SUM), a.ops);
        assertEquals(List.of(DataType.FLOAT32), a.types);
        assertEquals(0, a.root);
        assertEquals(1, a.gpus);
        assertEquals(0, a.graphLaunches);
        assertEquals(0, a.blocking);
        assertEquals(1, a.average);
        assertNull(a.jsonFile);
        assertNull(a.plotFile);
        assertEquals(0, a.initRepeats);
        assertEquals(List.of(Operation.ALL_REDUCE), a.operations);
        assertFalse(a.help);
        assertEquals(List.of(32L << 20), a.sizes());
        assertEquals(1, a.threads);
        assertEquals(1, a.aggIters);
        assertEquals(1, a.runCycles);
        assertEquals(0, a.parallelInit);
        assertEquals(0, a.streamNull);
        assertEquals(0, a.timeoutSeconds);
        assertEquals(0, a.reportCputime);
        assertEquals(0, a.reportTimestamps);
        assertEquals(0, a.localRegister);
        assertEquals(-1, a.ctaPolicy);
        assertEquals(0, a.deviceImpl);
        assertEquals(16, a.deviceCtaCount);
        assertEquals(0, a.memoryReport);
        assertEquals(0, a.unalign);
        assertEquals(0, a.opTimes);
        assertEquals(0, a.perIterSkip);
    }

    @Test
    void everyFlagShortForm() {
        PerfArgs a = PerfArgs.parse("--ops", "all_gather,broadcast", "-b", "8", "-e", "128M", "-f", "2", "-i", "4K",
                "-n", "1000", "-w", "5", "-c", "0", "-o", "max", "-d", "bfloat16", "-r", "1", "-g", "2", "-G", "10",
                "-z", "0", "-a", "3", "-J", "out.json", "--plot", "bw.png");
        assertEquals(List.of(Operation.ALL_GATHER, Operation.BROADCAST), a.operations);
        assertEquals(8, a.minBytes);
        assertEquals(128L << 20, a.maxBytes);
        assertEquals(2, a.stepFactor);
        assertEquals(4096, a.stepBytes);
        assertEquals(1000, a.iters);
        assertEquals(5, a.warmup);
        assertEquals(0, a.check);
        assertEquals(List.of(ReduceOp.MAX), a.ops);
        assertEquals(List.of(DataType.BFLOAT16), a.types);
        assertEquals(1, a.root);
        assertEquals(2, a.gpus);
        assertEquals(10, a.graphLaunches);
        assertEquals(0, a.blocking);
        assertEquals(3, a.average);
        assertEquals(Path.of("out.json"), a.jsonFile);
        assertEquals(Path.of("bw.png"), a.plotFile);
    }

    @Test
    void everyFlagLongFormAttachedAndSeparate() {
        PerfArgs a = PerfArgs.parse("--operation=reduce_scatter", "--minbytes", "1K", "--maxbytes=1G", "--stepfactor=4",
                "--stepbytes", "512", "--iters=7", "--warmup_iters", "3", "--check=2", "--op", "prod",
                "--datatype=fp8_e4m3", "--root=all", "--ngpus", "4", "--cudagraph=2", "--average", "0",
                "--output_file=r.json", "--plot=p.png");
        assertEquals(List.of(Operation.REDUCE_SCATTER), a.operations);
        assertEquals(1024, a.minBytes);
        assertEquals(1L << 30, a.maxBytes);
        assertEquals(4, a.stepFactor);
        assertEquals(512, a.stepBytes);
        assertEquals(7, a.iters);
        assertEquals(3, a.warmup);
        assertEquals(2, a.check);
        assertEquals(List.of(ReduceOp.PROD), a.ops);
        assertEquals(List.of(DataType.FLOAT8_E4M3), a.types);
        assertEquals(-1, a.root);
        assertEquals(4, a.gpus);
        assertEquals(2, a.graphLaunches);
        assertEquals(0, a.average);
        assertEquals(Path.of("r.json"), a.jsonFile);
        assertEquals(Path.of("p.png"), a.plotFile);
        assertTrue(PerfArgs.parse("--help").help);
        assertTrue(PerfArgs.parse("-h").help);
        assertTrue(PerfArgs.parse("--version").version);
        assertEquals(8, PerfArgs.parse("-V", "8").deviceCtaCount, "-V is nccl-tests' device_cta_count");
        assertTrue(PerfArgs.versionText().startsWith("nccl4j-perf (nccl4j "), PerfArgs.versionText());
        assertTrue(PerfArgs.USAGE.startsWith("Usage: nccl4j-perf [-h] [--version] [-a=<0|1|2|3>] [-b=<size>]"),
                PerfArgs.USAGE);
        assertEquals(2, PerfArgs.parse("-z", "2").blocking);
        assertEquals(12, PerfArgs.parse("--init_repeats", "12").initRepeats);
        assertEquals(3, PerfArgs.parse("--init_repeats=3").initRepeats);
        assertEquals(1, PerfArgs.parse("--op_times", "1").opTimes);
        assertEquals(0, PerfArgs.parse().opTimes);
        assertEquals(20, PerfArgs.parse().jitQuietMs);
        assertEquals(0, PerfArgs.parse("--jit_quiet_ms", "0").jitQuietMs);
        assertEquals(1000, PerfArgs.parse("--jit_quiet_ms=1000").jitQuietMs);
        assertEquals(10_000, PerfArgs.parse().jitWarmup);
        assertEquals(0, PerfArgs.parse("--jit_warmup", "0").jitWarmup);
        assertEquals(250, PerfArgs.parse("--jit_warmup=250").jitWarmup);
        assertEquals("events", PerfArgs.parse().timer, "the C baseline's measure unless asked");
        assertEquals("events", PerfArgs.parse("--timer", "events").timer);
        assertEquals("host", PerfArgs.parse("--timer=host").timer);
        assertTrue(PerfArgs.USAGE.contains("--timer=<host|events>"), PerfArgs.USAGE);
        assertEquals(1, PerfArgs.parse("--blocking=1").blocking);
    }

    @Test
    void attachedShortValues() {
        PerfArgs a = PerfArgs.parse("-b8", "-e64K", "-f2", "-g2", "-G1", "-dhalf", "-oall", "--ops=all", "-t1");
        assertEquals(8, a.minBytes);
        assertEquals(65536, a.maxBytes);
        assertEquals(2, a.gpus);
        assertEquals(1, a.graphLaunches);
        assertEquals(List.of(DataType.FLOAT16), a.types);
        assertEquals(List.of(ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.AVG), a.ops);
        assertEquals(List.of(Operation.values()), a.operations);
    }

    @ParameterizedTest
    @CsvSource({"8,8", "1K,1024", "1k,1024", "64K,65536", "128M,134217728", "128m,134217728", "1G,1073741824",
        "8G,8589934592", "1.5K,1536", "2T,2199023255552", "0,0"})
    void sizesTakeBinarySuffixes(String text, long bytes) {
        assertEquals(bytes, PerfArgs.parseSize("-b", text));
        assertEquals(bytes, PerfArgs.parse("-b", "0", "-e", text).maxBytes);
    }

    @Test
    void everyDataTypeNameAndAll() {
        String[][] names = {{"float", "FLOAT32"}, {"half", "FLOAT16"}, {"bfloat16", "BFLOAT16"}, {"double", "FLOAT64"},
            {"int8", "INT8"}, {"uint8", "UINT8"}, {"int32", "INT32"}, {"uint32", "UINT32"}, {"int64", "INT64"},
            {"uint64", "UINT64"}, {"fp8_e4m3", "FLOAT8_E4M3"}, {"fp8_e5m2", "FLOAT8_E5M2"}, {"f8e4m3", "FLOAT8_E4M3"},
            {"f8e5m2", "FLOAT8_E5M2"}};
        for (String[] n : names) {
            assertEquals(List.of(DataType.valueOf(n[1])), PerfArgs.parse("-d", n[0]).types, n[0]);
        }
        assertEquals(12, PerfArgs.parse("-d", "all").types.size());
        for (DataType t : DataType.values()) {
            assertEquals(t, Elements.type(Elements.name(t)), "round trip of " + t);
        }
    }

    @Test
    void everyOperatorAndOperationName() {
        for (String op : new String[] {"sum", "prod", "min", "max", "avg"}) {
            assertEquals(op, Elements.name(PerfArgs.parse("-o", op).ops.get(0)));
        }
        for (Operation o : Operation.values()) {
            assertEquals(List.of(o), PerfArgs.parse(o.perfName() + "_perf").operations);
            assertEquals(List.of(o), PerfArgs.parse(o.perfName()).operations);
            assertEquals(List.of(o), PerfArgs.parse("--ops", o.perfName()).operations);
            assertEquals(List.of(o), PerfArgs.parse("--ops", o.perfName() + "_perf").operations);
        }
        assertEquals(List.of(Operation.ALL_REDUCE), PerfArgs.parse("--ops", "allreduce").operations);
    }

    @Test
    void invalidValuesAreNamedWithTheirFlag() {
        String m = refused("-b", "12X");
        assertTrue(m.contains("-b (--minbytes)") && m.contains("'12X'") && m.contains("not a size"), m);
        m = refused("-e", "lots");
        assertTrue(m.contains("-e (--maxbytes)") && m.contains("'lots'"), m);
        m = refused("-i", "-1");
        assertTrue(m.contains("-i (--stepbytes)") && m.contains("'-1'"), m);
        m = refused("-f", "two");
        assertTrue(m.contains("-f (--stepfactor)") && m.contains("'two'") && m.contains("whole number"), m);
        m = refused("-n", "0");
        assertTrue(m.contains("-n (--iters)") && m.contains("'0'") && m.contains(">= 1"), m);
        m = refused("-w", "-2");
        assertTrue(m.contains("-w (--warmup_iters)") && m.contains("'-2'"), m);
        m = refused("-c", "x");
        assertTrue(m.contains("-c (--check)") && m.contains("'x'"), m);
        m = refused("-o", "mul");
        assertTrue(m.contains("-o (--op)") && m.contains("'mul'") && m.contains("sum, prod, min, max, avg"), m);
        m = refused("-d", "float128");
        assertTrue(m.contains("-d (--datatype)") && m.contains("'float128'") && m.contains("bfloat16"), m);
        m = refused("-r", "first");
        assertTrue(m.contains("-r (--root)") && m.contains("'first'"), m);
        m = refused("-g", "0");
        assertTrue(m.contains("-g (--ngpus)") && m.contains("'0'"), m);
        m = refused("-G", "-1");
        assertTrue(m.contains("-G (--cudagraph)") && m.contains("'-1'"), m);
        m = refused("-z", "3");
        assertTrue(m.contains("-z (--blocking)") && m.contains("'3'") && m.contains("not supported"), m);
        m = refused("-o", "mulsum");
        assertTrue(m.startsWith("-o (--op): 'mulsum' is not supported") && m.contains("ncclRedOpCreatePreMulSum"), m);
        m = refused("-z", "3");
        assertTrue(m.contains("-z (--blocking)") && m.contains("'3'") && m.contains("not supported"), m);
        m = refused("-z", "4");
        assertTrue(m.contains("-z (--blocking)") && m.contains("0..3"), m);
        m = refused("-a", "4");
        assertTrue(m.contains("-a (--average)") && m.contains("'4'") && m.contains("0..3"), m);
        m = refused("-J", "");
        assertTrue(m.contains("-J (--output_file)"), m);
        m = refused("--plot", " ");
        assertTrue(m.contains("--plot"), m);
        m = refused("--init_repeats", "-2");
        assertTrue(m.contains("--init_repeats") && m.contains("'-2'"), m);
        m = refused("--init_repeats", "ten");
        assertTrue(m.contains("--init_repeats") && m.contains("'ten'"), m);
        m = refused("--op_times", "2");
        assertTrue(m.contains("--op_times") && m.contains("'2'"), m);
        m = refused("--op_times", "1", "-n", "100001");
        assertTrue(m.contains("-n (--iters) must be at most 100000, got 100001"), m);
        assertEquals(100000, PerfArgs.parse("--op_times", "1", "-n", "100000").iters);
        m = refused("--op_times", "1", "-G", "5");
        assertTrue(m.contains("--op_times: '1' cannot be combined with -G (--cudagraph)"), m);
        m = refused("--jit_quiet_ms", "1001");
        assertTrue(m.contains("--jit_quiet_ms: '1001' must be in 0..1000"), m);
        m = refused("--jit_quiet_ms", "-1");
        assertTrue(m.contains("--jit_quiet_ms: '-1' must be in 0..1000"), m);
        m = refused("--jit_warmup", "1000001");
        assertTrue(m.contains("--jit_warmup: '1000001' must be in 0..1000000"), m);
        m = refused("--timer", "cuda");
        assertEquals("--timer: 'cuda' must be host (the host's clock, as nccl-tests) or events (CUDA events)", m);
        m = refused("--ops", "allgather_v");
        assertTrue(m.contains("--ops: 'allgather_v' is not an operation") && m.contains("all_reduce"), m);
        m = refused("-t", "4");
        assertTrue(m.startsWith("-t (--nthreads): '4' nccl4j-perf runs one thread per process"), m);
        m = refused("-Q", "1");
        assertTrue(m.startsWith("Unknown option: '-Q'"), m);
        m = refused("-b");
        assertTrue(m.startsWith("Missing required parameter for option '--minbytes' (<size>)"), m);
        m = refused("stray");
        assertTrue(m.contains("'stray'"), m);
        m = refused("-b", "1M", "-e", "1K");
        assertTrue(m.contains("1048576 > 1024"), m);
        m = refused("-z", "1", "-G", "5");
        assertTrue(m.contains("-z") && m.contains("-G"), m);
        m = refused("-b", "0", "-e", "8", "-f", "2");
        assertTrue(m.contains("-b (--minbytes)") && m.contains("'0'"), m);
    }

    @Test
    void ladderMatchesNcclTests() {
        // all_reduce_perf -b 8 -e 128M -f 2: 8, 16, 32, ..., 128M: 25 sizes
        List<Long> expected = new ArrayList<>();
        for (long s = 8; s <= 128L << 20; s *= 2) {
            expected.add(s);
        }
        assertEquals(25, expected.size());
        assertEquals(expected, PerfArgs.parse("-b", "8", "-e", "128M", "-f", "2").sizes());
        assertEquals(List.of(1L << 20, 2L << 20, 3L << 20, 4L << 20), PerfArgs.parse("-b", "1M", "-e", "4M").sizes());
        assertEquals(List.of(100L, 300L, 900L), PerfArgs.ladder(100, 1000, 3, 0));
        assertEquals(List.of(1000L, 1500L, 2000L), PerfArgs.ladder(1000, 2100, 1, 500));
        assertEquals(List.of(8L), PerfArgs.ladder(8, 8, 2, 0));
        assertEquals(List.of(1L << 62), PerfArgs.ladder(1L << 62, Long.MAX_VALUE, 4, 0), "no overflow");
        assertEquals(List.of(8L, 16L, 32L, 64L), PerfArgs.parse("-b", "8", "-e", "100", "-f", "4").warmupSizes());
        assertEquals("2(factor)", PerfArgs.parse("-f", "2").stepText());
        assertEquals("1048576(bytes)", PerfArgs.parse().stepText());
    }
}
