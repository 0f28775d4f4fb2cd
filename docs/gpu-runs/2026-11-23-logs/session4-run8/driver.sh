#!/usr/bin/env bash
# Device call 8 of session 4 (nvidia-h200-x2): what NCCL and the system see of each side. (1) NCCL_DEBUG=INFO with
# NCCL_DEBUG_SUBSYS=ALL for one C and one nccl4j-perf run of all_reduce 64 MiB (-n 3 -w 1): channels, algorithm,
# protocol, buffers, the P2P paths, to compare line by line; (2) during a longer run of each (-n 4000), every
# rank process's mapped CUDA/NCCL/MPI libraries, its thread count and state, and the GPUs' compute apps.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s4r8; R=$W/raw; mkdir -p $R
t0=$(date +%s)
perf/native/build.sh > $R/build-baseline.log 2>&1 || echo "baseline build failed"
BASE=$PWD/perf/native/build/nccl_perf_baseline
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
timeout 60 "${M[@]}" -x MASTER_PORT=29801 -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=ALL $BASE -t all_reduce -b 64M -e 64M -n 3 -w 1 -c 0 > $R/debug-c.log 2>&1
timeout 60 "${M[@]}" -x MASTER_PORT=29802 -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=ALL scripts/nccl4j-perf -t all_reduce -b 64M -e 64M -n 3 -w 1 -c 0 > $R/debug-java.log 2>&1
echo "debug runs done $(( $(date +%s) - t0 )) s"
watch_ranks() { # side pattern
  local side=$1 pat=$2 i p
  for i in $(seq 1 60); do
    sleep 0.1
    for p in $(pgrep -f "$pat"); do
      [ -r /proc/$p/maps ] || continue
      grep -q -E 'libcuda|libnccl' /proc/$p/maps 2>/dev/null || continue
      [ -f $R/maps-$side-$p.txt ] && continue
      sleep 1.5
      awk '{print $6}' /proc/$p/maps | grep -E '\.so' | sort -u > $R/maps-$side-$p.txt
      { grep -E 'Threads|Cpus_allowed_list|VmRSS|voluntary' /proc/$p/status; cat /proc/$p/environ | tr '\0' '\n' | sort; \
        for t in /proc/$p/task/*; do echo "$(cat $t/comm) $(awk '{print $3, $14, $15}' $t/stat)"; done; } > $R/proc-$side-$p.txt 2>&1
      nvidia-smi --query-compute-apps=pid,process_name,gpu_uuid,used_memory --format=csv,noheader > $R/apps-$side-$p.txt 2>&1
    done
  done
}
watch_ranks c nccl_perf_baseline & w=$!
timeout 60 "${M[@]}" -x MASTER_PORT=29803 $BASE -t all_reduce -b 64M -e 64M -n 4000 -w 20 -c 0 > $R/long-c.log 2>&1
wait $w
watch_ranks java org.nccl4j.examples.perf.Perf & w=$!
timeout 60 "${M[@]}" -x MASTER_PORT=29804 scripts/nccl4j-perf -t all_reduce -b 64M -e 64M -n 4000 -w 20 -c 0 > $R/long-java.log 2>&1
wait $w
grep -h -E '^ +67108864' $R/long-c.log $R/long-java.log
echo "done $(( $(date +%s) - t0 )) s"
tar czf $OUT/s4r8.tgz -C $OUT s4r8 && rm -rf $W
