#!/usr/bin/env bash
# Rehearses a job across two hosts on one machine with 4 GPUs, from a bundle made by scripts/gpu-bundle.sh:
# nccl4j-run --hosts 2 -np 2 gives each rehearsed host its own NCCL_HOSTID and pair of GPUs, so NCCL connects the
# ranks of one host over NVLink and the two hosts over sockets, as across real hosts. One PASSED/FAILED line per run,
# then "N passed, N failed".
#
#   scripts/two-hosts.sh [bundle-dir]      (default bundle-dir: ../bundle)
#   LOG_DIR=<dir for the logs>  RUN_TIMEOUT=180 (seconds per run)
#   PARTS="launchers ops ddp elastic"   which parts run (default: all four)
#
# launchers  AllReduce (64 MiB, every element against the host's sum) with the variables torchrun, srun and mpirun
#            set across hosts (--as).
# ops        every operation of nccl4j-perf, 1-64 MiB, each result checked element by element (-c 1: exit 1 on a
#            wrong one), across the two hosts and then inside one host of 4 GPUs; the bus bandwidth of both is
#            tabled at the end (out of place, GB/s).
# ddp        DdpTraining across the two hosts (weights identical on every rank, or it fails).
# elastic    ElasticDdp under nccl4j-run --elastic losing a whole host at step 60, both ranks at once: host 1
#            (ranks 2 and 3), then host 0 (ranks 0 and 1, rank 0 with them); the two survivors must end with the
#            same weights (crc32) and a falling loss.
set -uo pipefail
[ -f "$(dirname "$0")/env.sh" ] || { echo "${0##*/}: $(dirname "$0")/env.sh is missing" >&2; exit 2; }
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
tool=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(nccl4j_bundle_dir "$tool" "${1:-$here/../bundle}") || exit 2
gpus=$(nccl4j_gpu_count "$tool") || exit 2
if [ "$gpus" -lt 4 ]; then
  echo "$tool: two hosts of 2 GPUs need 4 GPUs; this machine has $gpus" >&2
  exit 2
fi
log_dir=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
limit=${RUN_TIMEOUT:-180}
parts=" ${PARTS:-launchers ops ddp elastic} "
run=("$bundle/nccl4j-run")
hosts=("${run[@]}" --hosts 2 -np 2)
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}

passed=0
nfailed=0
n=0
# check NAME STATUS LOG [WHY]: one line for a run
check() {
  if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "PASSED  $1"
  else nfailed=$((nfailed + 1)); echo "FAILED  $1 (${4:-exit $2}, log $3)"; fi
}
# launch NAME COMMAND...: runs it bounded, its output in a log of its own; sets $log and $status
launch() {
  n=$((n + 1))
  log="$log_dir/$n-$1.log"
  shift
  timeout -s KILL "$limit" "$@" > "$log" 2>&1
  status=$?
}

if [[ "$parts" == *" launchers "* ]]; then
  for as in torchrun srun mpirun; do
    launch "allreduce-$as" "${hosts[@]}" --as "$as" AllReduce
    check "two hosts, $as's variables: AllReduce" "$status" "$log"
  done
fi

ops=(all_reduce all_gather broadcast reduce reduce_scatter alltoall gather scatter sendrecv)
if [[ "$parts" == *" ops "* ]]; then
  for where in across inside; do
    for op in "${ops[@]}"; do
      if [ "$where" = across ]; then
        launch "$op-across" "${hosts[@]}" org.nccl4j.tools.perf.Perf "${op}_perf" -b 1M -e 64M -f 8 -n 10 -w 3 -c 1
      else
        launch "$op-inside" "${run[@]}" -np 4 org.nccl4j.tools.perf.Perf "${op}_perf" -b 1M -e 64M -f 8 -n 10 -w 3 -c 1
      fi
      check "$where: ${op}_perf, every result checked" "$status" "$log"
    done
  done
  # busbw LOG: size and out-of-place bus bandwidth of the rows of nccl-tests' table in rank 0's lines ("[0]" before
  # each line of nccl4j-run's: size count type redop root time algbw busbw #wrong ..., out of place first)
  busbw() { awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ && NF >= 9 { print $2, $9 }' "$@" | sort -k1,1; }
  echo "bus bandwidth, out of place (GB/s): op, size, 4 GPUs in one host, 2 hosts x 2 GPUs"
  for op in "${ops[@]}"; do
    join -j 1 <(busbw "$log_dir"/*-"$op"-inside.log) <(busbw "$log_dir"/*-"$op"-across.log) \
      | sort -n | awk -v op="$op" '{ printf "%-15s %10d %9s %9s\n", op, $1, $2, $3 }'
  done
fi

if [[ "$parts" == *" ddp "* ]]; then
  launch ddp "${hosts[@]}" DdpTraining --steps 30
  check "two hosts: DdpTraining" "$status" "$log"
  grep -h 'median step time' "$log" | head -1
fi

# elastic NAME RANKS: ElasticDdp losing RANKS at step 60; the survivors agree on the weights
elastic() {
  launch "elastic-$1" "${run[@]}" --elastic --hosts 2 -np 2 ElasticDdp --steps 200 --kill-rank "$2" --kill-step 60
  local finals crcs falling
  finals=$(grep -c 'final weights crc32' "$log")
  crcs=$(grep -o 'final weights crc32 [0-9a-f]*' "$log" | sort -u | wc -l)
  falling=$(grep -c 'final weights crc32.*(falling)' "$log")
  if [ "$status" = 0 ] && [ "$finals" = 2 ] && [ "$crcs" = 1 ] && [ "$falling" = 2 ]; then
    check "two hosts: ElasticDdp losing $1 (ranks $2) at once" 0 "$log"
  else
    check "two hosts: ElasticDdp losing $1 (ranks $2) at once" 1 "$log" \
      "exit $status, $finals survivors' weights, $crcs different, $falling falling"
  fi
  grep -hE 'after the all-reduce was enqueued|recovered|final weights' "$log" | sed 's/^/        /'
}
if [[ "$parts" == *" elastic "* ]]; then
  elastic host1 2,3
  elastic host0 0,1
fi

echo "$passed passed, $nfailed failed (logs: $log_dir)"
[ "$nfailed" = 0 ]
