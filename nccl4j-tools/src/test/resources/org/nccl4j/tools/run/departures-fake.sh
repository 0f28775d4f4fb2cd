#!/usr/bin/env bash
# DeparturesScriptTest's stand-in for java, python3, mpirun and torchrun: what departures.sh starts, acting the
# scenarios of org.nccl4j.tools.harness.DepartureScenarios (and torch_departures.py) in a few hundred milliseconds, with
# the lines they print (START, EVENT, READY, CLOSING, RESULT, each in one write) and their exits:
#   java ... org.nccl4j.tools.harness.DepartureScenarios SCENARIO [--rank R] ...   one rank (RANK or OMPI_COMM_WORLD_RANK)
#   python3 -u torch_departures.py SCENARIO ... --log-dir DIR --row ID         the same, torch's way (stderr to DIR)
#   python3 -c CODE                                                           exits 0 (torch imports)
#   java ... org.nccl4j.tools.run.Launcher [--share-gpu] --port P -np N MAIN ARGS   nccl4j-run's launcher:
#               N ranks with RANK/WORLD_SIZE/..., lines prefixed "[r] ", the others SIGTERMed when one fails;
#               SIGTERM to it stops them all (status 143)
#   java ... org.nccl4j.tools.analyze.TraceAnalyzer DIR    prints "nccl4j-trace: fake verdict (N dumps)", exits 1
#   mpirun [--allow-run-as-root] [--bind-to X] [--tag-output] -np N [-x NAME[=V]]... CMD   N ranks at once, lines
#               tagged [1,r]<stdout>:, the others killed when one fails ("mpirun noticed that process rank ..."); a
#               rank's environment holds PATH, HOME, the -x variables, OMPI_COMM_WORLD_* and the FAKE_* controls
#               only, so that a variable the script does not forward does not reach it
#   torchrun --nnodes 1 --nproc_per_node N --master_addr A --master_port P --no_python CMD   N ranks at once, a
#               torchelastic-style failure summary (rank : r, exitcode : -9)
# What the ranks do is set by the test's variables:
#   FAKE_DETECT_MS   how long a rank other than the leaver takes to throw RemoteErrorException (default 300)
#   FAKE_HANG        1: the ranks other than the leaver never end (until killed)
#   FAKE_HS_ERR_RANK that rank writes an hs_err file where -XX:ErrorFile says and exits 134 instead of its RESULT
#   FAKE_LEFTOVER_RANK  that rank starts a process carrying the row's marker that outlives it by 30 s
#   FAKE_FUZZ_MS     fuzz: how long the steps take after READY (default 800); FAKE_FUZZ_CRASH=1: SIGTERM makes a
#                    rank write an hs_err file and exit 134; FAKE_WRONG_DATA=1: the rank not signalled ends with the
#                    step's check of a result that is not the sum
#   FAKE_PHASE_MS    startup-fuzz: how long each start-up phase lasts (default 100), after 100 ms of "JVM start"
#                    without a line; JOINED when joining ends. A rank whose peer ended with a nonzero status ends as
#                    nccl4j would: never (it waits until killed) when the peer was still in phase launched (before
#                    nccl4j), else by the peer's last PHASE line: nccl-init: nccl4j's ERROR line and the
#                    halt with status 70, other start-up phases: PeerLostDuringStartupException, later:
#                    PeerDepartedException (each FAKE_DETECT_MS after it noticed; its THROWN line, then its
#                    RESULT FAKE_CLOSE_MS later, default 200; FAKE_WRONG_DATA=1: instead of that exception, the
#                    step's check of a result that is not the sum, as DepartureScenarios says it; in a matrix row
#                    the ranks other than the leaver say the same instead of RemoteErrorException)
#   FAKE_NOT_PLACED  1: the rank of a start-up scenario says it was not placed and every rank runs without departure
#   FAKE_ARGS_DIR    the launchers (nccl4j-run's, mpirun, torchrun) write their arguments there, one a line, in
#                    launcher.args, mpirun.args, torchrun.args
# Each rank also prints "ENV rank=R NAME=VALUE..." with the variables the script sets for a row.
tool=$(basename "$0")
now() { date +%s%3N; }
say() { printf '%s\n' "$*"; }

# ms VARIABLE DEFAULT: the variable's milliseconds as seconds for sleep
ms() { awk -v m="${!1:-$2}" 'BEGIN { print m / 1000 }'; }

# wait_or_react MS: MS milliseconds in steps of 20, unless another rank (of np) ended with a nonzero status
# first: then this rank ends as nccl4j would, by that rank's last PHASE line (see FAKE_PHASE_MS)
wait_or_react() {
  local end=$(( $(now) + $1 )) st other_phase other
  while [ "$(now)" -lt "$end" ]; do
    for other in $others; do
      if [ -f "$d/exit$other" ] && read -r st _ < "$d/exit$other" && [ "$st" != 0 ]; then
        other_phase=$(grep -ao "^PHASE rank=$other t=[0-9]* [a-z-]*" "$d/rank$other.log" | tail -1 | sed 's/.* //')
        if [ "${other_phase:-launched}" = launched ] && ! grep -aq '^JOINFIRST ' "$d/rank$other.log"; then
          while :; do sleep 0.1; done   # it never reached nccl4j: nothing tells this rank (the init timeout)
        fi
        case "${other_phase:-launched}" in
          launched)   # it had joined first (JobLiveness.join())
            sleep "$(ms FAKE_DETECT_MS 300)"
            say "RESULT rank=$me t=$(now) PeerLostDuringStartupException: rank $me of $np: rank $other (fake, pid 1) was" \
              "lost before it joined the job (SIGTERM); the communicator was not made (the rendezvous ended)"
            exit 1 ;;
          nccl-init)
            sleep "$(ms FAKE_DETECT_MS 300)"
            echo "00:00:00.000 ERROR LeftBehindExit - nccl4j: rank $me of $np: rank $other (fake, pid 1) was lost during NCCL" \
              "initialization (SIGTERM); the communicator was not made (NCCL initialization could not be abandoned)." \
              "Restart the job (or let its launcher restart it), after fixing what ended rank $other; its thread" \
              "\"main\" is at org.nccl4j.jni.NcclNative.ncclCommInitRank(Native Method). Halting the process with" \
              "status 70 (NCCL4J_LEFT_BEHIND_EXIT=off leaves it waiting for the init timeout)" >&2
            exit 70 ;;
          joining|rendezvous|id-taken|set-device)
            sleep "$(ms FAKE_DETECT_MS 300)"
            say "RESULT rank=$me t=$(now) PeerLostDuringStartupException: rank $me of $np: rank $other (fake, pid 1) was" \
              "lost during the rendezvous (SIGTERM); the communicator was not made (the rendezvous ended)"
            exit 1 ;;
          *)
            sleep "$(ms FAKE_DETECT_MS 300)"
            if [ -n "${FAKE_WRONG_DATA:-}" ]; then   # its step ended with another rank's abort: a partial sum
              say "THROWN rank=$me t=$(now) IllegalStateException"
              sleep "$(ms FAKE_CLOSE_MS 200)"
              say "RESULT rank=$me t=$(now) IllegalStateException: step 3: element 0 is 1.0, expected 3.0 (the sum" \
                "of 1..2)"
              exit 1
            fi
            say "THROWN rank=$me t=$(now) PeerDepartedException"
            sleep "$(ms FAKE_CLOSE_MS 200)"   # the close in try-with-resources, which waits for NCCL's abort
            say "RESULT rank=$me t=$(now) PeerDepartedException: rank $other (fake, pid 1) is exiting (SIGTERM)"
            exit 1 ;;
        esac
      fi
    done
    sleep 0.02
  done
}

# startup_fuzz_rank: DepartureScenarios startup-fuzz, its PHASE lines FAKE_PHASE_MS apart
startup_fuzz_rank() {
  local p
  d=$(dirname "$NCCL4J_TRACE_DIR")
  others=$(seq 0 $((np - 1)) | grep -vx "$me" | tr '\n' ' ')
  if [ "${FAKE_FUZZ_CRASH:-0}" = 1 ]; then trap 'hs_err force' TERM; fi
  if [ -n "${join_first:-}" ]; then sleep 0.05; say "JOINFIRST t=$(now) true"; sleep 0.05
  else sleep 0.1; fi   # the JVM's start: no line yet (JobLiveness.join() first, with --join-first)
  for p in launched joining rendezvous id-taken set-device nccl-init ready; do
    [ "$p" = rendezvous ] && say "JOINED rank=$me t=$(now)"
    say "PHASE rank=$me t=$(now) $p"
    wait_or_react "${FAKE_PHASE_MS:-100}"
  done
  say "START rank=$me t=$(now) pid=$$ size=$np device=${NCCL4J_DEVICE:-$me} startup-fuzz"
  say "PHASE rank=$me t=$(now) in-loop"
  say "READY rank=$me t=$(now)"
  wait_or_react "${FAKE_FUZZ_MS:-800}"
  say "CLOSING rank=$me t=$(now)"
  say "PHASE rank=$me t=$(now) closing"
  wait_or_react 100
  say "PHASE rank=$me t=$(now) closed"
  say "RESULT rank=$me t=$(now) ok"
  exit 0
}

rank_main() { # SCENARIO ARGS... (errfile and marker set by the caller)
  local scenario=$1 who="" a
  shift
  while [ $# -gt 0 ]; do
    case "$1" in --rank) who=$2; shift ;; --log-dir) logdir=$2; shift ;; --join-first) join_first=1 ;; esac
    shift
  done
  local me=${OMPI_COMM_WORLD_RANK:-${RANK:-0}} np=${OMPI_COMM_WORLD_SIZE:-${WORLD_SIZE:-1}}
  [ -z "$who" ] && who=$((np - 1))
  if [ -n "${logdir:-}" ]; then exec 2>> "$logdir/rank$me.err"; fi
  hs_err() {
    [ "${FAKE_HS_ERR_RANK:-x}" = "$me" ] || [ "${1:-}" = force ] || return 0
    [ -n "$errfile" ] && echo "# fake JVM crash" > "${errfile//%p/$$}"
    echo "# A fatal error has been detected by the Java Runtime Environment" >&2
    exit 134
  }
  [ "$scenario" = startup-fuzz ] && startup_fuzz_rank
  if [ "${FAKE_NOT_PLACED:-0}" = 1 ] && [[ $scenario == startup-* ]]; then
    [ "$me" = "$who" ] && say "rank $me: $scenario was not placed: the main thread was never seen in" \
      "NcclNative.ncclCommInitRank or ncclCommInitRankConfig (its stack read every 1 ms); the run goes on without a" \
      "departure"
    say "RESULT rank=$me t=$(now) ok"
    exit 0
  fi
  say "START rank=$me t=$(now) pid=$$ size=$np device=${NCCL4J_DEVICE:-$me} $scenario"
  say "ENV rank=$me NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE-unset} NCCL4J_DEVICE=${NCCL4J_DEVICE-unset}" \
    "NCCL_HOSTID=${NCCL_HOSTID-unset} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME-unset}" \
    "NCCL4J_TIMEOUT=${NCCL4J_TIMEOUT-unset} NCCL4J_TRACE_DIR=${NCCL4J_TRACE_DIR-unset} MASTER_PORT=${MASTER_PORT-unset}" \
    "LOCAL_RANK=${LOCAL_RANK-unset}"
  sleep 0.2
  if [ "${FAKE_LEFTOVER_RANK:-x}" = "$me" ]; then
    bash -c 'sleep 30; :' leftover "$marker" > /dev/null 2>&1 &
  fi
  if [ "$scenario" = fuzz ]; then
    if [ "${FAKE_FUZZ_CRASH:-0}" = 1 ]; then trap 'hs_err force' TERM; fi
    say "READY rank=$me t=$(now)"
    sleep "$(awk -v m="${FAKE_FUZZ_MS:-800}" 'BEGIN { print m / 1000 }')"
    say "CLOSING rank=$me t=$(now)"
    sleep 0.1
    if [ -n "${FAKE_WRONG_DATA:-}" ]; then   # the rank not signalled: a step ended with a partial sum
      say "RESULT rank=$me t=$(now) IllegalStateException: step 7: element 0 is 1.0, expected 3.0 (the sum of 1..2)"
      exit 1
    fi
    say "RESULT rank=$me t=$(now) ok"
    exit 0
  fi
  if [ "$scenario" = sigterm-launcher ]; then
    [ "$me" = 0 ] && say "EVENT rank=0 t=$(now) sigterm-launcher"
    sleep 5
    say "RESULT rank=$me t=$(now) ok"
    exit 0
  fi
  if [ "$me" = "$who" ]; then
    hs_err ""
    case "$scenario" in
      startup-init-term-lazy) say "EVENT rank=$me t=$(now) $scenario (init_process_group returned, lazy)" ;;
      startup-init-*) say "EVENT rank=$me t=$(now) $scenario (main thread at" \
        "org.nccl4j.jni.NcclNative.ncclCommInitRank; liveness join done)" ;;
      startup-*) say "EVENT rank=$me t=$(now) $scenario (main thread at org.nccl4j.launch.Rendezvous.fetch; liveness" \
        "join done)" ;;
      close-thread|abort-thread) say "EVENT rank=$me t=$(now) $scenario (${scenario%-thread}() on thread" \
        "\"departures-closer\", while thread \"main\" issues all-reduces)" ;;
      *) say "EVENT rank=$me t=$(now) $scenario" ;;
    esac
    case "$scenario" in
      startup-*-kill) kill -KILL $$ ;;
      startup-*-term|startup-init-term-lazy) kill -TERM $$; sleep 5 ;;
      startup-*-exit) exit 3 ;;
      close-thread|abort-thread) sleep 0.1
        say "RESULT rank=$me t=$(now) IllegalStateException: this Communicator (rank $me of $np) is being closed:" \
          "${scenario%-thread}() on thread \"departures-closer\", while thread \"main\" issued the collectives"
        exit 0 ;;
      kill) kill -KILL $$ ;;
      stop) kill -STOP $$; sleep 30; exit 0 ;;
      exit) exit 3 ;;
      throw-inside|throw-outside) say "RESULT rank=$me t=$(now) IllegalStateException: data loader failed on rank $me"
        echo 'Exception in thread "main" java.lang.IllegalStateException: data loader failed' >&2
        exit 1 ;;
      sigterm-rank) kill -TERM $$; sleep 5 ;;
      abort-live|cpu-stuck) sleep 1.5; say "RESULT rank=$me t=$(now) ok"; exit 0 ;;
      count|type) say "RESULT rank=$me t=$(now) IllegalStateException: step 3: element 0 is 1.0, expected 3.0"
        exit 1 ;;
      *) say "RESULT rank=$me t=$(now) ok"; exit 0 ;;
    esac
    exit 0
  fi
  [ "${FAKE_HANG:-0}" = 1 ] && sleep 1000
  sleep "$(awk -v m="${FAKE_DETECT_MS:-300}" 'BEGIN { print m / 1000 }')"
  hs_err ""
  case "$tool:$scenario" in
    python3:*) ;;   # torch's ranks: ncclRemoteError, below
    java:startup-init-*)
      echo "12:00:00.000 ERROR LeftBehindExit - nccl4j: rank $me of $np: rank $who (fake, pid 1) was lost during NCCL" \
        "initialization (SIGTERM); the communicator was not made (NCCL initialization could not be abandoned)." \
        "Restart the job (or let its launcher restart it), after fixing what ended rank $who; its thread \"main\" is" \
        "at org.nccl4j.jni.NcclNative.ncclCommInitRank(Native Method). Halting the process with status 70" \
        "(NCCL4J_LEFT_BEHIND_EXIT=off leaves it waiting for the init timeout)" >&2
      exit 70 ;;
    java:startup-*)
      say "RESULT rank=$me t=$(now) PeerLostDuringStartupException: rank $me of $np: rank $who (fake, pid 1) was" \
        "lost during the rendezvous (its connection ended without a goodbye); the communicator was not made (the" \
        "rendezvous ended). Restart the job"
      exit 1 ;;
    java:close-thread|java:abort-thread)
      say "RESULT rank=$me t=$(now) PeerDepartedException: rank $me of $np: allReduce #4 cannot complete: rank $who" \
        "(fake, pid 1) closed its communicator after allReduce #3, its last (${scenario%-thread}() on thread" \
        "\"departures-closer\", while thread \"main\" issued the collectives)"
      exit 1 ;;
  esac
  if [ -n "${FAKE_WRONG_DATA:-}" ]; then   # its step ended, with a partial sum, before the news
    say "RESULT rank=$me t=$(now) IllegalStateException: step 3: element 0 is 2.0, expected 3.0 (the sum of 1..2)"
    exit 1
  fi
  echo "[rank $me] ncclRemoteError: remote process exited" >&2
  say "RESULT rank=$me t=$(now) RemoteErrorException: rank $who (fake, pid 1) is gone"
  exit 1
}

# start_ranks NP TAGFORMAT CMD...: NP ranks at once, each line tagged (printf format with the rank), pids in ranks[];
# under mpirun each rank's environment is PATH, HOME and the -x variables (xs) only
start_ranks() {
  local np=$1 fmt=$2 r
  shift 2
  ranks=()
  for ((r = 0; r < np; r++)); do
    local tag
    # shellcheck disable=SC2059  # the tag format is the caller's
    tag=$(printf "$fmt" "$r")
    if [ "$launcher" = mpirun ]; then
      env -i PATH="$PATH" HOME="$HOME" "${xs[@]}" OMPI_COMM_WORLD_RANK="$r" OMPI_COMM_WORLD_SIZE="$np" \
        OMPI_COMM_WORLD_LOCAL_RANK="$r" "$@" > >(sed -u "s/^/${tag//\//\\/}/") 2>&1 &
    else
      ( export RANK=$r WORLD_SIZE=$np LOCAL_RANK=$r LOCAL_WORLD_SIZE=$np
        [ "$launcher:$share" = run:1 ] && export NCCL_HOSTID=${NCCL_HOSTID:-nccl4j-host$r} \
          NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
        exec "$@" ) > >(sed -u "s/^/${tag//\//\\/}/") 2>&1 &
    fi
    ranks+=($!)
  done
}

# watch_ranks: waits for the ranks; the first failure stops the others (SIGTERM); SIGTERM to this process too.
# Sets first_rank and first_status.
watch_ranks() {
  local stopping=0 r st
  first_rank=""
  first_status=0
  trap 'stopping=1; kill -TERM "${ranks[@]}" 2> /dev/null' TERM
  declare -A done_=()
  while [ ${#done_[@]} -lt ${#ranks[@]} ]; do
    for r in "${!ranks[@]}"; do
      [ -n "${done_[$r]+x}" ] && continue
      kill -0 "${ranks[$r]}" 2> /dev/null && continue
      wait "${ranks[$r]}" 2> /dev/null; st=$?
      done_[$r]=$st
      if [ "$st" != 0 ] && [ -z "$first_rank" ] && [ "$stopping" = 0 ]; then
        first_rank=$r; first_status=$st
        for o in "${ranks[@]}"; do kill -CONT "$o" 2> /dev/null; kill -TERM "$o" 2> /dev/null; done
        ( sleep 1; kill -KILL "${ranks[@]}" 2> /dev/null ) &
      fi
    done
    sleep 0.05
  done
  [ "$stopping" = 1 ] && exit 143
}

case "$tool" in
  java)
    errfile=""
    marker=""
    args=()
    while [ $# -gt 0 ]; do
      case "$1" in
        -XX:ErrorFile=*) errfile=${1#-XX:ErrorFile=} ;;
        -Dnccl4j.row=*) marker=$1 ;;
        -cp) shift ;;
        -D*|-X*) ;;
        *) args+=("$1") ;;
      esac
      shift
    done
    set -- "${args[@]}"
    cls=$1
    shift
    case "$cls" in
      *.Launcher)
        [ -n "${FAKE_ARGS_DIR:-}" ] && printf '%s\n' "$@" > "$FAKE_ARGS_DIR/launcher.args"
        np=1 share=0
        while [ $# -gt 0 ]; do
          case "$1" in
            --share-gpu) share=1 ;;
            --port) shift ;;
            -np) np=$2; shift ;;
            *) break ;;
          esac
          shift
        done
        launcher=run
        # shellcheck disable=SC2086  # JAVA_OPTS: several options
        start_ranks "$np" '[%s] ' "$0" ${JAVA_OPTS:-} -cp x "$@"
        watch_ranks
        if [ -n "$first_rank" ]; then
          echo "nccl4j-run: rank $first_rank failed: exit status $first_status" >&2
          exit "$first_status"
        fi
        exit 0 ;;
      *.TraceAnalyzer)
        echo "nccl4j-trace: fake verdict ($(find "$1" -name 'nccl4j-trace-rank*.json' | wc -l) dumps)"
        exit 1 ;;
      *.DepartureScenarios)
        rank_main "$@" ;;
      *) echo "fake java: unknown class $cls" >&2; exit 99 ;;
    esac ;;
  python3)
    [ "${1:-}" = -c ] && exit 0
    [ "${1:-}" = -u ] && shift
    shift   # the script
    marker=""
    errfile=""
    for a in "$@"; do marker="$marker $a"; done
    marker=${marker# }
    rank_main "$@" ;;
  mpirun)
    [ -n "${FAKE_ARGS_DIR:-}" ] && printf '%s\n' "$@" > "$FAKE_ARGS_DIR/mpirun.args"
    np=1
    launcher=mpirun
    tag=""
    xs=()
    while [ $# -gt 0 ]; do
      case "$1" in
        --allow-run-as-root) ;;
        --tag-output) tag=1 ;;
        --bind-to) shift ;;
        -np) np=$2; shift ;;
        -x) case "$2" in *=*) xs+=("$2") ;; *) [ -n "${!2+x}" ] && xs+=("$2=${!2}") ;; esac; shift ;;
        -*) echo "fake mpirun: unknown option $1" >&2; exit 99 ;;
        *) break ;;
      esac
      shift
    done
    for v in $(compgen -e | grep '^FAKE_'); do xs+=("$v=${!v}"); done   # the test's controls
    start_ranks "$np" "${tag:+[1,%s]<stdout>:}" "$@"
    watch_ranks
    if [ -n "$first_rank" ]; then
      if [ "$first_status" -gt 128 ]; then
        echo "mpirun noticed that process rank $first_rank with PID 0 on node fake exited on signal $((first_status - 128)) (Killed)."
      else
        printf 'mpirun detected that one or more processes exited with non-zero status\n\n  Process name: [[1234,1],%s]\n  Exit code:    %s\n' \
          "$first_rank" "$first_status"
      fi
      exit "$first_status"
    fi
    exit 0 ;;
  torchrun)
    [ -n "${FAKE_ARGS_DIR:-}" ] && printf '%s\n' "$@" > "$FAKE_ARGS_DIR/torchrun.args"
    np=1
    launcher=torchrun
    share=0
    while [ $# -gt 0 ]; do
      case "$1" in
        --nproc_per_node) np=$2; shift ;;
        --nnodes|--master_addr|--master_port) shift ;;
        --no_python) ;;
        *) break ;;
      esac
      shift
    done
    start_ranks "$np" '' "$@"
    watch_ranks
    if [ -n "$first_rank" ]; then
      code=$first_status
      [ "$code" -gt 128 ] && code=$((128 - code))
      printf 'torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\nFailures:\n  <NO_OTHER_FAILURES>\nRoot Cause (first observed failure):\n[0]:\n  rank      : %s (local_rank: %s)\n  exitcode  : %s (pid: 1)\n' \
        "$first_rank" "$first_rank" "$code"
      exit 1
    fi
    exit 0 ;;
  *) echo "departures-fake: unknown tool $tool" >&2; exit 99 ;;
esac
