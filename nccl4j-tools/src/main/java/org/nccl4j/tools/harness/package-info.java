/**
 * The programs the GPU runners of scripts/ run and judge, not examples to read:
 * {@link org.nccl4j.tools.harness.HangScenarios} (scripts/hang-scenarios.sh: each failure the watchdog must catch),
 * {@link org.nccl4j.tools.harness.DepartureScenarios} (scripts/departures.sh: every way a rank leaves),
 * {@link org.nccl4j.tools.harness.NcclLogCheck} (scripts/diagnostics-gpu.sh: NCCL's log through SLF4J), and the cost
 * measurements {@link org.nccl4j.tools.harness.MetricsCost} and {@link org.nccl4j.tools.harness.FingerprintCost}
 * (their rounds: {@code EagerRounds}).
 */
package org.nccl4j.tools.harness;
