package org.nccl4j.tools.doctor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * What the host, or the container the doctor runs in, allows NCCL beyond the GPUs: the size of {@code /dev/shm},
 * where NCCL makes the shared-memory segments between the ranks of one host, and the locked-memory limit
 * ({@code ulimit -l}), under which NCCL's InfiniBand transport registers its buffers. A container gets both from its
 * runtime ({@code docker run --shm-size}, {@code --ulimit memlock}), not from the host.
 *
 * @param shmBytes the size of the file system at {@code /dev/shm}, or {@link #UNKNOWN} when there is none or it cannot
 *        be read
 * @param memlockBytes the soft locked-memory limit of this process, {@link #UNLIMITED}, or {@link #UNKNOWN}
 */
record Limits(long shmBytes, long memlockBytes) {
    /** A value that could not be read. */
    static final long UNKNOWN = -1;
    /** No limit ({@code unlimited} in {@code /proc/self/limits}). */
    static final long UNLIMITED = Long.MAX_VALUE;

    /**
     * This process's: {@code /dev/shm}'s size and {@code /proc/self/limits}' "Max locked memory".
     *
     * @return the limits, each {@link #UNKNOWN} where it cannot be read
     */
    static Limits read() {
        long memlock = UNKNOWN;
        try {
            memlock = memlock(Files.readString(Path.of("/proc/self/limits"), StandardCharsets.US_ASCII));
        } catch (IOException | RuntimeException e) {
            // not Linux, or /proc not mounted: unknown
        }
        return new Limits(size(Path.of("/dev/shm")), memlock);
    }

    /**
     * The total size of the file system at a directory.
     *
     * @param dir the directory, e.g. {@code /dev/shm}
     * @return its size in bytes, or {@link #UNKNOWN} when it does not exist or cannot be read
     */
    static long size(Path dir) {
        try {
            return Files.isDirectory(dir) ? Files.getFileStore(dir).getTotalSpace() : UNKNOWN;
        } catch (IOException | RuntimeException e) {
            return UNKNOWN;
        }
    }

    /**
     * The soft limit of the line "Max locked memory" of a {@code /proc/<pid>/limits} text.
     *
     * @param limits the file's text
     * @return the limit in bytes, {@link #UNLIMITED}, or {@link #UNKNOWN} when the line is missing or malformed
     */
    static long memlock(String limits) {
        for (String line : limits.split("\n")) {
            if (!line.startsWith("Max locked memory")) {
                continue;
            }
            String[] fields = line.substring("Max locked memory".length()).trim().split("\\s+");
            if (fields.length == 0 || fields[0].isEmpty()) {
                return UNKNOWN;
            }
            if (fields[0].equals("unlimited")) {
                return UNLIMITED;
            }
            return fields[0].matches("[0-9]{1,18}") ? Long.parseLong(fields[0]) : UNKNOWN;
        }
        return UNKNOWN;
    }

    /**
     * A size in words: {@code 64.0 MiB}, {@code 1.0 GiB}, {@code 8.0 KiB}, {@code unlimited}.
     *
     * @param bytes the size
     * @return the words
     */
    static String words(long bytes) {
        if (bytes == UNLIMITED) {
            return "unlimited";
        }
        if (bytes >= 1L << 30) {
            return String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
        }
        if (bytes >= 1L << 20) {
            return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
        }
        return String.format(Locale.ROOT, "%.1f KiB", bytes / 1024.0);
    }
}
