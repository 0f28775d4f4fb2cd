#!/usr/bin/env bash
# Device call 3 of session 2 (nvidia-h200-x2): GPU tests (single + multi-process), then perf-compare with
# 20 small eager repeats.
set -u
cd "$(dirname "$0")/.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
( perf/native/build.sh > $L/build-baseline.log 2>&1 ) &
LOG_DIR=$L/gpu-test NP=2 SINGLE_TIMEOUT=90 MPI_TIMEOUT=90 scripts/gpu-test.sh $B > $L/gpu-test.txt 2>&1; echo "gpu-test exit $?" >> $L/gpu-test.txt
tail -2 $L/gpu-test.txt
wait
echo "== perf-compare $(( $(date +%s) - t0 )) s"
JMH_ALLOC=docs/perf/2026-11-23-jmh-alloc.txt RUN_TIMEOUT=120 timeout 470 scripts/perf-compare.sh --bundle $B --small-repeats 20 --out $OUT/perf --docs $OUT/docs > $L/perf-compare.txt 2>&1
echo "perf-compare exit $?" >> $L/perf-compare.txt
tail -22 $L/perf-compare.txt
echo "== done $(( $(date +%s) - t0 )) s"
cp $L/perf-compare.txt $L/gpu-test.txt $OUT/
tar czf $OUT/perf.tgz -C $OUT perf logs docs && rm -rf $OUT/perf $OUT/logs
