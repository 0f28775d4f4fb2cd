package org.nccl4j.diagnostics;

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
 * {@link ExitStatus}: the exit status of the examples and the tools' programs, 2 with one message for a machine with
 * no NCCL, no CUDA runtime or no usable GPU, 1 with one line for NCCL's failures, and every other failure passed on
 * unchanged.
 */
class ExitStatusTest {
    private static final String NL = System.lineSeparator();

    /** The status and what went to stderr. */
    private record Outcome(int status, String err) {
    }

    private static Outcome run(IntSupplier body) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream err = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            int status = ExitStatus.of("Prog", body, err);
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
        assertEquals(new Outcome(1, ""), run(() -> 1));
        assertEquals(new Outcome(3, ""), run(() -> 3));
        assertEquals(new Outcome(7, ""), run(() -> 7));
    }

    @Test
    void ncclsFailuresAreStatusOneInOneLine() {
        org.nccl4j.NcclException e = new org.nccl4j.NcclException("ncclCommInitRank", 5, "invalid usage",
                "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60", 1);
        Outcome o = run(throwing(e));
        assertEquals(1, o.status());
        assertEquals("Prog: NcclException: " + e.getMessage() + NL, o.err());
        assertEquals(1, o.err().split("\n").length, "one line");
    }

    @Test
    void noNcclIsStatusTwoWithTheLoadersMessage() {
        NcclUnavailableException e = new NcclUnavailableException("libnccl.so.2: cannot open shared object file", null);
        assertEquals(new Outcome(2, "Prog: NCCL is not available on this machine.\nlibnccl.so.2: cannot open shared object "
                + "file" + NL), run(throwing(e)));
    }

    @Test
    void aCudaRuntimeThatCannotLoadIsStatusTwoAnyOtherIllegalStateIsPassedOn() {
        IllegalStateException noRuntime = new IllegalStateException("The CUDA runtime could not be loaded: libcudart.so.13");
        assertEquals(new Outcome(2, "Prog: no usable CUDA runtime or GPU on this machine.\n" + noRuntime.getMessage() + NL),
                run(throwing(noRuntime)));

        IllegalStateException other = new IllegalStateException("this communicator is closed");
        assertSame(other, assertThrows(IllegalStateException.class, () -> run(throwing(other))));
        IllegalStateException noMessage = new IllegalStateException();
        assertSame(noMessage, assertThrows(IllegalStateException.class, () -> run(throwing(noMessage))));
    }

    @Test
    void cudaErrorsMeaningNoGpuAreStatusTwoOthersArePassedOn() {
        for (CudaException e : new CudaException[] {cuda(34, "cudaErrorStubLibrary"), cuda(35, "cudaErrorInsufficientDriver"),
                cuda(100, "cudaErrorNoDevice")}) {
            assertEquals(new Outcome(2, "Prog: no usable GPU on this machine.\n" + e.getMessage() + NL), run(throwing(e)),
                    e.getMessage());
        }
        for (CudaException e : new CudaException[] {cuda(2, "cudaErrorMemoryAllocation"), cuda(101, "cudaErrorInvalidDevice"),
                cuda(999, "cudaErrorUnknown")}) {
            assertSame(e, assertThrows(CudaException.class, () -> run(throwing(e))), e.getMessage());
        }
    }

    @Test
    void otherExceptionsArePassedOn() {
        IllegalArgumentException bad = new IllegalArgumentException("--size must be positive");
        assertSame(bad, assertThrows(IllegalArgumentException.class, () -> run(throwing(bad))));
    }
}
