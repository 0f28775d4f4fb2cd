package org.nccl4j.examples;

/**
 * The elementwise kernels cuBLAS has no routine for, as CUDA C source for NVRTC, and their launch shape.
 * Each is a grid-stride loop over n elements, so any grid covers any n. Names are {@code extern "C"} so
 * {@code cuModuleGetFunction} finds them unmangled. No includes: NVRTC has no host headers.
 */
final class Kernels {
    /** Threads per block. */
    static final int THREADS = 256;
    /** At most this many blocks; the grid-stride loop covers the rest. */
    static final int MAX_BLOCKS = 1 << 16;

    /** {@code bias_act(float* z, const float* bias, long long rows, long long n, int relu)}. */
    static final String BIAS_ACT = "bias_act";
    /** {@code relu_backward(float* g, const float* a, long long n)}. */
    static final String RELU_BACKWARD = "relu_backward";
    /** {@code affine(float* x, long long n, float scale, float shift)}. */
    static final String AFFINE = "affine";

    /** The CUDA C source of the three kernels. */
    static final String SOURCE = """
            // nccl4j DdpTraining kernels, compiled at run time by NVRTC.
            // z[i] += bias[i % rows] (column-major [rows x cols]), then max(z, 0) when relu != 0.
            extern "C" __global__ void bias_act(float* __restrict__ z, const float* __restrict__ bias,
                                                long long rows, long long n, int relu) {
                long long stride = (long long) gridDim.x * blockDim.x;
                for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
                    float v = z[i] + bias[i % rows];
                    z[i] = (relu != 0 && v < 0.0f) ? 0.0f : v;
                }
            }

            // g[i] = a[i] > 0 ? g[i] : 0, a being the ReLU's output (as PyTorch's threshold_backward).
            extern "C" __global__ void relu_backward(float* __restrict__ g, const float* __restrict__ a,
                                                     long long n) {
                long long stride = (long long) gridDim.x * blockDim.x;
                for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
                    if (!(a[i] > 0.0f)) {
                        g[i] = 0.0f;
                    }
                }
            }

            // x[i] = x[i] * scale + shift (turns cuRAND's U(0,1] into U(shift, scale + shift]).
            extern "C" __global__ void affine(float* __restrict__ x, long long n, float scale, float shift) {
                long long stride = (long long) gridDim.x * blockDim.x;
                for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
                    x[i] = x[i] * scale + shift;
                }
            }
            """;

    private Kernels() {
    }

    /**
     * @param n elements to cover, {@code >= 1}
     * @return blocks of {@link #THREADS} threads: one thread per element up to {@link #MAX_BLOCKS} blocks
     */
    static int blocks(long n) {
        if (n < 1) {
            throw new IllegalArgumentException("n must be >= 1, got " + n);
        }
        return (int) Math.min((n + THREADS - 1) / THREADS, MAX_BLOCKS);
    }
}
