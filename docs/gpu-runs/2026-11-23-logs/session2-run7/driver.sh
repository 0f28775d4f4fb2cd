#!/usr/bin/env bash
# Device call 7 of session 2 (nvidia-h200-x2): does the C baseline's CUDA runtime linkage (static vs shared
# libcudart, as Java loads it) move all_reduce at 64 MiB? 8 alternating pairs, -n 1000.
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset NCCL_COMM_ID
J=$OUT/exp7/json; R=$OUT/exp7/raw; mkdir -p $J $R
perf/native/build.sh > $R/build-baseline.log 2>&1
cp perf/native/build/nccl_perf_baseline /tmp/base-default
mi=$(mpicc --showme:compile); ml=$(mpicc --showme:link | sed 's/-Wl,/-Xlinker /g; s/-pthread//g')
for mode in static shared; do
  nvcc -O2 -std=c++17 -cudart $mode -o /tmp/base-$mode perf/native/nccl_perf_baseline.cu -I/usr/include $mi -L/usr/lib/x86_64-linux-gnu -lnccl $ml -ldl >> $R/build-variants.log 2>&1
done
for b in default static shared; do echo "== $b"; ldd /tmp/base-$b | grep -i cudart || echo "(no shared cudart: static)"; done > $R/ldd.txt 2>&1
cat $R/ldd.txt
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH)
A=(-t all_reduce -b 64M -e 64M -c 0 -n 1000 -w 5)
for r in $(seq 1 8); do
  for b in static shared; do
    timeout 60 "${M[@]}" /tmp/base-$b "${A[@]}" -J $J/$b-$r.json > $R/$b-$r.log 2>&1
  done
done
tar czf $OUT/exp7.tgz -C $OUT exp7 && rm -rf $OUT/exp7
