package org.nccl4j;

import java.util.concurrent.TimeUnit;
import org.nccl4j.jni.NcclNative;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Bytes allocated per collective call through nccl4j's API, measured by JMH's GC profiler
 * ({@code -prof gc}: the {@code gc.alloc.rate.norm} column, in bytes per operation; 0 is the goal).
 *
 * <p>The calls go to the stub NCCL of the native tests (each returns at once, so the figure is nccl4j's own
 * cost: argument checks and one JNI call) and the CUDA runtime is the core tests' fake; neither needs a GPU.
 * Run it with scripts/bench/jmh-alloc.sh, which passes {@code -Dnccl4j.library=.../libnccl-stub.so}. The JUnit test
 * CollectiveAllocationTest (nccl4j-core) asserts the same bound in CI.
 *
 * <p>In package org.nccl4j for the test hook {@code CudaCalls.useBackend}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class CollectiveAllocationBenchmark {
    /** {@code on}: the watchdog watches and the flight recorder records (the default); {@code off}: neither. */
    @Param({"on", "off"})
    public String watchdog;

    private Communicator comm;
    private Stream stream;
    private DeviceBuffer send;
    private DeviceBuffer recv;
    private long sendAddr;
    private long recvAddr;
    private Window window;
    private DeviceBuffer symmetric;
    private Communicator.Registration registeredSend;
    private Communicator.Registration registeredRecv;

    /** Opens the stub NCCL, installs the fake CUDA runtime and makes a 1-rank communicator. */
    @Setup
    public void setUp() {
        if (System.getProperty("nccl4j.library") == null) {
            throw new IllegalStateException("run with -Dnccl4j.library=<nccl4j-native/target/nccl-stub/libnccl-stub.so>"
                    + " (scripts/bench/jmh-alloc.sh does)");
        }
        FakeCuda.install(1);
        Nccl.library();
        NcclNative.unsetenv("NCCL_STUB_LOG"); // the stub then does no file I/O
        CommConfig config = watchdog.equals("on") ? CommConfig.builder().watchdog(true).build()
                : CommConfig.builder().watchdog(false).traceBuffer(0).build();
        comm = Communicator.create(0, 1, UniqueId.of(new byte[UniqueId.BYTES]), 0, config);
        stream = Stream.create(0);
        send = DeviceBuffer.allocate(0, 1 << 20);
        recv = DeviceBuffer.allocate(0, 1 << 20);
        sendAddr = send.address();
        recvAddr = recv.address();
        window = Window.allocate(comm, 1 << 20);   // ncclMemAlloc + ncclCommWindowRegister (symmetric)
        symmetric = window.buffer();
        registeredSend = comm.register(send);      // ncclCommRegister
        registeredRecv = comm.register(recv);
    }

    /** Closes what {@link #setUp()} made. */
    @TearDown
    public void tearDown() {
        registeredRecv.close();
        registeredSend.close();
        window.close();
        recv.close();
        send.close();
        stream.close();
        comm.close();
        CudaCalls.useBackend(null);
    }

    /** {@code allReduce(DeviceBuffer, DeviceBuffer, ...)}. */
    @Benchmark
    public void allReduce() {
        comm.allReduce(send, recv, DataType.FLOAT32, ReduceOp.SUM, stream);
    }

    /** {@code allReduce(long, long, count, ...)} on raw addresses. */
    @Benchmark
    public void allReduceRaw() {
        comm.allReduce(sendAddr, recvAddr, 1024, DataType.FLOAT32, ReduceOp.SUM, stream);
    }

    /** {@code allReduce} in place on a symmetric window's buffer (the registered path of GradientBuckets.symmetric). */
    @Benchmark
    public void allReduceSymmetricWindow() {
        comm.allReduce(symmetric, DataType.FLOAT32, ReduceOp.SUM, stream);
    }

    /** {@code allReduce} on buffers registered with {@code ncclCommRegister} ({@link Communicator#register}). */
    @Benchmark
    public void allReduceRegistered() {
        comm.allReduce(send, recv, DataType.FLOAT32, ReduceOp.SUM, stream);
    }

    /** {@code broadcast(DeviceBuffer, DeviceBuffer, ...)}. */
    @Benchmark
    public void broadcast() {
        comm.broadcast(send, recv, DataType.FLOAT32, 0, stream);
    }

    /** {@code allGather(DeviceBuffer, DeviceBuffer, ...)}. */
    @Benchmark
    public void allGather() {
        comm.allGather(send, recv, DataType.BFLOAT16, stream);
    }

    /** {@code send} then {@code recv} (DeviceBuffer forms). */
    @Benchmark
    public void sendRecv() {
        comm.send(send, DataType.INT8, 0, stream);
        comm.recv(recv, DataType.INT8, 0, stream);
    }

    /** Two all-reduces in a group ({@code Nccl.group()}, try-with-resources). */
    @Benchmark
    public void groupOfTwo() {
        try (Group g = Nccl.group()) {
            comm.allReduce(send, recv, DataType.FLOAT32, ReduceOp.SUM, stream);
            comm.allReduce(recv, send, DataType.FLOAT32, ReduceOp.SUM, stream);
        }
    }

    /** Two all-reduces in a group opened with {@code Nccl.groupStart()}/{@code groupEnd()}: no Group object. */
    @Benchmark
    public void groupStartEndOfTwo() {
        Nccl.groupStart();
        try {
            comm.allReduce(send, recv, DataType.FLOAT32, ReduceOp.SUM, stream);
            comm.allReduce(recv, send, DataType.FLOAT32, ReduceOp.SUM, stream);
        } finally {
            Nccl.groupEnd();
        }
    }
}
