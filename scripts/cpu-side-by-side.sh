#!/usr/bin/env bash
# CPU decode and prefill of GGUF files, hipgo and llama.cpp in turn:
# tools/decodebench (-device cpu, GOMAXPROCS threads; decode of 128 tokens
# after a 1-token prompt, and a 512-token prefill; median of 3) and
# llama.cpp's llama-bench (-n 128 -p 512 -r 3, mean), at each thread
# count, ROUNDS rounds (default 2). JSON lines on stdout, one per
# measurement; tools/gpubench/cpu_side_by_side_table.py prints the table.
#
#   LLAMA_BENCH=/path/to/llama-bench scripts/cpu-side-by-side.sh FILE.gguf ...
#
# llama.cpp is not built here: build llama-bench (CPU, Release) from its
# source yourself and name it in LLAMA_BENCH.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LLAMA_BENCH:?LLAMA_BENCH must name a llama-bench binary}"
threads=${THREADS:-1 2}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/decodebench" ./tools/decodebench
commit=$(git rev-parse --short HEAD)
for round in $(seq "${ROUNDS:-2}"); do
  for f in "$@"; do
    name=$(basename "$f" .gguf)
    for t in $threads; do
      { GOMAXPROCS=$t "$bin/decodebench" -model "$f" -device cpu -batch 1 -prompt 1 -new 128 -prefill 512 -runs 3 -label "$name" 2>"$bin/err" ||
        printf '{"tool":"hipgo","label":"%s","error":%s}\n' "$name" "$(tail -1 "$bin/err" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))')"; } |
        sed "s/^{/{\"round\":$round,\"threads\":$t,\"commit\":\"$commit\",/"
      "$LLAMA_BENCH" -m "$f" -n 128 -p 512 -r 3 -t "$t" -o jsonl 2>/dev/null |
        sed "s/^{/{\"tool\":\"llama.cpp\",\"round\":$round,\"label\":\"$name\",/"
    done
  done
done
