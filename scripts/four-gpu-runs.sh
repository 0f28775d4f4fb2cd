#!/usr/bin/env bash
# The runs of the 4-GPU issue in one command, for the times a machine of 4 GPUs is at hand: each part is one of the
# project's scripts with the issue's settings, its output in a directory of its own, and a line per part at the end.
#
#   NCCL_TESTS_SRC=DIR scripts/four-gpu-runs.sh [BUNDLE]   (BUNDLE: made by scripts/gpu-bundle.sh; default bundle/)
#
#   PARTS    which parts, in this order (default: all): ops small causes sharded phases fuzz hosts
#   OUT_DIR  where every part writes (default: four-gpu-runs/<UTC date and time>)
#   PART_TIMEOUT  seconds a part may take (default 540: one part fits a call of 10 minutes; give the parts to calls one
#            or two at a time); the phase matrix gets it less 30 s as its BUDGET (rows that could end past it are
#            listed, not started)
#   DRY_RUN=1     print each part's command with its settings, run nothing (no GPU needed)
#   NCCL_TESTS_SRC / NCCL_TESTS_BIN  NVIDIA's nccl-tests for ops and small (see bench/frontier.sh); those two parts
#            are skipped, saying so, without either
#   LIBS     the NCCL library of ops and small, NAME=PATH (default: the system's, system=/usr/lib/x86_64-linux-gnu/
#            libnccl.so.2; frontier.sh's own default adds PyTorch's, which doubles the part's time)
#   OPS_REGS the -R values of ops (default "0 1 2"; a call of 10 minutes holds about two of them with 3 rounds)
#   FUZZ_RUNS runs of the fuzz part (default 200; BUDGET, the part's time less 30 s, leaves out what would not fit)
#   CAUSE_ROUNDS  rounds of the causes part's large cells (default 6)
#
# ops      every operation, 64 MiB-256 MiB, out of place and in place, at -R 0, 1 and 2, nccl4j-perf and nccl-tests
#          alternating, 3 rounds (bench/frontier.sh; its frontier.json has min_busbw_ratio_64MiB_up_4gpu)
# small    the small all-reduces, 8 B-64 KiB, at -R 0 and 2, 3 rounds, ranks given 4 cores each (MAP_BY=slot:PE=4
#          BIND=core) and then 1 core each (bench/frontier.sh)
# causes   what NCCL chose in each run, beside its time (bench/frontier.sh with NCCL_DEBUG=INFO,
#          NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING,REG: choices.md, bench/nccl_choices.py): the cells where either program's
#          runs took one of two levels (-R 1 and 2, broadcast and all_reduce, 64 MiB and 256 MiB, -n 200, CAUSE_ROUNDS
#          rounds), then the small all-reduces at -R 2 (8 B-2 KiB, 4 cores a rank, 3 rounds), where nccl-tests reached
#          a level nccl4j-perf did not: whether each program's collectives took the symmetric kernel
# sharded  the 80-layer model against FSDP2 on 4 ranks, 2 rounds (bench/sharded-compare.sh)
# phases   the phase matrix with 4 ranks, one GPU each, every scenario and launcher (departures.sh CONFIGS=4gpu);
# fuzz     the start-up SIGTERM fuzz with 4 ranks, one GPU each (departures.sh STARTUP_FUZZ, FUZZ_RANKS=4,
#          FUZZ_CONFIG=gpus, 4 runs at a time)
# hosts    two rehearsed hosts of 2 GPUs, every part (two-hosts.sh: launchers, ops, ddp, elastic)
#
# Exit status 0 when every part that ran passed, 1 when one failed, 2 on a usage error or with fewer than 4 GPUs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tool=four-gpu-runs
root=$(cd "$here/.." && pwd)
bundle=${1:-$root/bundle}
parts=${PARTS:-ops small causes sharded phases fuzz hosts}
libs=${LIBS:-system=/usr/lib/x86_64-linux-gnu/libnccl.so.2}
ops_regs=${OPS_REGS:-0 1 2}
fuzz_runs=${FUZZ_RUNS:-200}
cause_rounds=${CAUSE_ROUNDS:-6}
dry=${DRY_RUN:-0}
limit=${PART_TIMEOUT:-540}
for p in $parts; do
  case "$p" in ops|small|causes|sharded|phases|fuzz|hosts) ;;
    *) echo "$tool: PARTS: ops small causes sharded phases fuzz hosts (got '$p')" >&2
    exit 2 ;; esac
done
[[ "$limit" =~ ^[0-9]+$ ]] || { echo "$tool: PART_TIMEOUT takes whole seconds (got '$limit')" >&2; exit 2; }
[[ "$fuzz_runs" =~ ^[1-9][0-9]*$ ]] || { echo "$tool: FUZZ_RUNS takes a whole number above 0 (got '$fuzz_runs')" >&2
  exit 2; }
[[ "$cause_rounds" =~ ^[1-9][0-9]*$ ]] || {
  echo "$tool: CAUSE_ROUNDS takes a whole number above 0 (got '$cause_rounds')" >&2; exit 2; }
for g in $ops_regs; do
  case "$g" in 0|1|2) ;; *) echo "$tool: OPS_REGS: -R values 0, 1 and 2 (got '$g')" >&2; exit 2 ;; esac
done
if [ "$dry" != 1 ]; then
  [ -x "$bundle/jre/bin/java" ] || { echo "$tool: no $bundle/jre/bin/java (run scripts/gpu-bundle.sh)" >&2; exit 2; }
  gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true)
  [ "${gpus:-0}" -ge 4 ] || { echo "$tool: 4 GPUs needed, nvidia-smi lists ${gpus:-0}" >&2; exit 2; }
fi
out=${OUT_DIR:-four-gpu-runs/$(date -u +%Y-%m-%d-%H%M)}
ops="all_reduce all_gather broadcast reduce reduce_scatter alltoall gather scatter sendrecv"
every=""
for op in $ops; do every+="${every:+;}${op}_perf -b 64M -e 256M -f 4 -n 20 -w 5 -c 0"; done
small="all_reduce_perf -b 8 -e 64K -f 2 -n 2000 -w 500 -c 0"
two_levels="broadcast_perf -b 64M -e 256M -f 4 -n 200 -w 20 -c 0;all_reduce_perf -b 64M -e 256M -f 4 -n 200 -w 20 -c 0"
symmetric="all_reduce_perf -b 8 -e 2K -f 2 -n 200 -w 50 -c 0"
logged=(NCCL_DEBUG=INFO "NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING,REG" NCCL4J_NCCL_LOG=off)
summary=()
bad=0

# part NAME DIR VAR=VALUE... -- COMMAND...: runs COMMAND with the variables, bounded, its output in DIR/run.log
part() {
  local name=$1 dir="$out/$2" vars=()
  shift 2
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  if [ "$dry" = 1 ]; then
    echo "$name: ${vars[*]} $*"
    return
  fi
  mkdir -p "$dir"
  echo "== $name ($dir)"
  env "${vars[@]}" OUT_DIR="$dir" LOG_DIR="$dir" RESULTS_DIR="$dir" timeout -s KILL "$limit" "$@" > "$dir/run.log" 2>&1
  local status=$?
  tail -3 "$dir/run.log"
  if [ "$status" = 0 ]; then summary+=("PASSED  $name"); else summary+=("FAILED  $name (exit $status)"); bad=1; fi
}

tests_given=0
if [ -n "${NCCL_TESTS_SRC:-}" ] || [ -n "${NCCL_TESTS_BIN:-}" ]; then tests_given=1; fi
for p in $parts; do
  case "$p" in
    ops|small|causes)
      if [ "$tests_given" = 0 ] && [ "$dry" != 1 ]; then
        summary+=("SKIPPED $p (no NCCL_TESTS_SRC or NCCL_TESTS_BIN)")
        continue
      fi
      if [ "$p" = causes ]; then
        part "NCCL's choices where runs took two levels, 64-256 MiB" causes-large NPS=4 "REGS=1 2" \
          ROUNDS="$cause_rounds" "LIBS=$libs" "${logged[@]}" "CASES=$two_levels" -- \
          bash "$here/bench/frontier.sh" "$bundle"
        part "NCCL's choices in the small all-reduces at -R 2" causes-small NPS=4 REGS=2 ROUNDS=3 MAP_BY=slot:PE=4 \
          BIND=core "LIBS=$libs" "${logged[@]}" "CASES=$symmetric" -- bash "$here/bench/frontier.sh" "$bundle"
      elif [ "$p" = ops ]; then
        part "every operation, 64-256 MiB, -R $ops_regs" ops NPS=4 "REGS=$ops_regs" ROUNDS=3 "LIBS=$libs" \
          "CASES=$every" -- \
          bash "$here/bench/frontier.sh" "$bundle"
      else
        part "small all-reduces, 4 cores a rank" small-4cores NPS=4 "REGS=0 2" ROUNDS=3 MAP_BY=slot:PE=4 BIND=core \
          "LIBS=$libs" "CASES=$small" -- bash "$here/bench/frontier.sh" "$bundle"
        part "small all-reduces, 1 core a rank" small-1core NPS=4 "REGS=0 2" ROUNDS=3 MAP_BY=slot:PE=1 BIND=core \
          "LIBS=$libs" "CASES=$small" -- bash "$here/bench/frontier.sh" "$bundle"
      fi ;;
    sharded)
      part "sharded training against FSDP2, 80 layers" sharded NP=4 LAYERS=80 ROUNDS=2 -- \
        bash "$here/bench/sharded-compare.sh" "$bundle" ;;
    phases)
      part "the phase matrix, 4 ranks on 4 GPUs" phases CONFIGS=4gpu BUDGET=$((limit > 60 ? limit - 30 : limit)) -- \
        bash "$here/departures.sh" "$bundle" ;;
    fuzz)
      part "the start-up SIGTERM fuzz, 4 ranks on 4 GPUs" fuzz STARTUP_FUZZ="$fuzz_runs" FUZZ_RANKS=4 FUZZ_CONFIG=gpus \
        JOBS=4 BUDGET=$((limit > 60 ? limit - 30 : limit)) -- bash "$here/departures.sh" "$bundle" ;;
    hosts)
      part "two rehearsed hosts, every part" hosts "PARTS=launchers ops ddp elastic" -- \
        bash "$here/two-hosts.sh" "$bundle" ;;
  esac
done
[ "$dry" = 1 ] && exit 0
echo "== $tool: $out"
printf '%s\n' "${summary[@]}"
exit "$bad"
