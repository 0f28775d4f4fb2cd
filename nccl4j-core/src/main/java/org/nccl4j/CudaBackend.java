package org.nccl4j;

/**
 * The CUDA runtime calls nccl4j makes, behind one seam: the real implementation calls the CUDA 12 or 13
 * runtime that nccl4j-native opened ({@link NativeCudaBackend}); CPU tests install a fake. Every method returns a
 * {@code cudaError_t} (0 = success) and writes results into the given arrays.
 */
interface CudaBackend {
    int getDeviceCount(int[] count);

    int setDevice(int device);

    int getDevice(int[] device);

    int malloc(long[] address, long bytes);

    int free(long address);

    /** kind: 1 host to device, 2 device to host, 3 device to device (cudaMemcpyKind). */
    int memcpy(long dst, long src, long bytes, int kind);

    int memset(long address, int value, long bytes);

    int streamCreate(long[] stream, int flags);

    int streamDestroy(long stream);

    int streamSynchronize(long stream);

    /** {@code cudaStreamQuery}: 0 when all work on the stream has completed, 600 (cudaErrorNotReady) while not. */
    int streamQuery(long stream);

    /** status[0] receives cudaStreamCaptureStatus (0 none, 1 active, 2 invalidated). */
    int streamIsCapturing(long stream, int[] status);

    int eventCreate(long[] event, int flags);

    int eventDestroy(long event);

    int eventRecord(long event, long stream);

    int eventSynchronize(long event);

    /** {@code cudaEventQuery}: 0 when the recorded work has completed, 600 (cudaErrorNotReady) while it has not. */
    int eventQuery(long event);

    int eventElapsedTime(float[] ms, long start, long end);

    int streamWaitEvent(long stream, long event);

    /** {@code cudaStreamBeginCapture}; mode is a cudaStreamCaptureMode (1 = cudaStreamCaptureModeThreadLocal). */
    int streamBeginCapture(long stream, int mode);

    /**
     * {@code cudaStreamEndCapture}: graph[0] receives the captured cudaGraph_t (0 when the capture was invalidated).
     */
    int streamEndCapture(long stream, long[] graph);

    /** {@code cudaGraphInstantiate(exec, graph, 0)}: exec[0] receives the cudaGraphExec_t. */
    int graphInstantiate(long[] exec, long graph);

    /** {@code cudaGraphLaunch}. */
    int graphLaunch(long exec, long stream);

    /** {@code cudaGraphExecDestroy}. */
    int graphExecDestroy(long exec);

    /** {@code cudaGraphDestroy}. */
    int graphDestroy(long graph);

    /** device[0] receives the device owning the address, or -1 for host memory. */
    int pointerDevice(long address, int[] device);

    String errorName(int code);

    String errorString(int code);
}
