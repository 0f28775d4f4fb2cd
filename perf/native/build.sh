#!/usr/bin/env bash
# Builds perf/native/build/nccl_perf_baseline on a GPU machine: nvcc (CUDA 13 at /usr/local/cuda), nccl.h and
# libnccl (NCCL_HOME, default /usr: include/ and lib/x86_64-linux-gnu/), Open MPI (headers and libraries found
# through mpicc --showme, else /usr/lib/x86_64-linux-gnu/openmpi).
#
#   perf/native/build.sh            ->  perf/native/build/nccl_perf_baseline
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/build"
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=${NVCC:-$cuda/bin/nvcc}
command -v "$nvcc" >/dev/null 2>&1 || nvcc=nvcc
nccl=${NCCL_HOME:-/usr}
nccl_inc="$nccl/include"
nccl_lib="$nccl/lib/x86_64-linux-gnu"
[ -f "$nccl_lib/libnccl.so" ] || [ -f "$nccl_lib/libnccl.so.2" ] || nccl_lib="$nccl/lib"
if command -v mpicc >/dev/null 2>&1; then
  mpi_cflags=$(mpicc --showme:compile)
  mpi_libs=$(mpicc --showme:link)
else
  mpi_cflags="-I/usr/lib/x86_64-linux-gnu/openmpi/include"
  mpi_libs="-L/usr/lib/x86_64-linux-gnu/openmpi/lib -lmpi"
fi
# nvcc passes -pthread and -Wl,... options through -Xcompiler / -Xlinker
to_nvcc() {
  for f in "$@"; do
    case "$f" in
      -I*|-L*|-l*|-D*) printf '%s ' "$f" ;;
      -Wl,*) printf -- '-Xlinker %s ' "${f#-Wl,}" ;;
      *) printf -- '-Xcompiler %s ' "$f" ;;
    esac
  done
}
# libnccl.so may be only libnccl.so.2 (no -dev symlink): link it by its file name then
nccl_link="-L$nccl_lib -lnccl"
[ -e "$nccl_lib/libnccl.so" ] || nccl_link="$nccl_lib/libnccl.so.2"
set -x
# shellcheck disable=SC2046
"$nvcc" -O2 -std=c++17 -o "$out/nccl_perf_baseline" "$here/nccl_perf_baseline.cu" \
    -I"$nccl_inc" $(to_nvcc $mpi_cflags) $nccl_link $(to_nvcc $mpi_libs) -lcudart -ldl \
    -Xlinker -rpath -Xlinker "$nccl_lib"
