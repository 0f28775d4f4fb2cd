package org.nccl4j.examples;

import java.util.Locale;

/** Small helpers shared by the examples. */
public final class Examples {
    private Examples() {
    }

    /**
     * @return whether a launcher started this process as one rank of several (mpirun, Slurm, torchrun, nccl4j-run)
     */
    public static boolean launchedPerRank() {
        for (String v : new String[] {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE"}) {
            String s = System.getenv(v);
            if (s != null && !s.isBlank()) {
                try {
                    return Integer.parseInt(s.strip()) > 1;
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(v + "=" + s + " is not a number");
                }
            }
        }
        return false;
    }

    /** Parses 1024, 64K, 64M, 1G (powers of two). */
    static long parseSize(String s) {
        String t = s.strip().toUpperCase(Locale.ROOT);
        long mult = 1;
        if (t.endsWith("K")) {
            mult = 1L << 10;
        } else if (t.endsWith("M")) {
            mult = 1L << 20;
        } else if (t.endsWith("G")) {
            mult = 1L << 30;
        }
        if (mult != 1) {
            t = t.substring(0, t.length() - 1);
        }
        long v = Long.parseLong(t) * mult;
        if (v < 4) {
            throw new IllegalArgumentException("size must be at least 4 bytes, got " + s);
        }
        return v;
    }
}
