package org.nccl4j.examples;

import static org.bytedeco.cuda.global.cublas.CUBLAS_DEFAULT_MATH;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_N;
import static org.bytedeco.cuda.global.cublas.CUBLAS_OP_T;
import static org.bytedeco.cuda.global.cublas.CUBLAS_POINTER_MODE_DEVICE;
import static org.bytedeco.cuda.global.cublas.CUBLAS_POINTER_MODE_HOST;
import static org.bytedeco.cuda.global.cublas.cublasCreate_v2;
import static org.bytedeco.cuda.global.cublas.cublasDestroy_v2;
import static org.bytedeco.cuda.global.cublas.cublasGetStatusString;
import static org.bytedeco.cuda.global.cublas.cublasSaxpy_v2;
import static org.bytedeco.cuda.global.cublas.cublasSetMathMode;
import static org.bytedeco.cuda.global.cublas.cublasSetPointerMode_v2;
import static org.bytedeco.cuda.global.cublas.cublasSetStream_v2;
import static org.bytedeco.cuda.global.cublas.cublasSgemm_v2;
import static org.bytedeco.cuda.global.cublas.cublasSgemv_v2;
import static org.bytedeco.cuda.global.cublas.cublasSnrm2_v2;
import static org.bytedeco.cuda.global.cublas.cublasSscal_v2;
import static org.bytedeco.cuda.global.cudart.cuCtxGetCurrent;
import static org.bytedeco.cuda.global.cudart.cuCtxSetCurrent;
import static org.bytedeco.cuda.global.cudart.cuDeviceGet;
import static org.bytedeco.cuda.global.cudart.cuDevicePrimaryCtxRelease;
import static org.bytedeco.cuda.global.cudart.cuDevicePrimaryCtxRetain;
import static org.bytedeco.cuda.global.cudart.cuGetErrorName;
import static org.bytedeco.cuda.global.cudart.cuGetErrorString;
import static org.bytedeco.cuda.global.cudart.cuInit;
import static org.bytedeco.cuda.global.cudart.cuLaunchKernel;
import static org.bytedeco.cuda.global.cudart.cuModuleGetFunction;
import static org.bytedeco.cuda.global.cudart.cuModuleLoadData;
import static org.bytedeco.cuda.global.cudart.cuModuleUnload;
import static org.bytedeco.cuda.global.cudart.cudaDevAttrComputeCapabilityMajor;
import static org.bytedeco.cuda.global.cudart.cudaDevAttrComputeCapabilityMinor;
import static org.bytedeco.cuda.global.cudart.cudaDeviceGetAttribute;
import static org.bytedeco.cuda.global.cudart.cudaGetErrorString;
import static org.bytedeco.cuda.global.curand.CURAND_RNG_PSEUDO_PHILOX4_32_10;
import static org.bytedeco.cuda.global.curand.curandCreateGenerator;
import static org.bytedeco.cuda.global.curand.curandDestroyGenerator;
import static org.bytedeco.cuda.global.curand.curandGenerateNormal;
import static org.bytedeco.cuda.global.curand.curandGenerateUniform;
import static org.bytedeco.cuda.global.curand.curandSetPseudoRandomGeneratorSeed;
import static org.bytedeco.cuda.global.curand.curandSetStream;
import static org.bytedeco.cuda.global.nvrtc.NVRTC_SUCCESS;
import static org.bytedeco.cuda.global.nvrtc.nvrtcCompileProgram;
import static org.bytedeco.cuda.global.nvrtc.nvrtcCreateProgram;
import static org.bytedeco.cuda.global.nvrtc.nvrtcDestroyProgram;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetCUBIN;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetCUBINSize;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetErrorString;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetPTX;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetPTXSize;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetProgramLog;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetProgramLogSize;
import static org.bytedeco.cuda.global.nvrtc.nvrtcVersion;

import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.cudart.CUctx_st;
import org.bytedeco.cuda.cudart.CUfunc_st;
import org.bytedeco.cuda.cudart.CUmod_st;
import org.bytedeco.cuda.cudart.CUstream_st;
import org.bytedeco.cuda.curand.curandGenerator_st;
import org.bytedeco.cuda.nvrtc._nvrtcProgram;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.javacpp.SizeTPointer;
import org.nccl4j.Stream;

/**
 * {@link Ops} on one GPU through the JavaCPP Presets for CUDA: cuBLAS for the BLAS calls (float32, default
 * math mode: no TF32), kernels compiled at run time with NVRTC and launched with the driver API
 * ({@code cuLaunchKernel}) for the elementwise work, and two cuRAND Philox generators (weights: the same seed on
 * every rank; data: a seed per rank). Everything runs on one stream, in call order.
 *
 * <p>The calls of a training step allocate nothing: device addresses are passed through reused JavaCPP pointer
 * objects, scalars through preallocated host floats, kernel arguments through preallocated argument blocks
 * ({@code cuLaunchKernel} copies the arguments when it is called). cuBLAS reads host scalars when it is called
 * (pointer mode host), except for {@code nrm2}, which writes its result to device memory (pointer mode device)
 * so that the loss never makes the host wait. Not thread-safe.
 */
final class GpuOps implements Ops, AutoCloseable {
    /** A float* at a device address, owning nothing, re-pointed for each call. */
    private static final class DevicePtr extends FloatPointer {
        DevicePtr at(long a) {
            this.address = a;
            return this;
        }
    }

    /** A cudaStream_t / CUstream handle made by the runtime ({@link org.nccl4j.Stream}). */
    private static final class StreamRef extends CUstream_st {
        StreamRef(long handle) {
            this.address = handle;
        }

        StreamRef at(long handle) {
            this.address = handle;
            return this;
        }
    }

    private final int device;
    private final CUstream_st stream;
    /** Another stream of the device, re-aimed by each Adam launch that names one (no allocation per call). */
    private final StreamRef other = new StreamRef(0);
    private final cublasContext blas = new cublasContext();
    private final curandGenerator_st initGen = new curandGenerator_st();
    private final curandGenerator_st dataGen = new curandGenerator_st();
    private final CUmod_st module = new CUmod_st();
    private final CUfunc_st biasAct = new CUfunc_st();
    private final CUfunc_st reluBackward = new CUfunc_st();
    private final CUfunc_st affine = new CUfunc_st();
    private final CUfunc_st adam = new CUfunc_st();
    private final DevicePtr p0 = new DevicePtr();
    private final DevicePtr p1 = new DevicePtr();
    private final DevicePtr p2 = new DevicePtr();
    private final FloatPointer alpha = new FloatPointer(1);
    private final FloatPointer beta = new FloatPointer(1);

    // kernel arguments: one host slot per parameter, pointed to by each kernel's argument array
    private final LongPointer argA = new LongPointer(1);   // first pointer argument
    private final LongPointer argB = new LongPointer(1);   // second pointer argument
    private final LongPointer argRows = new LongPointer(1);
    private final LongPointer argN = new LongPointer(1);
    private final IntPointer argRelu = new IntPointer(1);
    private final FloatPointer argScale = new FloatPointer(1);
    private final FloatPointer argShift = new FloatPointer(1);
    private final PointerPointer<Pointer> biasActArgs = new PointerPointer<>(5);
    private final PointerPointer<Pointer> reluBackwardArgs = new PointerPointer<>(3);
    private final PointerPointer<Pointer> affineArgs = new PointerPointer<>(4);
    // Adam's: p (argA), g (argB), m, v, n (argN), lr, beta1, beta2, eps, bc1, bc2
    private final LongPointer argM = new LongPointer(1);
    private final LongPointer argV = new LongPointer(1);
    private final FloatPointer argLr = new FloatPointer(1);
    private final FloatPointer argBeta1 = new FloatPointer(1);
    private final FloatPointer argBeta2 = new FloatPointer(1);
    private final FloatPointer argEps = new FloatPointer(1);
    private final FloatPointer argBc1 = new FloatPointer(1);
    private final FloatPointer argBc2 = new FloatPointer(1);
    private final PointerPointer<Pointer> adamArgs = new PointerPointer<>(11);

    private String kernelTarget = "none";
    private int retainedPrimaryContext = -1;
    private boolean blasCreated;
    private boolean initGenCreated;
    private boolean dataGenCreated;
    private boolean moduleLoaded;
    private boolean closed;

    /**
     * Creates the cuBLAS handle and the generators on {@code stream} and compiles the kernels for the device.
     * The device must be current ({@code cudaSetDevice}) on this thread.
     *
     * @param device the CUDA device
     * @param streamHandle the {@code cudaStream_t} everything runs on
     * @param initSeed the seed of the weight generator
     * @param dataSeed the seed of the input/label generator
     */
    GpuOps(int device, long streamHandle, long initSeed, long dataSeed) {
        this.device = device;
        this.stream = new StreamRef(streamHandle);
        biasActArgs.put(0, argA).put(1, argB).put(2, argRows).put(3, argN).put(4, argRelu);
        reluBackwardArgs.put(0, argA).put(1, argB).put(2, argN);
        affineArgs.put(0, argA).put(1, argN).put(2, argScale).put(3, argShift);
        adamArgs.put(0, argA).put(1, argB).put(2, argM).put(3, argV).put(4, argN).put(5, argLr).put(6, argBeta1)
                .put(7, argBeta2).put(8, argEps).put(9, argBc1).put(10, argBc2);
        try {
            blas(cublasCreate_v2(blas), "cublasCreate");
            blasCreated = true;
            blas(cublasSetStream_v2(blas, stream), "cublasSetStream");
            blas(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode(CUBLAS_DEFAULT_MATH)");
            blas(cublasSetPointerMode_v2(blas, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode(HOST)");

            rand(curandCreateGenerator(initGen, CURAND_RNG_PSEUDO_PHILOX4_32_10), "curandCreateGenerator(init)");
            initGenCreated = true;
            rand(curandSetPseudoRandomGeneratorSeed(initGen, initSeed), "curandSetPseudoRandomGeneratorSeed(init)");
            rand(curandSetStream(initGen, stream), "curandSetStream(init)");
            rand(curandCreateGenerator(dataGen, CURAND_RNG_PSEUDO_PHILOX4_32_10), "curandCreateGenerator(data)");
            dataGenCreated = true;
            rand(curandSetPseudoRandomGeneratorSeed(dataGen, dataSeed), "curandSetPseudoRandomGeneratorSeed(data)");
            rand(curandSetStream(dataGen, stream), "curandSetStream(data)");

            loadKernels();
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    /** @return how the kernels were built, e.g. "PTX compute_90 (NVRTC 13.0)" */
    String kernelTarget() {
        return kernelTarget;
    }

    // ------------------------------------------------------------------ kernels: NVRTC + driver API

    private void loadKernels() {
        int[] major = new int[1];
        int[] minor = new int[1];
        cuda(cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device),
                "cudaDeviceGetAttribute(compute capability major)");
        cuda(cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, device),
                "cudaDeviceGetAttribute(compute capability minor)");
        String cc = major[0] + "" + minor[0];
        int[] nvMajor = new int[1];
        int[] nvMinor = new int[1];
        nvrtc(nvrtcVersion(nvMajor, nvMinor), "nvrtcVersion");
        String nvrtcVersion = "NVRTC " + nvMajor[0] + "." + nvMinor[0];

        // The driver API works in the current context: the runtime made the device's primary context current
        // (cudaSetDevice, cublasCreate). Only if none is current, retain the primary context and make it so.
        driver(cuInit(0), "cuInit");
        CUctx_st ctx = new CUctx_st();
        driver(cuCtxGetCurrent(ctx), "cuCtxGetCurrent");
        if (ctx.isNull()) {
            int[] dev = new int[1];
            driver(cuDeviceGet(dev, device), "cuDeviceGet");
            CUctx_st primary = new CUctx_st();
            driver(cuDevicePrimaryCtxRetain(primary, dev[0]), "cuDevicePrimaryCtxRetain");
            retainedPrimaryContext = dev[0];
            driver(cuCtxSetCurrent(primary), "cuCtxSetCurrent");
        }

        // PTX for the device's virtual architecture (compute_90 on H100/H200), JIT-compiled by the driver. A
        // driver older than NVRTC rejects that PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION): then load a cubin
        // for the exact GPU, which the driver runs without JIT.
        String ptxArch = "--gpu-architecture=compute_" + cc;
        int rc;
        try (BytePointer ptx = compile(ptxArch, false)) {
            rc = cuModuleLoadData(module, ptx);
        }
        if (rc == 0) {
            kernelTarget = "PTX compute_" + cc + " (" + nvrtcVersion + ")";
        } else {
            String ptxError = driverError(rc);
            try (BytePointer cubin = compile("--gpu-architecture=sm_" + cc, true)) {
                int rc2 = cuModuleLoadData(module, cubin);
                if (rc2 != 0) {
                    throw new IllegalStateException("cuModuleLoadData failed for the PTX (" + ptxError
                            + ") and for the sm_" + cc + " cubin (" + driverError(rc2) + ") made by " + nvrtcVersion);
                }
            }
            kernelTarget = "cubin sm_" + cc + " (" + nvrtcVersion + "; the PTX was refused: " + ptxError + ")";
        }
        moduleLoaded = true;
        driver(cuModuleGetFunction(biasAct, module, Kernels.BIAS_ACT), "cuModuleGetFunction(" + Kernels.BIAS_ACT + ")");
        driver(cuModuleGetFunction(reluBackward, module, Kernels.RELU_BACKWARD),
                "cuModuleGetFunction(" + Kernels.RELU_BACKWARD + ")");
        driver(cuModuleGetFunction(affine, module, Kernels.AFFINE), "cuModuleGetFunction(" + Kernels.AFFINE + ")");
        driver(cuModuleGetFunction(adam, module, Kernels.ADAM), "cuModuleGetFunction(" + Kernels.ADAM + ")");
    }

    /** Compiles {@link Kernels#SOURCE}; returns the PTX (NUL-terminated) or the cubin. */
    private static BytePointer compile(String archOption, boolean cubin) {
        _nvrtcProgram prog = new _nvrtcProgram();
        // the source and name stay allocated until the program is destroyed
        try (BytePointer src = new BytePointer(Kernels.SOURCE);
             BytePointer name = new BytePointer("ddp_kernels.cu");
             PointerPointer<BytePointer> options = new PointerPointer<>(archOption)) {
            nvrtc(nvrtcCreateProgram(prog, src, name, 0, (PointerPointer<?>) null, (PointerPointer<?>) null),
                    "nvrtcCreateProgram");
            int rc = nvrtcCompileProgram(prog, 1, options);
            if (rc != NVRTC_SUCCESS) {
                throw new IllegalStateException("nvrtcCompileProgram(" + archOption + ") failed: "
                        + nvrtcGetErrorString(rc).getString() + "\n" + programLog(prog));
            }
            try (SizeTPointer size = new SizeTPointer(1)) {
                nvrtc(cubin ? nvrtcGetCUBINSize(prog, size) : nvrtcGetPTXSize(prog, size),
                        cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize");
                BytePointer out = new BytePointer(size.get());
                nvrtc(cubin ? nvrtcGetCUBIN(prog, out) : nvrtcGetPTX(prog, out),
                        cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX");
                return out;
            }
        } finally {
            if (!prog.isNull()) {
                nvrtcDestroyProgram(prog);
            }
        }
    }

    private static String programLog(_nvrtcProgram prog) {
        try (SizeTPointer size = new SizeTPointer(1)) {
            if (nvrtcGetProgramLogSize(prog, size) != NVRTC_SUCCESS || size.get() <= 1) {
                return "(no compiler log)";
            }
            try (BytePointer log = new BytePointer(size.get())) {
                return nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS ? log.getString() : "(no compiler log)";
            }
        }
    }

    private void launch(CUfunc_st f, long n, PointerPointer<Pointer> args, String name) {
        launch(f, n, args, name, stream);
    }

    private void launch(CUfunc_st f, long n, PointerPointer<Pointer> args, String name, CUstream_st on) {
        int rc = cuLaunchKernel(f, Kernels.blocks(n), 1, 1, Kernels.THREADS, 1, 1, 0, on, args,
                (PointerPointer<?>) null);
        if (rc != 0) {
            throw new IllegalStateException("cuLaunchKernel(" + name + ", n=" + n + ") failed: " + driverError(rc));
        }
    }

    // ------------------------------------------------------------------ Ops

    @Override
    public void gemm(boolean transA, boolean transB, int m, int n, int k, float alphaValue, long a, int lda, long b,
            int ldb, float betaValue, long c, int ldc) {
        alpha.put(0, alphaValue);
        beta.put(0, betaValue);
        int rc = cublasSgemm_v2(blas, transA ? CUBLAS_OP_T : CUBLAS_OP_N, transB ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                alpha, p0.at(a), lda, p1.at(b), ldb, beta, p2.at(c), ldc);
        if (rc != 0) {
            throw blasError(rc, "cublasSgemm(" + (transA ? "T" : "N") + (transB ? "T" : "N") + ", m=" + m + ", n=" + n
                    + ", k=" + k + ", lda=" + lda + ", ldb=" + ldb + ", ldc=" + ldc + ")");
        }
    }

    @Override
    public void gemv(int m, int n, float alphaValue, long a, int lda, long x, float betaValue, long y) {
        alpha.put(0, alphaValue);
        beta.put(0, betaValue);
        int rc = cublasSgemv_v2(blas, CUBLAS_OP_N, m, n, alpha, p0.at(a), lda, p1.at(x), 1, beta, p2.at(y), 1);
        if (rc != 0) {
            throw blasError(rc, "cublasSgemv(N, m=" + m + ", n=" + n + ", lda=" + lda + ")");
        }
    }

    @Override
    public void axpy(int n, float alphaValue, long x, long y) {
        alpha.put(0, alphaValue);
        int rc = cublasSaxpy_v2(blas, n, alpha, p0.at(x), 1, p1.at(y), 1);
        if (rc != 0) {
            throw blasError(rc, "cublasSaxpy(n=" + n + ")");
        }
    }

    @Override
    public void scal(int n, float alphaValue, long x) {
        alpha.put(0, alphaValue);
        int rc = cublasSscal_v2(blas, n, alpha, p0.at(x), 1);
        if (rc != 0) {
            throw blasError(rc, "cublasSscal(n=" + n + ")");
        }
    }

    @Override
    public void nrm2(int n, long x, long result) {
        blas(cublasSetPointerMode_v2(blas, CUBLAS_POINTER_MODE_DEVICE), "cublasSetPointerMode(DEVICE)");
        int rc;
        try {
            rc = cublasSnrm2_v2(blas, n, p0.at(x), 1, p1.at(result));
        } finally {
            blas(cublasSetPointerMode_v2(blas, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode(HOST)");
        }
        if (rc != 0) {
            throw blasError(rc, "cublasSnrm2(n=" + n + ")");
        }
    }

    @Override
    public void biasAct(long z, long bias, int rows, long n, boolean relu) {
        if (n == 0) {
            return;
        }
        argA.put(0, z);
        argB.put(0, bias);
        argRows.put(0, rows);
        argN.put(0, n);
        argRelu.put(0, relu ? 1 : 0);
        launch(biasAct, n, biasActArgs, Kernels.BIAS_ACT);
    }

    @Override
    public void reluBackward(long g, long a, long n) {
        if (n == 0) {
            return;
        }
        argA.put(0, g);
        argB.put(0, a);
        argN.put(0, n);
        launch(reluBackward, n, reluBackwardArgs, Kernels.RELU_BACKWARD);
    }

    @Override
    public void normal(long x, long n) {
        if (n % 2 != 0) {
            throw new IllegalArgumentException("cuRAND draws normals in pairs: n must be even, got " + n);
        }
        rand(curandGenerateNormal(dataGen, p0.at(x), n, 0f, 1f), "curandGenerateNormal(n=" + n + ")");
    }

    @Override
    public void uniform(long x, long n, float bound) {
        rand(curandGenerateUniform(initGen, p0.at(x), n), "curandGenerateUniform(n=" + n + ")");
        argA.put(0, x);
        argN.put(0, n);
        argScale.put(0, 2 * bound);
        argShift.put(0, -bound);
        launch(affine, n, affineArgs, Kernels.AFFINE);
    }

    /**
     * {@code x[i] = x[i] * scale + shift} over n elements.
     *
     * @param x a device address of n floats
     * @param n elements
     * @param scale the factor
     * @param shift the offset
     */
    void affine(long x, long n, float scale, float shift) {
        if (n == 0) {
            return;
        }
        argA.put(0, x);
        argN.put(0, n);
        argScale.put(0, scale);
        argShift.put(0, shift);
        launch(affine, n, affineArgs, Kernels.AFFINE);
    }

    /**
     * One Adam step over n elements ({@link Kernels#ADAM}), in place on p, m and v.
     *
     * @param p parameters
     * @param g gradients
     * @param m first moments
     * @param v second moments
     * @param n elements
     * @param lr the learning rate
     * @param beta1 the first moment's decay
     * @param beta2 the second moment's decay
     * @param eps added to the denominator
     * @param bc1 {@code 1 - beta1^t}, t the step from 1
     * @param bc2 {@code 1 - beta2^t}
     */
    void adam(long p, long g, long m, long v, long n, float lr, float beta1, float beta2, float eps, float bc1,
            float bc2) {
        adam(0, p, g, m, v, n, lr, beta1, beta2, eps, bc1, bc2);
    }

    /**
     * {@link #adam(long, long, long, long, long, float, float, float, float, float, float)} on another stream of the
     * device (the update then overlaps this one's work).
     *
     * @param streamHandle a cudaStream_t of the device ({@link org.nccl4j.Stream#handle()}); 0 for this one's stream
     * @param p parameters
     * @param g gradients
     * @param m first moments
     * @param v second moments
     * @param n elements
     * @param lr the learning rate
     * @param beta1 the first moment's decay
     * @param beta2 the second moment's decay
     * @param eps added to the denominator
     * @param bc1 {@code 1 - beta1^t}, t the step from 1
     * @param bc2 {@code 1 - beta2^t}
     */
    void adam(long streamHandle, long p, long g, long m, long v, long n, float lr, float beta1, float beta2, float eps,
            float bc1, float bc2) {
        if (n == 0) {
            return;
        }
        argA.put(0, p);
        argB.put(0, g);
        argM.put(0, m);
        argV.put(0, v);
        argN.put(0, n);
        argLr.put(0, lr);
        argBeta1.put(0, beta1);
        argBeta2.put(0, beta2);
        argEps.put(0, eps);
        argBc1.put(0, bc1);
        argBc2.put(0, bc2);
        launch(adam, n, adamArgs, Kernels.ADAM, streamHandle == 0 ? stream : other.at(streamHandle));
    }

    // ------------------------------------------------------------------ errors

    private static void blas(int status, String what) {
        if (status != 0) {
            throw blasError(status, what);
        }
    }

    private static IllegalStateException blasError(int status, String what) {
        BytePointer s = cublasGetStatusString(status);
        return new IllegalStateException(what + " failed: cuBLAS status " + status
                + (s == null ? "" : " (" + s.getString() + ")"));
    }

    private static void rand(int status, String what) {
        if (status != 0) {
            throw new IllegalStateException(what + " failed: curandStatus " + status);
        }
    }

    private static void nvrtc(int status, String what) {
        if (status != NVRTC_SUCCESS) {
            throw new IllegalStateException(what + " failed: " + nvrtcGetErrorString(status).getString());
        }
    }

    private static void cuda(int status, String what) {
        if (status != 0) {
            throw new IllegalStateException(what + " failed: cudaError " + status + " ("
                    + cudaGetErrorString(status).getString() + ")");
        }
    }

    private static void driver(int status, String what) {
        if (status != 0) {
            throw new IllegalStateException(what + " failed: " + driverError(status));
        }
    }

    private static String driverError(int status) {
        String name = "?";
        String text = "";
        try (PointerPointer<BytePointer> p = new PointerPointer<>(1)) {
            if (cuGetErrorName(status, p) == 0 && !Pointer.isNull(p.get(0))) {
                name = p.getString(0);
            }
            if (cuGetErrorString(status, p) == 0 && !Pointer.isNull(p.get(0))) {
                text = ": " + p.getString(0);
            }
        }
        return "CUresult " + status + " " + name + text;
    }

    /** Destroys the cuBLAS handle and the generators and unloads the kernels. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (moduleLoaded) {
            cuModuleUnload(module);
        }
        if (dataGenCreated) {
            curandDestroyGenerator(dataGen);
        }
        if (initGenCreated) {
            curandDestroyGenerator(initGen);
        }
        if (blasCreated) {
            cublasDestroy_v2(blas);
        }
        if (retainedPrimaryContext >= 0) {
            cuDevicePrimaryCtxRelease(retainedPrimaryContext);
        }
        for (Pointer p : new Pointer[] {alpha, beta, argA, argB, argRows, argN, argRelu, argScale, argShift,
                biasActArgs, reluBackwardArgs, affineArgs, argM, argV, argLr, argBeta1, argBeta2, argEps, argBc1,
                argBc2, adamArgs}) {
            p.close();
        }
    }
}
