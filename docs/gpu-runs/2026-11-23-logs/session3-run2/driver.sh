#!/usr/bin/env bash
# Device call 2 of session 3 (nvidia-h200-x2): is the ~1.5 us per operation that nccl4j-perf loses against C on
# all_reduce 64 MiB (call 1: every percentile of the per-operation times moves) a cost of the JVM process or of
# nccl4j's calls? Alternating rounds at 64 MiB, -n 200 -w 20 -c 0, one process per GPU:
#   c        the C baseline
#   injvm    the same C loop inside a bare JVM (InJvm.java + injvm.cu, built here into libinjvm.so)
#   injvm4j  the same, after nccl4j and the CUDA presets were loaded and a DeviceBuffer allocated
#   java     nccl4j-perf
#   javasm   nccl4j-perf with small JVM reservations (-Xmx256m, 32 MiB code cache, 64 MiB class space)
# and, once each, CUDA graph replay (-G 1) of C and nccl4j-perf at 64 MiB.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s3r2; R=$W/raw; J=$W/json; mkdir -p $R $J
t0=$(date +%s)
{ ls -la /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/targets/x86_64-linux/lib/libcupti* \
     /usr/local/cuda/targets/x86_64-linux/include/cupti.h /usr/local/cuda/extras/CUPTI/include/cupti.h;
  ls -d /opt/torch/.venv/lib/python3.12/site-packages/nvidia/*/; ls /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu*/lib;
  ls $B/jre/lib/libjsig.so; lscpu | head -20; numactl -H; } > $R/machine.txt 2>&1
perf/native/build.sh > $R/build-baseline.log 2>&1 || echo "baseline build failed"
MPI_INC=$(mpicc --showme:compile); MPI_LIB=$(mpicc --showme:link)
nvcc -O2 -std=c++17 -shared -Xcompiler -fPIC -o $W/libinjvm.so "$here/injvm.cu" -I/usr/include \
    $(for f in $MPI_INC $MPI_LIB; do case $f in -I*|-L*|-l*) printf '%s ' $f;; -Wl,*) printf -- '-Xlinker %s ' ${f#-Wl,};; *) printf -- '-Xcompiler %s ' $f;; esac; done) \
    -Xlinker /usr/lib/x86_64-linux-gnu/libnccl.so.2 -lcudart -ldl > $R/build-injvm.log 2>&1 || { echo "injvm build failed"; tail $R/build-injvm.log; }
echo "builds done $(( $(date +%s) - t0 )) s"
BASE=perf/native/build/nccl_perf_baseline
ARGS="-t all_reduce -b 64M -e 64M -n 200 -w 20 -c 0"
LIBMPI=$(ls /usr/lib/x86_64-linux-gnu/libmpi.so.40 2>/dev/null || ls /usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40)
PRE=$LIBMPI; [ -f $B/jre/lib/libjsig.so ] && PRE=$B/jre/lib/libjsig.so:$LIBMPI
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
INJ=(-x INJVM_LIB=$W/libinjvm.so -x "INJVM_ARGS=$ARGS" -x OMPI_MCA_opal_signal= -x LD_PRELOAD=$PRE)
port=29800
run() { # name extra-mpirun-args... -- cmd...
  local name=$1; shift; port=$((port+1))
  timeout 60 "${M[@]}" -x MASTER_PORT=$port "$@" > $R/$name.log 2>&1 || echo "$name: exit $?"
  printf '%-12s %s\n' "$name" "$(grep -E '^ +67108864' $R/$name.log | awk '{print $6, $10}')"
}
for r in 1 2 3; do
  run c-$r $BASE $ARGS -J $J/c-$r.json
  run injvm-$r "${INJ[@]}" $B/jre/bin/java -cp $B/exp InJvm
  run injvm4j-$r "${INJ[@]}" -x INJVM_NCCL4J=1 $B/jre/bin/java -cp "$B/exp:$B/lib/*" InJvm
  run java-$r scripts/nccl4j-perf $ARGS -J $J/java-$r.json
  run javasm-$r -x "JAVA_OPTS=-Xmx256m -XX:ReservedCodeCacheSize=32m -XX:CompressedClassSpaceSize=64m" \
      scripts/nccl4j-perf $ARGS -J $J/javasm-$r.json
done
run c-graph $BASE $ARGS -G 1 -J $J/c-graph.json
run java-graph scripts/nccl4j-perf $ARGS -G 1 -J $J/java-graph.json
echo "done $(( $(date +%s) - t0 )) s"
tar czf $OUT/s3r2.tgz -C $OUT s3r2 && rm -rf $W
