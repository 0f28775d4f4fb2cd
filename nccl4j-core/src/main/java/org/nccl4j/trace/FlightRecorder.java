package org.nccl4j.trace;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The last operations of one communicator, in a ring of fixed capacity held in preallocated primitive arrays:
 * recording an operation allocates nothing.
 *
 * <h2>Sequence numbers</h2>
 * {@link #record} numbers the operations 1, 2, 3, ... and stores operation {@code seq} in slot
 * {@code seq % capacity}, so that the ring holds the last {@link #capacity()} operations. Each entry keeps the
 * operation ({@link TraceOperation#code()}), count, data type ({@code ncclDataType_t}), reduction operator
 * ({@code ncclRedOp_t}), peer or root, bytes, stream, the {@link System#nanoTime()} of its enqueueing, its state
 * and the time of its marking. That is {@value #BYTES_PER_ENTRY} bytes per entry: 132 KB for the default 2000.
 *
 * <h2>Threads</h2>
 * One thread records (the thread that issues the communicator's operations); one other thread, a watchdog, marks
 * operations {@link #completed} or {@link #failed}; any thread may read ({@link #snapshot()}, {@link #lastEnqueued()},
 * {@link #lastCompleted()}, {@link #oldestPending()}). Each slot is a sequence lock: the recorder marks the slot
 * as being written before it writes and publishes the sequence number after, and a reader keeps an entry only
 * when the slot held the same sequence number before and after it read, so that a snapshot never shows an entry
 * half written. The watchdog changes a slot's state with a compare-and-set on a word that holds the state with
 * the sequence number, so that a mark for an operation that the ring has overwritten is dropped.
 *
 * <h2>Completion</h2>
 * {@link #lastCompleted()} is the highest sequence number {@code c} such that every operation up to {@code c} has
 * been marked completed. A watchdog that marks in order (the usual case: operations on one stream complete in
 * order) keeps it exact whatever the capacity; an operation marked out of order is remembered only while the
 * ring still holds it, so out-of-order marks of operations older than {@link #capacity()} can hold it back. A
 * failed operation holds it back for good.
 */
public final class FlightRecorder {
    /** The smallest capacity. */
    public static final int MIN_CAPACITY = 1;
    /** The largest capacity (about 660 MB of arrays). */
    public static final int MAX_CAPACITY = 10_000_000;
    /** The variable that sets the capacity ({@link TraceConfig#BUFFER}), named in the refusal of a bad one. */
    static final String CAPACITY_VARIABLE = "NCCL4J_TRACE_BUFFER";
    /** The bytes of array storage one entry takes. */
    public static final int BYTES_PER_ENTRY = 7 * Long.BYTES + 2 + 2 * Integer.BYTES;

    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle LAST_ENQUEUED;
    private static final int ENQUEUED = 0;
    private static final int COMPLETED = 1;
    private static final int FAILED = 2;
    private static final int OPERATIONS = TraceOperation.values().length;
    private static final int DATA_TYPES = TraceNames.DATA_TYPES.size();
    private static final TraceEntry.State[] STATES = TraceEntry.State.values();

    static {
        try {
            LAST_ENQUEUED = MethodHandles.lookup().findVarHandle(FlightRecorder.class, "lastEnqueued", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final int capacity;
    /** The slot's sequence number; its negation while the recorder writes the slot; 0 before the first write. */
    private final long[] stamps;
    /** {@code sequence << 2 | state}: written by the recorder (ENQUEUED) and compared-and-set by the watchdog. */
    private final long[] states;
    private final byte[] operations;
    private final byte[] dataTypes;
    private final int[] reduceOps;
    private final int[] peers;
    private final long[] counts;
    private final long[] byteCounts;
    private final long[] streams;
    private final long[] enqueuedNanos;
    /** Written by the watchdog only, before its compare-and-set of the state publishes it. */
    private final long[] markedNanos;

    /** The recorder's own count; {@link #lastEnqueued} publishes it. */
    private long sequence;
    /** The slot of the next record: {@code (sequence + 1) % capacity}, kept by the recorder's thread. */
    private int nextSlot;
    /** Written by the recorder only (a release store: readers see the slot it names whole). */
    private volatile long lastEnqueued;
    /** Written by the watchdog only. */
    private volatile long lastCompleted;
    /** Every operation up to this one is marked, completed or failed; written by the watchdog only. */
    private volatile long lastMarked;

    /**
     * Makes a recorder and its arrays.
     *
     * @param capacity how many operations the ring holds, {@value #MIN_CAPACITY} to {@value #MAX_CAPACITY} (the
     *        value of {@code NCCL4J_TRACE_BUFFER}, {@link TraceConfig#bufferSize()})
     * @throws IllegalArgumentException when capacity is out of that range
     */
    public FlightRecorder(int capacity) {
        if (capacity < MIN_CAPACITY || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("flight recorder capacity (" + CAPACITY_VARIABLE + ") must be from "
                    + MIN_CAPACITY + " to " + MAX_CAPACITY + " operations, got " + capacity);
        }
        this.capacity = capacity;
        this.nextSlot = 1 % capacity;   // sequence 1 goes to slot 1 % capacity, as readers compute it
        stamps = new long[capacity];
        states = new long[capacity];
        operations = new byte[capacity];
        dataTypes = new byte[capacity];
        reduceOps = new int[capacity];
        peers = new int[capacity];
        counts = new long[capacity];
        byteCounts = new long[capacity];
        streams = new long[capacity];
        enqueuedNanos = new long[capacity];
        markedNanos = new long[capacity];
    }

    /**
     * How many operations the ring holds.
     *
     * @return the capacity given at construction
     */
    public int capacity() {
        return capacity;
    }

    /**
     * Records an enqueued operation, stamped with {@link System#nanoTime()}. Allocates nothing. Call from one thread
     * only (the one that issues the communicator's operations).
     *
     * @param operation the operation's {@link TraceOperation#code()}
     * @param count the element count NCCL was given
     * @param dataType the {@code ncclDataType_t} ({@link org.nccl4j.DataType#code()}), or -1 for none
     * @param reduceOp the {@code ncclRedOp_t} ({@link org.nccl4j.ReduceOp#code()}), or -1 for an operation that
     *        does not reduce
     * @param peer the root of a rooted collective, the other rank of a send or receive, else -1
     * @param bytes the bytes this rank sends or reduces
     * @param stream the CUDA stream's handle
     * @return the operation's sequence number: 1 for the first, then one more each time
     * @throws IllegalArgumentException when operation is not a {@link TraceOperation} code, dataType not -1 or an
     *         {@code ncclDataType_t} (0..11), reduceOp or peer below -1, or count or bytes negative (nothing is
     *         recorded)
     */
    public long record(int operation, long count, int dataType, int reduceOp, int peer, long bytes, long stream) {
        if (operation < 0 || operation >= OPERATIONS || dataType < -1 || dataType >= DATA_TYPES || reduceOp < -1
                || peer < -1 || (count | bytes) < 0) {
            throw invalid(operation, count, dataType, reduceOp, peer, bytes);
        }
        long seq = ++sequence;
        int slot = nextSlot;                      // seq % capacity, without a division on the hot path
        nextSlot = slot + 1 == capacity ? 0 : slot + 1;
        LONGS.setOpaque(stamps, slot, -seq);
        VarHandle.storeStoreFence();
        operations[slot] = (byte) operation;
        dataTypes[slot] = (byte) dataType;
        reduceOps[slot] = reduceOp;
        peers[slot] = peer;
        counts[slot] = count;
        byteCounts[slot] = bytes;
        streams[slot] = stream;
        enqueuedNanos[slot] = System.nanoTime();
        LONGS.setRelease(states, slot, seq << 2 | ENQUEUED);
        LONGS.setRelease(stamps, slot, seq);
        LAST_ENQUEUED.setRelease(this, seq);
        return seq;
    }

    private static IllegalArgumentException invalid(int operation, long count, int dataType, int reduceOp, int peer,
            long bytes) {
        return new IllegalArgumentException("cannot record operation " + operation + " (codes 0.." + (OPERATIONS - 1)
                + "), dataType " + dataType + " (-1 or 0.." + (DATA_TYPES - 1) + "), reduceOp " + reduceOp
                + " (-1 or >= 0), peer " + peer + " (-1 or >= 0), count " + count + " and bytes " + bytes + " (>= 0)");
    }

    /**
     * Marks an operation completed, with the time of this call. Allocates nothing. Call from one thread only (the
     * watchdog). Marking an operation that is already marked, or that the ring no longer holds, changes no entry
     * (the latter still counts for {@link #lastCompleted()} when it is the next in order).
     *
     * @param seq a sequence number that {@link #record} returned
     * @throws IllegalArgumentException when seq was never returned by {@link #record}
     */
    public void completed(long seq) {
        mark(seq, COMPLETED);
        if (seq == lastCompleted + 1
                && (long) LONGS.getVolatile(states, (int) (seq % capacity)) != (seq << 2 | FAILED)) {
            lastCompleted = extend(seq, false);
        }
        if (seq == lastMarked + 1) {
            lastMarked = extend(seq, true);
        }
    }

    /**
     * Marks an operation failed, with the time of this call: it never counts as completed. Allocates nothing. Call
     * from the thread that calls {@link #completed} only. An operation already marked keeps its mark.
     *
     * @param seq a sequence number that {@link #record} returned
     * @throws IllegalArgumentException when seq was never returned by {@link #record}
     */
    public void failed(long seq) {
        mark(seq, FAILED);
        if (seq == lastMarked + 1) {
            lastMarked = extend(seq, true);
        }
    }

    private void mark(long seq, int state) {
        long last = lastEnqueued;
        if (seq < 1 || seq > last) {
            throw notRecorded(seq, last);
        }
        int slot = (int) (seq % capacity);
        long pending = seq << 2 | ENQUEUED;
        if ((long) LONGS.getVolatile(states, slot) == pending) {
            markedNanos[slot] = System.nanoTime();
            LONGS.compareAndSet(states, slot, pending, seq << 2 | state);
        }
    }

    private static IllegalArgumentException notRecorded(long seq, long last) {
        return new IllegalArgumentException("sequence " + seq + " was never recorded (recorded: 1.." + last + ")");
    }

    /**
     * From seq, which is the next in order and just marked (or no longer in the ring), the highest sequence number
     * up to which the ring's operations are completed (or, with failedToo, marked at all).
     */
    private long extend(long seq, boolean failedToo) {
        long done = seq;
        long last = lastEnqueued;
        while (done < last) {
            long next = done + 1;
            long word = (long) LONGS.getVolatile(states, (int) (next % capacity));
            if (word != (next << 2 | COMPLETED) && !(failedToo && word == (next << 2 | FAILED))) {
                break;
            }
            done = next;
        }
        return done;
    }

    /**
     * Marks every operation up to {@code seq} that is not yet marked completed, with the time of this call: what a
     * watchdog does when a marker placed after those operations on their streams has completed. Operations that the
     * ring no longer holds count as completed. Allocates nothing. Call from the watchdog's thread only.
     *
     * @param seq a sequence number that {@link #record} returned, or 0 for none
     * @throws IllegalArgumentException when seq was never returned by {@link #record}
     */
    public void completedThrough(long seq) {
        long last = lastEnqueued;
        if (seq < 0 || seq > last) {
            throw notRecorded(seq, last);
        }
        long from = Math.max(lastMarked + 1, last - capacity + 1);
        for (long s = Math.max(1, from); s <= seq; s++) {
            mark(s, COMPLETED);
        }
        if (seq > lastMarked) {
            lastMarked = seq;
        }
        if (seq > lastCompleted) {
            lastCompleted = seq;
        }
    }

    /**
     * Marks every operation up to {@code seq} that was recorded on {@code stream} and is not yet marked, completed,
     * with the time of this call: what a watchdog does when the marker it placed on that one stream after those
     * operations has completed while its markers on the communicator's other streams have not. Operations on other
     * streams keep their state. Allocates nothing. Call from the watchdog's thread only.
     *
     * @param seq a sequence number that {@link #record} returned, or 0 for none
     * @param stream the CUDA stream's handle, as {@link #record} was given it
     * @throws IllegalArgumentException when seq was never returned by {@link #record}
     */
    public void completedThroughOn(long seq, long stream) {
        long last = lastEnqueued;
        if (seq < 0 || seq > last) {
            throw notRecorded(seq, last);
        }
        for (long s = Math.max(1, Math.max(lastMarked + 1, last - capacity + 1)); s <= seq; s++) {
            int slot = (int) (s % capacity);
            // the slot's stamp before and after the read: the recorder may overwrite it meanwhile
            if ((long) LONGS.getAcquire(stamps, slot) != s) {
                continue;
            }
            long on = streams[slot];
            VarHandle.loadLoadFence();
            if (on == stream && (long) LONGS.getOpaque(stamps, slot) == s) {
                completed(s);
            }
        }
    }

    /**
     * The {@link System#nanoTime()} at which operation {@code seq} was recorded; for an operation the ring no longer
     * holds, that of the oldest one it holds (a later time, so that a timeout measured from it errs on the late side).
     *
     * @param seq a sequence number that {@link #record} returned
     * @return the time, in {@link System#nanoTime()}'s terms
     * @throws IllegalArgumentException when seq was never returned by {@link #record}
     */
    public long enqueuedNanos(long seq) {
        long last = lastEnqueued;
        if (seq < 1 || seq > last) {
            throw notRecorded(seq, last);
        }
        long s = Math.max(seq, last - capacity + 1);
        return enqueuedNanos[(int) (s % capacity)];
    }

    /**
     * The entry of one operation, if the ring still holds it.
     *
     * @param seq a sequence number
     * @return the entry, or null when the ring no longer holds it or it was never recorded
     */
    public TraceEntry entry(long seq) {
        if (seq < 1 || seq > lastEnqueued) {
            return null;
        }
        return read(seq, Instant.now(), System.nanoTime());
    }

    /**
     * The sequence number of the last operation recorded.
     *
     * @return 0 before the first
     */
    public long lastEnqueued() {
        return lastEnqueued;
    }

    /**
     * The highest sequence number up to which every operation has been marked completed (see the class
     * description).
     *
     * @return 0 when the first operation is not marked completed
     */
    public long lastCompleted() {
        return lastCompleted;
    }

    /**
     * The lowest sequence number of an operation recorded but not marked completed or failed. An operation that
     * the ring overwrote before it was marked counts as pending.
     *
     * @return the sequence number, or 0 when no operation is pending
     */
    public long oldestPending() {
        long last = lastEnqueued;
        for (long s = lastMarked + 1; s <= last; s++) {
            long word = (long) LONGS.getVolatile(states, (int) (s % capacity));
            if (word != (s << 2 | COMPLETED) && word != (s << 2 | FAILED)) {
                return s;
            }
        }
        return 0;
    }

    /**
     * The entries the ring holds, oldest first: at most {@link #capacity()}, ending with the last recorded when this
     * call started. Each entry is whole (never half written); an entry that the recorder overwrites while this call
     * reads it is left out. Enqueue times are converted to wall-clock instants against the clock at this call.
     *
     * @return an immutable list, in sequence order
     */
    public List<TraceEntry> snapshot() {
        long last = lastEnqueued;
        Instant wall = Instant.now();
        long now = System.nanoTime();
        long first = Math.max(1, last - capacity + 1);
        List<TraceEntry> out = new ArrayList<>((int) (last - first + 1));
        for (long s = first; s <= last; s++) {
            TraceEntry e = read(s, wall, now);
            if (e != null) {
                out.add(e);
            }
        }
        return Collections.unmodifiableList(out);
    }

    /** The entry of seq, or null when the ring no longer holds it. */
    private TraceEntry read(long seq, Instant wall, long now) {
        int slot = (int) (seq % capacity);
        while (true) {
            long stamp = (long) LONGS.getAcquire(stamps, slot);
            if (stamp != seq) {
                return null; // overwritten (or being overwritten) by a later operation
            }
            int operation = operations[slot];
            int dataType = dataTypes[slot];
            int reduceOp = reduceOps[slot];
            int peer = peers[slot];
            long count = counts[slot];
            long bytes = byteCounts[slot];
            long stream = streams[slot];
            long enqueued = enqueuedNanos[slot];
            long word = (long) LONGS.getAcquire(states, slot);
            long marked = markedNanos[slot];
            VarHandle.loadLoadFence();
            if ((long) LONGS.getOpaque(stamps, slot) != seq) {
                return null; // overwritten while read: the fields may be a mix of two operations
            }
            if ((long) LONGS.getOpaque(states, slot) != word) {
                continue; // marked while read: read again
            }
            int state = (int) (word & 3);
            Instant at = wall.minusNanos(now - enqueued).truncatedTo(ChronoUnit.MICROS);
            Long after = state == ENQUEUED ? null : Math.max(0, (marked - enqueued) / 1000);
            return new TraceEntry(seq, TraceOperation.fromCode(operation), count, TraceNames.dataType(dataType),
                    TraceNames.reduceOp(reduceOp), peer < 0 ? null : peer, bytes, stream, at, STATES[state], after);
        }
    }

    @Override
    public String toString() {
        return "FlightRecorder[capacity " + capacity + ", last enqueued " + lastEnqueued + ", last completed "
                + lastCompleted + "]";
    }
}
