package org.nccl4j.tools.cli;

import java.io.IOException;

/**
 * What the tools' programs (nccl4j-perf and the GPU-run harnesses of {@code org.nccl4j.tools.harness}) share beyond
 * what the examples' {@code org.nccl4j.examples.Examples} gives them (the exit status on a machine without NCCL or a
 * GPU, the launch test, grouping, counts, a rank's abrupt end; the median is
 * {@code org.nccl4j.examples.StepStats}'s): a rank that stops as a frozen process.
 */
public final class Programs {
    private Programs() {
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
