#!/usr/bin/env bash
# Builds the GPU bundle into .gpu/ (ignored by git) for one vendor's machine
# (cuda by default; rocm for an AMD one): every GPU test binary
# (CGO_ENABLED=0, as users build), the tools the suite runs, and the runner.
# Then one call on the GPU machine runs everything:
#   device run: bash .gpu-carry/run.sh [sections]     (carry: .gpu-carry)
# The GPU machine has no Go; it has nvcc, python3 with torch, transformers,
# tokenizers. See scripts/gpu-suite.sh for what runs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu
rm -rf "$out/bin"
mkdir -p "$out/bin"
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
# The binaries read the demo model from the checkout that travels beside
# them instead of each embedding its 21 MB (model/demo/demo_disk.go).
export GOFLAGS="${GOFLAGS:-} -tags=hipgo_demo_from_disk"

target=${1:-cuda}
# Every package with tests that touch a GPU (named *GPU* by convention),
# except the other vendors' bindings (metal's GPU tests build only for
# darwin): every test in the bundle must pass with HIPGO_REQUIRE_GPU=1 on the
# target machine.
case "$target" in
  cuda) other='^\./(hip|hsa|metal)$' ;;
  rocm) other='^\./(cuda|metal)$' ;;
  *) echo "gpu-bundle: target must be cuda or rocm" >&2; exit 2 ;;
esac
pkgs=$(grep -rl --include='*_test.go' -E 'func (Test|Benchmark)GPU' . | xargs -n1 dirname | sort -u | grep -Ev "$other")
: >"$out/bin/PKGS"
for p in $pkgs; do
  name=$(echo "${p#./}" | tr '/' '_')
  go test -c -ldflags="-s -w" -o "$out/bin/$name.test" "$p"
  echo "$name ${p#./}" >>"$out/bin/PKGS"   # tests run from their package directory
done
for tool in gpuinfo faultprobe samplerbench serveload decodebench; do
  if compgen -G "tools/$tool/*.go" >/dev/null; then go build -ldflags="-s -w" -o "$out/bin/$tool" "./tools/$tool"; fi
done
for tool in model/internal/cmd/hfcompare model/tokenizer/internal/cmd/tokdump examples/generate examples/serve; do
  if compgen -G "$tool/*.go" >/dev/null; then go build -ldflags="-s -w" -o "$out/bin/$(basename "$tool")" "./$tool"; fi
done
# CPU kernel tests and benchmarks for the cpuquant section (the GPU host's
# CPU is an idle Intel Xeon; the CI machine is a loaded 2-core AMD).
go test -c -ldflags="-s -w" -o "$out/bin/cpu.bench" ./model/internal/cpu
go test -c -ldflags="-s -w" -o "$out/bin/quant.bench" ./model/internal/quant
# The ROCm-shaped shim over the CUDA driver (tools/rocmshim), for the
# rocmshim section and the tests section's shim runs: built here, where gcc
# and the ROCm headers are (the GPU machine has neither the headers nor Go).
rm -rf "$out/rocmshim"
if [ "$target" = cuda ]; then
  bash tools/rocmshim/build.sh "$out/rocmshim"
  # The shim's own tests (fault, CLR 6.2 model, abort), run over the real
  # driver. (Not the hip and hsa test binaries: 12 MB more, and the carry to
  # the GPU machine is limited to 64 MiB.)
  go test -c -ldflags="-s -w" -o "$out/rocmshim/shimbuild.test" ./tools/rocmshim/shimbuild
fi
cp scripts/gpu-suite.sh "$out/run.sh"
# The real SmolLM2 Q4_1 GGUF (98362432 bytes) for the qforward section, in
# GGUF_PARTS parts (default 4, 24590304 bytes each) under .gguf/ (ignored):
# with the checkout (about 30 MB) one part fits a call's 64 MiB carry, so
# carry one per call while the machine stays warm (files a call carried stay
# there), then .gpu-carry; the suite joins .gguf/*.part* and checks the hash.
gguf=.cache/models/smollm2-135m-instruct-q4_1.gguf
if [ -f "$gguf" ]; then
  rm -rf .gguf && mkdir -p .gguf
  split -n "${GGUF_PARTS:-4}" -d -a 1 "$gguf" .gguf/smollm2-135m-instruct-q4_1.gguf.part
fi
# The demo model's corpus, for the train section (needs Debian's bible-kjv).
if command -v bible >/dev/null; then
  mkdir -p "$out/corpus"
  tools/traindemo/prepare_corpus.sh "$out/corpus/kjv.txt" >/dev/null
fi
echo "gpu-bundle: $(ls "$out/bin" | tr '\n' ' ')"
[ -d .gguf ] && ls -l .gguf
du -sh "$out"
# What travels: one compressed archive and a runner that unpacks it (a call
# carries at most 64 MiB with the checkout, which is about 30 MB itself).
carry=.gpu-carry
rm -rf "$carry" && mkdir -p "$carry"
# GPU_BUNDLE_ONLY="a b ..." packs only those files of .gpu/bin (and the
# shim when it names rocmshim), for a call whose sections need only them:
# the checkout plus the whole bundle no longer fit in one call.
if [ -n "${GPU_BUNDLE_ONLY:-}" ]; then
  files=(.gpu/run.sh .gpu/bin/PKGS)
  for f in $GPU_BUNDLE_ONLY; do
    if [ "$f" = rocmshim ]; then files+=(.gpu/rocmshim); else files+=(".gpu/bin/$f"); fi
  done
  tar czf "$carry/bundle.tar.gz" "${files[@]}"
else
  tar czf "$carry/bundle.tar.gz" --exclude=./.gpu/corpus .gpu
fi
if [ -d "$out/corpus" ]; then tar czf "$carry/corpus.tar.gz" .gpu/corpus; fi
cat >"$carry/run.sh" <<'RUN'
#!/usr/bin/env bash
# Unpacks the GPU bundle beside the checkout, then runs the suite.
set -e
cd "$(dirname "$0")/.."
tar xzf .gpu-carry/bundle.tar.gz
[ -f .gpu-carry/corpus.tar.gz ] && tar xzf .gpu-carry/corpus.tar.gz
exec bash .gpu/run.sh "$@"
RUN
echo "gpu-bundle: carry .gpu-carry ($(du -sh "$carry" | cut -f1)); on the GPU machine: bash .gpu-carry/run.sh [sections]"
