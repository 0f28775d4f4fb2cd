#!/usr/bin/env bash
# LivenessCostScriptTest's stand-in for a bundle's jre/bin/java, what scripts/bench/liveness-cost.sh starts:
#   java -version
#       prints 'openjdk version "17.0.99" (fake)' on stderr
#   java ... -cp CP org.nccl4j.tools.harness.DepartureScenarios none --steps N --step 1 --sleep-ms MS --count C
#       a rank of the heartbeat job: prints "LCENV rank=R ..." (the variables the script sets, whether
#       NCCL4J_JOB_SECRET is set and how long it is, the side named by the class path's nccl4j-core jar: the first
#       entry "side-NAME" in it, the side named by its nccl4j-tools jar (the harness's) as tools=side-NAME, and the
#       arguments), then START; names its process nccl4j-liveness (/proc/PID/comm, where a liveness thread's name is
#       read), takes N steps of MS ms and prints RESULT ok
#   java ... anything else (departures.sh's rows, nccl4j-trace)
#       prints the LCENV line and runs FAKE_DEPARTURES_JAVA (departures-fake.sh, named java) with the arguments
now() { date +%s%3N; }
say() { printf '%s\n' "$*"; }

if [ "${1:-}" = -version ]; then
  echo 'openjdk version "17.0.99" (fake)' >&2
  exit 0
fi
cp="" args=() prev=""
for a in "$@"; do
  [ "$prev" = -cp ] && cp=$a
  prev=$a
done
core="" side="" tools="" tools_side=""
IFS=: read -r -a entries <<< "$cp"
for j in "${entries[@]}"; do
  case "$j" in
    */nccl4j-core-*-tests.jar|*/nccl4j-tools-*-tests.jar) ;;
    */nccl4j-core-*.jar) core=$j ;;
    */nccl4j-tools-*.jar) tools=$j ;;
  esac
done
[ -n "$core" ] && side=$(grep -ao 'side-[a-z]*' "$core" 2> /dev/null | head -1)
[ -n "$tools" ] && tools_side=$(grep -ao 'side-[a-z]*' "$tools" 2> /dev/null | head -1)
secret=none
[ -n "${NCCL4J_JOB_SECRET:-}" ] && secret=${#NCCL4J_JOB_SECRET}
lcenv() {
  say "LCENV rank=${RANK-unset} WORLD_SIZE=${WORLD_SIZE-unset} LOCAL_RANK=${LOCAL_RANK-unset}" \
    "MASTER_ADDR=${MASTER_ADDR-unset} MASTER_PORT=${MASTER_PORT-unset} NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE-unset}" \
    "secret=$secret core=$core ${side:-side-none} tools=${tools_side:-side-none}" \
    "args=$*"
}
case " $* " in
  *" org.nccl4j.tools.harness.DepartureScenarios none "*)
    steps=8 ms=50
    prev=""
    for a in "$@"; do
      case "$prev" in --steps) steps=$a ;; --sleep-ms) ms=$a ;; esac
      prev=$a
      case "$a" in org.nccl4j.tools.harness.DepartureScenarios) args=() ;; *) args+=("$a") ;; esac
    done
    lcenv "${args[@]}"
    printf nccl4j-liveness > "/proc/$$/comm" 2> /dev/null
    say "START rank=$RANK t=$(now) pid=$$ size=$WORLD_SIZE device=$LOCAL_RANK none"
    s=$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')
    for ((i = 0; i < steps; i++)); do sleep "$s"; done
    say "RESULT rank=$RANK t=$(now) ok"
    exit 0 ;;
  *)
    lcenv
    exec "$FAKE_DEPARTURES_JAVA" "$@" ;;
esac
