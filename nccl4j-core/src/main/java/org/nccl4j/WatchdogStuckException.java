package org.nccl4j;

import java.time.Duration;
import org.nccl4j.control.Durations;

/**
 * The watchdog's own thread ({@code nccl4j-watchdog}) made no progress for the stuck timeout
 * ({@code NCCL4J_WATCHDOG_STUCK_TIMEOUT}, by default the longer of 2 minutes and 4 poll intervals): it is stuck,
 * e.g. in a CUDA or NCCL call that never returns or in a failure listener that blocks, so the communicator's hangs
 * and failures are no longer detected. Found by the watchdog's monitor ({@code nccl4j-watchdog-monitor}), which
 * logged the watchdog's stack and every thread's, wrote the flight records and made this the failure of every
 * watched communicator. The verdict reads {@code "the nccl4j watchdog thread made no progress for 2 min (stuck in:
 * ...)"}.
 *
 * <p>Unlike the other failures, the communicator was <em>not</em> aborted: the stuck thread may be inside an NCCL
 * call on it, which an abort would race. It is closed for calls and kept, as under {@link FailurePolicy#RECOVER}:
 * {@link Communicator#abort()} or {@link Communicator#close()} aborts it (after the watchdog's look at it, if the
 * watchdog is stuck inside one), {@link Communicator#recover} or {@link Communicator#shrink} goes on without a rank.
 * Threads waiting on its streams are released with this failure when their waits poll (a communicator of the
 * recover policy used the stream), otherwise when the work they wait for completes; every later wait and call
 * throws it at once.
 */
public class WatchdogStuckException extends CommunicatorFailedException {
    private static final long serialVersionUID = 1L;

    /** How long the watchdog had made no progress. */
    private final Duration stuckFor;
    /** The watchdog thread's top frame (and its innermost frame outside the JDK, when that is another). */
    private final String stuckIn;

    WatchdogStuckException(Details d, Duration stuckFor, String stuckIn) {
        this(stuckMessage(d), d, null, stuckFor, stuckIn);
    }

    private WatchdogStuckException(String message, Details d, Throwable cause, Duration stuckFor, String stuckIn) {
        super(message, d, cause);
        this.stuckFor = stuckFor;
        this.stuckIn = stuckIn;
    }

    @Override
    CommunicatorFailedException again() {
        return new WatchdogStuckException(getMessage(), detailsOf(this), this, stuckFor, stuckIn);
    }

    /** The verdict: {@code "the nccl4j watchdog thread made no progress for N (stuck in: FRAME)"}. */
    static String verdict(Duration stuckFor, String stuckIn) {
        return "the nccl4j watchdog thread made no progress for " + Durations.format(stuckFor) + " (stuck in: "
                + stuckIn + ")";
    }

    private static String stuckMessage(Details d) {
        StringBuilder sb = new StringBuilder("rank ").append(d.rank()).append(" of ").append(d.size());
        if (d.communicator() != null) {
            sb.append(" (communicator \"").append(d.communicator()).append("\")");
        }
        sb.append(": ").append(d.verdict()).append(", so hangs and failures are no longer detected");
        if (d.operation() != null) {
            sb.append(". Oldest pending operation: ").append(d.operation()).append(" #").append(d.sequence())
                    .append(", count ").append(d.count());
            if (d.dataType() != null) {
                sb.append(' ').append(d.dataType());
            }
            if (d.reduceOp() != null) {
                sb.append(' ').append(d.reduceOp());
            }
            sb.append(", ").append(d.bytes()).append(" bytes, stream 0x").append(Long.toHexString(d.stream()))
                    .append(", enqueued ").append(Durations.format(d.elapsed())).append(" ago");
        } else {
            sb.append(". No operation was pending");
        }
        sb.append(" (timeout ").append(d.timeout() == null ? "off" : Durations.format(d.timeout())).append(')');
        return sb.append(". The communicator was not aborted (the stuck thread may be inside an NCCL call on it) and "
                + "is closed for calls: abort() or close() it, or recover or shrink it. Trace: ")
                .append(d.trace() == null ? "not written" : d.trace().toString()).toString();
    }

    /** @return how long the watchdog's thread had made no progress when the monitor found it stuck */
    public Duration stuckFor() {
        return stuckFor;
    }

    /**
     * Where the watchdog's thread was stuck: its top stack frame, followed by {@code ", under "} and its innermost
     * frame outside the JDK when that is another (e.g. {@code "java.lang.Object.wait(Native Method), under
     * org.nccl4j.Watchdog$Watch.look(Watchdog.java:290)"}).
     *
     * @return the frame or frames, or {@code "no stack (the thread has ended)"}
     */
    public String stuckIn() {
        return stuckIn;
    }
}
