package org.nccl4j.control;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.WeakHashMap;
import org.nccl4j.launch.JobSecret;
import org.nccl4j.launch.LaunchInfo;
import org.nccl4j.launch.RollCall;
import org.nccl4j.trace.TraceDump;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ranks gone when the liveness channel's hub, launch rank 0, is gone too
 * ({@link org.nccl4j.Communicator#lostRanks}). Rank 0 tells every rank of each loss; once it is lost, the ranks lost
 * with it (the other ranks of its host) are reported to nobody, and the remaining ranks would leave out rank 0 alone
 * and wait in a recovery for ranks that are dead. So each remaining rank answers a {@link RollCall} from the moment
 * it learns that rank 0 is gone (on {@code MASTER_PORT + }{@value #PORT_OFFSET}{@code  + its launch rank}, on its own
 * host), and {@link #lostRanks} asks every rank not yet known gone, for the settle time or {@link #MIN_WINDOW} (the
 * longer): those that do not answer are gone too.
 */
public final class Survivors {
    /** The roll call's ports start at {@code MASTER_PORT} plus this (the recovery rendezvous uses +100 + N). */
    static final int PORT_OFFSET = 200;
    /** The shortest roll call: every remaining rank must have learnt of rank 0's loss and answer within it. */
    static final Duration MIN_WINDOW = Duration.ofSeconds(3);
    /** Where a rank of this host is asked. */
    static final String LOOPBACK = "127.0.0.1";

    private static final Logger LOG = LoggerFactory.getLogger(Survivors.class);
    private static final Map<Liveness, RollCall> ANSWERING = Collections.synchronizedMap(new WeakHashMap<>());

    private Survivors() {
    }

    /**
     * News from the channel: once rank 0 is gone, this rank answers the roll call.
     *
     * @param l the channel
     */
    public static void heard(Liveness l) {
        if (hubGone(l)) {
            answer(l, basePort(LaunchInfo.rankZeroAddress()));
        }
    }

    /**
     * The ranks gone, once settled; when rank 0 is among them, with those that do not answer the roll call.
     *
     * @param l the channel
     * @param settle how long no new loss must be reported
     * @param size the communicator's size
     * @return the ranks gone, of the communicator now served, sorted
     */
    public static int[] lostRanks(Liveness l, Duration settle, int size) {
        int[] gone = l.goneOnceSettled(settle);
        if (!hubGone(l)) {
            return gone;
        }
        String[] master = LaunchInfo.rankZeroAddress();
        int base = basePort(master);
        if (answer(l, base) == null) {
            LOG.warn("nccl4j: rank 0, the liveness channel's hub, is gone and no roll call can be made (MASTER_PORT "
                    + "is not set, or this rank's roll-call port is taken): ranks lost with it are not known; gone: {}",
                    java.util.Arrays.toString(gone));
            return gone;
        }
        Set<Integer> known = new TreeSet<>();
        for (int r : gone) {
            known.add(r);
        }
        Map<Integer, RankProcess> roster = l.roster();
        String fallback = master[0];
        String self = TraceDump.localHost().replace(' ', '_');   // as this rank named its host in its hello
        int me = l.launchRankOfSelf();
        Map<Integer, InetSocketAddress> ask = new LinkedHashMap<>();
        Map<Integer, Integer> byLaunch = new LinkedHashMap<>();
        for (int r = 0; r < size; r++) {
            int launch = l.launchRank(r);
            if (known.contains(r) || launch < 0 || launch == me) {
                continue;
            }
            RankProcess at = roster.get(launch);
            String host = at == null || at.host() == null ? fallback
                    : at.host().equals(self) ? LOOPBACK   // a rank of this host: no name to look up
                    : at.host();
            // resolved by the asking threads, in parallel: a name that takes long to look up delays only its own
            ask.put(launch, InetSocketAddress.createUnresolved(host, base + launch));
            byLaunch.put(launch, r);
        }
        Duration window = settle.compareTo(MIN_WINDOW) > 0 ? settle : MIN_WINDOW;
        Set<Integer> answered;
        long t0 = System.nanoTime();
        try {
            answered = RollCall.ask(me, ask, window, JobSecret.fromEnvironment());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return gone;
        }
        Set<Integer> silent = new TreeSet<>();
        for (Map.Entry<Integer, Integer> e : byLaunch.entrySet()) {
            if (!answered.contains(e.getKey())) {
                silent.add(e.getValue());
            }
        }
        known.addAll(silent);
        LOG.warn("nccl4j: rank {}: rank 0, the liveness channel's hub, is gone, so the ranks lost with it were reported"
                + " to nobody; a roll call of the {} others answered by {} in {} ms: also gone {}; gone in all {}",
                me, ask.size(), answered.size(), (System.nanoTime() - t0) / 1_000_000, silent, known);
        return known.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * Whether launch rank 0, the hub, is lost (its connection ended without a goodbye, or went silent) or was left
     * out by a recovery, and this rank is not it. A rank 0 that said it closes still serves the channel until its
     * close is done, and is not gone in this sense.
     *
     * @param l the channel
     * @return whether the hub is gone for this rank
     */
    public static boolean hubGone(Liveness l) {
        if (l.launchRankOfSelf() == 0) {
            return false;
        }
        int hub = l.currentRank(0);
        if (hub < 0) {
            return true;
        }
        for (RankProcess lost : l.lost()) {
            if (lost.rank() == hub) {
                return true;
            }
        }
        return false;
    }

    /** {@code MASTER_PORT + PORT_OFFSET} (or NCCL_COMM_ID's port's) of {@code master}, or -1 when there is none. */
    static int basePort(String[] master) {
        int port = master == null ? -1 : LaunchInfo.portNumber(master[1]);
        return port < 0 ? -1 : port + PORT_OFFSET;
    }

    /** Stops this rank's answering of the roll call, if it answers: the port is free again. The channel's close. */
    static void forget(Liveness l) {
        RollCall r = ANSWERING.remove(l);
        if (r != null) {
            r.close();
        }
    }

    /** This rank's answering side on {@code base + its rank}, started once per channel; null when it cannot be. */
    private static RollCall answer(Liveness l, int base) {
        synchronized (ANSWERING) {
            RollCall r = ANSWERING.get(l);
            if (r != null) {
                return r;
            }
            if (base < 0 || l.closing()) {   // closed: its close has stopped answering, and nothing starts it again
                return null;
            }
            int me = l.launchRankOfSelf();
            try {
                // until the channel closes: every later loss's roll call needs this rank's answer as well (a
                // fixed linger left a second loss, minutes after rank 0's, with nobody answering)
                r = RollCall.answer(me, base + me, JobSecret.fromEnvironment());
            } catch (java.io.IOException | IllegalArgumentException e) {
                LOG.warn("nccl4j: rank {} cannot answer the roll call after rank 0's loss: {}", me, e.getMessage());
                return null;
            }
            ANSWERING.put(l, r);
            l.whenClosed(() -> forget(l));   // its close stops the answering
            return r;
        }
    }
}
