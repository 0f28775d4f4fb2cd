package org.nccl4j.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A reference {@link Ops} on one host float array, with BLAS semantics written out as loops. Addresses are
 * byte addresses into that array (from a nonzero base, 4 bytes per float), so that the model code runs
 * unchanged. Every call checks its arguments as cuBLAS does (leading dimensions) and that every matrix or
 * vector it touches lies inside one allocation, so a wrong shape or leading dimension fails here instead of
 * silently reading a neighbouring buffer. Each call is logged by name for order checks.
 */
final class CpuOps implements Ops {
    static final long BASE = 1L << 20;

    final float[] mem;
    final List<String> log = new ArrayList<>();
    private final List<long[]> allocations = new ArrayList<>(); // {first index, length}
    private int next;
    private final Random data;
    private final Random init;

    CpuOps(int capacityFloats, long initSeed, long dataSeed) {
        this.mem = new float[capacityFloats];
        this.init = new Random(initSeed);
        this.data = new Random(dataSeed);
    }

    /** @return the address of {@code n} fresh floats (filled with NaN: unwritten memory shows up) */
    long alloc(long n) {
        int at = next;
        next = Math.addExact(next, Math.toIntExact(n));
        if (next > mem.length) {
            throw new IllegalStateException("CpuOps memory exhausted");
        }
        java.util.Arrays.fill(mem, at, next, Float.NaN);
        allocations.add(new long[] {at, n});
        return BASE + 4L * at;
    }

    int index(long address) {
        long off = address - BASE;
        if (off < 0 || off % 4 != 0) {
            throw new IllegalArgumentException("bad address " + address);
        }
        return Math.toIntExact(off / 4);
    }

    float get(long address, long i) {
        return mem[index(address) + (int) i];
    }

    void set(long address, long i, float v) {
        mem[index(address) + (int) i] = v;
    }

    /** Checks that [address, address + 4 * span) lies in one allocation. */
    private void within(long address, long span, String what) {
        int start = index(address);
        for (long[] a : allocations) {
            if (start >= a[0] && start < a[0] + a[1]) {
                if (start + span > a[0] + a[1]) {
                    throw new IndexOutOfBoundsException(what + ": " + span + " floats from index " + start
                            + " run past the end of an allocation of " + a[1] + " floats at " + a[0]);
                }
                return;
            }
        }
        throw new IndexOutOfBoundsException(what + ": address " + address + " is in no allocation");
    }

    /** Floats spanned by a column-major rows x cols matrix with leading dimension ld. */
    private static long span(int rows, int cols, int ld) {
        return (long) (cols - 1) * ld + rows;
    }

    @Override
    public void gemm(boolean transA, boolean transB, int m, int n, int k, float alpha, long a, int lda, long b,
            int ldb, float beta, long c, int ldc) {
        log.add("gemm " + (transA ? "T" : "N") + (transB ? "T" : "N"));
        int aRows = transA ? k : m;
        int aCols = transA ? m : k;
        int bRows = transB ? n : k;
        int bCols = transB ? k : n;
        if (m < 0 || n < 0 || k < 0 || lda < Math.max(1, aRows) || ldb < Math.max(1, bRows) || ldc < Math.max(1, m)) {
            throw new IllegalArgumentException("gemm: invalid value (cuBLAS would return CUBLAS_STATUS_INVALID_VALUE):"
                    + " m=" + m + " n=" + n + " k=" + k + " lda=" + lda + " ldb=" + ldb + " ldc=" + ldc);
        }
        within(a, span(aRows, aCols, lda), "gemm A");
        within(b, span(bRows, bCols, ldb), "gemm B");
        within(c, span(m, n, ldc), "gemm C");
        int ia = index(a);
        int ib = index(b);
        int ic = index(c);
        for (int j = 0; j < n; j++) {
            for (int i = 0; i < m; i++) {
                float sum = 0;
                for (int p = 0; p < k; p++) {
                    float av = transA ? mem[ia + p + i * lda] : mem[ia + i + p * lda];
                    float bv = transB ? mem[ib + j + p * ldb] : mem[ib + p + j * ldb];
                    sum += av * bv;
                }
                int ci = ic + i + j * ldc;
                mem[ci] = beta == 0 ? alpha * sum : alpha * sum + beta * mem[ci];
            }
        }
    }

    @Override
    public void gemv(int m, int n, float alpha, long a, int lda, long x, float beta, long y) {
        log.add("gemv");
        if (m < 0 || n < 0 || lda < Math.max(1, m)) {
            throw new IllegalArgumentException("gemv: invalid value m=" + m + " n=" + n + " lda=" + lda);
        }
        within(a, span(m, n, lda), "gemv A");
        within(x, n, "gemv x");
        within(y, m, "gemv y");
        for (int i = 0; i < m; i++) {
            float sum = 0;
            for (int j = 0; j < n; j++) {
                sum += get(a, i + (long) j * lda) * get(x, j);
            }
            set(y, i, beta == 0 ? alpha * sum : alpha * sum + beta * get(y, i));
        }
    }

    @Override
    public void axpy(int n, float alpha, long x, long y) {
        log.add("axpy");
        within(x, n, "axpy x");
        within(y, n, "axpy y");
        for (int i = 0; i < n; i++) {
            set(y, i, alpha * get(x, i) + get(y, i));
        }
    }

    @Override
    public void scal(int n, float alpha, long x) {
        log.add("scal");
        within(x, n, "scal x");
        for (int i = 0; i < n; i++) {
            set(x, i, alpha * get(x, i));
        }
    }

    @Override
    public void nrm2(int n, long x, long result) {
        log.add("nrm2");
        within(x, n, "nrm2 x");
        within(result, 1, "nrm2 result");
        double s = 0;
        for (int i = 0; i < n; i++) {
            s += (double) get(x, i) * get(x, i);
        }
        set(result, 0, (float) Math.sqrt(s));
    }

    @Override
    public void biasAct(long z, long bias, int rows, long n, boolean relu) {
        log.add("bias_act" + (relu ? " relu" : ""));
        within(z, n, "bias_act z");
        within(bias, rows, "bias_act bias");
        for (long i = 0; i < n; i++) {
            float v = get(z, i) + get(bias, i % rows);
            set(z, i, relu && v < 0 ? 0f : v);
        }
    }

    @Override
    public void reluBackward(long g, long a, long n) {
        log.add("relu_backward");
        within(g, n, "relu_backward g");
        within(a, n, "relu_backward a");
        for (long i = 0; i < n; i++) {
            if (!(get(a, i) > 0f)) {
                set(g, i, 0f);
            }
        }
    }

    @Override
    public void normal(long x, long n) {
        log.add("normal");
        if (n % 2 != 0) {
            throw new IllegalArgumentException("n must be even (as cuRAND), got " + n);
        }
        within(x, n, "normal x");
        for (long i = 0; i < n; i++) {
            set(x, i, (float) data.nextGaussian());
        }
    }

    @Override
    public void uniform(long x, long n, float bound) {
        log.add("uniform");
        within(x, n, "uniform x");
        for (long i = 0; i < n; i++) {
            set(x, i, (init.nextFloat() * 2 - 1) * bound);
        }
    }
}
