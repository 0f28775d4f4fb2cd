package org.nccl4j;

import java.time.Duration;
import org.nccl4j.control.Durations;

/**
 * {@link Communicator#close()} did not end within the close deadline ({@code NCCL4J_CLOSE_TIMEOUT}, 30 s by
 * default): NCCL's {@code ncclCommFinalize} or {@code ncclCommDestroy} is still running, on a thread of its own
 * ({@code nccl4j-close}), usually because a peer is inside a collective this rank never issued and there is no liveness
 * channel to tell it so (a communicator made by {@link Communicator#create} rather than
 * {@link Communicator#fromEnvironment}). The communicator is left to that call; the process can go on or exit.
 * What to do: make communicators with {@code fromEnvironment} (its channel lets every rank know when one leaves), or
 * {@link Communicator#abort()} a communicator whose peers may not close with it.
 */
public class CloseTimeoutException extends NcclException {
    private static final long serialVersionUID = 1L;

    private final transient Duration timeout;

    CloseTimeoutException(int rank, String call, Duration timeout) {
        super("rank " + rank + ": " + call + " did not return within the close deadline (" + Durations.format(timeout)
                + ", NCCL4J_CLOSE_TIMEOUT): a peer is probably inside a collective this rank never issued. The call "
                + "goes on in the background and the communicator is left to it; abort() communicators whose peers "
                + "may not close with them, or make them with Communicator.fromEnvironment() so that every rank learns "
                + "of a departure", call, 0, null, rank, null);
        this.timeout = timeout;
    }

    /**
     * The deadline that passed.
     *
     * @return the close deadline
     */
    public Duration timeout() {
        return timeout;
    }
}
