package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class DdpOptionsTest {
    @Test
    void defaultsAreTheLecturesSettings() {
        DdpOptions o = DdpOptions.parse();
        assertEquals(30, o.steps);
        assertEquals(25.0, o.bucketCapMB);
        assertEquals(4000, o.size);
        assertEquals(1000, o.batch);
        assertEquals(0.001f, o.lr);
        assertEquals(1234L, o.seed);
        assertFalse(o.noComm);
        assertNull(o.trace);
        assertEquals(3, DdpOptions.FIRST_MEASURED_STEP);
    }

    @Test
    void parsesEveryFlag() {
        DdpOptions o = DdpOptions.parse("--steps", "12", "--bucket-cap-mb", "1.5", "--trace", "t.json", "--seed",
                "-7", "--no-comm", "--size", "512", "--batch", "64", "--lr", "0.01");
        assertEquals(12, o.steps);
        assertEquals(1.5, o.bucketCapMB);
        assertEquals("t.json", o.trace);
        assertEquals(-7L, o.seed);
        assertTrue(o.noComm);
        assertEquals(512, o.size);
        assertEquals(64, o.batch);
        assertEquals(0.01f, o.lr);
    }

    @Test
    void rejectsBadInput() {
        String[][] bad = {
            {"--steps"}, {"--steps", "0"}, {"--steps", "x"}, {"--bucket-cap-mb", "0"}, {"--bucket-cap-mb", "-1"},
            {"--bucket-cap-mb", "NaN"}, {"--seed", "1.5"}, {"--lr", "0"}, {"--size", "-3"}, {"--frobnicate"},
            {"--size", "3", "--batch", "5"},          // odd element count: cuRAND normals come in pairs
            {"--size", "50000", "--batch", "2"},       // 2.5e9 weights: beyond cuBLAS' 32-bit sizes
        };
        for (String[] args : bad) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DdpOptions.parse(args),
                    String.join(" ", args));
            String option = args[args.length == 4 ? 0 : 0];
            assertTrue(e.getMessage().contains(option.startsWith("--") ? option : "--"), e.getMessage());
            assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
        }
    }

    @Test
    void theMessagesNameTheOptionAndWhatItTakes() {
        assertEquals("Invalid value for option '--steps': 0 (a whole number greater than 0)",
                assertThrows(IllegalArgumentException.class, () -> DdpOptions.parse("--steps", "0")).getMessage());
        assertEquals("Invalid value for option '--steps': 'x' is not an int; try 'DdpTraining --help'",
                assertThrows(IllegalArgumentException.class, () -> DdpOptions.parse("--steps", "x")).getMessage());
        assertEquals("Unknown option: '--frobnicate'; try 'DdpTraining --help'",
                assertThrows(IllegalArgumentException.class, () -> DdpOptions.parse("--frobnicate")).getMessage());
        assertEquals("Missing required parameter for option '--steps' (N); try 'DdpTraining --help'",
                assertThrows(IllegalArgumentException.class, () -> DdpOptions.parse("--steps")).getMessage());
    }

    @Test
    void traceFilePerRank() {
        assertEquals("trace_ddp_rank0.json", DdpOptions.parse().traceFile(0, 2));
        assertEquals("trace_ddp_rank1.json", DdpOptions.parse().traceFile(1, 2));
        assertEquals("trace_nocomm_rank0.json", DdpOptions.parse("--no-comm").traceFile(0, 1));
        assertEquals("out/r3.json", DdpOptions.parse("--trace", "out/r{rank}.json").traceFile(3, 4));
        assertEquals("t.json", DdpOptions.parse("--trace", "t.json").traceFile(0, 1));
        assertEquals("dir/t_rank1.json", DdpOptions.parse("--trace", "dir/t.json").traceFile(1, 2));
        assertEquals("dir.d/trace_rank1", DdpOptions.parse("--trace", "dir.d/trace").traceFile(1, 2));
        assertEquals(".trace_rank1", DdpOptions.parse("--trace", ".trace").traceFile(1, 2));
    }

    @Test
    void theCommunicationFlagsParseAndRefuseWhatTheyCannotTake() {
        DdpOptions o = DdpOptions.parse("--symmetric", "--cta-policy", "Efficiency", "--comm-priority", "high",
                "--overlap-optimizer");
        assertTrue(o.symmetric);
        assertEquals(org.nccl4j.CtaPolicy.EFFICIENCY, o.ctaPolicy);
        assertEquals("high", o.commPriority);
        assertTrue(o.overlapOptimizer);
        assertTrue(o.toString().endsWith(" symmetric cta_policy=efficiency comm_priority=high overlap_optimizer"),
                o.toString());
        DdpOptions d = DdpOptions.parse();
        assertEquals(null, d.ctaPolicy);
        assertEquals("normal", d.commPriority);
        assertEquals("Invalid value for option '--cta-policy': fast (default, efficiency or zero)",
                assertThrows(IllegalArgumentException.class, () -> DdpOptions.parse("--cta-policy", "fast"))
                        .getMessage());
        assertEquals("Invalid value for option '--comm-priority': low (normal or high)",
                assertThrows(IllegalArgumentException.class, () -> DdpOptions.parse("--comm-priority", "low"))
                        .getMessage());
        String noComm = "--symmetric, --cta-policy, --comm-priority, --overlap-optimizer and --split-last set the "
                + "communication: leave them out with --no-comm (the compute-only step is the model's own)";
        assertEquals(noComm, assertThrows(IllegalArgumentException.class,
                () -> DdpOptions.parse("--no-comm", "--overlap-optimizer")).getMessage());
        assertEquals(noComm, assertThrows(IllegalArgumentException.class,
                () -> DdpOptions.parse("--no-comm", "--split-last", "4")).getMessage());
    }

    @Test
    void splitLastTakesOneToSixtyFourChunksAndNoMoreThanTheColumns() {
        assertEquals(1, DdpOptions.parse().splitLast);
        DdpOptions o = DdpOptions.parse("--split-last", "4", "--overlap-optimizer");
        assertEquals(4, o.splitLast);
        assertTrue(o.toString().endsWith(" overlap_optimizer split_last=4"), o.toString());
        assertEquals(64, DdpOptions.parse("--split-last", "64").splitLast);
        for (String bad : new String[] {"0", "-2", "65"}) {
            assertEquals("Invalid value for option '--split-last': " + bad + " (1 to 64 chunks: at most 64 and at "
                    + "most --size, the gradient's columns)", assertThrows(IllegalArgumentException.class,
                            () -> DdpOptions.parse("--split-last", bad)).getMessage());
        }
        assertEquals("Invalid value for option '--split-last': 9 (1 to 8 chunks: at most 64 and at most --size, the "
                + "gradient's columns)", assertThrows(IllegalArgumentException.class,
                        () -> DdpOptions.parse("--size", "8", "--batch", "2", "--split-last", "9")).getMessage());
    }
}
