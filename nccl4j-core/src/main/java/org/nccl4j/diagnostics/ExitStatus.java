package org.nccl4j.diagnostics;

import java.io.PrintStream;
import java.util.function.IntSupplier;
import org.nccl4j.CudaException;
import org.nccl4j.NcclException;
import org.nccl4j.jni.NcclUnavailableException;

/**
 * The exit status of a program that runs as a rank (the examples, nccl4j-perf, the GPU-run harnesses): its own, or 2
 * with one message when the machine has no NCCL, no usable CUDA runtime or no GPU, or 1 with NCCL's failure in one
 * line (a {@link NcclException}: a lost peer, a timeout, NCCL refusing a call). Every other failure propagates.
 */
public final class ExitStatus {
    /** {@code cudaErrorStubLibrary}, {@code cudaErrorInsufficientDriver}, {@code cudaErrorNoDevice}. */
    private static final int[] NO_GPU_CODES = {34, 35, 100};

    private ExitStatus() {
    }

    /**
     * Runs a program's body and returns its exit status; the message of a 1 or a 2 goes to {@code System.err}.
     *
     * @param name the program's name, which starts the message
     * @param body returns the program's status
     * @return the body's status, 1 or 2 ({@link #of(String, IntSupplier, PrintStream)})
     */
    public static int of(String name, IntSupplier body) {
        return of(name, body, System.err);
    }

    /**
     * {@link #of(String, IntSupplier)} with the message written to {@code err}.
     *
     * @param name the program's name, which starts the message
     * @param body returns the program's status
     * @param err where the message goes
     * @return the body's status, or 2 when it threw {@link NcclUnavailableException}, the CUDA runtime's failure to
     *         load, or a {@link CudaException} meaning no usable GPU ({@code cudaErrorStubLibrary},
     *         {@code cudaErrorInsufficientDriver}, {@code cudaErrorNoDevice}); 1 when it threw a {@link NcclException},
     *         written as {@code name: message} on one line
     */
    public static int of(String name, IntSupplier body, PrintStream err) {
        try {
            return body.getAsInt();
        } catch (NcclUnavailableException e) {
            err.println(name + ": NCCL is not available on this machine.\n" + e.getMessage());
            return 2;
        } catch (NcclException e) {
            err.println(name + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
            return 1;
        } catch (IllegalStateException e) {
            if (e.getMessage() != null && e.getMessage().contains("CUDA runtime could not be loaded")) {
                err.println(name + ": no usable CUDA runtime or GPU on this machine.\n" + e.getMessage());
                return 2;
            }
            throw e;
        } catch (CudaException e) {
            for (int code : NO_GPU_CODES) {
                if (e.code() == code) {
                    err.println(name + ": no usable GPU on this machine.\n" + e.getMessage());
                    return 2;
                }
            }
            throw e;
        }
    }
}
