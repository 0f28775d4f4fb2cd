package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The NVRTC kernel source, run on the CPU: compiled as C with gcc (which the build needs anyway) under a
 * harness that plays the CUDA grid serially, with grids smaller than the data so that the grid-stride loops
 * matter. When nvcc is on the PATH, the source is also compiled to compute_90 PTX as NVRTC will.
 */
class KernelsTest {
    private static final int N = 37;
    private static final int ROWS = 5;
    private static final float[] BIAS = {0.5f, -1.0f, 2.0f, -0.25f, 0.0f};

    @Test
    void blocks() {
        assertEquals(1, Kernels.blocks(1));
        assertEquals(1, Kernels.blocks(256));
        assertEquals(2, Kernels.blocks(257));
        assertEquals(15625, Kernels.blocks(4_000_000));     // a 4000 x 1000 activation
        assertEquals(62500, Kernels.blocks(16_000_000));    // a 4000 x 4000 weight
        assertEquals(Kernels.MAX_BLOCKS, Kernels.blocks(1L << 40));
        assertThrows(IllegalArgumentException.class, () -> Kernels.blocks(0));
    }

    @Test
    void theSourceNamesItsKernelsUnmangledAndIncludesNothing() {
        for (String k : new String[] {Kernels.BIAS_ACT, Kernels.RELU_BACKWARD, Kernels.AFFINE, Kernels.ADAM}) {
            assertTrue(Kernels.SOURCE.contains("extern \"C\" __global__ void " + k + "("), k);
        }
        assertTrue(!Kernels.SOURCE.contains("#include"), "NVRTC has no host headers");
    }

    private static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    private static String run(Path dir, String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), String.join(" ", command) + " timed out");
        assertEquals(0, p.exitValue(), String.join(" ", command) + " failed:\n" + out);
        return out;
    }

    private static final String HARNESS = """
            #include <stdio.h>
            #include <math.h>
            typedef struct { unsigned int x, y, z; } dim_t;
            static dim_t blockIdx, threadIdx, blockDim, gridDim;
            #define __global__
            %s
            #define ALL_THREADS(G, B, CALL) do { \\
                gridDim.x = (G); gridDim.y = gridDim.z = 1; blockDim.x = (B); blockDim.y = blockDim.z = 1; \\
                for (unsigned bb = 0; bb < (G); bb++) for (unsigned tt = 0; tt < (B); tt++) { \\
                    blockIdx.x = bb; threadIdx.x = tt; CALL; } } while (0)
            static void print(const char* name, const float* v, int n) {
                printf("%%s", name);
                for (int i = 0; i < n; i++) printf(" %%.9g", v[i]);
                printf("\\n");
            }
            int main(void) {
                enum { N = %d, ROWS = %d };
                float bias[ROWS] = {0.5f, -1.0f, 2.0f, -0.25f, 0.0f};
                float z[N], zr[N], g[N], a[N], x[N], ap[N], ag[N], am[N], av[N];
                for (int i = 0; i < N; i++) {
                    z[i] = (float) (i %% 7) - 3.0f; zr[i] = z[i];
                    g[i] = 0.5f * i - 4.0f; a[i] = (float) ((i * 5) %% 9) - 4.0f; x[i] = 0.125f * i;
                    ap[i] = 0.25f * i - 2.0f; ag[i] = (float) ((i * 3) %% 11) - 5.0f; am[i] = 0.01f * i;
                    av[i] = 0.002f * (i %% 5);
                }
                ALL_THREADS(3, 4, bias_act(z, bias, ROWS, N, 1));      /* 12 threads for 37 elements */
                ALL_THREADS(2, 8, bias_act(zr, bias, ROWS, N, 0));
                ALL_THREADS(1, 5, relu_backward(g, a, N));
                ALL_THREADS(4, 3, affine(x, N, 2.0f, -1.0f));
                ALL_THREADS(2, 5, adam(ap, ag, am, av, N, 0.01f, 0.9f, 0.999f, 1e-8f, 0.19f, 0.001999f));
                print("bias_relu", z, N); print("bias", zr, N); print("relu_backward", g, N); print("affine", x, N);
                print("adam_p", ap, N); print("adam_m", am, N); print("adam_v", av, N);
                return 0;
            }
            """;

    @Test
    void kernelsComputeWhatOpsSpecifies(@TempDir Path dir) throws Exception {
        assumeTrue(onPath("gcc"), "gcc is not on the PATH");
        String c = String.format(java.util.Locale.ROOT, HARNESS, Kernels.SOURCE.replace("extern \"C\" ", ""), N, ROWS);
        Files.writeString(dir.resolve("kernels.c"), c);
        run(dir, "gcc", "-std=gnu99", "-Wall", "-Werror", "-O1", "-o", "kernels", "kernels.c", "-lm");
        Map<String, float[]> got = new HashMap<>();
        for (String line : run(dir, dir.resolve("kernels").toString()).split("\n")) {
            String[] f = line.trim().split(" ");
            float[] v = new float[f.length - 1];
            for (int i = 1; i < f.length; i++) {
                v[i - 1] = Float.parseFloat(f[i]);
            }
            got.put(f[0], v);
        }

        float[] biasRelu = new float[N];
        float[] bias = new float[N];
        float[] relu = new float[N];
        float[] affine = new float[N];
        for (int i = 0; i < N; i++) {
            float z = (float) (i % 7) - 3.0f;
            float v = z + BIAS[i % ROWS];
            biasRelu[i] = v < 0 ? 0f : v;
            bias[i] = v;
            float a = (float) ((i * 5) % 9) - 4.0f;
            relu[i] = a > 0 ? 0.5f * i - 4.0f : 0f;
            affine[i] = 0.125f * i * 2.0f - 1.0f;
        }
        assertArrayEquals(biasRelu, got.get("bias_relu"));
        assertArrayEquals(bias, got.get("bias"));
        assertArrayEquals(relu, got.get("relu_backward"));
        assertArrayEquals(affine, got.get("affine"));
        float[] p = new float[N];
        float[] m = new float[N];
        float[] sq = new float[N];
        float step = 0.01f / 0.19f;
        float root = (float) Math.sqrt(0.001999f);
        for (int i = 0; i < N; i++) {
            float gi = (float) ((i * 3) % 11) - 5.0f;
            m[i] = 0.9f * (0.01f * i) + (1.0f - 0.9f) * gi;
            sq[i] = 0.999f * (0.002f * (i % 5)) + (1.0f - 0.999f) * gi * gi;
            p[i] = (0.25f * i - 2.0f) - step * m[i] / ((float) Math.sqrt(sq[i]) / root + 1e-8f);
        }
        assertArrayEquals(m, got.get("adam_m"));
        assertArrayEquals(sq, got.get("adam_v"));
        assertArrayEquals(p, got.get("adam_p"), 1e-6f);
        assertTrue(p[0] > -2.0f && p[20] < 3.0f, "the step moves against the gradient: " + p[0] + ", " + p[20]);
        // the data exercises both sides of each branch
        List<Float> zeros = new ArrayList<>();
        for (float v : got.get("bias_relu")) {
            if (v == 0f) {
                zeros.add(v);
            }
        }
        assertTrue(zeros.size() > 3 && zeros.size() < N - 3, "relu zeros: " + zeros.size());
    }

    @Test
    void compilesToComputeNinetyPtxWhenNvccIsPresent(@TempDir Path dir) throws Exception {
        assumeTrue(onPath("nvcc"), "nvcc is not on the PATH");
        Files.writeString(dir.resolve("ddp_kernels.cu"), Kernels.SOURCE);
        run(dir, "nvcc", "-ptx", "-arch=compute_90", "-o", "ddp_kernels.ptx", "ddp_kernels.cu");
        String ptx = Files.readString(dir.resolve("ddp_kernels.ptx"));
        for (String k : new String[] {Kernels.BIAS_ACT, Kernels.RELU_BACKWARD, Kernels.AFFINE, Kernels.ADAM}) {
            assertTrue(ptx.contains(".entry " + k + "("), k);
        }
    }
}
