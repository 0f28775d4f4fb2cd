/**
 * nccl4j-doctor, the machine's check-up: {@link org.nccl4j.tools.doctor.Doctor} (the main); {@code Probe},
 * {@code Machine} and {@code Limits} (what is read of CUDA, NCCL, NVLink, PCIe, /dev/shm, the locked-memory limit and
 * the environment); {@code Checks} and {@code Expectations} (the verdicts); {@code Preflight} (the one-line check
 * before a rank starts); {@code Paths} and {@code Measure} (the bandwidth measured between GPUs); {@code Finding} (one
 * line of the report).
 */
package org.nccl4j.tools.doctor;
