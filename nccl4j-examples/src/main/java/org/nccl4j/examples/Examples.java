package org.nccl4j.examples;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;
import org.nccl4j.Communicator;
import org.nccl4j.Cuda;
import org.nccl4j.Group;
import org.nccl4j.Nccl;
import org.nccl4j.launch.LaunchInfo;

/** Small helpers shared by the examples. */
public final class Examples {
    private Examples() {
    }

    /**
     * Whether a launcher started this process as one rank of several (mpirun, Slurm, torchrun, nccl4j-run):
     * {@link LaunchInfo#detect()} finds a world of more than one process. This is the same detection
     * {@link Communicator#fromEnvironment()} uses, so the two never disagree.
     *
     * @return true when the launch describes more than one process
     * @throws IllegalArgumentException when a launcher variable is malformed
     */
    public static boolean launchedPerRank() {
        return LaunchInfo.detect().worldSize() > 1;
    }

    /**
     * The communicators this process drives: its own rank ({@link Communicator#fromEnvironment()}) when
     * launched per rank, else one per local GPU ({@link Communicator#initAll(int...)}), in rank order.
     *
     * @return the communicators; empty when this process was not launched per rank and sees no CUDA device
     */
    static List<Communicator> communicators() {
        if (launchedPerRank()) {
            return List.of(Communicator.fromEnvironment());
        }
        int n = Cuda.deviceCount();
        if (n == 0) {
            return List.of();
        }
        return Communicator.initAll(IntStream.range(0, n).toArray());
    }

    /**
     * Runs {@code op} for every communicator index: directly for one, inside one NCCL group for several (one
     * thread driving several GPUs must group their collectives, or the first would wait for the others).
     *
     * @param comms this process's communicators, one per GPU it drives
     * @param op what to issue for the communicator of each index
     */
    @SuppressWarnings("try") // the group is only opened and closed
    public static void grouped(List<Communicator> comms, IntConsumer op) {
        if (comms.size() == 1) {
            op.accept(0);
            return;
        }
        try (Group g = Nccl.group()) {
            for (int k = 0; k < comms.size(); k++) {
                op.accept(k);
            }
        }
    }

    /** How an example's lines start: {@code rank r: }. */
    static String who(Communicator comm) {
        return "rank " + comm.rank() + ": ";
    }

    /**
     * Ends this process as abruptly as a crash does: SIGKILL to itself, so that no shutdown hook, finalizer or
     * goodbye runs (the failure scenarios' lost rank). Does not return.
     *
     * @throws IOException when kill cannot be started
     * @throws InterruptedException when interrupted while waiting
     */
    public static void killSelf() throws IOException, InterruptedException {
        System.out.flush();
        new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid())).inheritIO().start().waitFor();
        Thread.sleep(60_000);
        throw new IllegalStateException("kill -9 of this process did not end it");
    }

    /** Closes what was added, last first; the first failure is thrown with later ones suppressed. */
    static final class Closer implements AutoCloseable {
        private final Deque<AutoCloseable> resources = new ArrayDeque<>();

        /** Adds {@code resource} and returns it. */
        <T extends AutoCloseable> T add(T resource) {
            resources.push(resource);
            return resource;
        }

        /** Lets go of {@code resource} without closing it (its owner closed it early). */
        void forget(AutoCloseable resource) {
            resources.remove(resource);
        }

        /** Adds every element of {@code all} and returns the list. */
        <T extends AutoCloseable> List<T> addAll(List<T> all) {
            all.forEach(resources::push);
            return all;
        }

        /**
         * Runs {@code first} (a device synchronize, say), then closes what was added, last first; the first failure
         * of all is thrown with the later ones suppressed.
         */
        void closeAfter(Runnable first) {
            RuntimeException failure = null;
            try {
                first.run();
            } catch (RuntimeException e) {
                failure = e;
            }
            try {
                close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
            if (failure != null) {
                throw failure;
            }
        }

        @Override
        public void close() {
            RuntimeException failure = null;
            while (!resources.isEmpty()) {
                try {
                    resources.pop().close();
                } catch (Exception e) {
                    if (failure == null) {
                        failure = e instanceof RuntimeException ? (RuntimeException) e : new IllegalStateException(e);
                    } else {
                        failure.addSuppressed(e);
                    }
                }
            }
            if (failure != null) {
                throw failure;
            }
        }
    }

    /** Parses 1024, 64K, 64M, 1G (powers of two) as a size in bytes, at least 4. */
    static long parseSize(String s) {
        long v = parseSuffixed(s);
        if (v < 4) {
            throw new IllegalArgumentException("size must be at least 4 bytes, got " + s);
        }
        return v;
    }

    /**
     * Parses 1000, 64K, 1M (powers of two) as a number of elements, at least 1.
     *
     * @param s the text
     * @return the count
     * @throws IllegalArgumentException when it is not such a number, or below 1
     */
    public static long parseCount(String s) {
        long v = parseSuffixed(s);
        if (v < 1) {
            throw new IllegalArgumentException("count must be at least 1, got " + s);
        }
        return v;
    }

    private static long parseSuffixed(String s) {
        String t = s.strip().toUpperCase(Locale.ROOT);
        long mult = 1;
        if (t.endsWith("K")) {
            mult = 1L << 10;
        } else if (t.endsWith("M")) {
            mult = 1L << 20;
        } else if (t.endsWith("G")) {
            mult = 1L << 30;
        }
        if (mult != 1) {
            t = t.substring(0, t.length() - 1);
        }
        return Math.multiplyExact(Long.parseLong(t), mult);
    }
}
