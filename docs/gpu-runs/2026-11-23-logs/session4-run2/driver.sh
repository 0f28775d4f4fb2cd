#!/usr/bin/env bash
# Device call 2 of session 4 (nvidia-h200-x2). Call 1 ruled out the hardware queues (CUDA_DEVICE_MAX_CONNECTIONS
# 1, 8, 32: Java - C +1.5 to +1.8 us at all_reduce 64 MiB every time) and a difference in CUDA calls (the same 14
# per operation on both sides). Here: (1) the same A/B with Java first in every round (--order jc): is it a cost of
# running second? (2) an A/A run, the C baseline in both places: how far apart two runs of one program are; (3)
# -n 2000 (0.5 s loops), alternate order, with nvidia-smi sampling SM clock and power every 20 ms: a clock ramp or
# a fixed cost shrinks per operation over a longer loop, a steady difference does not; (4) NCCL_DEBUG=INFO (INIT,
# TUNING, ENV, COLL) of one C and one Java run, to compare channels, algorithms and buffers; (5) the small sizes
# with and without a quiet JVM (serial GC, 2 compiler threads), alternate order.
set -u
cd "$(dirname "$0")/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
perf/native/build.sh > $L/build-baseline.log 2>&1 || echo "baseline build failed"
C=$PWD/perf/native/build/nccl_perf_baseline
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,pstate,temperature.gpu,clocks_event_reasons.active \
    --format=csv,noheader -lms 20 > $L/smi.csv 2>&1 &
smi=$!
step() { # name timeout args...
  local name=$1 limit=$2; shift 2
  echo "== $name at $(( $(date +%s) - t0 )) s ($(date +%T.%N))" | tee -a $L/steps.txt
  RUN_TIMEOUT=90 timeout $limit scripts/perf-ab.sh --bundle $B --out $OUT/$name "$@" > $L/$name.txt 2>&1
  echo "$name exit $? at $(date +%T.%N)" | tee -a $L/steps.txt
  sed -n '/^## Variant/,$p' $L/$name.txt | grep -v '^$' | head -30
}
LARGE=(-- -t all_reduce -b 64M -e 64M -n 200 -w 20 -c 0)
step jc 120 --order jc "${LARGE[@]}"
step aa 90 --order alternate --perf $C "${LARGE[@]}"
step long 150 --order alternate --rounds 4 -- -t all_reduce -b 64M -e 64M -n 2000 -w 20 -c 0
kill $smi
step debug 60 --rounds 1 --variant "dbg:NCCL_DEBUG=INFO,NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV,COLL" \
    -- -t all_reduce -b 64M -e 64M -n 3 -w 1 -c 0
step small 220 --order alternate --variant default --variant "quiet:JAVA_OPTS=-XX:+UseSerialGC -XX:CICompilerCount=2" \
    -- -t all_reduce -b 8 -e 64K -f 2 -n 1000 -w 1000 -c 0
echo "== done $(( $(date +%s) - t0 )) s"
for n in jc aa long debug small; do cp $OUT/$n/ab.md $OUT/$n.md 2>/dev/null; done
tar czf $OUT/run.tgz -C $OUT jc aa long debug small logs && rm -rf $OUT/jc $OUT/aa $OUT/long $OUT/debug $OUT/small $OUT/logs
