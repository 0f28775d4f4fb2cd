#!/usr/bin/env bash
# Device call 6 of session 2 (nvidia-h200-x2): is the all_reduce 64 MiB gap per loop or per operation?
#  A: -n 1000 -w 5 (8 pairs): a per-loop constant (start skew, warm-up) shrinks 10x, a per-operation cost does not.
#  B: -n 100 -w 200 (8 pairs): a longer warm-up (JIT) at that size.
set -u
cd "$(dirname "$0")/.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
J=$OUT/exp6/json; R=$OUT/exp6/raw; mkdir -p $J $R
t0=$(date +%s)
perf/native/build.sh > $R/build-baseline.log 2>&1
BASE=perf/native/build/nccl_perf_baseline
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
port=29970
for v in n1000:-n:1000:-w:5 w200:-n:100:-w:200; do
  IFS=: read -r name f1 a1 f2 a2 <<< "$v"
  A=(-t all_reduce -b 64M -e 64M -c 0 $f1 $a1 $f2 $a2)
  for r in $(seq 1 8); do
    port=$((port+1)); timeout 60 "${M[@]}" -x MASTER_PORT=$port $BASE "${A[@]}" -J $J/c-$name-$r.json > $R/c-$name-$r.log 2>&1
    port=$((port+1)); timeout 60 "${M[@]}" -x MASTER_PORT=$port scripts/nccl4j-perf "${A[@]}" -J $J/java-$name-$r.json > $R/java-$name-$r.log 2>&1
  done
  echo "$name done $(( $(date +%s) - t0 )) s"
done
tar czf $OUT/exp6.tgz -C $OUT exp6 && rm -rf $OUT/exp6
