#!/usr/bin/env bash
# One operation at one size, C baseline and nccl4j-perf (one process per GPU) each under Nsight Systems, then
# the NCCL kernels' durations and the gaps between them side by side (perf/timeline_report.py). Made to find
# where the 0.6 % that nccl4j-perf loses against C on all_reduce at 64 MiB goes (docs/perf/2026-11-23.md):
# longer kernels, or later ones.
#
#   scripts/perf-timeline.sh [bundle-dir]     OUT=<dir> (default perf-results/timeline)  NP=2  OP=all_reduce
#                                             SIZE=64M  ITERS=100  BASELINE=perf/native/build/nccl_perf_baseline
#
# Uses nsys (PATH, /usr/local/cuda/bin or /opt/nvidia/nsight-systems/*/bin). Without it, it falls back to
# --op_times 1 of both programs (a CUDA event after every operation) and compares the per-operation times, which
# tells a uniformly slower operation from occasional stalls but cannot split kernel time from gaps.
set -uo pipefail
# The setup the scripts share (java, class path, CUDA libraries, mpirun options): env.sh, beside this script.
[ -f "$(dirname "$0")/env.sh" ] || { echo "${0##*/}: $(dirname "$0")/env.sh is missing" >&2; exit 2; }
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:-$root/bundle}" 2>/dev/null && pwd) || { echo "perf-timeline: no bundle (scripts/gpu-bundle.sh)" >&2; exit 2; }
out=${OUT:-$root/perf-results/timeline}
np=${NP:-2}
op=${OP:-all_reduce}
size=${SIZE:-64M}
iters=${ITERS:-100}
baseline=${BASELINE:-$root/perf/native/build/nccl_perf_baseline}
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ ! -x "$baseline" ]; then
  "$root/perf/native/build.sh" > /dev/null || { echo "perf-timeline: the C baseline did not build" >&2; exit 2; }
  baseline=$root/perf/native/build/nccl_perf_baseline
fi
mkdir -p "$out"
nccl4j_cuda_libs
export NCCL4J_BUNDLE=$bundle
unset NCCL_COMM_ID
nccl4j_mpi_root_args
args=(-t "$op" -b "$size" -e "$size" -n "$iters" -w 5 -c 0)
port=29640
mpi() { # name cmd...: one process per GPU, logs in $out/<name>.log
  local name=$1; shift
  port=$((port + 1))
  echo "== $name: mpirun -np $np $*"
  timeout 300 mpirun "${nccl4j_mpi_root[@]}" --bind-to none -np "$np" -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH \
      -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$port "$@" > "$out/$name.log" 2>&1 \
      || { echo "   failed (see $out/$name.log)"; tail -5 "$out/$name.log"; }
}
if [ -z "$nsys" ]; then
  echo "perf-timeline: no nsys found (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-systems): per-operation events instead"
  for r in 1 2; do
    mpi "c-op-times-$r" "$baseline" "${args[@]}" --op_times 1 -J "$out/c-op-times-$r.json"
    mpi "java-op-times-$r" "$root/scripts/nccl4j-perf" "${args[@]}" --op_times 1 -J "$out/java-op-times-$r.json"
  done
  for r in 1 2; do
    python3 "$root/perf/timeline_report.py" --op-times "$out/c-op-times-$r.json" "$out/java-op-times-$r.json"
  done | tee "$out/timeline.md"
  exit "${PIPESTATUS[0]}"
fi
"$nsys" --version > "$out/nsys-version.txt" 2>&1
for side in c java; do
  if [ "$side" = c ]; then cmd=("$baseline" "${args[@]}"); else cmd=("$root/scripts/nccl4j-perf" "${args[@]}"); fi
  mpi "$side" "$nsys" profile -t cuda --force-overwrite true -o "$out/$side-rank%q{OMPI_COMM_WORLD_RANK}" "${cmd[@]}"
  for rep in "$out/$side"-rank*.nsys-rep; do
    [ -e "$rep" ] || continue
    "$nsys" stats -q -r cuda_gpu_trace -f csv --force-export true -o "${rep%.nsys-rep}" "$rep" \
        >> "$out/$side-stats.log" 2>&1
  done
done
python3 "$root/perf/timeline_report.py" "$out" | tee "$out/timeline.md"
