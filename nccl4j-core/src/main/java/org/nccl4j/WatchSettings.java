package org.nccl4j;

import java.nio.file.Path;
import java.time.Duration;

/**
 * A communicator's watchdog settings, resolved from {@link WatchdogConfig} and {@link CommConfig}: what
 * {@link Watchdog} watches it with, and what its {@link CommHealth} state records.
 *
 * @param enabled whether the communicator is watched
 * @param timeout the age at which a pending operation is declared hung
 * @param policy what happens after a failure
 * @param listener the listener of {@link FailurePolicy#CALLBACK}, or null
 * @param traceBuffer operations kept by the flight recorder; 0 for none (watchdog off only)
 * @param traceDir where traces are written
 * @param checkCollectives whether collectives compare their arguments across ranks first
 * @param commName the communicator's name, or null
 */
record WatchSettings(boolean enabled, Duration timeout, FailurePolicy policy, FailureListener listener,
        int traceBuffer, Path traceDir, boolean checkCollectives, String commName) {
}
