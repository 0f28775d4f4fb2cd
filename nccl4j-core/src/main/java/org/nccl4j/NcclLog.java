package org.nccl4j;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.launch.LaunchInfo;
import org.nccl4j.launch.NcclEnvironment;
import org.nccl4j.launch.ProcessEnvironment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * NCCL's own log ({@code NCCL_DEBUG}, {@code NCCL_DEBUG_SUBSYS}) in the application's logging: each line NCCL writes
 * is logged through the SLF4J logger {@value #LOGGER} at the matching level, with the rank, host and communicator in
 * the MDC, so that Logback (or any SLF4J binding) formats it like the application's own lines, per process and
 * without interleaving on stdout.
 *
 * <h2>The switch</h2>
 * <table>
 *   <caption>NCCL4J_NCCL_LOG</caption>
 *   <tr><th>value ({@code NCCL4J_NCCL_LOG}, or {@code -Dnccl4j.ncclLog}, which wins)</th><th>what happens</th></tr>
 *   <tr><td>{@code auto} (the default)</td><td>captured when {@code NCCL_DEBUG} is set (to a level above
 *       {@code VERSION}) and {@code NCCL_DEBUG_FILE} is not: a user who sends NCCL's log to a file of their own keeps
 *       it there, untouched</td></tr>
 *   <tr><td>{@code slf4j}</td><td>captured whenever {@code NCCL_DEBUG} is set, unless {@code NCCL_DEBUG_FILE} is set
 *       (a user's file is always respected; a warning says it is not captured)</td></tr>
 *   <tr><td>{@code off}</td><td>NCCL writes where it always does (stdout, or {@code NCCL_DEBUG_FILE})</td></tr>
 * </table>
 * {@code NCCL_DEBUG} itself still chooses how much NCCL says; nccl4j does not set it.
 *
 * <h2>How</h2>
 * NCCL reads {@code NCCL_DEBUG_FILE} once, when it first logs. When the first NCCL call of the process is made
 * through nccl4j ({@link Nccl#library()}), nccl4j points {@code NCCL_DEBUG_FILE} at a file of its own in
 * {@code java.io.tmpdir} (NCCL writes it line-buffered), and a daemon thread ({@code nccl4j-nccl-log}) reads each new
 * line, every 20 ms, and logs it. At exit a shutdown hook reads what is left and deletes the file, so no line is
 * lost and no thread holds the process.
 *
 * <h2>Levels and MDC</h2>
 * {@code WARN} lines at WARN; {@code INFO} and the {@code NCCL version} line at INFO; {@code TRACE} and {@code CALL}
 * at TRACE; {@code ABORT} at ERROR. MDC keys: {@code nccl.rank}, {@code nccl.size} and {@code nccl.comm} (the
 * communicator's name, or its handle) when the line names a communicator nccl4j made ({@code comm 0x...}), else
 * {@code nccl.rank} of the process where the launcher says it; {@code nccl.host}, {@code nccl.pid},
 * {@code nccl.tid} and {@code nccl.device} from NCCL's prefix. A Logback pattern such as
 * {@code %d %-5level [rank %X{nccl.rank}] %logger{0} - %msg%n} shows them.
 */
public final class NcclLog {
    /** The variable of the switch. */
    public static final String VARIABLE = "NCCL4J_NCCL_LOG";
    /** The system property of the switch (wins over the variable). */
    public static final String PROPERTY = "nccl4j.ncclLog";
    /** The logger NCCL's lines go to. */
    public static final String LOGGER = "org.nccl4j.nccl";

    private static final Logger LOG = LoggerFactory.getLogger(LOGGER);
    private static final Logger SELF = LoggerFactory.getLogger(NcclLog.class);
    private static final Map<Long, Comm> COMMS = new ConcurrentHashMap<>();
    private static final long POLL_MILLIS = 20;
    private static volatile Tail tail;
    private static volatile boolean decided;

    /** The switch's values. */
    public enum Mode {
        /** Capture when NCCL_DEBUG is set and NCCL_DEBUG_FILE is not (the default). */
        AUTO,
        /** Capture whenever NCCL_DEBUG is set (a user's NCCL_DEBUG_FILE is still respected). */
        SLF4J,
        /** Never capture. */
        OFF
    }

    /** A communicator nccl4j made, as its lines name it. */
    private record Comm(int rank, int size, String name) {
    }

    /**
     * One line of NCCL's log, parsed.
     *
     * @param level {@code INFO}, {@code WARN}, {@code TRACE}, {@code CALL}, {@code ABORT} or {@code VERSION}
     * @param host the host NCCL names, or null
     * @param pid the process id, or -1
     * @param tid the thread id, or -1
     * @param device the CUDA device, or -1
     * @param where NCCL's source location ({@code file:line (function)}, a trace timestamp), or ""
     * @param message the text after the level
     * @param comm the communicator handle the message names ({@code comm 0x...}), or 0
     */
    public record Line(String level, String host, long pid, long tid, int device, String where, String message,
            long comm) {
    }

    private static final Pattern LINE = Pattern.compile(
            "^(?:.*?)(?<host>[^\\s:\\[\\]]+):(?<pid>\\d+):(?<tid>\\d+) (?:\\[(?<dev>\\d+)\\] )?(?<where>.*?)"
                    + "NCCL (?<level>INFO|WARN|TRACE|CALL|ABORT) (?<msg>.*)$");
    private static final Pattern VERSION = Pattern.compile("^(?:\\[[^\\]]*\\] )?NCCL version (?<msg>.*)$");
    private static final Pattern COMM = Pattern.compile("\\bcomm (0x[0-9a-fA-F]+)");

    private NcclLog() {
    }

    /**
     * Parses one line NCCL wrote.
     *
     * @param raw the line, without its newline
     * @return the line, or null when it is not one of NCCL's (a blank line: NCCL starts each WARN with one)
     */
    public static Line parse(String raw) {
        if (raw == null || raw.isBlank()) {
            return null;
        }
        Matcher m = LINE.matcher(raw);
        if (m.matches()) {
            String msg = m.group("msg");
            return new Line(m.group("level"), m.group("host"), Long.parseLong(m.group("pid")),
                    Long.parseLong(m.group("tid")), m.group("dev") == null ? -1 : Integer.parseInt(m.group("dev")),
                    m.group("where").trim(), msg, commIn(msg));
        }
        Matcher v = VERSION.matcher(raw);
        if (v.matches()) {
            return new Line("VERSION", null, -1, -1, -1, "", "NCCL version " + v.group("msg"), 0);
        }
        return null;
    }

    private static long commIn(String msg) {
        Matcher c = COMM.matcher(msg);
        if (!c.find()) {
            return 0;
        }
        try {
            return Long.parseUnsignedLong(c.group(1).substring(2), 16);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /**
     * The switch from the given variables and properties (the property wins).
     *
     * @param env environment variables
     * @param properties system properties
     * @return the mode
     * @throws IllegalArgumentException naming the variable or property, the value and the accepted values
     */
    public static Mode mode(Map<String, String> env, Properties properties) {
        String name = PROPERTY;
        String v = properties.getProperty(PROPERTY);
        if (v == null || v.isBlank()) {
            name = VARIABLE;
            v = env.get(VARIABLE);
        }
        if (v == null || v.isBlank()) {
            return Mode.AUTO;
        }
        switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "auto":
                return Mode.AUTO;
            case "slf4j":
            case "on":
                return Mode.SLF4J;
            case "off":
                return Mode.OFF;
            default:
                throw new IllegalArgumentException(name + "=" + v + " is not a choice: use auto (the default: NCCL's "
                        + "log goes to SLF4J when NCCL_DEBUG is set and NCCL_DEBUG_FILE is not), slf4j, or off");
        }
    }

    /**
     * Whether NCCL's log is captured with {@code mode} and these variables: NCCL_DEBUG set above VERSION and no
     * NCCL_DEBUG_FILE.
     *
     * @param mode the switch
     * @param env the environment
     * @return whether to capture
     */
    static boolean captures(Mode mode, Map<String, String> env) {
        String debug = env.get(NcclEnvironment.DEBUG);
        boolean verbose = debug != null && !debug.isBlank() && !debug.trim().equalsIgnoreCase("VERSION")
                && !debug.trim().equalsIgnoreCase("NONE");
        String file = env.get(NcclEnvironment.DEBUG_FILE);
        return mode != Mode.OFF && verbose && (file == null || file.isBlank());
    }

    /**
     * Called by {@link Nccl#library()} before NCCL first logs: decides, and where NCCL's log is captured points
     * {@code NCCL_DEBUG_FILE} at nccl4j's file and starts the reader. Once per process.
     */
    static void install() {
        if (!decided) {
            decide();
        }
    }

    private static synchronized void decide() {
        if (decided) {
            return;
        }
        ProcessEnvironment live = ProcessEnvironment.liveOrJvmCopy();
        Map<String, String> env = new java.util.HashMap<>();
        for (String n : new String[] {VARIABLE, NcclEnvironment.DEBUG, NcclEnvironment.DEBUG_FILE}) {
            String v = live.get(n);
            if (v != null) {
                env.put(n, v);
            }
        }
        Mode mode = mode(env, System.getProperties());   // a bad value is refused at every call
        decided = true;
        if (!captures(mode, env)) {
            if (mode == Mode.SLF4J && env.get(NcclEnvironment.DEBUG_FILE) != null) {
                SELF.warn("nccl4j: {}=slf4j, but NCCL_DEBUG_FILE={} is set: NCCL's log stays in that file",
                        VARIABLE, env.get(NcclEnvironment.DEBUG_FILE));
            }
            return;
        }
        try {
            Path file = Files.createTempFile("nccl4j-nccl-" + ProcessHandle.current().pid() + "-", ".log");
            if (NcclNative.setenv(NcclEnvironment.DEBUG_FILE, file.toString(), 1) != 0) {
                Files.deleteIfExists(file);
                SELF.warn("nccl4j: could not set NCCL_DEBUG_FILE: NCCL's log is not captured");
                return;
            }
            start(file);
            SELF.debug("nccl4j: NCCL's log (NCCL_DEBUG={}) goes to the logger {} through {}", env.get(
                    NcclEnvironment.DEBUG), LOGGER, file);
        } catch (IOException | LinkageError e) {
            SELF.warn("nccl4j: NCCL's log is not captured: {}", e.toString());
        }
    }

    /** Starts reading {@code file} as NCCL writes it (for tests: any file written as NCCL would). */
    static Tail start(Path file) {
        Tail t = new Tail(file);
        tail = t;
        Thread reader = new Thread(t::run, "nccl4j-nccl-log");
        reader.setDaemon(true);
        reader.start();
        Runtime.getRuntime().addShutdownHook(new Thread(t::finish, "nccl4j-nccl-log-drain"));
        return t;
    }

    /**
     * Whether NCCL's log is captured in this process.
     *
     * @return true once {@link Nccl#library()} set the capture up
     */
    public static boolean capturing() {
        return tail != null;
    }

    /** Logs what NCCL has written so far, now (before the process halts without shutdown hooks). */
    static void flush() {
        Tail t = tail;
        if (t != null) {
            t.drain();
        }
    }

    /** A communicator exists: its lines ({@code comm 0x...}) get its rank, size and name. */
    static void register(long handle, int rank, int size, String name) {
        COMMS.put(handle, new Comm(rank, size, name));
    }

    /** The communicator is gone. */
    static void unregister(long handle) {
        COMMS.remove(handle);
    }

    /** Logs one parsed line with its MDC; {@code processRank} is the launcher's rank or -1. */
    static void log(Line line, int processRank) {
        Map<String, String> before = MDC.getCopyOfContextMap();
        try {
            Comm c = line.comm() == 0 ? null : COMMS.get(line.comm());
            if (c != null) {
                MDC.put("nccl.rank", Integer.toString(c.rank()));
                MDC.put("nccl.size", Integer.toString(c.size()));
                MDC.put("nccl.comm", c.name() != null ? c.name() : "0x" + Long.toHexString(line.comm()));
            } else {
                if (processRank >= 0) {
                    MDC.put("nccl.rank", Integer.toString(processRank));
                }
                if (line.comm() != 0) {
                    MDC.put("nccl.comm", "0x" + Long.toHexString(line.comm()));
                }
            }
            if (line.host() != null) {
                MDC.put("nccl.host", line.host());
                MDC.put("nccl.pid", Long.toString(line.pid()));
                MDC.put("nccl.tid", Long.toString(line.tid()));
            }
            if (line.device() >= 0) {
                MDC.put("nccl.device", Integer.toString(line.device()));
            }
            String text = line.where().isEmpty() ? line.message() : line.message() + " [" + line.where() + "]";
            switch (line.level()) {
                case "WARN":
                    LOG.warn(text);
                    break;
                case "ABORT":
                    LOG.error(text);
                    break;
                case "TRACE":
                case "CALL":
                    LOG.trace(text);
                    break;
                default:
                    LOG.info(text);
                    break;
            }
        } finally {
            if (before == null) {
                MDC.clear();
            } else {
                MDC.setContextMap(before);
            }
        }
    }

    /** The rank the launcher gave this process, or -1. */
    private static int processRank() {
        try {
            LaunchInfo l = LaunchInfo.detect(System.getenv(), null);   // the rank only: no need to ask CUDA
            return l.worldSize() > 1 ? l.rank() : -1;
        } catch (RuntimeException e) {
            return -1;
        }
    }

    /** Reads NCCL's file as it grows and logs each whole line. */
    static final class Tail {
        private final Path file;
        private final StringBuilder partial = new StringBuilder();
        private final Object lock = new Object();
        private long offset;
        private volatile boolean done;
        private int rank = Integer.MIN_VALUE;

        Tail(Path file) {
            this.file = file;
        }

        void run() {
            while (!done) {
                drain();
                try {
                    Thread.sleep(POLL_MILLIS);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        /** Reads and logs what NCCL has written since the last call; the lines logged. */
        int drain() {
            synchronized (lock) {
                int n = 0;
                try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
                    long length = f.length();
                    if (length < offset) {
                        offset = 0;   // NCCL reopened it ("w")
                    }
                    while (offset < length) {
                        byte[] chunk = new byte[(int) Math.min(1 << 16, length - offset)];
                        f.seek(offset);
                        f.readFully(chunk);
                        offset += chunk.length;
                        partial.append(new String(chunk, StandardCharsets.UTF_8));
                        int nl;
                        while ((nl = partial.indexOf("\n")) >= 0) {
                            n += emit(partial.substring(0, nl));
                            partial.delete(0, nl + 1);
                        }
                    }
                } catch (IOException e) {
                    // not there yet, or deleted at exit
                }
                return n;
            }
        }

        private int emit(String raw) {
            Line line = parse(raw);
            if (line == null) {
                if (!raw.isBlank()) {
                    LOG.info(raw);   // a line of NCCL's that is not in its usual form: kept as it is
                    return 1;
                }
                return 0;
            }
            if (rank == Integer.MIN_VALUE) {
                rank = processRank();
            }
            log(line, rank);
            return 1;
        }

        /** At exit: the rest, a last partial line too, then the file goes. */
        void finish() {
            done = true;
            synchronized (lock) {
                drain();
                if (partial.length() > 0) {
                    emit(partial.toString());
                    partial.setLength(0);
                }
                try {
                    Files.deleteIfExists(file);
                } catch (IOException e) {
                    // left in the temporary directory
                }
            }
        }
    }
}
