package org.nccl4j;

import java.util.concurrent.atomic.AtomicInteger;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;

/**
 * The NCCL groups open in this process ({@code ncclGroupStart} ... {@code ncclGroupEnd}, any thread): the count that
 * the checks read (no window registration inside a group) and the hook that runs when the last one ends, through
 * which the watchdog publishes what its communicators recorded inside them. {@link Nccl} and {@link Group} are the
 * public face of these calls.
 */
final class Groups {
    /** Groups open in this process: operations recorded meanwhile are published to the watchdog at their end. */
    private static final AtomicInteger OPEN = new AtomicInteger();
    /**
     * What runs when the last open group of the process ends: the watchdog sets it as it starts, to publish what its
     * communicators recorded inside the groups; nothing before.
     */
    private static volatile Runnable ended = () -> { };

    private Groups() {
    }

    /** {@code ncclGroupStart}, counted. */
    static void start() {
        Errors.check(NcclNative.ncclGroupStart(), NcclFunction.ncclGroupStart, null);
        OPEN.incrementAndGet();
    }

    /** {@code ncclGroupEnd} of a group opened by {@link #start()}: its status, unchecked. */
    static int endStatus() {
        int rc = NcclNative.ncclGroupEnd();
        over();
        return rc;
    }

    /** {@code ncclGroupEnd}, checked: ncclInProgress (nonblocking communicators) is not an error. */
    static void end() {
        int rc = endStatus();
        if (rc != Errors.SUCCESS && rc != Errors.IN_PROGRESS) {
            throw Errors.failure(rc, NcclFunction.ncclGroupEnd, null);
        }
    }

    /** A group opened by {@link #start()} is over (ended, or simulated, which ends it too). */
    static void over() {
        if (OPEN.updateAndGet(n -> Math.max(0, n - 1)) == 0) {
            ended.run();
        }
    }

    /** Sets what runs when the last open group of the process ends (the watchdog's publication). */
    static void whenAllEnd(Runnable r) {
        ended = r;
    }

    /** @return how many groups are open in this process (any thread) */
    static int open() {
        return OPEN.get();
    }
}
