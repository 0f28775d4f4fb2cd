package org.nccl4j;

import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;

/**
 * The GPU tests every one-communicator suite runs ({@link CoreOneGpuTest}, {@link CoreMultiProcessGpuTest}): the
 * whole collective matrix, PreMulSum, a group of three collectives and CUDA graph capture and replay, on the
 * communicator and stream the subclass makes in its {@code @BeforeAll}, closed here after the class.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class CommunicatorGpuSuite {
    protected Communicator comm;
    protected Stream stream;

    /** @return how the suite's dynamic tests are labelled, e.g. "1 process x 1 GPU" */
    protected abstract String label();

    /** @return how many times the captured graph is replayed */
    protected abstract int graphReplays();

    @AfterAll
    void closeCommunicatorAndStream() {
        if (stream != null) {
            stream.close();
        }
        if (comm != null) {
            comm.close();
        }
    }

    @TestFactory
    List<DynamicTest> everyCollectiveTypeOpAndPlacement() {
        return new CollectiveMatrix(List.of(comm), List.of(stream)).tests(label());
    }

    @TestFactory
    List<DynamicTest> preMulSumWithHostAndDeviceScalars() {
        return checks().preMulSumTests(label());
    }

    @Test
    void threeCollectivesInOneGroup() {
        checks().threeCollectivesInOneGroup();
    }

    @Test
    void allReduceCapturedInACudaGraphAndReplayed() {
        checks().allReduceCapturedInAGraphAndReplayed(graphReplays());
    }

    protected final CommunicatorChecks checks() {
        return new CommunicatorChecks(List.of(comm), List.of(stream));
    }
}
