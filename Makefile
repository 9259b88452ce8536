# hipgo: `make test` is the test command (README, .ci/run).
GO ?= go
# pipefail: a failing test piped into grep must fail the target.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
export HIPGO_REQUIRE_HOST_TOOLS := 1
# Real tokenizer files scripts/deps.sh fetches, for the tokenizer's golden tests.
export HIPGO_TEST_LLAMA3_TOKENIZER := $(CURDIR)/.cache/tokenizers/llama3/tokenizer.json
export HIPGO_TEST_QWEN3_TOKENIZER := $(CURDIR)/.cache/tokenizers/qwen3/tokenizer.json
export HIPGO_TEST_LLAMA2_TOKENIZER := $(CURDIR)/.cache/tokenizers/llama2/tokenizer.json
export HIPGO_TEST_GEMMA3_TOKENIZER := $(CURDIR)/.cache/tokenizers/gemma3/tokenizer.json
# llama.cpp's vocabulary-only GGUF files and tokenizer test vectors scripts/deps.sh fetches.
export HIPGO_TEST_LLAMACPP_VOCABS := $(CURDIR)/.cache/llamacpp-vocabs
# Real Llama and Gemma 3 chat templates scripts/deps.sh fetches, for model/chat's golden tests.
export HIPGO_TEST_CHAT_TEMPLATES := $(CURDIR)/.cache/chat_templates
# The real GGUF checkpoint scripts/deps.sh fetches, for the GGUF golden tests.
export HIPGO_TEST_SMOLLM2_GGUF := $(CURDIR)/.cache/models/smollm2-135m-instruct-q4_1.gguf

.PHONY: test deps vet build kernels kernels-check rocm-evidence test-nocgo test-race mlx-skips gpu-bundle

test: deps vet kernels-check rocm-evidence test-nocgo test-race mlx-skips build

deps:
	scripts/deps.sh

vet:
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) vet -tags hipgo_demo_from_disk ./model/demo ./examples/generate
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...

# The log lines that show the real ROCm 5.2 libraries answering (the tests
# themselves run again below, with the rest).
rocm-evidence:
	CGO_ENABLED=0 $(GO) test -count=1 -v -run 'TestHeaderCodesMatchLibrary|TestHeaderStatusesMatchLibrary|TestNoDeviceInit|TestNoDeviceGetDeviceCount|TestROCmWithoutAGPU' ./hip ./hsa ./runtime \
		| grep -E 'agrees on|real /usr|ROCm 5.2|^(ok|FAIL|---)'

# Users build without cgo, where purego uses its own loader: test that path.
test-nocgo:
	CGO_ENABLED=0 $(GO) test -count=1 ./...

# The race detector needs cgo, so this pass exercises purego's cgo path.
# On 2 cores the model package takes about 430 s under -race (2026-12-04,
# hostkern's 280 s beside it), near go test's default 10-minute limit per
# package: 20 minutes leaves room. Tests that check many values call
# require only on a miss; its stack walk per value costs most under -race.
test-race:
	$(GO) test -count=1 -race -timeout 20m ./...

# No package registry carries mlx-c, so CI has no libmlxc and the TestMLX*
# tests skip (they ran above): say how many, and why.
mlx-skips:
	@n=$$(CGO_ENABLED=0 $(GO) test -count=1 -v -run '^TestMLX' ./... 2>&1 | grep -c -- '--- SKIP' || true); \
	if [ -n "$$HIPGO_MLX_LIBRARY" ]; then echo "mlx: TestMLX* ran against $$HIPGO_MLX_LIBRARY ($$n skipped)"; \
	else echo "mlx: $$n TestMLX* tests skipped: no libmlxc (no package registry carries mlx-c; docs/mlx.md builds one, HIPGO_MLX_LIBRARY points at it)"; fi

# The darwin test binaries are linked too (vet above type-checks them; this
# also links them, as a Mac's `go test` would): nothing here can run them,
# so -exec=/bin/true stands in for the run.
build:
	CGO_ENABLED=0 $(GO) build ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build ./...
	@echo "GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) test -exec=/bin/true -run='^$$' ./... (link only)"
	@out=$$(GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) test -count=1 -exec=/bin/true -run='^$$' ./... 2>&1) || { echo "$$out"; exit 1; }

# Rebuild the committed kernel artifacts (needs clang-19, lld-19).
kernels:
	$(GO) run ./tools/kernelc

# Rebuild into a scratch folder and fail on any byte of difference.
kernels-check:
	$(GO) run ./tools/kernelc -check

# Build every GPU test binary and the runner into .gpu/ (see scripts/gpu-suite.sh).
gpu-bundle:
	scripts/gpu-bundle.sh
