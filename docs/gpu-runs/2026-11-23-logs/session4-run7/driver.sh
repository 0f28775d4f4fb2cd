#!/usr/bin/env bash
# Device call 7 of session 4 (nvidia-h200-x2): all_reduce 64 MiB (-n 200 -w 20), C and nccl4j-perf, 3 rounds, the
# order turning every other round, each (a) as it is, (b) with 4 CPU spinners beside it (bash busy loops: CPU busy,
# no memory traffic, against call 4's dd, which moved memory and slowed C by 0.6 us), (c) as CUDA graphs (-G 1:
# the 200 operations captured once and replayed), where the host issues nothing per operation.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s4r7; R=$W/raw; mkdir -p $R $W/json
t0=$(date +%s)
perf/native/build.sh > $R/build-baseline.log 2>&1 || echo "baseline build failed"
BASE=perf/native/build/nccl_perf_baseline
ARGS="-t all_reduce -b 64M -e 64M -n 200 -w 20 -c 0"
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
port=29850
spin=()
spin_on() { for i in 1 2 3 4; do bash -c 'while :; do :; done' & spin+=($!); done; sleep 0.2; }
spin_off() { kill "${spin[@]}" 2>/dev/null; wait "${spin[@]}" 2>/dev/null; spin=(); }
run() { # name mpirun-args-and-command...
  local name=$1; shift; port=$((port+1))
  timeout 90 "${M[@]}" -x MASTER_PORT=$port "$@" -J $W/json/$name.json > $R/$name.log 2>&1 || echo "$name: exit $?"
  printf '%-22s %s\n' "$name" "$(grep -E '^ +67108864' $R/$name.log | awk '{print $6, $10}')" | tee -a $W/times.txt
}
prog() { # variant round
  local side=${1%%+*} how=${1#*+} cmd
  if [ $side = c ]; then cmd=($BASE $ARGS); else cmd=(scripts/nccl4j-perf $ARGS); fi
  case $how in
    plain) run $1-$2 "${cmd[@]}" ;;
    spin) spin_on; run $1-$2 "${cmd[@]}"; spin_off ;;
    graph) run $1-$2 "${cmd[@]}" -G 1 ;;
  esac
}
ORDER=(c+plain java+plain c+spin java+spin c+graph java+graph)
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then seq=("${ORDER[@]}"); else seq=(); for ((i=${#ORDER[@]}-1; i>=0; i--)); do seq+=("${ORDER[i]}"); done; fi
  for v in "${seq[@]}"; do prog $v $r; done
done
echo "done $(( $(date +%s) - t0 )) s"
tar czf $OUT/s4r7.tgz -C $OUT s4r7 && rm -rf $W
