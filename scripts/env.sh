# shellcheck shell=bash
# The setup that nccl4j's scripts share: which java, the class path, the CUDA library directories and mpirun's
# options. Sourced, never run, by gpu-test.sh, examples-gpu.sh, ddp-compare.sh, perf-compare.sh, scale-run.sh,
# nccl4j-run, nccl4j-perf and nccl4j-allreduce from the directory they sit in (scripts/, or a bundle: gpu-bundle.sh
# copies this file there with the scripts it copies). It only defines functions: it runs nothing, exports
# nothing and sets no shell option, so that it is safe under the scripts' set -euo pipefail. Where the scripts
# differ (which CUDA directories, in which order; which variables go to mpirun's ranks), the difference is an
# option or argument here, chosen by each script.
#
# Variables it reads (both for tests; neither needs setting on a GPU machine):
#   NCCL4J_CUDA_LIB_DIRS  the CUDA library directories, ':'-separated, the preferred first
#                         (default /usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64)
#   NCCL4J_AS_ROOT        1: mpirun runs as root, 0: it does not; unset: as `id -u` says
#
# Functions:
#   nccl4j_java_home          prints $JAVA_HOME/bin/java when that is executable; else returns 1
#   nccl4j_find_java PROG     prints JAVA_HOME's java, else the path of the java on PATH; else says so on stderr
#                             (as PROG) and returns 2
#   nccl4j_classpath DIR      prints the class path of the bundle DIR: DIR/lib/*.jar joined with ':' (glob order),
#                             without the JUnit console launcher (junit-platform-console-standalone)
#   nccl4j_classpath --wildcard DIR
#                             prints DIR/lib/* (java expands it: every jar, the console launcher included)
#   nccl4j_examples_jar ROOT  prints the nccl4j-examples jar of the checkout ROOT's build (not the -tests jar),
#                             or nothing
#   nccl4j_tools_jar ROOT     the same for nccl4j-tools (the tools and the harnesses), or nothing
#   nccl4j_build_classpath ROOT
#                             prints TOOLS:EXAMPLES:ROOT/nccl4j-tools/target/lib/*:ROOT/nccl4j-examples/target/lib/*
#                             (TOOLS: nccl4j_tools_jar ROOT, EXAMPLES: nccl4j_examples_jar ROOT): the tools, and the
#                             examples that nccl4j-run starts by name; returns 1 when ROOT has no such build (a jar or
#                             a target/lib missing), after printing
#   nccl4j_cuda_libs [--first] [--reverse] [--always] [--dedupe] [--print]
#                             puts the CUDA library directories that exist in front of LD_LIBRARY_PATH and exports
#                             it (unchanged, and not exported, when none exists). By default they come in the order
#                             of NCCL4J_CUDA_LIB_DIRS. --first: only its first directory. --reverse: each directory
#                             in turn is put in front, so that the last ends up first. --always: whether or not they
#                             exist. --dedupe: not those already in LD_LIBRARY_PATH. --print: prints the new value
#                             instead of setting LD_LIBRARY_PATH.
#   nccl4j_mpi_root_args      sets the array nccl4j_mpi_root to (--allow-run-as-root) when running as root, else ()
#   nccl4j_mpi_logged DIR NAME NP PORT CMD...
#                             runs CMD under mpirun -np NP (one process per GPU) with the per-rank command in
#                             DIR/NAME.rank.sh, so that mpirun parses none of CMD's arguments, and the output in
#                             DIR/NAME.log; mpirun gets nccl4j_mpi_root, --map-by $MAP_BY when set (slot:PE=4: four
#                             cores per rank), --bind-to ${BIND:-none}, the caller's array
#                             nccl4j_mpi_opts (the -x options), -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=PORT, and
#                             RUN_TIMEOUT seconds (default 240); returns mpirun's status
#   nccl4j_bundle_dir TOOL DIR
#                             prints DIR as an absolute path when it is a bundle (it holds jre/bin/java); else says
#                             "TOOL: no bundle at DIR (scripts/gpu-bundle.sh)" or "TOOL: DIR has no jre/bin/java" on
#                             stderr and returns 2
#   nccl4j_counted DIR NAME STATUS
#                             for a run whose STATUS is not 0: says it failed (see DIR/NAME.log) and shows the log's
#                             last 5 lines, adds 1 to the caller's failures and NAME to its array failed
#   nccl4j_baseline TOOL ROOT [--quiet]
#                             when $baseline (the caller's variable) is not an executable file: builds the checkout
#                             ROOT's C baseline (scripts/bench/native/build.sh; its output shown after a "== building" line,
#                             or hidden with --quiet) and sets baseline to ROOT/perf/native/build/nccl_perf_baseline;
#                             when the build fails, says "TOOL: the C baseline did not build" on stderr and returns 2
#   nccl4j_mpi_forward_args NAME...
#                             sets the array nccl4j_mpi_fwd to (-x VAR ...), for mpirun, with every exported variable
#                             (in `compgen -e` order) whose name starts with a NAME ending in '_' (NCCL_) or equals
#                             another NAME (LD_LIBRARY_PATH)
#
# The GPU scripts' ranks and GPUs (gpu-test.sh, examples-gpu.sh). Several ranks can share one GPU: each gets its own
# NCCL_HOSTID, so that NCCL takes them for different hosts and connects them over sockets (NCCL_SOCKET_IFNAME=lo)
# instead of refusing two ranks on one device; each rank picks device local rank mod device count itself.
#   nccl4j_gpu_args TOOL ARG...
#                             reads the arguments [--share-gpu] [bundle-dir] of TOOL: sets nccl4j_share_forced to 1
#                             for --share-gpu or SHARE_GPU=1 (else 0) and nccl4j_bundle_arg to the directory (or
#                             ""); an unknown option, a second directory or a SHARE_GPU other than 0 or 1: says so
#                             on stderr and returns 2
#   nccl4j_gpu_count TOOL     prints the number of GPUs: the non-empty entries of CUDA_VISIBLE_DEVICES when it is set
#                             (set but empty: 0), else the lines "GPU ..." of nvidia-smi -L; when there is none, says
#                             "TOOL: no GPU found (...)" on stderr (why: CUDA_VISIBLE_DEVICES, nvidia-smi's status or
#                             absence) and returns 2
#   nccl4j_ranks TOOL GPUS    prints the number of ranks: NP, or max(2, GPUS) when NP is unset or empty; NP that is
#                             not a whole number >= 1, or above 64 per GPU: says so on stderr (naming NP and what to
#                             set) and returns 2
#   nccl4j_share_gpus TOOL GPUS NP FORCED
#                             returns 0 when the NP ranks share the GPUS GPUs (FORCED is 1, or NP > GPUS; NP >= 2),
#                             after printing "== NP ranks on GPUS GPU(s): sharing (NCCL_HOSTID per rank,
#                             NCCL_SOCKET_IFNAME=lo)" (the values that the ranks will have) and, when NCCL_HOSTID is
#                             set, "TOOL: warning: NCCL_HOSTID=... is set by you and kept: ..." on stderr; else 1
#   nccl4j_share_env          prints the lines of a rank's script (under mpirun) for sharing: export NCCL_HOSTID=
#                             nccl4j-host<rank> (OMPI_COMM_WORLD_RANK) unless NCCL_HOSTID is set, export
#                             NCCL_SOCKET_IFNAME=lo unless NCCL_SOCKET_IFNAME is set; NCCL4J_DEVICE is left alone

nccl4j_java_home() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    echo "$JAVA_HOME/bin/java"
  else
    return 1
  fi
}

nccl4j_find_java() { # PROG
  if nccl4j_java_home; then
    return 0
  elif command -v java >/dev/null; then
    command -v java
  else
    echo "$1: no java found: set JAVA_HOME or put java on PATH (JDK or JRE 17+)" >&2
    return 2
  fi
}

nccl4j_classpath() { # [--wildcard] DIR
  if [ "$1" = --wildcard ]; then
    echo "$2/lib/*"
    return 0
  fi
  local j cp=""
  for j in "$1"/lib/*.jar; do
    case "$j" in *console-standalone*) ;; *) cp="$cp${cp:+:}$j" ;; esac
  done
  echo "$cp"
}

nccl4j_examples_jar() { # ROOT
  # shellcheck disable=SC2010  # the scripts' lookup as it was (ls | grep -v -- -tests)
  ls "$1"/nccl4j-examples/target/nccl4j-examples-*.jar 2>/dev/null | grep -v -- -tests | head -1 || true
}

nccl4j_tools_jar() { # ROOT
  # shellcheck disable=SC2010  # as nccl4j_examples_jar
  ls "$1"/nccl4j-tools/target/nccl4j-tools-*.jar 2>/dev/null | grep -v -- -tests | head -1 || true
}

nccl4j_build_classpath() { # ROOT
  local tools examples
  tools=$(nccl4j_tools_jar "$1")
  examples=$(nccl4j_examples_jar "$1")
  echo "$tools:$examples:$1/nccl4j-tools/target/lib/*:$1/nccl4j-examples/target/lib/*"
  [ -n "$tools" ] && [ -n "$examples" ] && [ -d "$1/nccl4j-tools/target/lib" ] && [ -d "$1/nccl4j-examples/target/lib" ]
}

# shellcheck disable=SC2120  # its arguments are options, all optional
nccl4j_cuda_libs() { # [--first] [--reverse] [--always] [--dedupe] [--print]
  local first=0 reverse=0 always=0 dedupe=0 print=0 changed=0 i d value=${LD_LIBRARY_PATH:-}
  local dirs=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --first) first=1 ;;
      --reverse) reverse=1 ;;
      --always) always=1 ;;
      --dedupe) dedupe=1 ;;
      --print) print=1 ;;
      *) echo "nccl4j_cuda_libs: unknown option $1" >&2; return 2 ;;
    esac
    shift
  done
  IFS=: read -r -a dirs <<< "${NCCL4J_CUDA_LIB_DIRS:-/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64}"
  if [ "$first" = 1 ] && [ ${#dirs[@]} -gt 1 ]; then
    dirs=("${dirs[0]}")
  fi
  # Each directory taken goes in front: in list order for --reverse, from the last one otherwise.
  for ((i = 0; i < ${#dirs[@]}; i++)); do
    if [ "$reverse" = 1 ]; then d=${dirs[i]}; else d=${dirs[${#dirs[@]} - 1 - i]}; fi
    if [ "$always" = 0 ] && [ ! -d "$d" ]; then continue; fi
    if [ "$dedupe" = 1 ]; then
      case ":$value:" in *":$d:"*) continue ;; esac
    fi
    value="$d${value:+:$value}"
    changed=1
  done
  if [ "$print" = 1 ]; then
    echo "$value"
  elif [ "$changed" = 1 ]; then
    export LD_LIBRARY_PATH="$value"
  fi
  return 0
}

# shellcheck disable=SC2034  # nccl4j_mpi_root is for the caller
nccl4j_mpi_root_args() {
  nccl4j_mpi_root=()
  case "${NCCL4J_AS_ROOT:-}" in
    1) nccl4j_mpi_root=(--allow-run-as-root) ;;
    0) ;;
    *) if [ "$(id -u)" = 0 ]; then nccl4j_mpi_root=(--allow-run-as-root); fi ;;
  esac
  return 0
}

nccl4j_mpi_forward_args() { # NAME...
  local n v re=""
  for n in "$@"; do
    case "$n" in *_) re="$re${re:+|}$n" ;; *) re="$re${re:+|}$n\$" ;; esac
  done
  # shellcheck disable=SC2034  # nccl4j_mpi_fwd is for the caller
  nccl4j_mpi_fwd=()
  for v in $(compgen -e | grep -E "^($re)"); do nccl4j_mpi_fwd+=(-x "$v"); done
  return 0
}

# shellcheck disable=SC2154  # nccl4j_mpi_opts is the caller's
nccl4j_mpi_logged() { # DIR NAME NP PORT CMD...
  local dir=$1 name=$2 np=$3 port=$4
  shift 4
  local script="$dir/$name.rank.sh"
  { echo '#!/usr/bin/env bash'; printf 'exec'; printf ' %q' "$@"; echo; } > "$script"
  chmod +x "$script"
  local map=()
  [ -n "${MAP_BY:-}" ] && map=(--map-by "$MAP_BY")
  timeout "${RUN_TIMEOUT:-240}" mpirun "${nccl4j_mpi_root[@]}" "${map[@]}" --bind-to "${BIND:-none}" -np "$np" \
      "${nccl4j_mpi_opts[@]}" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" "$script" > "$dir/$name.log" 2>&1
}

nccl4j_bundle_dir() { # TOOL DIR
  local dir
  dir=$(cd "$2" 2>/dev/null && pwd) || { echo "$1: no bundle at $2 (scripts/gpu-bundle.sh)" >&2; return 2; }
  [ -x "$dir/jre/bin/java" ] || { echo "$1: $dir has no jre/bin/java" >&2; return 2; }
  echo "$dir"
}

# shellcheck disable=SC2034  # failures and failed are the caller's
nccl4j_counted() { # DIR NAME STATUS
  [ "$3" = 0 ] && return 0
  echo "   failed with status $3 (see $1/$2.log)"
  failures=$((failures + 1))
  failed+=("$2")
  tail -5 "$1/$2.log"
}

# shellcheck disable=SC2034  # baseline is the caller's
nccl4j_baseline() { # TOOL ROOT [--quiet]
  local tool=$1 root=$2 quiet=${3:-}
  [ -x "${baseline:-}" ] && return 0
  if [ "$quiet" = --quiet ]; then
    "$root/scripts/bench/native/build.sh" > /dev/null
  else
    echo "== building the C baseline (scripts/bench/native/build.sh)"
    "$root/scripts/bench/native/build.sh"
  fi || { echo "$tool: the C baseline did not build" >&2; return 2; }
  baseline=$root/scripts/bench/native/build/nccl_perf_baseline
}

# shellcheck disable=SC2034  # nccl4j_share_forced and nccl4j_bundle_arg are for the caller
nccl4j_gpu_args() { # TOOL ARG...
  local tool=$1
  shift
  nccl4j_share_forced=0
  nccl4j_bundle_arg=""
  case "${SHARE_GPU:-0}" in
    0) ;;
    1) nccl4j_share_forced=1 ;;
    *) echo "$tool: SHARE_GPU=$SHARE_GPU: 1 makes the ranks share the GPUs, 0 or unset leaves it to NP > GPU count" >&2
       return 2 ;;
  esac
  while [ $# -gt 0 ]; do
    case "$1" in
      --share-gpu) nccl4j_share_forced=1 ;;
      --) shift; break ;;
      -*) echo "$tool: unknown option $1 (usage: $tool [--share-gpu] [bundle-dir])" >&2; return 2 ;;
      *) break ;;
    esac
    shift
  done
  if [ $# -gt 1 ]; then
    echo "$tool: one bundle directory at most, not $# ($*) (usage: $tool [--share-gpu] [bundle-dir])" >&2
    return 2
  fi
  nccl4j_bundle_arg=${1:-}
  return 0
}

nccl4j_gpu_count() { # TOOL
  local n=0 e out status entries=()
  if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
    IFS=, read -r -a entries <<< "$CUDA_VISIBLE_DEVICES"
    for e in "${entries[@]}"; do
      [ -n "${e//[[:space:]]/}" ] && n=$((n + 1))
    done
    [ "$n" -gt 0 ] && { echo "$n"; return 0; }
    echo "$1: no GPU found (CUDA_VISIBLE_DEVICES='$CUDA_VISIBLE_DEVICES' names none)" >&2
    return 2
  fi
  if ! command -v nvidia-smi > /dev/null; then
    echo "$1: no GPU found (nvidia-smi -L: no nvidia-smi on the PATH)" >&2
    return 2
  fi
  out=$(nvidia-smi -L 2>&1) && status=0 || status=$?
  n=$(grep -c '^GPU' <<< "$out" || true)
  [ "$n" -gt 0 ] && { echo "$n"; return 0; }
  if [ "$status" != 0 ]; then
    echo "$1: no GPU found (nvidia-smi -L exited with status $status: $(head -1 <<< "$out"))" >&2
  else
    echo "$1: no GPU found (nvidia-smi -L lists none)" >&2
  fi
  return 2
}

nccl4j_ranks() { # TOOL GPUS
  local tool=$1 gpus=$2 np=${NP:-} default=$(( $2 > 2 ? $2 : 2 ))
  if [ -z "$np" ]; then
    echo "$default"
    return 0
  fi
  local digits=${np#"${np%%[!0]*}"}   # leading zeros off (bash would read 010 as octal)
  if ! [[ $np =~ ^[0-9]+$ ]] || [ -z "$digits" ]; then   # not digits, or digits all 0
    echo "$tool: NP=$np is not a whole number >= 1: set NP to the number of ranks, or unset it for max(2, GPU count) = $default" >&2
    return 2
  fi
  if [ ${#digits} -gt 9 ] || [ "$digits" -gt $((64 * gpus)) ]; then
    echo "$tool: NP=$np is more than 64 ranks per GPU on $gpus GPU(s): set NP to $((64 * gpus)) or fewer" >&2
    return 2
  fi
  echo "$digits"
}

nccl4j_share_gpus() { # TOOL GPUS NP FORCED
  local tool=$1 gpus=$2 np=$3 forced=$4 hostid="NCCL_HOSTID per rank"
  [ "$np" -ge 2 ] || return 1
  [ "$forced" = 1 ] || [ "$np" -gt "$gpus" ] || return 1
  if [ -n "${NCCL_HOSTID:-}" ]; then
    hostid="NCCL_HOSTID=$NCCL_HOSTID kept"
    echo "$tool: warning: NCCL_HOSTID=$NCCL_HOSTID is set by you and kept: ranks sharing a GPU may collide (NCCL: duplicate GPU)" >&2
  fi
  echo "== $np ranks on $gpus GPU(s): sharing ($hostid, NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo})"
  return 0
}

nccl4j_share_env() {
  # shellcheck disable=SC2016  # the rank's own OMPI_COMM_WORLD_RANK, expanded in the rank's script
  [ -n "${NCCL_HOSTID:-}" ] || echo 'export NCCL_HOSTID=nccl4j-host${OMPI_COMM_WORLD_RANK:?not under Open MPI}'
  [ -n "${NCCL_SOCKET_IFNAME:-}" ] || echo 'export NCCL_SOCKET_IFNAME=lo'
  return 0
}
