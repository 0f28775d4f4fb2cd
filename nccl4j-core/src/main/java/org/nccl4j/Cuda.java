package org.nccl4j;

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
    private Cuda() {
    }

    /**
     * {@code cudaGetDeviceCount}.
     *
     * @return the number of CUDA devices visible to this process
     */
    public static int deviceCount() {
        int[] n = new int[1];
        CudaCalls.check(CudaCalls.backend().getDeviceCount(n), "cudaGetDeviceCount", -1);
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
        CudaCalls.check(CudaCalls.backend().setDevice(device), "cudaSetDevice", device);
    }

    /**
     * {@code cudaGetDevice}.
     *
     * @return this thread's current device
     */
    public static int currentDevice() {
        int[] d = new int[1];
        CudaCalls.check(CudaCalls.backend().getDevice(d), "cudaGetDevice", -1);
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
}
