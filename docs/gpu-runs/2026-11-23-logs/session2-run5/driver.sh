#!/usr/bin/env bash
# Device call 5 of session 2 (nvidia-h200-x2): why nccl4j-perf one process per GPU is ~0.5 % below C at 64 MiB.
#  A: NCCL_DEBUG=INFO for one C and one Java run of all_reduce 64 MiB: compare what NCCL chose.
#  B: 10 pairs in reversed order (Java first, then C): all_reduce, sendrecv, alltoall at 64 MiB, -n 100.
set -u
cd "$(dirname "$0")/.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
J=$OUT/exp5/json; R=$OUT/exp5/raw; mkdir -p $J $R
t0=$(date +%s)
perf/native/build.sh > $R/build-baseline.log 2>&1
BASE=perf/native/build/nccl_perf_baseline
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
A=(-t all_reduce -b 64M -e 64M -n 20 -w 5 -c 0)
timeout 60 "${M[@]}" -x NCCL_DEBUG=INFO -x MASTER_PORT=29951 $BASE "${A[@]}" > $R/c-info.log 2>&1
timeout 60 "${M[@]}" -x NCCL_DEBUG=INFO -x MASTER_PORT=29952 scripts/nccl4j-perf "${A[@]}" > $R/java-info.log 2>&1
( env; ulimit -a ) > $R/env.txt 2>&1
echo "A done $(( $(date +%s) - t0 )) s"
L=(-t all_reduce,sendrecv,alltoall -b 64M -e 64M -n 100 -w 5 -c 0)
port=29960
for r in $(seq 1 10); do
  port=$((port+1)); timeout 60 "${M[@]}" -x MASTER_PORT=$port scripts/nccl4j-perf "${L[@]}" -J $J/java-rev-$r.json > $R/java-rev-$r.log 2>&1
  port=$((port+1)); timeout 60 "${M[@]}" -x MASTER_PORT=$port $BASE "${L[@]}" -J $J/c-rev-$r.json > $R/c-rev-$r.log 2>&1
done
echo "B done $(( $(date +%s) - t0 )) s"
tar czf $OUT/exp5.tgz -C $OUT exp5 && rm -rf $OUT/exp5
