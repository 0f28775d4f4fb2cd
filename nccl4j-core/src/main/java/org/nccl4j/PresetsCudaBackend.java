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

    private static final class Stream extends CUstream_st {
        Stream(long address) {
            this.address = address;
        }
    }

    private static final class Event extends CUevent_st {
        Event(long address) {
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
        return cudart.cudaStreamDestroy(new Stream(stream));
    }

    @Override
    public int streamSynchronize(long stream) {
        return cudart.cudaStreamSynchronize(new Stream(stream));
    }

    @Override
    public int streamIsCapturing(long stream, int[] status) {
        return cudart.cudaStreamIsCapturing(new Stream(stream), status);
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
        return cudart.cudaEventDestroy(new Event(event));
    }

    @Override
    public int eventRecord(long event, long stream) {
        return cudart.cudaEventRecord(new Event(event), new Stream(stream));
    }

    @Override
    public int eventSynchronize(long event) {
        return cudart.cudaEventSynchronize(new Event(event));
    }

    @Override
    public int streamQuery(long stream) {
        return cudart.cudaStreamQuery(new Stream(stream));
    }

    @Override
    public int eventQuery(long event) {
        return cudart.cudaEventQuery(new Event(event));
    }

    @Override
    public int eventElapsedTime(float[] ms, long start, long end) {
        return cudart.cudaEventElapsedTime(ms, new Event(start), new Event(end));
    }

    @Override
    public int streamWaitEvent(long stream, long event) {
        return cudart.cudaStreamWaitEvent(new Stream(stream), new Event(event), 0);
    }

    private static final class Graph extends CUgraph_st {
        Graph(long address) {
            this.address = address;
        }
    }

    private static final class GraphExec extends CUgraphExec_st {
        GraphExec(long address) {
            this.address = address;
        }
    }

    @Override
    public int streamBeginCapture(long stream, int mode) {
        return cudart.cudaStreamBeginCapture(new Stream(stream), mode);
    }

    @Override
    public int streamEndCapture(long stream, long[] graph) {
        CUgraph_st g = new CUgraph_st();
        int rc = cudart.cudaStreamEndCapture(new Stream(stream), g);
        graph[0] = rc == 0 ? g.address() : 0;
        return rc;
    }

    @Override
    public int graphInstantiate(long[] exec, long graph) {
        CUgraphExec_st e = new CUgraphExec_st();
        int rc = cudart.cudaGraphInstantiate(e, new Graph(graph), 0L);
        exec[0] = rc == 0 ? e.address() : 0;
        return rc;
    }

    @Override
    public int graphLaunch(long exec, long stream) {
        return cudart.cudaGraphLaunch(new GraphExec(exec), new Stream(stream));
    }

    @Override
    public int graphExecDestroy(long exec) {
        return cudart.cudaGraphExecDestroy(new GraphExec(exec));
    }

    @Override
    public int graphDestroy(long graph) {
        return cudart.cudaGraphDestroy(new Graph(graph));
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
