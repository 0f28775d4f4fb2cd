#!/usr/bin/env bash
# One operation at one size, C baseline and nccl4j-perf (one process per GPU) each under a kernel tracer, then
# the NCCL kernels' durations and the gaps between them side by side (scripts/bench/timeline_report.py). Made to find
# where the 0.6 % that nccl4j-perf loses against C on all_reduce at 64 MiB goes (docs/gpu-runs/2026-11-23-benchmark.md):
# longer kernels, or later ones.
#
#   scripts/bench/perf-timeline.sh [bundle-dir]     OUT=<dir> (default perf-results/timeline)  NP=2  OP=all_reduce
#                                             SIZE=64M  ITERS=100  BASELINE=scripts/bench/native/build/nccl_perf_baseline
#                                             NSYS=<path>|none  TRACER=<path>|none
#
# The first of these that is there does the tracing:
#  1. Nsight Systems: NSYS=<path>, else the first nsys of PATH, /usr/local/cuda/bin,
#     /usr/local/cuda/nsight-systems-*/bin and /opt/nvidia/nsight-systems/*/bin (NSYS=none: not nsys). One run
#     of each side; the report reads the CSV files of `nsys stats -r cuda_gpu_trace` in OUT.
#  2. The CUPTI kernel tracer scripts/bench/native/kernel_trace.c: TRACER=<path>, else
#     scripts/bench/native/build/libkernel_trace.so (scripts/bench/native/build.sh builds it where CUPTI is; TRACER=none: not the
#     tracer). mpirun gives it to every rank (-x CUDA_INJECTION64_PATH, -x KERNEL_TRACE_DIR, -x KERNEL_TRACE_API=1),
#     which writes OUT/c-trace/trace-<pid>.csv and OUT/java-trace/trace-<pid>.csv, and the CUDA driver and runtime
#     calls to trace-<pid>-api.csv beside them; 2 runs of each side, alternating (C, Java, C, Java); the report
#     (timeline_report.py --cupti --api) takes the timed loops out of each trace, and counts the API calls per
#     operation. Tracing the API calls costs host time per call; the kernels' durations are the GPU's own, but
#     the gaps between kernels are those of the traced processes (tracing kernels alone evened out a 1.5 us
#     per operation difference between C and Java: docs/gpu-runs/2026-11-23-all-reduce-gap-kernel-trace.md).
#  3. Neither: --op_times 1 of both programs (a CUDA event after every operation), 2 runs of each side,
#     alternating, and the per-operation times compared, which tells a uniformly slower operation from
#     occasional stalls but cannot split kernel time from gaps.
# The report is also written to OUT/timeline.md.
set -uo pipefail
# The setup the scripts share (java, class path, CUDA libraries, mpirun options): scripts/env.sh, one level up.
[ -f "$(dirname "$0")/../env.sh" ] || { echo "${0##*/}: $(dirname "$0")/../env.sh is missing" >&2; exit 2; }
# shellcheck source=../env.sh
. "$(dirname "$0")/../env.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$(cd "${1:-$root/bundle}" 2>/dev/null && pwd) || { echo "perf-timeline: no bundle (scripts/gpu-bundle.sh)" >&2; exit 2; }
out=${OUT:-$root/perf-results/timeline}
np=${NP:-2}
op=${OP:-all_reduce}
size=${SIZE:-64M}
iters=${ITERS:-100}
baseline=${BASELINE:-$root/scripts/bench/native/build/nccl_perf_baseline}
if [ "${NSYS:-}" = none ]; then
  nsys=
elif [ -n "${NSYS:-}" ]; then
  [ -x "$NSYS" ] || { echo "perf-timeline: NSYS=$NSYS is not an executable (a path to nsys, or none)" >&2; exit 2; }
  nsys=$NSYS
else
  # shellcheck disable=SC2012  # the first of a few fixed installation paths that exists
  nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /usr/local/cuda/nsight-systems-*/bin/nsys \
      /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
fi
nccl4j_baseline perf-timeline "$root" --quiet || exit 2
# the CUPTI tracer, looked for after the build above (which builds it too), used only without nsys
if [ "${TRACER:-}" = none ]; then
  tracer=
elif [ -n "${TRACER:-}" ]; then
  [ -f "$TRACER" ] || { echo "perf-timeline: TRACER=$TRACER is not a file (a path to libkernel_trace.so, or none)" >&2; exit 2; }
  tracer=$(cd "$(dirname "$TRACER")" && pwd)/$(basename "$TRACER")
elif [ -f "$root/scripts/bench/native/build/libkernel_trace.so" ]; then
  tracer=$root/scripts/bench/native/build/libkernel_trace.so
else
  tracer=
fi
mkdir -p "$out"
nccl4j_cuda_libs
export NCCL4J_BUNDLE=$bundle
unset NCCL_COMM_ID
nccl4j_mpi_root_args
args=(--ops "$op" -b "$size" -e "$size" -n "$iters" -w 5 -c 0)
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
  if [ "${NSYS:-}" = none ]; then
    why="NSYS=none"
  else
    why="no nsys found (PATH, /usr/local/cuda/bin, /usr/local/cuda/nsight-systems-*, /opt/nvidia/nsight-systems)"
  fi
  if [ -n "$tracer" ]; then
    echo "perf-timeline: $why: the CUPTI kernel tracer $tracer instead"
  elif [ "${TRACER:-}" = none ]; then
    echo "perf-timeline: $why, TRACER=none: per-operation events instead"
  else
    echo "perf-timeline: $why, no CUPTI kernel tracer (scripts/bench/native/build/libkernel_trace.so, which scripts/bench/native/build.sh" \
        "builds where CUPTI is): per-operation events instead"
  fi
fi
declare -A prog=([c]=$baseline [java]=$root/scripts/nccl4j-perf)   # the program of each side
if [ -z "$nsys" ] && [ -n "$tracer" ]; then
  for side in c java; do
    mkdir -p "$out/$side-trace"
    rm -f "$out/$side-trace"/trace-*.csv
  done
  for r in 1 2; do
    for side in c java; do
      mpi "$side-trace-$r" -x CUDA_INJECTION64_PATH="$tracer" -x KERNEL_TRACE_DIR="$out/$side-trace" \
          -x KERNEL_TRACE_API=1 "${prog[$side]}" "${args[@]}"
    done
  done
  python3 "$root/scripts/bench/timeline_report.py" --cupti "$out/c-trace" "$out/java-trace" --api | tee "$out/timeline.md"
  exit "${PIPESTATUS[0]}"
fi
if [ -z "$nsys" ]; then
  for r in 1 2; do
    for side in c java; do
      mpi "$side-op-times-$r" "${prog[$side]}" "${args[@]}" --op_times 1 -J "$out/$side-op-times-$r.json"
    done
  done
  for r in 1 2; do
    python3 "$root/scripts/bench/timeline_report.py" --op-times "$out/c-op-times-$r.json" "$out/java-op-times-$r.json"
  done | tee "$out/timeline.md"
  exit "${PIPESTATUS[0]}"
fi
"$nsys" --version > "$out/nsys-version.txt" 2>&1
for side in c java; do
  mpi "$side" "$nsys" profile -t cuda --force-overwrite true -o "$out/$side-rank%q{OMPI_COMM_WORLD_RANK}" \
      "${prog[$side]}" "${args[@]}"
  for rep in "$out/$side"-rank*.nsys-rep; do
    [ -e "$rep" ] || continue
    "$nsys" stats -q -r cuda_gpu_trace -f csv --force-export true -o "${rep%.nsys-rep}" "$rep" \
        >> "$out/$side-stats.log" 2>&1
  done
done
python3 "$root/scripts/bench/timeline_report.py" "$out" | tee "$out/timeline.md"
