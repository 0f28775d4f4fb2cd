#!/usr/bin/env bash
# Device call 11 of session 4 (nvidia-h200-x2): does holding a lot of written memory before CUDA and NCCL start, as
# a JVM holds its heap, make the C baseline's all_reduce 64 MiB slower (where the GPU reads pinned host memory, and
# the machine's memory is split over host sockets that the VM does not show)? C, C after touch.c took 2 GiB, C after
# 24 GiB, and nccl4j-perf, 3 rounds, the order turning every other round.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s4r11; R=$W/raw; mkdir -p $R
t0=$(date +%s)
perf/native/build.sh > $R/build-baseline.log 2>&1 || echo "baseline build failed"
gcc -O2 -shared -fPIC -o $W/libtouch.so "$here/touch.c" > $R/build-touch.log 2>&1 || { echo "touch build failed"; cat $R/build-touch.log; }
BASE=perf/native/build/nccl_perf_baseline
ARGS="-t all_reduce -b 64M -e 64M -n 200 -w 20 -c 0"
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
port=29850
run() { # name mpirun-args-and-command...
  local name=$1; shift; port=$((port+1))
  timeout 60 "${M[@]}" -x MASTER_PORT=$port "$@" > $R/$name.log 2>&1 || echo "$name: exit $?"
  printf '%-22s %s\n' "$name" "$(grep -E '^ +67108864' $R/$name.log | awk '{print $6, $10}')" | tee -a $W/times.txt
}
prog() { # variant round
  case $1 in
    c) run c-$2 $BASE $ARGS ;;
    c+2g) run c+2g-$2 -x TOUCH_GB=2 -x LD_PRELOAD=$W/libtouch.so $BASE $ARGS ;;
    c+24g) run c+24g-$2 -x TOUCH_GB=24 -x LD_PRELOAD=$W/libtouch.so $BASE $ARGS ;;
    java) run java-$2 scripts/nccl4j-perf $ARGS ;;
  esac
}
ORDER=(c c+2g c+24g java)
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then seq=("${ORDER[@]}"); else seq=(); for ((i=${#ORDER[@]}-1; i>=0; i--)); do seq+=("${ORDER[i]}"); done; fi
  for v in "${seq[@]}"; do prog $v $r; done
done
grep -h "touch:" $R/c+24g-1.log | head -2
echo "done $(( $(date +%s) - t0 )) s"
tar czf $OUT/s4r11.tgz -C $OUT s4r11 && rm -rf $W
