#!/usr/bin/env bash
# control-plane-scale.sh: the control plane at scale, simulated on one CPU machine (issue 29, point 5): for each
# rank count, one JVM runs that many ranks as threads, on loopback, through the real rendezvous (TCP, with a job
# secret) and the real liveness channel, with no GPU and no NCCL (the id is 128 made-up bytes), and measures them.
#
#   scripts/bench/control-plane-scale.sh [N...]      N: rank counts (default: 64 256 1024 2048 4096)
#
# Per N (org.nccl4j.control.ControlPlaneScale, in nccl4j-core's test sources, as it drives the package-private liveness
# channel): the time until every rank has the id, the time until every rank's roster is complete, rank 0's threads
# once all joined, rank 0's CPU and allocation rate and the other ranks' CPU with heartbeats running WINDOW s
# (default 10), the JVM's heap after a GC (every rank's side together), the time until one rank dropped without a
# goodbye is named on every other rank, the same for 64 dropped at once, and the time until a departure and a dump
# request (a departure of kind failure, which makes every rank write its flight record) reach every other rank.
#
# Builds nccl4j-core's classes and test classes first with the reactor, offline (mvn -o test-compile; BUILD=0 skips
# this, using what target/ holds). Each N's JSON object goes to OUT_DIR/N.json (OUT_DIR default: a new temporary
# directory); OUT_DIR/control-plane-scale.json holds them all, as one array, printed at the end with a table.
# CORE_CLASSES=DIR runs the classes of DIR/classes and DIR/test-classes instead of the build's (a copy of an earlier
# build's nccl4j-core/target, to measure before and after a change with the same harness).
# BUNDLE=DIR runs from a bundle of scripts/gpu-bundle.sh instead (its jre/bin/java and lib/*, the core's test jar
# holding the harness; no build): how it ran on a 16-core GPU machine, which has no JDK.
# Variables: WINDOW, OUT_DIR, BUILD, CORE_CLASSES, BUNDLE, JAVA_OPTS (default -Xmx6g -Xss512k; split at white space),
# LIMIT (seconds per N, default 600). The machine needs about 3 N threads and 2 N sockets per JVM: ulimit -n is raised to its hard limit
# and checked, and the script refuses an N that would not fit (4 N + 256 file descriptors).
# Exit status: 0 when every N gave its figures, 1 otherwise, 2 for a usage error or a machine that cannot hold N.
set -uo pipefail
tool=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
die() { echo "$tool: $*" >&2; exit 2; }
case "${1:-}" in -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(64 256 1024 2048 4096)
for n in "${sizes[@]}"; do
  case "$n" in ''|*[!0-9]*) die "not a rank count: $n" ;; esac
  [ "$n" -ge 8 ] || die "at least 8 ranks: $n"
done
window=${WINDOW:-10}
limit=${LIMIT:-600}
out=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/control-plane-scale.XXXXXX")}
mkdir -p "$out" || die "cannot make $out"
out=$(cd "$out" && pwd)
read -r -a opts <<< "${JAVA_OPTS:--Xmx6g -Xss512k}"
java=java
[ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && java=$JAVA_HOME/bin/java
[ -n "${BUNDLE:-}" ] && java=$BUNDLE/jre/bin/java
command -v "$java" > /dev/null || die "no java found: set JAVA_HOME or put java on PATH"

ulimit -n "$(ulimit -Hn)" 2> /dev/null || true
fds=$(ulimit -n)
for n in "${sizes[@]}"; do
  if [ "$fds" != unlimited ] && [ $((4 * n + 256)) -gt "$fds" ]; then
    die "$n ranks need about $((4 * n + 256)) file descriptors but ulimit -n is $fds"
  fi
done

cp_file=$out/classpath.txt
if [ -n "${BUNDLE:-}" ]; then
  [ -x "$BUNDLE/jre/bin/java" ] || die "BUNDLE=$BUNDLE has no jre/bin/java (scripts/gpu-bundle.sh makes one)"
  BUILD=0
  echo "$BUNDLE/lib/*" > "$cp_file"
elif [ "${BUILD:-1}" != 0 ]; then
  (cd "$root" && mvn -B -ntp -q -o -pl nccl4j-core -am test-compile dependency:build-classpath \
      -Dmdep.outputFile="$cp_file" -Dmdep.includeScope=test) || die "the build failed"
fi
if [ ! -s "$cp_file" ]; then
  (cd "$root" && mvn -B -ntp -q -o -pl nccl4j-core dependency:build-classpath -Dmdep.outputFile="$cp_file" \
      -Dmdep.includeScope=test) || die "cannot resolve nccl4j-core's class path (build once without BUILD=0)"
fi
if [ -n "${BUNDLE:-}" ]; then
  classpath=$(cat "$cp_file")
else
  core=${CORE_CLASSES:-$root/nccl4j-core/target}
  if [ ! -d "$core/classes" ] || [ ! -d "$core/test-classes" ]; then die "no classes and test-classes in $core"; fi
  classpath=$core/test-classes:$core/classes:$root/nccl4j-native/target/classes
  classpath=$classpath:$(cat "$cp_file")
fi

{
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), $(uname -sr)"
  echo "jdk: $("$java" -version 2>&1 | head -1)"
  echo "ulimit -n: $fds; threads-max: $(cat /proc/sys/kernel/threads-max); pid_max: $(cat /proc/sys/kernel/pid_max)"
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2> /dev/null)$(git -C "$root" diff --quiet HEAD 2> /dev/null \
      || echo ' (with local changes)')"
  echo "java options: ${opts[*]}; classes: $core"
} | tee "$out/machine.txt"

status=0
objects=()
for n in "${sizes[@]}"; do
  echo "== $n ranks"
  timeout "$limit" "$java" "${opts[@]}" -cp "$classpath" org.nccl4j.control.ControlPlaneScale --ranks "$n" \
      --window "$window" --json "$out/$n.json" > "$out/$n.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$out/$n.json" ]; then
    echo "$tool: $n ranks failed (exit $rc); the last lines of $out/$n.log:" >&2
    tail -5 "$out/$n.log" >&2
    status=1
    continue
  fi
  cat "$out/$n.json"
  objects+=("$(cat "$out/$n.json")")
done

{
  echo "["
  for ((i = 0; i < ${#objects[@]}; i++)); do
    if [ "$i" -lt $((${#objects[@]} - 1)) ]; then echo "  ${objects[i]},"; else echo "  ${objects[i]}"; fi
  done
  echo "]"
} > "$out/control-plane-scale.json"
echo "== $out/control-plane-scale.json"
cat "$out/control-plane-scale.json"
exit $status
