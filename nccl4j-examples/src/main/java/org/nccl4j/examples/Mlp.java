package org.nccl4j.examples;

/**
 * The model of {@code ddp_example.py} ({@link DdpTraining}),
 * {@code Linear(d0, d1) -> ReLU -> Linear(d1, d2) -> ReLU -> Linear(d2, d3)} with biases,
 * trained with MSE loss (mean over all outputs) and plain SGD, written once against {@link Ops}.
 *
 * <h2>Layout (column-major, as cuBLAS)</h2>
 * Activations are [features x batch], leading dimension = features: the batch's samples are columns.
 * Layer l (1..3) has W_l [d_l x d_(l-1)] (leading dimension d_l, as PyTorch's [out, in] weight read
 * column-major with out rows) and b_l [d_l]. With B the batch and A_0 = X:
 * <pre>
 * forward   Z_l  = W_l A_(l-1)        gemm(N, N, m=d_l,     n=B,       k=d_(l-1))  [d_l x B]
 *           A_l  = relu(Z_l + b_l 1^T)  (no relu for l = 3)     bias + activation kernel
 * loss      D    = A_3 - Y;  L = |D|^2 / (d_3 B);  dZ_3 = 2 D / (d_3 B)     axpy, nrm2, scal
 * backward  dW_l = dZ_l A_(l-1)^T     gemm(N, T, m=d_l,     n=d_(l-1), k=B)     [d_l x d_(l-1)]
 *           db_l = dZ_l 1             gemv(N,    m=d_l,     n=B)                [d_l]
 *           dA_(l-1) = W_l^T dZ_l     gemm(T, N, m=d_(l-1), n=B,       k=d_l)   [d_(l-1) x B]
 *           dZ_(l-1) = dA_(l-1) where A_(l-1) > 0, else 0                       relu-backward kernel
 * SGD       p   -= lr * dp            axpy per parameter
 * </pre>
 * The six parameters are indexed in forward order: 0 W1, 1 b1, 2 W2, 3 b2, 4 W3, 5 b3, and so are their gradients,
 * except that dW_1 may be written in K column chunks, gradients 0..K-1 (then b1 is gradient K, and so on): dW_1 is
 * the last gradient of backward, so its all-reduce is the tail no GEMM hides, and in chunks the first chunks'
 * all-reduces (and updates) run while the later chunks are computed. Chunk j holds columns
 * {@code [j d0 / K, (j + 1) d0 / K)} of dW_1, which are contiguous in the column-major layout, computed by
 * {@code gemm(N, T)} on the same columns of A_0^T: the same sums as the whole GEMM, element by element.
 * Backward of layer l writes dW_l and db_l first and reports each as ready, then computes dA_(l-1): that
 * GEMM is the work the gradients' all-reduce overlaps. Layer 1 computes no dA_0; with chunks it writes db_1 first and
 * then the chunks, last column chunk first (the order in which {@code GradientBuckets} fills its buckets).
 *
 * <p>Buffers: parameters and gradients anywhere (6 addresses each), X = act[0], A_1 = act[1], A_2 = act[2],
 * the output A_3 = act[3] (overwritten by D, then dZ_3), Y (labels), gradient scratch for dA_1/dZ_1 and
 * dA_2/dZ_2, a vector of B ones and one float for |D|.
 */
final class Mlp {
    /** Linear layers. */
    static final int LAYERS = 3;
    /** Parameters (and gradients): W and b per layer. */
    static final int PARAMS = 2 * LAYERS;

    /** The most column chunks of dW_1. */
    static final int MAX_CHUNKS = 64;

    /** Told when a gradient's last kernel has been enqueued. */
    @FunctionalInterface
    interface GradientReady {
        /** @param gradient the gradient index: 0 W1 .. 5 b3, or with K chunks of dW_1 0..K-1 W1, K b1 .. K + 4 b3 */
        void ready(int gradient);
    }

    private final int[] dims;
    private final int batch;
    private final long[] params;
    /** The gradients' addresses in gradient order (dW_1's K chunks first). */
    private final long[] grads;
    /** K: dW_1's column chunks. */
    private final int chunks;
    private final long[] act;
    private final long[] actGrad;
    private final long labels;
    private final long ones;
    private final long normOut;

    /**
     * @param dims d0..d3, the features of the input and of each layer's output
     * @param batch B, samples per step
     * @param params addresses of W1, b1, W2, b2, W3, b3
     * @param grads addresses of their gradients in gradient order: dW_1 in K = {@code grads.length - 5} column
     *     chunks (K from 1 to {@link #MAX_CHUNKS}, at most d0; chunk j has {@link #chunkColumns} columns), then db_1,
     *     dW_2, db_2, dW_3, db_3
     * @param act addresses of X, A1, A2, A3 ([d_l x B] each)
     * @param scratch1 dA1/dZ1 [d1 x B]
     * @param scratch2 dA2/dZ2 [d2 x B]
     * @param labels Y [d3 x B]
     * @param ones B floats equal to 1
     * @param normOut one float, receives |A3 - Y|
     */
    Mlp(int[] dims, int batch, long[] params, long[] grads, long[] act, long scratch1, long scratch2, long labels,
            long ones, long normOut) {
        if (dims.length != LAYERS + 1 || params.length != PARAMS || grads.length < PARAMS
                || grads.length > PARAMS + MAX_CHUNKS - 1 || act.length != LAYERS + 1) {
            throw new IllegalArgumentException("need 4 dims, 6 parameters, 6 to " + (PARAMS + MAX_CHUNKS - 1)
                    + " gradients (dW1 in 1 to " + MAX_CHUNKS + " chunks) and 4 activations");
        }
        if (grads.length - PARAMS + 1 > dims[0]) {
            throw new IllegalArgumentException("dW1 has " + dims[0] + " columns: it cannot be cut in "
                    + (grads.length - PARAMS + 1) + " chunks");
        }
        this.dims = dims.clone();
        this.batch = batch;
        this.params = params.clone();
        this.grads = grads.clone();
        this.chunks = grads.length - PARAMS + 1;
        this.act = act.clone();
        // gradient w.r.t. act[l]: [1] scratch1, [2] scratch2, [3] the output buffer itself
        this.actGrad = new long[] {0, scratch1, scratch2, act[LAYERS]};
        this.labels = labels;
        this.ones = ones;
        this.normOut = normOut;
    }

    /**
     * @param dims d0..d3
     * @param i a parameter index, 0 W1 .. 5 b3
     * @return its element count
     */
    static long paramCount(int[] dims, int i) {
        int layer = i / 2 + 1;
        return i % 2 == 0 ? (long) dims[layer] * dims[layer - 1] : dims[layer];
    }

    /**
     * @param d0 the columns of dW_1 (the input features)
     * @param chunks K
     * @param j a chunk, 0..K-1
     * @return the first column of chunk j, {@code j d0 / K}; with j = K, d0
     */
    static int chunkColumn(int d0, int chunks, int j) {
        return (int) ((long) j * d0 / chunks);
    }

    /**
     * @param d0 the columns of dW_1
     * @param chunks K
     * @param j a chunk, 0..K-1
     * @return its columns
     */
    static int chunkColumns(int d0, int chunks, int j) {
        return chunkColumn(d0, chunks, j + 1) - chunkColumn(d0, chunks, j);
    }

    /** @return the gradients, 6 + K - 1 */
    int gradientCount() {
        return grads.length;
    }

    /**
     * @param param a parameter, 0 W1 .. 5 b3
     * @return its gradient's index; for W1 with chunks, the first chunk's
     */
    int gradientOf(int param) {
        return param == 0 ? 0 : param + chunks - 1;
    }

    /**
     * @param gradient a gradient index
     * @return the parameter it is (a part of) the gradient of
     */
    int paramOf(int gradient) {
        return gradient < chunks ? 0 : gradient - chunks + 1;
    }

    /**
     * Offsets (in floats) of the six parameters in one flat buffer, each starting on a multiple of
     * {@code alignFloats}, and at index 6 the total length (also a multiple of {@code alignFloats}).
     *
     * @param dims d0..d3
     * @param alignFloats alignment in floats, {@code >= 1}
     * @return 7 offsets
     */
    static long[] paramOffsets(int[] dims, int alignFloats) {
        long[] off = new long[PARAMS + 1];
        long at = 0;
        for (int i = 0; i < PARAMS; i++) {
            off[i] = at;
            at = roundUp(at + paramCount(dims, i), alignFloats);
        }
        off[PARAMS] = at;
        return off;
    }

    static long roundUp(long v, long multiple) {
        return (v + multiple - 1) / multiple * multiple;
    }

    /**
     * The loss from what {@link #loss(Ops)} wrote: MSE = |D|^2 / (d3 B).
     *
     * @param norm the float at {@code normOut}
     * @return the mean squared error
     */
    double lossFromNorm(float norm) {
        return (double) norm * norm / ((double) dims[LAYERS] * batch);
    }

    /**
     * Draws the weights as PyTorch's nn.Linear does: W and b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
     *
     * @param ops where to run
     */
    void initWeights(Ops ops) {
        for (int i = 0; i < PARAMS; i++) {
            int fanIn = dims[i / 2];
            ops.uniform(params[i], paramCount(dims, i), (float) (1.0 / Math.sqrt(fanIn)));
        }
    }

    /**
     * Fresh inputs X and labels Y, N(0, 1), from the data generator.
     *
     * @param ops where to run
     */
    void generateBatch(Ops ops) {
        ops.normal(act[0], (long) dims[0] * batch);
        ops.normal(labels, (long) dims[LAYERS] * batch);
    }

    /**
     * A_1, A_2, A_3 from X.
     *
     * @param ops where to run
     */
    void forward(Ops ops) {
        for (int l = 1; l <= LAYERS; l++) {
            int in = dims[l - 1];
            int out = dims[l];
            ops.gemm(false, false, out, batch, in, 1f, params[2 * (l - 1)], out, act[l - 1], in, 0f, act[l], out);
            ops.biasAct(act[l], params[2 * (l - 1) + 1], out, (long) out * batch, l < LAYERS);
        }
    }

    /**
     * D = A_3 - Y, |D| into {@code normOut}, then dZ_3 = 2 D / (d3 B), all in the output buffer.
     *
     * @param ops where to run
     */
    void loss(Ops ops) {
        int n = Math.multiplyExact(dims[LAYERS], batch);
        long out = act[LAYERS];
        ops.axpy(n, -1f, labels, out);
        ops.nrm2(n, out, normOut);
        ops.scal(n, (float) (2.0 / n), out);
    }

    /**
     * Backward of one layer: dW_l, db_l (each reported ready as soon as enqueued), then dZ_(l-1) unless l = 1.
     *
     * @param ops where to run
     * @param l the layer, 3 first
     * @param ready told of each gradient
     */
    void backward(Ops ops, int l, GradientReady ready) {
        if (l < 1 || l > LAYERS) {
            throw new IllegalArgumentException("layer must be 1.." + LAYERS + ", got " + l);
        }
        int in = dims[l - 1];
        int out = dims[l];
        long dz = actGrad[l];
        int w = 2 * (l - 1);
        if (l == 1 && chunks > 1) {
            ops.gemv(out, batch, 1f, dz, out, ones, 0f, grads[gradientOf(w + 1)]);
            ready.ready(gradientOf(w + 1));
            for (int j = chunks - 1; j >= 0; j--) {
                int c = chunkColumn(in, chunks, j);
                ops.gemm(false, true, out, chunkColumns(in, chunks, j), batch, 1f, dz, out, act[0] + 4L * c, in, 0f,
                        grads[j], out);
                ready.ready(j);
            }
            return;
        }
        ops.gemm(false, true, out, in, batch, 1f, dz, out, act[l - 1], in, 0f, grads[gradientOf(w)], out);
        ready.ready(gradientOf(w));
        ops.gemv(out, batch, 1f, dz, out, ones, 0f, grads[gradientOf(w + 1)]);
        ready.ready(gradientOf(w + 1));
        if (l > 1) {
            ops.gemm(true, false, in, batch, out, 1f, params[w], out, dz, out, 0f, actGrad[l - 1], in);
            ops.reluBackward(actGrad[l - 1], act[l - 1], (long) in * batch);
        }
    }

    /**
     * p -= lr * dp for every parameter.
     *
     * @param ops where to run
     * @param lr the learning rate
     */
    void sgd(Ops ops, float lr) {
        for (int g = 0; g < grads.length; g++) {
            sgd(ops, g, lr);
        }
    }

    /**
     * p -= lr * dp for the part of the parameters that gradient {@code g} covers (an optimizer that follows the
     * gradient buckets): a whole parameter, or one column chunk of W1.
     *
     * @param ops where to run
     * @param g the gradient (0 W1 .. 5 b3; with K chunks of dW_1, 0..K-1 W1's chunks, then b1 .. b3)
     * @param lr the learning rate
     */
    void sgd(Ops ops, int g, float lr) {
        int p = paramOf(g);
        if (p == 0 && chunks > 1) {
            long first = (long) chunkColumn(dims[0], chunks, g) * dims[1];
            ops.axpy(Math.toIntExact((long) chunkColumns(dims[0], chunks, g) * dims[1]), -lr, grads[g],
                    params[0] + 4 * first);
            return;
        }
        ops.axpy(Math.toIntExact(paramCount(dims, p)), -lr, grads[g], params[p]);
    }
}
