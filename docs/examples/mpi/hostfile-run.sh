#!/usr/bin/env bash
# nccl4j under Open MPI across hosts: one rank (one JVM) per GPU, the hosts and their GPU counts in a host file:
#   node0 slots=4
#   node1 slots=4
# GPUS_PER_NODE (default 4) ranks start on each host. Run it on node0 (or a host that reaches the others by ssh
# without a password):
#   HOSTFILE=hosts docs/examples/mpi/hostfile-run.sh [program arguments]
# mpirun gives each rank OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK (its GPU) and
# OMPI_COMM_WORLD_LOCAL_SIZE, which nccl4j reads; -x passes MASTER_ADDR, MASTER_PORT, NCCL4J_JOB_SECRET and the
# NCCL variables to every rank. The same paths must exist on every host.
set -euo pipefail
hostfile=${HOSTFILE:-hosts}
[ -r "$hostfile" ] || { echo "${0##*/}: no host file $hostfile: set HOSTFILE (lines: <host> slots=<GPUs>)" >&2; exit 2; }
# Rank 0 runs on the first host of the file and serves the rendezvous there.
MASTER_ADDR=$(awk 'NF && $1 !~ /^#/ { print $1; exit }' "$hostfile")
export MASTER_ADDR
export MASTER_PORT=${MASTER_PORT:-29500}
# One secret for every rank, made here once; -x NAME sends its value to the ranks without putting it on a
# command line. Never printed.
if [ -z "${NCCL4J_JOB_SECRET:-}" ]; then
  NCCL4J_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
  export NCCL4J_JOB_SECRET
fi
NCCL4J_HOME=${NCCL4J_HOME:-$HOME/nccl4j-bundle}
APP_JAR=${APP_JAR:-$HOME/train.jar}

forward=(-x MASTER_ADDR -x MASTER_PORT -x NCCL4J_JOB_SECRET)
for v in LD_LIBRARY_PATH NCCL_DEBUG NCCL_SOCKET_IFNAME NCCL_IB_HCA NCCL_NVLS_ENABLE; do
  [ -z "${!v+set}" ] || forward+=(-x "$v")    # only those set here
done
root=()
[ "$(id -u)" != 0 ] || root=(--allow-run-as-root)
# --bind-to none: a JVM runs many threads; binding each rank to one core would starve them.
exec mpirun "${root[@]}" --hostfile "$hostfile" --map-by "ppr:${GPUS_PER_NODE:-4}:node" --bind-to none "${forward[@]}" \
  "$NCCL4J_HOME/jre/bin/java" -cp "$APP_JAR:$NCCL4J_HOME/lib/*" com.example.Train "$@"
