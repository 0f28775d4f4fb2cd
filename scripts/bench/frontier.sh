#!/usr/bin/env bash
# frontier.sh: nccl4j-perf against NVIDIA's nccl-tests, alternating in one run, at each buffer registration (-R 0:
# none, 1: ncclCommRegister, 2: symmetric windows), for each NCCL library and rank count given. Both programs take the
# same command line (nccl4j-perf with --timer host: nccl-tests' clock, from the barrier to the streams' completion,
# where its default is CUDA events as the project's C baseline); each pair of runs is one round, C first in odd rounds and Java first in even ones. The report
# (scripts/bench/frontier_report.py) gives per case and size the medians over the rounds of the time and bus
# bandwidth, out of place and in place, Java - C and Java / C.
#
#   NCCL_TESTS_SRC=DIR scripts/bench/frontier.sh [BUNDLE]
#
#   BUNDLE          made by scripts/gpu-bundle.sh (default: bundle/ of this checkout)
#   NCCL_TESTS_SRC  a copy of NVIDIA/nccl-tests' source; built here with MPI (make src.build, sm_90 unless
#                   NVCC_GENCODE says otherwise) into OUT_DIR/nccl-tests unless NCCL_TESTS_BIN names a build already
#   LIBS            NAME=PATH of each NCCL library, space-separated (default: the system's and PyTorch's, when there):
#                   nccl-tests gets PATH's directory in front of LD_LIBRARY_PATH, nccl4j NCCL4J_LIBRARY=PATH
#   NPS             rank counts, one GPU each (default "2 4", those the machine has)
#   REGS            -R values (default "0 1 2")
#   CASES           ';'-separated argument lists, each after the program name (default: the small all-reduces,
#                   "all_reduce_perf -b 8 -e 64K -f 2 -n 2000 -w 500 -c 0")
#   ROUNDS          rounds (default 2); OUT_DIR (default: a new temporary directory): raw logs, frontier.tsv (a
#                   row per run and size: time and bus bandwidth out of place, then in place), frontier.png (out of
#                   place: time against size when no size is above 1 MiB, else bus bandwidth; a line per program
#                   and -R), frontier.md and frontier.json (the summary fields: symmetric_small_us,
#                   nccl_tests_symmetric_small_us, min_busbw_ratio_64MiB_up_4gpu; see frontier_report.py)
#   BIND            Open MPI's binding of the ranks (default none; core or numa pin each rank, which small messages
#                   need: with none, whole runs of either program settled near 8 or near 12 us on 4 x H100)
#   MAP_BY          Open MPI's --map-by (e.g. slot:PE=4 with BIND=core: four cores per rank, for both programs; with
#                   one core, a JVM's compiler and GC threads share it with the thread that issues the operations)
#   JAVA_OPTS       passed to nccl4j-perf's JVM (e.g. -Xlog:gc to see whether a collection fell in a timed loop)
#   NCCL_DEBUG, NCCL_DEBUG_SUBSYS, NCCL4J_NCCL_LOG   forwarded to both programs' ranks when exported; with
#                   NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING,REG, NCCL4J_NCCL_LOG=off) the run also writes
#                   choices.md: what NCCL chose in each run (channels, graph, rings, algorithm and protocol or symmetric
#                   kernel per size, registrations) beside its time, and per cell whether runs at two levels differ in
#                   it (scripts/bench/nccl_choices.py). NCCL's tuning lines cost rank 0 a print per collective, in both
#                   programs alike
# Every run has NCCL_NVLS_ENABLE=0. Exit status 1 when a run failed, 2 on a usage error.
set -uo pipefail
[ -f "$(dirname "$0")/../env.sh" ] || { echo "${0##*/}: $(dirname "$0")/../env.sh is missing" >&2; exit 2; }
# shellcheck source=../env.sh
. "$(dirname "$0")/../env.sh"
tool=${0##*/}
root=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "$tool: $*" >&2; exit 2; }
bundle=$(nccl4j_bundle_dir "$tool" "${1:-$root/bundle}") || exit 2
export NCCL4J_BUNDLE=$bundle NCCL_NVLS_ENABLE=0
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out/raw" || die "cannot make $out/raw"
rounds=${ROUNDS:-2}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS=$rounds is not a whole number above 0"
regs=${REGS:-0 1 2}
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ')
nps=${NPS:-}
if [ -z "$nps" ]; then for n in 2 4; do [ "$n" -le "$gpus" ] && nps+="$n "; done; fi
[ -n "$nps" ] || die "no two GPUs here (nvidia-smi -L lists $gpus)"
libs=${LIBS:-}
if [ -z "$libs" ]; then
  for cand in system=/usr/lib/x86_64-linux-gnu/libnccl.so.2 \
      torch=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2; do
    [ -f "${cand#*=}" ] && libs+="$cand "
  done
fi
[ -n "$libs" ] || die "no NCCL library found: set LIBS=NAME=PATH"
IFS=';' read -r -a cases <<< "${CASES:-all_reduce_perf -b 8 -e 64K -f 2 -n 2000 -w 500 -c 0}"

bin=${NCCL_TESTS_BIN:-}
if [ -z "$bin" ]; then
  if [ -z "${NCCL_TESTS_SRC:-}" ] || [ ! -f "$NCCL_TESTS_SRC/src/common.cu" ]; then
    die "NCCL_TESTS_SRC must name a copy of NVIDIA/nccl-tests' source (it has src/common.cu)"
  fi
  bin=$out/nccl-tests
  echo "== building nccl-tests into $bin"
  make -C "$NCCL_TESTS_SRC" -j16 MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi BUILDDIR="$bin" \
    NVCC_GENCODE="${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}" src.build > "$out/raw/build.log" 2>&1 \
    || { tail -20 "$out/raw/build.log"; die "nccl-tests did not build (see $out/raw/build.log)"; }
fi

nccl4j_mpi_root_args
nccl4j_mpi_forward_args NCCL_DEBUG NCCL_DEBUG_SUBSYS NCCL4J_NCCL_LOG
failures=0
failed=()
port=29400
tsv=$out/frontier.tsv
printf 'lib\tnp\treg\tcase\tround\tside\tsize\ttime_us\tbusbw\tin_place_time_us\tin_place_busbw\n' > "$tsv"
# parse FILE LIB NP REG CASE ROUND SIDE: the time and bus bandwidth of each size line into the TSV, out of place
# (fields 6 and 8 of the line: size, count, type, redop, root, time, algbw, busbw, #wrong) and in place (10 and 12)
parse() {
  awk -v lib="$2" -v np="$3" -v reg="$4" -v c="$5" -v r="$6" -v side="$7" '
    { sub(/^\[[0-9,]+\]<stdout>:/, "") }
    $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 12 {
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", lib, np, reg, c, r, side, $1, $6, $8, $10, $12
    }
  ' "$1" >> "$tsv"
}
start=$(date +%s)
for lib in $libs; do
  name=${lib%%=*} path=${lib#*=}
  for np in $nps; do
    for reg in $regs; do
      for ci in "${!cases[@]}"; do
        read -r -a args <<< "${cases[ci]}"
        prog=${args[0]}
        for r in $(seq 1 "$rounds"); do
          if [ $((r % 2)) = 1 ]; then sides="c java"; else sides="java c"; fi
          for side in $sides; do
            port=$((port + 1))
            run=$name-np$np-R$reg-case$ci-$side-$r
            if [ "$side" = c ]; then
              nccl4j_mpi_opts=(-x NCCL_NVLS_ENABLE "${nccl4j_mpi_fwd[@]}"
                -x "LD_LIBRARY_PATH=$(dirname "$path"):${LD_LIBRARY_PATH:-}")
              nccl4j_mpi_logged "$out/raw" "$run" "$np" "$port" "$bin/$prog" "${args[@]:1}" -R "$reg"
            else
              nccl4j_mpi_opts=(-x NCCL_NVLS_ENABLE "${nccl4j_mpi_fwd[@]}" -x NCCL4J_BUNDLE -x "NCCL4J_LIBRARY=$path")
              [ -n "${JAVA_OPTS:-}" ] && nccl4j_mpi_opts+=(-x JAVA_OPTS)
              nccl4j_mpi_logged "$out/raw" "$run" "$np" "$port" "$root/scripts/nccl4j-perf" "${args[@]}" -R "$reg" --timer host
            fi
            nccl4j_counted "$out/raw" "$run" $?
            parse "$out/raw/$run.log" "$name" "$np" "$reg" "${cases[ci]}" "$r" "$side"
          done
        done
      done
    done
  done
done
echo "== runs took $(( $(date +%s) - start )) s, $failures failed${failed[*]:+: ${failed[*]}}"
python3 "$root/scripts/bench/frontier_report.py" "$tsv" --json "$out/frontier.json" > "$out/frontier.md" \
  || { echo "$tool: the report failed"; failures=$((failures + 1)); }
# the plot: times when every size is at most 1 MiB (small messages), else bus bandwidth
y=$(awk -F'\t' 'NR > 1 && $7 > 1048576 { big = 1 } END { print big ? "busbw" : "time" }' "$tsv")
"$bundle/jre/bin/java" -Djava.awt.headless=true -cp "$(nccl4j_classpath "$bundle")" org.nccl4j.tools.perf.Plot \
  "$out/frontier.png" --frontier --y "$y" --title "nccl4j-perf and nccl-tests, out of place, medians of $rounds rounds" \
  "$tsv" > "$out/plot.log" 2>&1 || {
  # the plot is a picture of the figures above, not a measurement: its failure (say, a bundle older than
  # gpu-bundle.sh's carry_font_stack, whose libfontmanager.so found no libharfbuzz.so.0) is reported and leaves the
  # status alone
  echo "$tool: the plot failed (the figures are in frontier.md and frontier.json): $(grep -m1 -E 'Error|Exception' \
    "$out/plot.log" | cut -c1-200)"
  rm -f "$out/frontier.png"
}
cat "$out/frontier.md"
if [ -n "${NCCL_DEBUG:-}" ]; then
  python3 "$root/scripts/bench/nccl_choices.py" "$out" > "$out/choices.md" \
    || { echo "$tool: the choices' report failed"; failures=$((failures + 1)); }
  echo "== what NCCL chose: $out/choices.md"
  grep '^levels:' "$out/choices.md"
fi
[ "$failures" = 0 ]
