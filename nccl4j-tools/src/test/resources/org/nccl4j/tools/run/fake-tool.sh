#!/usr/bin/env bash
# ScriptsTest's stand-in for java, mpirun, nvidia-smi, timeout, id, mvn, python and the C baseline: it records
# its name, path ($0), working directory, arguments and whole environment in a new file of $FAKE_REC (named
# NNNN-tool, numbered in call order), then does what the scripts expect of the real tool:
#   mpirun      runs the per-rank command once per rank (-np), one after the other, with OMPI_COMM_WORLD_RANK,
#               OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_LOCAL_RANK set and every -x NAME=VALUE exported; with
#               --tag-output each line of rank r starts with "[1,r]<stdout>:" or "[1,r]<stderr>:", as Open MPI's;
#               with --output-filename DIR rank r's output is also in DIR/1/rank.r/{stdout,stderr} (Open MPI 4.1;
#               r zero-filled to the width of the last rank); takes --oversubscribe; fails (99) on an option it does
#               not know; exits with the last failing rank's status
#   timeout     runs the command (no limit, no signal; takes -s SIGNAL and -k DURATION); when FAKE_TIMEOUT_EXPIRES
#               names the command's program, exits 124 after it, as a limit that passed
#   nvidia-smi  -L: FAKE_GPUS lines "GPU i: ..."; --query-gpu=name: "Fake GPU" per GPU
#   id          -u: FAKE_UID (default 0)
#   mvn         with FAKE_MVN_BUILD=1 creates nccl4j-{examples,tools}/target/{nccl4j-*-V.jar,lib/} (V: FAKE_VERSION)
#               in its working directory and exits 0; otherwise exits 1. With FAKE_MVN_BUILD=1 also, as gpu-bundle.sh
#               expects: dependency:copy-dependencies puts FAKE_MVN_DEPS (jar names, default a CUDA presets JNI jar,
#               a JUnit jar and slf4j-api) in nccl4j-core/target/dependency/ and the module jars in
#               nccl4j-{native,core,examples,tools}/target/ (each jar and -tests jar; native and core, as the real
#               build, also -sources and -javadoc jars, and native its linux-x86_64 jar; and an older build's
#               <version>-SNAPSHOT jars, an hour old); dependency:copy
#               -Dartifact=G:A:V -DoutputDirectory=DIR creates DIR/A-V.jar
#   jlink       --output DIR: creates DIR/bin/java
#   unzip       -q -j JAR ENTRY -d DIR: creates DIR/<ENTRY's file name>
#   zip         -q -r ZIP ...: creates ZIP
#   java        prints FAKE_JAVA_OUT (printf %b), exits FAKE_JAVA_STATUS (default 0); under mpirun
#               (OMPI_COMM_WORLD_RANK set) FAKE_JAVA_OUT_RANK instead, when that is set
#   python*     -c CODE: exits 0 (torch imports); else prints FAKE_PYTHON_OUT (printf %b) and exits 0
#   other       exits 0
# Records: "tool=", "exe=", "cwd=", then "args=" and "env=", each the base64 of NUL-terminated strings. id
# records nothing: when a script asks for the uid is no part of what it does.
tool=$(basename "$0")
if [ "$tool" = id ]; then
  [ "${1:-}" = -u ] || { echo "fake id: only -u" >&2; exit 1; }
  echo "${FAKE_UID:-0}"
  exit 0
fi
# shellcheck disable=SC2012  # the records' names are plain: NNNN-tool
n=$(( $(ls "$FAKE_REC" | wc -l) + 1 ))
while ! (set -C; : > "$FAKE_REC/$(printf '%04d' "$n")-$tool") 2>/dev/null; do n=$((n + 1)); done
{
  echo "tool=$tool"
  echo "exe=$0"
  echo "cwd=$PWD"
  echo "args=$( (( $# )) && printf '%s\0' "$@" | base64 -w0)"
  echo "env=$(env -0 | base64 -w0)"
} >> "$FAKE_REC/$(printf '%04d' "$n")-$tool"

case "$tool" in
  mpirun)
    np=1
    sets=()
    tag=0
    outdir=""
    while [ $# -gt 0 ]; do
      case "$1" in
        --allow-run-as-root|--oversubscribe) shift ;;
        --tag-output) tag=1; shift ;;
        --bind-to) shift 2 ;;
        --output-filename) outdir=$2; shift 2 ;;
        -np) np=$2; shift 2 ;;
        -x) case "$2" in *=*) sets+=("$2") ;; esac; shift 2 ;;
        -*) echo "fake mpirun: unknown option $1" >&2; exit 99 ;;
        *) break ;;
      esac
    done
    status=0
    tmp=$(mktemp -d)
    for ((r = 0; r < np; r++)); do
      (
        for kv in "${sets[@]}"; do export "${kv?}"; done
        # shellcheck disable=SC2030  # the rank's own, in its subshell
        export OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$np OMPI_COMM_WORLD_LOCAL_RANK=$r
        exec "$@"
      ) > "$tmp/stdout" 2> "$tmp/stderr" || status=$?
      if [ "$tag" = 1 ]; then
        sed "s/^/[1,$r]<stdout>:/" "$tmp/stdout"
        sed "s/^/[1,$r]<stderr>:/" "$tmp/stderr" >&2
      else
        cat "$tmp/stdout"
        cat "$tmp/stderr" >&2
      fi
      if [ -n "$outdir" ]; then
        last=$((np - 1))
        d=$outdir/1/rank.$(printf "%0${#last}d" "$r")
        mkdir -p "$d"
        cp "$tmp/stdout" "$tmp/stderr" "$d/"
      fi
    done
    rm -rf "$tmp"
    exit $status ;;
  timeout)
    while [ "${1:-}" = -s ] || [ "${1:-}" = -k ]; do shift 2; done   # the signal, the kill: none is sent
    case "$1" in [0-9]*) ;; *) echo "fake timeout: no limit given: $1" >&2; exit 125 ;; esac
    shift
    if [ -n "${FAKE_TIMEOUT_EXPIRES:-}" ] && [ "${1##*/}" = "$FAKE_TIMEOUT_EXPIRES" ]; then
      "$@"
      exit 124
    fi
    exec "$@" ;;
  nvidia-smi)
    for ((g = 0; g < ${FAKE_GPUS:-0}; g++)); do
      case "$*" in
        -L) echo "GPU $g: Fake GPU (UUID: GPU-fake-$g)" ;;
        *--query-gpu=name*) echo "Fake GPU" ;;
      esac
    done ;;
  mvn)
    [ "${FAKE_MVN_BUILD:-0}" = 1 ] || { echo "fake mvn: build failed" >&2; exit 1; }
    v=${FAKE_VERSION:?fake mvn: FAKE_VERSION is not set}
    for m in nccl4j-examples nccl4j-tools; do
      mkdir -p "$m/target/lib"
      : > "$m/target/$m-$v.jar"
    done
    artifact=""
    outdir=""
    for a in "$@"; do
      case "$a" in
        dependency:copy-dependencies)
          mkdir -p nccl4j-core/target/dependency
          for j in ${FAKE_MVN_DEPS:-cuda-13.3-9.25-1.5.14-linux-x86_64.jar junit-jupiter-api-5.14.1.jar slf4j-api-2.0.17.jar}; do
            : > "nccl4j-core/target/dependency/$j"
          done
          for m in nccl4j-native nccl4j-core nccl4j-examples nccl4j-tools; do
            mkdir -p "$m/target"
            # an earlier build's jars, of another version, left in target/ (mvn package does not clean): older
            : > "$m/target/$m-$v-SNAPSHOT.jar"
            : > "$m/target/$m-$v-SNAPSHOT-tests.jar"
            touch -d '1 hour ago' "$m/target/$m-$v-SNAPSHOT.jar" "$m/target/$m-$v-SNAPSHOT-tests.jar"
            : > "$m/target/$m-$v.jar"
            : > "$m/target/$m-$v-tests.jar"
          done
          for m in nccl4j-native nccl4j-core; do
            : > "$m/target/$m-$v-sources.jar"
            : > "$m/target/$m-$v-javadoc.jar"
          done
          : > "nccl4j-native/target/nccl4j-native-$v-linux-x86_64.jar" ;;
        -Dartifact=*) artifact=${a#-Dartifact=} ;;
        -DoutputDirectory=*) outdir=${a#-DoutputDirectory=} ;;
      esac
    done
    if [ -n "$artifact" ]; then
      IFS=: read -r _ a v <<< "$artifact"
      mkdir -p "$outdir"
      : > "$outdir/$a-$v.jar"
    fi ;;
  jlink)
    while [ $# -gt 0 ]; do
      [ "$1" = --output ] && { mkdir -p "$2/bin"; : > "$2/bin/java"; }
      shift
    done ;;
  unzip)
    if [ "$1" != -q ] || [ "$2" != -j ] || [ "$5" != -d ]; then
      echo "fake unzip: only -q -j JAR ENTRY -d DIR" >&2
      exit 1
    fi
    mkdir -p "$6"
    : > "$6/${4##*/}" ;;
  zip)
    if [ "$1" != -q ] || [ "$2" != -r ]; then
      echo "fake zip: only -q -r ZIP ..." >&2
      exit 1
    fi
    : > "$3" ;;
  java)
    # shellcheck disable=SC2031  # this java's environment: set by the fake mpirun that started it, if any
    if [ -n "${OMPI_COMM_WORLD_RANK:-}" ] && [ -n "${FAKE_JAVA_OUT_RANK:-}" ]; then
      printf '%b\n' "$FAKE_JAVA_OUT_RANK"
    else
      [ -z "${FAKE_JAVA_OUT:-}" ] || printf '%b\n' "$FAKE_JAVA_OUT"
    fi
    exit "${FAKE_JAVA_STATUS:-0}" ;;
  python*)
    [ "${1:-}" = -c ] && exit 0
    [ -z "${FAKE_PYTHON_OUT:-}" ] || printf '%b\n' "$FAKE_PYTHON_OUT" ;;
esac
exit 0
