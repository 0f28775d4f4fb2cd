package org.nccl4j.examples;

import org.nccl4j.diagnostics.StepStats;

/**
 * How much of the gradient all-reduce ran while the backward pass was still computing.
 *
 * <p>For each measured step and bucket the all-reduce is the interval [start, end] on the communication
 * stream, and {@code backwardEnd} is when the compute stream finished the last gradient of that step (all
 * in ms on one clock). The part of an interval before {@code backwardEnd} is hidden behind backward; the
 * hidden fraction is the sum of those parts over the sum of the interval lengths, over all steps and buckets.
 */
final class Overlap {
    private Overlap() {
    }

    /**
     * @param start start of the interval
     * @param end end of the interval ({@code >= start})
     * @param backwardEnd when backward ended
     * @return the length of [start, end] that lies before {@code backwardEnd}
     */
    static double hiddenPart(double start, double end, double backwardEnd) {
        double hidden = Math.min(end, backwardEnd) - start;
        return Math.max(0, Math.min(hidden, end - start));
    }

    /**
     * @param start [step][bucket] all-reduce start times
     * @param end [step][bucket] all-reduce end times
     * @param backwardEnd [step] backward end times
     * @return hidden time / total all-reduce time, NaN when there is no all-reduce time
     */
    static double hiddenFraction(double[][] start, double[][] end, double[] backwardEnd) {
        double hidden = 0;
        double total = 0;
        for (int s = 0; s < backwardEnd.length; s++) {
            for (int k = 0; k < start[s].length; k++) {
                double len = end[s][k] - start[s][k];
                if (len < 0) {
                    throw new IllegalArgumentException("step " + s + " bucket " + k + ": end " + end[s][k]
                            + " before start " + start[s][k]);
                }
                total += len;
                hidden += hiddenPart(start[s][k], end[s][k], backwardEnd[s]);
            }
        }
        return total > 0 ? hidden / total : Double.NaN;
    }

    /**
     * @param start [step][bucket] all-reduce start times
     * @param backwardEnd [step] backward end times
     * @param bucket a bucket
     * @return the median over steps of (start - backwardEnd) of that bucket: negative when it started before
     *     backward ended
     */
    static double medianStartRelative(double[][] start, double[] backwardEnd, int bucket) {
        double[] rel = new double[backwardEnd.length];
        for (int s = 0; s < rel.length; s++) {
            rel[s] = start[s][bucket] - backwardEnd[s];
        }
        return StepStats.median(rel);
    }

    /**
     * @param start [step][bucket] all-reduce start times
     * @param end [step][bucket] all-reduce end times
     * @param bucket a bucket
     * @return the median over steps of that bucket's all-reduce duration
     */
    static double medianDuration(double[][] start, double[][] end, int bucket) {
        double[] d = new double[start.length];
        for (int s = 0; s < d.length; s++) {
            d[s] = end[s][bucket] - start[s][bucket];
        }
        return StepStats.median(d);
    }
}
