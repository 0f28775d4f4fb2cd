/**
 * nccl4j-perf, nccl-tests' benchmarks written with nccl4j: {@link org.nccl4j.tools.perf.Perf} (the main),
 * {@code PerfArgs} (nccl-tests' flags), {@code Operation}, {@code Elements} and {@code Pattern} (what each benchmark
 * sends and checks), {@code Bench} (the timing loop), {@code PerfRow} and {@code Table} (nccl-tests' columns and the
 * JSON), {@link org.nccl4j.tools.perf.Plot} (the bandwidth charts).
 */
package org.nccl4j.tools.perf;
