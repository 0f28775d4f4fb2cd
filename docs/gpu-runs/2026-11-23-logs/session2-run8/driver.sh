#!/usr/bin/env bash
# Device call 8 of session 2 (nvidia-h200-x2): all_reduce 64 MiB, -n 1000, 6 rounds of four runs in one call:
# the C baseline as perf/native/build.sh builds it, the same source built with -cudart static and -cudart shared,
# and nccl4j-perf (one process per GPU).
set -u
cd "$(dirname "$0")/.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
J=$OUT/exp8/json; R=$OUT/exp8/raw; mkdir -p $J $R
perf/native/build.sh > $R/build-baseline.log 2>&1
cp perf/native/build/nccl_perf_baseline /tmp/base-default
mi=$(mpicc --showme:compile); ml=$(mpicc --showme:link | sed 's/-Wl,/-Xlinker /g; s/-pthread//g')
for mode in static shared; do
  nvcc -O2 -std=c++17 -cudart $mode -o /tmp/base-$mode perf/native/nccl_perf_baseline.cu -I/usr/include $mi -L/usr/lib/x86_64-linux-gnu -lnccl $ml -ldl >> $R/build-variants.log 2>&1
done
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
A=(-t all_reduce -b 64M -e 64M -c 0 -n 1000 -w 5)
port=29990
for r in $(seq 1 6); do
  for b in default static shared; do timeout 60 "${M[@]}" /tmp/base-$b "${A[@]}" -J $J/$b-$r.json > $R/$b-$r.log 2>&1; done
  port=$((port+1)); timeout 60 "${M[@]}" -x MASTER_PORT=$port scripts/nccl4j-perf "${A[@]}" -J $J/java-$r.json > $R/java-$r.log 2>&1
done
tar czf $OUT/exp8.tgz -C $OUT exp8 && rm -rf $OUT/exp8
