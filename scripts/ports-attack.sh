#!/usr/bin/env bash
# ports-attack.sh: attacks on a running job's two ports (the rendezvous, MASTER_PORT, and the liveness channel,
# MASTER_PORT + 50) from a process outside the job, under each launcher, and what the job did. Each job is
# org.nccl4j.tools.harness.DepartureScenarios none (a loop of all-reduces, every element checked against the host's sum) with
# the job's secret; its last rank (rank 1 of 2) waits to start until the rendezvous attacks are done, so that rank 0
# is waiting for it meanwhile. Two phases, each attack followed by SETTLE seconds to collect the WARN lines it caused:
#   rendezvous  (rank 0 waits for the last rank) impostor HELLO, LOST/LEFT/JOINED lines, 128 MiB, 64 KiB random,
#               another job's secret, a real rank's recorded AUTH+HELLO replayed, CONNECTIONS held HOLD s
#   running     (every rank in the job) the same on the liveness channel (LOST, LEFT, JOINED one connection each),
#               then the impostor on MASTER_PORT again (closed by then)
# Between the two, the siege: the attacker holds rank 0's waiting slots on both ports (SLOTS silent connections each,
# every one reconnected at once when closed) and a trickle on each, and the last rank is let go into it; the job
# records how long that rank took from its start to its START line (siege_arrival_ms). A job without the secret
# (SECRETS) gets the no-secret attacks (a HELLO claiming world size 99, an impostor that takes the last rank's
# liveness slot and drops) and not the rendezvous impostor or replay: without a secret a HELLO for a rank not yet
# there is that rank as far as anyone can tell, which only the secret prevents. Then one relay job per kind in RELAYS
# (default "id forge replay-down replay-up"; empty: none), with the secret and no other attack: the last rank
# reaches rank 0 through ports_attack.py relay, which alters one record after the handshake (the unique-id frame's
# bit, a forged LOST line to the rank, rank 0's line again, the rank's line again). Such a job passes when the record
# is refused and named (a MAC failure in a log) and the job goes on: the rank connects again, or takes the id from
# its sealed liveness channel, and every rank ends with RESULT ok and exit 0. (An on-path attacker can always end a
# job by cutting its connections; what it must not do is feed it a record, or end it with one altered record.)
# The claim under test: every rank ends its loop with RESULT ok and exit 0, and each attack costs at most one WARN
# line. The replays take a real rank's bytes from a packet capture on lo (root only, else they are "not run"); the
# capture is also searched for the secret, which must never travel.
#
#   scripts/ports-attack.sh [BUNDLE]      BUNDLE: made by scripts/gpu-bundle.sh (default: bundle/ beside scripts/)
#
# Variables: SECRETS (default "yes no": jobs with the job's secret and without; nccl4j-run always makes one, so its
# jobs are "yes" only), SLOTS (default 24: the rendezvous' slots held; the liveness channel's: 72), SIEGE (default
# 60: the siege's longest seconds),
# LAUNCHERS (default "java mpirun run": plain java per rank, Open MPI, scripts/nccl4j-run), SIZES (default "4 2":
# ranks per job, one per GPU; with more ranks than GPUs they share GPU 0, each with its own NCCL_HOSTID), STEPS
# (default 700, about 40 s), COUNT (floats per all-reduce, default 1048576), SETTLE (default 2.5 s; more than Refusals' 2 s burst quiet),
# HOLD (default 6 s, more than the liveness channel's 5 s hello deadline), CONNECTIONS (default 1000), PORT (default
# 23000: job n uses PORT + 100 n), OUT_DIR (default: a new temporary directory: ports.md, ports.tsv and a directory
# per job with its logs, attacks.jsonl and capture), JOB_LIMIT (default 150 s per job), JAVA_OPTS (default -Xmx512m).
# The java and mpirun jobs share one secret made here (so a replay from an earlier job is of a valid exchange);
# nccl4j-run makes its own per launch. NCCL_NVLS_ENABLE=0 is exported and forwarded to every rank.
# Exit status: 0 when every job ran to the end with correct sums and no attack cost more than one WARN line, 1
# otherwise, 2 for a usage error.
set -uo pipefail
[ -f "$(dirname "$0")/env.sh" ] || { echo "${0##*/}: $(dirname "$0")/env.sh is missing" >&2; exit 2; }
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
tool=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
main=org.nccl4j.tools.harness.DepartureScenarios
attacker=$here/bench/ports_attack.py
die() { echo "$tool: $*" >&2; exit 2; }
case "${1:-}" in -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac

if [ -n "${1:-}" ]; then
  bundle=$(nccl4j_bundle_dir "$tool" "$1") || exit 2
else
  bundle=$(nccl4j_bundle_dir "$tool" "$here/../bundle") || exit 2
fi
java="$bundle/jre/bin/java"
cp=$(nccl4j_classpath "$bundle")
nccl4j_cuda_libs --reverse
nccl4j_mpi_root_args
command -v python3 > /dev/null || die "python3 is needed for the attacks"
[ -f "$attacker" ] || die "no $attacker"

launchers=${LAUNCHERS:-java mpirun run}
secrets_modes=${SECRETS:-yes no}
relays=${RELAYS-id forge replay-down replay-up}
slots=${SLOTS:-24}
siege_s=${SIEGE:-60}
sizes=${SIZES:-4 2}
steps=${STEPS:-700}
count=${COUNT:-1048576}
settle=${SETTLE:-2.5}
hold=${HOLD:-6}
connections=${CONNECTIONS:-1000}
port0=${PORT:-23000}
limit=${JOB_LIMIT:-150}
java_opts=${JAVA_OPTS:--Xmx512m}
for v in "$steps" "$count" "$connections" "$port0" "$limit"; do
  [[ "$v" =~ ^[0-9]+$ ]] || die "STEPS, COUNT, CONNECTIONS, PORT and JOB_LIMIT take whole numbers (got '$v')"
done
for l in $launchers; do
  case "$l" in java|mpirun|run) ;; *) die "LAUNCHERS: unknown launcher '$l' (java, mpirun, run)" ;; esac
done
for m in $secrets_modes; do
  case "$m" in yes|no) ;; *) die "SECRETS: 'yes', 'no' or both (got '$m')" ;; esac
done
modes=$secrets_modes
for m in $relays; do
  case "$m" in id|forge|replay-down|replay-up) modes="$modes relay-$m" ;;
    *) die "RELAYS: id, forge, replay-down, replay-up (got '$m')" ;; esac
done
[[ "$slots" =~ ^[0-9]+$ && "$siege_s" =~ ^[0-9]+$ ]] || die "SLOTS and SIEGE take whole numbers"
[ "${launchers/mpirun/}" = "$launchers" ] || command -v mpirun > /dev/null || die "LAUNCHERS has mpirun: not found"
gpus=$(nccl4j_gpu_count "$tool") || exit 2
out=${OUT_DIR:-$(mktemp -d /tmp/ports-attack.XXXXXX)}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
secret_file=$out/secret.txt
(umask 077; python3 -c 'import secrets; print(secrets.token_hex(32))' > "$secret_file")
sniff=0
[ "$(id -u)" = 0 ] && sniff=1
now_ms() { date +%s%3N; }

captures=()
bad=0
n=0
: > "$out/ports.tsv"
for launcher in $launchers; do
  for np in $sizes; do
   for sec in $modes; do
    [ "$launcher" = run ] && [ "$sec" != yes ] && continue   # nccl4j-run makes its own secret, unknown here
    n=$((n + 1))
    port=$((port0 + 100 * n))
    relay_port=$((port + 20))
    case "$sec" in yes) tag=secret ;; no) tag=nosecret ;; *) tag=$sec ;; esac
    dir=$out/$launcher-$np-$tag
    rm -rf "$dir"; mkdir -p "$dir"
    # more ranks than GPUs: they share GPU 0, each with its own NCCL_HOSTID (as departures.sh's share configs)
    share=0
    share_arg=()
    if [ "$np" -gt "$gpus" ]; then share=1; share_arg=(--share-gpu); fi
    last=$((np - 1))
    go=$dir/go
    use_relay=0
    [ "${sec#relay-}" != "$sec" ] && use_relay=1
    # the rank's script: the last rank waits (up to 90 s) for the go file, then every rank runs the program
    { echo '#!/usr/bin/env bash'
      echo "r=\${RANK:-\${OMPI_COMM_WORLD_RANK:-0}}"
      [ "$share" = 1 ] && echo "export NCCL4J_DEVICE=0 NCCL_HOSTID=nccl4j-host\$r NCCL_SOCKET_IFNAME=lo"
      echo "if [ \"\$r\" = $last ]; then for _ in \$(seq 900); do [ -e $(printf %q "$go") ] && break; sleep 0.1; done; fi"
      # the last rank of a job with the secret reaches rank 0 through the relay (both ports: MASTER_PORT and + 50)
      [ "$use_relay" = 1 ] && echo "if [ \"\$r\" = $last ]; then export MASTER_PORT=$relay_port; fi"
      printf 'exec'
      # shellcheck disable=SC2086  # JAVA_OPTS holds several options, split on white space
      printf ' %q' "$java" $java_opts -XX:ErrorFile="$dir/hs_err_%p.log" -cp "$cp" "$main" none \
        --steps "$steps" --count "$count"; echo
    } > "$dir/rank.sh"
    chmod +x "$dir/rank.sh"
    spid=""
    if [ "$sniff" = 1 ]; then
      python3 "$attacker" sniff --ports "$port,$((port + 50))" --out "$dir/capture.jsonl" 2> "$dir/sniff.err" &
      spid=$!
      sleep 0.3
    fi
    secret_env=(NCCL4J_ATTACK_JOB=1)   # env needs one assignment; without the secret, none is passed
    [ "$launcher" != run ] && [ "$sec" != no ] && secret_env=(NCCL4J_JOB_SECRET="$(cat "$secret_file")")
    pids=()
    logs=()
    t0=$(now_ms)
    case "$launcher" in
      java)
        for ((r = 0; r < np; r++)); do
          env "${secret_env[@]}" RANK="$r" WORLD_SIZE="$np" LOCAL_RANK="$r" LOCAL_WORLD_SIZE="$np" \
            MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" "$dir/rank.sh" > "$dir/rank$r.log" 2>&1 &
          pids+=($!)
          logs+=("$dir/rank$r.log")
        done ;;
      mpirun)
        nccl4j_mpi_forward_args NCCL_ NCCL4J_ LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES
        # shellcheck disable=SC2154  # set by env.sh's nccl4j_mpi_root_args and nccl4j_mpi_forward_args
        env -u NCCL4J_JOB_SECRET "${secret_env[@]}" mpirun "${nccl4j_mpi_root[@]}" --bind-to none --tag-output \
          -np "$np" "${nccl4j_mpi_fwd[@]}" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" \
          "$dir/rank.sh" > "$dir/job.log" 2>&1 &
        pids+=($!)
        logs+=("$dir/job.log") ;;
      run)
        env -u NCCL4J_JOB_SECRET -u NCCL4J_JOB_SECRET_FILE NCCL4J_BUNDLE="$bundle" "$here/nccl4j-run" --port "$port" \
          -np "$np" "${share_arg[@]}" --cmd -- "$dir/rank.sh" > "$dir/job.log" 2>&1 &
        pids+=($!)
        logs+=("$dir/job.log") ;;
    esac
    logargs=()
    for f in "${logs[@]}"; do logargs+=(--log "$f"); done
    # rank 0 listens, and the other early ranks have had time to join
    for _ in $(seq 300); do grep -aqs 'rank 0 waiting on' "${logs[@]}" && break; sleep 0.1; done
    sleep 3
    capargs=()
    for f in "${captures[@]}" "$dir/capture.jsonl"; do [ -s "$f" ] && capargs+=(--capture "$f"); done
    # without a secret, a HELLO for a rank not yet there is that rank as far as anyone can tell (the id goes to
    # it): the impostor and the replay are a job's hijack, which only the secret prevents; not run there
    skips=()
    [ "$sec" = no ] && skips=(--skip impostor --skip replay)
    rpid=""
    gpid=""
    : > "$dir/attacks.jsonl"
    if [ "$use_relay" = 1 ]; then   # a relay job: the relay's one alteration and nothing else
      python3 "$attacker" relay --port "$port" --listen "$relay_port" --only "${sec#relay-}" \
        --out "$dir/relay.jsonl" > /dev/null 2>> "$dir/attack.err" &
      rpid=$!
      sleep 0.5
    else
      python3 "$attacker" attack --phase rendezvous --port "$port" --size "$np" "${capargs[@]}" "${logargs[@]}" \
        "${skips[@]}" --settle "$settle" --hold-seconds 4 --connections "$connections" --out "$dir/attacks.jsonl" \
        > /dev/null 2> "$dir/attack.err"
      python3 "$attacker" siege --port "$port" --slots "$slots" --seconds "$siege_s" \
        --ready-file "$dir/siege.ready" --out "$dir/siege.json" > /dev/null 2>> "$dir/attack.err" &
      gpid=$!
      for _ in $(seq 100); do [ -e "$dir/siege.ready" ] && break; sleep 0.1; done
    fi
    t_go=$(now_ms)
    touch "$go"
    arrival=""
    for _ in $(seq 900); do
      if [ "$(cat "${logs[@]}" 2> /dev/null | grep -ac 'START rank=')" -ge "$np" ]; then
        arrival=$(( $(now_ms) - t_go )); break
      fi
      alive=0
      for p in "${pids[@]}"; do kill -0 "$p" 2> /dev/null && alive=1; done
      [ "$alive" = 1 ] || break   # the job ended before it started: the report says so
      sleep 0.1
    done
    [ -n "$gpid" ] && { kill -TERM "$gpid" 2> /dev/null; wait "$gpid" 2> /dev/null; }
    if [ "$use_relay" = 0 ]; then
      sleep 1.5   # the liveness channel's joins
      capargs=()
      [ -s "$dir/capture.jsonl" ] && capargs+=(--capture "$dir/capture.jsonl")
      python3 "$attacker" attack --phase running --port "$port" --size "$np" "${capargs[@]}" "${logargs[@]}" \
        --settle "$settle" --hold-seconds "$hold" --connections "$connections" --out "$dir/attacks.jsonl" \
        > /dev/null 2>> "$dir/attack.err"
    fi
    t_attacked=$(now_ms)
    # the job's end
    statuses=()
    for p in "${pids[@]}"; do
      left=$(( (limit * 1000 - ($(now_ms) - t0)) / 1000 ))
      [ "$left" -lt 1 ] && left=1
      timeout "$left" tail --pid="$p" -f /dev/null
      if kill -0 "$p" 2> /dev/null; then
        pkill -KILL -f "$dir/rank.sh" 2> /dev/null; kill -KILL "$p" 2> /dev/null
        statuses+=(limit)
      fi
      wait "$p"; statuses+=($?)
    done
    t_end=$(now_ms)
    [ -n "$spid" ] && { kill -TERM "$spid" 2> /dev/null; wait "$spid" 2> /dev/null; }
    [ -n "$rpid" ] && { kill -TERM "$rpid" 2> /dev/null; wait "$rpid" 2> /dev/null; }
    [ -s "$dir/capture.jsonl" ] && captures+=("$dir/capture.jsonl")
    ok=$(cat "${logs[@]}" | grep -ac 'RESULT rank=[0-9]* t=[0-9]* ok')
    warns=$(cat "${logs[@]}" | grep -acE '\bWARN\b')
    lost=$(cat "${logs[@]}" | grep -acE 'is lost|peer lost|RemoteErrorException|OutOfMemoryError')
    hs=$(find "$dir" -name 'hs_err_*.log' | wc -l)
    secret_check="no capture (not root)"
    if [ -s "$dir/capture.jsonl" ]; then
      if [ "$launcher" = run ]; then
        secret_check="not checked: nccl4j-run's own secret is not known here"
      else
        secret_check=$(python3 "$attacker" check-secret --capture "$dir/capture.jsonl" --secret-file "$secret_file")
      fi
    fi
    { echo "launcher=$launcher"; echo "size=$np"; echo "port=$port"; echo "statuses=${statuses[*]}"
      echo "results_ok=$ok"; echo "warn_lines=$warns"; echo "lost_lines=$lost"; echo "hs_err=$hs"
      echo "seconds=$(( (t_end - t0) / 1000 ))"; echo "after_attacks_ms=$((t_end - t_attacked))"
      echo "secret_check=$secret_check"; echo "secret=$sec"; echo "layout=$([ "$share" = 1 ] && echo "$np ranks on GPU 0" || echo "one GPU a rank")"; echo "siege_arrival_ms=${arrival:-none}"
      echo "siege=$(cat "$dir/siege.json" 2> /dev/null)"
      if [ "$use_relay" = 1 ]; then
        echo "relay=$(grep -c alteration "$dir/relay.jsonl" 2> /dev/null)"
        echo "relay_at_ms=$(python3 -c 'import json,sys; print(min([int(json.loads(l)["t"]*1000) for l in open(sys.argv[1]) if "alteration" in l] or [0]))' "$dir/relay.jsonl" 2> /dev/null)"
        echo "end_ms=$t_end"
        echo "mac_lines=$(cat "${logs[@]}" | grep -acE 'failed its MAC|carries no MAC|failed its check')"
      fi
    } > "$dir/job.txt"
    verdict=ok
    worst=$(python3 -c 'import json,sys; print(max([json.loads(l)["warn_lines"] for l in open(sys.argv[1])] or [0]))' \
      "$dir/attacks.jsonl" 2> /dev/null || echo "?")
    case "$secret_check" in "the secret travelled"*) verdict=fail ;; esac
    [ "$hs" = 0 ] || verdict=fail
    if [ "$use_relay" = 1 ]; then
      # the altered record is refused and named, nothing in it is used, and the job goes on: the rank connects
      # again (liveness) or takes the id from its sealed liveness channel (the id frame); every sum exact, exit 0
      macs=$(cat "${logs[@]}" | grep -acE 'failed its MAC|carries no MAC|failed its check')
      [ "$macs" -ge 1 ] || verdict=fail
      grep -q alteration "$dir/relay.jsonl" 2> /dev/null || verdict=fail
      [ "$ok" = "$np" ] || verdict=fail
      for s in "${statuses[@]}"; do [ "$s" = 0 ] || verdict=fail; done
    else
      [ "$ok" = "$np" ] && [ "$lost" = 0 ] && [ -n "$arrival" ] || verdict=fail
      for s in "${statuses[@]}"; do [ "$s" = 0 ] || verdict=fail; done
      [ "$worst" = 0 ] || [ "$worst" = 1 ] || verdict=fail
    fi
    [ "$verdict" = ok ] || bad=1
    printf '%s\t%s\t%s\t%s\tRESULT ok %s of %s\texit %s\tWARN lines %s\tmost per attack %s\tlast rank in %s ms\t%s\n' \
      "$launcher" "$np" "secret=$sec" "$verdict" "$ok" "$np" "${statuses[*]}" "$warns" "$worst" "${arrival:-never}" \
      "$secret_check" | tee -a "$out/ports.tsv"
   done
  done
done
python3 "$attacker" report --out "$out/ports.md" "$out"/*/ > /dev/null || bad=1
echo "$tool: $(grep -c $'\tok\t' "$out/ports.tsv") of $(wc -l < "$out/ports.tsv") jobs ok; report $out/ports.md"
exit "$bad"
