#!/usr/bin/env bash
# Device call 6 of session 4 (nvidia-h200-x2): at 8 B to 64 KiB the loop is bound by the host thread, which runs in
# a fast (~6.2 us per all_reduce) or a slow (~8.5 us) state, C and Java alike, Java more often slow. Is the state
# where the thread runs? Each rank on 2 CPUs of its own (pin.sh: taskset) at CPUs 0-3 or 28-31, or unbound, C and
# nccl4j-perf, 3 rounds of all_reduce 8 B..64 KiB (-n 1000 -w 1000), the order turning every other round; then
# 2 rounds of 64 MiB (-n 200 -w 20) the same way. JSON of every run in json/.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s4r6; R=$W/raw; mkdir -p $R $W/json
t0=$(date +%s)
perf/native/build.sh > $R/build-baseline.log 2>&1 || echo "baseline build failed"
BASE=perf/native/build/nccl_perf_baseline
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
port=29850
run() { # name row-size mpirun-args-and-command...
  local name=$1 row=$2; shift 2; port=$((port+1))
  timeout 90 "${M[@]}" -x MASTER_PORT=$port "$@" -J $W/json/$name.json > $R/$name.log 2>&1 || echo "$name: exit $?"
  printf '%-22s %s\n' "$name" "$(grep -E "^ +$row " $R/$name.log | awk '{print $6, $10}')" | tee -a $W/times.txt
}
prog() { # variant round args...
  local v=$1 r=$2; shift 2
  local side=${v%%@*} at=${v#*@} cmd row=8
  [ "$4" = 64M ] && row=67108864
  if [ $side = c ]; then cmd=($BASE "$@"); else cmd=(scripts/nccl4j-perf "$@"); fi
  if [ "$at" = free ]; then run $v-$r $row "${cmd[@]}"; else run $v-$r $row -x PIN_BASE=$at "$here/pin.sh" "${cmd[@]}"; fi
}
ORDER=(c@free java@free c@0 java@0 c@28 java@28)
rounds() { # count tag args...
  local n=$1 tag=$2 r v i seq; shift 2
  for r in $(seq 1 $n); do
    if [ $((r % 2)) = 1 ]; then seq=("${ORDER[@]}"); else seq=(); for ((i=${#ORDER[@]}-1; i>=0; i--)); do seq+=("${ORDER[i]}"); done; fi
    for v in "${seq[@]}"; do prog $v $tag$r "$@"; done
  done
}
rounds 3 s -t all_reduce -b 8 -e 64K -f 2 -n 1000 -w 1000 -c 0
echo "small done $(( $(date +%s) - t0 )) s"
rounds 2 L -t all_reduce -b 64M -e 64M -n 200 -w 20 -c 0
echo "done $(( $(date +%s) - t0 )) s"
tar czf $OUT/s4r6.tgz -C $OUT s4r6 && rm -rf $W
