package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.nccl4j.jni.NcclLibrary;
import org.nccl4j.launch.LaunchInfo;

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

    /**
     * This rank under mpirun (Open MPI), or skips. Its device is the local rank modulo the device count
     * ({@link LaunchInfo#detect()}), so that several ranks may share one GPU (each with its own NCCL_HOSTID, as
     * scripts/gpu-test.sh sets when there are more ranks than GPUs).
     */
    static LaunchInfo requireMpiRanks(int min) {
        String size = System.getenv("OMPI_COMM_WORLD_SIZE");
        assumeTrue(size != null && Integer.parseInt(size) >= min, "needs mpirun -np >= " + min + " (OMPI_COMM_WORLD_SIZE)");
        requireGpus(1);
        LaunchInfo launch = LaunchInfo.detect();
        assertEquals(LaunchInfo.Source.OPEN_MPI, launch.source(), launch.toString());
        return launch;
    }
}
