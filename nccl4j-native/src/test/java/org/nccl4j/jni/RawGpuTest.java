package org.nccl4j.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * First GPU evidence of the raw layer: all-reduce of float32 sums through NcclNative alone, checked element
 * by element against the sum computed on the host. Runs on the GPU machine (tag "gpu"); the multi-process
 * case also needs "multiprocess" (run under mpirun by scripts/gpu-test.sh, which lets ranks share GPUs when there
 * are more ranks than GPUs).
 */
@Tag("gpu")
class RawGpuTest {
    static final int COUNT = 1 << 20;

    static final class Addr extends Pointer {
        Addr(long a) {
            address = a;
        }
    }

    @BeforeAll
    static void requireNcclAndGpus() {
        assumeTrue(NcclLibrary.isAvailable(), () -> "no NCCL: " + NcclLibrary.unavailabilityCause());
        int[] n = new int[1];
        int rc;
        try {
            rc = cudart.cudaGetDeviceCount(n);
        } catch (Throwable e) {
            rc = -1;
        }
        assumeTrue(rc == 0 && n[0] >= 1, "no CUDA device (cudaGetDeviceCount rc=" + rc + ")");
        System.out.println(NcclLibrary.load().report());
    }

    static float value(int rank, int i) {
        return (rank + 1) * 0.5f + (i % 1000) * 0.25f;
    }

    static long deviceAlloc(int device, float[] host) {
        check(cudart.cudaSetDevice(device), "cudaSetDevice");
        PointerPointer<Pointer> p = new PointerPointer<>(1);
        check(cudart.cudaMalloc(p, 4L * host.length), "cudaMalloc");
        long addr = p.get(0).address();
        try (FloatPointer h = new FloatPointer(host)) {
            check(cudart.cudaMemcpy(new Addr(addr), h, 4L * host.length, cudart.cudaMemcpyHostToDevice), "cudaMemcpy");
        }
        return addr;
    }

    static float[] deviceRead(long addr, int n) {
        float[] out = new float[n];
        try (FloatPointer h = new FloatPointer(n)) {
            check(cudart.cudaMemcpy(h, new Addr(addr), 4L * n, cudart.cudaMemcpyDeviceToHost), "cudaMemcpy");
            h.get(out);
        }
        return out;
    }

    static void check(int rc, String what) {
        if (rc != 0) {
            throw new AssertionError(what + " failed: " + rc + " " + cudart.cudaGetErrorString(rc).getString());
        }
    }

    static void checkNccl(int rc, NcclFunction fn) {
        NcclLibrary.checkLinked(rc, fn);
        if (rc != 0) {
            throw new AssertionError(fn + " failed: " + rc + " " + NcclNative.ncclGetErrorString(rc));
        }
    }

    static void assertSums(float[] got, int ranks, String who) {
        int wrong = 0;
        for (int i = 0; i < got.length; i++) {
            float expected = 0;
            for (int r = 0; r < ranks; r++) {
                expected += value(r, i);
            }
            if (got[i] != expected) {
                if (wrong++ < 5) {
                    System.out.println(who + ": element " + i + " expected " + expected + " got " + got[i]);
                }
            }
        }
        System.out.println(who + ": " + got.length + " elements checked, " + wrong + " wrong");
        assertEquals(0, wrong, who + ": elements differing from the host-computed sum");
    }

    /** (a) one process, ncclCommInitAll on 2 GPUs, float32 sum all-reduce. */
    @Test
    void initAllTwoGpusAllReduceFloatSum() {
        int[] n = new int[1];
        cudart.cudaGetDeviceCount(n);
        assumeTrue(n[0] >= 2, "needs 2 GPUs, found " + n[0]);
        int ndev = 2;
        long[] comms = new long[ndev];
        checkNccl(NcclNative.ncclCommInitAll(comms, ndev, new int[] {0, 1}), NcclFunction.ncclCommInitAll);
        long[] bufs = new long[ndev];
        for (int d = 0; d < ndev; d++) {
            float[] host = new float[COUNT];
            for (int i = 0; i < COUNT; i++) {
                host[i] = value(d, i);
            }
            bufs[d] = deviceAlloc(d, host);
        }
        checkNccl(NcclNative.ncclGroupStart(), NcclFunction.ncclGroupStart);
        for (int d = 0; d < ndev; d++) {
            checkNccl(NcclNative.ncclAllReduce(bufs[d], bufs[d], COUNT, 7, 0, comms[d], 0L), NcclFunction.ncclAllReduce);
        }
        checkNccl(NcclNative.ncclGroupEnd(), NcclFunction.ncclGroupEnd);
        for (int d = 0; d < ndev; d++) {
            check(cudart.cudaSetDevice(d), "cudaSetDevice");
            check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
            assertSums(deviceRead(bufs[d], COUNT), ndev, "initAll device " + d);
            int[] out = new int[1];
            checkNccl(NcclNative.ncclCommUserRank(comms[d], out), NcclFunction.ncclCommUserRank);
            assertEquals(d, out[0]);
            checkNccl(NcclNative.ncclCommCount(comms[d], out), NcclFunction.ncclCommCount);
            assertEquals(ndev, out[0]);
            checkNccl(NcclNative.ncclCommCuDevice(comms[d], out), NcclFunction.ncclCommCuDevice);
            assertEquals(d, out[0]);
        }
        for (int d = 0; d < ndev; d++) {
            cudart.cudaFree(new Addr(bufs[d]));
            checkNccl(NcclNative.ncclCommDestroy(comms[d]), NcclFunction.ncclCommDestroy);
        }
    }

    /** (a') one process, ncclCommInitAll on 1 GPU: a one-rank communicator, out-of-place and in-place float32 sum. */
    @Test
    void initAllOneGpuAllReduceFloatSum() {
        long[] comm = new long[1];
        checkNccl(NcclNative.ncclCommInitAll(comm, 1, new int[] {0}), NcclFunction.ncclCommInitAll);
        float[] host = new float[COUNT];
        for (int i = 0; i < COUNT; i++) {
            host[i] = value(0, i);
        }
        long send = deviceAlloc(0, host);
        long recv = deviceAlloc(0, new float[COUNT]);
        checkNccl(NcclNative.ncclAllReduce(send, recv, COUNT, 7, 0, comm[0], 0L), NcclFunction.ncclAllReduce);
        checkNccl(NcclNative.ncclAllReduce(send, send, COUNT, 7, 0, comm[0], 0L), NcclFunction.ncclAllReduce);
        check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        assertSums(deviceRead(recv, COUNT), 1, "initAll 1 GPU out-of-place");
        assertSums(deviceRead(send, COUNT), 1, "initAll 1 GPU in-place");
        int[] out = new int[1];
        checkNccl(NcclNative.ncclCommCount(comm[0], out), NcclFunction.ncclCommCount);
        assertEquals(1, out[0]);
        cudart.cudaFree(new Addr(send));
        cudart.cudaFree(new Addr(recv));
        checkNccl(NcclNative.ncclCommDestroy(comm[0]), NcclFunction.ncclCommDestroy);
    }

    /**
     * (b) one rank per process under mpirun: ncclCommInitRank with the id every rank derives from NCCL_COMM_ID,
     * out-of-place float32 sum all-reduce.
     */
    @Test
    @Tag("multiprocess")
    void initRankAcrossProcessesAllReduceFloatSum() {
        String sizeVar = System.getenv("OMPI_COMM_WORLD_SIZE");
        assumeTrue(sizeVar != null && Integer.parseInt(sizeVar) >= 2, "needs mpirun -np >= 2 (OMPI_COMM_WORLD_SIZE)");
        assumeTrue(NcclNative.getenv("NCCL_COMM_ID") != null, "needs NCCL_COMM_ID=host:port for every rank");
        int size = Integer.parseInt(sizeVar);
        int rank = Integer.parseInt(System.getenv("OMPI_COMM_WORLD_RANK"));
        int[] devices = new int[1];
        check(cudart.cudaGetDeviceCount(devices), "cudaGetDeviceCount");
        // ranks beyond the GPU count share GPUs (each with its own NCCL_HOSTID, set by scripts/gpu-test.sh)
        int device = Integer.parseInt(System.getenv("OMPI_COMM_WORLD_LOCAL_RANK")) % devices[0];
        check(cudart.cudaSetDevice(device), "cudaSetDevice");
        byte[] id = new byte[NcclNative.UNIQUE_ID_BYTES];
        checkNccl(NcclNative.ncclGetUniqueId(id), NcclFunction.ncclGetUniqueId);
        long[] comm = new long[1];
        checkNccl(NcclNative.ncclCommInitRank(comm, size, id, rank), NcclFunction.ncclCommInitRank);
        float[] host = new float[COUNT];
        for (int i = 0; i < COUNT; i++) {
            host[i] = value(rank, i);
        }
        long send = deviceAlloc(device, host);
        long recv = deviceAlloc(device, new float[COUNT]);
        checkNccl(NcclNative.ncclAllReduce(send, recv, COUNT, 7, 0, comm[0], 0L), NcclFunction.ncclAllReduce);
        check(cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        assertSums(deviceRead(recv, COUNT), size, "rank " + rank + " of " + size);
        cudart.cudaFree(new Addr(send));
        cudart.cudaFree(new Addr(recv));
        checkNccl(NcclNative.ncclCommFinalize(comm[0]), NcclFunction.ncclCommFinalize);
        checkNccl(NcclNative.ncclCommDestroy(comm[0]), NcclFunction.ncclCommDestroy);
    }
}
