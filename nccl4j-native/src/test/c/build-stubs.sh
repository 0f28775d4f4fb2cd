#!/bin/sh
# Builds the test-only stub NCCL libraries (never shipped) into $2 from the sources in $1.
#   libnccl-stub.so      every entry point nccl4j knows, reports NCCL 2.28.3
#   libnccl-stub-2.30.7.so  the same, reporting NCCL 2.30.7 (whose ncclConfig_t has every field nccl4j sends)
#   libnccl-stub-old.so  an NCCL 2.19.3 look-alike: the entry points added after 2.19 are absent
#   libnot-nccl.so       a shared library that exports no NCCL entry point at all
set -eu
src=$1
out=$2
mkdir -p "$out"
cc=${CC:-gcc}
$cc -std=c11 -Wall -Wextra -Werror -O1 -fPIC -shared -o "$out/libnccl-stub.so" "$src/nccl_stub.c"
$cc -std=c11 -Wall -Wextra -Werror -O1 -fPIC -shared -DSTUB_VERSION=23007 -o "$out/libnccl-stub-2.30.7.so" "$src/nccl_stub.c"
$cc -std=c11 -Wall -Wextra -Werror -O1 -fPIC -shared -DSTUB_OLD -o "$out/libnccl-stub-old.so" "$src/nccl_stub.c"
$cc -std=c11 -Wall -Wextra -Werror -O1 -fPIC -shared -o "$out/libnot-nccl.so" "$src/not_nccl.c"
