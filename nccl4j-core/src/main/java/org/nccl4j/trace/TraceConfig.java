package org.nccl4j.trace;

import java.math.BigInteger;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;

/**
 * The flight recorder's settings from the environment:
 * <ul>
 *   <li>{@code NCCL4J_TRACE_BUFFER}: how many operations each communicator's ring holds, a whole number from
 *       {@value FlightRecorder#MIN_CAPACITY} to {@value FlightRecorder#MAX_CAPACITY} (default
 *       {@value #DEFAULT_BUFFER});</li>
 *   <li>{@code NCCL4J_TRACE_DIR}: the directory the dumps go to (default {@link #defaultDirectory()}:
 *       {@code nccl4j-trace} in {@code java.io.tmpdir}, e.g. {@code /tmp/nccl4j-trace}).</li>
 * </ul>
 * A variable that is unset, empty or blank takes its default; any other invalid value is refused with a message
 * naming the variable, the value and the accepted forms.
 *
 * @param bufferSize the capacity of each communicator's {@link FlightRecorder}
 * @param directory where {@link TraceDump#write(Path)} puts the dumps
 */
public record TraceConfig(int bufferSize, Path directory) {
    /** The variable that sets {@link #bufferSize()}. */
    public static final String BUFFER = FlightRecorder.CAPACITY_VARIABLE;
    /** The variable that sets {@link #directory()}. */
    public static final String DIR = "NCCL4J_TRACE_DIR";
    /** The default {@link #bufferSize()}. */
    public static final int DEFAULT_BUFFER = 2000;

    /**
     * Checks the components.
     *
     * @param bufferSize see the record's description
     * @param directory see the record's description
     * @throws IllegalArgumentException when bufferSize is out of the range {@link FlightRecorder} accepts
     * @throws NullPointerException when directory is null
     */
    public TraceConfig {
        if (bufferSize < FlightRecorder.MIN_CAPACITY || bufferSize > FlightRecorder.MAX_CAPACITY) {
            throw new IllegalArgumentException("bufferSize must be from " + FlightRecorder.MIN_CAPACITY + " to "
                    + FlightRecorder.MAX_CAPACITY + ", got " + bufferSize);
        }
        Objects.requireNonNull(directory, "directory");
    }

    /**
     * The settings from this process's environment ({@link System#getenv()}).
     *
     * @return the settings
     * @throws IllegalArgumentException when a variable has an invalid value
     */
    public static TraceConfig fromEnvironment() {
        return from(System.getenv());
    }

    /**
     * The settings from an environment.
     *
     * @param env variables by name
     * @return the settings
     * @throws IllegalArgumentException naming the variable, its value and the accepted forms when
     *         {@code NCCL4J_TRACE_BUFFER} is not a whole number from 1 to 10000000 or {@code NCCL4J_TRACE_DIR} is
     *         not a path
     */
    public static TraceConfig from(Map<String, String> env) {
        return new TraceConfig(bufferSize(env.get(BUFFER)), directory(env.get(DIR)));
    }

    /**
     * The directory the dumps go to when {@code NCCL4J_TRACE_DIR} is not set.
     *
     * @return {@code nccl4j-trace} in the directory of the system property {@code java.io.tmpdir}
     */
    public static Path defaultDirectory() {
        return Path.of(System.getProperty("java.io.tmpdir"), "nccl4j-trace");
    }

    private static int bufferSize(String value) {
        if (value == null || value.isBlank()) {
            return DEFAULT_BUFFER;
        }
        String v = value.strip();
        String accepted = ": give a whole number of operations from " + FlightRecorder.MIN_CAPACITY + " to "
                + FlightRecorder.MAX_CAPACITY + " (default " + DEFAULT_BUFFER + "), e.g. " + BUFFER + "=5000";
        if (!v.matches("[+-]?[0-9]+")) {
            throw new IllegalArgumentException(BUFFER + "=" + value + " is not a whole number" + accepted);
        }
        BigInteger n = new BigInteger(v);
        if (n.compareTo(BigInteger.valueOf(FlightRecorder.MIN_CAPACITY)) < 0
                || n.compareTo(BigInteger.valueOf(FlightRecorder.MAX_CAPACITY)) > 0) {
            throw new IllegalArgumentException(BUFFER + "=" + value + " is out of range" + accepted);
        }
        return n.intValueExact();
    }

    private static Path directory(String value) {
        if (value == null || value.isBlank()) {
            return defaultDirectory();
        }
        try {
            return Path.of(value);
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException(DIR + "=" + value + " is not a path (" + e.getReason()
                    + "): give a directory, absolute or relative to the working directory; it is created when a dump is"
                    + " written", e);
        }
    }
}
