#!/usr/bin/env bash
# Builds scripts/bench/native/build/nccl_perf_baseline on a GPU machine: nvcc (CUDA 13 at /usr/local/cuda), nccl.h and
# libnccl (NCCL_HOME, default /usr: include/ and lib/x86_64-linux-gnu/), Open MPI (headers and libraries found
# through mpicc --showme, else /usr/lib/x86_64-linux-gnu/openmpi).
# Then, where CUPTI is (cupti.h in $CUDA_HOME/targets/x86_64-linux/include or $CUDA_HOME/extras/CUPTI/include),
# the CUPTI kernel tracer kernel_trace.c that scripts/bench/perf-timeline.sh uses without nsys, with gcc (CC), trying
# the kernel record types newest first (CUpti_ActivityKernel11, 10, 9; the compilers' output goes to
# build/kernel_trace.log). Without cupti.h, or when no type compiles, it says so on stderr and exits 0: the
# baseline alone.
#
#   scripts/bench/native/build.sh            ->  scripts/bench/native/build/nccl_perf_baseline
#                                       scripts/bench/native/build/libkernel_trace.so  (where CUPTI is)
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
# shellcheck disable=SC2046,SC2086  # the MPI flags and the link line are several words each
"$nvcc" -O2 -std=c++17 -o "$out/nccl_perf_baseline" "$here/nccl_perf_baseline.cu" \
    -I"$nccl_inc" $(to_nvcc $mpi_cflags) $nccl_link $(to_nvcc $mpi_libs) -lcudart -ldl \
    -Xlinker -rpath -Xlinker "$nccl_lib"
{ set +x; } 2>/dev/null
# The kernel tracer: CUPTI's headers and libcupti sit in targets/x86_64-linux (CUDA 12, 13) or extras/CUPTI
cupti_inc=
for d in "$cuda/targets/x86_64-linux/include" "$cuda/extras/CUPTI/include"; do
  if [ -f "$d/cupti.h" ]; then cupti_inc=$d; break; fi
done
if [ -z "$cupti_inc" ]; then
  echo "build.sh: no cupti.h in $cuda/targets/x86_64-linux/include or $cuda/extras/CUPTI/include (CUDA_HOME):" \
      "no kernel tracer (perf-timeline.sh then uses nsys or per-operation events)" >&2
  exit 0
fi
case "$cupti_inc" in
  */extras/CUPTI/include) cupti_lib="$cuda/extras/CUPTI/lib64" ;;
  *) cupti_lib="$cuda/targets/x86_64-linux/lib" ;;
esac
cc=${CC:-gcc}
rm -f "$out/libkernel_trace.so"
: > "$out/kernel_trace.log"
for krec in CUpti_ActivityKernel11 CUpti_ActivityKernel10 CUpti_ActivityKernel9; do
  echo "== KREC=$krec" >> "$out/kernel_trace.log"
  if "$cc" -O2 -Wall -shared -fPIC -DKREC="$krec" -I"$cupti_inc" -o "$out/libkernel_trace.so" "$here/kernel_trace.c" \
      -L"$cupti_lib" -lcupti -Wl,-rpath,"$cupti_lib" >> "$out/kernel_trace.log" 2>&1; then
    echo "build.sh: kernel tracer $out/libkernel_trace.so (KREC=$krec, $cupti_inc/cupti.h)"
    exit 0
  fi
done
rm -f "$out/libkernel_trace.so"
echo "build.sh: kernel_trace.c did not build against $cupti_inc/cupti.h with CUpti_ActivityKernel11, 10 or 9" \
    "(see $out/kernel_trace.log): no kernel tracer" >&2
exit 0
