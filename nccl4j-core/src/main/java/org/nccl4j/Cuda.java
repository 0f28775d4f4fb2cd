package org.nccl4j;

import org.nccl4j.jni.CudaRuntime;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The few CUDA runtime facts nccl4j needs: device count, current device, synchronization. Device memory,
 * streams and events are {@link DeviceBuffer}, {@link Stream} and {@link Event}.
 *
 * <p>Calls go to the CUDA 12 or 13 runtime that nccl4j opens at run time ({@link org.nccl4j.jni.CudaRuntime} says
 * which and how to choose: {@code NCCL4J_CUDA=12}, {@code NCCL4J_CUDART=/path/libcudart.so.12}); a machine without a
 * CUDA runtime makes them throw a {@link org.nccl4j.jni.CudaUnavailableException} (an {@link IllegalStateException})
 * that names what was tried and the fix, and one without a driver a {@link CudaException} that says so. The runtime
 * opened is described once at INFO.
 */
public final class Cuda {
    private static final Logger LOG = LoggerFactory.getLogger(Cuda.class);
    private static volatile CudaBackend backend;

    private Cuda() {
    }

    static CudaBackend backend() {
        CudaBackend b = backend;
        if (b == null) {
            synchronized (Cuda.class) {
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

    /**
     * {@code cudaGetDeviceCount}.
     *
     * @return the number of CUDA devices visible to this process
     */
    public static int deviceCount() {
        int[] n = new int[1];
        check(backend().getDeviceCount(n), "cudaGetDeviceCount", -1);
        return n[0];
    }

    /**
     * {@code cudaSetDevice}: makes {@code device} current for this thread.
     *
     * @param device a device ordinal, {@code 0 <= device < deviceCount()}
     */
    public static void setDevice(int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device must be >= 0, got " + device);
        }
        check(backend().setDevice(device), "cudaSetDevice", device);
    }

    /**
     * {@code cudaGetDevice}.
     *
     * @return this thread's current device
     */
    public static int currentDevice() {
        int[] d = new int[1];
        check(backend().getDevice(d), "cudaGetDevice", -1);
        return d[0];
    }

    /**
     * {@code cudaDeviceSynchronize} is not exposed; this synchronizes one stream ({@code cudaStreamSynchronize}).
     *
     * @param stream the stream to wait for
     */
    public static void synchronize(Stream stream) {
        stream.synchronize();
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
