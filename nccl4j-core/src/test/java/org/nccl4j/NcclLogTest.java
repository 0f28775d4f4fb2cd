package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/** NCCL's log lines parsed, levelled and logged through SLF4J with the MDC; the switch and its refusals. */
class NcclLogTest {
    private ListAppender<ILoggingEvent> appender;
    private ch.qos.logback.classic.Logger logger;
    private Level before;

    @BeforeEach
    void listen() {
        logger = (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(NcclLog.LOGGER);
        before = logger.getLevel();
        logger.setLevel(Level.TRACE);
        appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
    }

    @AfterEach
    void stop() {
        logger.detachAppender(appender);
        logger.setLevel(before);
    }

    // ---------------------------------------------------------------- the parser, on NCCL's line forms

    @Test
    void anInfoLineNamingACommunicator() {
        NcclLog.Line l = NcclLog.parse("gpu-node7:4711:4725 [0] NCCL INFO comm 0x55d1c0a3b2f0 rank 1 nRanks 3 "
                + "nNodes 3 localRanks 1 localRank 0 MNNVL 0");
        assertEquals(new NcclLog.Line("INFO", "gpu-node7", 4711, 4725, 0, "", "comm 0x55d1c0a3b2f0 rank 1 nRanks 3 "
                + "nNodes 3 localRanks 1 localRank 0 MNNVL 0", 0x55d1c0a3b2f0L), l);
    }

    @Test
    void warnLinesWithTheirSourceLocationAndTimestamp() {
        NcclLog.Line w = NcclLog.parse("[2026-11-25 00:34:39] vm:3237:3301 [0] transport/net_socket.cc:540 NCCL WARN "
                + "socketProgress: Connection closed by remote peer localhost<40468>");
        assertEquals("WARN", w.level());
        assertEquals("vm", w.host());
        assertEquals(3237, w.pid());
        assertEquals(3301, w.tid());
        assertEquals(0, w.device());
        assertEquals("transport/net_socket.cc:540", w.where());
        assertEquals("socketProgress: Connection closed by remote peer localhost<40468>", w.message());
        NcclLog.Line f = NcclLog.parse("vm:3237:3301 [1] misc/socket.cc:50 (ncclSocketProgress) NCCL WARN Net : "
                + "Connection closed");
        assertEquals("misc/socket.cc:50 (ncclSocketProgress)", f.where());
        assertEquals(1, f.device());
        assertEquals("Net : Connection closed", f.message());
    }

    @Test
    void traceCallVersionAndAbortLines() {
        NcclLog.Line t = NcclLog.parse("vm:10:11 [0] 12.345678 ncclCommInitRankFunc:1525 NCCL TRACE comm 0x1f0 "
                + "rank 0 nranks 2");
        assertEquals("TRACE", t.level());
        assertEquals("12.345678 ncclCommInitRankFunc:1525", t.where());
        assertEquals(0x1f0, t.comm());
        NcclLog.Line c = NcclLog.parse("vm:10:11 NCCL CALL ncclAllReduce(0x7f00,0x7f00,1024,7,0,0x1f0,0x5)");
        assertEquals("CALL", c.level());
        assertEquals(-1, c.device());
        assertEquals("ncclAllReduce(0x7f00,0x7f00,1024,7,0,0x1f0,0x5)", c.message());
        NcclLog.Line v = NcclLog.parse("NCCL version 2.28.3+cuda13.0");
        assertEquals(new NcclLog.Line("VERSION", null, -1, -1, -1, "", "NCCL version 2.28.3+cuda13.0", 0), v);
        assertEquals("ABORT", NcclLog.parse("vm:10:11 [0] NCCL ABORT comm 0x1f0 aborted").level());
        assertNull(NcclLog.parse(""), "the blank line NCCL puts before each WARN");
        assertNull(NcclLog.parse("   "));
        assertNull(NcclLog.parse("some program's own output"));
    }

    // ---------------------------------------------------------------- the switch

    @Test
    void theSwitchItsDefaultAndItsRefusals() {
        Properties none = new Properties();
        assertEquals(NcclLog.Mode.AUTO, NcclLog.mode(Map.of(), none));
        assertEquals(NcclLog.Mode.OFF, NcclLog.mode(Map.of(NcclLog.VARIABLE, "off"), none));
        assertEquals(NcclLog.Mode.SLF4J, NcclLog.mode(Map.of(NcclLog.VARIABLE, "SLF4J"), none));
        Properties p = new Properties();
        p.setProperty(NcclLog.PROPERTY, "off");
        assertEquals(NcclLog.Mode.OFF, NcclLog.mode(Map.of(NcclLog.VARIABLE, "slf4j"), p), "the property wins");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> NcclLog.mode(Map.of(NcclLog.VARIABLE, "logback"), none));
        assertEquals("NCCL4J_NCCL_LOG=logback is not a choice: use auto (the default: NCCL's log goes to SLF4J when "
                + "NCCL_DEBUG is set and NCCL_DEBUG_FILE is not), slf4j, or off", e.getMessage());
    }

    @Test
    void capturedOnlyWhenNcclSpeaksAndNoFileOfTheUsersIsSet() {
        assertFalse(NcclLog.captures(NcclLog.Mode.AUTO, Map.of()), "NCCL_DEBUG unset: NCCL says nothing");
        assertTrue(NcclLog.captures(NcclLog.Mode.AUTO, Map.of("NCCL_DEBUG", "INFO")));
        assertTrue(NcclLog.captures(NcclLog.Mode.SLF4J, Map.of("NCCL_DEBUG", "WARN")));
        assertFalse(NcclLog.captures(NcclLog.Mode.AUTO, Map.of("NCCL_DEBUG", "VERSION")));
        assertFalse(NcclLog.captures(NcclLog.Mode.AUTO, Map.of("NCCL_DEBUG", "INFO", "NCCL_DEBUG_FILE",
                "/tmp/nccl.%h.%p")), "the user's file is respected");
        assertFalse(NcclLog.captures(NcclLog.Mode.SLF4J, Map.of("NCCL_DEBUG", "INFO", "NCCL_DEBUG_FILE", "x")));
        assertFalse(NcclLog.captures(NcclLog.Mode.OFF, Map.of("NCCL_DEBUG", "INFO")));
    }

    // ---------------------------------------------------------------- end to end: a file written as NCCL does

    @Test
    void linesWrittenAsNcclWritesThemArriveAtTheirLevelsWithTheRankInTheMdc(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("nccl.log");
        Files.createFile(file);
        NcclLog.Tail tail = new NcclLog.Tail(file);
        NcclLog.register(0x55d1c0a3b2f0L, 2, 4, "dp");
        try {
            append(file, "NCCL version 2.28.3+cuda13.0\n"
                    + "vm:77:78 [0] NCCL INFO comm 0x55d1c0a3b2f0 rank 2 nRanks 4 nNodes 4 localRanks 1 localRank 0\n"
                    + "\nvm:77:79 [0] transport/net_socket.cc:540 NCCL WARN socketProgress: Connection closed\n"
                    + "vm:77:78 [0] NCCL INFO Channel 00/02 : 0 1 2 3");   // the last line is not finished yet
            assertEquals(3, tail.drain());
            append(file, "\nvm:77:78 [0] 1.5 f:1 NCCL TRACE comm 0xabc in trace\n");
            assertEquals(2, tail.drain(), "the line finished, and one more");
            List<ILoggingEvent> ev = appender.list;
            assertEquals(5, ev.size(), ev.toString());
            assertEquals(Level.INFO, ev.get(0).getLevel());
            assertEquals("NCCL version 2.28.3+cuda13.0", ev.get(0).getFormattedMessage());
            assertEquals(Level.INFO, ev.get(1).getLevel());
            Map<String, String> mdc = ev.get(1).getMDCPropertyMap();
            assertEquals("2", mdc.get("nccl.rank"));
            assertEquals("4", mdc.get("nccl.size"));
            assertEquals("dp", mdc.get("nccl.comm"));
            assertEquals("vm", mdc.get("nccl.host"));
            assertEquals("77", mdc.get("nccl.pid"));
            assertEquals("78", mdc.get("nccl.tid"));
            assertEquals("0", mdc.get("nccl.device"));
            assertEquals(Level.WARN, ev.get(2).getLevel());
            assertEquals("socketProgress: Connection closed [transport/net_socket.cc:540]",
                    ev.get(2).getFormattedMessage());
            assertEquals("Channel 00/02 : 0 1 2 3", ev.get(3).getFormattedMessage());
            assertEquals(Level.TRACE, ev.get(4).getLevel());
            assertEquals("0xabc", ev.get(4).getMDCPropertyMap().get("nccl.comm"), "a communicator not nccl4j's");
            assertNull(ev.get(4).getMDCPropertyMap().get("nccl.size"));
            assertNull(org.slf4j.MDC.get("nccl.rank"), "the caller's MDC is left as it was");
            append(file, "vm:77:78 [0] NCCL INFO the last words");   // no newline: exit drains it
            tail.finish();
            assertEquals("the last words", appender.list.get(5).getFormattedMessage());
            assertFalse(Files.exists(file), "the file goes at exit");
        } finally {
            NcclLog.unregister(0x55d1c0a3b2f0L);
        }
    }

    private static void append(Path file, String text) throws Exception {
        Files.writeString(file, text, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
    }
}
