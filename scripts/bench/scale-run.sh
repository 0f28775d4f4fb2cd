#!/usr/bin/env bash
# The scale run on one machine with N GPUs (default: all), from a bundle made by scripts/gpu-bundle.sh, logs
# and JSON to OUT_DIR (default: scale-results). Everything the scale issue asks, in one command:
#   1. C baseline vs nccl4j-perf, one process per GPU, every operation, 8 B..32 MiB by x2 (-n 50), and
#      64 MiB..1 GiB by x2 (-n 100), REPEATS times each, C and Java alternating;
#   2. small all_reduce 8 B..64 KiB, -n 1000 -w 1000 (as perf-compare: HotSpot compiles the issuing path within
#      the warm-up), REPEATS times, C and Java alternating;
#   3. all_reduce with NCCL_ALGO=Ring and =Tree set through nccl4j's configuration (-Dnccl.algo), 8 B..1 GiB;
#   4. a simulated two-host run: NCCL_HOSTID differs between the two halves of the ranks, every operation
#      checked (-c 1), NCCL_DEBUG=INFO with INIT,NET kept for the transport lines (grep "via NET" / "via P2P");
#   5. the examples under scripts/nccl4j-run and mpirun (scripts/examples-gpu.sh), and the DDP comparison with
#      PyTorch (scripts/bench/ddp-compare.sh) at N.
# PHASES="1 2 3 4 5" chooses phases; QUICK=1 is the compact form (one repeat, -n 20, no DDP comparison).
set -uo pipefail
# The setup the scripts share (java, class path, CUDA libraries, mpirun options): scripts/env.sh, one level up.
[ -f "$(dirname "$0")/../env.sh" ] || { echo "${0##*/}: $(dirname "$0")/../env.sh is missing" >&2; exit 2; }
# shellcheck source=../env.sh
. "$(dirname "$0")/../env.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bundle=$(cd "${1:-$root/bundle}" && pwd)
out=${OUT_DIR:-scale-results}
mkdir -p "$out"
out=$(cd "$out" && pwd)
np=${NP:-$(nvidia-smi -L | grep -c '^GPU')}
phases=${PHASES:-1 2 3 4 5}
quick=${QUICK:-0}
repeats=${REPEATS:-3}
[ "$quick" = 1 ] && repeats=1
nccl4j_cuda_libs --always
export NCCL4J_BUNDLE=$bundle
perf=$root/scripts/nccl4j-perf
base=$root/scripts/bench/native/build/nccl_perf_baseline
[ -x "$base" ] || timeout 120 bash "$root/scripts/bench/native/build.sh" > "$out/build.log" 2>&1
# mpirun gets --allow-run-as-root whoever runs it, and these variables only (not nccl4j_mpi_forward_args).
# shellcheck disable=SC2317  # called through run
mpi() { timeout "${RUN_TIMEOUT:-240}" mpirun --allow-run-as-root --bind-to none -np "$np" -x NCCL_NVLS_ENABLE \
          -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$((29800 + RANDOM % 100)) "$@"; }
status=0
run() { local name=$1; shift; "$@" > "$out/$name.log" 2>&1; local s=$?; echo "$name: exit $s"; [ $s = 0 ] || status=1; }
has() { case " $phases " in *" $1 "*) return 0 ;; esac; return 1; }
both() { # name args...: the C baseline (c-name), then nccl4j-perf (java-name), one process per GPU
  local name=$1; shift
  run "c-$name" mpi "$base" "$@" -J "$out/c-$name.json"
  run "java-$name" mpi "$perf" "$@" -J "$out/java-$name.json"
}

if has 1; then
  if [ "$quick" = 1 ]; then ladders=("-b 8 -e 256M -f 32 -n 20 -w 5"); else ladders=("-b 8 -e 32M -f 2 -n 50 -w 5" "-b 64M -e 1G -f 2 -n 100 -w 5"); fi
  for r in $(seq 1 "$repeats"); do
    k=0
    for l in "${ladders[@]}"; do
      k=$((k + 1))
      # shellcheck disable=SC2086
      both "all-$k-$r" --ops all $l -c 0
    done
  done
fi
if has 2 && [ "$quick" != 1 ]; then
  for r in $(seq 1 "$repeats"); do
    both "small-$r" all_reduce_perf -b 8 -e 64K -f 2 -n 1000 -w 1000 -c 0
  done
fi
if has 3; then
  for algo in Ring Tree; do
    run "java-$algo" mpi -x JAVA_OPTS="-Dnccl.algo=$algo" "$perf" all_reduce_perf -b 8 -e 1G -f 4 -n 20 -w 5 -c 0 \
        -J "$out/java-$algo.json"
  done
fi
if has 4; then
  cat > "$out/hostid-rank.sh" <<EOS
#!/usr/bin/env bash
export NCCL_HOSTID=simhost\$(( OMPI_COMM_WORLD_RANK * 2 / OMPI_COMM_WORLD_SIZE ))
exec "$perf" --ops all -b 1K -e 1M -f 32 -n 5 -w 1 -c 1
EOS
  chmod +x "$out/hostid-rank.sh"
  run hostid mpi -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,NET "$out/hostid-rank.sh"
fi
if has 5; then
  if [ "$quick" = 1 ]; then
    for ex in AllReduce DdpSimple ZeroShards "DdpTraining --steps 10"; do
      # shellcheck disable=SC2086
      run "ex-${ex%% *}" timeout 120 "$bundle/nccl4j-run" -np "$np" $ex
    done
  else
    run examples env NP="$np" LOG_DIR="$out/examples" bash "$root/scripts/examples-gpu.sh" "$bundle"
    run ddp-compare env NP="$np" RESULTS_DIR="$out/ddp" bash "$here/ddp-compare.sh" "$bundle"
  fi
fi
exit $status
