package org.nccl4j.jni;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.javacpp.FloatPointer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * On a GPU: the CUDA runtime nccl4j opened is the one asked for ({@code NCCL4J_CUDA=12}, or
 * {@code NCCL4J_CUDART=.../libcudart.so.12} as a CUDA 12 bundle of scripts/gpu-bundle.sh sets), it is the only
 * CUDA runtime mapped into the process, and device memory makes a round trip through it.
 */
@Tag("gpu")
class CudaRuntimeGpuTest {

    @Test
    void theRuntimeAskedForIsTheOneInUseAndItWorks() throws IOException {
        assumeTrue(CudaRuntime.isAvailable(), () -> "no CUDA runtime: " + CudaRuntime.unavailabilityCause());
        CudaRuntime rt = CudaRuntime.load();
        int[] n = new int[1];
        int rc = CudaNative.cudaGetDeviceCount(n);
        assumeTrue(rc == 0 && n[0] >= 1, "no CUDA device (cudaGetDeviceCount " + rc + ")");
        System.out.println("nccl4j: " + rt.report());

        int expected = expectedMajor();
        if (expected != 0) {
            assertEquals(expected, rt.major(), rt.report());
        }
        List<String> runtimes = Files.readAllLines(Path.of("/proc/self/maps")).stream()
                .map(l -> l.replaceAll("^.* ", "")).filter(p -> p.matches(".*/libcudart\\.so\\.\\d+.*"))
                .distinct().toList();
        assertEquals(List.of(rt.path()), runtimes, "the CUDA runtimes mapped into this JVM");

        float[] x = {1f, 2.5f, -3f, 4.25f};
        long[] d = new long[1];
        assertEquals(0, CudaNative.cudaSetDevice(0));
        assertEquals(0, CudaNative.cudaMalloc(d, 4L * x.length));
        try (FloatPointer host = new FloatPointer(x); FloatPointer back = new FloatPointer(x.length)) {
            assertEquals(0, CudaNative.cudaMemcpy(d[0], host.address(), 4L * x.length, 1));
            int[] attr = new int[2];
            assertEquals(0, CudaNative.cudaPointerGetAttributes(d[0], attr));
            assertEquals(2, attr[0], "cudaMemoryTypeDevice");
            assertEquals(0, attr[1], "device 0");
            assertEquals(0, CudaNative.cudaMemcpy(back.address(), d[0], 4L * x.length, 2));
            float[] got = new float[x.length];
            back.get(got);
            assertArrayEquals(x, got);
        } finally {
            assertEquals(0, CudaNative.cudaFree(d[0]));
        }
        assertTrue(CudaNative.cudaGetErrorName(2).startsWith("cudaError"), CudaNative.cudaGetErrorName(2));
    }

    /** The major the settings ask for: NCCL4J_CUDA, or the one in NCCL4J_CUDART's file name; 0 when neither. */
    private static int expectedMajor() {
        String major = System.getenv(CudaRuntime.MAJOR_ENV);
        if (major != null && !major.isBlank()) {
            return Integer.parseInt(major.strip());
        }
        String lib = System.getenv(CudaRuntime.LIBRARY_ENV);
        Matcher m = Pattern.compile("libcudart\\.so\\.(\\d+)").matcher(lib == null ? "" : lib);
        return m.find() ? Integer.parseInt(m.group(1)) : 0;
    }
}
