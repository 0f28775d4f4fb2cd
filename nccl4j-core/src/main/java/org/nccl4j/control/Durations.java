package org.nccl4j.control;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Durations as users write them in variables and properties ({@code 30s}, {@code 10m}, {@code 1h}), and as nccl4j
 * prints them.
 */
public final class Durations {
    /** The accepted forms, for error messages. */
    public static final String FORMS = "a whole number with a unit: 500ms, 30s, 10m, 1h (or ISO-8601 such as PT10M)";

    private static final Pattern SIMPLE = Pattern.compile("([0-9]{1,9})\\s*(ms|s|m|min|h)");

    private Durations() {
    }

    /**
     * Parses {@code value}, the value of {@code name}.
     *
     * @param name the variable or property, for the message
     * @param value what it was set to
     * @return the duration, longer than zero
     * @throws IllegalArgumentException naming the variable, the value and the accepted forms when it is not one
     *         of them, or not positive
     */
    public static Duration parse(String name, String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        Duration d = null;
        Matcher m = SIMPLE.matcher(v);
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            switch (m.group(2)) {
                case "ms":
                    d = Duration.ofMillis(n);
                    break;
                case "s":
                    d = Duration.ofSeconds(n);
                    break;
                case "h":
                    d = Duration.ofHours(n);
                    break;
                default:
                    d = Duration.ofMinutes(n);
                    break;
            }
        } else if (v.startsWith("pt") || v.startsWith("p")) {
            try {
                d = Duration.parse(value.trim());
            } catch (DateTimeParseException e) {
                d = null;
            }
        }
        if (d == null) {
            throw new IllegalArgumentException(name + "=" + value + " is not a duration: use " + FORMS);
        }
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + "=" + value + " must be longer than zero: use " + FORMS);
        }
        return d;
    }

    /**
     * A duration as nccl4j prints it.
     *
     * @param d the duration
     * @return e.g. "10 s", "1.5 s", "250 ms", "10 min", "2 h"
     */
    public static String format(Duration d) {
        long ms = d.toMillis();
        if (ms < 1000) {
            return ms + " ms";
        }
        if (ms % 3_600_000 == 0) {
            return ms / 3_600_000 + " h";
        }
        if (ms % 60_000 == 0) {
            return ms / 60_000 + " min";
        }
        if (ms < 600_000) {
            return ms % 1000 == 0 ? ms / 1000 + " s" : String.format(Locale.ROOT, "%.1f s", ms / 1000.0);
        }
        return ms / 1000 + " s";
    }
}
