/**
 * nccl4j's checked API over NVIDIA NCCL.
 *
 * <p>Before a communicator exists: {@link org.nccl4j.NcclEnvironment} validates NCCL's environment variables and
 * writes them into the process environment, {@link org.nccl4j.LaunchInfo} reads rank, world size and device from
 * the launcher (Open MPI, PMIx, PMI, Slurm, torchrun), and {@link org.nccl4j.Rendezvous} brings NCCL's unique id
 * from rank 0 to every rank over TCP, through a shared file, or through {@code NCCL_COMM_ID}.
 */
package org.nccl4j;
