#!/usr/bin/env bash
# A/B rounds on a GPU machine: the C baseline and nccl4j-perf one after the other, round after round, under one or
# more environment variants, then the medians over the rounds (scripts/bench/ab_report.py). On the 2 x H200 VM timings move
# by about +/-0.5 % from run to run, so a smaller difference between C and Java needs them run alternately, often.
#
#   scripts/bench/perf-ab.sh [--bundle DIR] [--baseline BIN] [--np N] [--rounds R] [--out DIR] [--java-args "ARGS"]
#                      [--order cj|jc|alternate] [--perf PROGRAM]
#                      [--variant NAME[:VAR=VALUE[,VAR=VALUE...]]]... -- <arguments for both programs>
#   e.g. scripts/bench/perf-ab.sh --variant default --variant cdmc1:CUDA_DEVICE_MAX_CONNECTIONS=1 \
#            -- all_reduce_perf -b 64M -e 64M -n 200 -w 20 -c 0
#
#   --bundle     a bundle made by scripts/gpu-bundle.sh (default: bundle/ of this checkout)
#   --baseline   scripts/bench/native/build/nccl_perf_baseline (built with scripts/bench/native/build.sh when missing)
#   --np         ranks = GPUs, one process each (default 2)
#   --rounds     rounds (default 4)
#   --out        raw logs, JSON and the report (default: perf-results/ab of this checkout)
#   --java-args  more arguments for nccl4j-perf only, split at spaces (e.g. "--jit_quiet_ms 0")
#   --order      which program runs first in a round: cj (default) C then Java; jc Java then C; alternate C then
#                Java in odd rounds, Java then C in even ones (with an even number of rounds, a cost of running
#                second falls on both sides alike)
#   --perf       the program in the Java place (default scripts/nccl4j-perf): another build's launcher, or the C
#                baseline itself for an A/A run that shows how far two runs of one program differ (its results
#                are still named java-...)
#   --variant    an environment to run both programs in: NAME (letters, digits, '_', '-'; unique), then after ':'
#                VAR=VALUE pairs, ','-separated, which mpirun gives to every rank of C and of Java (-x VAR=VALUE).
#                A ',' inside a VALUE is written '\,'; a VALUE may hold '=' and spaces (quote the argument), e.g.
#                --variant "quiet:JAVA_OPTS=-XX:+UseSerialGC -XX:CICompilerCount=2" or
#                --variant 'dbg:NCCL_DEBUG=INFO,NCCL_DEBUG_SUBSYS=INIT\,TUNING'. Repeatable, run in the order given;
#                without --variant, one variant "default" with no extra environment.
#   after --     the arguments of both programs, nccl-tests style. Not -J (--output_file), which the script sets,
#                nor -g (--ngpus): the script runs one process per GPU.
#
# Each round runs, for each variant in turn: the C baseline under mpirun -np N, then nccl4j-perf under mpirun -np N
# (or the other way round, --order), each with -J <out>/json/<c|java>-<variant>-<round>.json, its log in
# <out>/raw/<c|java>-<variant>-<round>.log. The job's variables that perf-compare.sh forwards (NCCL_*, NCCL4J_*, CUDA_*, NVSHMEM_*, LD_LIBRARY_PATH, JAVA_OPTS)
# reach every rank too, but for those the variant sets. Then scripts/bench/ab_report.py writes <out>/ab.md, which is printed:
# per variant and case (operation, size, placement, type, redop, root), each round's C and Java time_us, their
# medians over the rounds, Java - C and Java / C of the medians, and each round's Java - C; with several variants,
# Java - C of each variant side by side. Exit status 1 when a run failed (the report says which results are
# missing), 2 on a bad argument (then nothing runs). Each mpirun is bounded by RUN_TIMEOUT seconds (default 240);
# BIND: Open MPI's binding of the ranks (default none), as in perf-compare.sh.
set -uo pipefail
# The setup the scripts share (java, class path, CUDA libraries, mpirun options): scripts/env.sh, one level up.
[ -f "$(dirname "$0")/../env.sh" ] || { echo "${0##*/}: $(dirname "$0")/../env.sh is missing" >&2; exit 2; }
# shellcheck source=../env.sh
. "$(dirname "$0")/../env.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$root/bundle
baseline=$root/scripts/bench/native/build/nccl_perf_baseline
np=2
rounds=4
out=
java_args=
order=cj
perf=$root/scripts/nccl4j-perf
specs=()          # the --variant arguments, in order
prog=()           # the arguments after --
dashdash=0
example="-- all_reduce_perf -b 64M -e 64M -n 200 -w 20 -c 0"
need() { # OPTION [VALUE]: exits 2 unless the option has its value
  [ $# -ge 2 ] || { echo "perf-ab: $1 needs a value (--help)" >&2; exit 2; }
}
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) need "$@"; bundle=$2; shift 2 ;;
    --baseline) need "$@"; baseline=$2; shift 2 ;;
    --np) need "$@"; np=$2; shift 2 ;;
    --rounds) need "$@"; rounds=$2; shift 2 ;;
    --out) need "$@"; out=$2; shift 2 ;;
    --java-args) need "$@"; java_args=$2; shift 2 ;;
    --order) need "$@"; order=$2; shift 2 ;;
    --perf) need "$@"; perf=$2; shift 2 ;;
    --variant) need "$@"; specs+=("$2"); shift 2 ;;
    --) dashdash=1; shift; prog=("$@"); break ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;  # the header comment
    *) echo "perf-ab: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
case "$order" in
  cj|jc|alternate) ;;
  *) echo "perf-ab: --order '$order' must be cj (C first), jc (Java first) or alternate" >&2; exit 2 ;;
esac
for opt in "rounds=$rounds" "np=$np"; do
  v=${opt#*=}
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "perf-ab: --${opt%%=*} '$v' must be a whole number >= 1" >&2; exit 2; }
done

# pairs_of SPEC: sets the array pairs to the VAR=VALUE items after the ':' of a --variant argument (none without
# ':'), split at each ',' that is not written '\,'; a '\,' becomes ','
pairs_of() {
  local rest item unit=$'\x1f'
  pairs=()
  case "$1" in *:*) ;; *) return 0 ;; esac
  rest=${1#*:}
  rest=${rest//\\,/$unit}
  while :; do
    item=${rest%%,*}
    pairs+=("${item//$unit/,}")
    case "$rest" in *,*) rest=${rest#*,} ;; *) break ;; esac
  done
}
[ ${#specs[@]} -gt 0 ] || specs=(default)
names=()
for spec in "${specs[@]}"; do
  name=${spec%%:*}
  [[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] || {
    echo "perf-ab: --variant '$spec': the name '$name' must be letters, digits, '_' or '-' (one at least)" >&2; exit 2; }
  for n in "${names[@]}"; do
    [ "$n" != "$name" ] || { echo "perf-ab: --variant '$spec': the name '$name' is given twice" >&2; exit 2; }
  done
  names+=("$name")
  pairs_of "$spec"
  for p in "${pairs[@]}"; do
    [[ "$p" == *=* ]] || { echo "perf-ab: --variant '$spec': '$p' is not VAR=VALUE" >&2; exit 2; }
    [[ "${p%%=*}" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || {
      echo "perf-ab: --variant '$spec': '${p%%=*}' is not a variable name (letters, digits and '_', not first a digit)" >&2
      exit 2; }
  done
done
[ "$dashdash" = 1 ] || { echo "perf-ab: no '--' before the programs' arguments (e.g. $example)" >&2; exit 2; }
[ ${#prog[@]} -gt 0 ] || { echo "perf-ab: no arguments for the programs after '--' (e.g. $example)" >&2; exit 2; }
read -r -a jargs <<< "$java_args"
# refuse: WHERE ARG... (-J and -g, in any of the forms the programs take)
refuse() {
  local where=$1 a; shift
  for a in "$@"; do
    case "$a" in
      -J*|--output_file|--output_file=*)
        echo "perf-ab: $where: '$a': the script sets -J (--output_file) itself, to $out/json/<c|java>-<variant>-<round>.json" >&2
        exit 2 ;;
      -g*|--ngpus|--ngpus=*)
        echo "perf-ab: $where: '$a': -g (--ngpus) is not for this script: it runs one process per GPU (--np)" >&2
        exit 2 ;;
    esac
  done
}
out=${out:-$root/perf-results/ab}
refuse "the programs' arguments" "${prog[@]}"
refuse "--java-args" "${jargs[@]}"
bundle=$(nccl4j_bundle_dir perf-ab "$bundle") || exit 2
[ -x "$perf" ] || { echo "perf-ab: --perf '$perf' is not an executable file" >&2; exit 2; }
nccl4j_baseline perf-ab "$root" || exit 2
mkdir -p "$out/raw" "$out/json"
export NCCL4J_BUNDLE=$bundle
unset NCCL_COMM_ID            # Java ranks exchange the id over TCP (MASTER_ADDR), C over MPI_Bcast
nccl4j_cuda_libs --first
nccl4j_mpi_root_args
nccl4j_mpi_forward_args NCCL_ NCCL4J_ CUDA_ NVSHMEM_ LD_LIBRARY_PATH JAVA_OPTS
port=29900
failures=0
failed=()

# variant SPEC: sets vx to the variant's (-x VAR=VALUE ...) and fwd to the forwarded (-x VAR ...) but for the
# variables the variant sets, so that no rank gets both the job's value and the variant's
variant() {
  local p k n set=" "
  pairs_of "$1"
  vx=()
  for p in "${pairs[@]}"; do vx+=(-x "$p"); set="$set${p%%=*} "; done
  fwd=()
  for ((k = 1; k < ${#nccl4j_mpi_fwd[@]}; k += 2)); do
    n=${nccl4j_mpi_fwd[k]}
    case "$set" in *" $n "*) ;; *) fwd+=(-x "$n") ;; esac
  done
}
# mpirun with the per-rank command in a script (env.sh's nccl4j_mpi_logged), with the variant's vx and fwd
mpi() { # name cmd...
  local name=$1; shift
  port=$((port + 1))
  echo "== $name: mpirun -np $np${vx[*]:+ ${vx[*]}} $*"
  nccl4j_mpi_opts=("${fwd[@]}" "${vx[@]}")
  nccl4j_mpi_logged "$out/raw" "$name" "$np" "$port" "$@"
  nccl4j_counted "$out/raw" "$name" $?
}
j() { echo "$out/json/$1.json"; }

# results of an earlier run into the same --out must not stand in for a run that fails now
for r in $(seq 1 "$rounds"); do
  for name in "${names[@]}"; do rm -f "$(j "c-$name-$r")" "$(j "java-$name-$r")"; done
done
start=$(date +%s)
for r in $(seq 1 "$rounds"); do
  echo "== round $r of $rounds"
  if [ "$order" = jc ] || { [ "$order" = alternate ] && [ $((r % 2)) = 0 ]; }; then sides="java c"; else sides="c java"; fi
  for i in "${!names[@]}"; do
    v=${names[i]}
    variant "${specs[i]}"
    for side in $sides; do
      if [ "$side" = c ]; then
        mpi "c-$v-$r" "$baseline" "${prog[@]}" -J "$(j "c-$v-$r")"
      else
        mpi "java-$v-$r" "$perf" "${prog[@]}" "${jargs[@]}" -J "$(j "java-$v-$r")"
      fi
    done
  done
done
echo "== runs took $(( $(date +%s) - start )) s, $failures failed${failed[*]:+: ${failed[*]}}"

python3 "$root/scripts/bench/ab_report.py" --json-dir "$out/json" --variants "$(IFS=,; echo "${names[*]}")" --rounds "$rounds" \
    --order "$order" > "$out/ab.md" || { echo "   the report failed (scripts/bench/ab_report.py)"; failures=$((failures + 1)); }
cat "$out/ab.md"
echo "== report: $out/ab.md; raw: $out"
[ "$failures" = 0 ]
