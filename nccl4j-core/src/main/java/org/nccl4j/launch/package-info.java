/**
 * Before a communicator exists: where this process sits in the job, how NCCL's unique id reaches every rank, and
 * NCCL's environment.
 *
 * <ul>
 *   <li>{@link org.nccl4j.launch.LaunchInfo}: rank, world size, local rank, node and device, from Open MPI, PMIx,
 *       PMI, Slurm, Kubeflow's {@code PET_*} variables, a Kubernetes Indexed Job or torchrun-style variables, and
 *       this host's name; {@code HostList} reads Slurm's compressed host lists for the rendezvous host.</li>
 *   <li>{@link org.nccl4j.launch.Rendezvous}: brings rank 0's unique id to every rank over TCP ({@code MASTER_ADDR},
 *       {@code MASTER_PORT}), through a shared file, or leaves it to NCCL ({@code NCCL_COMM_ID}); it names the ranks
 *       that never arrived. {@code RendezvousWire} is its message format; {@link org.nccl4j.launch.RendezvousException}
 *       its failure.</li>
 *   <li>{@link org.nccl4j.launch.NcclEnvironment}: validates {@code NCCL_*} settings and writes them into the process
 *       environment before NCCL reads it, through {@link org.nccl4j.launch.ProcessEnvironment}.</li>
 * </ul>
 * {@link org.nccl4j.Communicator#fromEnvironment()} uses all of them; a program calls them directly only for its own
 * rendezvous or environment. The package sits below the rest of the core and uses none of it: it asks the CUDA
 * runtime for the number of visible devices (for the local rank's device) and nccl4j's native layer whether NCCL has
 * initialized (to warn of settings applied too late) itself, and the core passes its own device count
 * ({@link org.nccl4j.Cuda#deviceCount()}) where it detects the launch.
 */
package org.nccl4j.launch;
