#!/usr/bin/env bash
# Device call 4 of session 2 (nvidia-h200-x2): two experiments on the per-process modes.
#  A: every operation at 64 MiB, 15 alternating C / Java (one process per GPU) runs, -n 100 -w 5.
#  B: small eager all_reduce, 8 alternating C / Java runs with each rank bound to 8 cores
#     (mpirun --bind-to core --map-by slot:PE=8), to see whether binding removes the slow mode.
set -u
cd "$(dirname "$0")/.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
J=$OUT/exp/json; R=$OUT/exp/raw; mkdir -p $J $R
t0=$(date +%s)
perf/native/build.sh > $R/build-baseline.log 2>&1
BASE=perf/native/build/nccl_perf_baseline
M=(mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
port=29900
LARGE=(-t all -b 64M -e 64M -n 100 -w 5 -c 0)
for r in $(seq 1 15); do
  port=$((port+1)); timeout 60 "${M[@]}" --bind-to none -x MASTER_PORT=$port $BASE "${LARGE[@]}" -J $J/c-large64-$r.json > $R/c-large64-$r.log 2>&1
  port=$((port+1)); timeout 60 "${M[@]}" --bind-to none -x MASTER_PORT=$port scripts/nccl4j-perf "${LARGE[@]}" -J $J/java-large64-$r.json > $R/java-large64-$r.log 2>&1
done
echo "A done $(( $(date +%s) - t0 )) s"
SMALL=(-t all_reduce -b 8 -e 64K -f 2 -c 0 -n 1000 -w 100)
for r in $(seq 1 8); do
  port=$((port+1)); timeout 60 "${M[@]}" --bind-to core --map-by slot:PE=8 --report-bindings -x MASTER_PORT=$port $BASE "${SMALL[@]}" -J $J/c-small-bound-$r.json > $R/c-small-bound-$r.log 2>&1
  port=$((port+1)); timeout 60 "${M[@]}" --bind-to core --map-by slot:PE=8 --report-bindings -x MASTER_PORT=$port scripts/nccl4j-perf "${SMALL[@]}" -J $J/java-small-bound-$r.json > $R/java-small-bound-$r.log 2>&1
done
echo "B done $(( $(date +%s) - t0 )) s"
ls $J | wc -l
tar czf $OUT/exp.tgz -C $OUT exp && rm -rf $OUT/exp
