package org.nccl4j;

import java.util.Map;
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
    /** Each capturing stream (by identity: a stream is its own key) and the thread that began its capture. */
    private static final Map<Object, Thread> STREAMS = new ConcurrentHashMap<>();

    private Capture() {
    }

    /** @return how many streams are capturing in this process */
    static int active() {
        return ACTIVE.get();
    }

    /** {@code stream} began capturing on {@code thread}. */
    static void started(Object stream, Thread thread) {
        if (STREAMS.put(stream, thread) == null) {
            ACTIVE.incrementAndGet();
        }
    }

    /** {@code stream}'s capture is over (ended or abandoned); nothing if it was not capturing. */
    static void ended(Object stream) {
        if (STREAMS.remove(stream) != null) {
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
    static void refuseSynchronize(String operation, Object stream) {
        if (ACTIVE.get() != 0) {
            check(operation, stream);
        }
    }

    private static void check(String operation, Object target) {
        Thread me = Thread.currentThread();
        for (Map.Entry<Object, Thread> e : STREAMS.entrySet()) {
            Object s = e.getKey();
            if (s == target) {
                throw new IllegalStateException(operation + " is not allowed: " + s + " is capturing a CUDA graph "
                        + "(synchronizing a capturing stream would invalidate the capture); call endCapture() first");
            }
            if (e.getValue() == me) {
                throw new IllegalStateException(operation + " is not allowed while " + s + " is capturing a CUDA "
                        + "graph begun on this thread (CUDA forbids it during capture and would invalidate the "
                        + "capture): do it before beginCapture() or after endCapture()");
            }
        }
    }
}
