#!/usr/bin/env bash
# diagnostics-gpu.sh: the diagnostics on a GPU machine, each checked by the program itself:
#   the doctor (full, --quick and --json), the slow-rank monitor with 3 ranks sharing the GPUs (rank 1 sleeping 50 ms
#   before each all-reduce, then no one sleeping), and NCCL's log through SLF4J (NCCL_DEBUG=INFO, 3 ranks).
#
#   scripts/diagnostics-gpu.sh [BUNDLE]      BUNDLE: a directory made by scripts/gpu-bundle.sh (default: bundle/)
#
# Environment: LOG_DIR (default: a new temporary directory) receives each case's output; CASE_TIMEOUT (default 120)
# the seconds after which a case is killed. Prints one line per case and exits 0 when every case passed.
set -uo pipefail
[ -f "$(dirname "$0")/env.sh" ] || { echo "${0##*/}: $(dirname "$0")/env.sh is missing" >&2; exit 2; }
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
tool=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(nccl4j_bundle_dir "$tool" "${1:-$here/../bundle}") || exit 2
log_dir=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
limit=${CASE_TIMEOUT:-120}
npassed=0
nfailed=0
case_() { # NAME EXPECTED_STATUS COMMAND...: runs it, output to LOG_DIR/NAME.txt
  local name=$1 expected=$2 t0 st secs
  shift 2
  t0=$(date +%s.%N)
  timeout -s KILL "$limit" "$@" > "$log_dir/$name.txt" 2>&1
  st=$?
  secs=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
  if [[ "$st" =~ ^$expected$ ]]; then
    npassed=$((npassed + 1)); echo "PASSED  $name: exit $st, $secs s"
  else
    nfailed=$((nfailed + 1)); echo "FAILED  $name: exit $st (expected $expected), $secs s"
  fi
}
export NCCL4J_BUNDLE=$bundle
# the doctor: 0 or 1 (a WARN on this machine is a finding, not a failure); under 30 s with the measurements
case_ doctor '[01]' "$here/nccl4j-doctor"
case_ doctor-quick '[01]' "$here/nccl4j-doctor" --quick
case_ doctor-json '[01]' "$here/nccl4j-doctor" --json
share=(--share-gpu)
case_ slow-rank-1 0 "$bundle/nccl4j-run" "${share[@]}" -np 3 SlowRank --sleep-rank 1 --sleep-ms 50 --steps 40 --every 5
case_ slow-rank-none 0 "$bundle/nccl4j-run" "${share[@]}" -np 3 SlowRank --steps 40 --every 5
case_ nccl-log 0 env NCCL_DEBUG=INFO "$bundle/nccl4j-run" "${share[@]}" -np 3 NcclLogCheck
echo "$npassed passed, $nfailed failed (logs: $log_dir)"
[ "$nfailed" = 0 ]
