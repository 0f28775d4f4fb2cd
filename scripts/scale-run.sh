#!/usr/bin/env bash
# A compact scale run on one machine with N GPUs (default: all), from a bundle made by scripts/gpu-bundle.sh,
# writing logs to OUT_DIR (default: scale-results):
#   1. the C baseline and nccl4j-perf (one process per GPU), every operation, 8 B..256 MiB by x32, -n 20;
#   2. all_reduce with NCCL_ALGO=Ring and =Tree set through nccl4j's configuration (-Dnccl.algo), 8 B..1 GiB by x4;
#   3. a simulated two-host run: NCCL_HOSTID differs between the two halves of the ranks, every operation
#      checked (-c 1), NCCL_DEBUG=INFO kept for the transport lines;
#   4. the examples under scripts/nccl4j-run -np N.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bundle=$(cd "${1:-$root/bundle}" && pwd)
out=${OUT_DIR:-scale-results}
mkdir -p "$out"
np=${NP:-$(nvidia-smi -L | grep -c '^GPU')}
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL4J_BUNDLE=$bundle
perf=$root/scripts/nccl4j-perf
base=$root/perf/native/build/nccl_perf_baseline
[ -x "$base" ] || timeout 120 bash "$root/perf/native/build.sh" > "$out/build.log" 2>&1
mpi() { timeout "${RUN_TIMEOUT:-90}" mpirun --allow-run-as-root --bind-to none -np "$np" -x NCCL_NVLS_ENABLE \
          -x LD_LIBRARY_PATH -x NCCL4J_BUNDLE -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$((29800 + RANDOM % 100)) "$@"; }
status=0
run() { local name=$1; shift; "$@" > "$out/$name.log" 2>&1; local s=$?; echo "$name: exit $s"; [ $s = 0 ] || status=1; }
run c-all mpi "$base" -t all -b 8 -e 256M -f 32 -n 20 -w 5 -c 0
run java-all mpi "$perf" -t all -b 8 -e 256M -f 32 -n 20 -w 5 -c 0
for algo in Ring Tree; do
  run "java-$algo" mpi -x JAVA_OPTS="-Dnccl.algo=$algo" "$perf" -t all_reduce -b 8 -e 1G -f 4 -n 20 -w 5 -c 0
done
cat > "$out/hostid-rank.sh" <<EOS
#!/usr/bin/env bash
export NCCL_HOSTID=simhost\$(( OMPI_COMM_WORLD_RANK * 2 / OMPI_COMM_WORLD_SIZE ))
exec "$perf" -t all -b 1K -e 1M -f 32 -n 5 -w 1 -c 1
EOS
chmod +x "$out/hostid-rank.sh"
run hostid mpi -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,NET "$out/hostid-rank.sh"
for ex in AllReduce DdpSimple ZeroShards "DdpTraining --steps 10"; do
  run "ex-${ex%% *}" timeout 120 "$bundle/nccl4j-run" -np "$np" $ex
done
exit $status
