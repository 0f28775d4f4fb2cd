#!/usr/bin/env bash
# Device call 4 of session 4 (nvidia-h200-x2): is the all_reduce 64 MiB difference (Java - C about +1.2 to +2.3 us
# per operation; C's loop inside an otherwise idle JVM about +0.5) the host's activity? The GPU is 20 to 47 ms
# behind the host in these loops, so no host call waits; but the GPU reads its command queue and the kernels'
# parameters from host memory. Four rounds, the order turning every other round, of: C; C while 4 dd processes
# write memory (dd if=/dev/zero of=/dev/null bs=8M) on other cores; nccl4j-perf; nccl4j-perf with the same load;
# nccl4j-perf interpreted only (-Xint: no JIT threads); nccl4j-perf with a quiet JVM (serial GC, C1 only, one
# compiler thread, no perf data). Also the machine's GPUs and CPU (nvidia-smi, lscpu), since call 3's times were
# 254 us where calls 1 and 2 had 248 us.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s4r4; R=$W/raw; mkdir -p $R
t0=$(date +%s)
{ nvidia-smi; nvidia-smi -q -d CLOCK,PERFORMANCE | head -80; lscpu; } > $R/machine.txt 2>&1
perf/native/build.sh > $R/build-baseline.log 2>&1 || echo "baseline build failed"
BASE=perf/native/build/nccl_perf_baseline
ARGS="-t all_reduce -b 64M -e 64M -n 200 -w 20 -c 0"
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
port=29850
hogs=()
hog_on() { for i in 1 2 3 4; do dd if=/dev/zero of=/dev/null bs=8M count=10000000 2>/dev/null & hogs+=($!); done; sleep 0.2; }
hog_off() { kill "${hogs[@]}" 2>/dev/null; wait "${hogs[@]}" 2>/dev/null; hogs=(); }
run() { # name mpirun-args-and-command...
  local name=$1; shift; port=$((port+1))
  timeout 90 "${M[@]}" -x MASTER_PORT=$port "$@" > $R/$name.log 2>&1 || echo "$name: exit $?"
  printf '%-22s %s\n' "$name" "$(grep -E '^ +67108864' $R/$name.log | awk '{print $6, $10}')" | tee -a $W/times.txt
}
prog() { # variant round
  case $1 in
    c) run c-$2 $BASE $ARGS ;;
    c+hog) hog_on; run c+hog-$2 $BASE $ARGS; hog_off ;;
    java) run java-$2 scripts/nccl4j-perf $ARGS ;;
    java+hog) hog_on; run java+hog-$2 scripts/nccl4j-perf $ARGS; hog_off ;;
    java-xint) run java-xint-$2 -x JAVA_OPTS=-Xint scripts/nccl4j-perf $ARGS ;;
    java-quiet) run java-quiet-$2 -x "JAVA_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:-UsePerfData" \
                    scripts/nccl4j-perf $ARGS ;;
  esac
}
ORDER=(c c+hog java java+hog java-xint java-quiet)
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then seq=("${ORDER[@]}"); else seq=(); for ((i=${#ORDER[@]}-1; i>=0; i--)); do seq+=("${ORDER[i]}"); done; fi
  for v in "${seq[@]}"; do prog $v $r; done
done
echo "done $(( $(date +%s) - t0 )) s"
tar czf $OUT/s4r4.tgz -C $OUT s4r4 && rm -rf $W
