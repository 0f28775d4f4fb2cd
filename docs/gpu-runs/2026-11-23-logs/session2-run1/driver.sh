#!/usr/bin/env bash
# Device call 1 of session 2 (nvidia-h200-x2): GPU tests, examples, nccl-tests next to nccl4j-perf.
set -u
cd "$(dirname "$0")/.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
L=$OUT/logs; mkdir -p $L
t0=$(date +%s)
{ nvidia-smi -L; nvidia-smi topo -m; date -u; } > $L/machine.txt 2>&1
# builds in the background: the C baseline, and nccl-tests' all_reduce_perf (MPI) if the box has none
( perf/native/build.sh > $L/build-baseline.log 2>&1 ) &
NT=$(command -v all_reduce_perf_mpi || command -v all_reduce_perf || find / -xdev -name 'all_reduce_perf*' -type f -perm -u+x 2>/dev/null | head -1)
echo "preinstalled nccl-tests: ${NT:-none}" > $L/nccl-tests-build.log
if [ -z "$NT" ]; then
  ( cd $B/nccl-tests-src && make -C src -j12 MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi NCCL_HOME=/usr \
      NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR=$B/nccl-tests-build NAME_SUFFIX=_mpi \
      $B/nccl-tests-build/all_reduce_perf_mpi >> $L/nccl-tests-build.log 2>&1 ) &
  NT=$B/nccl-tests-build/all_reduce_perf_mpi
fi
echo "== gpu-test.sh $(( $(date +%s) - t0 )) s"
LOG_DIR=$L/gpu-test NP=2 timeout 240 scripts/gpu-test.sh $B > $L/gpu-test.txt 2>&1; echo "gpu-test exit $?" >> $L/gpu-test.txt
tail -3 $L/gpu-test.txt
echo "== examples-gpu.sh $(( $(date +%s) - t0 )) s"
LOG_DIR=$L/examples NP=2 scripts/examples-gpu.sh $B > $L/examples.txt 2>&1; echo "examples exit $?" >> $L/examples.txt
tail -2 $L/examples.txt
wait
echo "== nccl-tests vs nccl4j-perf $(( $(date +%s) - t0 )) s"
M="mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE=$B"
A="-b 8 -e 1G -f 4 -n 50 -w 5 -c 1"
if [ -x "$NT" ]; then
  for r in 1 2; do
    timeout 120 $M $NT $A > $L/nccl-tests-all_reduce-$r.txt 2>&1
    timeout 120 $M -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$((29800 + r)) scripts/nccl4j-perf -t all_reduce $A > $L/nccl4j-perf-all_reduce-$r.txt 2>&1
  done
else
  echo "no nccl-tests binary" > $L/nccl-tests-all_reduce-1.txt
fi
echo "== done $(( $(date +%s) - t0 )) s"
cp -r perf/native/build $L/baseline-build 2>/dev/null
tar czf $OUT/run1-logs.tgz -C $OUT logs
cp $L/gpu-test.txt $L/examples.txt $OUT/ 2>/dev/null
