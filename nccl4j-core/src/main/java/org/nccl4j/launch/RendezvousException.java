package org.nccl4j.launch;

/**
 * The exchange of NCCL's unique id between ranks failed: a peer did not come in time, a peer was configured
 * differently (world size, token), a message was malformed, or the network or file system failed. The message
 * says which ranks were involved and what to change.
 */
public class RendezvousException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception with {@code message}.
     *
     * @param message what failed, which ranks were involved and what to change
     */
    public RendezvousException(String message) {
        super(message);
    }

    /**
     * An exception with {@code message}, caused by {@code cause}.
     *
     * @param message what failed, which ranks were involved and what to change
     * @param cause the underlying failure, e.g. an {@link java.io.IOException} or a timeout
     */
    public RendezvousException(String message, Throwable cause) {
        super(message, cause);
    }
}
