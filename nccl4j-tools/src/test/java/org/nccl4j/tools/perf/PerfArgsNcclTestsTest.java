package org.nccl4j.tools.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.nccl4j.DataType;
import org.nccl4j.ReduceOp;

/**
 * nccl4j-perf takes nccl-tests' command line: the command lines of nccl-tests' README (now and in its history), each
 * of nccl-tests' flags with its meaning and default, and the one-line refusal of what nccl4j-perf does not run.
 */
class PerfArgsNcclTestsTest {
    private static String refused(String... argv) {
        return assertThrows(IllegalArgumentException.class, () -> PerfArgs.parse(argv)).getMessage();
    }

    private static PerfArgs parse(String commandLine) {
        return PerfArgs.parse(commandLine.split(" "));
    }

    @Test
    void theReadmesCommandLines() {
        // $ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8
        PerfArgs a = parse("./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8");
        assertEquals(List.of(Operation.ALL_REDUCE), a.operations);
        assertEquals(8, a.minBytes);
        assertEquals(128L << 20, a.maxBytes);
        assertEquals(2, a.stepFactor);
        assertEquals(8, a.gpus);
        assertEquals(25, a.sizes().size(), "8 B to 128 MiB, doubling");
        assertEquals(20, a.iters);
        assertEquals(1, a.check);

        // $ mpirun -np 64 -N 8 ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1 (the program's part)
        a = parse("./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1");
        assertEquals(8L << 30, a.maxBytes);
        assertEquals(1, a.gpus);
        assertEquals(31, a.sizes().size(), "8 B to 8 GiB, doubling");

        // $ mpirun -np 10 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4 (an earlier README)
        a = parse("./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4");
        assertEquals(4, a.gpus);
        // $ mpirun -np 40 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4 -c 0 (an earlier README)
        a = parse("./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4 -c 0");
        assertEquals(0, a.check);
        assertEquals(4, a.gpus);

        // the brief's own example, and a binary built with NAME_SUFFIX=_mpi
        a = parse("all_reduce_perf -b 8 -e 1G -f 2");
        assertEquals(1L << 30, a.maxBytes);
        assertEquals(List.of(Operation.ALL_GATHER), parse("./build/all_gather_perf_mpi -b 8").operations);
    }

    @Test
    void everyProgramOfNcclTests() {
        String[][] programs = {{"all_reduce_perf", "ALL_REDUCE"}, {"all_gather_perf", "ALL_GATHER"},
            {"reduce_scatter_perf", "REDUCE_SCATTER"}, {"broadcast_perf", "BROADCAST"}, {"reduce_perf", "REDUCE"},
            {"alltoall_perf", "ALLTOALL"}, {"scatter_perf", "SCATTER"}, {"gather_perf", "GATHER"},
            {"sendrecv_perf", "SENDRECV"}};
        for (String[] p : programs) {
            assertEquals(List.of(Operation.valueOf(p[1])), PerfArgs.parse(p[0], "-b", "8").operations, p[0]);
        }
        assertEquals("'hypercube_perf': nccl-tests' hypercube_perf is not implemented by nccl4j-perf; it runs "
                + "all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, reduce_perf, sendrecv_perf, "
                + "alltoall_perf, gather_perf, scatter_perf", refused("hypercube_perf", "-b", "8"));
        String m = refused("./build/alltoallv_perf");
        assertTrue(m.startsWith("'./build/alltoallv_perf': nccl-tests' alltoallv_perf is not implemented"), m);
        m = refused("bogus_perf");
        assertTrue(m.startsWith("'bogus_perf' is not one of nccl-tests' programs that nccl4j-perf runs: name "
                + "all_reduce_perf,"), m);
        m = refused("-b", "8", "all_reduce_perf");
        assertEquals("the operation 'all_reduce_perf' must come first, as the program's name does in nccl-tests: "
                + "nccl4j-perf all_reduce_perf -b 8 ...", m);
        m = refused("all_reduce_perf", "--ops", "all");
        assertTrue(m.startsWith("--ops: 'all' cannot be combined with the operation named first"), m);
        m = refused("all_reduce_perf", "broadcast_perf");
        assertTrue(m.contains("'broadcast_perf'"), m);
        assertEquals(List.of(Operation.values()), PerfArgs.parse("--ops", "all").operations);
        assertEquals(List.of(Operation.values()), PerfArgs.parse("--operation", "all").operations, "the old name");
        assertEquals(List.of(Operation.ALL_REDUCE), PerfArgs.parse().operations, "the default is all_reduce_perf's");
    }

    @Test
    void everyNcclTestsFlagAtItsDefault() {
        // nccl-tests' defaults (src/common.cu), each given explicitly: the same options as none
        PerfArgs a = parse("all_reduce_perf -t 1 -g 1 -b 32M -e 32M -i 1M -f 1 -n 20 -m 1 -w 1 -N 1 -p 0 -c 1 -o sum"
                + " -d float -r 0 -z 0 -y 0 -T 0 -G 0 -C 0 -S 0 -a 1 -R 0 -D 0 -V 16 -M 0 -u 0 -I 0 -K 0");
        assertEquals(PerfArgs.parse().toString(), a.toString());
        PerfArgs b = parse("all_reduce_perf --nthreads 1 --ngpus 1 --minbytes 32M --maxbytes 32M --stepbytes 1M"
                + " --stepfactor 1 --iters 20 --agg_iters 1 --warmup_iters 1 --run_cycles 1 --parallel_init 0"
                + " --check 1 --op sum --datatype float --root 0 --blocking 0 --stream_null 0 --timeout 0"
                + " --cudagraph 0 --report_cputime 0 --report_timestamps 0 --average 1 --local_register 0"
                + " --device_implementation 0 --device_cta_count 16 --memory 0 --unalign 0 --per_iter_timing 0"
                + " --per_iter_skip 0");
        assertEquals(a.toString(), b.toString());
    }

    @Test
    void everyHonouredFlagSetsItsValue() {
        PerfArgs a = parse("reduce_scatter_perf -t 1 -m 8 -N 3 -p 1 -y 1 -T 30 -C 1 -S 1 -R 1 -x 1 -V 32 -u 5 -I 1 "
                + "-K 2 -n 10 -o max -d int32 -J r.json");
        assertEquals(List.of(Operation.REDUCE_SCATTER), a.operations);
        assertEquals(8, a.aggIters);
        assertEquals(3, a.runCycles);
        assertEquals(1, a.parallelInit);
        assertEquals(1, a.streamNull);
        assertEquals(30, a.timeoutSeconds);
        assertEquals(1, a.reportCputime);
        assertEquals(1, a.reportTimestamps);
        assertEquals(1, a.localRegister);
        assertEquals(1, a.ctaPolicy);
        assertEquals(32, a.deviceCtaCount);
        assertEquals(5, a.unalign);
        assertEquals(1, a.opTimes);
        assertEquals(2, a.perIterSkip);
        assertEquals(List.of(ReduceOp.MAX), a.ops);
        assertEquals(List.of(DataType.INT32), a.types);
        assertEquals(Path.of("r.json"), a.jsonFile);
        assertEquals(0, parse("all_reduce_perf -N 0").runCycles, "0: until stopped");
        assertEquals(2, parse("all_reduce_perf -R 2").localRegister);
        assertEquals(2, parse("all_reduce_perf -x 2").ctaPolicy);
        assertEquals(0, parse("all_reduce_perf -x 0").ctaPolicy);
        assertEquals(1, PerfArgs.parse("all_reduce_perf", "--per_iter_timing=1").opTimes, "-I is --op_times");
    }

    @Test
    void eachRefusalNamesTheFlagAndWhy() {
        assertEquals("-t (--nthreads): '2' nccl4j-perf runs one thread per process (one JVM per GPU rank): use -t 1, "
                + "and launch one rank per GPU with mpirun or nccl4j-run, or drive several with -g",
                refused("all_reduce_perf", "-t", "2"));
        String m = refused("-t", "all_reduce");
        assertTrue(m.startsWith("-t (--nthreads): 'all_reduce' is not a whole number; -t is nccl-tests' threads per "
                + "process: name the operation first (nccl4j-perf all_reduce_perf ...) or with --ops"), m);
        m = refused("all_reduce_perf", "-z", "3");
        assertTrue(m.startsWith("-z (--blocking): '3' is not supported"), m);
        m = refused("all_reduce_perf", "-D", "1");
        assertTrue(m.startsWith("-D (--device_implementation): '1' is not supported: nccl4j-perf has no device-API "
                + "kernels"), m);
        m = refused("all_reduce_perf", "-M", "1");
        assertTrue(m.startsWith("-M (--memory): '1' is not supported: the report needs cudaMemGetInfo"), m);
        m = refused("all_reduce_perf", "-o", "mulsum");
        assertTrue(m.startsWith("-o (--op): 'mulsum' is not supported"), m);
        m = refused("all_reduce_perf", "-x", "3");
        assertTrue(m.startsWith("-x (--cta_policy): '3' must be in 0..2"), m);
        m = refused("all_reduce_perf", "-R", "3");
        assertTrue(m.startsWith("-R (--local_register): '3' must be in 0..2"), m);
        m = refused("all_reduce_perf", "-V", "0");
        assertTrue(m.startsWith("-V (--device_cta_count): '0' must be in 1..128"), m);
        m = refused("all_reduce_perf", "-V", "129");
        assertTrue(m.startsWith("-V (--device_cta_count): '129' must be in 1..128"), m);
        m = refused("all_reduce_perf", "-x", "1", "-g", "2");
        assertEquals("-x (--cta_policy): '1' needs a communicator configuration, which -g 2 (ncclCommInitAll) cannot "
                + "take: run one process per GPU (mpirun or nccl4j-run) with -g 1", m);
        m = refused("all_reduce_perf", "-T", "60", "-g", "4");
        assertTrue(m.startsWith("-T (--timeout): '60' needs a communicator configuration, which -g 4"), m);
        m = refused("all_reduce_perf", "-R", "2", "-g", "2");
        assertTrue(m.startsWith("-R (--local_register): '2' with -g 2 would register the windows of 2 communicators"),
                m);
        m = refused("all_reduce_perf", "-K", "3");
        assertEquals("-K (--per_iter_skip): '3' needs per-iteration timing: add -I 1", m);
        m = refused("all_reduce_perf", "-I", "1", "-K", "20");
        assertEquals("-K (--per_iter_skip): '20' must leave samples: it must be below -n (--iters) 20", m);
        m = refused("all_reduce_perf", "-I", "1", "-G", "2");
        assertTrue(m.contains("cannot be combined with -G (--cudagraph)"), m);
        m = refused("all_reduce_perf", "-y", "1", "-G", "2");
        assertTrue(m.startsWith("-y (--stream_null): '1' cannot be combined with -G (--cudagraph): CUDA cannot "
                + "capture the legacy default stream"), m);
        m = refused("all_reduce_perf", "-m", "0");
        assertTrue(m.startsWith("-m (--agg_iters): '0' must be >= 1"), m);
        m = refused("all_reduce_perf", "-N", "-1");
        assertTrue(m.startsWith("-N (--run_cycles): '-1' must be >= 0"), m);
        m = refused("all_reduce_perf", "-T", "-5");
        assertTrue(m.startsWith("-T (--timeout): '-5' must be >= 0"), m);
        m = refused("all_reduce_perf", "-u", "x");
        assertTrue(m.startsWith("-u (--unalign): 'x' is not a whole number"), m);
    }

    @Test
    void theLoadedNcclRefusesFlagsNamingTheReleaseThatAddsThem() {
        String m = assertThrows(IllegalArgumentException.class,
                () -> parse("all_reduce_perf -R 1").requireSupportedBy(21809, "2.18.9")).getMessage();
        assertEquals("-R (--local_register): '1' needs NCCL 2.19 or newer (ncclCommRegister); the loaded NCCL is "
                + "2.18.9", m);
        m = assertThrows(IllegalArgumentException.class,
                () -> parse("all_reduce_perf -R 2").requireSupportedBy(22605, "2.26.5")).getMessage();
        assertTrue(m.startsWith("-R (--local_register): '2' needs NCCL 2.27 or newer (ncclCommWindowRegister"), m);
        m = assertThrows(IllegalArgumentException.class,
                () -> parse("all_reduce_perf -x 1").requireSupportedBy(22702, "2.27.2")).getMessage();
        assertEquals("-x (--cta_policy): '1' needs NCCL 2.27.3 or newer (ncclConfig_t.CTAPolicy); the loaded NCCL is "
                + "2.27.2", m);
        m = assertThrows(IllegalArgumentException.class,
                () -> parse("all_reduce_perf -x 2").requireSupportedBy(22703, "2.27.3")).getMessage();
        assertEquals("-x (--cta_policy): '2' needs NCCL 2.28 or newer (NCCL_CTA_POLICY_ZERO); the loaded NCCL is "
                + "2.27.3", m);
        parse("all_reduce_perf -R 1 -x 1").requireSupportedBy(22703, "2.27.3");
        parse("all_reduce_perf -R 2 -x 2").requireSupportedBy(22800, "2.28.0");
        parse("all_reduce_perf").requireSupportedBy(20000, "2.0.0");
        // ncclMemAlloc where NCCL has it (2.19+), as nccl-tests; cudaMalloc before
        assertTrue(PerfArgs.ncclMemAlloc(21900));
        assertTrue(!PerfArgs.ncclMemAlloc(21809));
    }

    @Test
    void theHelpListsEveryFlag() {
        for (String flag : PerfArgs.NCCL_TESTS_FLAGS) {
            assertTrue(PerfArgs.USAGE.matches("(?s).*[ ,\\[]" + java.util.regex.Pattern.quote(flag) + "[ ,=\\]].*"),
                    flag + " in " + PerfArgs.USAGE);
        }
        assertEquals(64, PerfArgs.NCCL_TESTS_FLAGS.size(), "the 31 flags of nccl-tests' getopt string and -h, short "
                + "and long");
        for (String ours : new String[] {"--ops", "--plot", "--init_repeats", "--op_times", "--jit_quiet_ms",
            "--jit_warmup", "--version", "<program>"}) {
            assertTrue(PerfArgs.USAGE.contains(ours), ours);
        }
        assertTrue(PerfArgs.USAGE.contains("all_reduce_perf, all_gather_perf, reduce_scatter_perf"), PerfArgs.USAGE);
    }
}
