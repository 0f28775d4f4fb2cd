package org.nccl4j;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.nccl4j.jni.NcclLibrary;

/** Skips GPU tests, with the reason, where there is no NCCL or not enough GPUs. */
final class GpuAssumptions {
    private GpuAssumptions() {
    }

    static void requireGpus(int n) {
        assumeTrue(NcclLibrary.isAvailable(), () -> "no NCCL: " + NcclLibrary.unavailabilityCause());
        int count;
        try {
            count = Cuda.deviceCount();
        } catch (RuntimeException e) {
            assumeTrue(false, "no CUDA runtime or device: " + e.getMessage());
            return;
        }
        assumeTrue(count >= n, "needs " + n + " GPUs, found " + count);
    }

    /** Rank and size under mpirun (Open MPI), or skips. */
    static int[] requireMpiRanks(int min) {
        String size = System.getenv("OMPI_COMM_WORLD_SIZE");
        assumeTrue(size != null && Integer.parseInt(size) >= min, "needs mpirun -np >= " + min + " (OMPI_COMM_WORLD_SIZE)");
        requireGpus(1);
        return new int[] {Integer.parseInt(System.getenv("OMPI_COMM_WORLD_RANK")), Integer.parseInt(size),
            Integer.parseInt(System.getenv("OMPI_COMM_WORLD_LOCAL_RANK"))};
    }
}
