package org.nccl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SeedsTest {
    @Test
    void weightsSeedIsTheSameForEveryRankAndDataSeedsDiffer() {
        assertEquals(Seeds.weights(1234), Seeds.weights(1234));
        Set<Long> seeds = new HashSet<>();
        seeds.add(Seeds.weights(1234));
        for (int rank = 0; rank < 64; rank++) {
            assertEquals(Seeds.data(1234, rank), Seeds.data(1234, rank));
            seeds.add(Seeds.data(1234, rank));
        }
        seeds.add(Seeds.data(1235, 0));
        assertEquals(66, seeds.size());
        // SplitMix64 finalizer of 0 is 0; of 1 it is a known constant
        assertEquals(0L, Seeds.mix(0));
        assertEquals(0x5692161d100b05e5L, Seeds.mix(1));
    }
}
