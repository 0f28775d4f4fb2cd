package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;

/**
 * The core API with one rank per process under mpirun: communicator from the id NCCL derives from
 * NCCL_COMM_ID, the full collective matrix, split into 1-rank communicators.
 */
@Tag("gpu")
@Tag("multiprocess")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CoreMultiProcessGpuTest {
    private Communicator comm;
    private Stream stream;

    @BeforeAll
    void setUp() {
        int[] rs = GpuAssumptions.requireMpiRanks(2);
        comm = Communicator.create(rs[0], rs[1], UniqueId.generate(), rs[2],
                CommConfig.builder().commName("nccl4j-mp-test").build());
        stream = Stream.create(comm.device());
        if (rs[0] == 0) {
            System.out.println(Nccl.library().report());
        }
    }

    @AfterAll
    void tearDown() {
        if (stream != null) {
            stream.close();
        }
        if (comm != null) {
            comm.close();
        }
    }

    @TestFactory
    List<DynamicTest> everyCollectiveTypeOpAndPlacement() {
        return new CollectiveMatrix(List.of(comm), List.of(stream)).tests(comm.size() + " processes");
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
