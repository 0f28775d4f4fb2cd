package org.nccl4j.launch;

import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;

/**
 * How rank 0 says the connections it refuses on the job's ports (the rendezvous and the liveness channel), so that a
 * stranger is always named and a flood never fills the log. No NCCL function: nccl4j's own control plane.
 *
 * <p>A refusal is said at WARN when it starts a burst (none came in the {@link #QUIET_MILLIS} ms before it) or when
 * {@link #REMIND_MILLIS} ms have passed since the last WARN of an unbroken burst; every other one at DEBUG, and the
 * next WARN line says how many were said only there. A flood is the time from the first connection that the port's
 * cap on connections waiting to identify themselves closes at accept to {@link #FLOOD_GAP_MILLIS} ms after the last
 * one (see {@link #flooded()}; the port says the flood at WARN itself). A connection that waited during a flood is
 * part of it: its refusal (it said nothing in time, or left) goes to DEBUG.
 *
 * <p>Thread-safe: the liveness channel refuses from one thread per connection.
 */
public final class Refusals {
    /** A burst of refusals ends after this long without one (ms). */
    public static final long QUIET_MILLIS = 2000;
    /** During an unbroken burst, a WARN line again after this long (ms), saying how many were said at DEBUG. */
    public static final long REMIND_MILLIS = 60_000;
    /** A flood ends this long after the last connection closed at accept (ms). */
    public static final long FLOOD_GAP_MILLIS = 10_000;

    private final Logger log;
    private final LongSupplier nanos;
    private volatile long quietNanos = TimeUnit.MILLISECONDS.toNanos(QUIET_MILLIS);
    private long lastRefusal;
    private long lastWarn;
    private boolean any;
    private int unsaid;
    private long floodLast;
    private boolean flooded;

    /**
     * @param log the logger of the port's class (its lines keep their origin)
     */
    public Refusals(Logger log) {
        this(log, System::nanoTime);
    }

    Refusals(Logger log, LongSupplier nanos) {
        if (log == null) {
            throw new IllegalArgumentException("log must not be null: pass the port's logger");
        }
        this.log = log;
        this.nanos = nanos;
    }

    /**
     * Sets how long without a refusal ends a burst; 0 says every refusal at WARN (tests that count one line per
     * refusal).
     *
     * @param millis the quiet time, at least 0
     * @return this
     */
    public Refusals quietMillis(long millis) {
        if (millis < 0) {
            throw new IllegalArgumentException("millis must be at least 0, got " + millis);
        }
        quietNanos = TimeUnit.MILLISECONDS.toNanos(millis);
        return this;
    }

    /**
     * The time on this object's clock, to pass back to {@link #refused(String, long)} as when a connection was
     * accepted.
     *
     * @return now, in nanoseconds of an arbitrary origin
     */
    public long now() {
        return nanos.getAsLong();
    }

    /**
     * Records that the cap on connections waiting to identify themselves closed one at accept: the connections
     * waiting now, or accepted until {@link #FLOOD_GAP_MILLIS} ms after the last such close, are part of the flood.
     *
     * @return whether this close began a flood: the caller says it at WARN then, and only then
     */
    public synchronized boolean flooded() {
        long now = nanos.getAsLong();
        boolean starts = !flooded || now - floodLast > TimeUnit.MILLISECONDS.toNanos(FLOOD_GAP_MILLIS);
        floodLast = now;
        flooded = true;
        return starts;
    }

    /**
     * Says a refused connection that is no part of a flood.
     *
     * @param line the whole line, naming the remote address, why and what happens next
     */
    public void refused(String line) {
        say(line, false);
    }

    /**
     * Says a refused connection accepted at {@code acceptedNanos} ({@link #now()} then): at DEBUG when it waited
     * during a flood, else as {@link #refused(String)}.
     *
     * @param line the whole line
     * @param acceptedNanos when the connection was accepted, on {@link #now()}'s clock
     */
    public void refused(String line, long acceptedNanos) {
        boolean member;
        synchronized (this) {
            // it waited during a flood: one began before it was refused (now), and had not ended when it was accepted
            member = flooded && floodLast + TimeUnit.MILLISECONDS.toNanos(FLOOD_GAP_MILLIS) - acceptedNanos >= 0;
        }
        say(line, member);
    }

    private void say(String line, boolean partOfFlood) {
        if (partOfFlood) {
            log.debug("{} (part of the flood said above)", line);
            return;
        }
        long now = nanos.getAsLong();
        boolean warn;
        int before;
        synchronized (this) {
            warn = !any || now - lastRefusal >= quietNanos
                    || now - lastWarn >= TimeUnit.MILLISECONDS.toNanos(REMIND_MILLIS);
            any = true;
            lastRefusal = now;
            before = unsaid;
            if (warn) {
                lastWarn = now;
                unsaid = 0;
            } else {
                unsaid++;
            }
        }
        if (!warn) {
            log.debug(line);
        } else if (before > 0) {
            log.warn("{} ({} more refused since the last such line, said at DEBUG)", line, before);
        } else {
            log.warn(line);
        }
    }
}
