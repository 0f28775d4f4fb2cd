#!/usr/bin/env bash
# The entry point of nccl4j's container image (docs/examples/container/Dockerfile): checks that a rank can start in
# this container, with nccl4j-doctor --preflight (CUDA sees a GPU, NCCL loads, /dev/shm is large enough for several
# GPUs, NCCL_SOCKET_IFNAME names an interface, a job whose rank 0 other hosts reach has its NCCL4J_JOB_SECRET), then
# runs the command in its place (exec: it gets the container's signals). The doctor's one line goes to stderr, so
# that the command's stdout is its own.
#
#   entrypoint.sh COMMAND [ARG...]
#
# The doctor itself (the image's default command, nccl4j-doctor --quick) runs without the check: its report is what
# to read when the container is not ready.
#
# Exit status: the command's; else 1 when the container is not ready (the line says why and the fix), 2 without a
# command, or the doctor's own status (3: it failed). To skip the check, start the container with another entry point
# (docker run --entrypoint, or a Kubernetes container's command).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -eq 0 ]; then
  echo "entrypoint.sh: no command to run: give one, e.g. $here/nccl4j-run -np auto AllReduce" >&2
  exit 2
fi
if [ "${1##*/}" = nccl4j-doctor ]; then
  exec "$@"
fi
status=0
"$here/nccl4j-doctor" --preflight >&2 || status=$?
if [ "$status" != 0 ]; then
  exit "$status"
fi
exec "$@"
