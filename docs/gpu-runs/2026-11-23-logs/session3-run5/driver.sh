#!/usr/bin/env bash
# Device call 5 of session 3 (nvidia-h200-x2): is the excess of nccl4j-perf at the first small size (call 4: 8 B
# out of place, median +1.4 us over 20 runs, the other sizes within 0.3 us) JIT compilation that lands in the
# first timed loop? 8 alternating rounds of perf-compare's small eager run (8 B..64 KiB, -n 1000 -w 1000):
#   c       the C baseline
#   java    nccl4j-perf as now (--jit_quiet_ms 20: waits until the JIT is idle before each measurement)
#   java0   nccl4j-perf --jit_quiet_ms 0 (no wait: as in call 4)
# and one nccl4j-perf run with -XX:+PrintCompilation (which compilations land between the table's lines).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s3r5; R=$W/raw; J=$W/json; mkdir -p $R $J
t0=$(date +%s)
perf/native/build.sh > $R/build-baseline.log 2>&1 || echo "baseline build failed"
BASE=perf/native/build/nccl_perf_baseline
ARGS="-t all_reduce -b 8 -e 64K -f 2 -c 0 -n 1000 -w 1000"
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
port=29900
run() { # name command...
  local name=$1; shift; port=$((port+1))
  timeout 60 "${M[@]}" -x MASTER_PORT=$port "$@" -J $J/$name.json > $R/$name.log 2>&1 || echo "$name: exit $?"
  printf '%-10s %s\n' "$name" "$(grep -E '^ +(8|16|32) ' $R/$name.log | awk '{printf "%s ", $6}')"
}
for r in 1 2 3 4 5 6 7 8; do
  run c-$r $BASE $ARGS
  run java-$r scripts/nccl4j-perf $ARGS
  run java0-$r scripts/nccl4j-perf $ARGS --jit_quiet_ms 0
done
run java-printcomp -x "JAVA_OPTS=-XX:+PrintCompilation" scripts/nccl4j-perf $ARGS --jit_quiet_ms 0
echo "done $(( $(date +%s) - t0 )) s"
tar czf $OUT/s3r5.tgz -C $OUT s3r5 && rm -rf $W
