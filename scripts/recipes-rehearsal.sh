#!/usr/bin/env bash
# Follows the docs' two-node recipes on one machine with 2 or more GPUs, from a bundle made by scripts/gpu-bundle.sh,
# as far as one machine allows: two rehearsed hosts, each with its own half of the GPUs and its own NCCL_HOSTID (NCCL
# then connects the two halves over sockets, as across hosts). The program is AllReduce (64 MiB, every element checked
# against the host's sum on every rank), standing in for the recipes' com.example.Train.
#
#   scripts/recipes-rehearsal.sh [bundle-dir]      (default: ../bundle; run from a checkout: it reads docs/examples)
#   LOG_DIR=<dir for the logs>  RUN_TIMEOUT=180 (seconds per recipe)  PARTS="slurm trainjob" (default: both)
#
# slurm     docs/examples/slurm/train.sbatch itself, run by bash with stand-ins for scontrol (the job's two host
#           names) and srun (SLURM_NTASKS tasks over two hosts: each gets SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
#           SLURM_NODEID, SLURM_NNODES, SLURM_JOB_NUM_NODES, SLURMD_NODENAME, SLURM_STEP_NUM_TASKS, its host's GPUs in
#           CUDA_VISIBLE_DEVICES and NCCL_HOSTID); APP_JAR and NCCL4J_HOME point at the bundle, and the recipe's class
#           line is the one thing changed (com.example.Train -> org.nccl4j.examples.AllReduce). The sbatch makes the job
#           secret itself, as on a cluster.
# trainjob  the command of docs/examples/k8s/trainjob.yaml's TrainingRuntime (nccl4j-run --nnodes "$PET_NNODES" ...),
#           taken from the file, once per rehearsed node with the variables Kubeflow Trainer's torch policy sets
#           (PET_NNODES=2, PET_NODE_RANK, PET_NPROC_PER_NODE=auto, PET_MASTER_ADDR, PET_MASTER_PORT) and the TrainJob's
#           args (the main class); -np auto starts one rank per GPU the "pod" sees.
#
# One PASSED/FAILED line per recipe with every rank's check line, then "N passed, N failed". Exit status 0 when every
# recipe passed, 1 otherwise, 2 when the bundle, the recipes or 2 GPUs are missing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tool=recipes-rehearsal
# shellcheck source=env.sh
. "$here/env.sh"
root=$(cd "$here/.." && pwd)
bundle=${1:-$root/bundle}
[ -x "$bundle/jre/bin/java" ] || { echo "$tool: no $bundle/jre/bin/java (run scripts/gpu-bundle.sh)" >&2; exit 2; }
bundle=$(cd "$bundle" && pwd)
sbatch="$root/docs/examples/slurm/train.sbatch"
trainjob="$root/docs/examples/k8s/trainjob.yaml"
if [ ! -f "$sbatch" ] || [ ! -f "$trainjob" ]; then echo "$tool: run it from a checkout (no docs/examples)" >&2; exit 2; fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -ge 2 ] || { echo "$tool: two rehearsed hosts need 2 GPUs; nvidia-smi lists ${gpus:-0}" >&2; exit 2; }
per=$((gpus / 2))
parts=" ${PARTS:-slurm trainjob} "
limit=${RUN_TIMEOUT:-180}
log_dir=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
log_dir=$(cd "$log_dir" && pwd)
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
LD_LIBRARY_PATH=$(nccl4j_cuda_libs --reverse --dedupe --print)
export LD_LIBRARY_PATH
passed=0
nfailed=0

# the GPUs of rehearsed host H (0 or 1): its half of the machine's
host_gpus() {
  seq -s, $(($1 * per)) $(($1 * per + per - 1))
}

# report NAME STATUS LOGS...: one line for a recipe and every rank's check line
report() {
  local name=$1 status=$2 checks
  shift 2
  checks=$(cat "$@" 2> /dev/null | grep -a -E 'check rank|AllReduce: (PASSED|FAILED)' | sort)
  local ok
  ok=$(grep -c 'AllReduce: PASSED' <<< "$checks")
  if [ "$status" = 0 ] && [ "$ok" -ge 1 ] && ! grep -q ' [1-9][0-9]* wrong' <<< "$checks"; then
    passed=$((passed + 1)); echo "PASSED  $name"
  else
    nfailed=$((nfailed + 1)); echo "FAILED  $name (exit $status; logs in $log_dir)"
  fi
  while IFS= read -r c; do [ -n "$c" ] && echo "        $c"; done <<< "$checks"
}

if [[ "$parts" == *" slurm "* ]]; then
  shims="$log_dir/slurm-bin"
  mkdir -p "$shims" "$log_dir/slurm"
  cat > "$shims/scontrol" << 'EOF'
#!/usr/bin/env bash
# the stand-in for `scontrol show hostnames "$SLURM_JOB_NODELIST"`: the job's two rehearsed hosts, node 0 first
[ "$1 $2" = "show hostnames" ] || { echo "scontrol stand-in: only 'show hostnames'" >&2; exit 2; }
echo 127.0.0.1
echo rehearsed-host-1
EOF
  cat > "$shims/srun" << EOF
#!/usr/bin/env bash
# the stand-in for srun: \$SLURM_NTASKS tasks, \$SLURM_NTASKS_PER_NODE on each of 2 rehearsed hosts; options before
# the command are taken as given (they bind nothing here)
while [ \$# -gt 0 ] && [ "\${1#--}" != "\$1" ]; do shift; done
per=\${SLURM_NTASKS_PER_NODE:?}
n=\${SLURM_NTASKS:?}
pids=()
for ((t = 0; t < n; t++)); do
  node=\$((t / per))
  SLURM_PROCID=\$t SLURM_LOCALID=\$((t % per)) SLURM_NODEID=\$node SLURMD_NODENAME=rehearsed-host-\$node \\
    SLURM_STEP_NUM_TASKS=\$n NCCL_HOSTID=rehearsed-host-\$node \\
    CUDA_VISIBLE_DEVICES=\$(seq -s, \$((node * per)) \$((node * per + per - 1))) \\
    "\$@" > "$log_dir/slurm/task\$t.log" 2>&1 &
  pids+=(\$!)
done
status=0
for p in "\${pids[@]}"; do wait "\$p" || status=1; done
exit \$status
EOF
  chmod +x "$shims/scontrol" "$shims/srun"
  recipe="$log_dir/slurm/train.sbatch"
  sed 's/com\.example\.Train/org.nccl4j.examples.AllReduce/' "$sbatch" > "$recipe"
  grep -q 'org.nccl4j.examples.AllReduce' "$recipe" || { echo "$tool: train.sbatch names no com.example.Train" >&2; exit 2; }
  app=$(find "$bundle/lib" -name 'nccl4j-examples-*.jar' ! -name '*-tests.jar' | head -1)
  (
    unset NCCL4J_JOB_SECRET NCCL4J_JOB_SECRET_FILE
    export PATH="$shims:$PATH" SLURM_JOB_NODELIST="rehearsed-host-[0-1]" SLURM_NNODES=2 SLURM_JOB_NUM_NODES=2 \
      SLURM_NTASKS=$((2 * per)) SLURM_NTASKS_PER_NODE=$per NCCL4J_HOME="$bundle" APP_JAR="$app" \
      MASTER_PORT=$((29600 + RANDOM % 300))
    timeout -s KILL "$limit" bash "$recipe" > "$log_dir/slurm/sbatch.log" 2>&1
  )
  report "Slurm: docs/examples/slurm/train.sbatch, 2 rehearsed hosts x $per GPU(s), srun's variables" "$?" \
    "$log_dir"/slurm/task*.log
fi

if [[ "$parts" == *" trainjob "* ]]; then
  mkdir -p "$log_dir/trainjob"
  # the runtime's command line, as the file has it: exec /opt/nccl4j/nccl4j-run --nnodes "$PET_NNODES" ... "$@"
  line=$(grep -m1 -o 'exec /opt/nccl4j/nccl4j-run .*"\$@"' "$trainjob")
  [ -n "$line" ] || { echo "$tool: no 'exec /opt/nccl4j/nccl4j-run ... \"\$@\"' line in trainjob.yaml" >&2; exit 2; }
  line=${line//\/opt\/nccl4j\//$bundle/}
  port=$((29600 + RANDOM % 300))
  secret=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
  pids=()
  for node in 0 1; do
    # shellcheck disable=SC2016  # "$@" and $PET_* expand in the child shell, as in the pod
    PET_NNODES=2 PET_NODE_RANK=$node PET_NPROC_PER_NODE=auto PET_MASTER_ADDR=127.0.0.1 PET_MASTER_PORT=$port \
      NCCL4J_JOB_SECRET=$secret NCCL_HOSTID=rehearsed-host-$node CUDA_VISIBLE_DEVICES=$(host_gpus "$node") \
      timeout -s KILL "$limit" bash -c "$line" nccl4j-run org.nccl4j.examples.AllReduce \
      > "$log_dir/trainjob/node$node.log" 2>&1 &
    pids+=($!)
  done
  status=0
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  report "TrainJob: docs/examples/k8s/trainjob.yaml's runtime command, 2 rehearsed nodes, PET_NPROC_PER_NODE=auto" \
    "$status" "$log_dir"/trainjob/node*.log
fi

echo "$passed passed, $nfailed failed (logs: $log_dir)"
[ "$nfailed" = 0 ] && [ "$passed" -gt 0 ]
