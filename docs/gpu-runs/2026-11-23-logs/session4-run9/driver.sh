#!/usr/bin/env bash
# Device call 9 of session 4 (nvidia-h200-x2): the C baseline and the C loop inside a JVM (session 3) call MPI_Init;
# nccl4j-perf does not. Does an initialized Open MPI in the process change all_reduce 64 MiB? C, nccl4j-perf, and
# nccl4j-perf with mpiinit.c preloaded (MPI_Init in a constructor, with libjsig and OMPI_MCA_opal_signal empty as in
# session 3), 4 rounds, the order turning every other round.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
B=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$B
unset NCCL_COMM_ID
W=$OUT/s4r9; R=$W/raw; mkdir -p $R
t0=$(date +%s)
perf/native/build.sh > $R/build-baseline.log 2>&1 || echo "baseline build failed"
mpicc -O2 -shared -fPIC -o $W/libmpiinit.so "$here/mpiinit.c" > $R/build-mpiinit.log 2>&1 || { echo "mpiinit build failed"; cat $R/build-mpiinit.log; }
BASE=perf/native/build/nccl_perf_baseline
ARGS="-t all_reduce -b 64M -e 64M -n 200 -w 20 -c 0"
M=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1)
port=29850
run() { # name mpirun-args-and-command...
  local name=$1; shift; port=$((port+1))
  timeout 90 "${M[@]}" -x MASTER_PORT=$port "$@" > $R/$name.log 2>&1 || echo "$name: exit $?"
  printf '%-22s %s\n' "$name" "$(grep -E '^ +67108864' $R/$name.log | awk '{print $6, $10}')" | tee -a $W/times.txt
}
prog() { # variant round
  case $1 in
    c) run c-$2 $BASE $ARGS ;;
    java) run java-$2 scripts/nccl4j-perf $ARGS ;;
    java+mpi) run java+mpi-$2 -x OMPI_MCA_opal_signal= env LD_PRELOAD=$B/jre/lib/libjsig.so:$W/libmpiinit.so \
                  $B/jre/bin/java -Djava.awt.headless=true -cp "$B/lib/*" org.nccl4j.examples.perf.Perf $ARGS ;;
  esac
}
ORDER=(c java java+mpi)
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then seq=("${ORDER[@]}"); else seq=(); for ((i=${#ORDER[@]}-1; i>=0; i--)); do seq+=("${ORDER[i]}"); done; fi
  for v in "${seq[@]}"; do prog $v $r; done
done
grep -h mpiinit $R/java+mpi-1.log | head -3
echo "done $(( $(date +%s) - t0 )) s"
tar czf $OUT/s4r9.tgz -C $OUT s4r9 && rm -rf $W
