package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** ElasticDdp's model on the CPU: its data is deterministic and its gradient descends. */
class ElasticDdpTest {
    @Test
    void dataIsDeterministicAndInRange() {
        assertEquals(ElasticDdp.input(2, 5, 3, 7), ElasticDdp.input(2, 5, 3, 7));
        float a = ElasticDdp.input(0, 0, 0, 0);
        float b = ElasticDdp.input(1, 0, 0, 0);
        assertTrue(a != b, "ranks have their own shards");
        for (int j = 0; j < 1000; j++) {
            float v = ElasticDdp.input(j % 3, j, j % 16, j % 256);
            assertTrue(v >= -1 && v < 1, "input " + v);
        }
    }

    @Test
    void theGradientIsZeroAtTheTargetAndStepsLowerTheLoss() {
        float[] w = new float[256];
        float[] g = new float[256];
        for (int j = 0; j < w.length; j++) {
            w[j] = ElasticDdp.target(j);
        }
        assertEquals(0, ElasticDdp.gradient(w, 1, 4, g), 1e-9);
        java.util.Arrays.fill(w, 0f);
        double before = ElasticDdp.gradient(w, 0, 0, g);
        for (int step = 0; step < 200; step++) {
            ElasticDdp.gradient(w, step % 3, step, g);
            for (int j = 0; j < w.length; j++) {
                w[j] -= 0.05f * g[j];
            }
        }
        double after = ElasticDdp.gradient(w, 0, 0, g);
        assertTrue(after < before / 2, "loss " + before + " -> " + after);
    }

    @Test
    void aWholeHostIsAListOfRanksHaltedAtOneStep() {
        ElasticDdp.Options o = Args.parse(new ElasticDdp.Options(), "--kill-rank", "2,3", "--kill-step", "60");
        assertArrayEquals(new int[] {2, 3}, o.killRanks);
        assertNull(o.check());
        assertArrayEquals(new int[] {1}, Args.parse(new ElasticDdp.Options(), "--kill-rank", "1", "--kill-step", "5")
                .killRanks);
        assertNull(Args.parse(new ElasticDdp.Options()).check(), "no loss at all is a plain run");
    }

    @Test
    void badKillOptionsAreNamedWithTheFix() {
        assertEquals("--kill-rank needs --kill-step K with 0 <= K < --steps (200); got -1",
                Args.parse(new ElasticDdp.Options(), "--kill-rank", "1").check());
        assertEquals("--kill-rank needs --kill-step K with 0 <= K < --steps (10); got 10",
                Args.parse(new ElasticDdp.Options(), "--steps", "10", "--kill-rank", "1", "--kill-step", "10").check());
        assertEquals("--kill-rank 2 is given twice; give distinct ranks, e.g. --kill-rank 2,3",
                Args.parse(new ElasticDdp.Options(), "--kill-rank", "2,2", "--kill-step", "3").check());
        assertEquals("--kill-rank -1 is negative; give distinct ranks, e.g. --kill-rank 2,3",
                Args.parse(new ElasticDdp.Options(), "--kill-rank", "-1", "--kill-step", "3").check());
        assertEquals("--kill-step 4 needs --kill-rank R[,R...]: the ranks to halt",
                Args.parse(new ElasticDdp.Options(), "--kill-step", "4").check());
        assertEquals("--steps must be >= 1; got 0", Args.parse(new ElasticDdp.Options(), "--steps", "0").check());
    }
}
