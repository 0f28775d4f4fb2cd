package org.nccl4j.examples;

/**
 * The device operations {@link Mlp} is written in: a BLAS subset with cuBLAS' (column-major) semantics, two
 * elementwise kernels and two random fills, all on device addresses and all enqueued on one stream in call
 * order. {@link GpuOps} runs them with cuBLAS, NVRTC-compiled kernels and cuRAND; the CPU tests run the same
 * model code against a reference implementation on host arrays.
 *
 * <p>Matrices are column-major: element (i, j) of a matrix with leading dimension {@code ld} is at
 * {@code i + j * ld}. Addresses are of float32 arrays.
 */
interface Ops {
    /**
     * {@code C = alpha * op(A) * op(B) + beta * C} (cublasSgemm): op(A) is m x k, op(B) is k x n, C is m x n.
     * A is stored m x k ({@code transA} false) or k x m (true) with leading dimension {@code lda}; likewise B.
     * With {@code beta == 0}, C is not read.
     */
    void gemm(boolean transA, boolean transB, int m, int n, int k, float alpha, long a, int lda, long b, int ldb,
            float beta, long c, int ldc);

    /**
     * {@code y = alpha * A * x + beta * y} (cublasSgemv, not transposed): A is m x n with leading dimension
     * {@code lda}, x has n elements, y has m. With {@code beta == 0}, y is not read.
     */
    void gemv(int m, int n, float alpha, long a, int lda, long x, float beta, long y);

    /** {@code y = alpha * x + y} over n elements (cublasSaxpy). */
    void axpy(int n, float alpha, long x, long y);

    /** {@code x = alpha * x} over n elements (cublasSscal). */
    void scal(int n, float alpha, long x);

    /** Writes {@code sqrt(sum x[i]^2)} over n elements to the device float at {@code result} (cublasSnrm2). */
    void nrm2(int n, long x, long result);

    /**
     * {@code z[i] += bias[i % rows]}, then {@code z[i] = max(z[i], 0)} when {@code relu}: the bias of row i of a
     * column-major matrix with {@code rows} rows, over n elements.
     */
    void biasAct(long z, long bias, int rows, long n, boolean relu);

    /** {@code g[i] = a[i] > 0 ? g[i] : 0} over n elements: the gradient through a ReLU whose output was a. */
    void reluBackward(long g, long a, long n);

    /** Fills n floats with N(0, 1) from the data generator (n even). */
    void normal(long x, long n);

    /** Fills n floats with U(-bound, bound) from the initialization generator. */
    void uniform(long x, long n, float bound);
}
