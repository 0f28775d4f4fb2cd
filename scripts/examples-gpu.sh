#!/usr/bin/env bash
# Runs every example on the GPU machine under both launchers, from a bundle made by scripts/gpu-bundle.sh:
# scripts/nccl4j-run -np NP, then mpirun -np NP (one JVM per rank, id over the TCP rendezvous), each with a
# time limit; prints one PASSED/FAILED line per run and ends with "N passed, N failed".
#
#   scripts/examples-gpu.sh [bundle-dir]    NP=2  LOG_DIR=<dir for the logs>  RUN_TIMEOUT=180
#   EXAMPLES="AllReduce;DdpSimple;..."      the runs (an example name and its arguments, ';' between runs)
set -uo pipefail
# The setup the scripts share (java, class path, CUDA libraries, mpirun options): env.sh, beside this script.
[ -f "$(dirname "$0")/env.sh" ] || { echo "${0##*/}: $(dirname "$0")/env.sh is missing" >&2; exit 2; }
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(cd "${1:-$here/../bundle}" && pwd)
np=${NP:-2}
log_dir=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
limit=${RUN_TIMEOUT:-180}
nccl4j_cuda_libs --reverse
java="$bundle/jre/bin/java"
cp=$(nccl4j_classpath "$bundle")
nccl4j_mpi_root_args
nccl4j_mpi_forward_args NCCL_ NCCL4J_ CUDA_ LD_LIBRARY_PATH
IFS=';' read -r -a runs <<< "${EXAMPLES:-AllReduce;DdpSimple;DdpSimple --average avg;ZeroShards;ZeroShards --average premul;ZeroShards --average avg;ReadmeSum;DdpTraining --steps 12}"

passed=0
failed=0
n=0
record() { # name status log
  if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "PASSED  $1"; else failed=$((failed + 1)); echo "FAILED  $1 (exit $2, log $3)"; fi
}
for run in "${runs[@]}"; do
  read -r -a args <<< "$run"
  n=$((n + 1))
  tag=$(echo "${args[*]}" | tr ' ' '_')
  log="$log_dir/$n-run-$tag.log"
  timeout "$limit" "$bundle/nccl4j-run" -np "$np" "${args[@]}" > "$log" 2>&1
  record "nccl4j-run -np $np ${args[*]}" $? "$log"
  log="$log_dir/$n-mpirun-$tag.log"
  timeout "$limit" mpirun "${nccl4j_mpi_root[@]}" --bind-to none --tag-output -np "$np" "${nccl4j_mpi_fwd[@]}" \
      -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$((29700 + n)) \
      "$java" ${JAVA_OPTS:-} -cp "$cp" "org.nccl4j.examples.${args[0]}" "${args[@]:1}" > "$log" 2>&1
  record "mpirun -np $np java ... ${args[*]}" $? "$log"
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
