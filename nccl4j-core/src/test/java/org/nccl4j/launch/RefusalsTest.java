package org.nccl4j.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** One WARN line per burst of refusals, a reminder in a long one, and a flood's waiting connections at DEBUG. */
class RefusalsTest {
    private final AtomicLong clock = new AtomicLong(-5_000_000_000L);   // nanoTime may be negative
    private Logger logger;
    private ListAppender<ILoggingEvent> appender;
    private Refusals refusals;

    @BeforeEach
    void capture() {
        logger = (Logger) LoggerFactory.getLogger("org.nccl4j.launch.RefusalsTest.port");
        logger.setLevel(Level.DEBUG);
        appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        refusals = new Refusals(logger, clock::get);
    }

    @AfterEach
    void release() {
        logger.detachAppender(appender);
    }

    private List<String> at(Level level) {
        return appender.list.stream().filter(e -> e.getLevel() == level).map(ILoggingEvent::getFormattedMessage)
                .toList();
    }

    private void advanceMillis(long ms) {
        clock.addAndGet(TimeUnit.MILLISECONDS.toNanos(ms));
    }

    @Test
    void theFirstOfABurstIsAWarnLineTheRestDebugAndTheNextBurstCountsThem() {
        refusals.refused("refused a from 10.0.0.9:1");
        for (int i = 2; i <= 4; i++) {
            advanceMillis(Refusals.QUIET_MILLIS - 1);   // each within the quiet time of the one before
            refusals.refused("refused a from 10.0.0.9:" + i);
        }
        assertEquals(List.of("refused a from 10.0.0.9:1"), at(Level.WARN));
        assertEquals(List.of("refused a from 10.0.0.9:2", "refused a from 10.0.0.9:3", "refused a from 10.0.0.9:4"),
                at(Level.DEBUG));
        advanceMillis(Refusals.QUIET_MILLIS);
        refusals.refused("refused b from 10.0.0.8:1");
        assertEquals(List.of("refused a from 10.0.0.9:1",
                "refused b from 10.0.0.8:1 (3 more refused since the last such line, said at DEBUG)"), at(Level.WARN));
        advanceMillis(Refusals.QUIET_MILLIS);
        refusals.refused("refused c {} braces stay");
        assertEquals("refused c {} braces stay", at(Level.WARN).get(2));
    }

    @Test
    void anUnbrokenBurstIsSaidAgainAfterTheReminderTime() {
        long steps = Refusals.REMIND_MILLIS / 1000;
        for (long i = 0; i <= steps; i++) {
            refusals.refused("refused " + i);
            advanceMillis(1000);
        }
        assertEquals(List.of("refused 0", "refused " + steps + " (" + (steps - 1) + " more refused since the last "
                + "such line, said at DEBUG)"), at(Level.WARN));
    }

    @Test
    void aConnectionThatWaitedDuringAFloodIsDebugOneBeforeOrAfterItIsSaid() {
        long before = refusals.now();
        advanceMillis(100);
        refusals.refused("refused before: no hello within 100 ms", before);   // no flood yet
        long early = refusals.now();
        advanceMillis(10);
        assertTrue(refusals.flooded(), "the first close at accept begins a flood");   // t = 0
        advanceMillis(3000);
        refusals.refused("refused early: no hello within 3010 ms", early);   // waiting when the flood began
        advanceMillis(Refusals.FLOOD_GAP_MILLIS - 3000);
        assertFalse(refusals.flooded(), "a close within the gap after the last one is the same flood");   // t = gap
        advanceMillis(Refusals.FLOOD_GAP_MILLIS - 1);
        long during = refusals.now();   // accepted while the flood is on: within the gap after its last close
        advanceMillis(4000);
        refusals.refused("refused during: left before its hello", during);
        assertEquals(List.of("refused before: no hello within 100 ms"), at(Level.WARN));
        assertEquals(List.of("refused early: no hello within 3010 ms (part of the flood said above)",
                "refused during: left before its hello (part of the flood said above)"), at(Level.DEBUG));
        long after = refusals.now();   // the flood ended a gap after its last close at accept
        advanceMillis(5000);
        refusals.refused("refused after: no hello within 5000 ms", after);
        assertEquals("refused after: no hello within 5000 ms", at(Level.WARN).get(1));
        assertTrue(refusals.flooded(), "a new flood");   // a connection that waited across it is part of it
        advanceMillis(1000);
        refusals.refused("refused across: no hello within 6000 ms", after);
        assertEquals(2, at(Level.WARN).size(), at(Level.WARN).toString());
    }

    @Test
    void everyRefusalAtWarnWithNoQuietTimeAndBadArgumentsAreNamed() {
        refusals.quietMillis(0);
        refusals.refused("one");
        refusals.refused("two");
        assertEquals(List.of("one", "two"), at(Level.WARN));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> refusals.quietMillis(-1));
        assertTrue(e.getMessage().contains("millis must be at least 0, got -1"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new Refusals(null));
        assertTrue(e.getMessage().startsWith("log must not be null"), e.getMessage());
    }
}
