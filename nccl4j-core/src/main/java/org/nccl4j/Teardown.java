package org.nccl4j;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import org.nccl4j.control.BoundedWait;
import org.nccl4j.control.Departures;
import org.nccl4j.control.Durations;
import org.nccl4j.control.Ledger;
import org.nccl4j.control.Liveness;
import org.nccl4j.control.Survivors;
import org.nccl4j.jni.NcclFunction;
import org.nccl4j.jni.NcclNative;
import org.nccl4j.launch.ProcessEnvironment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a communicator is closed without a hang: the decision between finalizing ({@code ncclCommFinalize} then
 * {@code ncclCommDestroy}, which completes what the rank issued and waits on nothing of its peers only when they are
 * closing too) and aborting ({@code ncclCommAbort}, which waits for nothing), and the deadline on both.
 *
 * <p>With a liveness channel ({@link Communicator#fromEnvironment}), a closing rank first tells every rank that it
 * closes after its last collective ({@link Liveness#depart}); then it waits, at most the close deadline, until its own
 * operations have completed and every other rank has said it closes after the same collective: then it finalizes.
 * It aborts instead, at once, when a peer went past its last collective, closed after a different one, aborted,
 * failed, exited or was lost, when rank 0 found the ranks' collectives to differ, or when its communicator failed;
 * once its own operations completed when rank 0, which relays the closes, is gone (after a recovery without it: the
 * peers' closes cannot be heard, and waiting for them would only run out the deadline); and at the deadline. An
 * abort there loses nothing of the job: the rank's own operations have completed or can no longer complete.
 *
 * <p>The deadline is {@code NCCL4J_CLOSE_TIMEOUT} (property {@code nccl4j.closeTimeout}), 30 s by default: long
 * enough for the ranks of a healthy job to reach {@code close()} together (they leave the training loop at the same
 * step; the slowest's last step and a checkpoint written before closing usually fit), short against the 10-minute
 * operation timeout, so a rank whose peers will never close is not held for minutes. It also bounds the finalize
 * itself, which runs on a thread of its own ({@code nccl4j-close}): when the call has not returned by then, the
 * communicator is left to it (an abort while it runs could free what it uses) and {@code close()} throws
 * {@link CloseTimeoutException}.
 */
final class Teardown {
    private static final Logger LOG = LoggerFactory.getLogger(Teardown.class);
    /** The logger of what closing and aborting a communicator report: the Communicator's. */
    private static final Logger COMMUNICATOR_LOG = CommHealth.COMMUNICATOR_LOG;
    /** The variable of the close deadline. */
    static final String TIMEOUT_VARIABLE = "NCCL4J_CLOSE_TIMEOUT";
    /** The property of the close deadline. */
    static final String TIMEOUT_PROPERTY = "nccl4j.closeTimeout";
    /** The deadline when neither is set. */
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

    private Teardown() {
    }

    /** The close deadline: the property, else the variable, else 30 s. */
    static Duration timeout() {
        String v = ProcessEnvironment.liveOrJvmCopy().get(TIMEOUT_VARIABLE);
        Duration d = WatchdogConfig.value(v == null ? Map.of() : Map.of(TIMEOUT_VARIABLE, v), System.getProperties(),
                TIMEOUT_VARIABLE, TIMEOUT_PROPERTY, DEFAULT_TIMEOUT, null);
        if (d.isZero() || d.isNegative()) {
            String name = System.getProperty(TIMEOUT_PROPERTY, "").isBlank() ? TIMEOUT_VARIABLE : TIMEOUT_PROPERTY;
            throw new IllegalArgumentException(name + "=" + Durations.format(d)
                    + " must be longer than zero, e.g. 30s (the default)");
        }
        return d;
    }

    /**
     * Announces the close on the channel and waits for the peers.
     *
     * @return null to finalize, else why to abort instead (one phrase, for the log)
     */
    static String awaitPeers(CommHealth c, Liveness l, Duration timeout) {
        return awaitPeers(c, l, timeout, null);
    }

    /**
     * {@code close()} or {@code abort()} and its thread, and the thread that issued the collectives when it is another:
     * {@code close() on thread "shutdown-hook", while thread "main" issued the collectives}.
     */
    static String closer(String call, CommHealth h) {
        Thread t = Thread.currentThread();
        Thread issuer = h.ledger.issuer();
        return call + " on thread \"" + t.getName() + "\"" + (issuer != null && issuer != t ? ", while thread \""
                + issuer.getName() + "\" issued the collectives" : "");
    }

    /** Whether the closing thread is not the one that issued the collectives (the close is then its own cause). */
    static boolean otherThread(CommHealth h) {
        Thread issuer = h.ledger.issuer();
        return issuer != null && issuer != Thread.currentThread();
    }

    /**
     * As {@link #awaitPeers(CommHealth, Liveness, Duration)}, telling {@code cause} with the close (null: none yet; the
     * exception that leaves the rank's main may follow).
     */
    static String awaitPeers(CommHealth c, Liveness l, Duration timeout, String cause) {
        Ledger ledger = c.ledger;
        long last = ledger.last();
        int gen = c.generation;
        if (l.departed()) {
            return "it had already told its peers that it failed";
        }
        Long own = ledger.fingerprintAt(last);
        String fingerprint = own == null ? null : Long.toHexString(own);
        l.depart(Departures.Kind.CLOSE, gen, last, ledger.describe(last), cause, fingerprint);
        Departures d = l.departures();
        int self = l.launchRankOfSelf();
        long end = System.nanoTime() + timeout.toNanos();
        boolean deaf = Survivors.hubGone(l);   // rank 0 serves the channel: nobody's close can reach us
        while (true) {
            String why = reasonToAbort(c, l, d, gen, last, self);
            if (why != null) {
                return why;
            }
            if (deaf && c.ownOperationsComplete()) {
                return "rank 0, which relays the peers' closes, is gone, so theirs cannot be heard; its own operations "
                        + "completed, so the abort loses nothing";
            }
            if (c.ownOperationsComplete() && everyPeerClosing(c, l, d, gen, last, self)) {
                String differ = differingFingerprints(d, gen, last, self, fingerprint);
                return differ == null ? null : namedMismatch(d, gen, differ);
            }
            if (System.nanoTime() - end >= 0) {
                return "the close deadline (" + Durations.format(timeout) + ", " + TIMEOUT_VARIABLE + ") passed before "
                        + (c.ownOperationsComplete() ? "every peer closed" : "its own operations completed");
            }
            LockSupport.parkNanos(2_000_000L);
        }
    }

    private static String reasonToAbort(CommHealth c, Liveness l, Departures d, int gen, long last, int self) {
        if (c.failure != null) {
            return "its communicator failed";
        }
        if (l.anyLost()) {
            return "a peer is lost";
        }
        String mismatch = d.mismatch(gen);
        if (mismatch != null) {
            return "the ranks' collectives differ: " + mismatch;
        }
        if (d.highestReported() > last) {
            return "a peer issued collective #" + d.highestReported() + ", past this rank's last (#" + last + ")";
        }
        for (Map.Entry<Integer, Departures.Departure> e : d.of(gen).entrySet()) {
            Departures.Departure p = e.getValue();
            if (p.rank() == self) {
                continue;
            }
            if (p.kind() != Departures.Kind.CLOSE) {
                return "rank " + p.rank() + " " + p.kind().says;
            }
            if (p.last() != last) {
                return "rank " + p.rank() + " closed after collective #" + p.last() + ", this rank after #" + last;
            }
        }
        return null;
    }

    /**
     * Every rank closes after collective #last: null when their fingerprints through it agree (or are unknown), else
     * why to abort (their collectives differ somewhere: a count or type that differed without hanging).
     */
    static String differingFingerprints(Departures d, int gen, long last, int self, String own) {
        if (own == null) {
            return null;
        }
        StringBuilder differ = new StringBuilder();
        for (Departures.Departure p : d.of(gen).values()) {
            String theirs = d.fingerprintOf(p.rank());
            if (p.rank() != self && theirs != null && !theirs.equals(own)) {
                differ.append(differ.length() == 0 ? "" : ", ").append(p.rank());
            }
        }
        return differ.length() == 0 ? null : "the ranks' collectives differ at or before collective #" + last
                + " (the fingerprints of ranks " + differ + " differ from this rank's; run scripts/nccl4j-trace over "
                + "every rank's flight record to see where)";
    }

    /** How long a closing rank whose fingerprint differs waits for rank 0 to name the first collective that differs. */
    static final long MISMATCH_WAIT_NANOS = 1_500_000_000L;

    /**
     * The ranks closed with differing fingerprints: rank 0 compares their shapes as they wait
     * ({@code Agreement.closedDiffering}); this rank waits (at most {@link #MISMATCH_WAIT_NANOS}) for the verdict,
     * which names the collective and every field that differs, and gives {@code fallback} when it does not come (rank
     * 0 gone, or the shapes no longer held).
     */
    private static String namedMismatch(Departures d, int gen, String fallback) {
        long end = System.nanoTime() + MISMATCH_WAIT_NANOS;
        while (System.nanoTime() - end < 0) {
            String m = d.mismatch(gen);
            if (m != null) {
                return "the ranks' collectives differ: " + m;
            }
            LockSupport.parkNanos(2_000_000L);
        }
        return fallback;
    }

    private static boolean everyPeerClosing(CommHealth c, Liveness l, Departures d, int gen, long last, int self) {
        Map<Integer, Departures.Departure> of = d.of(gen);
        int closing = 0;
        for (Departures.Departure p : of.values()) {
            if (p.rank() != self && p.kind() == Departures.Kind.CLOSE && p.last() == last) {
                closing++;
            }
        }
        return closing >= c.size - 1;
    }

    /**
     * Runs {@code call} (an NCCL teardown) on a thread of its own and waits at most {@code timeout}.
     *
     * @throws CloseTimeoutException when it has not returned by then (it goes on in the background)
     */
    static void bounded(Runnable call, Duration timeout, CommHealth c, String what) {
        RuntimeException[] thrown = new RuntimeException[1];
        Thread t = BoundedWait.run("nccl4j-close", timeout.toMillis(), () -> {
            try {
                call.run();
            } catch (RuntimeException e) {
                thrown[0] = e;
            }
        });
        if (t.isAlive()) {
            StringBuilder stack = new StringBuilder();
            for (StackTraceElement f : t.getStackTrace()) {
                stack.append("\n\tat ").append(f);
            }
            LOG.error("nccl4j: {} of {} did not return within the close deadline ({}); it is left running and the "
                    + "communicator to it (an abort now could free what it uses):{}", what, c,
                    Durations.format(timeout), stack);
            throw new CloseTimeoutException(c.rankUnchecked(), what, timeout);
        }
        if (thrown[0] != null) {
            throw thrown[0];
        }
    }

    /** {@link Communicator#abort()}. */    /** {@link Communicator#abort()}. */
    static void abort(CommHealth h) {
        h.failureAcknowledged();
        if (h.check != null) {
            h.check.release();
        }
        Liveness l = h.liveness;
        String by = null;
        if (!h.closed) {
            by = closer("abort()", h);
            h.stopIssuing(by);   // the last collective told is this rank's last, whichever thread aborts
        }
        if (l != null && !h.closed) {
            long last = h.ledger.last();
            l.depart(Departures.Kind.ABORT, h.generation, last, h.ledger.describe(last), otherThread(h) ? by : null);
            h.recordDeparture("aborted its communicator after " + h.ledger.describe(last));
        }
        h.leaveLiveness();
        h.lifecycle.lock();
        try {
            abort0(h);
        } finally {
            h.lifecycle.unlock();
        }
    }

    /** The abort itself; the lifecycle lock is held. */
    private static void abort0(CommHealth h) {
        if (!h.markClosed() && !h.kept) {
            return;
        }
        h.kept = false;
        if (h.recorder != null) {
            Watchdog.instance().forget(h);
        }
        h.awaitCallsLeft("ncclCommAbort");
        Errors.check(CommHealth.tearDown(() -> NcclNative.ncclCommAbort(h.handle)), NcclFunction.ncclCommAbort, null);
    }

    /** {@link Communicator#close()}; {@code hasFinalize}: the loaded NCCL has {@code ncclCommFinalize}. */
    static void close(CommHealth h, boolean hasFinalize) {
        h.failureAcknowledged();
        if (h.check != null) {
            h.check.release();
        }
        Duration deadline = timeout();
        Liveness l = h.liveness;
        String abortBecause = null;
        if (!h.closed) {
            String by = closer("close()", h);
            boolean other = otherThread(h);
            h.stopIssuing(by);   // the last collective told is this rank's last, whichever thread closes
            if (l != null) {
                abortBecause = awaitPeers(h, l, deadline, other ? by : null);
            }
        }
        h.leaveLiveness();
        h.lifecycle.lock();
        try {
            if (abortBecause != null && !h.closed) {
                if (abortBecause.startsWith("the ranks' collectives differ")) {
                    COMMUNICATOR_LOG.error("nccl4j: rank {} of {} aborts its communicator instead of finalizing it: {}",
                            h.rank, h.size, abortBecause);
                } else {
                    COMMUNICATOR_LOG.info("nccl4j: rank {} of {} aborts its communicator instead of finalizing it: {}",
                            h.rank, h.size, abortBecause);
                }
                h.recordDeparture("closed its communicator after "
                        + h.ledger.describe(h.ledger.last()) + " and aborted it: " + abortBecause);
                abort0(h);
            } else if (h.kept || h.closed) {
                close0(h, hasFinalize);
            } else {
                bounded(() -> close0(h, hasFinalize), deadline, h, hasFinalize
                        ? "ncclCommFinalize/ncclCommDestroy" : "ncclCommDestroy");
            }
        } finally {
            h.lifecycle.unlock();
        }
    }

    /** The finalize and destroy, or the abort of a communicator kept after its failure; the lifecycle lock is held. */
    private static void close0(CommHealth h, boolean hasFinalize) {
        boolean first = h.markClosed();   // before kept is read: the monitor sets closed and kept together
        if (h.kept) {   // failed and kept for shrink: finalizing would wait for the lost peers
            h.kept = false;
            Watchdog.instance().forget(h);
            h.awaitCallsLeft("ncclCommAbort");
            Errors.check(CommHealth.tearDown(() -> NcclNative.ncclCommAbort(h.handle)), NcclFunction.ncclCommAbort,
                    null);
            return;
        }
        if (!first) {
            return;
        }
        if (h.recorder != null) {
            Watchdog.instance().forget(h);
        }
        h.awaitCallsLeft("ncclCommFinalize");
        RuntimeException error = null;
        if (hasFinalize) {
            int rc = CommHealth.tearDown(() -> {
                int r = NcclNative.ncclCommFinalize(h.handle);
                return r == Errors.IN_PROGRESS ? InitDeadline.waitWhileInProgress(h.handle) : r;
            });
            if (rc != 0) {
                error = Errors.failure(rc, NcclFunction.ncclCommFinalize, null);
            }
        }
        int rc = CommHealth.tearDown(() -> NcclNative.ncclCommDestroy(h.handle));
        if (rc != 0 && error == null) {
            error = Errors.failure(rc, NcclFunction.ncclCommDestroy, null);
        }
        if (error != null) {
            throw error;
        }
    }
}
