package org.nccl4j;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Which streams are capturing a CUDA graph right now, so that calls CUDA forbids during a capture are refused
 * with a clear exception instead of failing inside CUDA (and invalidating the capture).
 *
 * <p>Captures use {@code cudaStreamCaptureModeThreadLocal}: CUDA then forbids the "potentially unsafe" calls
 * ({@code cudaMalloc}, {@code cudaFree}, synchronous copies and memsets, synchronizing) on the thread that
 * began a capture, and synchronizing a capturing stream from anywhere; other threads may allocate. The checks
 * follow that rule. The common case, no capture anywhere, costs one volatile read ({@link #ACTIVE}); the
 * registry of capturing streams is consulted only while some capture is open.
 */
final class Capture {
    /** {@code cudaStreamCaptureModeThreadLocal}. */
    static final int MODE_THREAD_LOCAL = 1;

    /** The number of streams capturing in this process: the cheap test on every guarded call. */
    private static final AtomicInteger ACTIVE = new AtomicInteger();
    private static final Set<Stream> STREAMS = ConcurrentHashMap.newKeySet();

    private Capture() {
    }

    /** @return how many streams are capturing in this process */
    static int active() {
        return ACTIVE.get();
    }

    static void started(Stream stream) {
        STREAMS.add(stream);
        ACTIVE.incrementAndGet();
    }

    static void ended(Stream stream) {
        if (STREAMS.remove(stream)) {
            ACTIVE.decrementAndGet();
        }
    }

    /**
     * Refuses {@code operation} when the calling thread has a capture open (cudaMalloc, cudaFree, synchronous
     * copies and memsets, NCCL registration).
     */
    static void refuseOnCapturingThread(String operation) {
        if (ACTIVE.get() != 0) {
            check(operation, null);
        }
    }

    /**
     * Refuses synchronizing {@code stream} when it is capturing, or when the calling thread has a capture open.
     */
    static void refuseSynchronize(String operation, Stream stream) {
        if (ACTIVE.get() != 0) {
            check(operation, stream);
        }
    }

    private static void check(String operation, Stream target) {
        Thread me = Thread.currentThread();
        for (Stream s : STREAMS) {
            if (s == target) {
                throw new IllegalStateException(operation + " is not allowed: " + s + " is capturing a CUDA graph "
                        + "(synchronizing a capturing stream would invalidate the capture); call endCapture() first");
            }
            if (s.captureThread() == me) {
                throw new IllegalStateException(operation + " is not allowed while " + s + " is capturing a CUDA "
                        + "graph begun on this thread (CUDA forbids it during capture and would invalidate the "
                        + "capture): do it before beginCapture() or after endCapture()");
            }
        }
    }
}
