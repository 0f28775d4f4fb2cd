package org.nccl4j.examples;

/** Seeds of the random generators: the same weights on every rank, different data per rank. */
final class Seeds {
    private Seeds() {
    }

    /**
     * @param seed the run's seed
     * @return the seed of the weight initialization, the same on every rank
     */
    static long weights(long seed) {
        return mix(seed);
    }

    /**
     * @param seed the run's seed
     * @param rank the rank
     * @return the seed of this rank's inputs and labels, distinct per rank and from {@link #weights(long)}
     */
    static long data(long seed, int rank) {
        return mix(seed + 0x9E3779B97F4A7C15L * (rank + 1L));
    }

    /** SplitMix64's finalizer: spreads nearby seeds over all 64 bits. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
