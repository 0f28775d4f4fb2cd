package org.nccl4j.examples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * A Chrome/Perfetto trace in the JSON array form: complete events ({@code "ph":"X"}) with a name, a start
 * {@code ts} and a duration {@code dur} in microseconds, a process id (the rank) and a thread name as
 * {@code tid} ({@code "compute"}, {@code "nccl"}), each with an optional step number in {@code args}; and one
 * {@code process_name} metadata event. Open the file in ui.perfetto.dev or chrome://tracing.
 */
final class ChromeTrace {
    private final StringBuilder json = new StringBuilder(1 << 16).append('[');
    private final int pid;
    private int events;

    /**
     * @param pid the process id of every event (the rank)
     * @param processName the name shown for that process
     */
    ChromeTrace(int pid, String processName) {
        this.pid = pid;
        json.append("\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":").append(pid)
                .append(",\"args\":{\"name\":");
        string(processName);
        json.append("}}");
    }

    /**
     * Adds a complete event.
     *
     * @param name the event's name
     * @param tid the track (thread) name
     * @param startMs start, in ms from the trace's origin
     * @param endMs end, in ms from the trace's origin
     * @param step the training step (1-based), or a negative number for none
     * @return this
     */
    ChromeTrace complete(String name, String tid, double startMs, double endMs, int step) {
        json.append(",\n{\"name\":");
        string(name);
        json.append(",\"ph\":\"X\",\"ts\":").append(micros(startMs))
                .append(",\"dur\":").append(micros(Math.max(0, endMs - startMs)))
                .append(",\"pid\":").append(pid).append(",\"tid\":");
        string(tid);
        if (step >= 0) {
            json.append(",\"args\":{\"step\":").append(step).append('}');
        }
        json.append('}');
        events++;
        return this;
    }

    /** @return the number of complete events added */
    int events() {
        return events;
    }

    /** @return the JSON text */
    String toJson() {
        return json + "\n]\n";
    }

    /**
     * @param file where to write the JSON
     * @throws IOException when it cannot be written
     */
    void write(Path file) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(file, toJson(), StandardCharsets.UTF_8);
    }

    /** Milliseconds as microseconds with 3 decimals (ns), always with a dot. */
    static String micros(double ms) {
        if (!Double.isFinite(ms)) {
            throw new IllegalArgumentException("time must be finite, got " + ms);
        }
        return String.format(Locale.ROOT, "%.3f", ms * 1000.0);
    }

    private void string(String s) {
        json.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> json.append("\\\"");
                case '\\' -> json.append("\\\\");
                case '\n' -> json.append("\\n");
                case '\r' -> json.append("\\r");
                case '\t' -> json.append("\\t");
                default -> {
                    if (c < 0x20) {
                        json.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        json.append(c);
                    }
                }
            }
        }
        json.append('"');
    }
}
