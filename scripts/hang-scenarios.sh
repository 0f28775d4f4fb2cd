#!/usr/bin/env bash
# hang-scenarios.sh: the watchdog's failure scenarios on a GPU machine, with and without a launcher, each
# checked by the program itself (org.nccl4j.tools.harness.HangScenarios exits 0 when the watchdog did what it promises),
# followed by scripts/nccl4j-trace over the ranks' traces and a check that no rank is left running.
#
#   scripts/hang-scenarios.sh [BUNDLE]       BUNDLE: a directory made by scripts/gpu-bundle.sh (default: bundle/)
#
# Two ranks share the GPUs when there are fewer than two (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo).
# Environment: LOG_DIR (default: a new temporary directory) receives one directory per case with each rank's
# output and traces; NCCL4J_TIMEOUT (default 10s); SCENARIOS, a ';'-separated subset of the case names below;
# CASE_TIMEOUT (default 90), the seconds after which a case's processes are killed as hung.
# Prints one line per case (PASSED/FAILED, the exit statuses, seconds) and exits 0 when every case passed.
set -uo pipefail
[ -f "$(dirname "$0")/env.sh" ] || { echo "${0##*/}: $(dirname "$0")/env.sh is missing" >&2; exit 2; }
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
tool=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
bundle=$(nccl4j_bundle_dir "$tool" "${1:-$here/../bundle}") || exit 2
gpus=$(nccl4j_gpu_count "$tool") || exit 2
log_dir=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
export NCCL4J_TIMEOUT=${NCCL4J_TIMEOUT:-10s}
nccl4j_cuda_libs --reverse
java="$bundle/jre/bin/java"
cp=$(nccl4j_classpath "$bundle")
main=org.nccl4j.tools.harness.HangScenarios
limit=${CASE_TIMEOUT:-90}   # seconds a case may take before its processes are killed (status 137): a hang
share=()
[ "$gpus" -lt 2 ] && share=(--share-gpu)
port=29600

# plain_java DIR SCENARIO: two ranks as two java processes, no launcher; waits for both; prints their statuses
plain_java() {
  local dir=$1 scenario=$2 r pids=() st=()
  port=$((port + 1))
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    NCCL_HOSTID=${NCCL_HOSTID:-nccl4j-host$r} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} \
      timeout -s KILL "$limit" "$java" -cp "$cp" "$main" "$scenario" > "$dir/rank$r.log" 2>&1 &
    pids+=($!)
  done
  for r in 0 1; do wait "${pids[$r]}"; st+=($?); done
  echo "${st[*]}"
}

# plain_java_stop DIR: as plain_java with the stop scenario; rank 1 stops itself, so once rank 0 has ended it is
# killed here; prints rank 0's status and "stopped" when rank 1 was still there (stopped) to be killed
plain_java_stop() {
  local dir=$1 r pids=() st0 state
  port=$((port + 1))
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    NCCL_HOSTID=${NCCL_HOSTID:-nccl4j-host$r} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} \
      timeout -s KILL "$limit" "$java" -cp "$cp" "$main" stop > "$dir/rank$r.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[0]}"; st0=$?
  state=$(ps -o stat= -p "$(pgrep -P "${pids[1]}" java || echo "${pids[1]}")" 2> /dev/null | cut -c1)
  pkill -KILL -P "${pids[1]}" 2> /dev/null; kill -KILL "${pids[1]}" 2> /dev/null; wait "${pids[1]}" 2> /dev/null
  [ "$state" = T ] && echo "$st0 stopped" || echo "$st0 not-stopped($state)"
}

# init_missing DIR ROUTE: ranks 0 and 1 of a world of 3 as plain java processes, rank 2 never started; ROUTE tcp
# (MASTER_ADDR: the rendezvous names it), file (NCCL4J_RENDEZVOUS_FILE: the arrival markers name it) or commid
# (NCCL_COMM_ID, as under mpirun: the liveness roster names it);
# NCCL4J_INIT_TIMEOUT=10s; prints both statuses
init_missing() {
  local dir=$1 route=$2 r pids=() st=()
  port=$((port + 1))
  for r in 0 1; do
    if [ "$route" = tcp ]; then
      env RANK=$r WORLD_SIZE=3 LOCAL_RANK=$r LOCAL_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        NCCL4J_INIT_TIMEOUT=10s NCCL_HOSTID=nccl4j-host$r NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}" \
        timeout -s KILL "$limit" "$java" -cp "$cp" "$main" init > "$dir/rank$r.log" 2>&1 &
    elif [ "$route" = file ]; then
      env RANK=$r WORLD_SIZE=3 LOCAL_RANK=$r LOCAL_WORLD_SIZE=3 NCCL4J_RENDEZVOUS_FILE="$dir/id" \
        NCCL4J_RUN_ID=init-$port NCCL4J_INIT_TIMEOUT=10s NCCL_HOSTID=nccl4j-host$r \
        NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}" \
        timeout -s KILL "$limit" "$java" -cp "$cp" "$main" init > "$dir/rank$r.log" 2>&1 &
    else
      env RANK=$r WORLD_SIZE=3 LOCAL_RANK=$r LOCAL_WORLD_SIZE=3 NCCL_COMM_ID=127.0.0.1:$((port + 300)) \
        NCCL4J_INIT_TIMEOUT=10s NCCL_HOSTID=nccl4j-host$r NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}" \
        timeout -s KILL "$limit" "$java" -cp "$cp" "$main" init > "$dir/rank$r.log" 2>&1 &
    fi
    pids+=($!)
  done
  for r in 0 1; do wait "${pids[$r]}"; st+=($?); done
  echo "${st[*]}"
}

# under_mpirun DIR NP CLASS ARGS...: NP ranks under Open MPI's mpirun sharing the GPU, NCCL_COMM_ID for the id (no
# MASTER_ADDR: the liveness channel and recovery find rank 0 through it); prints mpirun's status
under_mpirun() {
  local dir=$1 np=$2 cls=$3
  shift 3
  port=$((port + 1))
  # shellcheck disable=SC2016,SC2086  # MPIRUN_OPTS holds several options; each rank's shell expands its own rank
  timeout -s KILL "$limit" mpirun --allow-run-as-root --bind-to none --tag-output ${MPIRUN_OPTS:-} -np "$np" \
    -x NCCL_COMM_ID=127.0.0.1:$((port + 300)) -x NCCL_SOCKET_IFNAME=lo -x NCCL_NVLS_ENABLE -x NCCL4J_TIMEOUT \
    -x NCCL4J_TRACE_DIR -x LD_LIBRARY_PATH \
    sh -c 'NCCL_HOSTID=nccl4j-host$OMPI_COMM_WORLD_RANK exec "$@"' sh "$java" -cp "$cp" "$cls" "$@" \
    > "$dir/run.log" 2>&1
  echo $?
}

# launched DIR SCENARIO [NP]: NP (default 2) ranks under scripts/nccl4j-run; prints its status
launched() {
  local np=${3:-2} sharing=("${share[@]}")
  [ "$gpus" -lt "$np" ] && sharing=(--share-gpu)
  timeout -s KILL "$limit" "$bundle/nccl4j-run" "${sharing[@]}" -np "$np" "$scenario_class" "$2" > "$1/run.log" 2>&1
  echo $?
}
scenario_class=HangScenarios

# leftovers: a rank still running 5 s after its case ended is a failure of the case
leftovers() {
  local _
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    pgrep -f "$main" > /dev/null || { echo none; return; }
    sleep 0.5
  done
  pgrep -af "$main" | tr '\n' ';'
  pkill -9 -f "$main"
}

# excerpt DIR: under a failed case's verdict, each of its logs' error lines and last lines, so that the evidence
# comes back with the verdict where LOG_DIR does not (a GPU machine whose /tmp stays behind)
excerpt() {
  local f
  for f in "$1"/*.log; do
    [ -f "$f" ] || continue
    echo "        == ${f##*/}: its last ERROR, WARN and exception lines, then its last lines"
    grep -E 'ERROR|WARN|Exception' "$f" | grep -Ev '^(\[[0-9,]+\]<std(out|err)>:)?[[:space:]]+at ' | tail -n 12 \
      | sed 's/^/        | /'
    echo "        -- last lines"
    tail -n 5 "$f" | sed 's/^/        | /'
  done
}

npassed=0
nfailed=0
run_case() { # NAME EXPECTED_STATUSES COMMAND...
  local name=$1 expected=$2 dir="$log_dir/$1" t0 got left secs
  shift 2
  case ";${SCENARIOS:-$name};" in *";$name;"*) ;; *) return ;; esac
  mkdir -p "$dir"
  export NCCL4J_TRACE_DIR="$dir/traces"
  t0=$(date +%s.%N)
  got=$("$@" "$dir")
  secs=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
  left=$(leftovers)
  if [[ "$got" =~ ^$expected$ ]] && [ "$left" = none ]; then
    npassed=$((npassed + 1)); echo "PASSED  $name: exit $got, $secs s, no rank left running"
  else
    nfailed=$((nfailed + 1)); echo "FAILED  $name: exit $got (expected $expected), $secs s, left running: $left"
    excerpt "$dir"
  fi
  if [ -d "$dir/traces" ] && ls "$dir/traces"/nccl4j-trace-rank*.json > /dev/null 2>&1; then
    NCCL4J_BUNDLE=$bundle "$here/nccl4j-trace" "$dir/traces" > "$dir/analyzer.txt" 2>&1
    echo "        nccl4j-trace: exit $?: $(head -1 "$dir/analyzer.txt")"
  fi
}

skip_plain() { plain_java "$1" skip; }
skip_run() { launched "$1" skip; }
skip_3_ranks() { launched "$1" skip 3; }
skip_exit() { NCCL4J_ON_FAILURE='exit' plain_java "$1" skip; }
skip_timeout() { HANG_FINGERPRINT=off plain_java "$1" skip; }
kill_plain() { plain_java "$1" kill; }
kill_run() { launched "$1" kill; }
half_check() { NCCL4J_CHECK_COLLECTIVES=1 launched "$1" halfcount; }
half_nocheck() { NCCL4J_CHECK_COLLECTIVES=0 launched "$1" halfcount; }
# elastic DIR NP KILL: ElasticDdp under nccl4j-run --elastic, rank KILL lost at step 60; prints the launcher's
# status and whether every survivor printed the same crc32 of its weights
elastic() {
  local st crcs
  "$bundle/nccl4j-run" --elastic --share-gpu -np "$2" ElasticDdp --steps 200 --kill-rank "$3" --kill-step 60 \
      > "$1/run.log" 2>&1 &
  local pid=$! waited=0
  while kill -0 "$pid" 2> /dev/null && [ "$waited" -lt "$limit" ]; do sleep 1; waited=$((waited + 1)); done
  if kill -0 "$pid" 2> /dev/null; then
    # hung: each rank's JVM prints its threads on SIGQUIT (into run.log), then everything is killed
    pkill -QUIT -f org.nccl4j.examples.ElasticDdp; sleep 3
    pkill -KILL -f org.nccl4j.examples.ElasticDdp; kill -KILL "$pid" 2> /dev/null
  fi
  wait "$pid"
  st=$?
  crcs=$(grep -o 'final weights crc32 [0-9a-f]*' "$1/run.log" | sort -u | wc -l)
  [ "$(grep -c 'final weights crc32' "$1/run.log")" = $(($2 - 1)) ] && [ "$crcs" = 1 ] \
    && echo "$st same-crc" || echo "$st crc-differ"
}
# elastic_plain DIR: ElasticDdp as 3 plain java processes (no launcher), rank 1 lost at step 60
elastic_plain() {
  local dir=$1 r pids=() st=() crcs
  port=$((port + 1))
  for r in 0 1 2; do
    RANK=$r WORLD_SIZE=3 LOCAL_RANK=$r LOCAL_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    NCCL_HOSTID=nccl4j-host$r NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} \
      timeout -s KILL "$limit" "$java" -cp "$cp" org.nccl4j.examples.ElasticDdp --steps 200 --kill-rank 1 \
      --kill-step 60 > "$dir/rank$r.log" 2>&1 &
    pids+=($!)
  done
  for r in 0 1 2; do wait "${pids[$r]}"; st+=($?); done
  crcs=$(cat "$dir"/rank*.log | grep -o 'final weights crc32 [0-9a-f]*' | sort -u | wc -l)
  [ "$(cat "$dir"/rank*.log | grep -c 'final weights crc32')" = 2 ] && [ "$crcs" = 1 ] \
    && echo "${st[*]} same-crc" || echo "${st[*]} crc-differ"
}
# elastic_mpirun DIR: ElasticDdp on 3 ranks under mpirun --enable-recovery (a lost rank does not end the job)
elastic_mpirun() {
  local st crcs
  st=$(MPIRUN_OPTS=--enable-recovery under_mpirun "$1" 3 org.nccl4j.examples.ElasticDdp --steps 200 --kill-rank 1 \
    --kill-step 60)
  crcs=$(grep -o 'final weights crc32 [0-9a-f]*' "$1/run.log" | sort -u | wc -l)
  [ "$(grep -c 'final weights crc32' "$1/run.log")" = 2 ] && [ "$crcs" = 1 ] && echo "$st same-crc" \
    || echo "$st crc-differ"
}
stop_plain() { plain_java_stop "$1"; }
sendrecv_plain() { plain_java "$1" sendrecv; }
sendrecv_run() { launched "$1" sendrecv; }
init_tcp() { init_missing "$1" tcp; }
init_commid() { init_missing "$1" commid; }
init_file() { init_missing "$1" file; }
kill_mpirun() { under_mpirun "$1" 2 "$main" kill; }
elastic3() { elastic "$1" 3 1; }
elastic3_rank0() { elastic "$1" 3 0; }
elastic4() { elastic "$1" 4 2; }
cost() { NCCL4J_TIMEOUT=10m timeout -s KILL "$limit" "$java" -cp "$cp" "$main" cost > "$1/cost.txt" 2>&1; echo $?; }

# skip: both ranks exit 0 (each saw the promised mismatch, or with the fingerprint off the timeout, in both threads)
run_case skip-no-launcher '0 0' skip_plain
run_case skip-nccl4j-run '0' skip_run
run_case skip-3-ranks-nccl4j-run '0' skip_3_ranks
run_case skip-no-fingerprint-timeout '0 0' skip_timeout
# the exit policy: both ranks halt with status 70 after the log line and the trace
run_case skip-exit-policy '70 70' skip_exit
# kill: rank 0 exits 0 (a RemoteErrorException within 5 s); rank 1 dies of SIGKILL (137)
run_case kill-no-launcher '0 137' kill_plain
run_case kill-nccl4j-run '[0-9]+' kill_run
# stop: rank 1 freezes (SIGSTOP); rank 0 names it from the liveness heartbeats within 5 s and exits 0
run_case stop-no-launcher '0 stopped' stop_plain
# a kill during a group of send/recv: as kill
run_case sendrecv-kill-no-launcher '0 137' sendrecv_plain
run_case sendrecv-kill-nccl4j-run '[0-9]+' sendrecv_run
# under mpirun: no rank left running, whatever mpirun's status
run_case kill-mpirun '[0-9]+' kill_mpirun
# a rank never started: both started ranks throw naming it within NCCL4J_INIT_TIMEOUT (10 s) + 2 s
run_case init-missing-rank-tcp '0 0' init_tcp
run_case init-missing-rank-comm-id '0 0' init_commid
run_case init-missing-rank-file '0 0' init_file
run_case halfcount-check '0' half_check
run_case halfcount-no-check '0' half_nocheck
# a lost rank survived: the launcher goes on (--elastic), every survivor ends with the same weights
run_case elastic-3-ranks '0 same-crc' elastic3
run_case elastic-4-ranks '0 same-crc' elastic4
# rank 0 lost: the liveness channel's server is gone; every survivor sees it, the lowest remaining rank serves the
# recovery's rendezvous
run_case elastic-3-ranks-lose-rank-0 '0 same-crc' elastic3_rank0
run_case elastic-no-launcher '0 137 0 same-crc' elastic_plain
run_case elastic-mpirun '[0-9]+ same-crc' elastic_mpirun
run_case cost '0' cost
echo "$npassed passed, $nfailed failed (logs: $log_dir)"
[ "$nfailed" = 0 ]
