package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.trace.TraceDump;
import org.slf4j.LoggerFactory;

/**
 * The watchdog's monitor against the process's watchdog, with the stub NCCL and the fake CUDA: a fake
 * {@code cudaEventQuery} that hangs ({@link FakeCuda#hangEventQueries()}) or a failure listener that blocks makes the
 * watchdog's thread stuck. Each test runs a monitor of its own with a short stuck timeout (the process's monitor
 * keeps the default of 2 minutes, which no test comes near) and stops it after.
 */
class WatchdogMonitorTest extends StubFixture {
    private Logger logger;
    private ListAppender<ILoggingEvent> appender;
    private WatchdogMonitor monitor;

    @BeforeEach
    void listen() {
        logger = (Logger) LoggerFactory.getLogger(WatchdogMonitor.class);
        appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
    }

    @AfterEach
    void stopMonitor() throws InterruptedException {
        if (monitor != null) {
            monitor.stop();
        }
        logger.detachAppender(appender);
    }

    private WatchdogMonitor monitor(Duration stuckTimeout) {
        monitor = new WatchdogMonitor(Watchdog.instance(), stuckTimeout, FailurePolicy.THROW).start();
        return monitor;
    }

    private List<ILoggingEvent> events(Level level) {
        synchronized (appender) {
            return appender.list.stream().filter(e -> e.getLevel() == level).collect(Collectors.toList());
        }
    }

    private static CompletableFuture<Throwable> waitOn(Stream s) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                s.synchronize();
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
    }

    @Test
    void aWatchdogStuckInCudaIsReportedWithinTheBoundAndItsCommunicatorsFailWithoutAnAbort() throws Exception {
        Stream s = stream(0);
        Stream quiet = stream(0);
        DeviceBuffer b = buffer(0, 16, DataType.FLOAT32);
        AtomicReference<CommunicatorFailedException> heard = new AtomicReference<>();
        AtomicReference<String> heardOn = new AtomicReference<>();
        Communicator a = later(Communicator.create(0, 2, testId(), 0, CommConfig.builder().watchdog(true)
                .commName("stuck-a").onFailure(FailurePolicy.RECOVER).build()));   // its waits poll
        Communicator c = later(Communicator.create(1, 2, testId(), 0, CommConfig.builder().watchdog(true)
                .commName("stuck-c").onFailure((comm, f) -> {
                    heardOn.set(Thread.currentThread().getName());   // first: the test reads heard, then heardOn
                    heard.set(f);
                }).build()));
        Communicator off = later(Communicator.create(2, 3, testId(), 0, CommConfig.builder().watchdog(false)
                .commName("unwatched").build()));
        c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, quiet);
        off.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, quiet);
        quiet.synchronize();
        within(2000, () -> c.health().recorder.lastCompleted() == 1 ? true : null, "the watchdog seeing c's #1 complete");
        monitor(Duration.ofMillis(500));
        CompletableFuture<Throwable> waiter;
        long ms;
        try {
            cuda.hangEventQueries();
            cuda.stall(s.handle());
            a.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);   // the watchdog's query of its marker hangs
            waiter = waitOn(s);
            within(3000, () -> cuda.hangingQueries() > 0 ? true : null, "the watchdog stuck in cudaEventQuery");
            long t0 = System.nanoTime();
            assertFalse(waiter.isDone(), "the waiter waits");
            Throwable t = waiter.get(5, TimeUnit.SECONDS);
            ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(t instanceof WatchdogStuckException, "got " + t);
            assertTrue(ms >= 300 && ms < 2500, "released " + ms + " ms after the watchdog got stuck; bound 500 ms");
            WatchdogStuckException e = (WatchdogStuckException) t;
            assertSame(a.failure(), e.getCause(), "the waiter's exception has the monitor's as its cause");
            assertTrue(e.stuckFor().compareTo(Duration.ofMillis(500)) > 0, e.stuckFor().toString());
            assertTrue(e.stuckIn().startsWith("java.lang.Object.wait(Native Method), under "
                    + "org.nccl4j.FakeCuda.eventQuery(FakeCuda.java:"), e.stuckIn());
            String m = e.getMessage();
            assertTrue(m.startsWith("rank 0 of 2 (communicator \"stuck-a\"): the nccl4j watchdog thread made no "
                    + "progress for "), m);
            assertTrue(m.contains(" (stuck in: " + e.stuckIn() + "), so hangs and failures are no longer detected. "
                    + "Oldest pending operation: allReduce #1, count 16 ncclFloat32 ncclSum, 64 bytes, stream 0x"
                    + Long.toHexString(s.handle()) + ", enqueued "), m);
            assertTrue(m.contains("The communicator was not aborted (the stuck thread may be inside an NCCL call on "
                    + "it) and is closed for calls: abort() or close() it, or recover or shrink it. Trace: "
                    + e.trace()), m);
            assertEquals("allReduce", e.pendingOperation());
            assertEquals(1, e.sequence());

            // one ERROR line: how long, where, what next, the watchdog's stack; every thread's stack at WARN
            List<ILoggingEvent> errors = events(Level.ERROR);
            assertEquals(1, errors.size(), errors.toString());
            ILoggingEvent error = errors.get(0);
            assertEquals("nccl4j-watchdog-monitor", error.getThreadName());
            String line = error.getFormattedMessage();
            assertTrue(line.startsWith("nccl4j watchdog monitor: the nccl4j watchdog thread made no progress for "),
                    line);
            assertTrue(line.contains(" (stuck in: java.lang.Object.wait(Native Method), under "
                    + "org.nccl4j.FakeCuda.eventQuery(FakeCuda.java:"), line);
            assertTrue(line.contains("), thread state WAITING (NCCL4J_WATCHDOG_STUCK_TIMEOUT 500 ms): hangs and "
                    + "failures are no longer detected. Writing the flight records of "), line);
            assertTrue(line.matches("(?s).* communicators, then failing [0-9]+ watched communicators without aborting "
                    + "them \\(the stuck thread may be inside an NCCL call\\): their later calls, and waits that poll, "
                    + "throw WatchdogStuckException\\. The watchdog thread's stack:\n\tat java\\.lang\\.Object\\.wait"
                    + "\\(Native Method\\)\n.*"), line);
            assertTrue(line.contains("\n\tat org.nccl4j.Watchdog$Watch.look(Watchdog.java:"), line);
            assertTrue(line.contains("\n\tat org.nccl4j.Watchdog.run(Watchdog.java:"), line);
            String dump = events(Level.WARN).stream().map(ILoggingEvent::getFormattedMessage)
                    .filter(x -> x.startsWith("nccl4j watchdog monitor: every thread's stack")).findFirst()
                    .orElseThrow();
            assertTrue(dump.contains("\"nccl4j-watchdog\" #"), dump);
            assertTrue(dump.contains("\"nccl4j-watchdog-monitor\" #"), dump);
            assertTrue(dump.contains("Locked synchronizers:\n\t- java.util.concurrent.locks.ReentrantLock$NonfairSync"),
                    "the lifecycle lock the stuck watchdog holds: " + dump);

            // the flight records: every open recorded communicator, watched or not
            TraceDump ta = TraceDump.read(e.trace());
            assertEquals(TraceDump.REASON_WATCHDOG_STUCK, ta.reason());
            assertEquals("watchdog stuck", ta.reason());
            assertEquals(e.verdict(), ta.failure());
            assertEquals("stuck-a", ta.communicator());
            // the monitor fails the communicators one after another: c may come a moment after a's waiter
            CommunicatorFailedException fc = within(3000, c::failure, "the monitor's failure of c");
            assertTrue(fc instanceof WatchdogStuckException, String.valueOf(fc));
            assertEquals("stuck-c", TraceDump.read(fc.trace()).communicator());
            Path offTrace = e.trace().resolveSibling(e.trace().getFileName().toString().replace("rank0-", "rank2-"));
            assertTrue(Files.isRegularFile(offTrace), offTrace.toString());
            assertEquals(TraceDump.REASON_WATCHDOG_STUCK, TraceDump.read(offTrace).reason());
            assertEquals("unwatched", TraceDump.read(offTrace).communicator());

            // the callback's listener heard, on the monitor's thread (after the failure is set and logged: waited
            // for, as a loaded machine may read the failure first); nothing was aborted; the unwatched one is intact
            assertSame(fc, within(3000, heard::get, "c's listener"));
            assertEquals("nccl4j-watchdog-monitor", heardOn.get());
            assertTrue(fc.getMessage().contains("No operation was pending (timeout 10 min)"), fc.getMessage());
            assertEquals(List.of(), stub.calls("ncclCommAbort"), "no abort while the watchdog is stuck");
            assertTrue(a.isClosed() && c.isClosed(), "closed for calls");
            WatchdogStuckException later = assertThrows(WatchdogStuckException.class,
                    () -> c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, quiet));
            assertSame(fc, later.getCause());
            assertThrows(WatchdogStuckException.class, s::synchronize);
            assertNull(off.failure());
            assertFalse(off.isClosed());
            off.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, quiet);

            Thread.sleep(700);   // still stuck: reported once per episode
            assertEquals(1, events(Level.ERROR).size());
        } finally {
            cuda.releaseEventQueries();
            cuda.release(s.handle());
        }
        within(3000, () -> events(Level.WARN).stream().anyMatch(x -> x.getFormattedMessage().startsWith(
                "nccl4j watchdog monitor: the nccl4j watchdog thread is making progress again, after ")) ? true : null,
                "the WARN line of the watchdog's recovery");
        assertEquals(1, events(Level.ERROR).size());
        c.close();   // kept: aborted, once
        a.abort();
        assertEquals(2, stub.calls("ncclCommAbort").size());
        a.close();
        assertEquals(2, stub.calls("ncclCommAbort").size());
    }

    @Test
    void aListenerThatBlocksIsAStuckWatchdogAndTheThrowPolicyFailsLaterCalls() throws Exception {
        Stream s = stream(0);
        Stream other = stream(0);
        DeviceBuffer b = buffer(0, 8, DataType.FLOAT32);
        CountDownLatch unblock = new CountDownLatch(1);
        Communicator failing = later(Communicator.create(0, 2, testId(), 0, CommConfig.builder().watchdog(true)
                .timeout(Duration.ofMillis(200)).commName("blocks").onFailure((comm, f) -> {
                    try {
                        unblock.await();
                    } catch (InterruptedException x) {
                        Thread.currentThread().interrupt();
                    }
                }).build()));
        Communicator healthy = later(Communicator.create(1, 2, testId(), 0, CommConfig.builder().watchdog(true)
                .commName("healthy").build()));
        healthy.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, other);
        other.synchronize();
        monitor(Duration.ofMillis(400));
        try {
            cuda.stall(s.handle());
            failing.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);   // times out; its listener blocks
            CommunicatorFailedException f = within(5000, healthy::failure, "the monitor's failure of the other");
            cuda.release(s.handle());
            assertTrue(f instanceof WatchdogStuckException, f.toString());
            WatchdogStuckException w = (WatchdogStuckException) f;
            assertTrue(w.stuckIn().contains(", under org.nccl4j.WatchdogMonitorTest.lambda$"), w.stuckIn());
            assertTrue(f.getMessage().startsWith("rank 1 of 2 (communicator \"healthy\"): the nccl4j watchdog thread "
                    + "made no progress for "), f.getMessage());
            assertTrue(f.getMessage().contains("No operation was pending (timeout 10 min)"), f.getMessage());
            assertTrue(failing.failure() instanceof CollectiveTimeoutException, "the watchdog's own failure stays");
            assertThrows(WatchdogStuckException.class, () -> healthy.allReduce(b, DataType.FLOAT32, ReduceOp.SUM,
                    other));
            assertEquals(1, stub.calls("ncclCommAbort").size(), "only the watchdog's abort of the timed-out one");
            String line = events(Level.ERROR).get(0).getFormattedMessage();
            assertTrue(line.contains("\n\tat org.nccl4j.Watchdog$Watch.after(Watchdog.java:"), line);
        } finally {
            unblock.countDown();
        }
        within(3000, () -> events(Level.WARN).stream().anyMatch(x -> x.getFormattedMessage().contains(
                "is making progress again")) ? true : null, "the recovery");
    }

    @Test
    void aHealthyWatchdogIsNeverReportedStuck() throws Exception {
        Stream s = stream(0);
        DeviceBuffer b = buffer(0, 8, DataType.FLOAT32);
        Communicator c = later(Communicator.create(0, 2, testId(), 0, CommConfig.builder().watchdog(true)
                .commName("fine").build()));
        monitor(Duration.ofSeconds(1));
        long beat = Watchdog.instance().heartbeat();
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2500);
        int n = 0;
        while (System.nanoTime() < end) {
            c.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, s);
            s.synchronize();
            n++;
            Thread.sleep(20);
        }
        within(2000, () -> c.health().recorder.lastCompleted() == c.health().recorder.lastEnqueued() ? true : null,
                "the watchdog marking every operation");
        assertTrue(Watchdog.instance().heartbeat() != beat, "the heartbeat moves");
        assertNull(c.failure());
        assertFalse(c.isClosed());
        assertTrue(n > 10);
        assertEquals(List.of(), events(Level.ERROR));
        assertEquals(List.of(), events(Level.WARN));
    }

    @Test
    void stuckInNamesTheTopFrameAndTheInnermostOutsideTheJdk() {
        StackTraceElement park = new StackTraceElement("jdk.internal.misc.Unsafe", "park", null, -2);
        StackTraceElement lock = new StackTraceElement("java.util.concurrent.locks.LockSupport", "park",
                "LockSupport.java", 211);
        StackTraceElement mine = new StackTraceElement("com.example.Listener", "onFailure", "Listener.java", 12);
        assertEquals("jdk.internal.misc.Unsafe.park(Native Method), under com.example.Listener.onFailure("
                + "Listener.java:12)", WatchdogMonitor.stuckIn(new StackTraceElement[] {park, lock, mine}));
        assertEquals("com.example.Listener.onFailure(Listener.java:12)",
                WatchdogMonitor.stuckIn(new StackTraceElement[] {mine}));
        assertEquals("jdk.internal.misc.Unsafe.park(Native Method)",
                WatchdogMonitor.stuckIn(new StackTraceElement[] {park, lock}));
        assertEquals("no stack (the thread has ended)", WatchdogMonitor.stuckIn(new StackTraceElement[0]));
    }

    @Test
    void theStuckTimeoutIsTheLongerOfTwoMinutesAndFourPollsUnlessSet() {
        Properties none = new Properties();
        assertEquals(Duration.ofMinutes(2), WatchdogConfig.from(Map.of(), none).stuckTimeout());
        assertEquals(Duration.ofMinutes(2), WatchdogConfig.from(Map.of("NCCL4J_WATCHDOG_POLL", "30s"), none)
                .stuckTimeout());
        assertEquals(Duration.ofMinutes(4), WatchdogConfig.from(Map.of("NCCL4J_WATCHDOG_POLL", "1m"), none)
                .stuckTimeout());
        assertEquals(Duration.ofSeconds(45), WatchdogConfig.from(Map.of("NCCL4J_WATCHDOG_STUCK_TIMEOUT", "45s"), none)
                .stuckTimeout());
        Properties p = new Properties();
        p.setProperty("nccl4j.watchdogStuckTimeout", "5m");
        assertEquals(Duration.ofMinutes(5), WatchdogConfig.from(Map.of("NCCL4J_WATCHDOG_STUCK_TIMEOUT", "45s"), p)
                .stuckTimeout(), "the property wins");
        assertEquals(Duration.ofMinutes(2), WatchdogConfig.defaultStuckTimeout(Duration.ofMillis(100)));
        assertEquals(Duration.ofMinutes(2), new WatchdogConfig(true, Duration.ofMinutes(10), FailurePolicy.THROW,
                Duration.ofMillis(100), false, WatchdogConfig.from(Map.of(), none).trace(), Duration.ofMinutes(5))
                .stuckTimeout(), "the constructor without it takes the default");

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> WatchdogConfig.from(
                Map.of("NCCL4J_WATCHDOG_STUCK_TIMEOUT", "150ms"), none));
        assertEquals("NCCL4J_WATCHDOG_STUCK_TIMEOUT=150 ms must be at least twice the watchdog's poll interval "
                + "(100 ms), or a healthy watchdog would count as stuck: e.g. 2m (the default: the longer of 2m and 4 "
                + "polls)", e.getMessage());
        Properties small = new Properties();
        small.setProperty("nccl4j.watchdogStuckTimeout", "1s");
        e = assertThrows(IllegalArgumentException.class, () -> WatchdogConfig.from(
                Map.of("NCCL4J_WATCHDOG_POLL", "1s"), small));
        assertTrue(e.getMessage().startsWith("nccl4j.watchdogStuckTimeout=1 s must be at least twice"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> WatchdogConfig.from(
                Map.of("NCCL4J_WATCHDOG_STUCK_TIMEOUT", "soon"), none));
        assertTrue(e.getMessage().startsWith("NCCL4J_WATCHDOG_STUCK_TIMEOUT=soon is not a duration"), e.getMessage());
    }
}
