#!/usr/bin/env bash
# Device call 3 of session 3 (nvidia-h200-x2): which nccl4j object makes all_reduce 64 MiB ~1.5 us slower per
# operation than C (call 2: the C loop inside a JVM is as fast as C; nccl4j-perf is slower, CUDA graphs too).
#  A: the C loop inside a JVM given nccl4j's communicator, stream or buffers (InJvm2.java, injvm2.cu), 2 rounds
#     alternating with C and nccl4j-perf; 64 MiB, -n 200 -w 20 -c 0.
#  B: C and nccl4j-perf under a CUPTI kernel tracer (kernel_trace.c): kernel durations and gaps.
#  C: which processes hold a context on which GPU while nccl4j-perf runs (nvidia-smi --query-compute-apps).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s3r3; R=$W/raw; J=$W/json; mkdir -p $R $J $W/trace-c $W/trace-java
t0=$(date +%s)
perf/native/build.sh > $R/build-baseline.log 2>&1 || echo "baseline build failed"
MPI_INC=$(mpicc --showme:compile); MPI_LIB=$(mpicc --showme:link)
MPIF=$(for f in $MPI_INC $MPI_LIB; do case $f in -I*|-L*|-l*) printf '%s ' $f;; -Wl,*) printf -- '-Xlinker %s ' ${f#-Wl,};; *) printf -- '-Xcompiler %s ' $f;; esac; done)
nvcc -O2 -std=c++17 -shared -Xcompiler -fPIC -o $W/libinjvm2.so "$here/injvm2.cu" $MPIF \
    -Xlinker /usr/lib/x86_64-linux-gnu/libnccl.so.2 -lcudart -ldl > $R/build-injvm2.log 2>&1 || { echo "injvm2 build failed"; tail $R/build-injvm2.log; }
CUDA_T=/usr/local/cuda/targets/x86_64-linux
for k in CUpti_ActivityKernel11 CUpti_ActivityKernel10 CUpti_ActivityKernel9; do
  gcc -O2 -shared -fPIC -DKREC=$k -I$CUDA_T/include -o $W/libkernel_trace.so "$here/kernel_trace.c" -L$CUDA_T/lib -lcupti \
      -Wl,-rpath,$CUDA_T/lib >> $R/build-trace.log 2>&1 && { echo "tracer built with $k"; break; }
done
echo "builds done $(( $(date +%s) - t0 )) s"
BASE=perf/native/build/nccl_perf_baseline
ARGS="-t all_reduce -b 64M -e 64M -n 200 -w 20 -c 0"
LIBMPI=$(ls /usr/lib/x86_64-linux-gnu/libmpi.so.40 2>/dev/null || ls /usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40)
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
INJ=(-x INJVM_LIB=$W/libinjvm2.so -x "INJVM_ARGS=$ARGS" -x OMPI_MCA_opal_signal= -x LD_PRELOAD=$B/jre/lib/libjsig.so:$LIBMPI)
port=29850
run() { # name mpirun-args-and-command...
  local name=$1; shift; port=$((port+1))
  timeout 60 "${M[@]}" -x MASTER_PORT=$port "$@" > $R/$name.log 2>&1 || echo "$name: exit $?"
  printf '%-22s %s\n' "$name" "$(grep -E '^ +67108864' $R/$name.log | awk '{print $6, $10}')"
}
for r in 1 2; do
  run c-$r $BASE $ARGS
  for give in none comm stream bufs comm,stream,bufs; do
    run "injvm2-$give-$r" "${INJ[@]}" -x INJVM_GIVE=$give $B/jre/bin/java -cp "$B/exp:$B/lib/*" InJvm2
  done
  run java-$r scripts/nccl4j-perf $ARGS
done
echo "A done $(( $(date +%s) - t0 )) s"
if [ -f $W/libkernel_trace.so ]; then
  for r in 1 2; do
    run trace-c-$r -x CUDA_INJECTION64_PATH=$W/libkernel_trace.so -x KERNEL_TRACE_DIR=$W/trace-c $BASE $ARGS
    run trace-java-$r -x CUDA_INJECTION64_PATH=$W/libkernel_trace.so -x KERNEL_TRACE_DIR=$W/trace-java scripts/nccl4j-perf $ARGS
    python3 "$here/trace_report.py" $W/trace-c,$W/trace-java 200 > $R/trace-report-$r.md 2>&1
    mkdir -p $W/trace-$r; mv $W/trace-c/* $W/trace-java/* $W/trace-$r/ 2>/dev/null
    mkdir -p $W/trace-$r/c $W/trace-$r/java
  done
  cat $R/trace-report-*.md
fi
echo "B done $(( $(date +%s) - t0 )) s"
( for i in $(seq 1 12); do nvidia-smi --query-compute-apps=pid,process_name,gpu_uuid,used_memory --format=csv,noheader; echo --; sleep 0.5; done ) > $R/compute-apps-java.txt 2>&1 &
run java-apps scripts/nccl4j-perf $ARGS
wait
( for i in $(seq 1 12); do nvidia-smi --query-compute-apps=pid,process_name,gpu_uuid,used_memory --format=csv,noheader; echo --; sleep 0.5; done ) > $R/compute-apps-c.txt 2>&1 &
run c-apps $BASE $ARGS
wait
nvidia-smi -L > $R/gpus.txt
sort -u $R/compute-apps-java.txt $R/compute-apps-c.txt | head -20
echo "done $(( $(date +%s) - t0 )) s"
tar czf $OUT/s3r3.tgz -C $OUT s3r3 && rm -rf $W
