package org.nccl4j;

import java.io.IOException;
import java.nio.file.Path;
import org.nccl4j.control.Departures;
import org.nccl4j.control.Ledger;
import org.nccl4j.control.Liveness;
import org.nccl4j.trace.TraceDump;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a communicator with a liveness channel does when a rank leaves, kept out of {@link Communicator}: it tells its
 * peers of its own failure ({@code DEPART failure}), writes its flight record when a peer failed or left uncleanly
 * (every live rank does, from the channel's thread, so that a rank stuck in its own code is recorded too), and writes
 * it when it leaves itself while its peers go on, so that {@code scripts/nccl4j-trace} has every rank's.
 */
final class DepartureReports {
    private static final Logger LOG = LoggerFactory.getLogger(DepartureReports.class);

    private DepartureReports() {
    }

    /** The watchdog failed {@code c}: its peers are told, except under RECOVER (the rank stays, to recover). */
    static void announceFailure(CommHealth c, CommunicatorFailedException f) {
        Liveness l = c.liveness;
        if (l != null && !c.keptForRecovery()) {
            Ledger ledger = c.ledger;
            long last = ledger.last();
            l.depart(Departures.Kind.FAILURE, c.generation, last, ledger.describe(last),
                    f.getClass().getSimpleName() + ": " + f.verdict());
        }
    }

    /** News from the channel that a peer failed, left uncleanly or diverged: {@code c}'s flight record, once. */
    static void peerNews(CommHealth c, String news) {
        if (c.recorder == null || c.traceDumped() || c.failure != null) {
            return;
        }
        try {
            Path p = c.writeTrace(TraceDump.REASON_PEER_FAILED, "a peer failed: " + news, null);
            LOG.warn("nccl4j: rank {} of {} wrote its flight record on news from the liveness channel ({}): {}",
                    c.rankUnchecked(), c.size, news, p);
        } catch (IOException | RuntimeException e) {
            LOG.warn("nccl4j: rank {} could not write its flight record on news of a peer's failure: {}",
                    c.rankUnchecked(), e.toString());
        }
    }

    /**
     * {@code c}'s rank leaves while its peers may go on (an abort, an exit with the communicator open, a close after
     * other collectives than theirs): its flight record is written too, unless one was (a failure's).
     */
    static void recordDeparture(CommHealth c, String what) {
        if (c.recorder == null || c.traceDumped()) {
            return;
        }
        try {
            c.writeTrace(TraceDump.REASON_DEPARTED, "rank " + c.rankUnchecked() + " " + what, null);
        } catch (IOException | RuntimeException e) {
            LOG.warn("nccl4j: rank {} could not write its flight record as it left: {}", c.rankUnchecked(),
                    e.toString());
        }
    }
}
