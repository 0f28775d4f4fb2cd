package org.nccl4j.trace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link FlightRecorder} on the hot path and across threads: record and completed allocate nothing (HotSpot's
 * per-thread allocation counter, as {@code HotPathTest} measures the collectives), and readers that take snapshots
 * while one thread records and another marks never see an entry half written.
 */
class FlightRecorderConcurrencyTest {
    static final int CALLS = 100_000;

    @Test
    void recordAndCompletedAllocateNothing() {
        com.sun.management.ThreadMXBean bean = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assumeTrue(bean.isThreadAllocatedMemorySupported(), "this JVM cannot count allocated bytes per thread");
        bean.setThreadAllocatedMemoryEnabled(true);
        assumeTrue(bean.isThreadAllocatedMemoryEnabled(), "per-thread allocation counting could not be enabled");
        FlightRecorder r = new FlightRecorder(2000);
        FlightRecorder failing = new FlightRecorder(2000);
        for (int round = 0; round < 3; round++) {
            loop(r, CALLS, false); // warm up: JIT compilation happens here
            loop(failing, CALLS, true);
        }
        long[] allocated = new long[2];
        for (int i = 0; i < 2; i++) {
            FlightRecorder rec = i == 0 ? r : failing;
            long overhead = -bean.getCurrentThreadAllocatedBytes() + bean.getCurrentThreadAllocatedBytes();
            long before = bean.getCurrentThreadAllocatedBytes();
            loop(rec, CALLS, i == 1);
            long after = bean.getCurrentThreadAllocatedBytes();
            allocated[i] = after - before - overhead;
        }
        // One object per call would be at least 16 bytes x 100,000 = 1.6 MB; 1 KiB leaves room for the noise of
        // the measurement itself only.
        String report = "record+completed: " + allocated[0] + " bytes, record+failed: " + allocated[1] + " bytes";
        assertTrue(allocated[0] < 1024 && allocated[1] < 1024, CALLS + " calls each allocated too much: " + report);
        assertEquals(4L * CALLS, r.lastEnqueued());
        assertEquals(4L * CALLS, r.lastCompleted());
        assertEquals(0, r.oldestPending());
        assertEquals(4L * CALLS, failing.lastEnqueued());
        assertEquals(0, failing.lastCompleted());
        assertEquals(0, failing.oldestPending());
    }

    private static void loop(FlightRecorder r, int n, boolean fail) {
        for (int i = 0; i < n; i++) {
            long seq = r.record(i % 11, i, i % 12, i % 6 - 1, i % 9 - 1, 4L * i, 0x7f00_0000_0000L + i);
            if (fail) {
                r.failed(seq);
            } else {
                r.completed(seq);
            }
        }
    }

    /** What the writer records for seq: every field a function of seq, so that a reader can check the whole entry. */
    private static long record(FlightRecorder r, long s) {
        return r.record((int) (s % 11), s * 3, (int) (s % 13) - 1, (int) (s % 7) - 1, (int) (s % 5) - 1, s * 7,
                s ^ 0x5555_0000L);
    }

    private static String whole(TraceEntry e) {
        long s = e.sequence();
        List<String> wrong = new ArrayList<>();
        if (e.operation().code() != s % 11) {
            wrong.add("operation");
        }
        if (e.count() != s * 3) {
            wrong.add("count");
        }
        if (!java.util.Objects.equals(e.dataType(), TraceNames.dataType((int) (s % 13) - 1))) {
            wrong.add("dataType");
        }
        if (!java.util.Objects.equals(e.reduceOp(), TraceNames.reduceOp((int) (s % 7) - 1))) {
            wrong.add("reduceOp");
        }
        Integer peer = s % 5 == 0 ? null : (int) (s % 5) - 1;
        if (!java.util.Objects.equals(e.peer(), peer)) {
            wrong.add("peer");
        }
        if (e.bytes() != s * 7) {
            wrong.add("bytes");
        }
        if (e.stream() != (s ^ 0x5555_0000L)) {
            wrong.add("stream");
        }
        if ((e.state() == TraceEntry.State.ENQUEUED) != (e.completedAfterMicros() == null)) {
            wrong.add("completedAfterMicros");
        }
        return wrong.isEmpty() ? null : "torn entry " + e + ": " + wrong;
    }

    @Test
    @Timeout(60)
    void snapshotsNeverShowATornEntry() throws Exception {
        FlightRecorder r = new FlightRecorder(16);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicLong published = new AtomicLong();
        Thread writer = new Thread(() -> {
            try {
                for (long s = 1; !stop.get(); s++) {
                    assertEquals(s, record(r, s));
                    published.set(s);
                    if ((s & 1023) == 0) {
                        Thread.yield();
                    }
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        }, "recorder");
        Thread watchdog = new Thread(() -> {
            try {
                long next = 1;
                while (!stop.get()) {
                    long upTo = published.get();
                    // marks in pairs out of order (next+1, then next), failing one in 97
                    while (next + 1 <= upTo) {
                        r.completed(next + 1);
                        if (next % 97 == 0) {
                            r.failed(next);
                        } else {
                            r.completed(next);
                        }
                        next += 2;
                    }
                    Thread.onSpinWait();
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        }, "watchdog");
        writer.start();
        watchdog.start();
        long snapshots = 0;
        long entries = 0;
        long lastCompleted = 0;
        long deadline = System.nanoTime() + 400_000_000L;
        try {
            while (System.nanoTime() < deadline && failure.get() == null) {
                long lowest = r.lastEnqueued();
                List<TraceEntry> s = r.snapshot();
                long highest = r.lastEnqueued();
                long previous = 0;
                for (TraceEntry e : s) {
                    assertNull(whole(e));
                    assertTrue(e.sequence() > previous, "out of order: " + s);
                    assertTrue(e.sequence() <= highest, e.sequence() + " beyond " + highest);
                    previous = e.sequence();
                }
                assertTrue(s.isEmpty() || s.get(0).sequence() > lowest - 16, "older than the ring: " + s + ", " + lowest);
                assertTrue(s.size() <= 16);
                long c = r.lastCompleted();
                assertTrue(c >= lastCompleted, "lastCompleted went back from " + lastCompleted + " to " + c);
                lastCompleted = c;
                r.oldestPending();
                snapshots++;
                entries += s.size();
            }
        } finally {
            stop.set(true);
            writer.join();
            watchdog.join();
        }
        if (failure.get() != null) {
            throw new AssertionError("a thread failed", failure.get());
        }
        assertTrue(snapshots > 10, snapshots + " snapshots");
        assertTrue(entries > 0);
        assertTrue(r.lastEnqueued() > 16, "the ring wrapped: " + r);
        assertFalse(lastCompleted > r.lastEnqueued());
        for (TraceEntry e : r.snapshot()) {
            assertNull(whole(e));
        }
    }
}
