package org.nccl4j.launch;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.FileAppender;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.slf4j.LoggerFactory;

/**
 * Runs scripts/bench/ports_attack.py (the attack suite of scripts/ports-attack.sh) against ports served in this JVM:
 * a recording relay stands in for the GPU machine's packet capture, a file appender for the job's log.
 */
public final class AttackScript {
    private AttackScript() {
    }

    /** The script, found from the module's directory (tests run in nccl4j-core). */
    public static Path script() {
        Path p = Path.of("..", "scripts", "bench", "ports_attack.py").toAbsolutePath().normalize();
        Assumptions.assumeTrue(Files.exists(p), "no " + p);
        return p;
    }

    /** Skips when there is no python3 here, saying so. */
    public static String python() {
        try {
            Process p = new ProcessBuilder("python3", "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            Assumptions.assumeTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0,
                    "python3 is not usable here: the attack script cannot run");
        } catch (IOException | InterruptedException e) {
            Assumptions.abort("python3 is not installed here: the attack script cannot run (" + e + ")");
        }
        return "python3";
    }

    /**
     * Runs the script's {@code attack} command and returns its rows.
     *
     * @param args the arguments after {@code attack}
     * @return one map per attack (attack, outcome, warn_lines, warns, ...)
     */
    public static List<Map<String, Object>> attack(List<String> args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(python(), script().toString(), "attack"));
        cmd.addAll(args);
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("the attack script ran past 120 s");
        }
        if (p.exitValue() != 0) {
            throw new AssertionError("the attack script exited " + p.exitValue() + ": "
                    + new String(out, StandardCharsets.UTF_8));
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        JsonFactory json = new JsonFactory();
        for (String line : new String(out, StandardCharsets.UTF_8).split("\n")) {
            if (line.startsWith("{")) {
                rows.add(object(json.createParser(line)));
            }
        }
        return rows;
    }

    private static Map<String, Object> object(JsonParser p) throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        p.nextToken();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken t = p.nextToken();
            if (t == JsonToken.START_ARRAY) {
                List<String> items = new ArrayList<>();
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    items.add(p.getText());
                }
                m.put(name, items);
            } else if (t == JsonToken.VALUE_NUMBER_INT) {
                m.put(name, p.getLongValue());
            } else {
                m.put(name, p.getText());
            }
        }
        return m;
    }

    /** Appends a logger's lines to a file as "LEVEL message", as a job's log holds them. */
    public static final class FileLog implements AutoCloseable {
        private final Logger logger;
        private final FileAppender<ILoggingEvent> appender = new FileAppender<>();

        public FileLog(Class<?> of, Path file) {
            LoggerContext ctx = (LoggerContext) LoggerFactory.getILoggerFactory();
            logger = (Logger) LoggerFactory.getLogger(of);
            PatternLayoutEncoder enc = new PatternLayoutEncoder();
            enc.setContext(ctx);
            enc.setPattern("%-5level %logger{0} - %msg%n");
            enc.start();
            appender.setContext(ctx);
            appender.setFile(file.toString());
            appender.setEncoder(enc);
            appender.setImmediateFlush(true);
            appender.start();
            logger.addAppender(appender);
        }

        @Override
        public void close() {
            logger.detachAppender(appender);
            appender.stop();
        }
    }

    /**
     * A TCP relay that records what each client sends to the server in the capture format of the script's
     * {@code sniff} command, as a packet capture on the GPU machine would.
     */
    public static final class Relay implements AutoCloseable {
        private final ServerSocket server;
        private final int target;
        private final PrintWriter capture;
        private volatile boolean closed;

        public Relay(int target, Path captureFile) throws IOException {
            this.target = target;
            this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            this.capture = new PrintWriter(Files.newBufferedWriter(captureFile, StandardCharsets.UTF_8), true);
            capture.println("{\"sniffing\": [" + target + "]}");
            Thread t = new Thread(this::accept, "attack-relay");
            t.setDaemon(true);
            t.start();
        }

        public int port() {
            return server.getLocalPort();
        }

        private void accept() {
            while (!closed) {
                try {
                    Socket c = server.accept();
                    Socket s = new Socket(InetAddress.getLoopbackAddress(), target);
                    pump(c.getInputStream(), s.getOutputStream(), c.getPort(), true, c, s);
                    pump(s.getInputStream(), c.getOutputStream(), c.getPort(), false, c, s);
                } catch (IOException e) {
                    return;
                }
            }
        }

        private void pump(InputStream in, OutputStream out, int clientPort, boolean record, Socket a, Socket b) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[8192];
                long seq = 1000;
                try {
                    int n;
                    while ((n = in.read(buf)) > 0) {
                        if (record) {
                            synchronized (capture) {
                                capture.println("{\"t\": 0, \"src\": \"127.0.0.1\", \"sport\": " + clientPort
                                        + ", \"dst\": \"127.0.0.1\", \"dport\": " + target + ", \"seq\": " + seq
                                        + ", \"data\": \"" + HexFormat.of().formatHex(buf, 0, n) + "\"}");
                            }
                            seq += n;
                        }
                        out.write(buf, 0, n);
                        out.flush();
                    }
                } catch (IOException e) {
                    // one side ended
                }
                try {
                    a.close();
                    b.close();
                } catch (IOException e) {
                    // closing
                }
            }, "attack-relay-pump");
            t.setDaemon(true);
            t.start();
        }

        @Override
        public void close() throws IOException {
            closed = true;
            server.close();
            capture.close();
        }
    }
}
