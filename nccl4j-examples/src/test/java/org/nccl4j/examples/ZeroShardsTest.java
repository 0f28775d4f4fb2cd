package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The expected values of {@link ZeroShards}, and the ZeRO pattern itself played on host arrays: reduce-scatter,
 * average, all-gather must give every rank the element-wise average of all ranks' gradients.
 */
class ZeroShardsTest {
    @Test
    void gradientsAreSmallIntegers() {
        for (int r = 0; r < 9; r++) {
            for (long i = 0; i < 1000; i++) {
                float g = ZeroShards.gradient(r, i);
                assertTrue(g >= -8 && g <= 8 && g == Math.rint(g), "gradient(" + r + ", " + i + ") = " + g);
            }
        }
        assertEquals(-8.0f, ZeroShards.gradient(0, 0));
        assertEquals(-1.0f, ZeroShards.gradient(0, 1));
        assertEquals(-5.0f, ZeroShards.gradient(1, 0));
        assertEquals(-6.5f, ZeroShards.expectedAverage(2, 0));
    }

    @Test
    void countsArePaddedToAMultipleOfTheWorld() {
        assertEquals(1L << 20, ZeroShards.paddedCount(1L << 20, 8));
        assertEquals(1048578L, ZeroShards.paddedCount(1L << 20, 3));
        assertEquals(7L, ZeroShards.paddedCount(1, 7));
        assertEquals(1L << 20, Examples.parseCount("1M"));
    }

    @Test
    void reduceScatterAverageAllGatherGivesTheAverageEverywhere() {
        for (int n : new int[] {1, 2, 3, 4, 5, 8}) {
            for (ZeroShards.Average how : ZeroShards.Average.values()) {
                long count = ZeroShards.paddedCount(1001, n);
                int shard = (int) (count / n);
                float[][] shards = new float[n][shard];
                float inv = 1.0f / n;
                // reduce-scatter: rank r gets block r, summed over ranks (last rank first, to vary the order)
                for (int r = 0; r < n; r++) {
                    for (int j = 0; j < shard; j++) {
                        long i = (long) r * shard + j;
                        float s = 0;
                        for (int q = n - 1; q >= 0; q--) {
                            float g = ZeroShards.gradient(q, i);
                            s += how == ZeroShards.Average.HOST ? g : g * inv;
                        }
                        shards[r][j] = how == ZeroShards.Average.HOST ? s / n : s;
                    }
                }
                // all-gather: the same full vector on every rank
                float[] full = new float[(int) count];
                for (int r = 0; r < n; r++) {
                    System.arraycopy(shards[r], 0, full, r * shard, shard);
                }
                float tol = ZeroShards.tolerance(n, how);
                for (int i = 0; i < count; i++) {
                    float e = ZeroShards.expectedAverage(n, i);
                    assertTrue(Math.abs(full[i] - e) <= tol, how + " n=" + n + " element " + i + ": expected " + e
                            + ", got " + full[i]);
                }
            }
        }
    }
}
