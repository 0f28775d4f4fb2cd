package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The model code of DdpTraining run against {@link CpuOps}, a loop-by-loop BLAS, with every dimension
 * different (so that a swapped m/n/k or a wrong leading dimension cannot cancel out as it would with the real
 * 4000 x 4000 layers), checked against an independent double-precision forward pass and its central
 * finite differences.
 */
class MlpTest {
    private static final int[] DIMS = {5, 4, 6, 3};
    private static final int BATCH = 8;

    /** The model wired to fresh CpuOps memory. */
    private static final class Rig {
        final CpuOps ops = new CpuOps(4096, 11, 22);
        final long[] params = new long[Mlp.PARAMS];
        /** In gradient order: dW1 in {@code chunks} column chunks, then db1 .. db3. */
        final long[] grads;
        final long[] act = new long[Mlp.LAYERS + 1];
        final long labels;
        final long norm;
        final Mlp mlp;

        Rig() {
            this(1);
        }

        Rig(int chunks) {
            grads = new long[Mlp.PARAMS + chunks - 1];
            for (int i = 0; i < Mlp.PARAMS; i++) {
                params[i] = ops.alloc(Mlp.paramCount(DIMS, i));
            }
            for (int j = 0; j < chunks; j++) {
                grads[j] = ops.alloc((long) Mlp.chunkColumns(DIMS[0], chunks, j) * DIMS[1]);
            }
            for (int i = 1; i < Mlp.PARAMS; i++) {
                grads[i + chunks - 1] = ops.alloc(Mlp.paramCount(DIMS, i));
            }
            for (int l = 0; l <= Mlp.LAYERS; l++) {
                act[l] = ops.alloc((long) DIMS[l] * BATCH);
            }
            long s1 = ops.alloc((long) DIMS[1] * BATCH);
            long s2 = ops.alloc((long) DIMS[2] * BATCH);
            labels = ops.alloc((long) DIMS[3] * BATCH);
            long ones = ops.alloc(BATCH);
            for (int j = 0; j < BATCH; j++) {
                ops.set(ones, j, 1f);
            }
            norm = ops.alloc(1);
            mlp = new Mlp(DIMS, BATCH, params, grads, act, s1, s2, labels, ones, norm);
        }

        /** W_l (l = 1..3) as [out][in] doubles, read with the documented layout: (i, j) at i + j * out. */
        double[][] weight(int l) {
            int out = DIMS[l];
            int in = DIMS[l - 1];
            double[][] w = new double[out][in];
            for (int i = 0; i < out; i++) {
                for (int j = 0; j < in; j++) {
                    w[i][j] = ops.get(params[2 * (l - 1)], i + (long) j * out);
                }
            }
            return w;
        }

        double[] bias(int l) {
            double[] b = new double[DIMS[l]];
            for (int i = 0; i < b.length; i++) {
                b[i] = ops.get(params[2 * (l - 1) + 1], i);
            }
            return b;
        }

        /** A [features x batch] column-major buffer as [sample][feature] doubles. */
        double[][] samples(long address, int features) {
            double[][] s = new double[BATCH][features];
            for (int b = 0; b < BATCH; b++) {
                for (int f = 0; f < features; f++) {
                    s[b][f] = ops.get(address, f + (long) b * features);
                }
            }
            return s;
        }
    }

    /** The model in plain double arithmetic, sample by sample: the outputs [sample][feature]. */
    private static double[][] reference(double[][][] w, double[][] b, double[][] x) {
        double[][] out = new double[x.length][];
        for (int s = 0; s < x.length; s++) {
            double[] h = x[s];
            for (int l = 0; l < Mlp.LAYERS; l++) {
                double[] z = new double[w[l].length];
                for (int i = 0; i < z.length; i++) {
                    double v = b[l][i];
                    for (int j = 0; j < h.length; j++) {
                        v += w[l][i][j] * h[j];
                    }
                    z[i] = l < Mlp.LAYERS - 1 ? Math.max(v, 0) : v;
                }
                h = z;
            }
            out[s] = h;
        }
        return out;
    }

    private static double referenceLoss(double[][][] w, double[][] b, double[][] x, double[][] y) {
        double[][] out = reference(w, b, x);
        double sum = 0;
        int n = 0;
        for (int s = 0; s < out.length; s++) {
            for (int i = 0; i < out[s].length; i++) {
                double d = out[s][i] - y[s][i];
                sum += d * d;
                n++;
            }
        }
        return sum / n;
    }

    @Test
    void forwardMatchesTheReferenceAndLossIsTheMeanSquaredError() {
        Rig r = new Rig();
        r.mlp.initWeights(r.ops);
        r.mlp.generateBatch(r.ops);
        double[][][] w = {r.weight(1), r.weight(2), r.weight(3)};
        double[][] b = {r.bias(1), r.bias(2), r.bias(3)};
        double[][] x = r.samples(r.act[0], DIMS[0]);
        double[][] y = r.samples(r.labels, DIMS[3]);

        r.mlp.forward(r.ops);
        double[][] expected = reference(w, b, x);
        double[][] got = r.samples(r.act[3], DIMS[3]);
        for (int s = 0; s < BATCH; s++) {
            for (int i = 0; i < DIMS[3]; i++) {
                assertEquals(expected[s][i], got[s][i], 1e-5, "output (" + i + ", sample " + s + ")");
            }
        }
        r.mlp.loss(r.ops);
        double loss = r.mlp.lossFromNorm(r.ops.get(r.norm, 0));
        assertEquals(referenceLoss(w, b, x, y), loss, 1e-5 * loss);
        assertTrue(loss > 0.1 && loss < 10, "loss " + loss);
    }

    @Test
    void backwardGradientsMatchFiniteDifferences() {
        Rig r = new Rig();
        r.mlp.initWeights(r.ops);
        r.mlp.generateBatch(r.ops);
        double[][][] w = {r.weight(1), r.weight(2), r.weight(3)};
        double[][] b = {r.bias(1), r.bias(2), r.bias(3)};
        double[][] x = r.samples(r.act[0], DIMS[0]);
        double[][] y = r.samples(r.labels, DIMS[3]);

        r.mlp.forward(r.ops);
        r.mlp.loss(r.ops);
        for (int l = Mlp.LAYERS; l >= 1; l--) {
            r.mlp.backward(r.ops, l, i -> { });
        }

        double h = 1e-4;
        int checked = 0;
        for (int l = 1; l <= Mlp.LAYERS; l++) {
            int out = DIMS[l];
            for (int i = 0; i < out; i++) {
                for (int j = 0; j < DIMS[l - 1]; j++) {
                    double keep = w[l - 1][i][j];
                    w[l - 1][i][j] = keep + h;
                    double up = referenceLoss(w, b, x, y);
                    w[l - 1][i][j] = keep - h;
                    double down = referenceLoss(w, b, x, y);
                    w[l - 1][i][j] = keep;
                    double fd = (up - down) / (2 * h);
                    float got = r.ops.get(r.grads[2 * (l - 1)], i + (long) j * out);
                    assertEquals(fd, got, 2e-5 + 2e-3 * Math.abs(fd), "dW" + l + "(" + i + "," + j + ")");
                    checked++;
                }
                double keep = b[l - 1][i];
                b[l - 1][i] = keep + h;
                double up = referenceLoss(w, b, x, y);
                b[l - 1][i] = keep - h;
                double down = referenceLoss(w, b, x, y);
                b[l - 1][i] = keep;
                double fd = (up - down) / (2 * h);
                assertEquals(fd, r.ops.get(r.grads[2 * (l - 1) + 1], i), 2e-5 + 2e-3 * Math.abs(fd),
                        "db" + l + "(" + i + ")");
                checked++;
            }
        }
        long total = 0;
        for (int i = 0; i < Mlp.PARAMS; i++) {
            total += Mlp.paramCount(DIMS, i);
        }
        assertEquals(total, checked);
    }

    @Test
    void eachLayerMarksDwAndDbReadyBeforeTheInputGradientGemm() {
        Rig r = new Rig();
        throughBackward(r);
        assertEquals(List.of(
                "gemm NT", "ready 4", "gemv", "ready 5", "gemm TN", "relu_backward",   // layer 3: dW3, db3, dA2
                "gemm NT", "ready 2", "gemv", "ready 3", "gemm TN", "relu_backward",   // layer 2: dW2, db2, dA1
                "gemm NT", "ready 0", "gemv", "ready 1"),                               // layer 1: no dA0
                r.ops.log);
    }

    @Test
    void forwardAndLossCallSequence() {
        Rig r = new Rig();
        r.mlp.initWeights(r.ops);
        r.mlp.generateBatch(r.ops);
        r.mlp.forward(r.ops);
        r.mlp.loss(r.ops);
        assertEquals(List.of("uniform", "uniform", "uniform", "uniform", "uniform", "uniform", "normal", "normal",
                "gemm NN", "bias_act relu", "gemm NN", "bias_act relu", "gemm NN", "bias_act", "axpy", "nrm2", "scal"),
                r.ops.log);
    }

    @Test
    void initialWeightsAreWithinPyTorchsLinearBounds() {
        Rig r = new Rig();
        r.mlp.initWeights(r.ops);
        for (int i = 0; i < Mlp.PARAMS; i++) {
            double bound = 1 / Math.sqrt(DIMS[i / 2]);
            for (long e = 0; e < Mlp.paramCount(DIMS, i); e++) {
                float v = r.ops.get(r.params[i], e);
                assertTrue(Math.abs(v) <= bound, "param " + i + "[" + e + "] = " + v + " beyond " + bound);
            }
        }
    }

    @Test
    void sgdSubtractsLrTimesEachGradientFromItsParameter() {
        Rig r = new Rig();
        throughBackward(r);
        List<float[]> before = new ArrayList<>();
        List<float[]> grad = new ArrayList<>();
        for (int i = 0; i < Mlp.PARAMS; i++) {
            int n = (int) Mlp.paramCount(DIMS, i);
            float[] p = new float[n];
            float[] g = new float[n];
            for (int e = 0; e < n; e++) {
                p[e] = r.ops.get(r.params[i], e);
                g[e] = r.ops.get(r.grads[i], e);
            }
            before.add(p);
            grad.add(g);
        }
        float lr = 0.01f;
        r.mlp.sgd(r.ops, lr);
        for (int i = 0; i < Mlp.PARAMS; i++) {
            float[] expected = before.get(i).clone();
            float[] got = new float[expected.length];
            for (int e = 0; e < expected.length; e++) {
                expected[e] = -lr * grad.get(i)[e] + expected[e];
                got[e] = r.ops.get(r.params[i], e);
            }
            assertArrayEquals(expected, got, "param " + i);
        }
    }

    @Test
    void trainingOnAFixedBatchLowersTheLoss() {
        Rig r = new Rig();
        r.mlp.initWeights(r.ops);
        r.mlp.generateBatch(r.ops);
        double[] x = new double[DIMS[0] * BATCH];
        double[] y = new double[DIMS[3] * BATCH];
        for (int i = 0; i < x.length; i++) {
            x[i] = r.ops.get(r.act[0], i);
        }
        for (int i = 0; i < y.length; i++) {
            y[i] = r.ops.get(r.labels, i);
        }
        double first = 0;
        double last = 0;
        for (int step = 0; step < 50; step++) {
            for (int i = 0; i < x.length; i++) { // same batch every step
                r.ops.set(r.act[0], i, (float) x[i]);
            }
            for (int i = 0; i < y.length; i++) {
                r.ops.set(r.labels, i, (float) y[i]);
            }
            r.mlp.forward(r.ops);
            r.mlp.loss(r.ops);
            last = r.mlp.lossFromNorm(r.ops.get(r.norm, 0));
            if (step == 0) {
                first = last;
            }
            for (int l = Mlp.LAYERS; l >= 1; l--) {
                r.mlp.backward(r.ops, l, i -> { });
            }
            r.mlp.sgd(r.ops, 0.1f);
        }
        assertTrue(last < 0.9 * first, "loss " + first + " -> " + last);
    }

    @Test
    void parameterCountsAndAlignedOffsets() {
        int[] lecture = {4000, 4000, 4000, 4000};
        assertEquals(16_000_000L, Mlp.paramCount(lecture, 0));
        assertEquals(4000L, Mlp.paramCount(lecture, 1));
        assertEquals(20L, Mlp.paramCount(DIMS, 0)); // W1 [4 x 5]
        assertEquals(4L, Mlp.paramCount(DIMS, 1));
        assertEquals(24L, Mlp.paramCount(DIMS, 2)); // W2 [6 x 4]
        assertEquals(6L, Mlp.paramCount(DIMS, 3));
        assertEquals(18L, Mlp.paramCount(DIMS, 4)); // W3 [3 x 6]
        assertEquals(3L, Mlp.paramCount(DIMS, 5));
        assertArrayEquals(new long[] {0, 20, 24, 48, 54, 72, 75}, Mlp.paramOffsets(DIMS, 1));
        assertArrayEquals(new long[] {0, 32, 48, 80, 96, 128, 144}, Mlp.paramOffsets(DIMS, 16));
        // the lecture's model with 256-byte alignment: 16,000,000 is a multiple of 64, 4000 is not
        assertArrayEquals(new long[] {0, 16_000_000, 16_004_032, 32_004_032, 32_008_064, 48_008_064, 48_012_096},
                Mlp.paramOffsets(lecture, 64));
    }

    /** The model's steps up to the gradients, the ready calls into the ops' log. */
    private static void throughBackward(Rig r) {
        r.mlp.initWeights(r.ops);
        r.mlp.generateBatch(r.ops);
        r.mlp.forward(r.ops);
        r.mlp.loss(r.ops);
        r.ops.log.clear();
        for (int l = Mlp.LAYERS; l >= 1; l--) {
            r.mlp.backward(r.ops, l, i -> r.ops.log.add("ready " + i));
        }
    }

    @Test
    void dW1InColumnChunksIsTheWholeGradientBitForBitAndSoIsTheUpdate() {
        Rig whole = new Rig();
        Rig split = new Rig(3);   // d0 = 5 columns: chunks [0, 1), [1, 3), [3, 5)
        throughBackward(whole);
        throughBackward(split);
        assertEquals(List.of(0, 1, 3, 5), List.of(Mlp.chunkColumn(5, 3, 0), Mlp.chunkColumn(5, 3, 1),
                Mlp.chunkColumn(5, 3, 2), Mlp.chunkColumn(5, 3, 3)));
        assertEquals(8, split.mlp.gradientCount());
        int out = DIMS[1];
        int nonZero = 0;
        for (int c = 0; c < DIMS[0]; c++) {
            int j = c < 1 ? 0 : c < 3 ? 1 : 2;
            for (int i = 0; i < out; i++) {
                float w = whole.ops.get(whole.grads[0], i + (long) c * out);
                float g = split.ops.get(split.grads[j], i + (long) (c - Mlp.chunkColumn(5, 3, j)) * out);
                assertEquals(Float.floatToRawIntBits(w), Float.floatToRawIntBits(g), "dW1(" + i + "," + c + ")");
                nonZero += w != 0 ? 1 : 0;
            }
        }
        assertTrue(nonZero >= out * DIMS[0] / 2, nonZero + " of " + out * DIMS[0] + ": too few to compare");
        for (int p = 1; p < Mlp.PARAMS; p++) {
            for (long e = 0; e < Mlp.paramCount(DIMS, p); e++) {
                assertEquals(whole.ops.get(whole.grads[p], e), split.ops.get(split.grads[p + 2], e), "d" + p);
            }
        }
        // layer 1: db1 (gradient 3) first, then the chunks from the last column's down, each ready after its GEMM
        assertEquals(List.of(
                "gemm NT", "ready 6", "gemv", "ready 7", "gemm TN", "relu_backward",
                "gemm NT", "ready 4", "gemv", "ready 5", "gemm TN", "relu_backward",
                "gemv", "ready 3", "gemm NT", "ready 2", "gemm NT", "ready 1", "gemm NT", "ready 0"), split.ops.log);
        assertEquals(List.of(0, 0, 0, 1, 2, 3, 4, 5), java.util.stream.IntStream.range(0, 8).map(split.mlp::paramOf)
                .boxed().toList());
        assertEquals(List.of(0, 3, 4, 5, 6, 7), java.util.stream.IntStream.range(0, 6).map(split.mlp::gradientOf)
                .boxed().toList());

        // the update, a gradient at a time in the order of buckets (last first), lands on the same weights
        whole.mlp.sgd(whole.ops, 0.05f);
        for (int g = split.mlp.gradientCount() - 1; g >= 0; g--) {
            split.mlp.sgd(split.ops, g, 0.05f);
        }
        for (int p = 0; p < Mlp.PARAMS; p++) {
            for (long e = 0; e < Mlp.paramCount(DIMS, p); e++) {
                assertEquals(Float.floatToRawIntBits(whole.ops.get(whole.params[p], e)),
                        Float.floatToRawIntBits(split.ops.get(split.params[p], e)), "param " + p + "[" + e + "]");
            }
        }
    }

    @Test
    void dW1CannotHaveMoreChunksThanColumnsOrThanTheMost() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Mlp(DIMS, BATCH,
                new long[6], new long[6 + 5], new long[4], 0, 0, 0, 0, 0));
        assertEquals("dW1 has 5 columns: it cannot be cut in 6 chunks", e.getMessage());
        int[] wide = {100, 4, 6, 3};
        e = assertThrows(IllegalArgumentException.class, () -> new Mlp(wide, BATCH, new long[6],
                new long[6 + Mlp.MAX_CHUNKS], new long[4], 0, 0, 0, 0, 0));
        assertEquals("need 4 dims, 6 parameters, 6 to 69 gradients (dW1 in 1 to 64 chunks) and 4 activations",
                e.getMessage());
    }

    @Test
    void rejectsABadLayerAndBadWiring() {
        Rig r = new Rig();
        assertThrows(IllegalArgumentException.class, () -> r.mlp.backward(r.ops, 0, i -> { }));
        assertThrows(IllegalArgumentException.class, () -> r.mlp.backward(r.ops, 4, i -> { }));
        assertThrows(IllegalArgumentException.class,
                () -> new Mlp(new int[] {1, 2, 3}, 1, new long[6], new long[6], new long[4], 0, 0, 0, 0, 0));
    }
}
