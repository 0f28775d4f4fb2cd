#!/usr/bin/env bash
# Device call 10 of session 4 (nvidia-h200-x2): scripts/perf-compare.sh with 20 small and 7 large repeats (the
# issue's targets, all operations, 8 B to 1 GiB, C / nccl4j-perf / nccl4j-perf -g / torch), a third full run after
# session 3's calls 4 and 6, code unchanged since call 6 but for perf-ab.
set -u
cd "$(dirname "$0")/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
perf/native/build.sh > $L/build-baseline.log 2>&1 || echo "baseline build failed"
JMH_ALLOC=docs/perf/2026-11-23-jmh-alloc.txt RUN_TIMEOUT=120 timeout 540 scripts/perf-compare.sh --bundle $B \
    --small-repeats 20 --large-repeats 7 --out $OUT/perf --docs $OUT/docs > $L/perf-compare.txt 2>&1
echo "perf-compare exit $?" >> $L/perf-compare.txt
tail -24 $L/perf-compare.txt
echo "== done $(( $(date +%s) - t0 )) s"
cp $L/perf-compare.txt $OUT/
tar czf $OUT/perf.tgz -C $OUT perf logs docs && rm -rf $OUT/perf $OUT/logs $OUT/docs
