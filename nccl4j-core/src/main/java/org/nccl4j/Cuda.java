package org.nccl4j;

/**
 * The few CUDA runtime facts nccl4j needs: device count, current device, synchronization. Device memory,
 * streams and events are {@link DeviceBuffer}, {@link Stream} and {@link Event}.
 *
 * <p>Calls go to the CUDA runtime through the JavaCPP Presets for CUDA; a machine without a CUDA driver and
 * runtime makes them throw {@link CudaException} or {@link UnsatisfiedLinkError}-caused
 * {@link IllegalStateException}s that say so.
 */
public final class Cuda {
    private static volatile CudaBackend backend;

    private Cuda() {
    }

    static CudaBackend backend() {
        CudaBackend b = backend;
        if (b == null) {
            synchronized (Cuda.class) {
                b = backend;
                if (b == null) {
                    try {
                        b = new PresetsCudaBackend();
                        int[] n = new int[1];
                        b.getDeviceCount(n); // forces the presets' native library to load
                    } catch (UnsatisfiedLinkError | NoClassDefFoundError | ExceptionInInitializerError e) {
                        throw new IllegalStateException("The CUDA runtime could not be loaded (JavaCPP Presets for "
                                + "CUDA need libcudart.so.13: install the CUDA 13 runtime and an NVIDIA driver, or "
                                + "add its lib directory to LD_LIBRARY_PATH): " + e, e);
                    }
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
