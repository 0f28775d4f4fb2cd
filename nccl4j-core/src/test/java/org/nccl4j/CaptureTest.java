package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.jni.StubNccl;

/**
 * CUDA graph capture on a fake CUDA runtime (and the stub NCCL where a communicator is needed): what is refused
 * while a capture is open, on which thread, and that the process-wide count of captures always returns to zero.
 */
class CaptureTest {
    private FakeCuda cuda;

    @BeforeEach
    void fake() {
        cuda = FakeCuda.install(2);
    }

    @AfterEach
    void restore() {
        assertEquals(0, Capture.active(), "a capture was left counted");
        CudaCalls.useBackend(null);
    }

    private static IllegalStateException refused(Runnable r) {
        return assertThrows(IllegalStateException.class, r::run);
    }

    @Test
    void captureRecordsLaunchesAndDestroys() {
        try (Stream s = Stream.create(0)) {
            s.beginCapture();
            assertEquals(1, Capture.active());
            assertTrue(s.isCapturing());
            CudaGraph g = s.endCapture();
            assertEquals(0, Capture.active());
            assertFalse(s.isCapturing());
            g.launch(s);
            g.launch(s);
            s.synchronize();
            g.close();
            g.close();
            assertTrue(g.isClosed());
            assertEquals(0, cuda.liveGraphs());
            assertEquals(1, cuda.calls("streamBeginCapture").stream().filter(c -> c.endsWith(" mode=1")).count(),
                    "capture must use cudaStreamCaptureModeThreadLocal: " + cuda.calls());
            assertEquals(2, cuda.calls("graphLaunch").size());
            assertEquals(1, cuda.calls("graphExecDestroy").size());
            assertThrows(IllegalStateException.class, () -> g.launch(s));
        }
    }

    @Test
    void forbiddenCallsAreRefusedOnTheCapturingThreadWithoutReachingCuda() {
        try (Stream s = Stream.create(0); DeviceBuffer before = DeviceBuffer.allocate(0, 64)) {
            s.beginCapture();
            int callsBefore = cuda.calls().size();
            IllegalStateException e = refused(() -> DeviceBuffer.allocate(0, 1024));
            assertTrue(e.getMessage().contains("DeviceBuffer.allocate (cudaMalloc)"), e.getMessage());
            assertTrue(e.getMessage().contains("capturing a CUDA graph"), e.getMessage());
            refused(() -> DeviceBuffer.allocate(0, 16, DataType.FLOAT32));
            refused(before::close);
            assertFalse(before.isClosed(), "a refused close must leave the buffer open");
            refused(() -> before.fill(0));
            refused(() -> before.copyFrom(new float[4]));
            refused(() -> before.copyTo(new int[4]));
            e = refused(s::synchronize);
            assertTrue(e.getMessage().contains("Stream.synchronize()"), e.getMessage());
            assertTrue(e.getMessage().contains("endCapture()"), e.getMessage());
            refused(() -> Cuda.synchronize(s));
            assertEquals(callsBefore, cuda.calls().size(), "refused calls reached CUDA: " + cuda.calls());
            // a second stream may not be synchronized from the capturing thread either
            try (Stream other = Stream.create(0)) {
                refused(other::synchronize);
            }
            s.endCapture().close();
            // allowed again
            DeviceBuffer.allocate(0, 1024).close();
            s.synchronize();
        }
    }

    @Test
    void otherThreadsMayAllocateButNotSynchronizeTheCapturingStream() throws Exception {
        try (Stream s = Stream.create(0)) {
            s.beginCapture();
            try {
                CompletableFuture.runAsync(() -> DeviceBuffer.allocate(0, 256).close()).get();
                ExecutionException e = assertThrows(ExecutionException.class,
                        () -> CompletableFuture.runAsync(s::synchronize).get());
                assertTrue(e.getCause() instanceof IllegalStateException, String.valueOf(e.getCause()));
                assertTrue(e.getCause().getMessage().contains("is capturing a CUDA graph"), e.getCause().getMessage());
                ExecutionException end = assertThrows(ExecutionException.class,
                        () -> CompletableFuture.supplyAsync(s::endCapture).get());
                assertTrue(end.getCause().getMessage().contains("must be ended there"), end.getCause().getMessage());
            } finally {
                s.endCapture().close();
            }
        }
    }

    @Test
    void misuseOfBeginAndEndIsExplained() {
        try (Stream s = Stream.create(0)) {
            IllegalStateException e = refused(s::endCapture);
            assertTrue(e.getMessage().contains("not capturing"), e.getMessage());
            s.beginCapture();
            e = refused(s::beginCapture);
            assertTrue(e.getMessage().contains("already capturing"), e.getMessage());
            s.endCapture().close();
        }
    }

    @Test
    void failedOrInvalidatedCapturesStillEnd() {
        try (Stream s = Stream.create(0)) {
            cuda.fail("streamEndCapture", 901);
            s.beginCapture();
            CudaException e = assertThrows(CudaException.class, s::endCapture);
            assertTrue(e.getMessage().contains("cudaStreamEndCapture"), e.getMessage());
            assertEquals(0, Capture.active());

            cuda.fail("streamEndCapture", 0);
            cuda.invalidateCaptures(true);
            s.beginCapture();
            IllegalStateException inv = refused(s::endCapture);
            assertTrue(inv.getMessage().contains("invalidated"), inv.getMessage());
            assertEquals(0, Capture.active());

            cuda.invalidateCaptures(false);
            cuda.fail("graphInstantiate", 1);
            s.beginCapture();
            CudaGraph g = s.endCapture(); // instantiated lazily, at the first launch
            assertEquals(0, Capture.active());
            CudaException ie = assertThrows(CudaException.class, () -> g.launch(s));
            assertTrue(ie.getMessage().contains("cudaGraphInstantiate"), ie.getMessage());
            g.close();
            assertEquals(0, cuda.liveGraphs(), "closing a graph that never instantiated must destroy it");
            s.synchronize();
        }
    }

    private long count(String call) {
        return cuda.calls(call).size();
    }

    @Test
    void severalStreamsAreCapturedThenInstantiatedOnceEveryCaptureEnded() {
        try (Stream a = Stream.create(0); Stream b = Stream.create(1)) {
            a.beginCapture();
            b.beginCapture();
            CudaGraph ga = a.endCapture();
            IllegalStateException refused = refused(ga::instantiate);
            assertTrue(refused.getMessage().contains("cudaGraphInstantiate"), refused.getMessage());
            CudaGraph gb = b.endCapture();
            ga.launch(a);
            gb.launch(b);
            assertEquals(2, count("graphInstantiate"));
            assertEquals(2, count("graphLaunch"));
            ga.launch(a);
            assertEquals(2, count("graphInstantiate"), "instantiated once");
            ga.close();
            gb.close();
            assertEquals(0, cuda.liveGraphs());
        }
    }

    @Test
    void closingACapturingStreamEndsTheCapture() {
        Stream s = Stream.create(0);
        s.beginCapture();
        s.close();
        assertEquals(0, Capture.active());
        assertEquals(0, cuda.liveGraphs());
        DeviceBuffer.allocate(0, 8).close();
    }

    @Test
    void aGraphHoldingAClosedCommunicatorsOperationsIsNotLaunched() {
        StubNccl.useFull();
        try (Stream s = Stream.create(0); DeviceBuffer buf = DeviceBuffer.allocate(0, 1024)) {
            Communicator comm = Communicator.create(0, 1, UniqueId.of(new byte[UniqueId.BYTES]), 0);
            s.beginCapture();
            try {
                comm.allReduce(buf, DataType.FLOAT32, ReduceOp.SUM, s);
            } finally {
                try (CudaGraph g = s.endCapture()) {
                    g.launch(s);
                    comm.close();
                    IllegalStateException e = refused(() -> g.launch(s));
                    assertEquals("this Communicator (rank 0 of 1) is closed", e.getMessage());
                    assertEquals(1, cuda.calls("graphLaunch").size(), "the launch after the close reached CUDA");
                }
            }
        }
    }

    @Test
    void collectivesAreCapturedButRegistrationIsRefused() {
        StubNccl.useFull();
        try (Communicator comm = Communicator.create(0, 1, UniqueId.of(new byte[UniqueId.BYTES]), 0);
             Stream s = Stream.create(0);
             DeviceBuffer buf = DeviceBuffer.allocate(0, 1024)) {
            s.beginCapture();
            try {
                comm.allReduce(buf, DataType.FLOAT32, ReduceOp.SUM, s);
                comm.broadcast(buf, DataType.FLOAT32, 0, s);
                IllegalStateException e = refused(() -> comm.register(buf));
                assertTrue(e.getMessage().contains("Communicator.register"), e.getMessage());
            } finally {
                s.endCapture().close();
            }
            assertEquals(2, comm.operationsEnqueued());
            comm.register(buf).close();
        }
    }
}
