#!/usr/bin/env bash
# Runs, back to back on the same GPUs, the DDP training loop of ddp_example.py four ways, then prints a markdown table
# of the median step times (steps 3..N) and writes it to a file:
#   1. nccl4j DdpTraining, DDP on NP GPUs           (mpirun -np NP, one JVM per rank)
#   2. nccl4j DdpTraining --no-comm on one GPU      (the single-GPU baseline, no communication)
#   3. PyTorch DDP on NP GPUs                       (torchrun --standalone --nproc_per_node=NP)
#   4. PyTorch --no-ddp on one GPU
#
#   scripts/bench/ddp-compare.sh [bundle-dir]        (default: bundle, made by scripts/gpu-bundle.sh)
#
# Variables (all optional):
#   PYTHON=python3           the Python that has torch (falls back to /opt/torch/.venv/bin/python3 when
#                            PYTHON is unset and python3 cannot import torch)
#   NP=2  STEPS=30  BUCKET_CAP_MB=25  SEED=1234
#   RESULTS_DIR=ddp-compare-results   logs, traces and the table (ddp-compare.md) go there
#   MASTER_PORT=<random>     the TCP rendezvous port of the nccl4j ranks (MASTER_ADDR is 127.0.0.1)
#   PHASE_TIMEOUT=300        seconds each of the four runs may take
#   SAME_NCCL=1              run nccl4j on PyTorch's bundled libnccl.so.2 (NCCL4J_LIBRARY) instead of the system's
#   JAVA_OPTS                extra JVM options
#   DDP_ARGS                 more options for the nccl4j DDP run, split at spaces (e.g. "--symmetric
#                            --overlap-optimizer"; see DdpTraining --help)
#
# Besides the table (ddp-compare.md), ddp-compare.json holds the medians as numbers: ddp_step_ms_<NP>gpu,
# ddp_compute_only_ms, torch_ddp_step_ms_<NP>gpu, torch_compute_only_ms (null for a run that failed), and ddp_args.
#
# The children inherit this script's whole environment (NCCL_NVLS_ENABLE=0 and the rest): nothing is cleared.
# The CUDA library directories are added to LD_LIBRARY_PATH for the Java runs only, so that PyTorch keeps
# loading its own CUDA libraries. Exit status: 0 when the four runs all gave a RESULT line, 1 otherwise,
# 2 when the bundle, the GPUs or mpirun are missing.
set -uo pipefail
# The setup the scripts share (java, class path, CUDA libraries, mpirun options): scripts/env.sh, one level up.
[ -f "$(dirname "$0")/../env.sh" ] || { echo "${0##*/}: $(dirname "$0")/../env.sh is missing" >&2; exit 2; }
# shellcheck source=../env.sh
. "$(dirname "$0")/../env.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bundle=${1:-$root/bundle}
[ -x "$bundle/jre/bin/java" ] || { echo "ddp-compare: no $bundle/jre/bin/java (run scripts/gpu-bundle.sh)" >&2; exit 2; }
bundle=$(cd "$bundle" && pwd)
java="$bundle/jre/bin/java"
np=${NP:-2}
steps=${STEPS:-30}
cap=${BUCKET_CAP_MB:-25}
seed=${SEED:-1234}
phase_timeout=${PHASE_TIMEOUT:-300}
port=${MASTER_PORT:-$((29500 + RANDOM % 1000))}
py_script="$root/scripts/bench/ddp_compare.py"
results=${RESULTS_DIR:-ddp-compare-results}
mkdir -p "$results"
results=$(cd "$results" && pwd)
table="$results/ddp-compare.md"

python=${PYTHON:-python3}
if [ -z "${PYTHON:-}" ] && ! "$python" -c 'import torch' >/dev/null 2>&1 && [ -x /opt/torch/.venv/bin/python3 ]; then
  echo "ddp-compare: python3 has no torch; using /opt/torch/.venv/bin/python3 (set PYTHON to choose)"
  python=/opt/torch/.venv/bin/python3
fi

command -v mpirun >/dev/null || { echo "ddp-compare: mpirun (Open MPI) is needed for the nccl4j ranks" >&2; exit 2; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -ge "$np" ] || { echo "ddp-compare: $np GPUs needed, nvidia-smi lists ${gpus:-0}" >&2; exit 2; }
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)

cp=$(nccl4j_classpath "$bundle")
java_ld=$(nccl4j_cuda_libs --reverse --dedupe --print)

if [ "${SAME_NCCL:-0}" = 1 ] && [ -z "${NCCL4J_LIBRARY:-}" ]; then
  lib=$("$python" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  if [ -n "$lib" ] && [ -f "$lib" ]; then
    export NCCL4J_LIBRARY=$lib
    echo "ddp-compare: nccl4j uses PyTorch's NCCL: $lib"
  else
    echo "ddp-compare: SAME_NCCL=1 but PyTorch's libnccl.so.2 was not found; nccl4j uses the system's NCCL"
  fi
fi

common=(--steps "$steps" --seed "$seed")
read -r -a ddp_args <<< "${DDP_ARGS:-}"
failures=0

# --- 1. nccl4j, DDP under mpirun: the rank command goes in a script so that mpirun parses none of its arguments
# Each rank writes its own log (nccl4j-ddp.rank<r>.log): mpirun's merged output can splice one rank's line into
# another's (a RESULT line was lost so on 4 GPUs); the logs are joined, rank by rank, into nccl4j-ddp.log afterwards.
rank_script="$results/nccl4j-rank.sh"
rm -f "$results"/nccl4j-ddp.rank*.log
{
  echo '#!/usr/bin/env bash'
  # shellcheck disable=SC2016  # expanded when the rank script runs
  printf 'exec > %q${OMPI_COMM_WORLD_RANK:-0}.log 2>&1\n' "$results/nccl4j-ddp.rank"
  # shellcheck disable=SC2016  # the written script expands JAVA_OPTS when it runs
  printf 'exec %q ${JAVA_OPTS:-} -cp %q org.nccl4j.examples.DdpTraining' "$java" "$cp"
  printf ' %q' "${common[@]}" --bucket-cap-mb "$cap" --trace "$results/trace_nccl4j_ddp_rank{rank}.json" \
    "${ddp_args[@]}"
  echo
} > "$rank_script"
chmod +x "$rank_script"
nccl4j_mpi_forward_args NCCL_ NCCL4J_ CUDA_ JAVA_OPTS
nccl4j_mpi_root_args
echo "== 1/4 nccl4j DDP: mpirun -np $np, MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"
LD_LIBRARY_PATH="$java_ld" timeout "$phase_timeout" mpirun "${nccl4j_mpi_root[@]}" --bind-to none -np "$np" \
    -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" -x LD_LIBRARY_PATH "${nccl4j_mpi_fwd[@]}" "$rank_script" \
    > "$results/nccl4j-ddp.mpirun.log" 2>&1
status=$?
cat "$results/nccl4j-ddp.mpirun.log"
for ((k = 0; k < np; k++)); do
  sed "s/^/[rank $k] /" "$results/nccl4j-ddp.rank$k.log" 2>/dev/null
done | tee "$results/nccl4j-ddp.log"
[ "$status" = 0 ] || { echo "ddp-compare: nccl4j DDP run failed (status $status)"; failures=1; }

# --- 2. nccl4j, one GPU, no communication
echo "== 2/4 nccl4j single GPU (--no-comm)"
# shellcheck disable=SC2086  # JAVA_OPTS holds several options, split on spaces
LD_LIBRARY_PATH="$java_ld" timeout "$phase_timeout" "$java" ${JAVA_OPTS:-} -cp "$cp" org.nccl4j.examples.DdpTraining \
    "${common[@]}" --no-comm --trace "$results/trace_nccl4j_single.json" 2>&1 | tee "$results/nccl4j-single.log"
status=${PIPESTATUS[0]}
[ "$status" = 0 ] || { echo "ddp-compare: nccl4j single-GPU run failed (status $status)"; failures=1; }

# --- 3. PyTorch DDP
echo "== 3/4 PyTorch DDP: $python -m torch.distributed.run --standalone --nproc_per_node=$np"
timeout "$phase_timeout" "$python" -m torch.distributed.run --standalone --nproc_per_node="$np" "$py_script" \
    "${common[@]}" --bucket-cap-mb "$cap" 2>&1 | tee "$results/torch-ddp.log"
status=${PIPESTATUS[0]}
[ "$status" = 0 ] || { echo "ddp-compare: PyTorch DDP run failed (status $status)"; failures=1; }

# --- 4. PyTorch, one GPU
echo "== 4/4 PyTorch single GPU (--no-ddp)"
timeout "$phase_timeout" "$python" "$py_script" "${common[@]}" --no-ddp 2>&1 | tee "$results/torch-single.log"
status=${PIPESTATUS[0]}
[ "$status" = 0 ] || { echo "ddp-compare: PyTorch single-GPU run failed (status $status)"; failures=1; }

# --- the table
result() { grep -ao 'RESULT impl=.*' "$results/$1.log" 2>/dev/null | head -1; }
field() { printf '%s\n' "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
r_nd=$(result nccl4j-ddp); r_ns=$(result nccl4j-single); r_td=$(result torch-ddp); r_ts=$(result torch-single)
for got in "$r_nd" "$r_ns" "$r_td" "$r_ts"; do [ -n "$got" ] || failures=1; done   # a run without its RESULT line
row() { # label mode gpus result single-result
  local line=$4 base=$5
  if [ -z "$line" ]; then
    echo "| $1 | $2 | $3 | failed (see $results) | | | |"
    return
  fi
  local ms pct hidden
  ms=$(field "$line" median_ms)
  pct=$(awk -v s="$(field "$base" median_ms)" -v d="$ms" 'BEGIN { if (s + 0 > 0 && d + 0 > 0) printf "%.1f %%", 100 * s / d; else print "n/a" }')
  hidden=$(field "$line" hidden_fraction)
  [ "$hidden" = na ] && hidden="n/a"
  echo "| $1 | $2 | $3 | $ms | $pct | $hidden | $(field "$line" loss_first) / $(field "$line" loss_last) |"
}
torch_version=$(field "$r_td" torch)
[ -n "$torch_version" ] || torch_version=$(field "$r_ts" torch)
{
  echo "## DDP step time: nccl4j vs PyTorch${torch_version:+ $torch_version}"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), ${np} x ${gpu_name:-GPU}; 3 x Linear(4000,4000) float32 (TF32 off), batch 1000"
  echo "per GPU, SGD lr 0.001, bucket cap ${cap} MB, ${steps} steps; median over steps 3..${steps} (CUDA events)."
  [ "${#ddp_args[@]}" -gt 0 ] && echo "nccl4j's DDP run with ${ddp_args[*]}."
  echo "% of single-GPU speed = that implementation's single-GPU step time / this step time (per-GPU throughput)."
  echo
  echo "| implementation | mode | GPUs | median step (ms) | % of single-GPU speed | all-reduce hidden behind backward | loss first / last |"
  echo "|---|---|---|---|---|---|---|"
  row nccl4j DDP "$np" "$r_nd" "$r_ns"
  row nccl4j "single GPU" 1 "$r_ns" "$r_ns"
  row PyTorch DDP "$np" "$r_td" "$r_ts"
  row PyTorch "single GPU" 1 "$r_ts" "$r_ts"
  if [ -n "$r_nd" ] && [ -n "$r_td" ]; then
    echo
    awk -v n="$(field "$r_nd" median_ms)" -v t="$(field "$r_td" median_ms)" \
        'BEGIN { if (n + 0 > 0 && t + 0 > 0) printf "DDP step time, nccl4j / PyTorch: %.3f\n", n / t }'
  fi
  echo
  echo "Logs and traces: $results (nccl4j traces: trace_nccl4j_*.json, open in ui.perfetto.dev)."
} | tee "$table"
echo "table: $table"
num() { local v; v=$(field "$1" median_ms); [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] && echo "$v" || echo null; }
printf '{\n  "ranks": %s,\n  "ddp_step_ms_%sgpu": %s,\n  "ddp_compute_only_ms": %s,\n  "torch_ddp_step_ms_%sgpu": %s,\n  "torch_compute_only_ms": %s,\n  "ddp_args": "%s"\n}\n' \
  "$np" "$np" "$(num "$r_nd")" "$(num "$r_ns")" "$np" "$(num "$r_td")" "$(num "$r_ts")" "${ddp_args[*]}" \
  > "$results/ddp-compare.json"
exit "$failures"
