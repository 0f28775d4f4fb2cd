package org.nccl4j;

/**
 * A CUDA stream on one device: created here ({@code cudaStreamCreateWithFlags}, non-blocking), wrapped around
 * an external {@code cudaStream_t}, or the device's legacy default stream. Close destroys a stream created
 * here; wrapped and default streams are never destroyed by nccl4j.
 */
public final class Stream implements AutoCloseable {
    /**
     * A communicator (with a flight recorder) that enqueued on a stream, as the stream, its events and its graphs
     * know it: what a wait needs of it. Its one implementation is the communicator's watched state.
     */
    interface User {
        /** @return the last operation it published to the watchdog, when a wait begins */
        long published();

        /** A wait on {@code stream} returned: what it had {@code published} when the wait began is complete. */
        void completedBySynchronize(Stream stream, long published);

        /** @return whether its liveness channel told of a rank that left or was lost (a wait then checks what it
         *          covered) */
        boolean heardDeparture();

        /**
         * A wait on a stream it shares returned, and the news of a departure or loss came while it waited (what it
         * had published when the wait began was not taken): {@code published}, what it has published now, is checked
         * as {@link #completedBySynchronize} checks, and nothing is marked complete.
         */
        void refuseAfterNews(long published);

        /** Throws its failure, if the watchdog found one. */
        void throwIfFailed();

        /** @return whether its failures keep it for recovery (waits on its streams then poll) */
        boolean keptForRecovery();

        /** A graph holding {@code operations} of its operations was launched on {@code stream}. */
        void graphLaunched(Stream stream, long operations);

        /**
         * A graph holding its operations is about to be launched: entered as a collective's enqueue is, so that a
         * close or abort on another thread waits for the launch to leave ({@link #leaveCall}), or the launch sees
         * the close and throws its {@code IllegalStateException} (with nothing entered) instead of running the
         * operations of a communicator that is gone.
         */
        void enterIfOpen();

        /** The call or launch {@link #enterIfOpen} entered is over. */
        void leaveCall();
    }

    /** {@code cudaStreamNonBlocking}. */
    private static final int NON_BLOCKING = 1;

    private final long handle;
    private final int device;
    private final boolean owned;
    private final Leaks.Token leak;
    private volatile boolean closed;
    /** The thread that began the capture in progress on this stream, or null when none is. */
    private volatile Thread captureThread;
    /** The communicators whose operations the capture in progress holds (the capturing thread's only). */
    private java.util.Map<User, long[]> capturedCommunicators;
    /** The communicators (with a flight recorder) that have enqueued on this stream; replaced, never changed. */
    private volatile User[] users = NO_USERS;
    /** A communicator kept for recovery uses this stream: waits poll, so that its failure can release them. */
    private volatile boolean pollWaits;
    private static final User[] NO_USERS = {};
    /** The failure of a communicator that enqueued on this stream, found by the watchdog; null while none. */
    private volatile CommunicatorFailedException failure;

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
        long h = CudaCalls.onDevice(device, () -> {
            long[] s = new long[1];
            CudaCalls.check(CudaCalls.backend().streamCreate(s, NON_BLOCKING), "cudaStreamCreateWithFlags", device);
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

    /**
     * Waits until all work queued on this stream has finished ({@code cudaStreamSynchronize}).
     *
     * @throws IllegalStateException while this stream is capturing, or a capture is open on the calling thread
     * @throws CommunicatorFailedException when the watchdog found broken a communicator that enqueued on this
     *         stream: a {@link CollectiveTimeoutException}, a {@link RemoteErrorException} or another; the wait is
     *         released when the watchdog aborts the communicator. Thrown again by later calls until a healthy
     *         communicator enqueues on this stream.
     */
    public void synchronize() {
        ensureOpen();
        Capture.refuseSynchronize("Stream.synchronize()", this);
        throwIfFailed();
        User[] us = users;
        long published = us.length == 1 ? us[0].published() : 0;
        long[] each = us.length > 1 ? publishedAfterADeparture(us) : null;
        int rc = pollWaits ? pollUntilDone(() -> CudaCalls.backend().streamQuery(handle))
                : CudaCalls.backend().streamSynchronize(handle);
        throwIfFailed();
        CudaCalls.check(rc, pollWaits ? "cudaStreamQuery" : "cudaStreamSynchronize", device);
        if (us.length == 1) {
            us[0].completedBySynchronize(this, published);
        } else if (each != null) {
            for (int i = 0; i < us.length; i++) {
                us[i].completedBySynchronize(this, each[i]);
            }
        } else {
            refuseAfterNews(us);
        }
    }

    /**
     * A wait on a stream that several communicators share returned, and what each had published as it began was not
     * taken (no departure had been heard): when one of them has heard one since, each checks what it has published
     * now (a wait may cover less; what it did not cover cannot complete either), so that a result the news makes
     * doubtful is not returned as a reduction. Allocates nothing.
     */
    static void refuseAfterNews(User[] us) {
        for (User u : us) {
            if (u.heardDeparture()) {
                for (User v : us) {
                    v.refuseAfterNews(v.published());
                }
                return;
            }
        }
    }

    /**
     * What each of the communicators sharing this stream had published as a wait begins, when one of them heard of a
     * departed rank (so that the wait refuses a collective that ended without that rank's part); else null, the
     * common case, which allocates nothing.
     */
    static long[] publishedAfterADeparture(User[] us) {
        for (User u : us) {
            if (u.heardDeparture()) {
                long[] each = new long[us.length];
                for (int i = 0; i < us.length; i++) {
                    each[i] = us[i].published();
                }
                return each;
            }
        }
        return null;
    }

    /**
     * Waits by polling {@code query} ({@code cudaStreamQuery} or {@code cudaEventQuery} of work on this stream) until
     * it reports done (0) or an error, or a failure of this stream's communicators is found (0: the caller throws it).
     */
    int pollUntilDone(java.util.function.IntSupplier query) {
        while (true) {
            int q = query.getAsInt();
            if (q != NOT_READY || failure != null) {
                return q == NOT_READY ? 0 : q;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(POLL_NANOS);
        }
    }

    /** {@code cudaErrorNotReady}. */
    static final int NOT_READY = 600;
    /** How long a polling wait sleeps between queries. */
    private static final long POLL_NANOS = 20_000;

    /** Whether waits on this stream poll (a communicator kept for recovery uses it). */
    boolean pollsWaits() {
        return pollWaits;
    }

    /** A communicator with a flight recorder enqueued on this stream for the first time. */
    synchronized void addUser(User comm) {
        if (comm.keptForRecovery()) {
            pollWaits = true;
        }
        User[] more = java.util.Arrays.copyOf(users, users.length + 1);
        more[users.length] = comm;
        users = more;
    }

    /** The communicators that have used this stream (an array this stream never changes: a new one each time). */
    User[] users() {
        return users;
    }

    /** The one communicator that has used this stream, or null when none or several have. */
    User soleUser() {
        User[] us = users;
        return us.length == 1 ? us[0] : null;
    }

    /**
     * The failure of a communicator that enqueued work on this stream, as the watchdog found it, if any.
     *
     * @return the failure, or null
     */
    public CommunicatorFailedException failure() {
        CommunicatorFailedException f = failure;
        if (f != null) {
            f.told();   // the program has seen it (the left-behind exit asks)
        }
        return f;
    }

    /** Throws the watchdog's failure of a communicator that used this stream, if there is one. */
    void throwIfFailed() {
        CommunicatorFailedException f = failure;
        if (f != null) {
            throw f.toProgram();
        }
    }

    /** The watchdog found a communicator that used this stream broken. */
    void failed(CommunicatorFailedException f) {
        failure = f;
    }

    /** A healthy communicator starts using this stream: a failure of an earlier one no longer applies to it. */
    void clearFailure() {
        if (failure != null) {
            failure = null;
        }
    }

    /** Remembers that the capture in progress holds operations of {@code comm}. */
    void capturedCommunicator(User comm) {
        if (capturedCommunicators == null) {
            capturedCommunicators = new java.util.LinkedHashMap<>();
        }
        capturedCommunicators.computeIfAbsent(comm, c -> new long[1])[0]++;
    }

    /**
     * @return whether this stream is being captured into a CUDA graph ({@code cudaStreamIsCapturing})
     */
    public boolean isCapturing() {
        ensureOpen();
        int[] s = new int[1];
        CudaCalls.check(CudaCalls.backend().streamIsCapturing(handle, s), "cudaStreamIsCapturing", device);
        return s[0] != 0;
    }

    /**
     * Starts capturing the work issued on this stream into a CUDA graph ({@code cudaStreamBeginCapture} in
     * {@code cudaStreamCaptureModeThreadLocal}): from now until {@link #endCapture()}, collectives, event records
     * and other stream work are recorded, not run. While the capture is open, the calling thread may not
     * allocate or free device memory, copy synchronously, register buffers with NCCL or synchronize, and no
     * thread may synchronize this stream: nccl4j refuses those calls with an {@link IllegalStateException}.
     * End the capture on the same thread.
     *
     * @throws IllegalStateException when this stream is already capturing
     */
    public void beginCapture() {
        ensureOpen();
        if (captureThread != null) {
            throw new IllegalStateException(this + " is already capturing a CUDA graph (begun on thread "
                    + captureThread.getName() + "); call endCapture() first");
        }
        CudaCalls.check(CudaCalls.backend().streamBeginCapture(handle, Capture.MODE_THREAD_LOCAL),
                "cudaStreamBeginCapture", device);
        captureThread = Thread.currentThread();
        Capture.started(this, captureThread);
    }

    /**
     * Ends the capture begun by {@link #beginCapture()} ({@code cudaStreamEndCapture}). The graph is instantiated
     * ({@code cudaGraphInstantiate}) on its first launch or by {@link CudaGraph#instantiate()}, which the thread
     * may do only once all of its captures have ended: capture several streams (one per GPU of a group), end
     * them all, then launch. The capture ends even when this throws.
     *
     * @return the captured graph; launch it with {@link CudaGraph#launch(Stream)}, close it when done
     * @throws IllegalStateException when this stream is not capturing, or the capture was begun on another thread
     * @throws CudaException when CUDA reports the capture invalidated or cannot instantiate the graph
     */
    public CudaGraph endCapture() {
        ensureOpen();
        Thread owner = captureThread;
        if (owner == null) {
            throw new IllegalStateException(this + " is not capturing: call beginCapture() first");
        }
        if (owner != Thread.currentThread()) {
            throw new IllegalStateException("the capture on " + this + " was begun on thread " + owner.getName()
                    + " and must be ended there (cudaStreamCaptureModeThreadLocal)");
        }
        long[] graph = new long[1];
        int rc;
        try {
            rc = CudaCalls.backend().streamEndCapture(handle, graph);
        } finally {
            captureThread = null;
            Capture.ended(this);
        }
        CudaCalls.check(rc, "cudaStreamEndCapture", device);
        if (graph[0] == 0) {
            throw new IllegalStateException("the capture on " + this + " was invalidated (CUDA returned no graph): "
                    + "an operation not allowed during capture was issued");
        }
        java.util.Map<User, long[]> comms = capturedCommunicators;
        capturedCommunicators = null;
        return new CudaGraph(graph[0], device, comms);
    }

    /** @return the thread that began the capture in progress, or null */
    Thread captureThread() {
        return captureThread;
    }

    /**
     * Makes future work on this stream wait for {@code event} ({@code cudaStreamWaitEvent}). Returns at once.
     *
     * @param event the event whose most recent {@link Event#record(Stream) record} the stream waits for; may be on
     *         another device
     * @throws NullPointerException when {@code event} is null
     * @throws IllegalStateException when this stream or the event is closed (a destroyed event's handle must not
     *         reach CUDA)
     * @throws CudaException when {@code cudaStreamWaitEvent} fails
     */
    public void waitFor(Event event) {
        ensureOpen();
        if (event == null) {
            throw Errors.nullArgument("event");
        }
        event.ensureOpen();
        CudaCalls.check(CudaCalls.backend().streamWaitEvent(handle, event.handle()), "cudaStreamWaitEvent", device);
    }

    /** Destroys the stream if it was created here ({@code cudaStreamDestroy}). Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (captureThread != null) {
            abandonCapture();
        }
        if (owned) {
            leak.closed();
            int rc;
            synchronized (this) {   // not while the watchdog records a marker on it
                rc = CudaCalls.backend().streamDestroy(handle);
            }
            CudaCalls.check(rc, "cudaStreamDestroy", device);
        }
    }

    /** Ends a capture left open when the stream is closed, discarding the graph. */
    private void abandonCapture() {
        long[] graph = new long[1];
        try {
            if (CudaCalls.backend().streamEndCapture(handle, graph) == 0 && graph[0] != 0) {
                CudaCalls.backend().graphDestroy(graph[0]);
            }
        } finally {
            captureThread = null;
            capturedCommunicators = null;
            Capture.ended(this);
        }
    }

    @Override
    public String toString() {
        return "Stream[0x" + Long.toHexString(handle) + ", device " + device + (owned ? "" : ", wrapped") + "]";
    }
}
