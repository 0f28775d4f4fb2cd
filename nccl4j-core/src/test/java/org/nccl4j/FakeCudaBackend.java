package org.nccl4j;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A CUDA runtime for CPU tests: hands out made-up addresses and handles, records the calls it receives, and
 * keeps the little state capture needs (which streams capture, which graphs exist). Install it with
 * {@link Cuda#useBackend(CudaBackend)}; restore with {@code Cuda.useBackend(null)}.
 */
final class FakeCudaBackend implements CudaBackend {
    /** Every call, as "name arg ...", in order. */
    final List<String> calls = Collections.synchronizedList(new ArrayList<>());
    private final Map<Long, Boolean> capturing = new ConcurrentHashMap<>();
    private final Map<Long, Boolean> liveGraphs = new ConcurrentHashMap<>();
    private long next = 0x10_0000L;
    private int device;
    /** When set, cudaStreamEndCapture returns this status. */
    volatile int endCaptureStatus;
    /** When true, cudaStreamEndCapture succeeds but returns no graph (an invalidated capture). */
    volatile boolean invalidateCapture;
    /** When set, cudaGraphInstantiate returns this status. */
    volatile int instantiateStatus;

    private synchronized long handle() {
        next += 0x1000;
        return next;
    }

    int liveGraphs() {
        return liveGraphs.size();
    }

    @Override
    public int getDeviceCount(int[] count) {
        count[0] = 8;
        return 0;
    }

    @Override
    public int setDevice(int d) {
        device = d;
        return 0;
    }

    @Override
    public int getDevice(int[] d) {
        d[0] = device;
        return 0;
    }

    @Override
    public int malloc(long[] address, long bytes) {
        calls.add("cudaMalloc " + bytes);
        address[0] = handle();
        return 0;
    }

    @Override
    public int free(long address) {
        calls.add("cudaFree 0x" + Long.toHexString(address));
        return 0;
    }

    @Override
    public int memcpy(long dst, long src, long bytes, int kind) {
        calls.add("cudaMemcpy " + bytes + " kind=" + kind);
        return 0;
    }

    @Override
    public int memset(long address, int value, long bytes) {
        calls.add("cudaMemset " + bytes);
        return 0;
    }

    @Override
    public int streamCreate(long[] stream, int flags) {
        stream[0] = handle();
        return 0;
    }

    @Override
    public int streamDestroy(long stream) {
        calls.add("cudaStreamDestroy");
        return 0;
    }

    @Override
    public int streamSynchronize(long stream) {
        calls.add("cudaStreamSynchronize");
        return capturing.containsKey(stream) ? 900 : 0; // cudaErrorStreamCaptureUnsupported
    }

    @Override
    public int streamIsCapturing(long stream, int[] status) {
        status[0] = capturing.containsKey(stream) ? 1 : 0;
        return 0;
    }

    @Override
    public int streamBeginCapture(long stream, int mode) {
        calls.add("cudaStreamBeginCapture mode=" + mode);
        if (capturing.putIfAbsent(stream, Boolean.TRUE) != null) {
            return 900;
        }
        return 0;
    }

    @Override
    public int streamEndCapture(long stream, long[] graph) {
        calls.add("cudaStreamEndCapture");
        capturing.remove(stream);
        if (endCaptureStatus != 0) {
            graph[0] = 0;
            return endCaptureStatus;
        }
        if (invalidateCapture) {
            graph[0] = 0;
            return 0;
        }
        graph[0] = handle();
        liveGraphs.put(graph[0], Boolean.TRUE);
        return 0;
    }

    @Override
    public int graphInstantiate(long[] exec, long graph) {
        calls.add("cudaGraphInstantiate");
        if (instantiateStatus != 0) {
            return instantiateStatus;
        }
        exec[0] = handle();
        return 0;
    }

    @Override
    public int graphLaunch(long exec, long stream) {
        calls.add("cudaGraphLaunch");
        return 0;
    }

    @Override
    public int graphExecDestroy(long exec) {
        calls.add("cudaGraphExecDestroy");
        return 0;
    }

    @Override
    public int graphDestroy(long graph) {
        calls.add("cudaGraphDestroy");
        liveGraphs.remove(graph);
        return 0;
    }

    @Override
    public int eventCreate(long[] event, int flags) {
        event[0] = handle();
        return 0;
    }

    @Override
    public int eventDestroy(long event) {
        return 0;
    }

    @Override
    public int eventRecord(long event, long stream) {
        calls.add("cudaEventRecord");
        return 0;
    }

    @Override
    public int eventSynchronize(long event) {
        return 0;
    }

    @Override
    public int eventElapsedTime(float[] ms, long start, long end) {
        ms[0] = 1.0f;
        return 0;
    }

    @Override
    public int streamWaitEvent(long stream, long event) {
        return 0;
    }

    @Override
    public int pointerDevice(long address, int[] d) {
        d[0] = device;
        return 0;
    }

    @Override
    public String errorName(int code) {
        return "cudaErrorFake" + code;
    }

    @Override
    public String errorString(int code) {
        return "fake error " + code;
    }
}
