package org.nccl4j;

/**
 * An executable CUDA graph ({@code cudaGraphExec_t} with its {@code cudaGraph_t}), made from the work captured
 * on a {@link Stream} between {@link Stream#beginCapture()} and {@link Stream#endCapture()}. Launching it
 * replays that work, NCCL collectives included, with one call ({@code cudaGraphLaunch}):
 *
 * <pre>{@code
 * stream.beginCapture();
 * for (int i = 0; i < 100; i++) {
 *     comm.allReduce(buf, DataType.FLOAT32, ReduceOp.SUM, stream);   // recorded, not run
 * }
 * try (CudaGraph graph = stream.endCapture()) {
 *     graph.launch(stream);                          // instantiates once, then runs the 100 all-reduces
 *     stream.synchronize();
 * }
 * }</pre>
 *
 * The buffers, communicators and operators the graph uses must stay open while it may still be launched.
 */
public final class CudaGraph implements AutoCloseable {
    private final long graph;
    private final int device;
    private final Leaks.Token leak;
    private long exec;
    private volatile boolean closed;
    /** The communicators whose operations the graph holds, with how many; each launch is recorded on them. */
    private final Stream.User[] comms;
    private final long[] operations;

    CudaGraph(long graph, int device) {
        this(graph, device, null);
    }

    CudaGraph(long graph, int device, java.util.Map<Stream.User, long[]> captured) {
        this.graph = graph;
        this.device = device;
        int n = captured == null ? 0 : captured.size();
        this.comms = new Stream.User[n];
        this.operations = new long[n];
        if (captured != null) {
            int i = 0;
            for (java.util.Map.Entry<Stream.User, long[]> e : captured.entrySet()) {
                comms[i] = e.getKey();
                operations[i++] = e.getValue()[0];
            }
        }
        this.leak = Leaks.track(this, "CudaGraph captured on device " + device);
    }

    /**
     * {@code cudaGraphInstantiate}, once; {@link #launch(Stream)} calls it on first use. Not allowed while the
     * calling thread still has a capture open (CUDA refuses it then): end every capture first.
     *
     * @return this graph
     */
    public CudaGraph instantiate() {
        if (closed) {
            throw new IllegalStateException("this CudaGraph (device " + device + ") is closed");
        }
        if (exec == 0) {
            Capture.refuseOnCapturingThread("CudaGraph.instantiate (cudaGraphInstantiate)");
            long[] out = new long[1];
            CudaCalls.check(CudaCalls.backend().graphInstantiate(out, graph), "cudaGraphInstantiate", device);
            exec = out[0];
        }
        return this;
    }

    /** @return the device of the stream the graph was captured on */
    public int device() {
        return device;
    }

    /** @return the {@code cudaGraphExec_t} value, instantiating the graph if needed */
    public long handle() {
        return instantiate().exec;
    }

    /** @return whether {@link #close()} was called */
    public boolean isClosed() {
        return closed;
    }

    /**
     * Enqueues one replay of the captured work on {@code stream} ({@code cudaGraphLaunch}).
     *
     * @param stream where to run it, usually the stream it was captured on
     * @throws IllegalStateException when this graph or the stream is closed, or a communicator whose operations the
     *         graph holds is closed or being closed (on any thread); nothing is launched then
     * @throws CommunicatorFailedException when such a communicator failed (its failure)
     */
    public void launch(Stream stream) {
        if (closed) {
            throw new IllegalStateException("this CudaGraph (device " + device + ") is closed");
        }
        stream.ensureOpen();
        if (exec == 0) {
            instantiate();
        }
        for (Stream.User c : comms) {
            c.throwIfFailed();   // its operations in the graph would run on an aborted communicator
        }
        // each communicator entered as by a collective: one closed or being closed (on another thread, say: a
        // shutdown hook) refuses the launch, whose operations would run on a communicator NCCL has freed; a close
        // that begins meanwhile waits for the launch to be over, so that the peers are told it
        int entered = 0;
        try {
            for (; entered < comms.length; entered++) {
                comms[entered].enterIfOpen();
            }
            CudaCalls.check(CudaCalls.backend().graphLaunch(exec, stream.handle()), "cudaGraphLaunch", device);
            for (int i = 0; i < comms.length; i++) {
                comms[i].graphLaunched(stream, operations[i]);   // the watchdog watches each launch
            }
        } finally {
            for (int i = 0; i < entered; i++) {
                comms[i].leaveCall();
            }
        }
    }

    /**
     * Destroys the executable graph and the graph ({@code cudaGraphExecDestroy}, {@code cudaGraphDestroy}).
     * Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        leak.closed();
        int rc = exec == 0 ? 0 : CudaCalls.backend().graphExecDestroy(exec);
        int rc2 = CudaCalls.backend().graphDestroy(graph);
        CudaCalls.check(rc, "cudaGraphExecDestroy", device);
        CudaCalls.check(rc2, "cudaGraphDestroy", device);
    }

    @Override
    public String toString() {
        return "CudaGraph[0x" + Long.toHexString(exec) + ", device " + device + (closed ? ", closed" : "") + "]";
    }
}
