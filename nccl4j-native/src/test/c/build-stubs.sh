#!/bin/sh
# Builds the test-only stub NCCL libraries (never shipped) into $2 from the sources in $1.
#   libnccl-stub.so      every entry point nccl4j knows, reports NCCL 2.28.3
#   libnccl-stub-2.30.7.so  the same, reporting NCCL 2.30.7 (whose ncclConfig_t has every field nccl4j sends)
#   libnccl-stub-old.so  an NCCL 2.19.3 look-alike: the entry points added after 2.19 are absent
#   libnot-nccl.so       a shared library that exports no NCCL entry point at all
# and stub CUDA runtimes (cudart_stub.c) in cudart/<case>/, each named as the real one (libcudart.so.<major>):
#   cuda13/     CUDA 13.0 under a CUDA 13.0 driver, 3 devices     cuda12/  CUDA 12.9 under a CUDA 13.0 driver, 2 devices
#   both/       the two of them side by side                       old-driver/  13.0 and 12.9 under a CUDA 12.8 driver
#   no-driver/  CUDA 12.9 with no driver installed (version 0)     cuda11/  CUDA 11.8 (libcudart.so.11.0)
#   partial/    a libcudart.so.12 without cudaGraphInstantiate
set -eu
src=$1
out=$2
mkdir -p "$out"
cc=${CC:-gcc}
$cc -std=c11 -Wall -Wextra -Werror -O1 -fPIC -shared -o "$out/libnccl-stub.so" "$src/nccl_stub.c"
$cc -std=c11 -Wall -Wextra -Werror -O1 -fPIC -shared -DSTUB_VERSION=23007 -o "$out/libnccl-stub-2.30.7.so" "$src/nccl_stub.c"
$cc -std=c11 -Wall -Wextra -Werror -O1 -fPIC -shared -DSTUB_OLD -o "$out/libnccl-stub-old.so" "$src/nccl_stub.c"
$cc -std=c11 -Wall -Wextra -Werror -O1 -fPIC -shared -o "$out/libnot-nccl.so" "$src/not_nccl.c"
cudart() { # DIR FILE RUNTIME DRIVER DEVICES [CFLAGS...]
  d=$out/cudart/$1
  f=$2
  rt=$3
  drv=$4
  dev=$5
  shift 5
  mkdir -p "$d"
  $cc -std=c11 -Wall -Wextra -Werror -O1 -fPIC -shared -Wl,-soname,"$f" -DSTUB_RUNTIME="$rt" -DSTUB_DRIVER="$drv" \
      -DSTUB_DEVICES="$dev" "$@" -o "$d/$f" "$src/cudart_stub.c"
}
cudart cuda13 libcudart.so.13 13000 13000 3
cudart cuda12 libcudart.so.12 12090 13000 2
cudart both libcudart.so.13 13000 13000 3
cudart both libcudart.so.12 12090 13000 2
cudart old-driver libcudart.so.13 13000 12080 3
cudart old-driver libcudart.so.12 12090 12080 2
cudart no-driver libcudart.so.12 12090 0 2
cudart cuda11 libcudart.so.11.0 11080 11080 1
cudart partial libcudart.so.12 12090 13000 2 -DSTUB_PARTIAL
