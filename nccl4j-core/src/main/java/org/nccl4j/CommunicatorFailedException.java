package org.nccl4j;

import java.nio.file.Path;
import java.time.Duration;
import org.nccl4j.control.Durations;

/**
 * A communicator that the watchdog found broken: an operation that did not complete within the timeout
 * ({@link CollectiveTimeoutException}), a peer that failed ({@link RemoteErrorException}), or another error that
 * NCCL reported in the background ({@code ncclCommGetAsyncError}) or CUDA reported on the communicator's stream.
 *
 * <p>The watchdog aborts the communicator ({@code ncclCommAbort}) so that the GPU is released (unless its policy is
 * {@link FailurePolicy#RECOVER}, which keeps it for {@link Communicator#recover}), then delivers this
 * failure to every thread that waits on the communicator's streams ({@link Stream#synchronize()},
 * {@link Event#synchronize()}) and to every later call on the communicator, each time as a new exception of the
 * same class and message whose cause is the watchdog's original.
 *
 * <p>The message names the rank and size, the communicator's name, the operation with its sequence number, count,
 * data type, reduction operator, root or peer, bytes and stream, the time since it was enqueued against the
 * timeout, NCCL's result and last error, where the flight record was written, and a one-line verdict. Every part is
 * also available on its own.
 */
public class CommunicatorFailedException extends NcclException {
    private static final long serialVersionUID = 1L;
    /** Whether a failure has reached the program in this process ({@link #told}). */
    private static volatile boolean toldAny;
    /** When a failure last reached the program ({@link System#nanoTime}). */
    private static volatile long toldNanos;

    /** What the watchdog knew when it found the failure; the pieces of the message. */
    record Details(int rank, int size, String communicator, String operation, long sequence, long count,
            String dataType, String reduceOp, int peer, long bytes, long stream, Duration elapsed, Duration timeout,
            int code, String lastError, Path trace, String verdict, boolean kept, int[] lostRanks) {
    }

    private final transient Details details;

    CommunicatorFailedException(Details d) {
        this(message(d), d, null);
    }

    /** For the copies that later calls throw, and for subclasses. */
    CommunicatorFailedException(String message, Details d, Throwable cause) {
        super(message, ncclFunction(d.operation()), d.code(), d.lastError(), d.rank(), cause);
        this.details = d;
    }

    /**
     * The failure again, for a later call: the same class and message, with this one as the cause (so that the stack
     * trace shows both where the later call was made and where the watchdog found the failure).
     */
    CommunicatorFailedException again() {
        return new CommunicatorFailedException(getMessage(), details, this);
    }

    /** The failure for a thread of the program to throw: the program is told of it. */
    final CommunicatorFailedException toProgram() {
        told();
        return again();
    }

    /** The program has seen this failure: a query returned it, or it closed or aborted the communicator. */
    final void told() {
        toldNanos = System.nanoTime();
        toldAny = true;
    }

    /**
     * Whether a failure has reached the program at or after {@code nanos} ({@link System#nanoTime}): thrown to a
     * thread, returned by a query, or its communicator closed. A rank told of none since its last operation is stuck
     * in its own code ({@code LeftBehindExit} asks).
     */
    static boolean toldSince(long nanos) {
        return toldAny && toldNanos - nanos >= 0;
    }

    static Details detailsOf(CommunicatorFailedException e) {
        return e.details;
    }

    private static String ncclFunction(String operation) {
        return operation == null ? "watchdog" : "nccl" + Character.toUpperCase(operation.charAt(0))
                + operation.substring(1);
    }

    static String message(Details d) {
        StringBuilder sb = new StringBuilder("rank ").append(d.rank()).append(" of ").append(d.size());
        if (d.communicator() != null) {
            sb.append(" (communicator \"").append(d.communicator()).append("\")");
        }
        sb.append(": ").append(d.verdict());
        if (d.operation() != null) {
            sb.append(". Operation: ").append(d.operation()).append(" #").append(d.sequence())
                    .append(", count ").append(d.count());
            if (d.dataType() != null) {
                sb.append(' ').append(d.dataType());
            }
            if (d.reduceOp() != null) {
                sb.append(' ').append(d.reduceOp());
            }
            if (d.peer() >= 0) {
                sb.append(d.operation().equals("send") || d.operation().equals("recv") ? ", peer " : ", root ")
                        .append(d.peer());
            }
            sb.append(", ").append(d.bytes()).append(" bytes, stream 0x").append(Long.toHexString(d.stream()))
                    .append(", enqueued ").append(Durations.format(d.elapsed())).append(" ago");
        } else {
            sb.append(". No operation was pending");
        }
        sb.append(" (timeout ").append(d.timeout() == null ? "off" : Durations.format(d.timeout())).append(')');
        NcclResult r = NcclResult.of(d.code());
        sb.append(". NCCL: ").append(r == NcclResult.UNKNOWN ? "unknown(" + d.code() + ")" : r.ncclName())
                .append(" (").append(d.code()).append(')');
        if (d.lastError() != null && !d.lastError().isEmpty()) {
            sb.append(", last error: ").append(d.lastError());
        }
        sb.append(d.kept() ? ". The communicator was kept for recovery: recover or shrink it, then abort it. Trace: "
                : ". The communicator was aborted. Trace: ")
                .append(d.trace() == null ? "not written" : d.trace().toString())
                .append(": run scripts/nccl4j-trace over the directory of every rank's trace to find the rank that "
                        + "diverged");
        return sb.toString();
    }

    /** @return the rank's number of ranks in the communicator */
    public int size() {
        return details.size();
    }

    /** @return the communicator's name ({@link CommConfig.Builder#commName}), or null */
    public String communicator() {
        return details.communicator();
    }

    /** @return the operation the failure is about (e.g. {@code "allReduce"}), or null when none was pending */
    public String pendingOperation() {
        return details.operation();
    }

    /** @return its sequence number on the communicator (1 for the first operation), or 0 */
    public long sequence() {
        return details.sequence();
    }

    /** @return its element count */
    public long count() {
        return details.count();
    }

    /** @return its data type's NCCL name (e.g. {@code "ncclFloat32"}), or null */
    public String dataType() {
        return details.dataType();
    }

    /** @return its reduction operator's NCCL name (e.g. {@code "ncclSum"}), or null */
    public String reduceOp() {
        return details.reduceOp();
    }

    /** @return its root (rooted collectives) or peer (send, receive), or -1 */
    public int peer() {
        return details.peer();
    }

    /** @return the bytes it sends or reduces on this rank */
    public long bytes() {
        return details.bytes();
    }

    /** @return the {@code cudaStream_t} it was enqueued on */
    public long stream() {
        return details.stream();
    }

    /** @return how long before the failure it was enqueued */
    public Duration elapsed() {
        return details.elapsed();
    }

    /** @return the communicator's timeout, or null when it has none */
    public Duration timeout() {
        return details.timeout();
    }

    /** @return the file the flight record was written to, or null when it could not be written */
    public Path trace() {
        return details.trace();
    }

    /**
     * The ranks known to be gone when the failure was found: from nccl4j's liveness channel (made by
     * {@link Communicator#fromEnvironment} when {@code MASTER_ADDR} and {@code MASTER_PORT} are set), whose
     * connection to rank 0 ended without a goodbye. Ranks of the communicator's numbering.
     *
     * @return the lost ranks, empty when none is known (no channel, or none gone)
     */
    public int[] lostRanks() {
        return details.lostRanks() == null ? new int[0] : details.lostRanks().clone();
    }

    /** @return the one-line verdict, e.g. {@code "allReduce #3 did not complete within 10 s"} */
    public String verdict() {
        return details.verdict();
    }
}
