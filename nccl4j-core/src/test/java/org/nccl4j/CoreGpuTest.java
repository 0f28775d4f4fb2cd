package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;

/**
 * The core API on one process driving 2 GPUs ({@code ncclCommInitAll}, collectives in groups). Skipped where there
 * are fewer: {@link CoreOneGpuTest} and {@link CoreMultiProcessGpuTest} cover the same on one GPU.
 */
@Tag("gpu")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CoreGpuTest {
    private List<Communicator> comms;
    private final List<Stream> streams = new ArrayList<>();

    @BeforeAll
    void setUp() {
        GpuAssumptions.requireGpus(2);
        System.out.println(Nccl.library().report());
        comms = Communicator.initAll(0, 1);
        for (Communicator c : comms) {
            streams.add(Stream.create(c.device()));
        }
    }

    @AfterAll
    void tearDown() {
        streams.forEach(Stream::close);
        if (comms != null) {
            comms.forEach(Communicator::close);
        }
    }

    @Test
    void initAllReportsRanksSizesDevices() {
        for (int k = 0; k < 2; k++) {
            assertEquals(k, comms.get(k).rank());
            assertEquals(2, comms.get(k).size());
            assertEquals(k, comms.get(k).device());
            assertEquals(NcclResult.SUCCESS, comms.get(k).asyncError());
        }
    }

    @TestFactory
    List<DynamicTest> everyCollectiveTypeOpAndPlacement() {
        return new CollectiveMatrix(comms, streams).tests("1 process x 2 GPUs");
    }

    @TestFactory
    List<DynamicTest> preMulSumWithHostAndDeviceScalars() {
        return new CommunicatorChecks(comms, streams).preMulSumTests("1 process x 2 GPUs");
    }

    @Test
    void threeCollectivesInOneGroup() {
        new CommunicatorChecks(comms, streams).threeCollectivesInOneGroup();
    }
}
