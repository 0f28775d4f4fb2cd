package org.nccl4j;

import org.nccl4j.jni.CudaRuntime;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CUDA runtime as the core calls it: the backend opened once ({@link NativeCudaBackend} over the runtime that
 * {@link CudaRuntime} chose, described at INFO; a test may set another), each call's status turned into a
 * {@link CudaException}, and work on a device made current for its duration. {@link Cuda} is the public face.
 */
final class CudaCalls {
    private static final Logger LOG = LoggerFactory.getLogger("org.nccl4j.Cuda");   // the logger users know
    private static volatile CudaBackend backend;

    private CudaCalls() {
    }

    static CudaBackend backend() {
        CudaBackend b = backend;
        if (b == null) {
            synchronized (CudaCalls.class) {
                b = backend;
                if (b == null) {
                    // throws CudaUnavailableException: what was tried, and the fix
                    CudaRuntime runtime = CudaRuntime.load();
                    LOG.info("nccl4j: opened the {}", runtime.report());
                    b = new NativeCudaBackend();
                    backend = b;
                }
            }
        }
        return b;
    }

    /** Test hook: replaces the CUDA runtime (null restores the real one on next use). */
    static void useBackend(CudaBackend b) {
        backend = b;
    }

    static void check(int status, String operation, int device) {
        if (status != 0) {
            throw failure(status, operation, device);
        }
    }

    static CudaException failure(int status, String operation, int device) {
        CudaBackend b = backend;
        String name = null;
        String text = null;
        if (b != null) {
            name = b.errorName(status);
            text = b.errorString(status);
        }
        return new CudaException(operation, status, name, text, device);
    }

    /** Runs {@code body} with {@code device} current, restoring the previous device afterwards. */
    static <T> T onDevice(int device, java.util.function.Supplier<T> body) {
        CudaBackend b = backend();
        int[] prev = new int[1];
        check(b.getDevice(prev), "cudaGetDevice", -1);
        if (prev[0] != device) {
            check(b.setDevice(device), "cudaSetDevice", device);
        }
        try {
            return body.get();
        } finally {
            if (prev[0] != device) {
                b.setDevice(prev[0]);
            }
        }
    }
}
