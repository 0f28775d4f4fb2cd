#!/usr/bin/env bash
# Runs, alternating on the same GPUs, nccl4j's fully sharded training (org.nccl4j.examples.ShardedTraining, one JVM per
# rank under mpirun) and PyTorch FSDP2 (sharded_compare.py: fully_shard per layer, under torchrun) on the same model
# (N x Linear(H,H) + ReLU, float32, TF32 off, batch B per rank, MSE, Adam), then prints a markdown table of the median
# step times (steps 3..N), the peak memory of each rank (nccl4j's allocated bytes, torch.cuda.max_memory_allocated)
# and the fraction of nccl4j's communication hidden behind compute, and writes them to sharded-compare.json.
#
#   scripts/bench/sharded-compare.sh [bundle-dir]      (default: bundle, made by scripts/gpu-bundle.sh; from a bundle's
#                                                       bench/ directory, the bundle above it)
#
# Variables (all optional):
#   NP=2  LAYERS=40  SIZE=8192  BATCH=1024  STEPS=20  LR=0.0001  SEED=1234  ROUNDS=2 (each round runs both sides,
#         nccl4j first in odd rounds, the baseline first in even ones)
#   BASELINE=fsdp2 the other side: fsdp2 (PyTorch), or ddp (nccl4j's own ShardedTraining --mode ddp: nothing sharded,
#                  gradients all-reduced; e.g. with SHARDED_ARGS="--mode zero2" for the ZeRO-2 form against DDP)
#   QUICK=1        a smoke run: LAYERS=4 SIZE=1024 BATCH=256 STEPS=6 ROUNDS=1 unless set
#   SHARE_GPU=1    every rank on GPU 0 with its own NCCL_HOSTID, NCCL_SOCKET_IFNAME=lo (a correctness run on a one-GPU
#                  machine: traffic over sockets, the times are not NVLink's)
#   SHARDED_ARGS   more options for ShardedTraining, split at spaces (e.g. "--mode zero2", "--gathered-buffers 3")
#   SKIP_TORCH=1   nccl4j only
#   PYTHON         the Python that has torch (default python3, else /opt/torch/.venv/bin/python3)
#   RESULTS_DIR=sharded-compare-results   per-rank logs (<side>-r<round>-rank<r>.log), the table and the JSON
#   PHASE_TIMEOUT=900  seconds each run may take;  MASTER_PORT  the first rendezvous port (random by default)
#   JAVA_OPTS      extra JVM options
#
# Each rank writes its own log file, so that no two ranks' lines interleave; the report reads the RESULT line of each.
# sharded-compare.json: sharded_step_ms_<NP>gpu, fsdp2_step_ms_<NP>gpu, sharded_peak_gib_<NP>gpu,
# fsdp2_peak_gib_<NP>gpu, the device-used figures, sharded_hidden_fraction_<NP>gpu, each round's step times (null for a
# side without a complete round). Exit status: 0 when both sides gave every rank's RESULT in a round, 1 otherwise, 2
# when the bundle, the GPUs or mpirun are missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/../env.sh" ]; then
  # shellcheck source=../env.sh
  . "$here/../env.sh"
else
  echo "sharded-compare: $here/../env.sh is missing" >&2; exit 2
fi
if [ -x "$here/../jre/bin/java" ]; then default_bundle=$here/..; else default_bundle=$(cd "$here/../.." && pwd)/bundle; fi
bundle=${1:-$default_bundle}
[ -x "$bundle/jre/bin/java" ] || { echo "sharded-compare: no $bundle/jre/bin/java (run scripts/gpu-bundle.sh)" >&2; exit 2; }
bundle=$(cd "$bundle" && pwd)
java="$bundle/jre/bin/java"
quick=${QUICK:-0}
if [ "$quick" = 1 ]; then d_layers=4 d_size=1024 d_batch=256 d_steps=6 d_rounds=1; else
  d_layers=40 d_size=8192 d_batch=1024 d_steps=20 d_rounds=2; fi
np=${NP:-2}
layers=${LAYERS:-$d_layers}
size=${SIZE:-$d_size}
batch=${BATCH:-$d_batch}
steps=${STEPS:-$d_steps}
rounds=${ROUNDS:-$d_rounds}
lr=${LR:-0.0001}
baseline=${BASELINE:-fsdp2}
case "$baseline" in fsdp2|ddp) ;; *) echo "sharded-compare: BASELINE=$baseline: use fsdp2 or ddp" >&2; exit 2;; esac
seed=${SEED:-1234}
share=${SHARE_GPU:-0}
phase_timeout=${PHASE_TIMEOUT:-900}
port=${MASTER_PORT:-$((29500 + RANDOM % 1000))}
py_script="$here/sharded_compare.py"
results=${RESULTS_DIR:-sharded-compare-results}
mkdir -p "$results"
results=$(cd "$results" && pwd)

python=${PYTHON:-python3}
if [ -z "${PYTHON:-}" ] && ! "$python" -c 'import torch' >/dev/null 2>&1 && [ -x /opt/torch/.venv/bin/python3 ]; then
  python=/opt/torch/.venv/bin/python3
fi
command -v mpirun >/dev/null || { echo "sharded-compare: mpirun (Open MPI) is needed for the nccl4j ranks" >&2; exit 2; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
need=$np; [ "$share" = 1 ] && need=1
[ "${gpus:-0}" -ge "$need" ] || { echo "sharded-compare: $need GPU(s) needed, nvidia-smi lists ${gpus:-0}" >&2; exit 2; }
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
cp=$(nccl4j_classpath "$bundle")
java_ld=$(nccl4j_cuda_libs --reverse --dedupe --print)
read -r -a sharded_args <<< "${SHARDED_ARGS:-}"
model=(--layers "$layers" --size "$size" --batch "$batch" --steps "$steps" --lr "$lr" --seed "$seed")
nccl4j_mpi_forward_args NCCL_ NCCL4J_ CUDA_ JAVA_OPTS
nccl4j_mpi_root_args
share_env=()
if [ "$share" = 1 ]; then
  export NCCL4J_DEVICE=0 NCCL_SOCKET_IFNAME=lo
  share_env=(-x NCCL4J_DEVICE -x NCCL_SOCKET_IFNAME)
fi
failures=0

run_nccl4j() { # round [side extra-args...]
  local r=$1 side=${2:-nccl4j} script
  local extra=("${@:3}")
  [ $# -ge 3 ] || extra=("${sharded_args[@]}")
  script="$results/$side-rank.sh"
  # shellcheck disable=SC2016  # the rank script expands $rank, ${rank} and JAVA_OPTS when it runs
  {
    echo '#!/usr/bin/env bash'
    echo 'rank=${OMPI_COMM_WORLD_RANK:-0}'
    [ "$share" = 1 ] && echo 'export NCCL_HOSTID=nccl4j-host$rank'
    printf 'exec > %q${rank}.log 2>&1\n' "$results/$side-r$r-rank"
    printf 'exec %q ${JAVA_OPTS:-} -XX:ErrorFile=%q -cp %q org.nccl4j.examples.ShardedTraining' "$java" \
      "$results/hs_err_%p.log" "$cp"
    printf ' %q' "${model[@]}" "${extra[@]}"
    echo
  } > "$script"
  chmod +x "$script"
  port=$((port + 1))
  echo "== round $r: $side: nccl4j ShardedTraining, mpirun -np $np${extra[*]:+ (${extra[*]})}"
  LD_LIBRARY_PATH="$java_ld" timeout "$phase_timeout" mpirun "${nccl4j_mpi_root[@]}" --bind-to none -np "$np" \
      -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" -x LD_LIBRARY_PATH "${nccl4j_mpi_fwd[@]}" "${share_env[@]}" \
      "$script" > "$results/$side-r$r-mpirun.log" 2>&1
  local status=$?
  for ((k = 0; k < np; k++)); do grep -a -E 'RESULT|median|memory|checksum|FAIL|Exception|rror' \
      "$results/$side-r$r-rank$k.log" 2>/dev/null | head -20; done
  [ "$status" = 0 ] || { echo "sharded-compare: $side round $r failed (status $status; see $results)"; tail -5 \
      "$results/$side-r$r-mpirun.log"; failures=1; }
}

run_fsdp2() { # round
  local r=$1 extra=()
  [ "$share" = 1 ] && extra=(--share-gpu)
  port=$((port + 1))
  echo "== round $r: PyTorch FSDP2, torchrun --nproc_per_node=$np"
  timeout "$phase_timeout" "$python" -m torch.distributed.run --nnodes=1 --nproc_per_node="$np" \
      --master_addr=127.0.0.1 --master_port="$port" "$py_script" "${model[@]}" "${extra[@]}" \
      --log-file "$results/fsdp2-r$r-rank{rank}.log" > "$results/fsdp2-r$r-torchrun.log" 2>&1
  local status=$?
  for ((k = 0; k < np; k++)); do grep -a -E 'RESULT|median' "$results/fsdp2-r$r-rank$k.log" 2>/dev/null; done
  [ "$status" = 0 ] || { echo "sharded-compare: FSDP2 round $r failed (status $status; see $results)"; tail -5 \
      "$results/fsdp2-r$r-torchrun.log"; failures=1; }
}

run_baseline() { # round
  if [ "$baseline" = ddp ]; then run_nccl4j "$1" ddp --mode ddp; else run_fsdp2 "$1"; fi
}

rm -f "$results"/nccl4j-r*-rank*.log "$results"/fsdp2-r*-rank*.log "$results"/ddp-r*-rank*.log
for ((r = 1; r <= rounds; r++)); do
  if [ "${SKIP_TORCH:-0}" = 1 ] && [ "$baseline" = fsdp2 ]; then run_nccl4j "$r"
  elif [ $((r % 2)) = 1 ]; then run_nccl4j "$r"; run_baseline "$r"
  else run_baseline "$r"; run_nccl4j "$r"; fi
done

config="$(date -u '+%Y-%m-%d %H:%M UTC'), $np ranks on ${gpu_name:-GPU}$([ "$share" = 1 ] && echo " (all on GPU 0, over sockets)");"
config+=" $layers x (Linear($size,$size) + ReLU) float32 (TF32 off), batch $batch per rank, Adam lr $lr, $steps steps,"
config+=" $rounds round(s)${SHARDED_ARGS:+; nccl4j with $SHARDED_ARGS}; baseline $baseline."
"$python" "$py_script" report "$results" --np "$np" --baseline "$baseline" --json "$results/sharded-compare.json" \
  --config "$config" | tee "$results/sharded-compare.md"
[ "${PIPESTATUS[0]}" = 0 ] || { [ "${SKIP_TORCH:-0}" = 1 ] && [ "$baseline" = fsdp2 ]; } || failures=1
echo "table: $results/sharded-compare.md, figures: $results/sharded-compare.json"
exit "$failures"
