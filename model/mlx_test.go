package model

// The MLX backend (DeviceMLX) against the pure-Go forward. These tests need
// a real libmlxc: without one they skip (CI: no registry carries mlx-c) and
// under HIPGO_REQUIRE_MLX=1 they fail.

import (
	"context"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/mlx"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/modeltest"
)

// needMLX skips (or, under HIPGO_REQUIRE_MLX=1, fails) without libmlxc.
func needMLX(t *testing.T) {
	t.Helper()
	testenv.NeedMLX(t, mlx.Load())
}

// mlxPairs loads each layout on the CPU and on MLX: Llama 3 GQA with llama3
// rope scaling (f32), Qwen2 with q/k/v biases and an untied head (f32), a
// tied bf16 SmolLM-style model, and the embedded demo model.
func mlxPairs(t *testing.T) []modelPair {
	specs := map[string]modeltest.Spec{
		"llama3-gqa-f32":   modeltest.Llama3Tiny(),
		"qwen2-bias-f32":   modeltest.Qwen2Tiny(),
		"smollm-tied-bf16": modeltest.SmolLMTiny(),
	}
	var out []modelPair
	for name, spec := range specs {
		g := loadSpec(t, spec, WithDeviceMode(DeviceMLX))
		t.Cleanup(func() { require.NoError(t, g.Close()) })
		out = append(out, modelPair{name: name, cpu: loadSpec(t, spec), gpu: g, vocab: spec.Vocab})
	}
	c, err := LoadFS(demo.FS())
	require.NoError(t, err)
	g, err := LoadFS(demo.FS(), WithDeviceMode(DeviceMLX))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, g.Close()) })
	return append(out, modelPair{name: "demo", cpu: c, gpu: g, vocab: c.cfg.VocabSize})
}

// TestMLXLogitsAndGreedyTokensMatchTheCPU proves the MLX forward computes
// the CPU forward's logits: a prefill of every position, a prompt fed in
// two parts (the second part's causal mask must line up with the cached
// keys), decode steps one token at a time; and that 64 greedy tokens are
// the CPU's.
func TestMLXLogitsAndGreedyTokensMatchTheCPU(t *testing.T) {
	needMLX(t)
	ctx := context.Background()
	for _, p := range mlxPairs(t) {
		t.Run(p.name, func(t *testing.T) {
			require.Contains(t, p.gpu.Backend(), "mlx ")
			prompt := testTokens(21, p.vocab)
			cs, gs := p.cpu.NewSession(), p.gpu.NewSession()
			defer gs.Close()
			want, err := cs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			got, err := gs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			worst := relDiff32(want, got)
			t.Logf("prefill logits: max|d|/max|logit| = %.2g", worst)
			require.Less(t, worst, 1e-4)
			for i := range 20 {
				tok := []uint32{uint32((i*37 + 3) % p.vocab)}
				want, err := cs.Forward(ctx, tok, false)
				require.NoError(t, err)
				got, err := gs.Forward(ctx, tok, false)
				require.NoError(t, err)
				d := relDiff32(want, got)
				require.Less(t, d, 1e-4, "decode step %d", i)
				worst = max(worst, d)
			}

			split := p.gpu.NewSession()
			defer split.Close()
			a, err := split.Forward(ctx, prompt[:13], true)
			require.NoError(t, err)
			b, err := split.Forward(ctx, prompt[13:], true)
			require.NoError(t, err)
			whole, err := p.cpu.NewSession().Forward(ctx, prompt, true)
			require.NoError(t, err)
			d := relDiff32(whole, append(a, b...))
			t.Logf("prompt in two parts: max|d|/max|logit| = %.2g", d)
			require.Less(t, d, 1e-4)
			t.Logf("worst over prefill, split prefill and 20 decode steps: %.2g", max(worst, d))

			wantGreedy := greedyTokens(t, p.cpu, prompt[:5], 64)
			require.Equal(t, wantGreedy, greedyTokens(t, p.gpu, prompt[:5], 64))

			opts := GenerateOptions{MaxTokens: 64, Temperature: 0}
			wantRes, err := p.cpu.GenerateTokens(ctx, prompt[:5], opts, nil)
			require.NoError(t, err)
			gotRes, err := p.gpu.GenerateTokens(ctx, prompt[:5], opts, nil)
			require.NoError(t, err)
			require.Equal(t, wantRes.Tokens, gotRes.Tokens)
			require.Equal(t, wantRes.Reason, gotRes.Reason)
			t.Logf("greedy: 64 tokens identical through Forward, and through GenerateTokens %d (%s)", len(gotRes.Tokens), gotRes.Reason)
		})
	}
}

// greedyTokens feeds prompt and then n argmax tokens through a session,
// past any end-of-sequence token.
func greedyTokens(t *testing.T, m *Model, prompt []uint32, n int) []uint32 {
	s := m.NewSession()
	defer s.Close()
	var out []uint32
	in := prompt
	for range n {
		logits, err := s.Forward(context.Background(), in, false)
		require.NoError(t, err)
		best := 0
		for i, v := range logits {
			if v > logits[best] {
				best = i
			}
		}
		out = append(out, uint32(best))
		in = []uint32{uint32(best)}
	}
	return out
}

// TestMLXSampledTokensMatchTheCPU proves sampling on the host from MLX's
// logits draws the CPU's tokens for the same seed.
func TestMLXSampledTokensMatchTheCPU(t *testing.T) {
	needMLX(t)
	ctx := context.Background()
	spec := modeltest.Llama3Tiny()
	c := loadSpec(t, spec)
	g := loadSpec(t, spec, WithDeviceMode(DeviceMLX))
	defer g.Close()
	opts := GenerateOptions{MaxTokens: 32, Temperature: 0.9, TopP: 1, TopK: 40, Seed: 7}
	want, err := c.GenerateTokens(ctx, testTokens(6, spec.Vocab), opts, nil)
	require.NoError(t, err)
	got, err := g.GenerateTokens(ctx, testTokens(6, spec.Vocab), opts, nil)
	require.NoError(t, err)
	require.Equal(t, want.Tokens, got.Tokens)
}

// TestMLXCancelledForwardKeepsTheCache proves a cancelled step leaves the
// sequence as it was: the next forward gives the CPU's logits.
func TestMLXCancelledForwardKeepsTheCache(t *testing.T) {
	needMLX(t)
	spec := modeltest.Qwen2Tiny()
	c := loadSpec(t, spec)
	g := loadSpec(t, spec, WithDeviceMode(DeviceMLX))
	defer g.Close()
	ctx := context.Background()
	prompt := testTokens(9, spec.Vocab)
	gs := g.NewSession()
	defer gs.Close()
	_, err := gs.Forward(ctx, prompt[:5], false)
	require.NoError(t, err)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = gs.Forward(cancelled, prompt[5:], false)
	require.ErrorIs(t, err, context.Canceled)
	got, err := gs.Forward(ctx, prompt[5:], true)
	require.NoError(t, err)
	want, err := c.NewSession().Forward(ctx, prompt, true)
	require.NoError(t, err)
	require.Less(t, relDiff32(want[5*spec.Vocab:], got), 1e-4)
}

// TestDeviceMLXWithoutLibraryIsErrNoMLX proves that without a loadable
// libmlxc, DeviceMLX is a clear error from Load (CI runs this).
func TestDeviceMLXWithoutLibraryIsErrNoMLX(t *testing.T) {
	if mlx.Load() == nil {
		t.Skip("libmlxc loads here: the missing-library path cannot be shown")
	}
	_, err := LoadFS(demo.FS(), WithDeviceMode(DeviceMLX))
	require.ErrorIs(t, err, ErrNoMLX)
	require.ErrorIs(t, err, mlx.Load())
}

// TestMLXQuantizedGGUFMatchesTheCPU runs GGUF models in every block format
// (dequantized to float32 when the MLX backend loads them) against the CPU
// backend, which reads the blocks themselves: logits and greedy tokens.
func TestMLXQuantizedGGUFMatchesTheCPU(t *testing.T) {
	needMLX(t)
	ctx := context.Background()
	for i, c := range quantGGUFCases() {
		t.Run(c.name, func(t *testing.T) {
			path := ggufFromSpec(t, c.spec, nil, quantizeGGUF(t, uint64(i+1), c.types))
			cm, err := Load(path, WithoutTokenizer())
			require.NoError(t, err)
			gm, err := Load(path, WithoutTokenizer(), WithDeviceMode(DeviceMLX))
			require.NoError(t, err)
			defer gm.Close()
			require.Contains(t, gm.Backend(), "mlx ")
			require.Greater(t, gm.bytes, cm.bytes, "MLX holds float32, the CPU the blocks")
			prompt := testTokens(21, c.spec.Vocab)
			cs, gs := cm.NewSession(), gm.NewSession()
			defer gs.Close()
			want, err := cs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			got, err := gs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			d := relDiff32(want, got)
			t.Logf("prefill logits: max|d|/max|logit| = %.2g (weights: %d bytes on MLX, %d on the CPU)", d, gm.bytes, cm.bytes)
			require.Less(t, d, 1e-4)
			require.Equal(t, greedyTokens(t, cm, prompt[:5], 64), greedyTokens(t, gm, prompt[:5], 64))
		})
	}
}

// TestMLXRealSmolLM2ChatMatchesTransformers runs the real SmolLM2-135M
// Q4_1 GGUF on MLX: the greedy chat reply is transformers'
// (testdata/smollm2-135m-instruct-q4_1.json), as on the CPU.
func TestMLXRealSmolLM2ChatMatchesTransformers(t *testing.T) {
	needMLX(t)
	path := testenv.CacheFile(t, "HIPGO_TEST_SMOLLM2_GGUF", "models/smollm2-135m-instruct-q4_1.gguf")
	g := loadSmolLM2Golden(t)
	m, err := Load(path, WithDeviceMode(DeviceMLX))
	require.NoError(t, err)
	defer m.Close()
	require.Contains(t, m.Backend(), "mlx ")
	res, err := m.Chat(context.Background(), g.Chat.Messages, GenerateOptions{MaxTokens: 32, Temperature: 0}, func(Token) error { return nil })
	require.NoError(t, err)
	require.Equal(t, g.Chat.ReplyIDs[:len(g.Chat.ReplyIDs)-1], res.Tokens)
	require.Equal(t, g.Chat.Reply, res.Text)
	t.Logf("chat reply on %s: %q", m.Backend(), res.Text)
}

// TestMLXFreesEveryArray proves a model's steps, sequences and Close free
// every MLX handle they make: after a generation, a cancelled step and Close,
// no handle was dropped unfreed (mlx.Leaked counts those at GC).
func TestMLXFreesEveryArray(t *testing.T) {
	needMLX(t)
	settle := func() int64 {
		for range 5 {
			goruntime.GC()
			time.Sleep(20 * time.Millisecond)
		}
		return mlx.Leaked()
	}
	before := settle()
	spec := modeltest.Qwen2Tiny()
	m := loadSpec(t, spec, WithDeviceMode(DeviceMLX))
	ctx := context.Background()
	_, err := m.GenerateTokens(ctx, testTokens(7, spec.Vocab), GenerateOptions{MaxTokens: 16, Temperature: 0}, nil)
	require.NoError(t, err)
	s := m.NewSession()
	_, err = s.Forward(ctx, testTokens(5, spec.Vocab), true)
	require.NoError(t, err)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Forward(cancelled, testTokens(3, spec.Vocab), false)
	require.ErrorIs(t, err, context.Canceled)
	s.Close()
	require.NoError(t, m.Close())
	require.Equal(t, before, settle(), "MLX handles dropped without Free")
}

// TestMLXConcurrentGenerationsMatchTheCPU proves 8 generations at once on
// one MLX model (their steps serialised on the model's stream) each give the
// CPU's greedy tokens; run it under -race.
func TestMLXConcurrentGenerationsMatchTheCPU(t *testing.T) {
	needMLX(t)
	spec := modeltest.SmolLMTiny()
	c := loadSpec(t, spec)
	g := loadSpec(t, spec, WithDeviceMode(DeviceMLX))
	defer g.Close()
	ctx := context.Background()
	opts := GenerateOptions{MaxTokens: 24, Temperature: 0}
	prompt := func(i int) []uint32 { return testTokens(3+i, spec.Vocab)[i:] }
	want := make([][]uint32, 8)
	for i := range want {
		res, err := c.GenerateTokens(ctx, prompt(i), opts, nil)
		require.NoError(t, err)
		want[i] = res.Tokens
	}
	got := make([][]uint32, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			res, err := g.GenerateTokens(ctx, prompt(i), opts, nil)
			got[i], errs[i] = res.Tokens, err
		})
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		require.Equal(t, want[i], got[i], "generation %d", i)
	}
}
