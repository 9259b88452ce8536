package model

import (
	"context"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/model/internal/gpu/gpusim"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
	"github.com/stretchr/testify/require"
)

// TestKVCacheTypeOptions: an unknown type, and f16 on the CPU, are
// ErrOptions errors from Load; f32 loads on the CPU.
func TestKVCacheTypeOptions(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	fsys := specFS(t, spec)
	_, err := LoadFS(fsys, WithoutTokenizer(), WithKVCacheType("bf8"))
	require.ErrorIs(t, err, ErrOptions)
	require.ErrorContains(t, err, `"bf8"`)
	_, err = LoadFS(fsys, WithoutTokenizer(), WithKVCacheType(KVCacheF16))
	require.ErrorIs(t, err, ErrOptions)
	require.ErrorContains(t, err, "cpu backend keeps an f32 cache")
	m, err := LoadFS(fsys, WithoutTokenizer(), WithKVCacheType(KVCacheF32))
	require.NoError(t, err)
	require.NoError(t, m.Close())
}

// kvLaunches counts m's launches of kernels that read or write the KV
// cache, by the cache's precision: names ending in _kv16, and the others.
func kvLaunches(m *Model) (half, full int64) {
	b := m.be.(*gpuBackend).b
	for _, k := range []string{"kv_store_f32", "rope_kv_store_f32", "attention_f32", "attention_gqa_f32",
		"attention_warps_f32", "rope_attention_warps_f32",
		"attention_split_f32", "attention_prefill_f32"} {
		full += b.Launched(k)
		half += b.Launched(k + "_kv16")
	}
	return half, full
}

// cpuRoundingKV makes the CPU backend store its cache rounded to f16: the
// values an f16 GPU cache holds. The two forwards compute each k and v to
// float32 rounding before they round it, so a value near a midpoint
// between two f16 values can round to either: the logits then differ by
// such one-ulp steps (2^-11 of a few cached values), tolHalfFlips.
func cpuRoundingKV(o *options) { o.cpuRoundKV = true }

// tolHalfFlips bounds the logits of an f16 cache against the
// f16-rounding CPU's (cpuRoundingKV): measured 8e-5 over 30 tokens and
// 2.1e-4 over 600 on Llama3Tiny in the simulation (1.3e-3 and 3.3e-3
// against the f32 CPU), and up to 7.6e-4 on an H100 (the f32 SmolLM, whose
// products round otherwise than the CPU's).
const tolHalfFlips = 1e-3

// TestSimGPUHalfKVCache: with WithKVCacheType(KVCacheF16) every kernel
// over the cache is its *_kv16 twin (the prefill, a decode step through
// rope_attention_warps_f32_kv16, a long one through
// attention_split_f32_kv16, and with the fused kernels off through
// rope_f32 + kv_store_f32_kv16 + attention_warps_f32_kv16), none of the f32
// cache's runs, and the logits are those of the CPU forward whose cache
// holds the same f16 values (within tolHalfFlips, and at least 5 times
// closer than to the CPU's f32 cache: the twins store each value rounded
// to f16) and its greedy tokens.
func TestSimGPUHalfKVCache(t *testing.T) {
	ctx := context.Background()
	spec := modeltest.Llama3Tiny()
	spec.MaxPos = 1024
	cpuM, roundM := loadSpec(t, spec), loadSpec(t, spec, cpuRoundingKV)
	for _, fused := range []string{"1", "0"} {
		t.Run(EnvGPUFused+"="+fused, func(t *testing.T) {
			t.Setenv(EnvGPUFused, fused)
			gm := loadSpec(t, spec, WithDevice(simDevice(t, &gpusim.Faults{})), WithKVCacheType(KVCacheF16), WithKVCacheTokens(4096))
			defer gm.Close()
			for _, n := range []int{30, 600} { // a short decode, and one over tables of 1024 keys (split)
				cs, rs, gs := cpuM.NewSession(), roundM.NewSession(), gm.NewSession()
				worst, rounded := 0.0, 0.0
				forwardBoth(t, rs, gs, testTokens(n, spec.Vocab), 8, spec.Vocab, func(_ int, want, got []float32) {
					rounded = max(rounded, relDiff32(want, got))
				})
				forwardBoth(t, cs, roundM.NewSession(), testTokens(n, spec.Vocab), 8, spec.Vocab, func(_ int, want, got []float32) {
					worst = max(worst, relDiff32(want, got))
				})
				gs.Close()
				t.Logf("prompt %d: max|d|/max|logit| = %.3g against the f16-rounding CPU, %.3g against the f32 CPU", n, rounded, worst)
				require.Less(t, rounded, tolHalfFlips, "prompt %d", n)
				require.Less(t, 5*rounded, worst, "prompt %d: the cache holds the f16-rounded values", n)
			}
			want, err := roundM.GenerateTokens(ctx, testTokens(9, spec.Vocab), GenerateOptions{MaxTokens: 24}, nil)
			require.NoError(t, err)
			got, err := gm.GenerateTokens(ctx, testTokens(9, spec.Vocab), GenerateOptions{MaxTokens: 24}, nil)
			require.NoError(t, err)
			require.Equal(t, want.Tokens, got.Tokens)
			half, full := kvLaunches(gm)
			require.Zero(t, full, "no kernel over an f32 cache")
			b := gm.be.(*gpuBackend).b
			require.Positive(t, b.Launched("attention_prefill_f32_kv16"))
			require.Positive(t, b.Launched("attention_split_f32_kv16"))
			if fused == "1" {
				require.Positive(t, b.Launched("rope_attention_warps_f32_kv16"))
			} else {
				require.Positive(t, b.Launched("kv_store_f32_kv16"))
				require.Positive(t, b.Launched("attention_warps_f32_kv16"))
			}
			t.Logf("%d launches over the f16 cache", half)
		})
	}
}

// TestSimGPUHalfKVCacheHoldsTwiceTheTokens: the f16 cache's blocks take
// half the device memory of f32's: a pool whose f32 cache does not fit a
// device's memory loads with the f16 one.
func TestSimGPUHalfKVCacheHoldsTwiceTheTokens(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	kvBytes := func(tokens int) int { return 2 * spec.Layers * tokens * spec.KVHeads * (spec.Hidden / spec.Heads) } // k and v, one byte a value
	const tokens = 1 << 20
	mem := uint64(3*kvBytes(tokens)) + 64<<20 // room for an f16 cache (2 bytes a value), not an f32 one (4)
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(gpusim.Driver(mem, nil)))
	require.NoError(t, err)
	defer dev.Close()
	_, err = LoadFS(specFS(t, spec), WithoutTokenizer(), WithDevice(dev), WithKVCacheTokens(tokens))
	require.Error(t, err, "an f32 cache of %d tokens", tokens)
	m, err := LoadFS(specFS(t, spec), WithoutTokenizer(), WithDevice(dev), WithKVCacheTokens(tokens), WithKVCacheType(KVCacheF16))
	require.NoError(t, err)
	require.NoError(t, m.Close())
}

// TestGPUHalfKVCacheMatchesTheCPU: TestGPUForwardMatchesTheCPU's models
// with an f16 KV cache, against the CPU forward whose cache holds the same
// f16 values: logits within the model's tolerance (at least tolHalfFlips)
// over a 64-token prompt
// and 64 decode steps (and over a 350-token prompt, the key ranges on
// CUDA, where the context allows), and its 64 greedy tokens; every kernel
// over the cache is a *_kv16 one. Against the CPU's f32 cache the logits
// and the tokens are logged.
func TestGPUHalfKVCacheMatchesTheCPU(t *testing.T) {
	dev := openGPU(t)
	ctx := context.Background()
	for _, c := range gpuCases(t) {
		t.Run(c.name, func(t *testing.T) {
			cm, err := c.load()
			require.NoError(t, err)
			rm, err := c.load(cpuRoundingKV)
			require.NoError(t, err)
			gm, err := c.load(WithDevice(dev), WithKVCacheType(KVCacheF16))
			require.NoError(t, err)
			defer func() { require.NoError(t, gm.Close()) }()
			prompts := []int{64}
			if gm.Config().MaxPositionEmbeddings >= 512 {
				prompts = append(prompts, 350)
			}
			worst := map[int]float64{}
			for _, n := range prompts {
				cs, rs, gs := cm.NewSession(), rm.NewSession(), gm.NewSession()
				f32 := 0.0
				forwardBoth(t, rs, gs, testTokens(n, c.vocab), 64, c.vocab, func(_ int, want, got []float32) {
					worst[n] = max(worst[n], relDiff32(want, got))
				})
				forwardBoth(t, cs, rm.NewSession(), testTokens(n, c.vocab), 64, c.vocab, func(_ int, want, got []float32) {
					f32 = max(f32, relDiff32(want, got))
				})
				gs.Close()
				t.Logf("%s: prompt %d: max|d|/max|logit| = %.3g against the f16-rounding CPU (tolerance %g), %.3g against the f32 CPU", c.name, n, worst[n], max(c.tol, tolHalfFlips), f32)
			}
			opts := GenerateOptions{MaxTokens: 64}
			want, err := rm.GenerateTokens(ctx, testTokens(8, c.vocab), opts, nil)
			require.NoError(t, err)
			got, err := gm.GenerateTokens(ctx, testTokens(8, c.vocab), opts, nil)
			require.NoError(t, err)
			f32, err := cm.GenerateTokens(ctx, testTokens(8, c.vocab), opts, nil)
			require.NoError(t, err)
			t.Logf("%s: the first %d of %d greedy tokens are the f16-rounding CPU's, %d the f32 CPU's", c.name,
				commonPrefix(want.Tokens, got.Tokens), len(want.Tokens), commonPrefix(f32.Tokens, got.Tokens))
			for n, w := range worst {
				require.LessOrEqual(t, w, max(c.tol, tolHalfFlips), "prompt %d", n)
			}
			require.Equal(t, want.Tokens, got.Tokens, "greedy tokens")
			half, full := kvLaunches(gm)
			require.Zero(t, full)
			require.Positive(t, half)
			if dev.Backend() == driver.CUDA && strings.HasPrefix(c.name, "demo") {
				require.Positive(t, gm.be.(*gpuBackend).b.Launched("attention_split_f32_kv16"), "the 350-token prompt's decode")
			}
		})
	}
}

// commonPrefix is how many leading tokens a and b share.
func commonPrefix(a, b []uint32) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}
