/**
 * nccl4j-doctor, the machine's check-up: {@link org.nccl4j.tools.doctor.Doctor} (the main), {@code Probe} and
 * {@code Machine} (what is read of CUDA, NCCL, NVLink, PCIe and the environment), {@code Checks} and
 * {@code Expectations} (the verdicts), {@code Paths} and {@code Measure} (the bandwidth measured between GPUs),
 * {@code Finding} (one line of the report).
 */
package org.nccl4j.tools.doctor;
