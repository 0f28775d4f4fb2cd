#!/usr/bin/env bash
# departures.sh: every way a rank leaves a job, under each launcher and GPU layout, and how soon every other rank
# knows. Each row runs org.nccl4j.tools.harness.DepartureScenarios (the README's program shape: a loop of checked
# all-reduces of COUNT floats) with one scenario, launcher and config, and records every rank's RESULT line, the time
# from the EVENT (the departure) to each rank's end, the exit statuses, the trace dumps and nccl4j-trace's verdict,
# hs_err files and the processes left running. The claim under test: every rank ends within the row's bound, 2 s
# after the event (stop: NCCL4J_LIVENESS_TIMEOUT, default 4 s, + 1 s; cpu-stuck: NCCL4J_TIMEOUT=20s + 2 s).
#
#   scripts/departures.sh [BUNDLE]              the matrix; BUNDLE: made by scripts/gpu-bundle.sh (default: the
#                                               bundle this script sits in, else bundle/ beside scripts/)
#   FUZZ=100 scripts/departures.sh [BUNDLE]     SIGTERM to a random rank of a 2-rank loop at a random moment, 100 runs
#   STARTUP_FUZZ=200 scripts/departures.sh [BUNDLE]   the same from the process's start: start-up included, 200 runs
#   TORCH=1 scripts/departures.sh               the same scenarios with PyTorch's ProcessGroupNCCL (the torch column)
#   scripts/departures.sh --merge DIR TSV...    one table (DIR/departures.md and .tsv) from several runs' TSVs
#
# Matrix rows are SCENARIOS x LAUNCHERS x CONFIGS (each a space-separated subset, in the order given):
#   SCENARIOS  kill stop throw-inside throw-outside exit abort-live skip count type sigterm-rank sigterm-launcher
#              cpu-stuck startup-rendezvous-kill startup-rendezvous-term startup-idtaken-kill startup-idtaken-term
#              startup-init-kill startup-init-term startup-init-exit close-thread abort-thread (default: all; "none",
#              a run without departure, is there to check a machine). With TORCH=1 the scenarios up to cpu-stuck,
#              startup-init-term (rank EVENT_RANK SIGTERMs itself as soon as init_process_group(device_id=...)
#              returns, the communicator made eagerly) and startup-init-term-lazy (the same without device_id: the
#              first all_reduce makes the communicator); the other start-up scenarios and close-thread and
#              abort-thread have no torch counterpart
#   LAUNCHERS  run (scripts/nccl4j-run), mpirun (Open MPI, MASTER_ADDR/MASTER_PORT, --tag-output), java (one plain
#              java per rank with RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT); default "run mpirun java".
#              With TORCH=1: python (one plain python per rank, env://) and torchrun; default "python torchrun"
#   CONFIGS    2gpu (2 ranks, one per GPU: device = LOCAL_RANK), 4gpu (4 ranks on 4 GPUs), 4share (4 ranks on GPU 0,
#              NCCL4J_DEVICE=0, NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo), 2share (2 ranks on GPU 0, the same way;
#              not in the default); default "2gpu 4gpu 4share". A config that needs more GPUs than the machine
#              has is skipped, saying so
# The event: rank EVENT_RANK (default: the last) at step EVENT_STEP (default 3) of STEPS (default 8); COUNT floats
# (default 1048576). sigterm-launcher: rank 0 prints the EVENT line and the script sends SIGTERM to the launcher
# (nccl4j-run, mpirun, torchrun) when it sees it; with plain java or python, which have no launcher, to every rank
# (as a batch system's cancel does). cpu-stuck runs with NCCL4J_TIMEOUT=20s (torch: a 20 s process group timeout).
# Nothing else is set: the watchdog and torch run at their defaults.
# The start-up scenarios: rank EVENT_RANK ends itself (SIGKILL, SIGTERM, System.exit(3) from another thread) inside
# Communicator.fromEnvironment, placed by a thread that reads its main thread's stack every millisecond: in the
# rendezvous (Rendezvous.fetch or serve, once it joined rank 0's liveness channel), after the rendezvous and before
# NCCL is called (idtaken), or in NCCL's initialization (ncclCommInitRank); every rank prints PHASE lines, and the row
# says "not placed" (no EVENT) when the watcher never saw the place. A rank that nccl4j halts with status 70 (its
# blocking NCCL initialization could not be abandoned) has nccl4j's ERROR line as its result ("halted with status
# 70: ..."). close-thread, abort-thread: at EVENT_STEP a second thread of rank EVENT_RANK closes (aborts) the
# communicator while its main thread goes on issuing all-reduces; that rank's IllegalStateException is its expected
# end (exit 0).
# A rank's end is its process's exit as the script sees it (exactly for plain ranks; under a launcher, by polling
# every 0.1 s for the processes that carry the row's marker, -Dnccl4j.row=ID or --row ID), else its RESULT time.
# Every rank is timed but the one that leaves where it cannot end by itself (kill, stop, startup-*-kill: a stopped
# plain rank is killed once the others have ended) or keeps running by design (abort-live). The stuck rank of
# cpu-stuck is timed: nccl4j ends it (NCCL4J_LEFT_BEHIND_EXIT) once its peers gave up on it.
# SIGTERM or SIGINT to the script kills this run's ranks and the row's launcher before it exits (143).
#
# Other variables: ROW_LIMIT (default 60): seconds per row, after which its processes are killed and each rank still
# running is "still waiting at ROW_LIMIT s"; BUDGET (seconds, default 0: none): rows that could end past it are not
# started but listed, with the variables that run them, so that one call stays within a time limit; OUT_DIR
# (default: a new temporary directory) receives departures.md, departures.tsv and a directory per row (logs, traces,
# hs_err files); PORT (default 20000): row (or run) n uses MASTER_PORT PORT + 100 n (the liveness channel is at +50),
# n counted again from 1 where that would reach the kernel's ephemeral ports (ip_local_port_range, from 32768), which
# outgoing connections take: a run of 200 once lost its liveness port there ("Address already in use");
# JAVA_OPTS, MPIRUN_OPTS; PYTHON (TORCH=1; default /opt/torch/.venv/bin/python3 when it exists, else python3).
# NCCL_NVLS_ENABLE=0 is exported, and forwarded to every rank (mpirun -x).
#
# FUZZ=N: N runs of a 2-rank loop of plain java processes (DepartureScenarios fuzz: FUZZ_STEPS, default 100, short
# all-reduces of 64K floats, FUZZ_SLEEP_MS 10 ms apart, then the close), JOBS (default 4) at a time on ports of their
# own; FUZZ_CONFIG share (default: both ranks of run k on GPU k mod G, NCCL_HOSTID per rank) or gpus (rank r on GPU
# r). After the first READY line, a random delay of 0..FUZZ_WINDOW_MS (default 1600) ms, then SIGTERM to a random
# rank; FUZZ_LIMIT (default 30) seconds per run (with BUDGET, no run is started that could end past it); FUZZ_SEED
# for the same draws again. Reports "JVM crashes: C of N runs" (hs_err files, or exit status 134 or 139), the
# processes left, when the SIGTERMs landed (steps, close, after the end) and the longest time from SIGTERM to the
# survivor's exit, which must be at most 5 s, and, when there are any, the runs whose survivor's step ended with a
# result that is not the sum (its all-reduce returned, its data wrong), which fail the fuzz too.
#
# STARTUP_FUZZ=N: N runs of a FUZZ_RANKS-rank job (default 2) of plain java processes (DepartureScenarios
# startup-fuzz: fromEnvironment, then FUZZ_STEPS, default 160, all-reduces of 64K floats FUZZ_SLEEP_MS, default 50, ms
# apart: about 8 s, then the close), JOBS at a time on ports of their own, FUZZ_CONFIG as for FUZZ. SIGTERM to a
# random rank at a time drawn uniformly from 0..FUZZ_WINDOW_MS (default 8000) ms after that rank's process started
# (not after READY): start-up included. The rank's PHASE lines say where the SIGTERM found it (the last one before
# it; none: the JVM still starting), its JOINED line whether it had joined rank 0's liveness channel. A survivor must
# end within 2 s of the SIGTERM (an exception out of main, or nccl4j's halt with status 70), but one whose peer was
# still in phase launched (before fromEnvironment: it never reached nccl4j, and nothing can tell the survivor, see
# nccl4j's RankPhase): those runs are counted apart, "waited for a rank that never started", and still timed (they
# wait for the init timeout, which the script leaves at its default: each such run lasts FUZZ_LIMIT). A victim still
# joining (in fromEnvironment) joins at exit to say so, and a rank 0 victim stays for the ranks still to come: those
# runs are held to the bound, and also counted as "before the liveness link was up". With more than 2 ranks every
# other rank is a survivor and the run is timed by the last of them to end (FUZZ_CONFIG=gpus: rank r on GPU r,
# FUZZ_RANKS GPUs needed). FUZZ_JOIN_FIRST=1: each rank calls JobLiveness.join() first in main (--join-first), and a
# victim signalled after that call is held to the bound. FUZZ_LIMIT (default 20) seconds per run, BUDGET and
# FUZZ_SEED as for FUZZ. Prints:
#   JVM crashes: C of N                        hs_err files, or exit status 134 or 139
#   survivors ended within 2 s: W of N         (the runs that never started cannot count here)
#   survivors told within 2 s: T of N          (their program had the exception: its THROWN line, else RESULT; the
#                                              end may then wait for NCCL's abort, which close() and the exit await)
#   of the S runs whose victim had started: ended within 2 s E, told within 2 s T2   (the runs the bound is for)
#   slowest survivor: S s (run K, signal at T ms, phase P)    of the runs whose victim had started
#   signal landed (the victim's phase): launched a, joining b, rendezvous c, ...
#   waited for a rank that never started: k (still waiting at FUZZ_LIMIT=20 s: j)
#   signal after launched, before the liveness link was up: m (still waiting at FUZZ_LIMIT=20 s: i)
#   processes left: L
#   a step's result not the sum on a survivor: W of N runs (R ranks)   (its all-reduce returned, its data wrong)
# and OUT_DIR/startup-fuzz.md and .tsv (one row a run: the victim, the draw, the phase, whether it had joined, both
# exits, the survivor's time and what it got: its RESULT line, or nccl4j's halt). Exits 0 when no JVM crashed,
# nothing was left, no survivor's step ended with a wrong result, and every survivor of a victim that had started
# ended within 2 s.
#
# Prints a line per row (or run) and a summary line; exits 0 when every row ended within its bound with no hs_err file
# and no process left (FUZZ: no crash, nothing left, every survivor out within 5 s; STARTUP_FUZZ: above), 1
# otherwise, 2 for a usage error.
set -uo pipefail
[ -f "$(dirname "$0")/env.sh" ] || { echo "${0##*/}: $(dirname "$0")/env.sh is missing" >&2; exit 2; }
# shellcheck source=env.sh
. "$(dirname "$0")/env.sh"
tool=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
main=org.nccl4j.tools.harness.DepartureScenarios
base_scenarios="kill stop throw-inside throw-outside exit abort-live skip count type sigterm-rank sigterm-launcher"
base_scenarios+=" cpu-stuck"
startup_scenarios="startup-rendezvous-kill startup-rendezvous-term startup-idtaken-kill startup-idtaken-term"
startup_scenarios+=" startup-init-kill startup-init-term startup-init-exit"
all_scenarios="$base_scenarios $startup_scenarios close-thread abort-thread"
torch_scenarios="$base_scenarios startup-init-term startup-init-term-lazy"
tsv_header="row	scenario	launcher	config	framework	ranks	bound_s	event_rank	event_t	r0	r1	r2	r3	end0	end1	end2	end3	measured	worst	exits	traces	trace_verdict	hs_err	left	within	seconds	seen	notes"

die() { echo "$tool: $*" >&2; exit 2; }
now_ms() { date +%s%3N; }
# seconds MS: MS milliseconds as seconds with two decimals
seconds() { awk -v m="$1" 'BEGIN { printf "%.2f", m / 1000 }'; }
# clean TEXT: one TSV field (no tab, no line break, at most 300 characters)
clean() { printf '%s' "$1" | tr '\t\r\n' '   ' | cut -c1-300; }
whole() { [[ $2 =~ ^[0-9]+$ ]] || die "$1=$2 is not a whole number"; }
# tsv_line FIELD...: the fields joined by tabs
tsv_line() { local IFS=$'\t'; echo "$*"; }

# ---------------------------------------------------------------- the report (also --merge)

# What DepartureScenarios says of a step whose all-reduce returned a result that is not the sum (its own check), as
# its RESULT line says it after the time: an extended regular expression, for grep, awk and [[ =~ ]]
not_the_sum='IllegalStateException: step [0-9]+: element [0-9]+ is '

# An awk function over a row of the TSV: how many ranks' step ended with a result that is not the sum (the harness's
# own check; count and type excepted: there the ranks' own mismatched collective garbles the data).
# shellcheck disable=SC2016  # awk's own $2, $i: not the shell's
wrong_ranks='function wrong_ranks(   i, k) {
  if ($2 == "type" || $2 == "count") return 0
  for (i = 10; i <= 13; i++) if ($i ~ /^'"$not_the_sum"'/) k++
  return k + 0
}'

# render TSV MD: the markdown report of the rows in TSV
render() {
  awk -F'\t' -v when="$(date -u '+%Y-%m-%d %H:%M UTC')" -v host="$(hostname 2>/dev/null || echo '?')" "$wrong_ranks"'
    function esc(s) { gsub(/\|/, "\\|", s); return s }
    function cut(s, n) { return length(s) > n ? substr(s, 1, n - 3) "..." : s }
    function cell(r, e) {
      if (r == "" && e == "") return ""
      return esc(cut((e ~ /^[0-9.-]+$/ ? "+" e " s" : e) (r == "" ? "" : " · " r), 90))
    }
    NR == 1 { next }
    {
      n++; row[n] = $0
      if ($25 == "not run") { notrun++; next }
      rows++
      if ($25 == "yes") within++
      hs += $23; left += $24
      wrong = wrong_ranks()
      if (wrong) { wrongrows++; wrongranks += wrong }
      key = $2 SUBSEP $4
      if (!(key in seenkey)) { seenkey[key] = 1; keys[++nk] = key }
      col = $5 " " $3
      if (!(col in seencol)) { seencol[col] = 1; cols[++nc] = col }
      w = ($25 == "yes" ? "yes" : "NO")
      worst = ($19 ~ /^[0-9.-]+$/ ? $19 " s" : $19)
      over[key, col] = esc(w (worst == "" ? "" : " " worst) ($27 == "" ? "" : " · " cut($27, 70)))
    }
    END {
      print "# Departures: every way a rank leaves, and when every rank knows"
      print ""
      printf "%s on %s. %d rows, %d with every rank ended within its bound, hs_err files %d, processes left %d", \
        when, host, rows, within, hs, left
      if (wrongrows) printf ", a step'"'"'s result not the sum on %d ranks in %d rows", wrongranks, wrongrows
      if (notrun) printf ", %d not run (BUDGET)", notrun
      print "."
      print ""
      print "Bound: 2 s after the EVENT; stop: NCCL4J_LIVENESS_TIMEOUT (default 4 s) + 1 s; cpu-stuck: NCCL4J_TIMEOUT=20s + 2 s."
      print "The rank that leaves is not timed where it cannot end by itself (kill, stop) or keeps running by design"
      print "(abort-live). A cell: within the bound, the last timed end after the EVENT, what a user sees."
      print ""
      print "## Overview"
      print ""
      h = "| scenario | config |"; s = "|---|---|"
      for (c = 1; c <= nc; c++) { h = h " " cols[c] " |"; s = s "---|" }
      print h; print s
      for (k = 1; k <= nk; k++) {
        split(keys[k], p, SUBSEP)
        line = "| " p[1] " | " p[2] " |"
        for (c = 1; c <= nc; c++) line = line " " ((keys[k], cols[c]) in over ? over[keys[k], cols[c]] : "") " |"
        print line
      }
      print ""
      print "## Rows"
      print ""
      print "| # | scenario | launcher | config | bound | event | r0 | r1 | r2 | r3 | exits | traces | nccl4j-trace | hs_err | left | within | s |"
      print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
      for (i = 1; i <= n; i++) {
        split(row[i], f, "\t")
        if (f[25] == "not run") {
          printf "| %d | %s | %s %s | %s | | | not run: %s | | | | | | | | | | not run | |\n", i, f[2], f[5], f[3], f[4], esc(f[28])
          continue
        }
        ev = (f[8] == "" ? "none" : "r" f[8])
        printf "| %d | %s | %s %s | %s | %s s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", \
          i, f[2], f[5], f[3], f[4], f[7], ev, cell(f[10], f[14]), cell(f[11], f[15]), cell(f[12], f[16]), \
          cell(f[13], f[17]), esc(f[20]), f[21], esc(cut(f[22], 80)), f[23], f[24], f[25] (f[28] == "" ? "" : \
          " (" esc(cut(f[28], 80)) ")"), f[26]
      }
    }' "$1" > "$2"
}

# summary TSV: the summary line of the rows in TSV
summary() {
  awk -F'\t' "$wrong_ranks"'
    NR > 1 { if ($25 == "not run") { notrun++; next } rows++; if ($25 == "yes") w++; hs += $23; left += $24
      k = wrong_ranks(); if (k) { wr++; wk += k } }
    END { printf "departures: %d rows, %d with every rank ended within its bound, hs_err files %d, processes left %d", \
      rows, w, hs, left; if (wr) printf ", a step'"'"'s result not the sum on %d ranks in %d rows", wk, wr
      if (notrun) printf ", %d not run (BUDGET)", notrun; print "" }' "$1"
}

# verdict TSV: 0 when every row that ran was within its bound, with no hs_err, nothing left and no rank whose step
# ended with a result that is not the sum
verdict() {
  awk -F'\t' "$wrong_ranks"'
    NR > 1 && $25 != "not run" { rows++; if ($25 != "yes" || $23 > 0 || $24 > 0 || wrong_ranks()) bad++ }
    END { exit (rows > 0 && bad == 0) ? 0 : 1 }' "$1"
}

if [ "${1:-}" = --merge ]; then
  [ $# -ge 3 ] || die "usage: $tool --merge DIR TSV..."
  out_dir=$2
  shift 2
  mkdir -p "$out_dir" || die "cannot create $out_dir"
  merged=$out_dir/departures.tsv
  tmp=$(mktemp)
  echo "$tsv_header" > "$tmp"
  for f in "$@"; do
    [ -f "$f" ] || die "$f: no such file"
    [ "$(head -1 "$f")" = "$tsv_header" ] || die "$f is not a departures.sh TSV (its first line differs)"
    tail -n +2 "$f" >> "$tmp"
  done
  awk -F'\t' -v OFS='\t' 'NR == 1 { print; next } { $1 = NR - 1; print }' "$tmp" > "$merged"
  rm -f "$tmp"
  render "$merged" "$out_dir/departures.md"
  summary "$merged"
  echo "report: $out_dir/departures.md"
  verdict "$merged"
  exit
fi

# ---------------------------------------------------------------- settings

export NCCL_NVLS_ENABLE=0   # NVLink multicast stays off on the shared machines: every rank gets it
torch=${TORCH:-0}
case "$torch" in 0|1) ;; *) die "TORCH=$torch: 1 runs the torch rows, 0 or unset the nccl4j ones" ;; esac
fuzz=${FUZZ:-0}
whole FUZZ "$fuzz"
sfuzz=${STARTUP_FUZZ:-0}
whole STARTUP_FUZZ "$sfuzz"
[ "$fuzz" -gt 0 ] && [ "$sfuzz" -gt 0 ] && die "FUZZ=$fuzz and STARTUP_FUZZ=$sfuzz: set one of them"
[ "$sfuzz" -gt 0 ] && [ "$torch" = 1 ] && die "STARTUP_FUZZ runs nccl4j's ranks: leave TORCH unset"
limit=${ROW_LIMIT:-60}
whole ROW_LIMIT "$limit"
[ "$limit" -ge 5 ] || die "ROW_LIMIT=$limit: give a row 5 s or more"
budget=${BUDGET:-0}
whole BUDGET "$budget"
base_port=${PORT:-20000}
whole PORT "$base_port"
# port_slots: how many rows' ports fit below the ephemeral range (or below 65536 when PORT is above it)
ephemeral=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2> /dev/null)
[[ $ephemeral =~ ^[0-9]+$ ]] || ephemeral=32768
if [ "$base_port" -lt "$ephemeral" ]; then port_top=$ephemeral; else port_top=65536; fi
port_slots=$(( (port_top - 1 - 50 - base_port) / 100 ))
[ "$port_slots" -ge 1 ] || die "PORT=$base_port leaves no room for a row's ports (PORT + 100, + 150) below $port_top:" \
  "choose a lower PORT"
# port_of N: MASTER_PORT of row or run N
port_of() { echo $((base_port + 100 * (($1 - 1) % port_slots + 1))); }
steps=${STEPS:-8}
whole STEPS "$steps"
event_step=${EVENT_STEP:-3}
whole EVENT_STEP "$event_step"
count=${COUNT:-1048576}
whole COUNT "$count"
event_rank=${EVENT_RANK:-}
[ -z "$event_rank" ] || whole EVENT_RANK "$event_rank"
if [ "$torch" = 1 ]; then default_launchers="python torchrun"; else default_launchers="run mpirun java"; fi
launchers=${LAUNCHERS:-$default_launchers}
configs=${CONFIGS:-2gpu 4gpu 4share}
scenarios=${SCENARIOS:-all}
if [ "$torch" = 1 ]; then known_scenarios="$torch_scenarios none"; else known_scenarios="$all_scenarios none"; fi
[ "$scenarios" = all ] && scenarios=${known_scenarios% none}
for s in $scenarios; do
  case " $known_scenarios " in
    *" $s "*) ;;
    *) case " $all_scenarios $torch_scenarios " in
         *" $s "*) if [ "$torch" = 1 ]; then
                     die "SCENARIOS: $s has no torch counterpart (with TORCH=1: $torch_scenarios none)"
                   else
                     die "SCENARIOS: $s is a torch scenario: run it with TORCH=1"
                   fi ;;
         *) die "SCENARIOS: unknown scenario $s (known: $known_scenarios)" ;;
       esac ;;
  esac
done
for l in $launchers; do
  case "$torch:$l" in
    0:run|0:mpirun|0:java|1:python|1:torchrun) ;;
    0:*) die "LAUNCHERS: unknown launcher $l (run, mpirun, java; with TORCH=1: python, torchrun)" ;;
    1:*) die "LAUNCHERS: with TORCH=1 the launchers are python and torchrun, not $l" ;;
  esac
done
for c in $configs; do
  case "$c" in 2gpu|4gpu|4share|2share) ;; *) die "CONFIGS: unknown config $c (2gpu, 4gpu, 4share, 2share)" ;; esac
done
# liveness_ms: NCCL4J_LIVENESS_TIMEOUT (default 4s) in milliseconds
liveness=${NCCL4J_LIVENESS_TIMEOUT:-4s}
if [[ $liveness =~ ^([0-9]+)[[:space:]]*(ms|s|m|min|h)$ ]]; then
  case "${BASH_REMATCH[2]}" in
    ms) liveness_ms=${BASH_REMATCH[1]} ;;
    s) liveness_ms=$((BASH_REMATCH[1] * 1000)) ;;
    h) liveness_ms=$((BASH_REMATCH[1] * 3600000)) ;;
    *) liveness_ms=$((BASH_REMATCH[1] * 60000)) ;;
  esac
else
  die "NCCL4J_LIVENESS_TIMEOUT=$liveness is not a duration such as 4s or 4000ms"
fi
out_dir=${OUT_DIR:-$(mktemp -d)}
case "$out_dir" in *[[:space:]]*) die "OUT_DIR=$out_dir holds white space, which JAVA_OPTS cannot carry: choose another" ;; esac
mkdir -p "$out_dir" || die "cannot create OUT_DIR=$out_dir"
out_dir=$(cd "$out_dir" && pwd)

need_java=0
[ "$fuzz" -gt 0 ] || [ "$sfuzz" -gt 0 ] && need_java=1
[ "$torch" = 0 ] && need_java=1
if [ "$need_java" = 1 ]; then
  if [ -n "${1:-}" ]; then
    bundle=$(nccl4j_bundle_dir "$tool" "$1") || exit 2
  elif [ -x "$here/jre/bin/java" ]; then
    bundle=$here
  else
    bundle=$(nccl4j_bundle_dir "$tool" "$here/../bundle") || exit 2
  fi
  java="$bundle/jre/bin/java"
  cp=$(nccl4j_classpath "$bundle")
  nccl4j_cuda_libs --reverse
fi
if [ "$torch" = 1 ] && [ "$fuzz" = 0 ]; then
  if [ -n "${PYTHON:-}" ]; then py=$PYTHON
  elif [ -x /opt/torch/.venv/bin/python3 ]; then py=/opt/torch/.venv/bin/python3
  else py=python3; fi
  "$py" -c 'import torch' > /dev/null 2>&1 || die "TORCH=1: $py cannot import torch (set PYTHON)"
  torch_script=$here/bench/torch_departures.py
  [ -f "$torch_script" ] || die "no $torch_script"
  if [ -x "$(dirname "$(command -v "$py")")/torchrun" ]; then
    torchrun=("$(dirname "$(command -v "$py")")/torchrun")
  else
    torchrun=("$py" -m torch.distributed.run)
  fi
fi
gpus=$(nccl4j_gpu_count "$tool") || exit 2
nccl4j_mpi_root_args
run_id=d$$
current_dir=""

# on_signal: SIGTERM or SIGINT to this script (a call's time limit, Ctrl-C): this run's rank processes (they carry
# its marker) and the launcher of the row in progress are killed, so that none outlives the script
on_signal() {
  trap - TERM INT
  echo "$tool: stopped by a signal: killing this run's processes" >&2
  local p
  p=$(pgrep -f -- "(-Dnccl4j\\.row=|--row )${run_id}[rfs][0-9]+( |\$)" | tr '\n' ' ')
  [ -n "$current_dir" ] && p+=" $(pids "$current_dir")"
  # shellcheck disable=SC2086  # one pid per word
  [ -n "${p// /}" ] && kill -KILL $p 2> /dev/null
  exit 143
}
trap on_signal TERM INT
t_start=$(date +%s)

# ---------------------------------------------------------------- one row's processes

# proc_rank PID: the rank in the process's environment (OMPI_COMM_WORLD_RANK, else RANK); nothing when unreadable
proc_rank() {
  local kv r="" o=""
  [ -r "/proc/$1/environ" ] || return 0
  while IFS= read -r -d '' kv; do
    case "$kv" in OMPI_COMM_WORLD_RANK=*) o=${kv#*=} ;; RANK=*) r=${kv#*=} ;; esac
  done 2> /dev/null < "/proc/$1/environ"
  echo "${o:-$r}"
}

# marked: the pids of this row's rank processes (their command lines hold the row's marker)
marked() { pgrep -f -- "$pattern" 2> /dev/null | tr '\n' ' '; }

# parent PID: the parent's pid (from /proc/PID/stat, whose command name may hold spaces and parentheses)
parent() {
  local s pp
  s=$(cat "/proc/$1/stat" 2> /dev/null) || return 0
  read -r _ pp _ <<< "${s##*) }"
  echo "$pp"
}

# poll: notes each rank process of the row (the first process seen with that rank whose parent is not a marked
# process: not a fork of it) and when it was first seen gone (the time of the look that missed it: an upper bound)
poll() {
  local now pid r alive
  alive=" $(marked) "
  now=$(now_ms)
  for pid in $alive; do
    [ -n "${pid_rank[$pid]+x}" ] && continue
    r=$(parent "$pid")
    if [ -n "$r" ]; then
      case "$alive" in *" $r "*) pid_rank[$pid]="$(proc_rank "$pid") (a child)"; continue ;; esac
    fi
    r=$(proc_rank "$pid")
    # no rank yet: a process about to exec the rank (env RANK=... java), looked at again next time
    [ -n "$r" ] || continue
    pid_rank[$pid]=$r
    [ -n "${rank_pid[$r]+x}" ] || rank_pid[$r]=$pid
  done
  for r in "${!rank_pid[@]}"; do
    [ -n "${rank_gone[$r]+x}" ] && continue
    case "$alive" in *" ${rank_pid[$r]} "*) ;; *) rank_gone[$r]=$now ;; esac
  done
}

# start_rank DIR R CMD...: CMD as one plain rank in the background; DIR/pidR holds its pid, DIR/exitR "STATUS MS"
start_rank() {
  local dir=$1 r=$2
  shift 2
  ( "$@" > "$dir/rank$r.log" 2>&1 &
    echo $! > "$dir/pid$r"
    wait $! 2> /dev/null
    echo "$? $(now_ms)" > "$dir/exit$r" ) &
  started+=($!)
  exit_files+=("$dir/exit$r")
}

# start_launcher DIR CMD...: CMD (a launcher) in the background, output in DIR/run.log; DIR/pid.launcher, exit.launcher
start_launcher() {
  local dir=$1
  shift
  ( "$@" > "$dir/run.log" 2>&1 &
    echo $! > "$dir/pid.launcher"
    wait $! 2> /dev/null
    echo "$? $(now_ms)" > "$dir/exit.launcher" ) &
  started+=($!)
  exit_files+=("$dir/exit.launcher")
}

# pids DIR: the pids the script started for the row (the launcher, or each plain rank)
pids() { cat "$1"/pid* 2> /dev/null | tr '\n' ' '; }

# launcher_statuses LOG: "rR=STATUS" for each rank whose status the launcher's output names (nccl4j-run, mpirun,
# torchrun)
launcher_statuses() {
  awk '
    match($0, /nccl4j-run: rank [0-9]+ failed( too)?: /) {
      s = substr($0, RSTART); split(s, w, " "); r = w[3]
      st = (match(s, /exit status [0-9]+/) ? substr(s, RSTART + 12, RLENGTH - 12) : "?")
      if (!(r in got)) { got[r] = st; order[++n] = r }
    }
    match($0, /process rank [0-9]+ with PID [0-9]+ on node [^ ]+ exited on signal [0-9]+/) {
      nw = split(substr($0, RSTART, RLENGTH), w, " "); r = w[3]
      if (!(r in got)) { got[r] = 128 + w[nw]; order[++n] = r }
    }
    /Process name: \[\[[0-9]+,[0-9]+\],[0-9]+\]/ { s = $0; sub(/.*\],/, "", s); sub(/\].*/, "", s); mpi = s }
    /Exit code: +[0-9]+/ && mpi != "" { s = $0; sub(/.*Exit code: +/, "", s)
      if (!(mpi in got)) { got[mpi] = s + 0; order[++n] = mpi }; mpi = "" }
    /rank +: [0-9]+ \(local_rank/ { s = $0; sub(/.*rank +: /, "", s); sub(/ .*/, "", s); tr = s }
    /exitcode +: -?[0-9]+/ && tr != "" { s = $0; sub(/.*exitcode +: /, "", s); sub(/ .*/, "", s); s += 0
      if (s < 0) s = 128 - s
      if (!(tr in got)) { got[tr] = s; order[++n] = tr }; tr = "" }
    END { for (i = 1; i <= n; i++) printf " r%s=%s", order[i], got[order[i]] }' "$1" 2> /dev/null
}

# halted R FILE...: nccl4j's halt of rank R (its ERROR line, "... Halting the process with status 70") as one short
# line, "halted with status 70: rank 0 of 2: rank 1 (host, pid P) was lost during NCCL initialization (SIGTERM); the
# communicator was not made (NCCL initialization could not be abandoned)"; nothing when there is none
halted() {
  local r=$1 l msg
  shift
  l=$(grep -ahom1 "nccl4j: rank $r of [0-9]*: .*Halting the process with status [0-9]*" "$@" 2> /dev/null | head -1)
  [ -n "$l" ] || return 0
  msg=${l#nccl4j: }
  msg=${msg%%; its thread *}
  msg=${msg%%. Restart the job*}
  echo "halted with status ${l##* }: $msg"
}

# seen_line DIR R: what a user of rank R sees: its RESULT if not ok, else nccl4j's halt, else the last error line of
# its stderr file
seen_line() {
  local dir=$1 r=$2 res=""
  res=$(grep -ahom1 "RESULT rank=$r t=[0-9]* .*" "$dir"/*.log 2> /dev/null | head -1 | sed 's/^RESULT rank=[0-9]* t=[0-9]* //')
  if [ -n "$res" ] && [ "$res" != ok ]; then echo "$res"; return; fi
  res=$(halted "$r" "$dir"/*.log "$dir"/*.err)
  if [ -n "$res" ]; then echo "$res"; return; fi
  if [ -f "$dir/rank$r.err" ] && grep -aq 'was left behind and is stuck' "$dir/rank$r.err"; then
    grep -aom1 'nccl4j: rank [0-9]* of [0-9]* was left behind.*' "$dir/rank$r.err" | cut -c1-200
    return
  fi
  if [ -f "$dir/rank$r.err" ]; then
    grep -aE 'Error|error|ERROR|Exception|abort|Abort|[Tt]imeout|[Ww]atchdog' "$dir/rank$r.err" | tail -1 | cut -c1-200
  fi
}

rows_done=0
rows_total=0
tsv=$out_dir/departures.tsv
md=$out_dir/departures.md
[ "$fuzz" = 0 ] && [ "$sfuzz" = 0 ] && echo "$tsv_header" > "$tsv"

# not_run ROW SCENARIO LAUNCHER CONFIG FRAMEWORK: a row the BUDGET left out
not_run() {
  local vars="SCENARIOS=$2 LAUNCHERS=$3 CONFIGS=$4" f=("$@") i
  [ "$torch" = 1 ] && vars+=" TORCH=1"
  for ((i = 5; i < 19; i++)); do f[i]=""; done   # ranks .. exits
  f+=("" 0 "" 0 0 "not run" 0 "" "BUDGET=$budget s reached; run it with $vars")
  tsv_line "${f[@]}" >> "$tsv"
  echo "[$1/$rows_total] $2 $3 $4: not run (BUDGET=$budget s): $vars"
}

# run_row SCENARIO LAUNCHER CONFIG
run_row() {
  local scenario=$1 launcher=$2 config=$3
  local row=$((rows_done + 1)) framework=nccl4j np=2 share=0 r
  [ "$torch" = 1 ] && framework=torch
  case "$config" in 4gpu) np=4 ;; 4share) np=4; share=1 ;; 2share) share=1 ;; esac
  local id; id=$(printf '%sr%03d' "$run_id" "$row")
  local dir; dir=$out_dir/$(printf '%03d' "$row")-$scenario-$launcher-$config
  local port; port=$(port_of "$row")
  rows_done=$row
  if [ "$budget" -gt 0 ] && [ $(( $(date +%s) - t_start + limit + 5 )) -gt "$budget" ]; then
    not_run "$row" "$scenario" "$launcher" "$config" "$framework"
    return
  fi
  rm -rf "$dir"   # a row directory of an earlier run in the same OUT_DIR: its exit files would end this row at once
  mkdir -p "$dir/traces"
  current_dir=$dir
  pattern="(-Dnccl4j\\.row=|--row )$id( |\$)"
  declare -gA pid_rank=() rank_pid=() rank_gone=()
  started=()
  exit_files=()
  local bound_ms=2000
  case "$scenario" in stop) bound_ms=$((liveness_ms + 1000)) ;; cpu-stuck) bound_ms=22000 ;; esac
  local row_env=(NCCL4J_TRACE_DIR="$dir/traces" NCCL_NVLS_ENABLE=0)
  [ "$scenario" = cpu-stuck ] && row_env+=(NCCL4J_TIMEOUT=20s)
  [ "$share" = 1 ] && row_env+=(NCCL4J_DEVICE=0 NCCL_SOCKET_IFNAME=lo)
  local prog=("$scenario" --steps "$steps" --step "$event_step" --count "$count")
  [ -n "$event_rank" ] && prog+=(--rank "$event_rank")
  local jvm=(-XX:ErrorFile="$dir/hs_err_%p.log" -Dnccl4j.row="$id")
  # shellcheck disable=SC2206  # JAVA_OPTS holds several options, split on white space as the other scripts do
  jvm+=(${JAVA_OPTS:-})
  local pyargs=("${prog[@]}" --log-dir "$dir" --row "$id")
  [ "$scenario" = cpu-stuck ] && pyargs+=(--timeout-s 20)
  local t0; t0=$(now_ms)
  case "$launcher" in
    java|python)
      for ((r = 0; r < np; r++)); do
        local renv=("${row_env[@]}" RANK="$r" WORLD_SIZE="$np" LOCAL_RANK="$r" LOCAL_WORLD_SIZE="$np"
          MASTER_ADDR=127.0.0.1 MASTER_PORT="$port")
        [ "$share" = 1 ] && renv+=(NCCL_HOSTID="nccl4j-host$r")
        if [ "$launcher" = java ]; then
          start_rank "$dir" "$r" env "${renv[@]}" "$java" "${jvm[@]}" -cp "$cp" "$main" "${prog[@]}"
        else
          start_rank "$dir" "$r" env "${renv[@]}" "$py" -u "$torch_script" "${pyargs[@]}"
        fi
      done ;;
    run)
      local share_opt=()
      [ "$share" = 1 ] && share_opt=(--share-gpu)
      start_launcher "$dir" env "${row_env[@]}" NCCL4J_BUNDLE="$bundle" JAVA_OPTS="${jvm[*]}" "$here/nccl4j-run" \
        "${share_opt[@]}" --port "$port" -np "$np" "$main" "${prog[@]}" ;;
    mpirun)
      { echo '#!/usr/bin/env bash'
        # shellcheck disable=SC2016  # the rank's own OMPI_COMM_WORLD_RANK, expanded in the rank's script
        [ "$share" = 1 ] && echo 'export NCCL_HOSTID=nccl4j-host$OMPI_COMM_WORLD_RANK'
        printf 'exec'; printf ' %q' "$java" "${jvm[@]}" -cp "$cp" "$main" "${prog[@]}"; echo
      } > "$dir/rank.sh"
      chmod +x "$dir/rank.sh"
      nccl4j_mpi_forward_args NCCL_ NCCL4J_ LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES
      local fwd=("${nccl4j_mpi_fwd[@]}") kv
      for kv in "${row_env[@]}"; do
        case " ${fwd[*]} " in *" ${kv%%=*} "*) ;; *) fwd+=(-x "${kv%%=*}") ;; esac
      done
      # shellcheck disable=SC2086  # MPIRUN_OPTS holds several options
      start_launcher "$dir" env "${row_env[@]}" mpirun "${nccl4j_mpi_root[@]}" --bind-to none --tag-output \
        -np "$np" "${fwd[@]}" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" ${MPIRUN_OPTS:-} "$dir/rank.sh" ;;
    torchrun)
      { echo '#!/usr/bin/env bash'
        # shellcheck disable=SC2016  # the rank's own RANK, expanded in the rank's script
        [ "$share" = 1 ] && echo 'export NCCL_HOSTID=nccl4j-host$RANK'
        printf 'exec'; printf ' %q' "$py" -u "$torch_script" "${pyargs[@]}"; echo
      } > "$dir/rank.sh"
      chmod +x "$dir/rank.sh"
      # the underscore spellings, which every torchrun takes (the hyphenated ones came later)
      start_launcher "$dir" env "${row_env[@]}" "${torchrun[@]}" --nnodes 1 --nproc_per_node "$np" \
        --master_addr 127.0.0.1 --master_port "$port" --no_python "$dir/rank.sh" ;;
  esac
  # Wait for the row's end: every started process exited, or the limit.
  local now sig_ms="" stopped_by_us="" at_limit=0 t_kill=0 p f logs
  while :; do
    now=$(now_ms)
    poll
    local done_all=1
    for f in "${exit_files[@]}"; do [ -e "$f" ] || { done_all=0; break; }; done
    [ "$done_all" = 1 ] && break
    if [ "$scenario" = sigterm-launcher ] && [ -z "$sig_ms" ] \
        && grep -aqs 'EVENT rank=' "$dir"/*.log; then
      sig_ms=$(now_ms)
      # shellcheck disable=SC2046  # one pid per word
      kill -TERM $(pids "$dir") 2> /dev/null
    fi
    if [ "$launcher" = java ] || [ "$launcher" = python ]; then
      # a stopped rank cannot end: once every other rank has, the script kills it
      local running=() ended=0
      for ((r = 0; r < np; r++)); do
        if [ -e "$dir/exit$r" ]; then ended=$((ended + 1)); elif [ -s "$dir/pid$r" ]; then running+=("$r"); fi
      done
      if [ "$ended" -gt 0 ] && [ ${#running[@]} -gt 0 ]; then
        local all_t=1
        for r in "${running[@]}"; do
          [ "$(ps -o stat= -p "$(cat "$dir/pid$r")" 2> /dev/null | cut -c1)" = T ] || all_t=0
        done
        if [ "$all_t" = 1 ]; then
          for r in "${running[@]}"; do kill -KILL "$(cat "$dir/pid$r")" 2> /dev/null; stopped_by_us+=" $r"; done
        fi
      fi
    fi
    if [ $((now - t0)) -ge $((limit * 1000)) ]; then
      at_limit=1
      t_kill=$now
      # shellcheck disable=SC2046  # one pid per word
      kill -KILL $(pids "$dir") $(marked) 2> /dev/null
      break
    fi
    sleep 0.1
  done
  local t_end; t_end=$(now_ms)
  wait "${started[@]}" 2> /dev/null
  # Processes left: rank processes still there 2 s after the row's processes ended (or were killed at the limit).
  local left_pids="" i
  for i in $(seq 1 20); do
    poll
    left_pids=$(marked)
    [ -z "${left_pids// /}" ] && break
    sleep 0.1
  done
  local left=0 left_note=""
  if [ -n "${left_pids// /}" ]; then
    for p in $left_pids; do
      left=$((left + 1))
      left_note+=" r${pid_rank[$p]:-?}:pid$p"
      kill -KILL "$p" 2> /dev/null
    done
    [ "$at_limit" = 1 ] && left_note=" still there after SIGKILL:$left_note"
  fi
  # What happened, rank by rank.
  logs=("$dir"/*.log)
  local ev ev_rank="" ev_t=""
  ev=$(grep -aho "EVENT rank=[0-9]* t=[0-9]* .*" "${logs[@]}" 2> /dev/null | sort -t= -k3n | head -1)
  if [[ $ev =~ ^EVENT\ rank=([0-9]+)\ t=([0-9]+) ]]; then ev_rank=${BASH_REMATCH[1]}; ev_t=${BASH_REMATCH[2]}; fi
  local leaver=${ev_rank:-${event_rank:-$((np - 1))}}
  local results=() ends=() measured="" worst="" worst_ms=-1 within=yes exits="" lstat="" seen=""
  [ -z "$ev_t" ] && within="no EVENT"
  for ((r = 0; r < 4; r++)); do
    results[r]=""
    ends[r]=""
    [ "$r" -lt "$np" ] || continue
    local res st="" ems=""
    res=$(grep -aho "RESULT rank=$r t=[0-9]* .*" "${logs[@]}" 2> /dev/null | head -1)
    local rt=""
    [[ $res =~ ^RESULT\ rank=[0-9]+\ t=([0-9]+)\ (.*)$ ]] && { rt=${BASH_REMATCH[1]}; res=${BASH_REMATCH[2]}; }
    if [ -f "$dir/exit$r" ]; then
      read -r st ems < "$dir/exit$r"
      exits+=" r$r=$st"
    else
      ems=${rank_gone[$r]:-}
    fi
    [ -z "$ems" ] && ems=$rt
    # still running when the limit killed the row: ended (or seen gone) no earlier than the kill
    local still=0
    if [ "$at_limit" = 1 ] && { [ -z "$ems" ] || [ "$ems" -ge "$t_kill" ]; }; then still=1; fi
    if [ -z "$res" ]; then   # a rank that nccl4j ended as left behind says so on its log, not on a RESULT line
      res=$(grep -aho "nccl4j: rank $r of [0-9]* was left behind and is stuck.*" "${logs[@]}" 2> /dev/null \
        | head -1 | cut -c1-160)
    fi
    [ -z "$res" ] && res=$(halted "$r" "${logs[@]}")   # ... and one halted during start-up
    local leaves_killed=0
    case "$scenario" in kill|startup-*-kill) [ "$r" = "$leaver" ] && leaves_killed=1 ;; esac
    if [ -z "$res" ]; then
      case " $stopped_by_us " in
        *" $r "*) res="stopped (killed by the script once the others had ended)" ;;
        *) if [ "$still" = 1 ]; then res="no line (killed at the limit)"
           elif [ "$st" = 137 ] || [ "$leaves_killed" = 1 ]; then res=killed
           else res="no line"; fi ;;
      esac
    fi
    results[r]=$(clean "$res")
    local timed=1
    case "$scenario" in kill|stop|abort-live|startup-*-kill) [ "$r" = "$leaver" ] && timed=0 ;; esac
    [ "$timed" = 1 ] && measured+=" $r"
    if [ "$still" = 1 ]; then
      ends[r]="still waiting at $limit s"
      if [ "$timed" = 1 ]; then worst="still waiting at $limit s"; worst_ms=999999999; within=no; fi
    elif [ -n "$ems" ] && [ -n "$ev_t" ]; then
      local d=$((ems - ev_t))
      ends[r]=$(seconds "$d")
      if [ "$timed" = 1 ]; then
        [ "$d" -gt "$worst_ms" ] && { worst_ms=$d; worst=${ends[r]}; }
        [ "$d" -gt "$bound_ms" ] && [ "$within" = yes ] && within=no
      fi
    elif [ -n "$ems" ]; then
      ends[r]="ended $(seconds $((ems - t0))) s after the start"
    else
      ends[r]="-"
      [ "$timed" = 1 ] && [ "$within" = yes ] && within=no
    fi
    if [ "$timed" = 1 ] && [ -z "$seen" ] && [ "$r" != "$leaver" ]; then seen=$(seen_line "$dir" "$r"); fi
  done
  [ -z "$seen" ] && seen=$(seen_line "$dir" "$leaver")
  if [ -z "$seen" ] && [ -f "$dir/run.log" ]; then   # what the launcher says
    seen=$(grep -aE -m1 '^nccl4j-run: |mpirun noticed|Process name:|exitcode +:' "$dir/run.log" | sed 's/^ *//' \
      | cut -c1-200)
  fi
  if [ -f "$dir/exit.launcher" ]; then
    read -r lstat _ < "$dir/exit.launcher"
    [ "$at_limit" = 1 ] && [ "$lstat" = 137 ] && lstat="137 (killed at the limit)"
    exits="$launcher=$lstat$(launcher_statuses "$dir/run.log")"
  fi
  exits=${exits# }
  local traces; traces=$(find "$dir/traces" -name 'nccl4j-trace-rank*.json' 2> /dev/null | wc -l)
  local tv="-"
  if [ "$traces" -gt 0 ] && [ "$framework" = nccl4j ]; then
    NCCL4J_BUNDLE=$bundle "$here/nccl4j-trace" "$dir/traces" > "$dir/analyzer.txt" 2>&1
    tv=$(grep -m1 '^nccl4j-trace: ' "$dir/analyzer.txt" || head -1 "$dir/analyzer.txt")
  fi
  local hs; hs=$(find "$dir" -maxdepth 1 -name 'hs_err_*.log' 2> /dev/null | wc -l)
  local notes=""
  if [ -n "$sig_ms" ]; then
    local whom="the launcher"
    case "$launcher" in java|python) whom="every rank" ;; esac
    notes+="SIGTERM to $whom at +$(seconds $((sig_ms - ${ev_t:-$sig_ms}))) s; "
  fi
  [ "$left" -gt 0 ] && notes+="left:$left_note; "
  [ "$scenario" = sigterm-launcher ] && [ -z "$sig_ms" ] && notes+="no EVENT seen, no SIGTERM sent; "
  local unplaced   # a start-up scenario whose place the watcher never saw ran without a departure
  unplaced=$(grep -ahom1 "rank [0-9]*: startup-[a-z-]* was not placed: .*" "${logs[@]}" 2> /dev/null | head -1 \
    | sed 's/; the run goes on without a departure$//')
  [ -n "$unplaced" ] && notes+="$unplaced; "
  notes=${notes%; }
  local secs; secs=$(seconds $((t_end - t0)))
  tsv_line "$row" "$scenario" "$launcher" "$config" "$framework" "$np" "$(seconds "$bound_ms")" "$ev_rank" "$ev_t" \
    "${results[0]}" "${results[1]}" "${results[2]}" "${results[3]}" "${ends[0]}" "${ends[1]}" "${ends[2]}" "${ends[3]}" \
    "${measured# }" "$worst" "$(clean "$exits")" "$traces" "$(clean "$tv")" "$hs" "$left" "$within" "$secs" \
    "$(clean "$seen")" "$(clean "$notes")" >> "$tsv"
  render "$tsv" "$md"
  echo "[$row/$rows_total] $scenario $launcher $config: within $(seconds "$bound_ms") s: $within" \
    "(last timed end ${worst:--}), exits $exits, traces $traces, hs_err $hs, left $left, $secs s${seen:+ | $seen}"
}

# run_draws N JOBS WINDOW RUN DIR: N runs of RUN (RUN K VICTIM DELAY_MS DIR/K), JOBS at a time, each with a victim
# (a rank below fuzz_ranks) and a delay of 0..WINDOW ms drawn from RANDOM (seeded by the caller) before any run starts; no run is
# started that could end past BUDGET (fuzz_limit seconds a run). Sets started_runs (the caller's local) to the runs
# started, and victims and delays (the caller's locals too) to the draws; returns once every one has ended.
run_draws() {
  local n=$1 jobs=$2 window=$3 run=$4 dir=$5 k p
  local running=()
  for ((k = 1; k <= n; k++)); do
    victims[k]=$((RANDOM % fuzz_ranks))
    delays[k]=$(( (RANDOM * 32768 + RANDOM) % (window + 1) ))
  done
  for ((k = 1; k <= n; k++)); do
    while :; do
      local still=()
      for p in "${running[@]}"; do kill -0 "$p" 2> /dev/null && still+=("$p"); done
      running=("${still[@]}")
      [ ${#running[@]} -lt "$jobs" ] && break
      sleep 0.2
    done
    # BUDGET: no run is started that could end past it
    if [ "$budget" -gt 0 ] && [ $(( $(date +%s) - t_start + fuzz_limit + 5 )) -gt "$budget" ]; then break; fi
    "$run" "$k" "${victims[k]}" "${delays[k]}" "$dir/$(printf '%03d' "$k")" &
    running+=($!)
    started_runs=$k
  done
  for p in "${running[@]}"; do wait "$p"; done
}

# ---------------------------------------------------------------- FUZZ

# fuzz_start DIR K ID MODE: a fuzz run's fuzz_ranks plain ranks (DepartureScenarios MODE: fuzz or startup-fuzz) on
# port port_of K, GPU K mod G or their own GPUs (FUZZ_CONFIG); fuzz_born[r] is the time each rank's process started
fuzz_start() {
  local dir=$1 k=$2 id=$3 mode=$4 r port gpu=$(($2 % gpus))
  port=$(port_of "$k")
  rm -rf "$dir"
  mkdir -p "$dir/traces"
  pattern="(-Dnccl4j\\.row=|--row )$id( |\$)"
  started=()
  exit_files=()
  local jvm=(-XX:ErrorFile="$dir/hs_err_%p.log" -Dnccl4j.row="$id")
  # shellcheck disable=SC2206  # JAVA_OPTS holds several options
  jvm+=(${JAVA_OPTS:-})
  for ((r = 0; r < fuzz_ranks; r++)); do
    local renv=(NCCL4J_TRACE_DIR="$dir/traces" NCCL_NVLS_ENABLE=0 RANK="$r" WORLD_SIZE="$fuzz_ranks" LOCAL_RANK="$r"
      LOCAL_WORLD_SIZE="$fuzz_ranks" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port")
    [ "$fuzz_config" = share ] && renv+=(NCCL4J_DEVICE="$gpu" NCCL_HOSTID="nccl4j-host$r" NCCL_SOCKET_IFNAME=lo)
    fuzz_born[r]=$(now_ms)
    start_rank "$dir" "$r" env "${renv[@]}" "$java" "${jvm[@]}" -cp "$cp" "$main" "$mode" --steps "$fuzz_steps" \
      --sleep-ms "$fuzz_sleep" --count 64K ${join_first:+--join-first}
  done
}

# fuzz_reap: waits for a fuzz run's ranks, then kills what of the run is still there 2 s later; fuzz_left: how many
fuzz_reap() {
  local i p
  wait "${started[@]}" 2> /dev/null
  fuzz_left=0
  for i in $(seq 1 20); do
    [ -z "$(marked | tr -d ' ')" ] && break
    sleep 0.1
  done
  for p in $(marked); do fuzz_left=$((fuzz_left + 1)); kill -KILL "$p" 2> /dev/null; done
}

# fuzz_run K VICTIM DELAY_MS DIR: one run; writes DIR/result: victim phase victim_status survivor_status
# survivor_ms crash hs_err left survivor_result wrong_data (1: the survivor's step ended with a result that is not
# the sum, DepartureScenarios' own check)
fuzz_run() {
  local k=$1 victim=$2 delay=$3 dir=$4
  fuzz_start "$dir" "$k" "$(printf '%sf%03d' "$run_id" "$k")" fuzz
  local t0 now ready="" sig_ms="" at_limit=0
  t0=$(now_ms)
  while :; do
    now=$(now_ms)
    [ -e "$dir/exit0" ] && [ -e "$dir/exit1" ] && break
    if [ $((now - t0)) -ge $((fuzz_limit * 1000)) ]; then
      at_limit=1
      # shellcheck disable=SC2046  # one pid per word
      kill -KILL $(pids "$dir") $(marked) 2> /dev/null
      break
    fi
    if [ -z "$ready" ] && grep -aqs '^READY rank=' "$dir"/rank*.log; then
      ready=$now
      sleep "$(awk -v m="$delay" 'BEGIN { printf "%.3f", m / 1000 }')"
      sig_ms=$(now_ms)
      kill -TERM "$(cat "$dir/pid$victim" 2> /dev/null)" 2> /dev/null
      continue
    fi
    sleep 0.05
  done
  fuzz_reap
  local left=$fuzz_left survivor=$((1 - victim)) vst vms sst sms
  read -r vst vms < "$dir/exit$victim"
  read -r sst sms < "$dir/exit$survivor"
  local phase closing
  closing=$(grep -aho '^CLOSING rank=[0-9]* t=[0-9]*' "$dir/rank$victim.log" 2> /dev/null | head -1 | sed 's/.*t=//')
  if [ -z "$sig_ms" ]; then phase="no READY"
  elif [ "$vms" -le "$sig_ms" ]; then phase=after
  elif [ -n "$closing" ] && [ "$closing" -le "$sig_ms" ]; then phase=close
  else phase=steps; fi
  local surv_ms=""
  if [ -n "$sig_ms" ] && [ "$sms" -gt "$sig_ms" ]; then
    surv_ms=$((sms - sig_ms))
    [ "$at_limit" = 1 ] && [ "$sst" = 137 ] && surv_ms="limit"
  fi
  local hs; hs=$(find "$dir" -maxdepth 1 -name 'hs_err_*.log' | wc -l)
  local crash=0
  [ "$hs" -gt 0 ] && crash=1
  case " $vst $sst " in *" 134 "*|*" 139 "*) crash=1 ;; esac
  local sres wrong=0
  sres=$(grep -aho "RESULT rank=$survivor t=[0-9]* .*" "$dir/rank$survivor.log" 2> /dev/null | head -1 \
    | sed 's/^RESULT rank=[0-9]* t=[0-9]* //')
  [[ $sres =~ ^$not_the_sum ]] && wrong=1
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "$victim" "$delay" "$phase" "$vst" "$sst" \
    "$surv_ms" "$crash" "$hs" "$left" "$(clean "${sres:-no line}")" "$wrong" > "$dir/result"
}

# fuzz_jobs_and_config JOBS: checks JOBS (1 or more) and sets fuzz_config from FUZZ_CONFIG (share, the default, or
# gpus, which needs a GPU a rank: fuzz_ranks), for FUZZ and STARTUP_FUZZ alike
fuzz_jobs_and_config() {
  whole JOBS "$1"
  [ "$1" -ge 1 ] || die "JOBS=$1: 1 or more"
  fuzz_config=${FUZZ_CONFIG:-share}
  case "$fuzz_config" in share) ;;
    gpus) [ "$gpus" -ge "$fuzz_ranks" ] || die "FUZZ_CONFIG=gpus needs $fuzz_ranks GPUs, found $gpus" ;;
    *) die "FUZZ_CONFIG=$fuzz_config: share or gpus" ;; esac
}

fuzz_main() {
  local n=$fuzz jobs=${JOBS:-4} k
  fuzz_ranks=2
  fuzz_jobs_and_config "$jobs"
  fuzz_steps=${FUZZ_STEPS:-100}
  whole FUZZ_STEPS "$fuzz_steps"
  fuzz_sleep=${FUZZ_SLEEP_MS:-10}
  whole FUZZ_SLEEP_MS "$fuzz_sleep"
  local window=${FUZZ_WINDOW_MS:-1600}
  whole FUZZ_WINDOW_MS "$window"
  fuzz_limit=${FUZZ_LIMIT:-30}
  whole FUZZ_LIMIT "$fuzz_limit"
  local seed=${FUZZ_SEED:-$(( $(date +%s) % 32768 ))}
  whole FUZZ_SEED "$seed"
  RANDOM=$seed
  echo "== FUZZ: $n runs, $jobs at a time, FUZZ_CONFIG=$fuzz_config, SIGTERM 0..$window ms after the first READY" \
    "(FUZZ_SEED=$seed), logs in $out_dir/fuzz"
  local started_runs=0 victims=() delays=()
  run_draws "$n" "$jobs" "$window" fuzz_run "$out_dir/fuzz"
  local ftsv=$out_dir/fuzz.tsv
  printf 'run\tvictim\tdelay_ms\tphase\tvictim_status\tsurvivor_status\tsurvivor_ms\tcrash\ths_err\tleft\tsurvivor_result\t%s\n' \
    wrong_data > "$ftsv"
  for ((k = 1; k <= started_runs; k++)); do
    local res
    res=$out_dir/fuzz/$(printf '%03d' "$k")/result
    if [ -f "$res" ]; then cat "$res" >> "$ftsv"
    else printf '%s\t%s\t%s\tno result\t\t\t\t0\t0\t0\t\t0\n' "$k" "${victims[k]}" "${delays[k]}" >> "$ftsv"; fi
  done
  local line
  line=$(awk -F'\t' -v n="$started_runs" -v notrun=$((n - started_runs)) -v limit="$fuzz_limit" 'NR > 1 {
      crash += $8; left += $10; ph[$4]++; wrong += $12
      if ($7 == "limit") { waiting++; if (max < limit * 1000) max = limit * 1000 }
      else if ($7 != "" && $7 + 0 > max) max = $7 + 0
    }
    END {
      printf "FUZZ: JVM crashes: %d of %d runs; processes left: %d; SIGTERM during steps %d, during close %d, after the end %d", \
        crash, n, left, ph["steps"], ph["close"], ph["after"]
      if (ph["no READY"] + ph["no result"]) printf ", no READY %d", ph["no READY"] + ph["no result"]
      printf "; max time from SIGTERM to the survivor'"'"'s exit: %.2f s (bound 5 s: %s)", max / 1000, max <= 5000 ? "within" : "OVER"
      if (waiting) printf "; %d survivors still waiting at %d s", waiting, limit
      if (wrong) printf "; a step'"'"'s result not the sum on the survivor: %d of %d runs", wrong, n
      if (notrun) printf "; %d runs not started (BUDGET)", notrun
      print ""
    }' "$ftsv")
  { echo "# Departures: SIGTERM fuzz"
    echo
    echo "$line"
    echo
    echo "$started_runs runs of $n, $jobs at a time, FUZZ_CONFIG=$fuzz_config, FUZZ_STEPS=$fuzz_steps, FUZZ_SLEEP_MS=$fuzz_sleep," \
      "FUZZ_WINDOW_MS=$window, FUZZ_SEED=$seed. Phase: where the SIGTERM found the rank it was sent to."
    echo
    echo "| run | victim | delay ms | phase | victim exit | survivor exit | SIGTERM to survivor's exit | crash | hs_err | left |" \
      "survivor's RESULT | not the sum |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    awk -F'\t' 'NR > 1 { s = $7; if (s != "" && s != "limit") s = sprintf("%.2f s", s / 1000)
      gsub(/\|/, "\\|", $11); printf "| %s | r%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, s, $8, $9, $10, $11, \
        $12 == 1 ? "yes" : "" }' "$ftsv"
  } > "$out_dir/fuzz.md"
  echo "$line"
  echo "report: $out_dir/fuzz.md"
  awk -F'\t' 'NR > 1 { runs++; if ($8 > 0 || $10 > 0 || $12 > 0 || $7 == "limit" || ($7 != "" && $7 + 0 > 5000)) bad++ }
    END { exit (bad || !runs) ? 1 : 0 }' "$ftsv"
}

if [ "$fuzz" -gt 0 ]; then
  fuzz_main
  exit
fi

# ---------------------------------------------------------------- STARTUP_FUZZ

# The PHASE names of DepartureScenarios, in order, then where a SIGTERM can also land: the order of the summary.
sfuzz_phases="launched joining rendezvous id-taken set-device nccl-init ready in-loop closing closed"

# sfuzz_run K VICTIM DELAY_MS DIR: one run of the start-up fuzz; writes DIR/result, a line of startup-fuzz.tsv
sfuzz_run() {
  local k=$1 victim=$2 delay=$3 dir=$4
  fuzz_start "$dir" "$k" "$(printf '%ss%03d' "$run_id" "$k")" startup-fuzz
  local born=("${fuzz_born[@]}")
  # the SIGTERM, DELAY_MS after the victim's process started; then the end of both ranks, or the limit
  local t0=${born[0]} target=$((born[victim] + delay)) now sig_ms="" at_limit=0 t_kill="" r all
  while :; do
    now=$(now_ms)
    all=1
    for ((r = 0; r < fuzz_ranks; r++)); do [ -e "$dir/exit$r" ] || { all=0; break; }; done
    [ "$all" = 1 ] && break
    if [ -z "$sig_ms" ] && [ "$now" -ge "$target" ] && [ -s "$dir/pid$victim" ] && [ ! -e "$dir/exit$victim" ]; then
      sig_ms=$(now_ms)
      kill -TERM "$(cat "$dir/pid$victim")" 2> /dev/null
      continue
    fi
    if [ $((now - t0)) -ge $((fuzz_limit * 1000)) ]; then
      at_limit=1
      t_kill=$now
      # shellcheck disable=SC2046  # one pid per word
      kill -KILL $(pids "$dir") $(marked) 2> /dev/null
      break
    fi
    if [ -z "$sig_ms" ] && [ $((target - now)) -lt 50 ]; then
      sleep "$(awk -v m=$((target - now)) 'BEGIN { printf "%.3f", (m > 0 ? m : 0) / 1000 }')"
    else
      sleep 0.05
    fi
  done
  fuzz_reap
  # the survivor that timed the run: the last rank other than the victim to end
  # and wrong: the survivors whose step ended with a result that is not the sum (DepartureScenarios' own check)
  local left=$fuzz_left survivor="" vst vms sst sms st ms sts="" wrong=0
  read -r vst vms < "$dir/exit$victim"
  for ((r = 0; r < fuzz_ranks; r++)); do
    [ "$r" = "$victim" ] && continue
    read -r st ms < "$dir/exit$r"
    sts+=" $st"
    if [ -z "$survivor" ] || [ "$ms" -gt "$sms" ]; then survivor=$r; sst=$st; sms=$ms; fi
    grep -aqE "^RESULT rank=$r t=[0-9]+ $not_the_sum" "$dir/rank$r.log" 2> /dev/null && wrong=$((wrong + 1))
  done
  # where the SIGTERM found the victim: its last PHASE line before it (none: the JVM was still starting)
  local phase at=""
  if [ -z "$sig_ms" ]; then
    if [ "$vms" -le "$target" ]; then phase="after the end"; else phase="no signal"; fi
  elif [ "$vms" -le "$sig_ms" ]; then
    phase="after the end"
  else
    at=$((sig_ms - born[victim]))
    phase=$(awk -v s="$sig_ms" -v r="rank=$victim" '$1 == "PHASE" && $2 == r && substr($3, 3) + 0 <= s { p = $4 }
      END { print (p == "" ? "launched" : p) }' "$dir/rank$victim.log" 2> /dev/null)
  fi
  # never started: before any nccl4j call (with FUZZ_JOIN_FIRST, before the JOINFIRST line: JobLiveness.join())
  local never=0 jf
  if [ "$phase" = launched ]; then
    never=1
    jf=$(grep -aom1 '^JOINFIRST t=[0-9]*' "$dir/rank$victim.log" 2> /dev/null | sed 's/.*t=//')
    [ -n "$jf" ] && [ -n "$sig_ms" ] && [ "$jf" -le "$sig_ms" ] && never=0
  fi
  # whether the liveness link was up when the SIGTERM came: the victim had joined rank 0's channel (rank 0 the
  # victim: every survivor had joined it); before that, nothing can tell a survivor (nccl4j's RankPhase)
  local joined="-" jr jrs=$victim jt
  [ "$victim" = 0 ] && jrs=$(seq 1 $((fuzz_ranks - 1)))
  if [ -n "$sig_ms" ] && [ "$phase" != "after the end" ]; then
    joined=yes
    for jr in $jrs; do
      jt=$(grep -aom1 "^JOINED rank=$jr t=[0-9]*" "$dir/rank$jr.log" 2> /dev/null | sed 's/.*t=//')
      if [ -z "$jt" ] || [ "$jt" -gt "$sig_ms" ]; then joined=no; fi
    done
  fi
  # the survivor: its end after the SIGTERM; a run whose job had ended first has nothing to time
  local surv_ms="" waiting=0 within=yes
  if [ -n "$sig_ms" ] && [ "$phase" != "after the end" ]; then
    if [ "$at_limit" = 1 ] && [ "$sms" -ge "$t_kill" ]; then
      waiting=1
      surv_ms=$((t_kill - sig_ms))
      within=no
    else
      surv_ms=$((sms > sig_ms ? sms - sig_ms : 0))
      [ "$surv_ms" -le 2000 ] || within=no
    fi
  fi
  local hs; hs=$(find "$dir" -maxdepth 1 -name 'hs_err_*.log' | wc -l)
  local crash=0
  [ "$hs" -gt 0 ] && crash=1
  case " $vst$sts " in *" 134 "*|*" 139 "*) crash=1 ;; esac
  local sres
  sres=$(grep -aho "RESULT rank=$survivor t=[0-9]* .*" "$dir/rank$survivor.log" 2> /dev/null | head -1 \
    | sed 's/^RESULT rank=[0-9]* t=[0-9]* //')
  [ -z "$sres" ] && sres=$(halted "$survivor" "$dir/rank$survivor.log")
  if [ -z "$sres" ]; then
    if [ "$waiting" = 1 ]; then sres="no line (still waiting at $fuzz_limit s, killed)"; else sres="no line"; fi
  fi
  # told: when the survivor's program had the exception (THROWN, else RESULT; a halt: its end), before any close
  local told_ms="" tt
  if [ -n "$surv_ms" ]; then
    told_ms=$surv_ms
    tt=$(grep -aoE "^(THROWN|RESULT) rank=$survivor t=[0-9]+" "$dir/rank$survivor.log" 2> /dev/null | head -1 \
      | sed 's/.*t=//')
    if [ "$waiting" = 0 ] && [ -n "$tt" ] && [ "$tt" -le "$sms" ]; then told_ms=$((tt > sig_ms ? tt - sig_ms : 0)); fi
  fi
  tsv_line "$k" "$victim" "$delay" "$at" "$phase" "$never" "$joined" "$vst" "$sst" "$surv_ms" "$waiting" "$within" \
    "$crash" "$hs" "$left" "$(clean "$sres")" "$told_ms" "$wrong" > "$dir/result"
}

sfuzz_main() {
  local n=$sfuzz jobs=${JOBS:-4} k
  fuzz_ranks=${FUZZ_RANKS:-2}
  whole FUZZ_RANKS "$fuzz_ranks"
  case "${FUZZ_JOIN_FIRST:-0}" in 0) join_first="" ;; 1) join_first=1 ;;
    *) die "FUZZ_JOIN_FIRST=${FUZZ_JOIN_FIRST}: 1 (JobLiveness.join() first in main) or 0" ;; esac
  [ "$fuzz_ranks" -ge 2 ] || die "FUZZ_RANKS=$fuzz_ranks: 2 or more"
  fuzz_jobs_and_config "$jobs"
  fuzz_steps=${FUZZ_STEPS:-160}
  whole FUZZ_STEPS "$fuzz_steps"
  [ "$fuzz_steps" -ge 1 ] || die "FUZZ_STEPS=$fuzz_steps: 1 or more"
  fuzz_sleep=${FUZZ_SLEEP_MS:-50}
  whole FUZZ_SLEEP_MS "$fuzz_sleep"
  local window=${FUZZ_WINDOW_MS:-8000}
  whole FUZZ_WINDOW_MS "$window"
  fuzz_limit=${FUZZ_LIMIT:-20}
  whole FUZZ_LIMIT "$fuzz_limit"
  [ "$fuzz_limit" -ge 1 ] || die "FUZZ_LIMIT=$fuzz_limit: give a run 1 s or more"
  [ $((window + 2000)) -le $((fuzz_limit * 1000)) ] || die "FUZZ_WINDOW_MS=$window and FUZZ_LIMIT=$fuzz_limit: a" \
    "run must last 2 s past the latest SIGTERM: raise FUZZ_LIMIT to $(( (window + 2999) / 1000 )) or more"
  local seed=${FUZZ_SEED:-$(( $(date +%s) % 32768 ))}
  whole FUZZ_SEED "$seed"
  RANDOM=$seed
  local fdir=$out_dir/startup-fuzz
  echo "== STARTUP_FUZZ: $n runs of $fuzz_ranks ranks${join_first:+ (JobLiveness.join() first)}, $jobs at a time," \
    "FUZZ_CONFIG=$fuzz_config, SIGTERM to a" \
    "random rank 0..$window ms" \
    "after its process started (FUZZ_SEED=$seed), FUZZ_LIMIT=$fuzz_limit s, logs in $fdir"
  local started_runs=0 victims=() delays=()
  run_draws "$n" "$jobs" "$window" sfuzz_run "$fdir"
  local ftsv=$out_dir/startup-fuzz.tsv res
  tsv_line run victim delay_ms signal_ms phase never_started joined victim_status survivor_status survivor_ms \
    at_limit within crash hs_err left survivor_result told_ms wrong_data > "$ftsv"
  for ((k = 1; k <= started_runs; k++)); do
    res=$fdir/$(printf '%03d' "$k")/result
    if [ -f "$res" ]; then cat "$res" >> "$ftsv"
    else tsv_line "$k" "${victims[k]}" "${delays[k]}" "" "no result" 0 - "" "" "" 0 no 0 0 0 "" "" 0 >> "$ftsv"; fi
  done
  local summary
  summary=$(awk -F'\t' -v n="$started_runs" -v notrun=$((n - started_runs)) -v limit="$fuzz_limit" \
      -v order="$sfuzz_phases" 'NR > 1 {
      crash += $13; left += $15; ph[$5]++
      if ($18 > 0) { wrongruns++; wrongranks += $18 }
      w = $12 == "yes"; t = $17 != "" && $17 + 0 <= 2000 && $11 != 1   # ended, told within 2 s
      within += w; told += t
      if ($6 == 1) { never++; if ($11 == 1) neverstill++; next }
      started++; swithin += w; stold += t
      if ($7 == "no") { unjoined++; if ($11 == 1) unjoinedstill++ }
      if ($10 != "" && (worst == "" || $10 + 0 > worst + 0)) {
        worst = $10; wrun = $1; wat = $4; wph = $5; wstill = $11
      }
    }
    END {
      printf "JVM crashes: %d of %d\n", crash, n
      printf "survivors ended within 2 s: %d of %d\n", within, n
      printf "survivors told within 2 s: %d of %d\n", told, n
      printf "of the %d runs whose victim had started: ended within 2 s %d, told within 2 s %d\n", started, \
        swithin, stold
      if (worst == "") print "slowest survivor: none (no run whose victim had started was timed)"
      else printf "slowest survivor: %.2f s (run %d, signal at %s ms, phase %s%s)\n", worst / 1000, wrun, wat, wph, \
        wstill ? "; still waiting at the limit, FUZZ_LIMIT=" limit " s" : ""
      m = split(order, o, " ")
      line = "signal landed (the victim'"'"'s phase):"
      for (i = 1; i <= m; i++) { line = line (i > 1 ? "," : "") " " o[i] " " ph[o[i]] + 0; seen[o[i]] = 1 }
      for (p in ph) if (!(p in seen)) line = line ", " p " " ph[p]
      print line
      printf "waited for a rank that never started: %d (still waiting at FUZZ_LIMIT=%d s: %d)\n", never, limit, \
        neverstill
      printf "signal after launched, before the liveness link was up: %d (still waiting at FUZZ_LIMIT=%d s: %d)\n", \
        unjoined, limit, unjoinedstill
      printf "processes left: %d\n", left
      printf "a step'"'"'s result not the sum on a survivor: %d of %d runs (%d ranks)\n", wrongruns, n, wrongranks
      if (notrun) printf "runs not started (BUDGET): %d\n", notrun
    }' "$ftsv")
  { echo "# Departures: SIGTERM fuzz from the process's start"
    echo
    echo "${summary//$'\n'/$'  \n'}  "   # markdown: each line its own
    echo
    echo "$started_runs runs of $n, $fuzz_ranks ranks, $jobs at a time, FUZZ_CONFIG=$fuzz_config," \
      "FUZZ_STEPS=$fuzz_steps," \
      "FUZZ_SLEEP_MS=$fuzz_sleep, FUZZ_WINDOW_MS=$window, FUZZ_LIMIT=$fuzz_limit, FUZZ_SEED=$seed. Signal: ms after" \
      "the victim's process started; phase: its last PHASE line before the SIGTERM (launched: none, or before" \
      "fromEnvironment); joined: the victim had joined rank 0's liveness channel (rank 0 the victim: the survivor" \
      "had) before the SIGTERM; survivor: from the SIGTERM to its exit; told: to the exception in its program" \
      "(THROWN, else RESULT), before the close."
    echo
    echo "| run | victim | drawn ms | signal ms | phase | joined | victim exit | survivor exit | survivor | told |" \
      "within 2 s | crash | hs_err | left | survivor's RESULT |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    awk -F'\t' 'NR > 1 { s = $10; if (s != "") s = sprintf("%.2f s", s / 1000)
      if ($11 == 1) s = s " (still waiting, killed)"
      if ($6 == 1) s = s " (never started)"
      t = $17; if (t != "") t = sprintf("%.2f s", t / 1000)
      gsub(/\|/, "\\|", $16)
      printf "| %s | r%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, \
        $7, $8, $9, s, t, $12, $13, $14, $15, $16 }' "$ftsv"
  } > "$out_dir/startup-fuzz.md"
  echo "$summary"
  echo "report: $out_dir/startup-fuzz.md"
  awk -F'\t' 'NR > 1 { runs++; if ($13 > 0 || $15 > 0 || $18 > 0 || ($6 != 1 && $12 != "yes")) bad++ }
    END { exit (bad || !runs) ? 1 : 0 }' "$ftsv"
}

if [ "$sfuzz" -gt 0 ]; then
  sfuzz_main
  exit
fi

# ---------------------------------------------------------------- the matrix

plan=()
for c in $configs; do
  need=1
  case "$c" in 2gpu) need=2 ;; 4gpu) need=4 ;; esac
  if [ "$gpus" -lt "$need" ]; then
    echo "== $c: skipped: it needs $need GPUs, and this machine has $gpus"
    continue
  fi
  for l in $launchers; do
    for s in $scenarios; do plan+=("$s $l $c"); done
  done
done
rows_total=${#plan[@]}
[ "$rows_total" -gt 0 ] || die "no row to run (CONFIGS=$configs on $gpus GPU(s))"
bud=""
[ "$budget" -gt 0 ] && bud=", BUDGET=$budget s"
echo "== $rows_total rows (ROW_LIMIT=$limit s$bud), report in $md"
for p in "${plan[@]}"; do
  # shellcheck disable=SC2086  # three words: scenario, launcher, config
  run_row $p
done
summary "$tsv"
echo "report: $md"
verdict "$tsv"
