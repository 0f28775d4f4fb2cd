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

    /**
     * {@code adam(float* p, const float* g, float* m, float* v, long long n, float lr, float beta1, float beta2,
     * float eps, float bc1, float bc2)}: one Adam step, as PyTorch's: bc1 and bc2 are the bias corrections
     * {@code 1 - beta^t}.
     */
    static final String ADAM = "adam";

    /** The CUDA C source of the kernels. */
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

            // Adam (torch.optim.Adam, no weight decay): m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
            // p -= (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps).
            extern "C" __global__ void adam(float* __restrict__ p, const float* __restrict__ g,
                                            float* __restrict__ m, float* __restrict__ v, long long n, float lr,
                                            float beta1, float beta2, float eps, float bc1, float bc2) {
                long long stride = (long long) gridDim.x * blockDim.x;
                float step = lr / bc1;
                float root = sqrtf(bc2);
                for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
                    float gi = g[i];
                    float mi = beta1 * m[i] + (1.0f - beta1) * gi;
                    float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
                    m[i] = mi;
                    v[i] = vi;
                    p[i] -= step * mi / (sqrtf(vi) / root + eps);
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
