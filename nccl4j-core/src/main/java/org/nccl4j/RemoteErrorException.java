package org.nccl4j;

/**
 * NCCL reported {@code ncclRemoteError} for the communicator ({@code ncclCommGetAsyncError}): a peer rank failed,
 * exited or lost its connection. The verdict reads {@code "peer lost: remote error ..."} with NCCL's last error.
 */
public class RemoteErrorException extends CommunicatorFailedException {
    private static final long serialVersionUID = 1L;

    RemoteErrorException(Details d) {
        super(message(d), d, null);
    }

    RemoteErrorException(String message, Details d, Throwable cause) {
        super(message, d, cause);
    }

    @Override
    CommunicatorFailedException again() {
        return new RemoteErrorException(getMessage(), detailsOf(this), this);
    }
}
