package org.nccl4j;

/** A CUDA event ({@code cudaEvent_t}) with timing, for measuring and ordering work on streams. */
public final class Event implements AutoCloseable {
    private final long handle;
    private final int device;
    private final Leaks.Token leak;
    private volatile boolean closed;
    /** The stream of the last record, whose communicators' failures a wait throws. */
    private volatile Stream recordedOn;
    /** The sole user's last published operation when the event was recorded: complete once the event is. */
    private volatile long recordedAfter;
    /** The communicators sharing the stream at the last record (the stream's array, never changed), or null. */
    private volatile Stream.User[] recordedUsers;
    /**
     * What each of {@link #recordedUsers} had published at the last record, taken when a departure or loss had been
     * heard by one of them (else null: the common case allocates nothing, and a wait checks after news that came later
     * with {@link Stream#refuseAfterNews}): a wait refuses a collective a departed rank never issued.
     */
    private volatile long[] recordedPublished;

    private Event(long handle, int device) {
        this.handle = handle;
        this.device = device;
        this.leak = Leaks.track(this, "Event on device " + device);
    }

    /**
     * Creates an event on {@code device} ({@code cudaEventCreateWithFlags}, timing enabled).
     *
     * @param device the CUDA device ordinal
     * @return the event
     */
    public static Event create(int device) {
        if (device < 0) {
            throw new IllegalArgumentException("device must be >= 0, got " + device);
        }
        long h = CudaCalls.onDevice(device, () -> {
            long[] e = new long[1];
            CudaCalls.check(CudaCalls.backend().eventCreate(e, 0), "cudaEventCreateWithFlags", device);
            return e[0];
        });
        return new Event(h, device);
    }

    /** @return the {@code cudaEvent_t} value */
    public long handle() {
        return handle;
    }

    /** @return the device of this event */
    public int device() {
        return device;
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("this Event (device " + device + ") is closed");
        }
    }

    /**
     * Records the event on {@code stream} ({@code cudaEventRecord}): it completes when the work enqueued on the
     * stream so far has finished. A later record replaces this one.
     *
     * @param stream an open stream of the event's device
     * @return this event
     * @throws NullPointerException when {@code stream} is null
     * @throws IllegalArgumentException when {@code stream} is on another device
     * @throws IllegalStateException when this event or the stream is closed
     * @throws CudaException when {@code cudaEventRecord} fails
     */
    public Event record(Stream stream) {
        ensureOpen();
        if (stream == null) {
            throw Errors.nullArgument("stream");
        }
        stream.ensureOpen();
        if (stream.device() != device) {
            throw Errors.argument("stream is on device " + stream.device() + " but this event is on device " + device
                    + ": record an event on a stream of its own device (Event.create(" + stream.device() + "))");
        }
        Stream.User[] us = stream.users();
        long published = us.length == 1 ? us[0].published() : 0;
        long[] each = us.length > 1 ? Stream.publishedAfterADeparture(us) : null;
        CudaCalls.check(CudaCalls.backend().eventRecord(handle, stream.handle()), "cudaEventRecord", device);
        recordedOn = stream;
        recordedAfter = published;
        recordedPublished = each;
        recordedUsers = us.length > 1 ? us : null;
        return this;
    }

    /**
     * Waits for the recorded work to finish ({@code cudaEventSynchronize}).
     *
     * @throws CommunicatorFailedException when the watchdog found broken a communicator that enqueued on the
     *         stream the event was last recorded on (the wait is released when the watchdog aborts it)
     */
    public void synchronize() {
        ensureOpen();
        Stream on = recordedOn;
        if (on != null) {
            on.throwIfFailed();
        }
        int rc = on != null && on.pollsWaits() ? on.pollUntilDone(() -> CudaCalls.backend().eventQuery(handle))
                : CudaCalls.backend().eventSynchronize(handle);
        if (on != null) {
            on.throwIfFailed();
        }
        CudaCalls.check(rc, "cudaEventSynchronize", device);
        Stream.User user = on == null ? null : on.soleUser();
        Stream.User[] users = recordedUsers;
        long[] each = recordedPublished;
        if (user != null) {
            user.completedBySynchronize(on, recordedAfter);
        } else if (users != null && each != null && each.length == users.length) {
            for (int i = 0; i < users.length; i++) {
                users[i].completedBySynchronize(on, each[i]);
            }
        } else if (users != null) {
            Stream.refuseAfterNews(users);   // news that came after the record: what each has published now
        }
    }

    /**
     * Whether the work recorded has completed ({@code cudaEventQuery}); returns at once.
     *
     * @return true when it has (or nothing was recorded), false while it runs
     * @throws IllegalStateException when this event is closed
     * @throws CudaException when CUDA reports an error
     */
    public boolean isDone() {
        ensureOpen();
        int q = CudaCalls.backend().eventQuery(handle);
        if (q == Stream.NOT_READY) {
            return false;
        }
        CudaCalls.check(q, "cudaEventQuery", device);
        return true;
    }

    /**
     * {@code cudaEventElapsedTime(start, this)}.
     *
     * @param start an earlier recorded event
     * @return milliseconds between {@code start} and this event
     * @throws NullPointerException when {@code start} is null
     * @throws IllegalStateException when this event or {@code start} is closed
     * @throws CudaException when {@code cudaEventElapsedTime} fails (for example, an event not yet recorded)
     */
    public float elapsedSince(Event start) {
        ensureOpen();
        if (start == null) {
            throw Errors.nullArgument("start");
        }
        start.ensureOpen();
        float[] ms = new float[1];
        CudaCalls.check(CudaCalls.backend().eventElapsedTime(ms, start.handle, handle), "cudaEventElapsedTime", device);
        return ms[0];
    }

    /** Destroys the event ({@code cudaEventDestroy}). Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        leak.closed();
        CudaCalls.check(CudaCalls.backend().eventDestroy(handle), "cudaEventDestroy", device);
    }
}
