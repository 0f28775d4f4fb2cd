package org.nccl4j.tools.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.function.IntConsumer;
import java.util.function.IntSupplier;
import org.nccl4j.Communicator;
import org.nccl4j.CudaException;
import org.nccl4j.Group;
import org.nccl4j.Nccl;
import org.nccl4j.NcclException;
import org.nccl4j.jni.NcclUnavailableException;

/**
 * What the tools' programs that run as ranks (nccl4j-perf and the GPU-run harnesses of
 * {@code org.nccl4j.tools.harness}) share: the exit status on a machine without NCCL or a GPU, grouping, counts, and a
 * rank's abrupt end (killed, or stopped as a frozen process). The examples keep their own copy of the first four in
 * their {@code Examples}, as leaves a user copies; the median of step times is core's
 * {@link org.nccl4j.diagnostics.StepStats}.
 */
public final class Programs {
    /** {@code cudaErrorStubLibrary}, {@code cudaErrorInsufficientDriver}, {@code cudaErrorNoDevice}. */
    private static final int[] NO_GPU_CODES = {34, 35, 100};

    private Programs() {
    }

    /**
     * Runs a program's body and returns its exit status, or 2 with a message on stderr when the machine has no NCCL,
     * no CUDA runtime or no GPU, or 1 with NCCL's failure in one line. Other failures propagate.
     *
     * @param name the program's name, for the message
     * @param body returns the program's status
     * @return the body's status, 1 or 2
     */
    public static int exitStatus(String name, IntSupplier body) {
        return exitStatus(name, body, System.err);
    }

    /**
     * {@link #exitStatus(String, IntSupplier)} with the message written to {@code err}.
     *
     * @param name the program's name, which starts the message
     * @param body returns the program's status
     * @param err where the message goes
     * @return the body's status, or 2 when it threw {@link NcclUnavailableException}, the CUDA runtime's failure to
     *         load, or a {@link CudaException} meaning no usable GPU ({@code cudaErrorStubLibrary},
     *         {@code cudaErrorInsufficientDriver}, {@code cudaErrorNoDevice}); 1 when it threw a {@link NcclException},
     *         written as {@code name: message} on one line
     */
    public static int exitStatus(String name, IntSupplier body, PrintStream err) {
        try {
            return body.getAsInt();
        } catch (NcclUnavailableException e) {
            err.println(name + ": NCCL is not available on this machine.\n" + e.getMessage());
            return 2;
        } catch (NcclException e) {
            err.println(name + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
            return 1;
        } catch (IllegalStateException e) {
            if (e.getMessage() != null && e.getMessage().contains("CUDA runtime could not be loaded")) {
                err.println(name + ": no usable CUDA runtime or GPU on this machine.\n" + e.getMessage());
                return 2;
            }
            throw e;
        } catch (CudaException e) {
            for (int code : NO_GPU_CODES) {
                if (e.code() == code) {
                    err.println(name + ": no usable GPU on this machine.\n" + e.getMessage());
                    return 2;
                }
            }
            throw e;
        }
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
