#!/usr/bin/env bash
# The GPU suite, run on the GPU machine from the repository root after
# scripts/gpu-bundle.sh built .gpu/ here:
#   bash .gpu-carry/run.sh [section ...]      (default: info tests faults launch samplers; also: serve, ...)
# Sections:
#   info      nvidia-smi and gpuinfo (text and JSON)
#   tests     every GPU test binary with HIPGO_REQUIRE_GPU=1 (fails, never skips),
#             then the runtime and sampling ones again through the ROCm shim
#   faults    tools/faultprobe
#   rocmshim  the ROCm adapter on the H200 through tools/rocmshim (a
#             ROCm-shaped shim over the CUDA driver): faultprobe with
#             HIPGO_BACKEND=rocm (current CLR's semantics, then CLR 6.2's),
#             then faultprobe on cuda in the same run,
#             then the runtime and sampling GPU tests through the shim and
#             the shim's own tests over the real driver
#   launch    Go launch overhead against the C loop (tools/gpubench/launch_overhead.c)
#   samplers  tools/samplerbench against PyTorch and the copy-bandwidth floor
#   routes    samplerbench -routes: kernel against CPU fallback per filter
#             combination, one decode step end to end (the router's Policy)
#   latency   the runtime's wake-up latency: a decode-like step
#             (sampling's BenchmarkGPUDecodeStep, callbacks and monitor-only,
#             per backend in LATENCY_BACKENDS, default "cuda"; add "rocm"
#             with HIPGO_HIP_LIBRARY/HIPGO_HSA_LIBRARY set to the ROCm shim)
#             beside PyTorch's argmax().item(), and the out-of-bounds write's
#             time to error against cuStreamSynchronize, 5 runs each
#             (tools/gpubench/latency_table.py prints medians and ratios)
#   gumbel    the shipped Gumbel PTX alone, replayed in CUDA graphs (GPU time
#             without launch gaps; tools/gpubench/gumbel_variants.py), then
#             stream launches plain against early start
#             (tools/gpubench/early_start.py)
#   forward   the forward kernels' PTX against PyTorch (max relative error per
#             kernel) and matmul at SmolLM2-135M / Llama-3-8B decode shapes
#             against the weight-read floor and torch (tools/gpubench/forward_kernels.py)
#   qforward  the quantized kernels' PTX (kernels/src/qforward.cu: Q4_0 Q4_1 Q8_0
#             Q4_K Q5_K Q6_K) against numpy-dequantized weights and PyTorch float64
#             products, and the products at Llama-3.2-1B / SmolLM2-135M / Llama-3-8B
#             decode shapes against the copy floor (tools/gpubench/qforward_kernels.py); then
#             examples/generate -chat on the real SmolLM2-135M-Instruct Q4_1 GGUF
#             (98362432 bytes, sha256 b179c952...): -device gpu against -device
#             cpu, greedy, the same reply expected. The GGUF is $HIPGO_GGUF, or
#             .gguf/*.part* joined (gpu-bundle.sh splits it in four: carry one
#             part per call, each under the 64 MiB carry, before this one)
#   train     train the demo model (tools/traindemo), last and alone on the GPU
#   hf        model forward pass and decode speed against transformers (CPU)
#   tok       the Go tokenizer against HF tokenizers (after train: the demo tokenizer too)
#   generate  examples/generate on the embedded demo model: -device gpu against
#             -device cpu (greedy, the same text expected), then sampled on the GPU;
#             then model's BenchmarkGPUDecode (batch 1 and 32, decode graphs on and off)
#   cpuquant  the CPU kernels on this host's CPU: package quant's and cpu's
#             tests (every kernel set against the reference), then the
#             quantized matrix-vector benchmark (assembly sets), one thread,
#             96 MiB per format
#   side      decode and prefill speed side by side on one random-init
#             checkpoint per shape in SIDE_SHAPES (default "llama1b smollm135m";
#             bf16, made with transformers on the GPU, with the tokenizer
#             written by tools/gpubench/vocab_tokenizer.py into
#             $SIDE_TOKENIZERS/{llama1b,smollm135m}): hipgo's decodebench
#             (graphs on and off), transformers eager and static-cache
#             torch.compile, the weight-read floor, and llama.cpp when
#             $LLAMA_CPP names a CUDA build of it (its build/bin and
#             convert_hf_to_gguf.py; nothing here builds it): the weights
#             converted to GGUF bf16 by its own converter, llama-bench
#             -n 128 -p 512, llama-batched-bench at 1 and 32 sequences
#             (tools/gpubench/decode_side_by_side.py prints the table)
# Full logs go to $OUT (at most 8 files come back); the tail of stdout holds
# the summary lines.
set -uo pipefail
OUT=${OUT:-/tmp/hipgo-out}
# At most 8 files come back from $OUT: the small logs go to $LOGS and are
# joined into $OUT/misc.log at the end.
LOGS=/tmp/hipgo-logs
rm -rf "$LOGS"
mkdir -p "$OUT" "$LOGS"
export HIPGO_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
bin=.gpu/bin
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(info tests faults launch samplers)
status=0
summary=()
note() { summary+=("$*"); echo "== $*"; }
has() { local s; for s in "${sections[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

if has info; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee "$LOGS/info.log"
  $bin/gpuinfo 2>&1 | tee -a "$LOGS/info.log"
  $bin/gpuinfo -json >>"$LOGS/info.log" 2>&1
fi

# The ROCm shim: HIPGO_BACKEND=rocm with the shim's libraries; the shim
# loads the PTX of the module whose HSACO the adapter chose (ROCMSHIM_PTX_DIR).
shim=$PWD/.gpu/rocmshim
shim_env=(HIPGO_BACKEND=rocm HIPGO_HIP_LIBRARY=$shim/libamdhip64.so.6 HIPGO_HSA_LIBRARY=$shim/libhsa-runtime64.so.1 ROCMSHIM_PTX_DIR=$PWD/kernels/build)
# shim_test NAME DIR BINARY LOG: the GPU tests of one binary through the shim.
shim_test() {
  local name=$1 dir=$2 t=$3 log=$4
  echo "### $name through rocmshim" >>"$log"
  if (cd "$dir" && env "${shim_env[@]}" timeout 600 "$t" -test.run='^TestGPU' -test.v -test.count=1 -test.timeout=500s) >>"$log" 2>&1; then
    return 0
  fi
  grep -E '^(--- FAIL|FAIL|panic)|rocmshim:' "$log" | tail -20
  return 1
}

if has tests; then
  : >"$OUT/tests.log"
  root=$PWD
  while read -r name dir; do
    t=$root/$bin/$name.test
    echo "### $name" >>"$OUT/tests.log"
    # The GPU tests only (TestGPU*; CI runs the rest), from the package's
    # directory as go test runs them, so testdata and sources are found.
    if (cd "$dir" && "$t" -test.run='^TestGPU' -test.v -test.count=1 -test.timeout=300s) >>"$OUT/tests.log" 2>&1; then
      note "tests $name: PASS ($(grep -c '^--- PASS' "$OUT/tests.log") passed so far)"
    else
      status=1
      note "tests $name: FAIL"
      grep -E '^(--- FAIL|FAIL|panic)' "$OUT/tests.log" | tail -20
    fi
  done <"$bin/PKGS"
  if [ -d "$shim" ]; then
    for name in runtime sampling; do
      [ -x "$bin/$name.test" ] || continue
      if shim_test "$name" "$name" "$PWD/$bin/$name.test" "$OUT/tests.log"; then
        note "tests $name through rocmshim (HIPGO_BACKEND=rocm): PASS"
      else
        status=1; note "tests $name through rocmshim (HIPGO_BACKEND=rocm): FAIL"
      fi
    done
  fi
  grep -E '^(--- (PASS|FAIL|SKIP))' "$OUT/tests.log" | sed 's/ (.*//' | sort | uniq -c | sort -rn | head -5
  grep -cE '^--- SKIP' "$OUT/tests.log" | xargs -I{} echo "skipped: {}"
fi

if has faults; then
  if $bin/faultprobe >"$LOGS/faults.log" 2>&1; then note "faultprobe: all classes behaved"; else status=1; note "faultprobe: FAILED"; fi
  cat "$LOGS/faults.log"
fi

if has rocmshim; then
  log=$OUT/rocmshim.log
  : >"$log"
  if [ ! -d "$shim" ]; then
    status=1; note "rocmshim: FAIL (.gpu/rocmshim missing: build the bundle with scripts/gpu-bundle.sh cuda)"
  else
    # 1. faultprobe through the ROCm adapter and the shim. It must have run
    #    on the rocm backend with the gfx942 code objects, and every class
    #    must behave.
    echo "### faultprobe HIPGO_BACKEND=rocm through rocmshim" >>"$log"
    env "${shim_env[@]}" timeout 300 $bin/faultprobe >"$LOGS/shim-faults.log" 2>&1
    rc=$?
    cat "$LOGS/shim-faults.log" >>"$log"
    if [ $rc -eq 0 ] && grep -q '^faultprobe on rocm:' "$LOGS/shim-faults.log" && grep -q 'arch gfx942' "$LOGS/shim-faults.log"; then
      note "rocmshim faultprobe (rocm adapter through the shim): PASS, all classes behaved"
    else
      status=1; note "rocmshim faultprobe (rocm adapter through the shim): FAIL (exit $rc)"
    fi
    cat "$LOGS/shim-faults.log"
    # 1b. The same through the shim's model of CLR up to ROCm 6.2
    #     (ROCMSHIM_CLR=6.2): no HIP call reports the fault, only hipgo's HSA
    #     system-event handler can fail the waits.
    echo "### faultprobe HIPGO_BACKEND=rocm through rocmshim, ROCMSHIM_CLR=6.2" >>"$log"
    env "${shim_env[@]}" ROCMSHIM_CLR=6.2 timeout 300 $bin/faultprobe >"$LOGS/shim62-faults.log" 2>&1
    rc=$?
    cat "$LOGS/shim62-faults.log" >>"$log"
    if [ $rc -eq 0 ] && grep -q '^faultprobe on rocm:' "$LOGS/shim62-faults.log" && grep -q 'reported by system event' "$LOGS/shim62-faults.log"; then
      note "rocmshim faultprobe, CLR 6.2 model (the HSA event alone): PASS, all classes behaved"
    else
      status=1; note "rocmshim faultprobe, CLR 6.2 model (the HSA event alone): FAIL (exit $rc)"
    fi
    cat "$LOGS/shim62-faults.log"
    # 2. The same probe on the CUDA adapter, in the same run, for comparison.
    echo "### faultprobe HIPGO_BACKEND=cuda" >>"$log"
    HIPGO_BACKEND=cuda timeout 300 $bin/faultprobe >"$LOGS/cuda-faults.log" 2>&1
    rc=$?
    cat "$LOGS/cuda-faults.log" >>"$log"
    if [ $rc -eq 0 ] && grep -q '^faultprobe on cuda:' "$LOGS/cuda-faults.log"; then
      note "rocmshim faultprobe on cuda (same run): PASS, all classes behaved"
    else
      status=1; note "rocmshim faultprobe on cuda (same run): FAIL (exit $rc)"
    fi
    cat "$LOGS/cuda-faults.log"
    # 3. The runtime and sampling GPU tests through the shim.
    for name in runtime sampling; do
      if [ ! -x "$bin/$name.test" ]; then status=1; note "rocmshim tests $name: FAIL (no $bin/$name.test)"; continue; fi
      if shim_test "$name" "$name" "$PWD/$bin/$name.test" "$log"; then
        note "rocmshim tests $name (HIPGO_BACKEND=rocm, HIPGO_REQUIRE_GPU=1): PASS ($(grep -c '^--- PASS' "$log") passed so far)"
      else
        status=1; note "rocmshim tests $name (HIPGO_BACKEND=rocm, HIPGO_REQUIRE_GPU=1): FAIL"
      fi
    done
    # 3b. The shim's own tests over the real driver: a fault fails the waits
    #     with callbacks off, every HIP call then returns 700; in the CLR 6.2
    #     model the HSA event alone fails them; an unclaimed fault aborts.
    echo "### tools/rocmshim/shimbuild tests over the real driver" >>"$log"
    if (cd tools/rocmshim/shimbuild && env ROCMSHIM_PREBUILT="$shim" timeout 300 "$shim/shimbuild.test" -test.v -test.count=1 -test.timeout=280s) >>"$log" 2>&1; then
      note "rocmshim shim tests over the H200 (fault, CLR 6.2 model, abort): PASS"
    else
      status=1; note "rocmshim shim tests over the H200 (fault, CLR 6.2 model, abort): FAIL"
      grep -E '^(--- FAIL|FAIL|panic)|Error:|Messages:' "$log" | tail -20
    fi
  fi
fi

if has launch; then
  ptx=kernels/build/testkernels/sm_90.ptx
  if nvcc -O2 -o /tmp/launch_overhead tools/gpubench/launch_overhead.c -lcuda >"$LOGS/launch.log" 2>&1; then
    for round in 1 2 3; do
      /tmp/launch_overhead "$ptx" 10000 5 | tee -a "$LOGS/launch.log"
      (cd runtime && ../$bin/runtime.test -test.run='^$' -test.bench='^BenchmarkGPULaunch' -test.benchtime=10000x -test.count=1 2>&1) | grep -E '^Benchmark' | tee -a "$LOGS/launch.log"
      [ -x $bin/cuda.test ] && (cd cuda && ../$bin/cuda.test -test.run='^$' -test.bench='Launch' -test.benchtime=10000x -test.count=1 2>&1) | grep -E '^Benchmark' | tee -a "$LOGS/launch.log"
    done
    python3 tools/gpubench/launch_ratio.py "$LOGS/launch.log" | tee -a "$LOGS/launch.log"
  else
    status=1; note "launch: nvcc failed"; cat "$LOGS/launch.log"
  fi
fi

if has latency; then
  : >"$LOGS/latency.log"
  for b in ${LATENCY_BACKENDS:-cuda}; do
    (cd sampling && HIPGO_BACKEND=$b ../$bin/sampling.test -test.run='^$' -test.bench='^BenchmarkGPUDecodeStep' \
      -test.benchtime=20000x -test.count=5 2>&1) | grep -E '^Benchmark' | sed "s/^/$b /" | tee -a "$LOGS/latency.log"
  done
  python3 - >>"$LOGS/latency.log" 2>&1 <<'PY'
import json, statistics, time, torch
x = torch.randn(1, 32000, device="cuda") * 5
for _ in range(200):
    x.argmax().item()
runs = []
for _ in range(5):
    t = time.perf_counter()
    for _ in range(20000):
        x.argmax().item()
    runs.append((time.perf_counter() - t) / 20000 * 1e6)
print("torch " + json.dumps({"op": "argmax().item()", "us": statistics.median(runs), "runs": runs}))
PY
  for i in $(seq "${LATENCY_FAULT_RUNS:-11}"); do
    for c in oob-write oob-write-driver-sync oob-write-driver-event; do
      HIPGO_BACKEND=cuda HIPGO_FAULTPROBE_CHILD=$c $bin/faultprobe 2>>"$LOGS/latency.err" | sed -n "s/^FAULTPROBE_RESULT /$c /p" >>"$LOGS/latency.log"
    done
  done
  python3 tools/gpubench/latency_table.py "$LOGS/latency.log" | tee "$LOGS/latency.md"
  grep -q OVER "$LOGS/latency.md" && note "latency: a ratio is over its target (see latency.md)"
fi

if has gumbel; then
  GV_MODES=${GV_MODES:-fused,fused_greedy} GV_POLICIES=${GV_POLICIES:-hipgo} \
    python3 tools/gpubench/gumbel_variants.py kernels/build/sampling/sm_90.ptx >"$LOGS/gumbel.jsonl" 2>&1 \
    || { status=1; note "gumbel variants failed"; tail "$LOGS/gumbel.jsonl"; }
  grep -E '"(fused|error|arrivals)' "$LOGS/gumbel.jsonl" | head -40
  python3 tools/gpubench/early_start.py >"$LOGS/early_start.jsonl" 2>&1 \
    || { status=1; note "early start A/B failed"; tail "$LOGS/early_start.jsonl"; }
  cat "$LOGS/early_start.jsonl"
  if grep -q '"rows_wrong": [1-9]' "$LOGS/early_start.jsonl"; then status=1; note "early start: stale reads"; fi
fi

if has forward; then
  python3 tools/gpubench/forward_kernels.py kernels/build/forward/sm_90.ptx >"$LOGS/forward.jsonl" 2>&1 \
    || { status=1; note "forward kernels: FAILED"; }
  grep -E '"ok": false|"failed"|Error|error' "$LOGS/forward.jsonl" | head -20
  grep -cE '"ok": true' "$LOGS/forward.jsonl" | xargs -I{} echo "forward checks passed: {}"
  grep -E '"(copy_TBps|case)"' "$LOGS/forward.jsonl"
fi

if has qforward; then
  python3 tools/gpubench/qforward_kernels.py kernels/build/qforward/sm_90.ptx >"$LOGS/qforward.jsonl" 2>&1 \
    || { status=1; note "qforward kernels: FAILED"; }
  grep -E '"ok": false|"failed"|Error|error' "$LOGS/qforward.jsonl" | head -20
  note "qforward checks passed: $(grep -cE '"ok": true' "$LOGS/qforward.jsonl") of $(grep -cE '"check"' "$LOGS/qforward.jsonl")"
  grep -E '"(copy_TBps|case)"' "$LOGS/qforward.jsonl"
  gguf=${HIPGO_GGUF:-}
  if [ -z "$gguf" ] && compgen -G ".gguf/*.part*" >/dev/null; then
    gguf=/tmp/smollm2-135m-instruct-q4_1.gguf
    cat .gguf/*.part* >"$gguf"
  fi
  want_sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
  if [ -z "$gguf" ] || [ ! -f "$gguf" ]; then
    status=1; note "qforward generate: no GGUF (set HIPGO_GGUF or carry .gguf/ parts; $(ls .gguf 2>/dev/null | tr '\n' ' '))"
  elif [ "$(sha256sum "$gguf" | cut -d' ' -f1)" != "$want_sha" ]; then
    status=1; note "qforward generate: $gguf ($(stat -c %s "$gguf") bytes) is not the SmolLM2 Q4_1 GGUF (a part missing?)"
  else
    : >"$LOGS/qgenerate.log"
    for dev in gpu cpu; do
      echo "### -model $gguf -device $dev -chat -temp 0" >>"$LOGS/qgenerate.log"
      if $bin/generate -model "$gguf" -device $dev -chat -temp 0 -n 64 -prompt "What is the capital of France?" \
        >"/tmp/qgenerate-$dev.txt" 2>>"$LOGS/qgenerate.log"; then
        cat "/tmp/qgenerate-$dev.txt" >>"$LOGS/qgenerate.log"
      else
        status=1; note "qforward generate -device $dev: FAILED"
      fi
    done
    cat "$LOGS/qgenerate.log"
    note "qforward generate on the GPU: $(head -c 200 /tmp/qgenerate-gpu.txt | tr '\n' ' ')"
    if cmp -s /tmp/qgenerate-gpu.txt /tmp/qgenerate-cpu.txt; then
      note "qforward generate: GGUF chat reply on the GPU identical to the CPU's"
    else
      status=1; note "qforward generate: GGUF chat reply on the GPU DIFFERS from the CPU's"
    fi
    while read -r l; do note "qforward generate: $l"; done < <(grep -E '^(running on|loaded|prompt:)' "$LOGS/qgenerate.log")
  fi
fi

if has samplers; then
  # SAMPLER_OPS / TORCH_OPS narrow the run (comma-separated op names).
  python3 tools/gpubench/torch_samplers.py ${TORCH_OPS:-} >"$OUT/samplers.jsonl" 2>"$LOGS/samplers.err" || { status=1; note "torch baseline failed"; tail "$LOGS/samplers.err"; }
  if [ -x $bin/samplerbench ]; then
    $bin/samplerbench -ops "${SAMPLER_OPS:-}" >>"$OUT/samplers.jsonl" 2>>"$LOGS/samplers.err" || { status=1; note "samplerbench failed"; tail "$LOGS/samplers.err"; }
  fi
  python3 tools/gpubench/sampler_table.py "$OUT/samplers.jsonl" | tee "$LOGS/samplers.md"
fi

if has routes; then
  # The router's Policy from measurement: kernel against fallback per filter
  # combination, end to end per decode step (samplerbench -routes).
  $bin/samplerbench -routes >"$LOGS/routes.jsonl" 2>&1 || { status=1; note "samplerbench -routes failed"; }
  cat "$LOGS/routes.jsonl"
  note "routes: $(tail -1 "$LOGS/routes.jsonl")"
  # The CPU fallback on this host's cores: one core against all of them.
  if [ -x $bin/sampling.test ]; then
    (cd sampling && ../$bin/sampling.test -test.run='^$' -test.bench=Argpartition -test.benchtime=20x -test.cpu=1,$(nproc)) 2>&1 | grep -E '^Benchmark' | tee "$LOGS/argpartition.txt"
  fi
fi

if has hf; then
  if [ -x $bin/hfcompare ]; then
    python3 model/internal/cmd/hfcompare/hf_compare.py --hipgo $bin/hfcompare --work /tmp/hf >"$OUT/hf.log" 2>&1 || { status=1; note "hf compare failed"; }
    tail -40 "$OUT/hf.log"
  fi
fi

if has train; then
  # Last, alone on the GPU, so it disturbs no measurement above.
  # Outside .gpu (a later call's carry replaces it) and split: files over
  # 16 MiB do not come back.
  rm -rf /tmp/hipgo-demo && mkdir -p /tmp/hipgo-demo/demo
  python3 tools/traindemo/train.py --corpus .gpu/corpus/kjv.txt --out /tmp/hipgo-demo/demo --seconds "${TRAIN_SECONDS:-90}" >"$OUT/train.log" 2>&1
  echo "train exit $?" >>"$OUT/train.log"
  tail -15 "$OUT/train.log"
  if [ -f /tmp/hipgo-demo/demo/model.safetensors ]; then
    tar -C /tmp/hipgo-demo -czf /tmp/hipgo-demo/demo.tgz demo && split -b 12m /tmp/hipgo-demo/demo.tgz "$OUT/demo.tgz.part-" &&
      note "train: demo model in demo.tgz.part-* ($(sha256sum /tmp/hipgo-demo/demo.tgz | cut -c1-16))"
  else
    status=1; note "train: FAILED"
  fi
fi

if has tok; then
  demo_tok=()
  [ -f /tmp/hipgo-demo/demo/tokenizer.json ] && demo_tok=(/tmp/hipgo-demo/demo/tokenizer.json)
  if python3 model/tokenizer/internal/cmd/tokdump/hfcheck.py --tokdump $bin/tokdump --n 1200 --train-corpus .gpu/corpus/kjv.txt "${demo_tok[@]}" >"$LOGS/tok.log" 2>&1; then
    note "tokenizer: identical to HF tokenizers"
  else
    status=1; note "tokenizer: DIFFERENCES"
  fi
  tail -25 "$LOGS/tok.log"
fi

if has generate; then
  if [ -x $bin/generate ]; then
    : >"$LOGS/generate.log"
    for dev in gpu cpu; do
      echo "### -device $dev -temp 0 -n 128" >>"$LOGS/generate.log"
      if $bin/generate -device $dev -temp 0 -n 128 -seed 7 >"/tmp/generate-$dev.txt" 2>>"$LOGS/generate.log"; then
        cat "/tmp/generate-$dev.txt" >>"$LOGS/generate.log"
      else
        status=1; note "generate -device $dev: FAILED"
      fi
    done
    if cmp -s /tmp/generate-gpu.txt /tmp/generate-cpu.txt; then
      note "generate: greedy text on the GPU identical to the CPU's"
    else
      status=1; note "generate: greedy text on the GPU DIFFERS from the CPU's"
    fi
    echo "### -device gpu (sampled, default options) -n 200" >>"$LOGS/generate.log"
    $bin/generate -device gpu -n 200 -seed 7 >>"$LOGS/generate.log" 2>&1 || { status=1; note "generate sampled: FAILED"; }
    # Batched greedy decode on the GPU backend (random weights of SmolLM-135M's
    # and the demo model's shapes, batch 1 and 32, graphs on and off; tokens/s over the batch).
    (cd model && ../$bin/model.test -test.run '^$' -test.bench '^BenchmarkGPUDecode' -test.benchtime 64x -test.count=1) >/tmp/generate-bench.txt 2>&1 \
      || { status=1; note "BenchmarkGPUDecode: FAILED"; tail -20 /tmp/generate-bench.txt; }
    grep -E '^Benchmark' /tmp/generate-bench.txt >>"$LOGS/generate.log"
    cat "$LOGS/generate.log"
    while read -r l; do note "generate: $l"; done < <(grep -E '^(running on|loaded|prompt:|BenchmarkGPUDecode)' "$LOGS/generate.log")
  else
    status=1; note "generate: no binary in the bundle"
  fi
fi

if has side; then
  sbs=tools/gpubench/decode_side_by_side.py
  for shape in ${SIDE_SHAPES:-llama1b smollm135m}; do
    d=/tmp/sbs-$shape j="$LOGS/side-$shape.jsonl"
    : >"$j"
    [ -f "$d/config.json" ] || python3 $sbs make "$shape" "$d" "${SIDE_TOKENIZERS:-.peer/tok}/$shape" >>"$j" 2>"$LOGS/side-$shape.err" \
      || { status=1; note "side $shape: make FAILED"; tail -5 "$LOGS/side-$shape.err"; continue; }
    python3 $sbs floor "$d" >>"$j" 2>>"$LOGS/side-$shape.err"
    for g in 1 0; do
      HIPGO_GPU_GRAPHS=$g $bin/decodebench -model "$d" -device gpu -label "$shape" >>"$j.hipgo$g" 2>>"$LOGS/side-$shape.err" \
        || { status=1; note "side $shape: decodebench (graphs=$g) FAILED"; tail -5 "$LOGS/side-$shape.err"; }
      sed "s/\"tool\":\"hipgo\"/\"tool\":\"hipgo-graphs$g\"/" "$j.hipgo$g" >>"$j"
    done
    python3 $sbs hf "$d" ${SIDE_HF_MODES:-eager compile} >>"$j" 2>>"$LOGS/side-$shape.err" || { status=1; note "side $shape: transformers FAILED"; tail -5 "$LOGS/side-$shape.err"; }
    if [ -n "${LLAMA_CPP:-}" ] && [ -x "$LLAMA_CPP/build/bin/llama-bench" ]; then
      [ -f "$d.gguf" ] || python3 "$LLAMA_CPP/convert_hf_to_gguf.py" "$d" --outtype bf16 --outfile "$d.gguf" >>"$LOGS/side-$shape.err" 2>&1 \
        || { status=1; note "side $shape: convert_hf_to_gguf FAILED"; tail -5 "$LOGS/side-$shape.err"; }
      "$LLAMA_CPP/build/bin/llama-bench" -m "$d.gguf" -ngl 99 -n 128 -p 512 -r 3 -o jsonl >"/tmp/lb-$shape.jsonl" 2>>"$LOGS/side-$shape.err"
      "$LLAMA_CPP/build/bin/llama-batched-bench" -m "$d.gguf" -ngl 99 -c 8192 -npp 16 -ntg 128 -npl 1,32 >"/tmp/lbb-$shape.txt" 2>>"$LOGS/side-$shape.err"
      python3 $sbs llamacpp "/tmp/lb-$shape.jsonl" "/tmp/lbb-$shape.txt" >>"$j"
    else
      note "side $shape: llama.cpp not run (LLAMA_CPP unset or not built)"
    fi
    echo "### $shape"; python3 $sbs table "$j" | tee "$LOGS/side-$shape.md"
    while read -r l; do note "side $shape: $l"; done < <(grep -E '^\| (hipgo|transformers|llama|floor)' "$LOGS/side-$shape.md")
  done
fi

if has cpuquant; then
  root=$PWD
  if (cd model/internal/quant && "$root/$bin/quant.bench" -test.count=1) >"$LOGS/cpuquant.log" 2>&1 &&
    (cd model/internal/cpu && "$root/$bin/cpu.bench" -test.count=1) >>"$LOGS/cpuquant.log" 2>&1; then
    note "cpuquant tests: PASS"
  else
    status=1; note "cpuquant tests: FAIL"; tail -20 "$LOGS/cpuquant.log"
  fi
  grep -m1 'model name' /proc/cpuinfo
  (cd model/internal/cpu && "$root/$bin/cpu.bench" -test.run=NONE -test.bench='MatVecQuant/avx2' -test.benchtime=10x -test.count=3 -test.cpu=1) 2>&1 | tee -a "$LOGS/cpuquant.log" | grep -E '^Benchmark'
fi

if has serve; then
  # examples/serve on the GPU batch path: the load test (64 clients x 20,
  # 5% injected step failures), then a real out-of-bounds fault (the
  # runtime's oob_write_u32 test kernel) in the middle of load, with
  # -on-device-loss=fail and =cpu.
  if [ -x $bin/serve ] && [ -x $bin/serveload ]; then
    : >"$LOGS/serve.log"
    serve_run() { # name port serve-args...
      local name=$1 port=$2; shift 2
      $bin/serve -device gpu -addr 127.0.0.1:$port "$@" >>"$LOGS/serve-$name.log" 2>&1 &
      local pid=$!
      for _ in $(seq 1 600); do curl -sf http://127.0.0.1:$port/health/ready >/dev/null && break; sleep 0.1; done
      echo "### $name: serve $*" >>"$LOGS/serve.log"
      echo "$pid"
    }
    # -kv-tokens: room for all 64 sequences of the demo model's 512-token
    # context, so no request fails for want of KV blocks.
    pid=$(serve_run load 18080 -max-batch 64 -kv-tokens 32768 -inject-step-failures 0.05)
    $bin/serveload -url http://127.0.0.1:18080 -clients 64 -requests 20 -max-tokens 32 -timeout 60s >>"$LOGS/serve.log" 2>&1 || { status=1; note "serve load: FAILED"; }
    curl -s http://127.0.0.1:18080/metrics | grep -E '^hipgo_(device_state|sampling_router_total|failed_steps_total|errors_total)' >>"$LOGS/serve.log"
    kill $pid; wait $pid 2>/dev/null
    for mode in fail cpu; do
      # Step 40 falls in the middle of this load (about 170 steps).
      pid=$(serve_run oob-$mode 18081 -max-batch 64 -kv-tokens 32768 -inject-oob-at-step 40 -on-device-loss $mode)
      t0=$(date +%s.%N)
      $bin/serveload -url http://127.0.0.1:18081 -clients 64 -requests 5 -max-tokens 32 -timeout 60s >>"$LOGS/serve.log" 2>&1 || { status=1; note "serve oob $mode: FAILED"; }
      echo "ready after the fault ($mode):" >>"$LOGS/serve.log"
      curl -s -w ' HTTP %{http_code}\n' http://127.0.0.1:18081/health/ready >>"$LOGS/serve.log"
      echo "a later request ($mode):" >>"$LOGS/serve.log"
      curl -s -m 30 -w ' HTTP %{http_code} in %{time_total}s\n' -H 'Content-Type: application/json' -d '{"prompt":"x","max_tokens":4}' http://127.0.0.1:18081/v1/completions >>"$LOGS/serve.log"
      kill -0 $pid 2>/dev/null && echo "process still up after the fault ($mode)" >>"$LOGS/serve.log" || { status=1; note "serve oob $mode: the process died"; }
      kill $pid; wait $pid 2>/dev/null
    done
    cat "$LOGS/serve.log"
    while read -r l; do note "serve: $l"; done < <(grep -E '^(###|requests|latency|tokens|ready after|a later|process still|.*HTTP [0-9]+)' "$LOGS/serve.log")
  else
    status=1; note "serve: no binary in the bundle"
  fi
fi

for f in "$LOGS"/*; do echo "##### $(basename "$f")"; cat "$f"; done >"$OUT/misc.log" 2>/dev/null
echo
echo "===== summary ====="
printf '%s\n' "${summary[@]}"
exit $status
