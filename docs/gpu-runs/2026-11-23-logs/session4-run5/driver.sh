#!/usr/bin/env bash
# Device call 5 of session 4 (nvidia-h200-x2): call 4 showed that memory traffic on other CPUs (4 dd) makes C's
# all_reduce 64 MiB about 0.6 us per operation slower, so what the host does reaches the GPU's loop (the GPU reads
# its command queue from host memory). Does it matter where the host threads run? The VM shows 32 CPUs on one
# node, but its host may have two sockets. Each rank on 2 CPUs of its own (pin.sh: taskset) at CPUs 0-3, 14-17 and
# 28-31, or unbound, C and nccl4j-perf, 3 rounds, the order turning every other round; nvidia-smi topo -m too.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s4r5; R=$W/raw; mkdir -p $R
t0=$(date +%s)
{ nvidia-smi topo -m; } > $R/topo.txt 2>&1
perf/native/build.sh > $R/build-baseline.log 2>&1 || echo "baseline build failed"
BASE=perf/native/build/nccl_perf_baseline
ARGS="-t all_reduce -b 64M -e 64M -n 200 -w 20 -c 0"
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
port=29850
run() { # name mpirun-args-and-command...
  local name=$1; shift; port=$((port+1))
  timeout 90 "${M[@]}" -x MASTER_PORT=$port "$@" > $R/$name.log 2>&1 || echo "$name: exit $?"
  printf '%-22s %s\n' "$name" "$(grep -E '^ +67108864' $R/$name.log | awk '{print $6, $10}')" | tee -a $W/times.txt
}
prog() { # variant round
  local side=${1%%@*} at=${1#*@} cmd
  if [ $side = c ]; then cmd=($BASE $ARGS); else cmd=(scripts/nccl4j-perf $ARGS); fi
  if [ "$at" = free ]; then run $1-$2 "${cmd[@]}"; else run $1-$2 -x PIN_BASE=$at "$here/pin.sh" "${cmd[@]}"; fi
}
ORDER=(c@free java@free c@0 java@0 c@14 java@14 c@28 java@28)
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then seq=("${ORDER[@]}"); else seq=(); for ((i=${#ORDER[@]}-1; i>=0; i--)); do seq+=("${ORDER[i]}"); done; fi
  for v in "${seq[@]}"; do prog $v $r; done
done
echo "done $(( $(date +%s) - t0 )) s"
tar czf $OUT/s4r5.tgz -C $OUT s4r5 && rm -rf $W
