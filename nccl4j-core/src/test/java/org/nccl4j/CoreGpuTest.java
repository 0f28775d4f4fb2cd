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

/** The core API on one process driving 2 GPUs ({@code ncclCommInitAll}, collectives in groups). */
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
        List<DynamicTest> tests = new ArrayList<>();
        for (DataType t : new DataType[] {DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16,
            DataType.INT32, DataType.INT64, DataType.UINT8}) {
            for (boolean device : new boolean[] {false, true}) {
                tests.add(DynamicTest.dynamicTest("PreMulSum " + t + (device ? " device" : " host") + " scalar",
                        () -> preMulSum(t, device)));
            }
        }
        return tests;
    }

    private void preMulSum(DataType t, boolean deviceScalar) {
        double scalar = t.isFloating() ? 0.5 : 3;
        int n = 1001;
        List<ReduceOp.PreMulSum> ops = new ArrayList<>();
        List<DeviceBuffer> bufs = new ArrayList<>();
        List<DeviceBuffer> scalars = new ArrayList<>();
        try {
            for (Communicator c : comms) {
                double[] v = new double[n];
                for (int i = 0; i < n; i++) {
                    v[i] = HostData.input(t, c.rank(), i) * 2;
                }
                bufs.add(DeviceBuffer.allocate(c.device(), n, t).copyFrom(HostData.encode(t, v)));
                if (deviceScalar) {
                    DeviceBuffer s = DeviceBuffer.allocate(c.device(), 1, t).copyFrom(HostData.encode(t, new double[] {scalar}));
                    scalars.add(s);
                    ops.add(c.createPreMulSum(s, t));
                } else {
                    ops.add(c.createPreMulSum(scalar, t));
                }
            }
            try (Group g = Nccl.group()) {
                for (int k = 0; k < comms.size(); k++) {
                    comms.get(k).allReduce(bufs.get(k), t, ops.get(k), streams.get(k));
                }
            }
            for (int k = 0; k < comms.size(); k++) {
                streams.get(k).synchronize();
                java.nio.ByteBuffer got = bufs.get(k).toByteBuffer();
                for (int i = 0; i < n; i++) {
                    double expected = 0;
                    for (int r = 0; r < 2; r++) {
                        expected += HostData.input(t, r, i) * 2 * scalar;
                    }
                    assertEquals(expected, HostData.get(got, t, i), "rank " + k + " element " + i);
                }
            }
        } finally {
            ops.forEach(ReduceOp.PreMulSum::close);
            bufs.forEach(DeviceBuffer::close);
            scalars.forEach(DeviceBuffer::close);
        }
    }
}
