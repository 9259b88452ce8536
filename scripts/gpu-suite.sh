#!/usr/bin/env bash
# The GPU suite, run on the GPU machine from the repository root after
# scripts/gpu-bundle.sh built .gpu/ here:
#   bash .gpu/run.sh [section ...]      (default: info tests faults launch samplers)
# Sections:
#   info      nvidia-smi and gpuinfo (text and JSON)
#   tests     every GPU test binary with HIPGO_REQUIRE_GPU=1 (fails, never skips)
#   faults    tools/faultprobe
#   launch    Go launch overhead against the C loop (tools/gpubench/launch_overhead.c)
#   samplers  tools/samplerbench against PyTorch and the copy-bandwidth floor
#   train     train the demo model (tools/traindemo), last and alone on the GPU
#   hf        model forward pass and tokenizer against transformers/tokenizers
# Full logs go to $OUT (at most 8 files come back); the tail of stdout holds
# the summary lines.
set -uo pipefail
OUT=${OUT:-/tmp/hipgo-out}
mkdir -p "$OUT"
export HIPGO_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
bin=.gpu/bin
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(info tests faults launch samplers)
status=0
summary=()
note() { summary+=("$*"); echo "== $*"; }
has() { local s; for s in "${sections[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

if has info; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee "$OUT/info.log"
  $bin/gpuinfo 2>&1 | tee -a "$OUT/info.log"
  $bin/gpuinfo -json >>"$OUT/info.log" 2>&1
fi

if has tests; then
  : >"$OUT/tests.log"
  for t in $bin/*.test; do
    name=$(basename "$t" .test)
    echo "### $name" >>"$OUT/tests.log"
    # Tests only: benchmarks run in their own sections.
    if "$t" -test.v -test.count=1 -test.timeout=300s >>"$OUT/tests.log" 2>&1; then
      note "tests $name: PASS ($(grep -c '^--- PASS' "$OUT/tests.log") passed so far)"
    else
      status=1
      note "tests $name: FAIL"
      grep -E '^(--- FAIL|FAIL|panic)' "$OUT/tests.log" | tail -20
    fi
  done
  grep -E '^(--- (PASS|FAIL|SKIP))' "$OUT/tests.log" | sed 's/ (.*//' | sort | uniq -c | sort -rn | head -5
  grep -cE '^--- SKIP' "$OUT/tests.log" | xargs -I{} echo "skipped: {}"
fi

if has faults; then
  if $bin/faultprobe >"$OUT/faults.log" 2>&1; then note "faultprobe: all classes behaved"; else status=1; note "faultprobe: FAILED"; fi
  cat "$OUT/faults.log"
fi

if has launch; then
  ptx=kernels/build/testkernels/sm_90.ptx
  if nvcc -O2 -o /tmp/launch_overhead tools/gpubench/launch_overhead.c -lcuda >"$OUT/launch.log" 2>&1; then
    for round in 1 2 3; do
      /tmp/launch_overhead "$ptx" 10000 5 | tee -a "$OUT/launch.log"
      $bin/runtime.test -test.run='^$' -test.bench='^BenchmarkGPULaunch' -test.benchtime=10000x -test.count=1 2>&1 | grep -E '^Benchmark' | tee -a "$OUT/launch.log"
      [ -x $bin/cuda.test ] && $bin/cuda.test -test.run='^$' -test.bench='Launch' -test.benchtime=10000x -test.count=1 2>&1 | grep -E '^Benchmark' | tee -a "$OUT/launch.log"
    done
    python3 tools/gpubench/launch_ratio.py "$OUT/launch.log" | tee -a "$OUT/launch.log"
  else
    status=1; note "launch: nvcc failed"; cat "$OUT/launch.log"
  fi
fi

if has samplers; then
  python3 tools/gpubench/torch_samplers.py >"$OUT/samplers.jsonl" 2>"$OUT/samplers.err" || { status=1; note "torch baseline failed"; tail "$OUT/samplers.err"; }
  if [ -x $bin/samplerbench ]; then
    $bin/samplerbench >>"$OUT/samplers.jsonl" 2>>"$OUT/samplers.err" || { status=1; note "samplerbench failed"; tail "$OUT/samplers.err"; }
  fi
  python3 tools/gpubench/sampler_table.py "$OUT/samplers.jsonl" | tee "$OUT/samplers.md"
fi

if has hf; then
  if [ -x $bin/hfcompare ]; then
    python3 model/internal/cmd/hfcompare/hf_compare.py --go-bin $bin/hfcompare --work /tmp/hf >"$OUT/hf.log" 2>&1 || { status=1; note "hf compare failed"; }
    tail -40 "$OUT/hf.log"
  fi
fi

if has train; then
  # Last, alone on the GPU, so it disturbs no measurement above.
  mkdir -p .gpu/demo
  python3 tools/traindemo/train.py --corpus .gpu/corpus/kjv.txt --out .gpu/demo --seconds "${TRAIN_SECONDS:-240}" >"$OUT/train.log" 2>&1
  echo "train exit $?" >>"$OUT/train.log"
  tail -15 "$OUT/train.log"
  if [ -f .gpu/demo/model.safetensors ]; then
    tar -C .gpu -czf "$OUT/demo.tgz" demo && note "train: demo model in demo.tgz ($(du -h "$OUT/demo.tgz" | cut -f1))"
  else
    status=1; note "train: FAILED"
  fi
fi

echo
echo "===== summary ====="
printf '%s\n' "${summary[@]}"
exit $status
