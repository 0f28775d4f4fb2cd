#!/usr/bin/env bash
# Device call 4 of session 3 (nvidia-h200-x2): perf-compare with 20 small repeats (now -w 1000 on both sides) and
# 7 large repeats; the report and latest.json come back in perf.tgz (docs/), the raw runs too (perf/).
set -u
cd "$(dirname "$0")/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
perf/native/build.sh > $L/build-baseline.log 2>&1 || echo "baseline build failed"
JMH_ALLOC=docs/perf/2026-11-23-jmh-alloc.txt RUN_TIMEOUT=120 timeout 545 scripts/perf-compare.sh --bundle $B \
    --small-repeats 20 --large-repeats 7 --out $OUT/perf --docs $OUT/docs > $L/perf-compare.txt 2>&1
echo "perf-compare exit $?" >> $L/perf-compare.txt
tail -22 $L/perf-compare.txt
echo "== done $(( $(date +%s) - t0 )) s"
cp $L/perf-compare.txt $OUT/
tar czf $OUT/perf.tgz -C $OUT perf logs docs && rm -rf $OUT/perf $OUT/logs $OUT/docs
