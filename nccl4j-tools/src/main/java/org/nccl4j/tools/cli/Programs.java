package org.nccl4j.tools.cli;

import java.io.IOException;
import java.util.List;
import java.util.Locale;
import java.util.function.IntConsumer;
import org.nccl4j.Communicator;
import org.nccl4j.Group;
import org.nccl4j.Nccl;

/**
 * What the tools' programs that run as ranks (nccl4j-perf and the GPU-run harnesses of
 * {@code org.nccl4j.tools.harness}) share: grouping, counts, and a rank's abrupt end (killed, or stopped as a frozen
 * process). The examples keep their own copy of the first three in their {@code Examples}, as leaves a user copies;
 * the exit status on a machine without NCCL or a GPU is core's {@link org.nccl4j.diagnostics.ExitStatus}, the median
 * of step times core's {@link org.nccl4j.diagnostics.StepStats}.
 */
public final class Programs {
    private Programs() {
    }

    /**
     * Runs {@code op} for every communicator index: directly for one, inside one NCCL group for several (one thread
     * driving several GPUs must group their collectives, or the first would wait for the others).
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

    /**
     * Parses 1000, 64K, 1M, 1G (powers of two) as a number of elements, at least 1.
     *
     * @param s the text
     * @return the count
     * @throws IllegalArgumentException when it is not such a number, or below 1
     */
    public static long parseCount(String s) {
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
        long v = Math.multiplyExact(Long.parseLong(t), mult);
        if (v < 1) {
            throw new IllegalArgumentException("count must be at least 1, got " + s);
        }
        return v;
    }

    /**
     * Ends this process as abruptly as a crash does: SIGKILL to itself, so that no shutdown hook, finalizer or goodbye
     * runs (the failure scenarios' lost rank). Does not return.
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

    /**
     * Stops this process (SIGSTOP to itself), as a frozen process or an unreachable host would be: its sockets stay
     * open but nothing more is sent. Does not return; the launcher or the script kills it.
     *
     * @throws IOException when kill cannot be started
     * @throws InterruptedException when interrupted while waiting
     */
    public static void stopSelf() throws IOException, InterruptedException {
        System.out.flush();
        new ProcessBuilder("kill", "-STOP", Long.toString(ProcessHandle.current().pid())).inheritIO().start()
                .waitFor();
        Thread.sleep(600_000);   // stopped: the launcher or the script kills it
        throw new IllegalStateException("kill -STOP of this process did not stop it");
    }
}
