#!/usr/bin/env bash
# Runs every example on the GPU machine under both launchers, from a bundle made by scripts/gpu-bundle.sh:
# scripts/nccl4j-run -np NP, then mpirun -np NP (one JVM per rank, id over the TCP rendezvous), each with a
# time limit; prints one PASSED/FAILED line per run and ends with "N passed, N failed".
#
#   scripts/examples-gpu.sh [--share-gpu] [bundle-dir]      (default bundle-dir: ../bundle)
#   NP=ranks (default max(2, GPU count))  LOG_DIR=<dir for the logs>  RUN_TIMEOUT=180
#   EXAMPLES="AllReduce;DdpSimple;..."      the runs (an example name and its arguments, ';' between runs)
#
# The GPU count, NP's checks and the sharing of GPUs are gpu-test.sh's (env.sh): with NP > GPU count, or --share-gpu
# (SHARE_GPU=1), the ranks share the GPUs: nccl4j-run gets --share-gpu, and under mpirun each rank gets
# NCCL_HOSTID=nccl4j-host<rank> (unless NCCL_HOSTID is set) and NCCL_SOCKET_IFNAME=lo (unless set) from a wrapper,
# share-rank.sh in LOG_DIR.
set -uo pipefail
# The setup the scripts share (java, class path, CUDA libraries, mpirun options): env.sh, beside this script.
[ -f "$(dirname "$0")/env.sh" ] || { echo "${0##*/}: $(dirname "$0")/env.sh is missing" >&2; exit 2; }
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
tool=${0##*/}
nccl4j_gpu_args "$tool" "$@" || exit 2
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(nccl4j_bundle_dir "$tool" "${nccl4j_bundle_arg:-$here/../bundle}") || exit 2
gpus=$(nccl4j_gpu_count "$tool") || exit 2
np=$(nccl4j_ranks "$tool" "$gpus") || exit 2
log_dir=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
limit=${RUN_TIMEOUT:-180}
nccl4j_cuda_libs --reverse
java="$bundle/jre/bin/java"
cp=$(nccl4j_classpath "$bundle")
nccl4j_mpi_root_args
nccl4j_mpi_forward_args NCCL_ NCCL4J_ CUDA_ LD_LIBRARY_PATH
# Sharing: nccl4j-run sets each rank's NCCL_HOSTID itself (--share-gpu); under mpirun a wrapper does, before the rank's
# java.
run_share=()
mpi_share=()
mpi_wrap=()
if nccl4j_share_gpus "$tool" "$gpus" "$np" "$nccl4j_share_forced"; then
  run_share=(--share-gpu)
  { echo '#!/usr/bin/env bash'; nccl4j_share_env; echo 'exec "$@"'; } > "$log_dir/share-rank.sh"
  chmod +x "$log_dir/share-rank.sh"
  mpi_share=(--oversubscribe)
  mpi_wrap=("$log_dir/share-rank.sh")
fi
IFS=';' read -r -a runs <<< "${EXAMPLES:-AllReduce;DdpSimple;DdpSimple --average avg;ZeroShards;ZeroShards --average premul;ZeroShards --average avg;ReadmeSum;DdpTraining --steps 12}"

passed=0
failures=0
n=0
record() { # name status log
  if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "PASSED  $1"; else failures=$((failures + 1)); echo "FAILED  $1 (exit $2, log $3)"; fi
}
for run in "${runs[@]}"; do
  read -r -a args <<< "$run"
  n=$((n + 1))
  tag=$(echo "${args[*]}" | tr ' ' '_')
  log="$log_dir/$n-run-$tag.log"
  timeout "$limit" "$bundle/nccl4j-run" "${run_share[@]}" -np "$np" "${args[@]}" > "$log" 2>&1
  record "nccl4j-run ${run_share[*]}${run_share[*]:+ }-np $np ${args[*]}" $? "$log"
  log="$log_dir/$n-mpirun-$tag.log"
  # JAVA_OPTS is split on spaces on purpose: it carries several -D options.
  # shellcheck disable=SC2086
  timeout "$limit" mpirun "${nccl4j_mpi_root[@]}" --bind-to none --tag-output "${mpi_share[@]}" -np "$np" \
      "${nccl4j_mpi_fwd[@]}" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$((29700 + n)) \
      "${mpi_wrap[@]}" "$java" ${JAVA_OPTS:-} -cp "$cp" "org.nccl4j.examples.${args[0]}" "${args[@]:1}" > "$log" 2>&1
  record "mpirun -np $np java ... ${args[*]}" $? "$log"
done
echo "$passed passed, $failures failed"
[ "$failures" = 0 ]
