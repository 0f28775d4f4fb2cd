package org.nccl4j.tools.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Test;
import org.nccl4j.CudaException;
import org.nccl4j.NcclException;
import org.nccl4j.jni.NcclUnavailableException;

/**
 * {@link Programs#exitStatus}: the tools' exit status (nccl4j-perf, the harnesses), 2 with one message for a machine
 * with no NCCL, no CUDA runtime or no usable GPU, 1 with one line for NCCL's failures, every other failure passed on;
 * and {@link Programs#parseCount}.
 */
class ProgramsTest {
    private static final String NL = System.lineSeparator();

    /** The status and what went to stderr. */
    private record Outcome(int status, String err) {
    }

    private static Outcome run(IntSupplier body) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream err = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            int status = Programs.exitStatus("nccl4j-perf", body, err);
            return new Outcome(status, bytes.toString(StandardCharsets.UTF_8));
        }
    }

    private static IntSupplier throwing(RuntimeException e) {
        return () -> {
            throw e;
        };
    }

    private static CudaException cuda(int code, String name) {
        return new CudaException("cudaGetDeviceCount", code, name, "text of " + name, -1);
    }

    @Test
    void theBodysStatusPassesThroughSilently() {
        assertEquals(new Outcome(0, ""), run(() -> 0));
        assertEquals(new Outcome(3, ""), run(() -> 3));
    }

    @Test
    void ncclsFailuresAreStatusOneInOneLine() {
        NcclException e = new NcclException("ncclCommInitRank", 5, "invalid usage", "Duplicate GPU detected", 1);
        assertEquals(new Outcome(1, "nccl4j-perf: NcclException: " + e.getMessage() + NL), run(throwing(e)));
    }

    @Test
    void noNcclNoRuntimeOrNoGpuIsStatusTwo() {
        NcclUnavailableException nccl = new NcclUnavailableException("libnccl.so.2: cannot open", null);
        assertEquals(new Outcome(2, "nccl4j-perf: NCCL is not available on this machine.\nlibnccl.so.2: cannot open"
                + NL), run(throwing(nccl)));
        IllegalStateException runtime = new IllegalStateException("The CUDA runtime could not be loaded: libcudart");
        assertEquals(new Outcome(2, "nccl4j-perf: no usable CUDA runtime or GPU on this machine.\n"
                + runtime.getMessage() + NL), run(throwing(runtime)));
        CudaException noDevice = cuda(100, "cudaErrorNoDevice");
        assertEquals(new Outcome(2, "nccl4j-perf: no usable GPU on this machine.\n" + noDevice.getMessage() + NL),
                run(throwing(noDevice)));
    }

    @Test
    void otherFailuresArePassedOn() {
        CudaException oom = cuda(2, "cudaErrorMemoryAllocation");
        assertSame(oom, assertThrows(CudaException.class, () -> run(throwing(oom))));
        IllegalStateException closed = new IllegalStateException("this communicator is closed");
        assertSame(closed, assertThrows(IllegalStateException.class, () -> run(throwing(closed))));
    }

    @Test
    void countsTakePowerOfTwoSuffixesAndAtLeastOne() {
        assertEquals(1000, Programs.parseCount("1000"));
        assertEquals(64 << 10, Programs.parseCount("64k"));
        assertEquals(1 << 20, Programs.parseCount(" 1M "));
        assertEquals(2L << 30, Programs.parseCount("2G"));
        assertEquals("count must be at least 1, got 0",
                assertThrows(IllegalArgumentException.class, () -> Programs.parseCount("0")).getMessage());
        assertThrows(NumberFormatException.class, () -> Programs.parseCount("many"));
    }
}
