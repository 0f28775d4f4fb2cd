package org.nccl4j.launch;

/**
 * The unique-id frame that reached this rank from rank 0's rendezvous failed its MAC: it was forged, replayed or
 * altered between rank 0 and this rank (the job's secret is set, so every frame after the handshake is sealed). The id
 * in it is not used. A rank that has joined rank 0's liveness channel, sealed with keys of its own handshake, asks for
 * the id there instead; the program sees this exception only when that fails too.
 */
public class UniqueIdCheckException extends RendezvousException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what failed, on which rank, between which addresses
     * @param cause the failed check
     */
    public UniqueIdCheckException(String message, Throwable cause) {
        super(message, cause);
    }
}
