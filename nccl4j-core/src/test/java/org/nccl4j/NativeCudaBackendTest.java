package org.nccl4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.nccl4j.jni.CudaRuntime;
import org.nccl4j.jni.CudaUnavailableException;
import org.nccl4j.jni.StubCudart;

/**
 * Core's real CUDA backend on the CPU: {@link Cuda}, {@link DeviceBuffer} and {@link Stream} through
 * {@link NativeCudaBackend} to the stub CUDA 12 and CUDA 13 runtimes of nccl4j-native's tests (which work on host
 * memory), and the failure when no runtime can be opened.
 */
class NativeCudaBackendTest {

    @AfterEach
    void restore() {
        StubCudart.forget();
        CudaCalls.useBackend(null);
    }

    @Test
    void theApiRunsOnTheCuda12Runtime() {
        CudaRuntime rt = StubCudart.use("cuda12");
        assertEquals(12, rt.major());
        CudaCalls.useBackend(null);
        assertEquals(2, Cuda.deviceCount(), "the CUDA 12 stub has 2 devices");
        assertInstanceOf(NativeCudaBackend.class, CudaCalls.backend());
        float[] x = {1.5f, -2f, 3.25f, 4f};
        try (DeviceBuffer buf = DeviceBuffer.allocate(1, x.length, DataType.FLOAT32);
             Stream stream = Stream.create(1)) {
            buf.copyFrom(x);
            stream.synchronize();
            assertArrayEquals(x, buf.copyTo(new float[x.length]));
            int[] device = new int[1];
            assertEquals(0, CudaCalls.backend().pointerDevice(buf.address(), device));
            assertEquals(1, device[0], "the stub says device 1 owns the buffer");
        }
        CudaException e = assertThrows(CudaException.class, () -> Cuda.setDevice(5));
        assertEquals("cudaSetDevice failed on device 5: cudaErrorInvalidDevice (101): invalid device ordinal (stub "
                + "CUDA runtime)", e.getMessage());
    }

    @Test
    void theSameBackendServesTheCuda13Runtime() {
        StubCudart.use("both");
        CudaCalls.useBackend(null);
        assertEquals(3, Cuda.deviceCount(), "with both runtimes and a CUDA 13 driver the CUDA 13 stub answers");
        try (DeviceBuffer buf = DeviceBuffer.allocate(2, 3, DataType.INT32)) {
            buf.copyFrom(new int[] {7, 8, 9});
            assertArrayEquals(new int[] {7, 8, 9}, buf.copyTo(new int[3]));
        }
    }

    @Test
    void withNoUsableRuntimeEveryCallSaysWhatWasTriedAndTheFix() {
        assertThrows(CudaUnavailableException.class, () -> StubCudart.use("cuda11"));
        CudaCalls.useBackend(null);
        IllegalStateException e = assertThrows(IllegalStateException.class, Cuda::deviceCount);
        assertInstanceOf(CudaUnavailableException.class, e);
        assertTrue(e.getMessage().startsWith("The CUDA runtime could not be loaded: no usable "), e.getMessage());
        assertTrue(e.getMessage().contains("or set NCCL4J_CUDART=/path/to/libcudart.so.12 (or .13)."), e.getMessage());
        assertThrows(CudaUnavailableException.class, () -> DeviceBuffer.allocate(0, 4, DataType.FLOAT32));
    }
}
