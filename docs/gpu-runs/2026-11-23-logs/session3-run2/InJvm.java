/**
 * Experiment (session 3, device call 2): runs the C baseline's own loop (perf/native/nccl_perf_baseline.cu, built
 * into libinjvm.so) inside a JVM process, to tell a cost of the JVM process from a cost of nccl4j's calls.
 * INJVM_LIB: the library; INJVM_ARGS: the baseline's arguments, space-separated; INJVM_NCCL4J=1: load nccl4j and
 * the CUDA presets first (Nccl.version() and a 256-byte DeviceBuffer on this rank's GPU), as nccl4j-perf would.
 */
public final class InJvm {
    private static native int run();

    public static void main(String[] args) throws Exception {
        if ("1".equals(System.getenv("INJVM_NCCL4J"))) {
            int device = Integer.parseInt(System.getenv().getOrDefault("OMPI_COMM_WORLD_LOCAL_RANK", "0"));
            Class<?> nccl = Class.forName("org.nccl4j.Nccl");
            System.err.println("nccl4j loaded NCCL " + nccl.getMethod("version").invoke(null));
            Class<?> buf = Class.forName("org.nccl4j.DeviceBuffer");
            AutoCloseable b = (AutoCloseable) buf.getMethod("allocate", int.class, long.class).invoke(null, device, 256L);
            b.close();
        }
        System.load(System.getenv("INJVM_LIB"));
        System.exit(run());
    }
}
