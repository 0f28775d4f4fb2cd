package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A resource that becomes unreachable unclosed is reported (a warning naming it and where it was made) and
 * leaves the open list, and is not freed. Depends on the garbage collector, so it polls System.gc() for a few
 * seconds and is skipped, with the reason, if the buffer was not collected in that time.
 */
class LeakWarningTest {
    private FakeCuda cuda;
    private Logger logger;
    private ListAppender<ILoggingEvent> appender;

    @BeforeEach
    void install() {
        cuda = FakeCuda.install(2);
        logger = (Logger) LoggerFactory.getLogger(Leaks.class);
        appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
    }

    @AfterEach
    void uninstall() {
        logger.detachAppender(appender);
        FakeCuda.uninstall();
    }

    private static final String WHAT = "DeviceBuffer of 54321 bytes on device 1 (CUDA_MALLOC)";

    /** Allocates and drops the buffer in a frame of its own, so that nothing on the test's stack holds it. */
    private static long allocateAndForget() {
        return DeviceBuffer.allocate(1, 54321).address();
    }

    private boolean warned() {
        synchronized (appender) {
            return appender.list.stream().anyMatch(e -> e.getFormattedMessage().contains(WHAT));
        }
    }

    @Test
    void anUnreachableUnclosedBufferIsReportedNotFreed() throws InterruptedException {
        long address = allocateAndForget();
        assertTrue(Nccl.openResources().stream().anyMatch(s -> s.startsWith(WHAT)), "open until collected");
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!warned() && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
        assumeTrue(warned(), "the garbage collector did not collect the dropped buffer within 10 s");
        ILoggingEvent e;
        synchronized (appender) {
            e = appender.list.stream().filter(x -> x.getFormattedMessage().contains(WHAT)).findFirst().orElseThrow();
        }
        assertEquals(Level.WARN, e.getLevel());
        assertEquals("nccl4j: " + WHAT + " was never closed and is now unreachable; its native resources are leaked "
                + "(close it, or use try-with-resources)", e.getFormattedMessage());
        assertTrue(e.getThrowableProxy() != null && e.getThrowableProxy().getMessage().equals("allocated here"),
                "with the stack of the allocation");
        assertTrue(Nccl.openResources().stream().noneMatch(s -> s.startsWith(WHAT)), "no longer open");
        assertEquals(List.of(), cuda.calls("free"), "reported, not freed");
        assertTrue(cuda.allocation(address) != null);
    }

    @Test
    void aClosedBufferIsNeverReported() throws InterruptedException {
        DeviceBuffer.allocate(1, 54322).close();
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(20);
        }
        synchronized (appender) {
            assertTrue(appender.list.stream().noneMatch(e -> e.getFormattedMessage().contains("54322 bytes")),
                    "closed resources are not leaks: " + appender.list);
        }
    }
}
