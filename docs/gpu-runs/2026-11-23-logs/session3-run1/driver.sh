#!/usr/bin/env bash
# Device call 1 of session 3 (nvidia-h200-x2): where the 0.6 % that nccl4j-perf loses against C on all_reduce at
# 64 MiB goes.
#  A: scripts/perf-timeline.sh with nsys (if the machine has it): kernel durations and the gaps between them.
#  B: the same with NSYS=none: a CUDA event after every operation (p10/p50/p90/max per operation).
#  C: 4 alternating pairs C / Java / Java with a quiet JVM (serial GC, 2 compiler threads) at 64 MiB, -n 200.
set -u
cd "$(dirname "$0")/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s3r1; R=$W/raw; J=$W/json; mkdir -p $R $J
t0=$(date +%s)
{ nvidia-smi; nvidia-smi topo -m; ls -d /usr/local/cuda*/ /opt/nvidia/* 2>&1; command -v nsys;
  ls /usr/local/cuda/bin/nsys /usr/local/cuda/nsight-systems-*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>&1;
  nproc; } > $R/machine.txt 2>&1
perf/native/build.sh > $R/build-baseline.log 2>&1 || { echo "baseline build failed"; tail $R/build-baseline.log; }
echo "build done $(( $(date +%s) - t0 )) s"
OUT=$W/timeline-nsys timeout 200 scripts/perf-timeline.sh $B > $R/timeline-nsys.txt 2>&1; echo "exit $?" >> $R/timeline-nsys.txt
echo "A done $(( $(date +%s) - t0 )) s"; tail -25 $R/timeline-nsys.txt
NSYS=none OUT=$W/timeline-events timeout 150 scripts/perf-timeline.sh $B > $R/timeline-events.txt 2>&1; echo "exit $?" >> $R/timeline-events.txt
echo "B done $(( $(date +%s) - t0 )) s"; tail -25 $R/timeline-events.txt
BASE=perf/native/build/nccl_perf_baseline
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
L=(-t all_reduce -b 64M -e 64M -n 200 -w 20 -c 0)
port=29700
for r in 1 2 3 4; do
  port=$((port+1)); timeout 60 "${M[@]}" -x MASTER_PORT=$port $BASE "${L[@]}" -J $J/c-$r.json > $R/c-$r.log 2>&1
  port=$((port+1)); timeout 60 "${M[@]}" -x MASTER_PORT=$port scripts/nccl4j-perf "${L[@]}" -J $J/java-$r.json > $R/java-$r.log 2>&1
  port=$((port+1)); timeout 60 "${M[@]}" -x MASTER_PORT=$port -x JAVA_OPTS="-XX:+UseSerialGC -XX:CICompilerCount=2 -XX:-UsePerfData" \
      scripts/nccl4j-perf "${L[@]}" -J $J/javaq-$r.json > $R/javaq-$r.log 2>&1
  grep -h "67108864" $R/c-$r.log $R/java-$r.log $R/javaq-$r.log | head -3
done
echo "C done $(( $(date +%s) - t0 )) s"
rm -f $W/timeline-nsys/*.sqlite
tar czf $OUT/s3r1.tgz -C $OUT s3r1 && rm -rf $W
ls -la $OUT
