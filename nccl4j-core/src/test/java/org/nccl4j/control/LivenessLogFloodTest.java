package org.nccl4j.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.StubFixture;
import org.slf4j.LoggerFactory;

/**
 * Unreadable lines from a rank that said hello go through the one-line-per-burst logging of refusals: 2,000 malformed
 * heartbeats in a burst are one WARN line (the rest at DEBUG, counted in the next WARN), and the rank stays joined.
 */
class LivenessLogFloodTest {
    private Logger logger;
    private ListAppender<ILoggingEvent> appender;
    private Level level;

    @BeforeEach
    void capture() {
        logger = (Logger) LoggerFactory.getLogger(Liveness.class);
        level = logger.getLevel();
        logger.setLevel(Level.DEBUG);
        appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
    }

    @AfterEach
    void release() {
        logger.detachAppender(appender);
        logger.setLevel(level);
    }

    private List<ILoggingEvent> unreadable() {
        synchronized (appender) {
            return appender.list.stream().filter(e -> e.getFormattedMessage().contains("it cannot read")).toList();
        }
    }

    @Test
    void aFloodOfUnreadableLinesIsOneWarnLineAndTheRankStaysJoined() throws Exception {
        int port = StubFixture.freePort();
        Liveness rank0 = Liveness.serve(port, Liveness.DEFAULT_TIMEOUT, 2, null, InetAddress.getLoopbackAddress());
        try (Socket s = new Socket("127.0.0.1", port)) {
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
            OutputStream out = s.getOutputStream();
            assertEquals(LivenessWire.OPEN, in.readLine());
            out.write("HELLO 1 flooder 42\n".getBytes(StandardCharsets.UTF_8));
            assertTrue(in.readLine().startsWith("JOINED 1 flooder 42"));
            StringBuilder flood = new StringBuilder();
            for (int i = 0; i < 2000; i++) {
                flood.append("PING not-a-generation ").append(i).append('\n');
            }
            out.write(flood.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            StubFixture.within(10_000, () -> unreadable().size() == 2000 ? true : null, "every line read");
            List<ILoggingEvent> lines = unreadable();
            assertEquals(1, lines.stream().filter(e -> e.getLevel() == Level.WARN).count(), "one WARN for the burst");
            assertEquals(1999, lines.stream().filter(e -> e.getLevel() == Level.DEBUG).count());
            assertEquals("nccl4j liveness: a line from rank 1 it cannot read: PING not-a-generation 0; the job goes on",
                    lines.get(0).getFormattedMessage());
            assertEquals(java.util.Set.of(1), rank0.roster().keySet(), "rank 1 stays joined");
            assertTrue(rank0.lost().isEmpty(), "nothing lost");
        } finally {
            rank0.close();
        }
    }
}
