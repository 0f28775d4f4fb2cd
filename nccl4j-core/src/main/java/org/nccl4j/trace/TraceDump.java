package org.nccl4j.trace;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * One rank's flight-recorder dump: who wrote it, why, the entries of its ring and, when taken, the Java stacks of
 * the threads that issued its operations ({@link ThreadStack}); written as one JSON file per rank
 * ({@link #write(Path)}) and read back ({@link #read(Path)}). The format is described in the package documentation
 * ({@link org.nccl4j.trace}).
 *
 * @param host the host name of the process that wrote the dump
 * @param pid its process id
 * @param rank the communicator rank, {@code 0 <= rank < size}
 * @param size the communicator's number of ranks, {@code >= 1}
 * @param communicator the communicator's name ({@code CommConfig}'s commName), or null
 * @param ncclVersion the loaded NCCL's version, e.g. {@code "2.28.3"}
 * @param dumpedAt when the dump was taken
 * @param reason why: {@link #REASON_TIMEOUT}, {@link #REASON_REMOTE_ERROR}, {@link #REASON_ERROR},
 *        {@link #REASON_ON_DEMAND}, {@link #REASON_EXIT}, {@link #REASON_WATCHDOG_STUCK}, or another short phrase
 * @param failure the failure's text (an exception's message), or null
 * @param capacity the capacity of the ring the entries come from
 * @param environment the process's {@code NCCL_*} and {@code NCCL4J_*} variables, sorted by name (unmodifiable)
 * @param lastEnqueued {@link FlightRecorder#lastEnqueued()} at the dump
 * @param lastCompleted {@link FlightRecorder#lastCompleted()} at the dump
 * @param entries the ring's entries, oldest first (unmodifiable)
 * @param threads the Java stacks of the threads that issued the communicator's operations, taken at the dump
 *        ({@link #withThreads}); empty when none were taken, and in a dump written before the field existed
 *        (unmodifiable)
 */
public record TraceDump(String host, long pid, int rank, int size, String communicator, String ncclVersion,
        Instant dumpedAt, String reason, String failure, int capacity, Map<String, String> environment,
        long lastEnqueued, long lastCompleted, List<TraceEntry> entries, List<ThreadStack> threads) {

    /** The value of the {@code "format"} field. */
    public static final String FORMAT = "nccl4j-trace";
    /** The value of the {@code "version"} field that this class writes and reads. */
    public static final int VERSION = 1;
    /** The prefix of a dump's file name ({@link #fileName()}). */
    public static final String FILE_PREFIX = "nccl4j-trace-rank";
    /** Reason: the watchdog found an operation that did not complete in time. */
    public static final String REASON_TIMEOUT = "timeout";
    /** Reason: another rank failed (NCCL reported a remote error). */
    public static final String REASON_REMOTE_ERROR = "remote error";
    /** Reason: an operation of this rank failed. */
    public static final String REASON_ERROR = "error";
    /** Reason: asked for ({@code dumpTrace}). */
    public static final String REASON_ON_DEMAND = "on demand";
    /** Reason: the process exits after the watchdog fired. */
    public static final String REASON_EXIT = "exit";
    /** Reason: a peer failed, left uncleanly or diverged, as the liveness channel told every live rank. */
    public static final String REASON_PEER_FAILED = "peer failed";
    /** Reason: a peer left and this rank's pending collective cannot complete. */
    public static final String REASON_PEER_DEPARTED = "peer departed";
    /** Reason: this rank left while its peers went on: it aborted, exited, or closed after other collectives. */
    public static final String REASON_DEPARTED = "departed";
    /** Reason: rank 0 found that the ranks issued different collectives. */
    public static final String REASON_MISMATCH = "mismatch";
    /** Reason: the watchdog's own thread made no progress for the stuck timeout (its monitor wrote the dump). */
    public static final String REASON_WATCHDOG_STUCK = "watchdog stuck";

    /**
     * The Java stack of one thread at a dump: a thread that issued the communicator's operations, so that a rank
     * that hangs in its own code, not in NCCL, shows where. Written into the dump's {@code "threads"} array.
     *
     * @param name the thread's name
     * @param id its id ({@link Thread#getId()})
     * @param state its state, a {@link Thread.State} name: {@code "RUNNABLE"}, {@code "WAITING"}, ...
     * @param frames its stack, innermost call first, each frame as {@link StackTraceElement#toString()} writes it
     *        (e.g. {@code "java.base/java.lang.Thread.sleep(Native Method)"},
     *        {@code "com.example.Train.step(Train.java:42)"}); at most {@link #MAX_FRAMES} when taken by
     *        {@link #of(Thread)}; empty for a thread that has not started or has ended (unmodifiable)
     */
    public record ThreadStack(String name, long id, String state, List<String> frames) {
        /** The most frames {@link #of(Thread)} keeps: the innermost ones. */
        public static final int MAX_FRAMES = 256;

        /**
         * Checks the components and makes frames an unmodifiable copy.
         *
         * @param name see the record's description
         * @param id see the record's description
         * @param state see the record's description
         * @param frames see the record's description
         * @throws NullPointerException when name, state, frames or a frame is null
         * @throws IllegalArgumentException when id is negative or state is not a {@link Thread.State} name
         */
        public ThreadStack {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(state, "state");
            frames = List.copyOf(frames);
            if (id < 0) {
                throw new IllegalArgumentException("thread id must be >= 0, got " + id);
            }
            if (!isState(state)) {
                throw new IllegalArgumentException("thread state " + state + " is not one of "
                        + List.of(Thread.State.values()));
            }
        }

        /**
         * Takes a thread's stack now ({@link Thread#getStackTrace()}) with its state ({@link Thread#getState()},
         * read first). The frames are the innermost {@link #MAX_FRAMES}.
         *
         * @param thread a thread, usually one that issued the communicator's operations (any thread may call this;
         *        the JVM pauses the thread briefly to read its stack)
         * @return its name, id, state and frames
         * @throws SecurityException when a security manager refuses the stack (Thread#getStackTrace)
         */
        public static ThreadStack of(Thread thread) {
            Thread.State state = thread.getState();
            StackTraceElement[] stack = thread.getStackTrace();
            int n = Math.min(stack.length, MAX_FRAMES);
            List<String> frames = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                frames.add(stack[i].toString());
            }
            return new ThreadStack(thread.getName(), thread.getId(), state.name(), frames);
        }

        /** Whether s names a {@link Thread.State}. */
        static boolean isState(String s) {
            for (Thread.State t : Thread.State.values()) {
                if (t.name().equals(s)) {
                    return true;
                }
            }
            return false;
        }
    }

    /**
     * A dump without thread stacks: the form of the record before {@link #threads()} existed.
     *
     * @param host see the record's description
     * @param pid see the record's description
     * @param rank see the record's description
     * @param size see the record's description
     * @param communicator see the record's description
     * @param ncclVersion see the record's description
     * @param dumpedAt see the record's description
     * @param reason see the record's description
     * @param failure see the record's description
     * @param capacity see the record's description
     * @param environment see the record's description
     * @param lastEnqueued see the record's description
     * @param lastCompleted see the record's description
     * @param entries see the record's description
     * @throws NullPointerException as the canonical constructor
     * @throws IllegalArgumentException as the canonical constructor
     */
    public TraceDump(String host, long pid, int rank, int size, String communicator, String ncclVersion,
            Instant dumpedAt, String reason, String failure, int capacity, Map<String, String> environment,
            long lastEnqueued, long lastCompleted, List<TraceEntry> entries) {
        this(host, pid, rank, size, communicator, ncclVersion, dumpedAt, reason, failure, capacity, environment,
                lastEnqueued, lastCompleted, entries, List.of());
    }

    /**
     * Checks the components and makes the environment, entries and threads unmodifiable copies.
     *
     * @param host see the record's description
     * @param pid see the record's description
     * @param rank see the record's description
     * @param size see the record's description
     * @param communicator see the record's description
     * @param ncclVersion see the record's description
     * @param dumpedAt see the record's description
     * @param reason see the record's description
     * @param failure see the record's description
     * @param capacity see the record's description
     * @param environment see the record's description
     * @param lastEnqueued see the record's description
     * @param lastCompleted see the record's description
     * @param entries see the record's description
     * @param threads see the record's description
     * @throws NullPointerException when host, ncclVersion, dumpedAt, reason, environment, entries or threads is null
     * @throws IllegalArgumentException when a number is out of range (rank outside 0..size-1, lastCompleted above
     *         lastEnqueued, ...), there are more entries than the capacity, or the entries are not in increasing
     *         sequence order up to lastEnqueued
     */
    public TraceDump {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(ncclVersion, "ncclVersion");
        Objects.requireNonNull(dumpedAt, "dumpedAt");
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(environment, "environment");
        Objects.requireNonNull(entries, "entries");
        threads = List.copyOf(threads);
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank must be in 0..size-1 and size >= 1, got rank " + rank + " of "
                    + size);
        }
        if (pid < 0) {
            throw new IllegalArgumentException("pid must be >= 0, got " + pid);
        }
        if (capacity < FlightRecorder.MIN_CAPACITY || capacity > FlightRecorder.MAX_CAPACITY) {
            throw new IllegalArgumentException("capacity must be from " + FlightRecorder.MIN_CAPACITY + " to "
                    + FlightRecorder.MAX_CAPACITY + ", got " + capacity);
        }
        if (lastCompleted < 0 || lastCompleted > lastEnqueued) {
            throw new IllegalArgumentException("lastCompleted must be from 0 to lastEnqueued (" + lastEnqueued
                    + "), got " + lastCompleted);
        }
        if (entries.size() > capacity) {
            throw new IllegalArgumentException(entries.size() + " entries, more than the capacity " + capacity);
        }
        entries = List.copyOf(entries);
        long previous = 0;
        for (TraceEntry e : entries) {
            if (e.sequence() <= previous || e.sequence() > lastEnqueued) {
                throw new IllegalArgumentException("entry " + e.sequence() + " is out of order (after " + previous
                        + ") or beyond lastEnqueued (" + lastEnqueued + ")");
            }
            previous = e.sequence();
        }
        environment = Collections.unmodifiableMap(new TreeMap<>(environment));
    }

    /**
     * Takes a dump of a recorder now, with this process's host, pid and {@code NCCL_*}/{@code NCCL4J_*} variables
     * ({@link System#getenv()}).
     *
     * @param recorder the communicator's recorder
     * @param rank the communicator's rank
     * @param size the communicator's number of ranks
     * @param communicator the communicator's name, or null
     * @param ncclVersion the loaded NCCL's version
     * @param reason why the dump is taken ({@link #REASON_TIMEOUT}, ...)
     * @param failure the failure's text, or null
     * @return the dump
     */
    public static TraceDump capture(FlightRecorder recorder, int rank, int size, String communicator,
            String ncclVersion, String reason, String failure) {
        return capture(recorder, rank, size, communicator, ncclVersion, reason, failure, System.getenv());
    }

    /**
     * Takes a dump of a recorder now, with this process's host and pid and the {@code NCCL_*}/{@code NCCL4J_*}
     * variables of {@code env}.
     *
     * @param recorder the communicator's recorder
     * @param rank the communicator's rank
     * @param size the communicator's number of ranks
     * @param communicator the communicator's name, or null
     * @param ncclVersion the loaded NCCL's version
     * @param reason why the dump is taken ({@link #REASON_TIMEOUT}, ...)
     * @param failure the failure's text, or null
     * @param env the environment whose NCCL variables the dump records
     * @return the dump
     */
    public static TraceDump capture(FlightRecorder recorder, int rank, int size, String communicator,
            String ncclVersion, String reason, String failure, Map<String, String> env) {
        long enqueued = recorder.lastEnqueued();
        long completed = Math.min(recorder.lastCompleted(), enqueued);
        List<TraceEntry> entries = recorder.snapshot();
        if (!entries.isEmpty()) {
            enqueued = Math.max(enqueued, entries.get(entries.size() - 1).sequence());
        }
        return new TraceDump(localHost(), ProcessHandle.current().pid(), rank, size, communicator, ncclVersion,
                Instant.now().truncatedTo(ChronoUnit.MICROS), reason, failure, recorder.capacity(),
                ncclVariables(env), enqueued, completed, entries);
    }

    /**
     * This dump with thread stacks: a copy whose {@link #threads()} are the given ones (replacing any it had).
     * {@link #capture} takes none, so that the recorder's reader decides which threads are worth a stack:
     * <pre>
     * TraceDump dump = TraceDump.capture(recorder, rank, size, name, version, reason, failure)
     *         .withThreads(List.of(TraceDump.ThreadStack.of(issuingThread)));
     * </pre>
     *
     * @param threads the stacks, e.g. {@link ThreadStack#of(Thread)} of each thread that issued the communicator's
     *        operations; an empty list for none
     * @return the copy
     * @throws NullPointerException when threads or one of them is null
     */
    public TraceDump withThreads(List<ThreadStack> threads) {
        return new TraceDump(host, pid, rank, size, communicator, ncclVersion, dumpedAt, reason, failure, capacity,
                environment, lastEnqueued, lastCompleted, entries, threads);
    }

    /**
     * The variables a dump records: those whose name starts with {@code NCCL_} or {@code NCCL4J_}; a secret's value
     * (the job's secret, a token: {@link org.nccl4j.launch.JobSecret#hidden}) is recorded as
     * {@value org.nccl4j.launch.JobSecret#NOT_SHOWN}.
     *
     * @param env an environment
     * @return those variables, sorted by name
     */
    public static Map<String, String> ncclVariables(Map<String, String> env) {
        Map<String, String> out = new TreeMap<>();
        env.forEach((k, v) -> {
            if (k.startsWith("NCCL_") || k.startsWith("NCCL4J_")) {
                out.put(k, org.nccl4j.launch.JobSecret.hidden(k) ? org.nccl4j.launch.JobSecret.NOT_SHOWN : v);
            }
        });
        return out;
    }

    /**
     * This host's name, as the dump records it: {@link org.nccl4j.launch.LaunchInfo#localHost()}, looked up once.
     *
     * @return the host's name, else {@code HOSTNAME}, else {@code "unknown"}
     */
    public static String localHost() {
        return org.nccl4j.launch.LaunchInfo.localHost();
    }

    /**
     * The name of this dump's file: {@code nccl4j-trace-rank<R>-<host>-<pid>.json}, with each character of the host
     * name other than a letter, digit, '.', '_' or '-' replaced by '_'.
     *
     * @return the file name, e.g. {@code nccl4j-trace-rank3-node7-4242.json}
     */
    public String fileName() {
        return FILE_PREFIX + rank + "-" + host.replaceAll("[^A-Za-z0-9._-]", "_") + "-" + pid + ".json";
    }

    /**
     * Writes this dump into {@code dir} (created when missing) as {@link #fileName()}, atomically: into a hidden
     * temporary file of the same directory first, then moved over the name, so that a reader never sees half a
     * dump. An older dump of the same name is replaced. The file is readable by all (rw-r--r--).
     *
     * @param dir the directory, e.g. {@link TraceConfig#directory()}
     * @return the file written
     * @throws IOException naming the directory or the file when it cannot be written
     */
    public Path write(Path dir) throws IOException {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new IOException("cannot create the trace directory " + dir + ": " + e, e);
        }
        Path target = dir.resolve(fileName());
        Path tmp = Files.createTempFile(dir, "." + fileName() + ".", ".tmp");
        try {
            try (OutputStream out = Files.newOutputStream(tmp)) {
                writeTo(out);
            }
            try {
                Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-r--r--"));
            } catch (UnsupportedOperationException e) {
                // not a POSIX file system: its default permissions apply
            }
            try {
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException e) {
            Files.deleteIfExists(tmp);
            throw new IOException("cannot write the trace dump " + target + ": " + e, e);
        } catch (RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        return target;
    }

    /**
     * Writes this dump's JSON (UTF-8, indented) to a stream, which stays open.
     *
     * @param out the stream
     * @throws IOException when the stream fails
     */
    public void writeTo(OutputStream out) throws IOException {
        TraceJson.write(this, out);
    }

    /**
     * This dump's JSON, as {@link #writeTo(OutputStream)} writes it.
     *
     * @return the JSON text
     */
    public String toJson() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try {
            writeTo(bytes);
        } catch (IOException e) {
            throw new IllegalStateException("writing to memory failed", e);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    /**
     * Reads a dump file.
     *
     * @param file a file that {@link #write(Path)} wrote
     * @return the dump
     * @throws TraceFormatException naming the file and the field when it is not JSON, not an nccl4j trace dump
     *         ({@code "format"}), of a version this reader does not know ({@code "version"}), or a field is missing or
     *         of the wrong type or value
     * @throws IOException naming the file when it cannot be opened or read
     */
    public static TraceDump read(Path file) throws IOException {
        InputStream in;
        try {
            in = Files.newInputStream(file);
        } catch (IOException e) {
            throw new IOException(file + ": cannot be read: " + e, e);
        }
        try (in) {
            return TraceJson.read(in, file.toString());
        }
    }

    /**
     * Reads a dump from its JSON text.
     *
     * @param json the text
     * @param source what to call the text in messages, e.g. a file name
     * @return the dump
     * @throws TraceFormatException as {@link #read(Path)} does, naming {@code source}
     */
    public static TraceDump parse(String json, String source) throws TraceFormatException {
        return TraceJson.read(new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)), source);
    }
}
