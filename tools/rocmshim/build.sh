#!/usr/bin/env bash
# Builds rocmshim into DIR (default: tools/rocmshim/build): libhsa-runtime64.so.1
# and libamdhip64.so.6, which links it by soname through $ORIGIN, as the real
# libamdhip64 links ROCr. Needs gcc and the ROCm headers (Debian's
# libamdhip64-dev and libhsa-runtime-dev): every HIP and HSA function the
# shim defines is checked against their prototypes. No CUDA headers: the
# driver is dlopened at run time.
#   tools/rocmshim/build.sh [DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
out=${1:-$src/build}
mkdir -p "$out"
cflags=(-std=c11 -O2 -g -fPIC -Wall -Wextra -Werror -D__HIP_PLATFORM_AMD__ -pthread)
gcc "${cflags[@]}" -shared -Wl,-soname,libhsa-runtime64.so.1 -o "$out/libhsa-runtime64.so.1" "$src/hsa.c" -ldl
gcc "${cflags[@]}" -shared -Wl,-soname,libamdhip64.so.6 -Wl,-rpath,'$ORIGIN' -Wl,--no-undefined \
  -o "$out/libamdhip64.so.6" "$src/hip.c" -L"$out" -l:libhsa-runtime64.so.1
