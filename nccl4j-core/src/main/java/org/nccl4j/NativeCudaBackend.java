package org.nccl4j;

import org.nccl4j.jni.CudaNative;

/**
 * {@link CudaBackend} over nccl4j-native's CUDA runtime shim ({@link CudaNative}): one JNI call each, with primitives
 * only, to the CUDA 12 or 13 runtime that {@link org.nccl4j.jni.CudaRuntime} opened.
 */
final class NativeCudaBackend implements CudaBackend {
    /** cudaMemoryTypeDevice and cudaMemoryTypeManaged: memory a device owns. */
    private static final int DEVICE_MEMORY = 2;
    private static final int MANAGED_MEMORY = 3;

    @Override
    public int getDeviceCount(int[] count) {
        return CudaNative.cudaGetDeviceCount(count);
    }

    @Override
    public int setDevice(int device) {
        return CudaNative.cudaSetDevice(device);
    }

    @Override
    public int getDevice(int[] device) {
        return CudaNative.cudaGetDevice(device);
    }

    @Override
    public int malloc(long[] address, long bytes) {
        return CudaNative.cudaMalloc(address, bytes);
    }

    @Override
    public int free(long address) {
        return CudaNative.cudaFree(address);
    }

    @Override
    public int memcpy(long dst, long src, long bytes, int kind) {
        return CudaNative.cudaMemcpy(dst, src, bytes, kind);
    }

    @Override
    public int memset(long address, int value, long bytes) {
        return CudaNative.cudaMemset(address, value, bytes);
    }

    @Override
    public int streamCreate(long[] stream, int flags) {
        return CudaNative.cudaStreamCreateWithFlags(stream, flags);
    }

    @Override
    public int streamDestroy(long stream) {
        return CudaNative.cudaStreamDestroy(stream);
    }

    @Override
    public int streamSynchronize(long stream) {
        return CudaNative.cudaStreamSynchronize(stream);
    }

    @Override
    public int streamQuery(long stream) {
        return CudaNative.cudaStreamQuery(stream);
    }

    @Override
    public int streamIsCapturing(long stream, int[] status) {
        return CudaNative.cudaStreamIsCapturing(stream, status);
    }

    @Override
    public int eventCreate(long[] event, int flags) {
        return CudaNative.cudaEventCreateWithFlags(event, flags);
    }

    @Override
    public int eventDestroy(long event) {
        return CudaNative.cudaEventDestroy(event);
    }

    @Override
    public int eventRecord(long event, long stream) {
        return CudaNative.cudaEventRecord(event, stream);
    }

    @Override
    public int eventSynchronize(long event) {
        return CudaNative.cudaEventSynchronize(event);
    }

    @Override
    public int eventQuery(long event) {
        return CudaNative.cudaEventQuery(event);
    }

    @Override
    public int eventElapsedTime(float[] ms, long start, long end) {
        return CudaNative.cudaEventElapsedTime(ms, start, end);
    }

    @Override
    public int streamWaitEvent(long stream, long event) {
        return CudaNative.cudaStreamWaitEvent(stream, event, 0);
    }

    @Override
    public int streamBeginCapture(long stream, int mode) {
        return CudaNative.cudaStreamBeginCapture(stream, mode);
    }

    @Override
    public int streamEndCapture(long stream, long[] graph) {
        return CudaNative.cudaStreamEndCapture(stream, graph);
    }

    @Override
    public int graphInstantiate(long[] exec, long graph) {
        return CudaNative.cudaGraphInstantiate(exec, graph, 0L);
    }

    @Override
    public int graphLaunch(long exec, long stream) {
        return CudaNative.cudaGraphLaunch(exec, stream);
    }

    @Override
    public int graphExecDestroy(long exec) {
        return CudaNative.cudaGraphExecDestroy(exec);
    }

    @Override
    public int graphDestroy(long graph) {
        return CudaNative.cudaGraphDestroy(graph);
    }

    @Override
    public int pointerDevice(long address, int[] device) {
        int[] typeAndDevice = new int[2];
        int rc = CudaNative.cudaPointerGetAttributes(address, typeAndDevice);
        device[0] = rc == 0 && (typeAndDevice[0] == DEVICE_MEMORY || typeAndDevice[0] == MANAGED_MEMORY)
                ? typeAndDevice[1] : -1;
        return rc;
    }

    @Override
    public String errorName(int code) {
        return CudaNative.cudaGetErrorName(code);
    }

    @Override
    public String errorString(int code) {
        return CudaNative.cudaGetErrorString(code);
    }
}
