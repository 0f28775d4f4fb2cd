#!/usr/bin/env bash
# Device call 6 of session 3 (nvidia-h200-x2): scripts/perf-timeline.sh with the CUPTI kernel tracer that
# perf/native/build.sh now builds (all_reduce 64 MiB, -n 200), then perf-compare with nccl4j-perf's new default
# --jit_quiet_ms 20 (20 small repeats, 7 large repeats).
set -u
cd "$(dirname "$0")/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
perf/native/build.sh > $L/build-baseline.log 2>&1 || echo "baseline build failed"
ITERS=200 OUT=$OUT/timeline timeout 70 scripts/perf-timeline.sh $B > $L/timeline.txt 2>&1; echo "timeline exit $?" >> $L/timeline.txt
tail -14 $L/timeline.txt
echo "== perf-compare at $(( $(date +%s) - t0 )) s"
JMH_ALLOC=docs/perf/2026-11-23-jmh-alloc.txt RUN_TIMEOUT=120 timeout 490 scripts/perf-compare.sh --bundle $B \
    --small-repeats 20 --large-repeats 7 --out $OUT/perf --docs $OUT/docs > $L/perf-compare.txt 2>&1
echo "perf-compare exit $?" >> $L/perf-compare.txt
tail -20 $L/perf-compare.txt
echo "== done $(( $(date +%s) - t0 )) s"
cp $L/perf-compare.txt $L/timeline.txt $OUT/
tar czf $OUT/perf.tgz -C $OUT perf logs docs timeline && rm -rf $OUT/perf $OUT/logs $OUT/docs $OUT/timeline
