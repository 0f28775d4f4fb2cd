#!/usr/bin/env bash
# Runs nccl4j's GPU tests from a bundle made by scripts/gpu-bundle.sh: first the single-process tests
# (tag "gpu", not "multiprocess") in one JVM, then the multi-process ones (tag "multiprocess") under
# mpirun -np N, one JVM per rank. Ends with the line "N passed, N failed"; exits non-zero on any failure.
#
#   scripts/gpu-test.sh [bundle-dir]   NP=ranks (default: GPU count)  JAVA_OPTS=extra JVM options
#                                      TESTS=regex of test class names
#
# Every rank gets the parent's environment: mpirun's children inherit it, and the NCCL_*, NCCL4J_*, CUDA_*,
# NVSHMEM_*, TORCH_*, LD_LIBRARY_PATH variables are also forwarded explicitly with -x.
set -uo pipefail
# The setup the scripts share (java, class path, CUDA libraries, mpirun options): env.sh, beside this script.
[ -f "$(dirname "$0")/env.sh" ] || { echo "${0##*/}: $(dirname "$0")/env.sh is missing" >&2; exit 2; }
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
here=$(cd "$(dirname "$0")" && pwd)
bundle=${1:-$here}
[ -x "$bundle/jre/bin/java" ] || bundle=$here/../bundle
bundle=$(cd "$bundle" && pwd)
java="$bundle/jre/bin/java"
[ -x "$java" ] || { echo "no bundle with jre/bin/java found (run scripts/gpu-bundle.sh)"; exit 2; }
console=$(ls "$bundle"/lib/junit-platform-console-standalone-*.jar | head -1)
nccl4j_cuda_libs --first
np=${NP:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
export NCCL_COMM_ID=${NCCL_COMM_ID:-127.0.0.1:$((29500 + RANDOM % 500))}
log_dir=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"

cp=$(nccl4j_classpath "$bundle")
scan=()
for j in "$bundle"/lib/nccl4j-*-tests.jar; do scan+=(--scan-classpath "$j"); done
# TESTS=<regex of class names> narrows the run (JUnit's --include-classname).
[ -n "${TESTS:-}" ] && scan+=(--include-classname "$TESTS")

# JAVA_OPTS is split on spaces on purpose: it carries several -D options.
# shellcheck disable=SC2086
junit() {
  "$java" ${JAVA_OPTS:-} -jar "$console" execute --class-path "$cp" "${scan[@]}" \
      --disable-banner --disable-ansi-colors --details=tree --details-theme=ascii "$@"
}

passed=0
failed=0
count() { # file: sums the console launcher's summaries (one per rank)
  local p f
  p=$(grep -Eo '\[ *[0-9]+ tests successful' "$1" | grep -Eo '[0-9]+' | awk '{s += $1} END {print s + 0}')
  f=$(grep -Eo '\[ *[0-9]+ tests failed' "$1" | grep -Eo '[0-9]+' | awk '{s += $1} END {print s + 0}')
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0}))
}

echo "== single-process GPU tests"
timeout "${SINGLE_TIMEOUT:-900}" bash -c "$(declare -f junit); $(declare -p java console cp scan); junit --include-tag gpu --exclude-tag multiprocess" 2>&1 | tee "$log_dir/single.log"
count "$log_dir/single.log"

if [ "$np" -ge 2 ]; then
  echo "== multi-process GPU tests: mpirun -np $np, NCCL_COMM_ID=$NCCL_COMM_ID"
  nccl4j_mpi_forward_args NCCL_ NCCL4J_ CUDA_ NVSHMEM_ TORCH_ LD_LIBRARY_PATH JAVA_OPTS
  nccl4j_mpi_root_args
  # The per-rank command goes in a script so that mpirun parses none of its arguments.
  rank_script="$log_dir/rank.sh"
  {
    echo '#!/usr/bin/env bash'
    printf 'exec %q ${JAVA_OPTS:-} -jar %q execute --class-path %q' "$java" "$console" "$cp"
    printf ' %q' "${scan[@]}" --disable-banner --disable-ansi-colors --details=tree --details-theme=ascii \
        --include-tag multiprocess
    echo
  } > "$rank_script"
  chmod +x "$rank_script"
  # A hung rank must not hold the machine: the whole mpirun run is bounded (MPI_TIMEOUT seconds, default 600).
  timeout "${MPI_TIMEOUT:-600}" mpirun "${nccl4j_mpi_root[@]}" --bind-to none --tag-output -np "$np" "${nccl4j_mpi_fwd[@]}" "$rank_script" 2>&1 | tee "$log_dir/multi.log"
  status=${PIPESTATUS[0]}
  count "$log_dir/multi.log"
  [ "$status" = 0 ] || { echo "mpirun exited with status $status"; failed=$((failed + 1)); }
else
  echo "== multi-process GPU tests skipped: $np GPU(s)"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
