package org.nccl4j;

import java.time.Duration;
import java.util.List;
import org.nccl4j.control.Durations;
import org.nccl4j.control.Liveness;
import org.nccl4j.control.RankProcess;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;

/**
 * How long making a communicator may take, and what to say when it took longer: the rank and size being made,
 * and the liveness channel whose roster names the ranks that never arrived (null: not known).
 */
final class InitDeadline {
    final long nanos;
    final Duration timeout;
    final int rank;
    final int size;
    final Liveness liveness;

    InitDeadline(Duration timeout, int rank, int size, Liveness liveness) {
        this(System.nanoTime() + timeout.toNanos(), timeout, rank, size, liveness);
    }

    InitDeadline(long nanos, Duration timeout, int rank, int size, Liveness liveness) {
        this.nanos = nanos;
        this.timeout = timeout;
        this.rank = rank;
        this.size = size;
        this.liveness = liveness;
    }

    InitTimeoutException expired(NcclFunction fn, CommHealth parent) {
        return expired(fn.name(), parent);
    }

    InitTimeoutException expired(String what, CommHealth parent) {
        return expired(what, parent, true);
    }

    InitTimeoutException expired(String what, CommHealth parent, boolean fromNccl) {
        List<Integer> missing = liveness == null ? List.of() : liveness.neverArrived(size);
        StringBuilder m = new StringBuilder("rank ").append(rank).append(" of ").append(size).append(": ")
                .append(what).append(parent == null ? "" : " on rank " + parent.rank + " of " + parent.size
                        + " (the parent)")
                .append(" did not finish within ").append(Durations.format(timeout));
        if (!missing.isEmpty()) {
            m.append(": ranks ").append(missing).append(" never arrived (joined: ");
            String sep = "";
            for (RankProcess j : liveness.roster().values()) {
                m.append(sep).append(j.rank()).append(" (").append(j.host()).append(", pid ").append(j.pid())
                        .append(')');
                sep = ", ";
            }
            m.append("); start them, or check that they reach rank 0's host");
        } else if (liveness != null && liveness.failedToConnect() != null) {
            m.append(": ").append(liveness.failedToConnect()).append(": rank 0 may not have started, or may not "
                    + "be reachable from here");
        } else if (parent != null) {
            m.append(": a rank of the parent did not make the same call (every remaining rank must call it), or "
                    + "a rank is lost");
        } else {
            m.append(": a rank never arrived, or the ranks cannot reach each other (NCCL_SOCKET_IFNAME, firewall)");
        }
        m.append(fromNccl ? "; nccl4j aborted the half-made communicator. " : "; NCCL was not called. ")
                .append("Raise NCCL4J_INIT_TIMEOUT (or CommConfig.Builder.initTimeout) if initialization is only "
                + "slow");
        return new InitTimeoutException(m.toString(), what, parent != null ? parent.rank : rank, missing,
                timeout);
    }

    /**
     * The handle NCCL wrote to {@code out} once the call that made it ({@code fn}, status {@code rc}) is over: waits
     * while a nonblocking one is in progress; on failure aborts what NCCL half made and throws (naming
     * {@code parent}'s rank when there is one). 0 when NCCL made none ({@link #NO_COLOR}).
     */
    static long finished(int rc, long[] out, NcclFunction fn, CommHealth parent, InitDeadline deadline) {
        int status = rc;
        if (status == Errors.IN_PROGRESS && out[0] != 0) {
            Liveness live = deadline.liveness;
            status = waitWhileInProgress(out[0], deadline.nanos,
                    live == null ? null : () -> live.startupLoss(deadline.size) != null);
            if (status == Errors.IN_PROGRESS) {
                NcclNative.ncclCommAbort(out[0]);
                Liveness.Loss loss = live == null ? null : live.startupLoss(deadline.size);
                if (loss != null) {   // a rank was lost: what NCCL half made is aborted, nothing waits for it
                    throw StartupGuard.lost(loss, deadline.rank, deadline.size, fn.name(),
                            "NCCL initialization abandoned", null);
                }
                throw deadline.expired(fn, parent);
            }
        }
        if (status != 0) {
            if (out[0] != 0) {
                NcclNative.ncclCommAbort(out[0]);
            }
            throw Errors.failure(status, fn, parent);
        }
        return out[0];
    }

    static int waitWhileInProgress(long comm) {
        return waitWhileInProgress(comm, Long.MAX_VALUE);
    }

    /**
     * Polls {@code ncclCommGetAsyncError} until it leaves ncclInProgress, or until the deadline passes (then returns
     * ncclInProgress).
     */
    static int waitWhileInProgress(long comm, long deadlineNanos) {
        return waitWhileInProgress(comm, deadlineNanos, null);
    }

    /**
     * As {@link #waitWhileInProgress(long, long)}, giving up (ncclInProgress) as soon as {@code giveUp} says so (a rank
     * was lost during start-up); null: never.
     */
    static int waitWhileInProgress(long comm, long deadlineNanos, java.util.function.BooleanSupplier giveUp) {
        int[] state = new int[1];
        while (true) {
            if (deadlineNanos != Long.MAX_VALUE && System.nanoTime() - deadlineNanos >= 0
                    || giveUp != null && giveUp.getAsBoolean()) {
                return Errors.IN_PROGRESS;
            }
            int rc = NcclNative.ncclCommGetAsyncError(comm, state);
            if (rc != 0) {
                return rc;
            }
            if (state[0] != Errors.IN_PROGRESS) {
                return state[0];
            }
            Thread.onSpinWait();
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Errors.IN_PROGRESS;
            }
        }
    }
}
