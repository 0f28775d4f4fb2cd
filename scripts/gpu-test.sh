#!/usr/bin/env bash
# Runs nccl4j's GPU tests from a bundle made by scripts/gpu-bundle.sh: first the single-process tests
# (tag "gpu", not "multiprocess") in one JVM, then the multi-process ones (tag "multiprocess") under
# mpirun -np NP, one JVM per rank.
#
#   scripts/gpu-test.sh [--share-gpu] [bundle-dir]     (default bundle-dir: where this script is, else ../bundle)
#
#   NP=ranks          default max(2, GPU count); 1: no mpirun run; refused: 0, not a number, more than 64 per GPU
#   --share-gpu       (or SHARE_GPU=1) the ranks share the GPUs even when NP <= GPU count. Sharing is on by itself
#                     when NP > GPU count (one GPU: 2 ranks on it): each rank gets NCCL_HOSTID=nccl4j-host<rank>
#                     (NCCL then takes the ranks for different hosts and connects them over sockets) unless you set
#                     NCCL_HOSTID (then it is kept, with a warning), and NCCL_SOCKET_IFNAME=lo unless you set it;
#                     each rank's tests pick device local rank mod device count
#   LOG_DIR=dir       the logs (default: a new temporary directory): single.log, multi.log (the mpirun run, each
#                     line tagged [job,rank]), ranks/1/rank.N/{stdout,stderr} (each rank's own, mpirun's
#                     --output-filename) and rank.sh (the command each rank runs)
#   JAVA_OPTS=...     extra JVM options (split on spaces)   TESTS=regex of test class names (--include-classname)
#   SINGLE_TIMEOUT, MPI_TIMEOUT   seconds for the single-process run (default 900) and the mpirun run (600); an
#                     mpirun still there 20 s after its bound's SIGTERM is killed, and the rank processes left then
#                     are listed in LOG_DIR/left.txt and killed
#
# The GPU count is the number of entries in CUDA_VISIBLE_DEVICES when it is set, else the GPUs nvidia-smi -L lists;
# with none, nothing runs (exit 2). Ends with the line "N passed, N failed, N skipped" (the single-process run and
# every rank summed; skipped counts aborted tests, a failed assumption, and the tests of a class that was skipped or
# aborted as a whole) and one line per cause of the skips, "skipped: <reason> (N tests, N classes)". Exit status 0
# when at least one test ran and none failed (a non-zero exit of a run that reported no failure counts as one);
# 1 otherwise, "no test ran: ..." saying why when no test ran; 2 when nothing could start.
#
# A bundle made with CUDA=12 runs with the CUDA 12 runtime it carries (cuda12/libcudart.so.12; see below); narrow it to
# the tests of nccl4j-native and nccl4j-core, whose CUDA is that runtime alone, with TESTS='org\.nccl4j\.(jni\.)?[A-Z].*'.
#
# Every rank gets the parent's environment: mpirun's children inherit it, and the NCCL_*, NCCL4J_*, CUDA_*,
# NVSHMEM_*, TORCH_*, LD_LIBRARY_PATH variables are also forwarded explicitly with -x.
set -uo pipefail
# The setup the scripts share (java, class path, CUDA libraries, mpirun options): env.sh, beside this script.
[ -f "$(dirname "$0")/env.sh" ] || { echo "${0##*/}: $(dirname "$0")/env.sh is missing" >&2; exit 2; }
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
tool=${0##*/}
nccl4j_gpu_args "$tool" "$@" || exit 2
here=$(cd "$(dirname "$0")" && pwd)
bundle=${nccl4j_bundle_arg:-$here}
[ -x "$bundle/jre/bin/java" ] || bundle=$here/../bundle
bundle=$(cd "$bundle" 2>/dev/null && pwd) || bundle=""
java="$bundle/jre/bin/java"
if [ -z "$bundle" ] || [ ! -x "$java" ]; then
  echo "$tool: no bundle with jre/bin/java found (run scripts/gpu-bundle.sh)" >&2
  exit 2
fi
console=$(find "$bundle/lib" -maxdepth 1 -name 'junit-platform-console-standalone-*.jar' 2>/dev/null | sort | head -1)
[ -n "$console" ] || { echo "$tool: $bundle/lib has no junit-platform-console-standalone-*.jar (run scripts/gpu-bundle.sh, without BUNDLE_TESTS=0)" >&2; exit 2; }
gpus=$(nccl4j_gpu_count "$tool") || exit 2
np=$(nccl4j_ranks "$tool" "$gpus") || exit 2
share=0
nccl4j_share_gpus "$tool" "$gpus" "$np" "$nccl4j_share_forced" && share=1
nccl4j_cuda_libs --first
# A CUDA 12 bundle (CUDA=12 scripts/gpu-bundle.sh) carries its runtime in cuda12/: nccl4j opens it (NCCL4J_CUDART, unless
# NCCL4J_CUDART or NCCL4J_CUDA is set already) and the CUDA 12.9 presets' JNI libraries find it first (LD_LIBRARY_PATH).
if [ -e "$bundle/cuda12/libcudart.so.12" ]; then
  if [ -z "${NCCL4J_CUDART:-}" ] && [ -z "${NCCL4J_CUDA:-}" ]; then export NCCL4J_CUDART=$bundle/cuda12/libcudart.so.12; fi
  export LD_LIBRARY_PATH=$bundle/cuda12${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "== CUDA 12 bundle: NCCL4J_CUDART=${NCCL4J_CUDART:-} NCCL4J_CUDA=${NCCL4J_CUDA:-}"
fi
export NCCL_COMM_ID=${NCCL_COMM_ID:-127.0.0.1:$((29500 + RANDOM % 500))}
log_dir=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
log_dir=$(cd "$log_dir" && pwd)

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

# The JUnit console launcher's summary, one per JVM (under mpirun each line starts with the rank's tag,
# "[1,0]<stdout>:"): "[         3 tests successful      ]", "tests failed", "tests skipped" (@Disabled, and the
# tests of a skipped class), "tests aborted" (an assumption failed), "tests found", "tests started", "containers
# failed" (a class's @BeforeAll or @AfterAll, or an engine, failed). A class whose @BeforeAll aborts (an
# assumption) starts none of its tests, which are found but neither started nor skipped.
passed=0      # tests successful
failures=0    # tests failed, containers failed, runs that failed without saying so
tests_failed=0
skipped=0     # tests skipped + tests aborted + tests that never started
aborted=0
unstarted=0
containers_failed=0
found=0
summaries=0
count() { # LOG: adds its summaries up; returns 1 when it reports no failure
  local ok f cf sk ab ns fo runs
  read -r ok f cf sk ab ns fo runs < <(awk '
    match($0, /\[ *[0-9]+ (tests|containers) [a-z]+ *\]/) {
      key = substr($0, 1, RSTART - 1)
      split(substr($0, RSTART + 1, RLENGTH - 2), w, " ")
      n[key, w[2] " " w[3]] += w[1]
      keys[key] = 1
    }
    END {
      for (k in keys) {
        ok += n[k, "tests successful"]; f += n[k, "tests failed"]; cf += n[k, "containers failed"]
        sk += n[k, "tests skipped"]; ab += n[k, "tests aborted"]; fo += n[k, "tests found"]
        ns = n[k, "tests found"] - n[k, "tests started"] - n[k, "tests skipped"]
        if (ns > 0) un += ns
        runs++
      }
      print ok + 0, f + 0, cf + 0, sk + 0, ab + 0, un + 0, fo + 0, runs + 0
    }' "$1")
  passed=$((passed + ok))
  failures=$((failures + f + cf))
  tests_failed=$((tests_failed + f))
  containers_failed=$((containers_failed + cf))
  skipped=$((skipped + sk + ab + ns))
  aborted=$((aborted + ab))
  unstarted=$((unstarted + ns))
  found=$((found + fo))
  summaries=$((summaries + runs))
  [ $((f + cf)) -gt 0 ]
}

# A run's exit status: non-zero with no failure in its summary (a crash, a timeout, a rank that died) counts as one.
status_of() { # NAME STATUS REPORTED(0: its summary has failures)
  [ "$2" = 0 ] && return 0
  if [ "$2" = 124 ]; then
    echo "$tool: the $1 run timed out (exit status 124)"
  else
    echo "$tool: the $1 run exited with status $2"
  fi
  [ "$3" = 0 ] || failures=$((failures + 1))
}

# The skipped and aborted entries of the console launcher's tree (--details=tree --details-theme=ascii), as
# "name<TAB>reason": "| +-- name() [A] Assumption failed: needs 2 GPUs, found 1", "'-- SomeTest [S] reason"
# (a reason over several lines: its first). Under mpirun, each line starts with the rank's tag.
skips() { # LOG...
  sed -n -E "s/^(\[[0-9]+,[0-9]+\]<std(out|err)>:)?[| ]*[+']-- (.*) \[[SA]\] (Assumption failed: )?(.*)$/\3\t\5/p" "$@"
}

echo "== single-process GPU tests"
timeout "${SINGLE_TIMEOUT:-900}" bash -c "$(declare -f junit); $(declare -p java console cp scan); junit --include-tag gpu --exclude-tag multiprocess" 2>&1 | tee "$log_dir/single.log"
status=${PIPESTATUS[0]}
count "$log_dir/single.log"
status_of single-process "$status" $?
logs=("$log_dir/single.log")

if [ "$np" -ge 2 ]; then
  echo "== multi-process GPU tests: mpirun -np $np, NCCL_COMM_ID=$NCCL_COMM_ID"
  nccl4j_mpi_forward_args NCCL_ NCCL4J_ CUDA_ NVSHMEM_ TORCH_ LD_LIBRARY_PATH JAVA_OPTS
  nccl4j_mpi_root_args
  # The per-rank command goes in a script so that mpirun parses none of its arguments; when the ranks share the
  # GPUs, the script gives each rank its NCCL_HOSTID first.
  rank_script="$log_dir/rank.sh"
  {
    echo '#!/usr/bin/env bash'
    [ "$share" = 1 ] && nccl4j_share_env
    # shellcheck disable=SC2016  # ${JAVA_OPTS:-} is the rank's, expanded in the rank's script
    printf 'exec %q ${JAVA_OPTS:-} -jar %q execute --class-path %q' "$java" "$console" "$cp"
    printf ' %q' "${scan[@]}" --disable-banner --disable-ansi-colors --details=tree --details-theme=ascii \
        --include-tag multiprocess
    echo
  } > "$rank_script"
  chmod +x "$rank_script"
  share_opts=()
  [ "$share" = 1 ] && share_opts=(--oversubscribe)   # more ranks than cores is fine: they wait on the GPU
  # Each rank's output also goes to its own files, ranks/1/rank.N/{stdout,stderr} (Open MPI 4.1).
  rm -rf "$log_dir/ranks"
  # A hung rank must not hold the machine: the whole mpirun run is bounded (MPI_TIMEOUT seconds, default 600), and an
  # mpirun that does not end on the bound's SIGTERM (waiting for a rank that does not end, say) is killed 20 s later.
  timeout -k 20 "${MPI_TIMEOUT:-600}" mpirun "${nccl4j_mpi_root[@]}" --bind-to none --tag-output \
      --output-filename "$log_dir/ranks" "${share_opts[@]}" -np "$np" "${nccl4j_mpi_fwd[@]}" "$rank_script" 2>&1 \
      | tee "$log_dir/multi.log"
  status=${PIPESTATUS[0]}
  if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    # what outlived the bound (ranks mpirun could not end: their command line names the console launcher), listed
    # for the log and then killed, so that nothing holds the machine
    pids=$(pgrep -d, -f -- "$console" || true)
    : > "$log_dir/left.txt"
    [ -n "$pids" ] && ps -o pid=,ppid=,stat=,etime=,args= -p "$pids" > "$log_dir/left.txt"
    left=$(wc -l < "$log_dir/left.txt")
    echo "$tool: the mpirun run outlived MPI_TIMEOUT=${MPI_TIMEOUT:-600} s; rank processes left then: $left" \
      "(listed in $log_dir/left.txt$([ "$left" -gt 0 ] && echo ', then killed'))"
    # shellcheck disable=SC2086  # the pids, one word each
    [ -n "$pids" ] && kill -KILL ${pids//,/ } 2> /dev/null
  fi
  count "$log_dir/multi.log"
  status_of mpirun "$status" $?
  logs+=("$log_dir/multi.log")
  echo "== logs: $log_dir (single.log; multi.log, and ranks/1/rank.N/ for each rank's own)"
else
  echo "== multi-process GPU tests skipped: NP=$np (they need 2 ranks or more)"
  echo "== logs: $log_dir (single.log)"
fi

echo "$passed passed, $failures failed, $skipped skipped"
# One line per cause, in order of first appearance, summed over the runs and ranks. An entry named like a Java class
# (CoreGpuTest) is a class skipped or aborted as a whole, whose tests the tree does not list; any other (a method
# "name()", or a dynamic test's display name, which holds spaces) is a test.
skips "${logs[@]}" | awk -F '\t' '
  { kind = ($1 ~ /^[A-Za-z_$][A-Za-z0-9_$]*$/) ? "c" : "t"; r = ($2 == "") ? "(no reason given)" : $2
    if (!(r in seen)) { seen[r] = 1; order[++n] = r }
    count[r, kind]++ }
  END {
    for (i = 1; i <= n; i++) {
      r = order[i]; t = count[r, "t"] + 0; c = count[r, "c"] + 0; s = ""
      if (t) s = t (t == 1 ? " test" : " tests")
      if (c) s = s (s == "" ? "" : ", ") c (c == 1 ? " class" : " classes")
      print "skipped: " r " (" s ")"
    }
  }'
parts=()
[ "$aborted" -gt 0 ] && parts+=("$aborted aborted (an assumption failed)")
[ "$unstarted" -gt 0 ] && parts+=("$unstarted never started (their class was aborted or failed)")
if [ ${#parts[@]} -gt 0 ]; then
  printf '%s: of the %s skipped, %s\n' "$tool" "$skipped" "${parts[0]}${parts[1]:+, ${parts[1]}}"
fi
if [ "$containers_failed" -gt 0 ]; then
  echo "$tool: of the $failures failed, $containers_failed are classes or engines that failed as a whole (see Failures in the logs)"
fi
if [ $((passed + tests_failed)) = 0 ]; then
  if [ "$summaries" = 0 ]; then
    why="the JUnit console launcher printed no summary (see the logs above)"
  elif [ "$found" = 0 ]; then
    why="no test found (tags gpu and multiprocess in $bundle/lib/nccl4j-*-tests.jar${TESTS:+, TESTS=$TESTS})"
  elif [ "$containers_failed" -gt 0 ]; then
    why="every test skipped or in a class that failed: causes above"
  else
    why="every test skipped: causes above"
  fi
  echo "$tool: no test ran: $why"
  exit 1
fi
[ "$failures" = 0 ] && [ "$passed" -gt 0 ]
