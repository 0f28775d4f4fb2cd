package org.nccl4j;

import org.bytedeco.cuda.cudart.CUevent_st;
import org.bytedeco.cuda.cudart.CUgraphExec_st;
import org.bytedeco.cuda.cudart.CUgraph_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.cudart.cudaPointerAttributes;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/** {@link CudaBackend} over the JavaCPP Presets for CUDA (cudart). */
final class PresetsCudaBackend implements CudaBackend {

    /** A JavaCPP pointer at a raw address (device or host), owning nothing. */
    static final class Address extends Pointer {
        Address(long address) {
            this.address = address;
        }
    }

    /** A {@code cudaStream_t} at a raw address, for cudart's signatures (core's {@link Stream} owns streams). */
    private static final class CudaStreamHandle extends CUstream_st {
        CudaStreamHandle(long address) {
            this.address = address;
        }
    }

    /** A {@code cudaEvent_t} at a raw address, for cudart's signatures (core's {@link Event} owns events). */
    private static final class CudaEventHandle extends CUevent_st {
        CudaEventHandle(long address) {
            this.address = address;
        }
    }

    @Override
    public int getDeviceCount(int[] count) {
        return cudart.cudaGetDeviceCount(count);
    }

    @Override
    public int setDevice(int device) {
        return cudart.cudaSetDevice(device);
    }

    @Override
    public int getDevice(int[] device) {
        return cudart.cudaGetDevice(device);
    }

    @Override
    public int malloc(long[] address, long bytes) {
        try (PointerPointer<Pointer> p = new PointerPointer<>(1)) {
            int rc = cudart.cudaMalloc(p, bytes);
            address[0] = rc == 0 ? p.get(0).address() : 0;
            return rc;
        }
    }

    @Override
    public int free(long address) {
        return cudart.cudaFree(new Address(address));
    }

    @Override
    public int memcpy(long dst, long src, long bytes, int kind) {
        return cudart.cudaMemcpy(new Address(dst), new Address(src), bytes, kind);
    }

    @Override
    public int memset(long address, int value, long bytes) {
        return cudart.cudaMemset(new Address(address), value, bytes);
    }

    @Override
    public int streamCreate(long[] stream, int flags) {
        CUstream_st s = new CUstream_st();
        int rc = cudart.cudaStreamCreateWithFlags(s, flags);
        stream[0] = rc == 0 ? s.address() : 0;
        return rc;
    }

    @Override
    public int streamDestroy(long stream) {
        return cudart.cudaStreamDestroy(new CudaStreamHandle(stream));
    }

    @Override
    public int streamSynchronize(long stream) {
        return cudart.cudaStreamSynchronize(new CudaStreamHandle(stream));
    }

    @Override
    public int streamIsCapturing(long stream, int[] status) {
        return cudart.cudaStreamIsCapturing(new CudaStreamHandle(stream), status);
    }

    @Override
    public int eventCreate(long[] event, int flags) {
        CUevent_st e = new CUevent_st();
        int rc = cudart.cudaEventCreateWithFlags(e, flags);
        event[0] = rc == 0 ? e.address() : 0;
        return rc;
    }

    @Override
    public int eventDestroy(long event) {
        return cudart.cudaEventDestroy(new CudaEventHandle(event));
    }

    @Override
    public int eventRecord(long event, long stream) {
        return cudart.cudaEventRecord(new CudaEventHandle(event), new CudaStreamHandle(stream));
    }

    @Override
    public int eventSynchronize(long event) {
        return cudart.cudaEventSynchronize(new CudaEventHandle(event));
    }

    @Override
    public int streamQuery(long stream) {
        return cudart.cudaStreamQuery(new CudaStreamHandle(stream));
    }

    @Override
    public int eventQuery(long event) {
        return cudart.cudaEventQuery(new CudaEventHandle(event));
    }

    @Override
    public int eventElapsedTime(float[] ms, long start, long end) {
        return cudart.cudaEventElapsedTime(ms, new CudaEventHandle(start), new CudaEventHandle(end));
    }

    @Override
    public int streamWaitEvent(long stream, long event) {
        return cudart.cudaStreamWaitEvent(new CudaStreamHandle(stream), new CudaEventHandle(event), 0);
    }

    private static final class CudaGraphHandle extends CUgraph_st {
        CudaGraphHandle(long address) {
            this.address = address;
        }
    }

    private static final class CudaGraphExecHandle extends CUgraphExec_st {
        CudaGraphExecHandle(long address) {
            this.address = address;
        }
    }

    @Override
    public int streamBeginCapture(long stream, int mode) {
        return cudart.cudaStreamBeginCapture(new CudaStreamHandle(stream), mode);
    }

    @Override
    public int streamEndCapture(long stream, long[] graph) {
        CUgraph_st g = new CUgraph_st();
        int rc = cudart.cudaStreamEndCapture(new CudaStreamHandle(stream), g);
        graph[0] = rc == 0 ? g.address() : 0;
        return rc;
    }

    @Override
    public int graphInstantiate(long[] exec, long graph) {
        CUgraphExec_st e = new CUgraphExec_st();
        int rc = cudart.cudaGraphInstantiate(e, new CudaGraphHandle(graph), 0L);
        exec[0] = rc == 0 ? e.address() : 0;
        return rc;
    }

    @Override
    public int graphLaunch(long exec, long stream) {
        return cudart.cudaGraphLaunch(new CudaGraphExecHandle(exec), new CudaStreamHandle(stream));
    }

    @Override
    public int graphExecDestroy(long exec) {
        return cudart.cudaGraphExecDestroy(new CudaGraphExecHandle(exec));
    }

    @Override
    public int graphDestroy(long graph) {
        return cudart.cudaGraphDestroy(new CudaGraphHandle(graph));
    }

    @Override
    public int pointerDevice(long address, int[] device) {
        try (cudaPointerAttributes attr = new cudaPointerAttributes()) {
            int rc = cudart.cudaPointerGetAttributes(attr, new Address(address));
            // cudaMemoryTypeDevice = 2, cudaMemoryTypeManaged = 3
            device[0] = rc == 0 && (attr.type() == 2 || attr.type() == 3) ? attr.device() : -1;
            return rc;
        }
    }

    @Override
    public String errorName(int code) {
        BytePointer p = cudart.cudaGetErrorName(code);
        return p == null ? null : p.getString();
    }

    @Override
    public String errorString(int code) {
        BytePointer p = cudart.cudaGetErrorString(code);
        return p == null ? null : p.getString();
    }
}
