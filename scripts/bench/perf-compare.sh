#!/usr/bin/env bash
# One command on a GPU machine: nccl4j against C, side by side, and a report.
#
#   scripts/bench/perf-compare.sh [--bundle DIR] [--baseline BIN] [--np N] [--out DIR] [--repeats R] [--docs DIR]
#
#   --bundle    a bundle made by scripts/gpu-bundle.sh (default: bundle/ of this checkout)
#   --baseline  scripts/bench/native/build/nccl_perf_baseline (built with scripts/bench/native/build.sh when missing)
#   --np        ranks = GPUs (default: nvidia-smi's GPU count)
#   --out       raw logs and JSON (default: perf-results/<date>)
#   --repeats   repeats of the small-size, large-size and init runs (default 5)
#   --small-repeats  repeats of the small eager runs of C and Java one process per GPU (default: --repeats);
#               the per-process spread of small-message times (about +/-0.4 us, and some processes run 3 us
#               slower throughout) needs about 20 to resolve the 0.3 us target
#   --large-repeats  repeats of the runs at 64 MiB..1 GiB (default: --repeats); some operations take one of two
#               bandwidth levels per run at 64 MiB, in C too, so a median of 5 can swing by several percent
#   --docs      where the report goes (default: docs/gpu-runs of this checkout)
#
# Runs, every one with -c 0 (timing only) unless said:
#   (a) nccl_perf_baseline under mpirun -np N          (C: one process per GPU, MPI_Bcast of the id)
#   (b) nccl4j-perf under mpirun -np N                 (Java: one process per GPU, Communicator.fromEnvironment)
#   (c) nccl4j-perf -g N in one process                (Java: Communicator.initAll, a group per iteration)
#   (d) scripts/bench/torch_allreduce.py under torchrun          (torch.distributed all_reduce, eager)
# 1. small all_reduce, 8 B..64 KiB doubling, out of place and in place: R repeats x 1000 iterations
#    (-n 1000 -w 1000: nccl-tests' warm-up runs -w iterations at every size, so about 14000 calls precede
#    the first timed loop, enough for HotSpot's C2 to compile nccl4j's issuing path; C gets the same) eager for a, b, c, d; and CUDA graph for a, b, c: 100 iterations captured once and the
#    graph launched 10 times (-n 100 -G 10), i.e. also 1000 timed operations.
# 2. the all_reduce curve for the plot: 8 B..1 GiB by 4x, -n 50 -w 5 (a, b, c).
# 3. every operation at 64 MiB, 256 MiB, 1 GiB: --ops all -b 64M -e 1G -f 4 -n 100 -w 5, R repeats (a, b, c;
#    torch: all_reduce); the report takes the median bus bandwidth of the repeats.
# JMH_ALLOC=<file>: the output of scripts/bench/jmh-alloc.sh (run on a CPU machine): the report's alloc_bytes_per_call
# then comes from JMH's gc.alloc.rate.norm, as the target asks, and the in-loop counts are listed beside it.
# 4. the data check: every operation, 1 KiB..1 MiB, -c 1 (a, b, c); run right after step 0, so that a run cut
#    short by a time limit has its correctness check.
# 0. (first) communicator init: R short runs each of a, b, c with --init_repeats 10 (C and Java interleaved):
#    the first init of each process, ranks aligned before the clock, and 10 re-creations in the same process.
# nccl4j-perf waits for an idle JIT before each measurement (--jit_quiet_ms, 20 ms) in the small runs of step 1,
# where the first timed loops are host-bound; steps 0, 2, 3 and 4 pass --jit_quiet_ms 0, as they time nothing
# that a compilation in flight would move (the init clock, the curve, GPU-bound sizes, or nothing).
# Then scripts/bench/perf_report.py writes <docs>/<yyyy-mm-dd>-benchmark.md, <docs>/benchmark-latest.json and
# the PNG (drawn by nccl4j's Plot).
# On 2 H200s the whole takes about 6 minutes (7 with --small-repeats 20 --large-repeats 7: 429 s); each mpirun is bounded by RUN_TIMEOUT seconds (default 240).
set -uo pipefail
# The setup the scripts share (java, class path, CUDA libraries, mpirun options): scripts/env.sh, one level up.
[ -f "$(dirname "$0")/../env.sh" ] || { echo "${0##*/}: $(dirname "$0")/../env.sh is missing" >&2; exit 2; }
# shellcheck source=../env.sh
. "$(dirname "$0")/../env.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$root/bundle
baseline=$root/scripts/bench/native/build/nccl_perf_baseline
np=
out=
repeats=5
small_repeats=
large_repeats=
docs=$root/docs/gpu-runs
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --small-repeats) small_repeats=$2; shift 2 ;;
    --large-repeats) large_repeats=$2; shift 2 ;;
    --docs) docs=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;  # the header comment
    *) echo "perf-compare: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
for opt in "repeats=$repeats" "small-repeats=$small_repeats" "large-repeats=$large_repeats"; do
  v=${opt#*=}
  [ -z "$v" ] || [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "perf-compare: --${opt%%=*} '$v' must be a whole number >= 1" >&2; exit 2; }
done
date_tag=$(date -u +%Y-%m-%d)
out=${out:-$root/perf-results/$date_tag}
np=${np:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
[ "$np" -ge 1 ] 2>/dev/null || { echo "perf-compare: no GPU found (nvidia-smi -L)" >&2; exit 2; }
bundle=$(nccl4j_bundle_dir perf-compare "$bundle") || exit 2
nccl4j_baseline perf-compare "$root" || exit 2
mkdir -p "$out/raw" "$out/json" "$docs"
export NCCL4J_BUNDLE=$bundle
unset NCCL_COMM_ID            # Java ranks exchange the id over TCP (MASTER_ADDR), C over MPI_Bcast
nccl4j_cuda_libs --first
perf=$root/scripts/nccl4j-perf
torch_py=${TORCH_PYTHON:-python3}
"$torch_py" -c 'import torch' 2>/dev/null || torch_py=/opt/torch/.venv/bin/python3
nccl4j_mpi_root_args
nccl4j_mpi_forward_args NCCL_ NCCL4J_ CUDA_ NVSHMEM_ TORCH_ LD_LIBRARY_PATH JAVA_OPTS
port=29600
failures=0
failed=()          # the names of the failed runs (nccl4j_counted)

# mpirun with the per-rank command in a script (env.sh's nccl4j_mpi_logged). BIND: Open MPI's binding of the ranks,
# the same for C and Java (default none; e.g. BIND=numa).
nccl4j_mpi_opts=("${nccl4j_mpi_fwd[@]}")
mpi() { # name cmd...
  local name=$1; shift
  port=$((port + 1))
  echo "== $name: mpirun -np $np $*"
  nccl4j_mpi_logged "$out/raw" "$name" "$np" "$port" "$@"
  nccl4j_counted "$out/raw" "$name" $?
}
one() { # name cmd...: one process (nccl4j-perf -g N)
  local name=$1; shift
  echo "== $name: $*"
  timeout "${RUN_TIMEOUT:-240}" "$@" > "$out/raw/$name.log" 2>&1
  nccl4j_counted "$out/raw" "$name" $?
}
j() { echo "$out/json/$1.json"; }
# trio NAME ARGS...: C (c-NAME), Java one process per GPU (java-np-NAME) and Java -g N (java-g-NAME) with ARGS;
# nccl4j-perf without its JIT wait (untimed_jit)
trio() {
  local name=$1; shift
  mpi "c-$name" "$baseline" "$@" -J "$(j "c-$name")"
  mpi "java-np-$name" "$perf" "$@" "${untimed_jit[@]}" -J "$(j "java-np-$name")"
  one "java-g-$name" "$perf" "$@" "${untimed_jit[@]}" -g "$np" -J "$(j "java-g-$name")"
}

start=$(date +%s)
init=(all_reduce_perf -b 8 -e 8 -n 10 -w 2 -c 0 --init_repeats "${INIT_REPEATS:-10}")
untimed_jit=(--jit_quiet_ms 0)   # nccl4j-perf only: no JIT wait where the first timed loops are not host-bound
for r in $(seq 1 "$repeats"); do
  trio "init-$r" "${init[@]}"
done
trio check --ops all -b 1K -e 1M -f 32 -n 2 -w 1 -c 1 -r all
small=(all_reduce_perf -b 8 -e 64K -f 2 -c 0)
small_repeats=${small_repeats:-$repeats}
for r in $(seq 1 $(( small_repeats > repeats ? small_repeats : repeats ))); do
  if [ "$r" -le "$small_repeats" ]; then
    mpi "c-eager-small-$r" "$baseline" "${small[@]}" -n 1000 -w 1000 -J "$(j "c-eager-small-$r")"
    mpi "java-np-eager-small-$r" "$perf" "${small[@]}" -n 1000 -w 1000 -J "$(j "java-np-eager-small-$r")"
  fi
  [ "$r" -le "$repeats" ] || continue
  one "java-g-eager-small-$r" "$perf" "${small[@]}" -g "$np" -n 1000 -w 1000 -J "$(j "java-g-eager-small-$r")"
  mpi "c-graph-small-$r" "$baseline" "${small[@]}" -n 100 -G 10 -w 1000 -J "$(j "c-graph-small-$r")"
  mpi "java-np-graph-small-$r" "$perf" "${small[@]}" -n 100 -G 10 -w 1000 -J "$(j "java-np-graph-small-$r")"
  one "java-g-graph-small-$r" "$perf" "${small[@]}" -g "$np" -n 100 -G 10 -w 1000 -J "$(j "java-g-graph-small-$r")"
done
trio eager-curve all_reduce_perf -b 8 -e 1G -f 4 -n 50 -w 5 -c 0
large=(--ops all -b 64M -e 1G -f 4 -n 100 -w 5 -c 0)
# Large sizes are repeated too (C and Java interleaved): the report takes the median bus bandwidth per case,
# as run-to-run variation at these sizes (about 1%) is larger than the difference being measured.
for r in $(seq 1 "${large_repeats:-$repeats}"); do
  trio "eager-large-$r" "${large[@]}"
done
sizes=$(for k in $(seq 0 13); do printf '%s,' $((8 << k)); done)67108864,268435456,1073741824
if [ "$np" -ge 2 ]; then
  echo "== torch: torchrun --nproc_per_node $np scripts/bench/torch_allreduce.py"
  timeout "${RUN_TIMEOUT:-240}" "$torch_py" -m torch.distributed.run --nproc_per_node "$np" --master_port $((port + 50)) \
      "$root/scripts/bench/torch_allreduce.py" --sizes "$sizes" --iters 1000 --warmup 100 --large-iters 20 \
      --repeats "$repeats" -J "$(j torch-eager)" > "$out/raw/torch-eager.log" 2>&1 \
      || { echo "   torch failed (see $out/raw/torch-eager.log)"; failures=$((failures + 1)); tail -5 "$out/raw/torch-eager.log"; }
fi
echo "== runs took $(( $(date +%s) - start )) s, $failures failed"

# the plot (nccl4j's Plot, XChart) and the report
png_name="$date_tag-benchmark-all_reduce-busbw.png"
"$bundle/jre/bin/java" -Djava.awt.headless=true -cp "$(nccl4j_classpath --wildcard "$bundle")" \
    org.nccl4j.tools.perf.Plot "$out/$png_name" \
    --title "all_reduce bus bandwidth, $np ranks: C vs nccl4j (eager)" \
    "C mpirun=$(j c-eager-curve)" "nccl4j mpirun=$(j java-np-eager-curve)" "nccl4j -g $np=$(j java-g-eager-curve)" \
    > "$out/raw/plot.log" 2>&1 || { echo "   plot failed (see $out/raw/plot.log)"; failures=$((failures + 1)); }
cp -f "$out/$png_name" "$docs/" 2>/dev/null
machine="$np x $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) ($(hostname))"
python3 "$root/scripts/bench/perf_report.py" --json-dir "$out/json" --docs "$docs" --date "$date_tag" --machine "$machine" \
    --png "$png_name" --failures "$failures" ${JMH_ALLOC:+--jmh "$JMH_ALLOC"} || failures=$((failures + 1))
echo "== report: $docs/$date_tag-benchmark.md, $docs/benchmark-latest.json; raw: $out"
[ "$failures" = 0 ]
