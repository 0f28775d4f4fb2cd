package org.nccl4j.diagnostics;

import java.util.Arrays;

/**
 * Step-time statistics: the median of a run's step (or operation) times, and the median over the measured steps only,
 * as "steps 3..N" (1-based), so that warm-up steps do not count. What the examples report per step and what the tools'
 * benchmarks and harnesses compare is computed here, once.
 */
public final class StepStats {
    private StepStats() {
    }

    /**
     * The median of {@code values}: the middle value, or the mean of the two middle values for an even count
     * (as Python's {@code statistics.median}).
     *
     * @param values the values (not modified)
     * @return the median, NaN when there are none
     */
    public static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] v = values.clone();
        Arrays.sort(v);
        int mid = v.length / 2;
        return v.length % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
    }

    /**
     * The median of the steps {@code firstStep..N}, 1-based: {@code stepMs[firstStep - 1]} onwards.
     *
     * @param stepMs the time of every step, step 1 first
     * @param firstStep the first measured step, 1-based ({@code >= 1})
     * @return the median, NaN when fewer than {@code firstStep} steps ran
     * @throws IllegalArgumentException when {@code firstStep} is below 1
     */
    public static double medianFrom(double[] stepMs, int firstStep) {
        if (firstStep < 1) {
            throw new IllegalArgumentException("firstStep is 1-based, got " + firstStep);
        }
        if (stepMs.length < firstStep) {
            return Double.NaN;
        }
        return median(Arrays.copyOfRange(stepMs, firstStep - 1, stepMs.length));
    }
}
