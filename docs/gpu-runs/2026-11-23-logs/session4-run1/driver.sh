#!/usr/bin/env bash
# Device call 1 of session 4 (nvidia-h200-x2): where the ~1.5 us per operation that nccl4j-perf loses to C at
# all_reduce 64 MiB goes. (1) scripts/perf-ab.sh, 4 alternating rounds under CUDA_DEVICE_MAX_CONNECTIONS unset, 1
# and 32: if the difference goes with 1, it is the hardware queue that the user stream shares (or not) with NCCL's
# internal device stream, which every launch makes wait on each other. (2) scripts/perf-timeline.sh with the CUPTI
# tracer's API mode: the CUDA calls per operation of C and Java side by side.
set -u
cd "$(dirname "$0")/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
perf/native/build.sh > $L/build-baseline.log 2>&1 || echo "baseline build failed"
RUN_TIMEOUT=60 timeout 330 scripts/perf-ab.sh --bundle $B --out $OUT/ab-large \
    --variant default --variant c1:CUDA_DEVICE_MAX_CONNECTIONS=1 --variant c32:CUDA_DEVICE_MAX_CONNECTIONS=32 \
    -- -t all_reduce -b 64M -e 64M -n 200 -w 20 -c 0 > $L/ab-large.txt 2>&1
echo "perf-ab exit $?" >> $L/ab-large.txt
tail -40 $L/ab-large.txt
echo "== timeline at $(( $(date +%s) - t0 )) s"
ITERS=200 OUT=$OUT/timeline timeout 150 scripts/perf-timeline.sh $B > $L/timeline.txt 2>&1; echo "timeline exit $?" >> $L/timeline.txt
tail -60 $L/timeline.txt
echo "== done $(( $(date +%s) - t0 )) s"
cp $L/ab-large.txt $L/timeline.txt $OUT/
tar czf $OUT/run.tgz -C $OUT ab-large logs timeline && rm -rf $OUT/ab-large $OUT/logs $OUT/timeline
