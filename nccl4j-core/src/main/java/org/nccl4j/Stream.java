package org.nccl4j;

/**
 * A CUDA stream on one device: created here ({@code cudaStreamCreateWithFlags}, non-blocking), wrapped around
 * an external {@code cudaStream_t}, or the device's legacy default stream. Close destroys a stream created
 * here; wrapped and default streams are never destroyed by nccl4j.
 */
public final class Stream implements AutoCloseable {
    /** {@code cudaStreamNonBlocking}. */
    private static final int NON_BLOCKING = 1;

    private final long handle;
    private final int device;
    private final boolean owned;
    private final Leaks.Token leak;
    private volatile boolean closed;

    private Stream(long handle, int device, boolean owned) {
        this.handle = handle;
        this.device = device;
        this.owned = owned;
        this.leak = owned ? Leaks.track(this, "Stream on device " + device) : null;
    }

    /**
     * Creates a non-blocking stream on {@code device}.
     *
     * @param device the CUDA device ordinal
     * @return the new stream
     */
    public static Stream create(int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device must be >= 0, got " + device);
        }
        long h = Cuda.onDevice(device, () -> {
            long[] s = new long[1];
            Cuda.check(Cuda.backend().streamCreate(s, NON_BLOCKING), "cudaStreamCreateWithFlags", device);
            return s[0];
        });
        return new Stream(h, device, true);
    }

    /**
     * Wraps an existing {@code cudaStream_t} (e.g. PyTorch's current stream); nccl4j never destroys it.
     *
     * @param handle the {@code cudaStream_t} value (0 is the legacy default stream)
     * @param device the device the stream belongs to
     * @return a stream over that handle
     */
    public static Stream wrap(long handle, int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device must be >= 0, got " + device);
        }
        return new Stream(handle, device, false);
    }

    /**
     * The legacy default stream (handle 0) of {@code device}.
     *
     * @param device the CUDA device ordinal
     * @return the default stream
     */
    public static Stream defaultStream(int device) {
        return wrap(0L, device);
    }

    /** @return the {@code cudaStream_t} value */
    public long handle() {
        return handle;
    }

    /** @return the device of this stream */
    public int device() {
        return device;
    }

    /** @return whether {@link #close()} was called */
    public boolean isClosed() {
        return closed;
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("this Stream (device " + device + ") is closed");
        }
    }

    /** Waits until all work queued on this stream has finished ({@code cudaStreamSynchronize}). */
    public void synchronize() {
        ensureOpen();
        Cuda.check(Cuda.backend().streamSynchronize(handle), "cudaStreamSynchronize", device);
    }

    /**
     * @return whether this stream is being captured into a CUDA graph ({@code cudaStreamIsCapturing})
     */
    public boolean isCapturing() {
        ensureOpen();
        int[] s = new int[1];
        Cuda.check(Cuda.backend().streamIsCapturing(handle, s), "cudaStreamIsCapturing", device);
        return s[0] != 0;
    }

    /** Makes future work on this stream wait for {@code event} ({@code cudaStreamWaitEvent}). */
    public void waitFor(Event event) {
        ensureOpen();
        Cuda.check(Cuda.backend().streamWaitEvent(handle, event.handle()), "cudaStreamWaitEvent", device);
    }

    /** Destroys the stream if it was created here ({@code cudaStreamDestroy}). Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (owned) {
            leak.closed();
            Cuda.check(Cuda.backend().streamDestroy(handle), "cudaStreamDestroy", device);
        }
    }

    @Override
    public String toString() {
        return "Stream[0x" + Long.toHexString(handle) + ", device " + device + (owned ? "" : ", wrapped") + "]";
    }
}
