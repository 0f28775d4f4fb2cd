package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.nccl4j.launch.LaunchInfo;
import org.nccl4j.launch.Rendezvous;

/**
 * The core API with one rank per process under mpirun, on any number of GPUs (ranks beyond the GPU count share
 * them, each with its own NCCL_HOSTID): communicator from the id NCCL derives from NCCL_COMM_ID, the full
 * collective matrix, PreMulSum, a group of several collectives, CUDA graph capture and replay, the three id
 * rendezvous routes, gradient buckets, and splits.
 */
@Tag("gpu")
@Tag("multiprocess")
class CoreMultiProcessGpuTest extends CommunicatorGpuSuite {
    @Override
    protected String label() {
        return comm.size() + " processes";
    }

    @Override
    protected int graphReplays() {
        return 3;
    }

    @BeforeAll
    void setUp() {
        LaunchInfo launch = GpuAssumptions.requireMpiRanks(2);
        System.out.println(launch + ", NCCL_HOSTID=" + System.getenv("NCCL_HOSTID"));
        comm = Communicator.create(launch.rank(), launch.worldSize(), UniqueId.generate(), launch.device(),
                CommConfig.builder().commName("nccl4j-mp-test").build());
        stream = Stream.create(comm.device());
        if (launch.rank() == 0) {
            System.out.println(Nccl.library().report());
        }
    }

    @Test
    void communicatorReportsRankSizeAndDevice() {
        LaunchInfo launch = LaunchInfo.detect();
        assertEquals(launch.rank(), comm.rank());
        assertEquals(launch.worldSize(), comm.size());
        assertEquals(launch.device(), comm.device());
        assertEquals(launch.localRank().getAsInt() % Cuda.deviceCount(), comm.device());
        assertEquals(NcclResult.SUCCESS, comm.asyncError());
    }

    @Test
    void splitByParity() {
        checks().splitByParity();
    }


    /** Port of NCCL_COMM_ID (set per run by gpu-test.sh), so that all ranks derive the same other ports. */
    private static int basePort() {
        String id = org.nccl4j.jni.NcclNative.getenv("NCCL_COMM_ID");
        return Integer.parseInt(id.substring(id.lastIndexOf(':') + 1));
    }

    /**
     * Forms a 2-rank communicator with the id from {@code route}, all-reduces, checks, closes. For the TCP and
     * file routes NCCL_COMM_ID is unset meanwhile (as it is for users of those routes): rank 0 then makes a
     * genuine random id, and ncclCommInitRank on rank 0 does not also try to host a bootstrap root at the
     * NCCL_COMM_ID address.
     */
    private void formThrough(Rendezvous.Builder route, boolean withoutCommId) {
        String commId = org.nccl4j.jni.NcclNative.getenv("NCCL_COMM_ID");
        if (withoutCommId) {
            org.nccl4j.jni.NcclNative.unsetenv("NCCL_COMM_ID");
        }
        try {
            UniqueId id = UniqueId.of(route.rank(comm.rank()).worldSize(comm.size())
                    .timeout(java.time.Duration.ofSeconds(60)).build().exchange(() -> UniqueId.generate().toBytes()));
            allReduceOnNew(id);
        } catch (RuntimeException | AssertionError e) {
            System.err.println("rank " + comm.rank() + ": " + e); // at once: the other rank may now wait
            e.printStackTrace();
            throw e;
        } finally {
            org.nccl4j.jni.NcclNative.setenv("NCCL_COMM_ID", commId, 1);
        }
    }

    private void allReduceOnNew(UniqueId id) {
        try (Communicator c = Communicator.create(comm.rank(), comm.size(), id, comm.device());
             DeviceBuffer b = DeviceBuffer.allocate(c.device(), 1000, DataType.INT64)) {
            assertEquals(comm.size(), c.size());
            assertEquals(comm.rank(), c.rank());
            double[] v = new double[1000];
            for (int i = 0; i < v.length; i++) {
                v[i] = HostData.input(DataType.INT64, c.rank(), i);
            }
            b.copyFrom(HostData.encode(DataType.INT64, v));
            c.allReduce(b, DataType.INT64, ReduceOp.SUM, stream);
            stream.synchronize();
            java.nio.ByteBuffer got = b.toByteBuffer();
            for (int i = 0; i < v.length; i++) {
                double expected = 0;
                for (int r = 0; r < c.size(); r++) {
                    expected += HostData.input(DataType.INT64, r, i);
                }
                assertEquals(expected, HostData.get(got, DataType.INT64, i), "element " + i);
            }
        }
    }

    @Test
    void rendezvousThroughNcclCommId() {
        formThrough(Rendezvous.builder().commId(), false);
    }

    @Test
    void rendezvousThroughTcpServedByRankZero() {
        formThrough(Rendezvous.builder().tcp("127.0.0.1", basePort() + 7).token("gpu-test-token"), true);
    }

    @Test
    void rendezvousThroughSharedFile() {
        java.nio.file.Path file = java.nio.file.Path.of(System.getProperty("java.io.tmpdir"),
                "nccl4j-gpu-test-" + basePort() + ".id");
        formThrough(Rendezvous.builder().file(file).runId("gpu-test-" + basePort() + "-" + System.getenv("OMPI_COMM_WORLD_SIZE")), true);
    }

    @Test
    void gradientBucketsAverageEveryGradientOverRanks() {
        long[] counts = {3000, 700, 5000, 1, 2500};   // float32; a 0.01 MB cap (10485 bytes) makes several buckets
        try (GradientBuckets gb = GradientBuckets.builder(comm).bucketCapMB(0.01).build0(counts)) {
            assertEquals(4, gb.bucketCount());
            for (int step = 0; step < 2; step++) {
                for (int g = counts.length - 1; g >= 0; g--) {   // backward order
                    float[] v = new float[(int) counts[g]];
                    for (int i = 0; i < v.length; i++) {
                        v[i] = (comm.rank() + 1) * (g + 1) + i % 5 + step;
                    }
                    gb.gradient(g).copyFrom(v);   // synchronous copy: written before ready()
                    gb.ready(g, stream);
                }
                gb.finish(stream);
                stream.synchronize();
                for (int g = 0; g < counts.length; g++) {
                    float[] got = gb.gradient(g).copyTo(new float[(int) counts[g]]);
                    for (int i = 0; i < got.length; i++) {
                        float sum = 0;
                        for (int r = 0; r < comm.size(); r++) {
                            sum += (r + 1) * (g + 1) + i % 5 + step;
                        }
                        float expected = sum / comm.size();   // exact for 2 or 4 ranks; 1/3 rounds: a few ulps
                        assertEquals(expected, got[i], Integer.bitCount(comm.size()) == 1 ? 0 : 4 * Math.ulp(expected),
                                "step " + step + " gradient " + g + " element " + i);
                    }
                }
            }
        }
    }

    @Test
    void shrinkWithoutTheLastRankThenAThousandAllReducesCheckedOnTheHost() {
        int last = comm.size() - 1;
        if (comm.rank() == last) {
            return;   // the excluded rank takes no part in the shrink
        }
        try (Communicator small = comm.shrink(last);
             DeviceBuffer b = DeviceBuffer.allocate(comm.device(), 1000, DataType.INT32)) {
            assertEquals(comm.size() - 1, small.size());
            assertEquals(Communicator.rankAfterShrink(comm.rank(), last), small.rank());
            int[] v = new int[1000];
            for (int round = 0; round < 1000; round++) {
                for (int i = 0; i < v.length; i++) {
                    v[i] = (small.rank() + 1) * (i % 7 + 1) + round;
                }
                b.copyFrom(v);
                small.allReduce(b, DataType.INT32, ReduceOp.SUM, stream);
                stream.synchronize();
                int[] got = b.copyTo(new int[v.length]);
                int n = small.size();
                for (int i = 0; i < v.length; i += 97) {
                    assertEquals(n * (n + 1) / 2 * (i % 7 + 1) + n * round, got[i], "round " + round + " element " + i);
                }
            }
        }
    }

    @Test
    void splitIntoOneRankCommunicators() {
        try (Communicator child = comm.split(comm.rank(), 0)) {
            assertNotNull(child);
            assertEquals(1, child.size());
            assertEquals(0, child.rank());
            assertEquals(comm.device(), child.device());
            int n = 777;
            double[] v = new double[n];
            for (int i = 0; i < n; i++) {
                v[i] = HostData.input(DataType.FLOAT32, comm.rank(), i);
            }
            try (DeviceBuffer b = DeviceBuffer.allocate(comm.device(), n, DataType.FLOAT32)
                    .copyFrom(HostData.encode(DataType.FLOAT32, v))) {
                child.allReduce(b, DataType.FLOAT32, ReduceOp.SUM, stream);
                stream.synchronize();
                java.nio.ByteBuffer got = b.toByteBuffer();
                for (int i = 0; i < n; i++) {
                    assertEquals(v[i], HostData.get(got, DataType.FLOAT32, i), "element " + i);
                }
            }
        }
    }
}
