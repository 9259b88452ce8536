#!/usr/bin/env bash
# Installs what `make test` needs on Debian 12 when it is missing, and fails
# (never skips) when it cannot: CI must not pass by leaving tests out.
#   - clang-19, lld-19, llvm-19: rebuild and inspect the GPU kernels
#   - libamdhip64-5, libhsa-runtime64-1: the real ROCm 5.2 libraries the HIP
#     and HSA bindings are tested against (no AMD GPU needed)
#   - libamdhip64-dev, libhsa-runtime-dev: the headers the code tables are
#     generated from (go generate is checked for drift)
#   - unicode-data: the Unicode conformance data the tokenizer's NFC is
#     checked against
set -euo pipefail
pkgs=(clang-19 lld-19 llvm-19 libamdhip64-5 libhsa-runtime64-1 libamdhip64-dev libhsa-runtime-dev unicode-data)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "deps: need root and apt-get to install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v go >/dev/null || { echo "deps: go not on PATH" >&2; exit 1; }
command -v gcc >/dev/null || { echo "deps: gcc (for go test -race) not on PATH" >&2; exit 1; }
go mod download
echo "deps: ok ($(go version | cut -d' ' -f3), clang-19 $(clang-19 --version | head -1 | grep -o '[0-9][0-9.]*' | head -1))"
