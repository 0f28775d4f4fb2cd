import org.nccl4j.Communicator;
import org.nccl4j.DeviceBuffer;
import org.nccl4j.Stream;

/**
 * Experiment (session 3, device call 3; again in session 4, call 3): the C baseline's loop (injvm2.cu) inside a JVM, given some of its objects
 * by nccl4j, to find which of them makes nccl4j-perf's all_reduce at 64 MiB ~1.5 us slower than C's (call 2: the
 * C loop in a JVM with nccl4j loaded is as fast as C). INJVM_GIVE: any of "comm", "stream", "bufs" (comma
 * separated): the communicator (Communicator.fromEnvironment), the stream (Stream.create), the send and receive
 * buffers (DeviceBuffer.allocate, 64 MiB each, zeroed) come from nccl4j; the rest the C code makes itself.
 */
public final class InJvm2 {
    private static native int run(long comm, long stream, long send, long recv);

    public static void main(String[] args) {
        String give = System.getenv().getOrDefault("INJVM_GIVE", "");
        int device = Integer.parseInt(System.getenv().getOrDefault("OMPI_COMM_WORLD_LOCAL_RANK", "0"));
        Communicator comm = give.contains("comm") ? Communicator.fromEnvironment() : null;
        Stream stream = give.contains("stream") ? Stream.create(device) : null;
        DeviceBuffer send = give.contains("bufs") ? DeviceBuffer.allocate(device, 64L << 20).fill(0) : null;
        DeviceBuffer recv = give.contains("bufs") ? DeviceBuffer.allocate(device, 64L << 20).fill(0) : null;
        System.err.println("InJvm2: nccl4j gives [" + give + "] on device " + device);
        System.load(System.getenv("INJVM_LIB"));
        int rc = run(comm == null ? 0 : comm.handle(), stream == null ? 0 : stream.handle(),
                send == null ? 0 : send.address(), recv == null ? 0 : recv.address());
        Runtime.getRuntime().halt(rc); // the C code has destroyed what it was given
    }
}
