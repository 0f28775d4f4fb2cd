package org.nccl4j;

/**
 * The {@link CommHealth.Hooks} of one communicator: the program's {@link OperationObserver} and
 * {@link FailureListener}, called with the {@link Communicator}, which {@code CommHealth} and the classes below it
 * never name.
 */
final class ProgramHooks implements CommHealth.Hooks {
    private final Communicator comm;

    ProgramHooks(Communicator comm) {
        this.comm = comm;
    }

    @Override
    public boolean observed() {
        return comm.observer() != null;
    }

    @Override
    public void completed(long from, long to, long nowNanos) {
        OperationObserver o = comm.observer();
        if (o != null) {
            o.completed(comm, from, to, nowNanos);
        }
    }

    @Override
    public void failed(CommunicatorFailedException f) {
        OperationObserver o = comm.observer();
        if (o != null) {
            o.failed(comm, f);
        }
    }

    @Override
    public void tell(FailureListener listener, CommunicatorFailedException f) {
        listener.onFailure(comm, f);
    }
}
