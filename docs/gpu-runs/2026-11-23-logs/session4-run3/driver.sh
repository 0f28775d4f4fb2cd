#!/usr/bin/env bash
# Device call 3 of session 4 (nvidia-h200-x2): session 3's bisection again, with 4 rounds instead of 2 (call 2 of
# this session: two runs of the C baseline differ by +0.4 to +0.5 us in the median, Java - C is +1.5 to +2.3 us at
# all_reduce 64 MiB, -n 200, whatever the order, the hardware queues or the loop length). The C baseline's loop
# inside a JVM (injvm2.cu, InJvm2.java) with its own objects (none) or nccl4j's communicator, stream, buffers, or
# all three, next to C and nccl4j-perf; the order of the 7 programs turns around every other round.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s4r3; R=$W/raw; mkdir -p $R
t0=$(date +%s)
perf/native/build.sh > $R/build-baseline.log 2>&1 || echo "baseline build failed"
MPI_INC=$(mpicc --showme:compile); MPI_LIB=$(mpicc --showme:link)
MPIF=$(for f in $MPI_INC $MPI_LIB; do case $f in -I*|-L*|-l*) printf '%s ' $f;; -Wl,*) printf -- '-Xlinker %s ' ${f#-Wl,};; *) printf -- '-Xcompiler %s ' $f;; esac; done)
nvcc -O2 -std=c++17 -shared -Xcompiler -fPIC -o $W/libinjvm2.so "$here/injvm2.cu" $MPIF \
    -Xlinker /usr/lib/x86_64-linux-gnu/libnccl.so.2 -lcudart -ldl > $R/build-injvm2.log 2>&1 || { echo "injvm2 build failed"; tail $R/build-injvm2.log; }
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
  printf '%-22s %s\n' "$name" "$(grep -E '^ +67108864' $R/$name.log | awk '{print $6, $10}')" | tee -a $W/times.txt
}
prog() { # variant round
  case $1 in
    c) run c-$2 $BASE $ARGS ;;
    java) run java-$2 scripts/nccl4j-perf $ARGS ;;
    *) run "$1-$2" "${INJ[@]}" -x INJVM_GIVE=${1//+/,} $B/jre/bin/java -cp "$B/exp:$B/lib/*" InJvm2 ;;
  esac
}
ORDER=(c none comm stream bufs comm+stream+bufs java)
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then seq=("${ORDER[@]}"); else seq=(); for ((i=${#ORDER[@]}-1; i>=0; i--)); do seq+=("${ORDER[i]}"); done; fi
  for v in "${seq[@]}"; do prog $v $r; done
done
echo "done $(( $(date +%s) - t0 )) s"
tar czf $OUT/s4r3.tgz -C $OUT s4r3 && rm -rf $W
