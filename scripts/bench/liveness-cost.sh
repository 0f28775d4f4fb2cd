#!/usr/bin/env bash
# liveness-cost.sh: what the liveness channel costs a job on either side of a change (issue 27: before and after the
# job secret's authentication), on one GPU machine: the heartbeat's CPU and how soon a lost rank is known, in
# alternating rounds, each round's figures and the medians.
#
#   scripts/bench/liveness-cost.sh BUNDLE BEFORE [AFTER]
#
#   BUNDLE  a bundle made by scripts/gpu-bundle.sh: the JRE and the jars both sides run with
#   BEFORE  the before side: a bundle (a directory with jre/bin/java), run as it is, or a directory of nccl4j jars
#           (one nccl4j-core-*.jar, nccl4j-examples-*.jar, nccl4j-native-*.jar and nccl4j-tools-*.jar, the last with
#           the harness), which replace BUNDLE's own in a copy of BUNDLE made under TMPDIR for this run (removed at
#           its end)
#   AFTER   the after side, the same way (default: BUNDLE as it is)
#   e.g., on a 4-GPU machine, with bundle/, bundle-before-lib/ and bundle-after-lib/ carried:
#   OUT_DIR=/tmp/lc scripts/bench/liveness-cost.sh bundle bundle-before-lib bundle-after-lib
#
# Each of ROUNDS rounds (default 2) runs the before side, then the after side; a side's run is
#   heartbeat CPU  SIZE ranks (default 4; 2 or 4, one per GPU) of plain java with RANK, WORLD_SIZE, LOCAL_RANK,
#                  MASTER_ADDR=127.0.0.1, MASTER_PORT and NCCL_NVLS_ENABLE=0, as departures.sh's java launcher starts
#                  them, running org.nccl4j.tools.harness.DepartureScenarios none --steps HB_STEPS --step 1 --sleep-ms
#                  HB_SLEEP_MS (default 50) --count HB_COUNT (default 1024): per step a checked all-reduce and a
#                  sleep, so the process is mostly idle. HB_SETTLE s (default 5) after every rank's START line, and
#                  HB_WINDOW s (default 20) later, scripts/bench/liveness_cost.py reads every thread of every rank from
#                  /proc (CPU time: schedstat; the liveness threads: those named nccl4j-liveness*) and each process's
#                  utime + stime. HB_STEPS (default: enough for HB_SETTLE + HB_WINDOW + 3 s) ends the job soon after
#                  the second look; the job is killed if it runs 30 s past the time its steps take
#   lost-rank notice  this checkout's scripts/departures.sh on the side's bundle with SCENARIOS="kill stop"
#                  LAUNCHERS=java CONFIGS=<SIZE>gpu STEPS=DEP_STEPS (default 4) ROW_LIMIT (default 30): the time from
#                  the last rank's SIGKILL (SIGSTOP) to each other rank's end
# Then liveness_cost.py writes OUT_DIR/liveness-cost.md, printed at the end: the machine, the command, the sides' jars,
# a summary (per measure: the medians over the rounds, after - before, the rounds' spread), each round's figures and
# the details; OUT_DIR/liveness-cost.tsv holds every figure. A run takes about 55 s: 4 minutes for ROUNDS=2.
#
# Every rank gets NCCL4J_JOB_SECRET, a random secret made for this run (as nccl4j-run gives one), unless
# NCCL4J_JOB_SECRET or NCCL4J_JOB_SECRET_FILE is set (then kept); SECRET=0: neither reaches the ranks (the after side
# then runs unauthenticated). Code from before the secret ignores it. The sides are checked first: the after side's
# nccl4j-core jar must hold org/nccl4j/launch/JobSecret.class, the before side's must not, and their jars must differ
# (CHECK_SIDES=0 skips this, to compare other builds).
#
# Other variables: OUT_DIR (default: a new temporary directory) receives the report, runs.tsv, meta.tsv and per run
# a directory r<round>-<side>/ (heartbeat/: each rank's log, pid, exit status and the two samples; departures/:
# departures.sh's OUT_DIR; departures.log: its output); PORT (default 21000): run k (1, 2, ...) gives departures.sh
# PORT + 1000 k and the heartbeat job MASTER_PORT PORT + 1000 k + 500; START_LIMIT (default 120): seconds for every
# rank's START line; JAVA_OPTS (every JVM, split at white space); PYTHON (default python3, 3.8 or newer); TMPDIR.
# departures.sh's EVENT_STEP, EVENT_RANK, COUNT and NCCL4J_LIVENESS_TIMEOUT reach it from the environment.
#
# Exit status: 0 when every run gave its figures and every departures row ended within its bound, 1 otherwise (the
# report's Problems say what), 2 for a usage error or a refusal (fewer GPUs than SIZE, a side that is not what it
# should be). SIGTERM or SIGINT ends this run's processes first (143).
set -uo pipefail
tool=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
scripts=$(cd "$here/.." && pwd)
[ -f "$scripts/env.sh" ] || { echo "$tool: $scripts/env.sh is missing" >&2; exit 2; }
# shellcheck source=../env.sh
. "$scripts/env.sh"
main=org.nccl4j.tools.harness.DepartureScenarios
departures=$scripts/departures.sh
helper=$here/liveness_cost.py

die() { echo "$tool: $*" >&2; exit 2; }
now_ms() { date +%s%3N; }
# pause SECONDS: sleep in the background, so that SIGTERM or SIGINT ends the wait at once
pause_pid=""
pause() { sleep "$1" & pause_pid=$!; wait "$pause_pid"; pause_pid=""; }
whole() { [[ $2 =~ ^[0-9]+$ ]] || die "$1=$2 is not a whole number"; }
usage="usage: $tool BUNDLE BEFORE [AFTER] (--help)"

case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  -*) die "unknown option $1; $usage" ;;
esac
if [ $# -lt 2 ] || [ $# -gt 3 ]; then die "$usage"; fi
command_line=$(printf '%q ' "$0" "$@")
command_line=${command_line% }

# ---------------------------------------------------------------- settings

rounds=${ROUNDS:-2}
whole ROUNDS "$rounds"
[ "$rounds" -ge 1 ] || die "ROUNDS=$rounds: 1 or more"
size=${SIZE:-4}
case "$size" in 2|4) ;; *) die "SIZE=$size: 2 or 4 ranks (departures.sh's configs 2gpu and 4gpu)" ;; esac
hb_settle=${HB_SETTLE:-5}
whole HB_SETTLE "$hb_settle"
hb_window=${HB_WINDOW:-20}
whole HB_WINDOW "$hb_window"
[ "$hb_window" -ge 1 ] || die "HB_WINDOW=$hb_window: 1 s or more"
hb_sleep=${HB_SLEEP_MS:-50}
whole HB_SLEEP_MS "$hb_sleep"
[ "$hb_sleep" -ge 1 ] || die "HB_SLEEP_MS=$hb_sleep: 1 ms or more"
hb_count=${HB_COUNT:-1024}
whole HB_COUNT "$hb_count"
[ "$hb_count" -ge 2 ] || die "HB_COUNT=$hb_count: 2 floats or more"
hb_steps=${HB_STEPS:-$(( ((hb_settle + hb_window + 3) * 1000 + hb_sleep - 1) / hb_sleep ))}
whole HB_STEPS "$hb_steps"
[ "$hb_steps" -ge 1 ] || die "HB_STEPS=$hb_steps: 1 or more"
dep_steps=${DEP_STEPS:-4}
whole DEP_STEPS "$dep_steps"
[ "$dep_steps" -ge "${EVENT_STEP:-3}" ] || die "DEP_STEPS=$dep_steps: at least EVENT_STEP (${EVENT_STEP:-3})"
row_limit=${ROW_LIMIT:-30}
whole ROW_LIMIT "$row_limit"
[ "$row_limit" -ge 5 ] || die "ROW_LIMIT=$row_limit: give a row 5 s or more"
start_limit=${START_LIMIT:-120}
whole START_LIMIT "$start_limit"
base_port=${PORT:-21000}
whole PORT "$base_port"
last_port=$((base_port + 1000 * 2 * rounds + 700))
if [ "$base_port" -lt 1024 ] || [ "$last_port" -gt 65535 ]; then
  die "PORT=$base_port: the runs use ports $((base_port + 1000))..$last_port, which must lie in 1024..65535"
fi
secret=${SECRET:-1}
case "$secret" in 0|1) ;; *) die "SECRET=$secret: 1 (default) gives the ranks a job secret, 0 none" ;; esac
check_sides=${CHECK_SIDES:-1}
case "$check_sides" in 0|1) ;; *) die "CHECK_SIDES=$check_sides: 1 (default) checks the sides' jars, 0 not" ;; esac
py=${PYTHON:-python3}
"$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 8) else 1)' > /dev/null 2>&1 \
  || die "no Python 3.8 or newer at '$py' (set PYTHON)"
[ -f "$helper" ] || die "$helper is missing"
[ -x "$departures" ] || die "$departures is missing or not executable"

bundle=$(nccl4j_bundle_dir "$tool" "$1") || exit 2
gpus=$(nccl4j_gpu_count "$tool") || exit 2
[ "$gpus" -ge "$size" ] || die "SIZE=$size needs $size GPUs (one rank per GPU), and this machine has $gpus" \
  "(${CUDA_VISIBLE_DEVICES+CUDA_VISIBLE_DEVICES=}${CUDA_VISIBLE_DEVICES-nvidia-smi -L}): run with SIZE=2 or on a" \
  "machine with $size GPUs"

out_dir=${OUT_DIR:-$(mktemp -d)}
case "$out_dir" in
  *[[:space:]]*) die "OUT_DIR=$out_dir holds white space, which JAVA_OPTS cannot carry: choose another" ;;
esac
mkdir -p "$out_dir" || die "cannot create OUT_DIR=$out_dir"
out_dir=$(cd "$out_dir" && pwd)
tmp_root=$(mktemp -d "${TMPDIR:-/tmp}/liveness-cost.XXXXXX") || die "cannot create a directory under ${TMPDIR:-/tmp}"
trap 'rm -rf "$tmp_root"' EXIT

# ---------------------------------------------------------------- the sides

# jar_in DIR NAME: the one nccl4j-NAME-*.jar of DIR that is not a -tests, -sources, -javadoc or platform jar
jar_in() {
  local j found=()
  for j in "$1"/nccl4j-"$2"-*.jar; do
    case "$j" in *-tests.jar|*-sources.jar|*-javadoc.jar|*-linux-x86_64.jar) ;; *) [ -f "$j" ] && found+=("$j") ;; esac
  done
  [ ${#found[@]} = 1 ] || return 1
  echo "${found[0]}"
}

declare -A side_dir=() side_info=() side_arg=()
# prepare_side NAME ARG: side_dir[NAME] is ARG when it is a bundle, else a copy of BUNDLE with ARG's nccl4j jars
prepare_side() {
  local name=$1 arg=$2 lib n j
  side_arg[$name]=$arg
  if [ -x "$arg/jre/bin/java" ]; then
    side_dir[$name]=$(cd "$arg" && pwd)
    return 0
  fi
  [ -d "$arg" ] || die "$name: $arg is neither a bundle (jre/bin/java) nor a directory of nccl4j jars"
  lib=$(cd "$arg" && pwd)
  for n in core examples native tools; do
    jar_in "$lib" "$n" > /dev/null || die "$name: $lib holds no single nccl4j-$n-*.jar (it needs nccl4j-core," \
      "nccl4j-examples, nccl4j-native and nccl4j-tools, one of each)"
  done
  cp -a "$bundle" "$tmp_root/$name" || die "$name: cannot copy $bundle to $tmp_root/$name"
  for j in "$tmp_root/$name"/lib/nccl4j-core-*.jar "$tmp_root/$name"/lib/nccl4j-examples-*.jar \
      "$tmp_root/$name"/lib/nccl4j-native-*.jar "$tmp_root/$name"/lib/nccl4j-tools-*.jar; do
    case "$j" in *-tests.jar) ;; *) rm -f "$j" ;; esac
  done
  for n in core examples native tools; do
    cp "$(jar_in "$lib" "$n")" "$tmp_root/$name/lib/" || die "$name: cannot copy"
  done
  side_dir[$name]=$tmp_root/$name
}

prepare_side before "$2"
if [ $# = 3 ]; then prepare_side after "$3"; else side_dir[after]=$bundle; fi
for s in before after; do
  side_info[$s]=$("$py" "$helper" side "${side_dir[$s]}") || die "$s: the jars of ${side_dir[$s]} cannot be read"
done
if [ "$check_sides" = 1 ]; then
  case "${side_info[after]}" in
    auth=yes*) ;;
    *) die "the after side (${side_dir[after]}) has no job secret: its nccl4j-core jar holds no" \
         "org/nccl4j/launch/JobSecret.class, so it was built before the authentication (a bundle made before commit" \
         "0cbe747?): give AFTER, a directory of the jars built from the commit to measure, or CHECK_SIDES=0" ;;
  esac
  case "${side_info[before]}" in
    auth=no*) ;;
    *) die "the before side (${side_dir[before]}) has the job secret already (org/nccl4j/launch/JobSecret.class):" \
         "give BEFORE, the jars built from before the authentication (37d34d2), or CHECK_SIDES=0" ;;
  esac
  [ "${side_info[before]#* }" != "${side_info[after]#* }" ] \
    || die "the before and after sides have the same jars (${side_info[after]}): nothing to compare"
fi

if [ "$secret" = 1 ]; then
  if [ -n "${NCCL4J_JOB_SECRET:-}" ] || [ -n "${NCCL4J_JOB_SECRET_FILE:-}" ]; then
    secret_note="NCCL4J_JOB_SECRET${NCCL4J_JOB_SECRET_FILE:+_FILE} as set by the caller, for both sides"
  else
    NCCL4J_JOB_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
    [ ${#NCCL4J_JOB_SECRET} = 64 ] || die "cannot read 32 random bytes from /dev/urandom"
    export NCCL4J_JOB_SECRET
    secret_note="NCCL4J_JOB_SECRET set to a random 64-hex-digit value for both sides (code from before the"
    secret_note+=" secret ignores it)"
  fi
else
  unset NCCL4J_JOB_SECRET NCCL4J_JOB_SECRET_FILE
  secret_note="none (SECRET=0): the after side runs unauthenticated"
fi
export NCCL_NVLS_ENABLE=0   # as departures.sh: NVLink multicast stays off on the shared machines
ld=$(nccl4j_cuda_libs --reverse --print)   # departures.sh's java ranks get the same

# ---------------------------------------------------------------- the machine

{
  printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
  printf 'host\t%s\n' "$(hostname 2> /dev/null || echo '?')"
  printf 'command\t%s\n' "$command_line"
  printf 'variables\tROUNDS=%s SIZE=%s HB_SETTLE=%s HB_WINDOW=%s HB_SLEEP_MS=%s HB_COUNT=%s HB_STEPS=%s DEP_STEPS=%s' \
    "$rounds" "$size" "$hb_settle" "$hb_window" "$hb_sleep" "$hb_count" "$hb_steps" "$dep_steps"
  printf ' ROW_LIMIT=%s PORT=%s SECRET=%s CHECK_SIDES=%s JAVA_OPTS=%s\n' "$row_limit" "$base_port" "$secret" \
    "$check_sides" "${JAVA_OPTS:-}"
  if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
    nvidia-smi -L 2> /dev/null | grep '^GPU' | sed 's/ (UUID: [^)]*)//; s/^/gpu\t/'
  else
    printf 'gpu\t%s GPU(s) (CUDA_VISIBLE_DEVICES=%s; no nvidia-smi -L)\n' "$gpus" "${CUDA_VISIBLE_DEVICES-unset}"
  fi
  printf 'cpu\t%s, %s logical CPUs\n' "$(grep -m1 '^model name' /proc/cpuinfo 2> /dev/null | sed 's/^[^:]*: *//')" \
    "$(nproc 2> /dev/null || echo '?')"
  printf 'kernel\t%s\n' "$(uname -r)"
  printf 'java\t%s\n' "$("${side_dir[after]}/jre/bin/java" -version 2>&1 | head -1)"
  for s in before after; do
    d=${side_dir[$s]}
    [ "$d" = "$tmp_root/$s" ] && d="a copy of $bundle with the nccl4j jars of ${side_arg[$s]}"
    printf '%s\t%s: %s\n' "$s" "$d" "${side_info[$s]}"
  done
  printf 'secret\t%s\n' "$secret_note"
  printf 'size\t%s\nconfig\t%sgpu\n' "$size" "$size"
  printf 'hb_steps\t%s\nhb_sleep_ms\t%s\nhb_count\t%s\nhb_settle\t%s\nhb_window\t%s\n' "$hb_steps" "$hb_sleep" \
    "$hb_count" "$hb_settle" "$hb_window"
} > "$out_dir/meta.tsv"

# ---------------------------------------------------------------- one run

run_id=lc$$
hb_dir=""
dep_pid=""

# stop_job DIR: the heartbeat job's ranks in DIR (their pid files) and any process with its marker, killed
stop_job() {
  local f p
  for f in "$1"/pid*; do
    [ -f "$f" ] || continue
    p=$(cat "$f")
    [ -n "$p" ] && kill -KILL "$p" 2> /dev/null
  done
  # shellcheck disable=SC2046  # one pid per word
  kill -KILL $(pgrep -f -- "-Dnccl4j\\.row=${run_id}h[0-9]+( |\$)" 2> /dev/null) 2> /dev/null
  return 0
}

on_signal() {
  trap - TERM INT
  echo "$tool: stopped by a signal: ending this run's processes" >&2
  [ -n "$pause_pid" ] && kill "$pause_pid" 2> /dev/null
  [ -n "$hb_dir" ] && stop_job "$hb_dir"
  if [ -n "$dep_pid" ]; then
    kill -TERM "$dep_pid" 2> /dev/null
    wait "$dep_pid" 2> /dev/null
  fi
  exit 143
}
trap on_signal TERM INT

# problem TEXT...: one line of what went wrong in the heartbeat job in progress
problem() { echo "$*" >> "$hb_dir/problem"; }

# heartbeat SIDE_BUNDLE DIR PORT ID: the heartbeat job; what went wrong goes to DIR/problem, one line each
heartbeat() {
  local b=$1 dir=$2 port=$3 id=$4 r
  rm -rf "$dir"
  mkdir -p "$dir/traces"
  hb_dir=$dir
  local java=$b/jre/bin/java cp
  cp=$(nccl4j_classpath "$b")
  local jvm=(-XX:ErrorFile="$dir/hs_err_%p.log" -Dnccl4j.row="$id")
  # shellcheck disable=SC2206  # JAVA_OPTS holds several options, split on white space as the other scripts do
  jvm+=(${JAVA_OPTS:-})
  local job_env=(NCCL4J_TRACE_DIR="$dir/traces" NCCL_NVLS_ENABLE=0)
  [ -n "$ld" ] && job_env+=(LD_LIBRARY_PATH="$ld")
  for ((r = 0; r < size; r++)); do
    ( env "${job_env[@]}" RANK="$r" WORLD_SIZE="$size" LOCAL_RANK="$r" LOCAL_WORLD_SIZE="$size" \
        MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" "$java" "${jvm[@]}" -cp "$cp" "$main" none --steps "$hb_steps" \
        --step 1 --sleep-ms "$hb_sleep" --count "$hb_count" > "$dir/rank$r.log" 2>&1 &
      echo $! > "$dir/pid$r.tmp" && mv "$dir/pid$r.tmp" "$dir/pid$r"
      wait $! 2> /dev/null
      echo "$? $(now_ms)" > "$dir/exit$r" ) &
  done
  local t0 n ended pairs=() started_ms
  t0=$(now_ms)
  # every rank's START line (the communicator is made), or a rank's end, or START_LIMIT
  while :; do
    n=$(cat "$dir"/rank*.log 2> /dev/null | grep -ac '^START rank=')
    [ "$n" -ge "$size" ] && break
    ended=$(find "$dir" -maxdepth 1 -name 'exit*' | wc -l)
    if [ "$ended" -gt 0 ]; then
      sleep 1
      problem "a rank ended before every rank had started ($n of $size START lines):" \
        "$(grep -ahv '^ENV ' "$dir"/rank*.log 2> /dev/null | grep -aiE 'exception|error|refus' | head -1 | cut -c1-200)"
      stop_job "$dir"; wait; return 1
    fi
    if [ $(($(now_ms) - t0)) -ge $((start_limit * 1000)) ]; then
      problem "only $n of $size ranks printed START within START_LIMIT=$start_limit s"
      stop_job "$dir"; wait; return 1
    fi
    sleep 0.1
  done
  started_ms=$(now_ms)
  for ((r = 0; r < size; r++)); do
    for ((n = 0; n < 100; n++)); do [ -s "$dir/pid$r" ] && break; sleep 0.05; done
    pairs+=("$r:$(cat "$dir/pid$r")")
  done
  pause "$hb_settle"
  "$py" "$helper" sample "$dir/sample1.json" "${pairs[@]}" || problem "the first sample failed"
  pause "$hb_window"
  "$py" "$helper" sample "$dir/sample2.json" "${pairs[@]}" || problem "the second sample failed"
  # the job's end: its steps, then the close; killed when it runs 30 s past the time its steps take
  local deadline=$((started_ms + hb_steps * hb_sleep + 30000)) all killed=0
  while :; do
    all=1
    for ((r = 0; r < size; r++)); do [ -e "$dir/exit$r" ] || all=0; done
    [ "$all" = 1 ] && break
    if [ "$(now_ms)" -ge "$deadline" ]; then
      problem "still running $(( (deadline - started_ms) / 1000 )) s after the START lines: killed"
      stop_job "$dir"
      killed=1
      break
    fi
    sleep 0.2
  done
  wait
  local st
  for ((r = 0; r < size && killed == 0; r++)); do
    read -r st _ < "$dir/exit$r" 2> /dev/null || st="?"
    [ "$st" = 0 ] || problem "rank $r exited with status $st"
  done
  [ -z "$(find "$dir" -maxdepth 1 -name 'hs_err_*.log')" ] || problem "hs_err files: a JVM crashed"
  [ ! -s "$dir/problem" ]
}

# departures_run SIDE_BUNDLE DIR PORT: departures.sh's kill and stop rows; sets dep_status
departures_run() {
  local b=$1 dir=$2 port=$3
  rm -rf "$dir/departures"
  env OUT_DIR="$dir/departures" SCENARIOS="kill stop" LAUNCHERS=java CONFIGS="${size}gpu" STEPS="$dep_steps" \
    ROW_LIMIT="$row_limit" PORT="$port" FUZZ=0 TORCH=0 BUDGET=0 "$departures" "$b" > "$dir/departures.log" 2>&1 &
  dep_pid=$!
  wait "$dep_pid"
  dep_status=$?
  dep_pid=""
}

# ---------------------------------------------------------------- the rounds

runs=$out_dir/runs.tsv
: > "$runs"
total=$((2 * rounds))
echo "== $rounds round(s) x (before, after), $size ranks: about $((total * 55)) s; OUT_DIR=$out_dir"
for s in before after; do echo "   $s: ${side_dir[$s]}: ${side_info[$s]}"; done
[ -r "/proc/$$/task/$$/schedstat" ] || echo "$tool: warning: this kernel has no /proc/PID/task/TID/schedstat: the" \
  "threads' CPU times will be utime + stime in clock ticks, too coarse for the liveness threads" >&2
k=0
t_start=$(date +%s)
for ((round = 1; round <= rounds; round++)); do
  for s in before after; do
    k=$((k + 1))
    rel=r$round-$s
    dir=$out_dir/$rel
    mkdir -p "$dir"
    t_run=$(date +%s)
    heartbeat "${side_dir[$s]}" "$dir/heartbeat" $((base_port + 1000 * k + 500)) "${run_id}h$k"
    hb_note=$(awk 'NR > 1 { printf "; " } { gsub(/\t/, " "); printf "%s", $0 }' "$dir/heartbeat/problem" 2> /dev/null)
    hb_dir=""
    departures_run "${side_dir[$s]}" "$dir" $((base_port + 1000 * k))
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$s" "$rel/heartbeat" "$hb_note" "$rel/departures" "$dep_status" \
      >> "$runs"
    summary=$(grep -a '^departures: ' "$dir/departures.log" | tail -1)
    echo "[$k/$total] round $round $s: heartbeat ${hb_note:-ok}; ${summary:-departures.sh: no summary line (exit" \
      "$dep_status, see $dir/departures.log)}; $(($(date +%s) - t_run)) s"
  done
done
echo "== the runs took $(($(date +%s) - t_start)) s"
"$py" "$helper" report "$out_dir"
status=$?
echo "report: $out_dir/liveness-cost.md"
[ "$status" = 0 ]   # 0, else 1
