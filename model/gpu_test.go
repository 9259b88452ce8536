package model

// GPU tests: the GPU backend with the real forward kernels on whatever GPU
// runtime.Open finds (the H200 in the GPU suite's tests section), against
// the CPU backend. They skip without a GPU and fail instead under
// HIPGO_REQUIRE_GPU=1.

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/hipgo/hipgo/runtime"
)

func openGPU(t *testing.T) *runtime.Device {
	t.Helper()
	dev, err := runtime.Open(context.Background())
	if errors.Is(err, runtime.ErrNoDevice) {
		testenv.NeedGPU(t, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Close()) })
	t.Logf("device: %s arch %s", dev, dev.Info().Arch)
	return dev
}

// Tolerances for GPU logits against the CPU forward, max|d| / max|logit|:
// the kernels accumulate in float32 in another order than the CPU, and every
// layer rounds its activations, so half-precision weights (whose products
// the CPU also rounds differently) get 1e-3 and float32 ones 1e-5.
const (
	tolHalf = 1e-3
	tolF32  = 1e-5
)

type gpuCase struct {
	name  string
	load  func(opts ...Option) (*Model, error)
	vocab int
	tol   float64
}

func gpuCases(t *testing.T) []gpuCase {
	spec := func(s modeltest.Spec) func(opts ...Option) (*Model, error) {
		fsys := specFS(t, s)
		return func(opts ...Option) (*Model, error) {
			return LoadFS(fsys, append([]Option{WithoutTokenizer()}, opts...)...)
		}
	}
	llama := modeltest.Llama3Tiny()
	llama.DType = safetensors.BF16
	qwen := modeltest.Qwen2Tiny()
	qwen.DType = safetensors.F16
	smol := modeltest.SmolLMTiny()
	smol.DType = safetensors.F32
	return []gpuCase{
		{"demo-bf16", func(opts ...Option) (*Model, error) { return LoadFS(demo.FS(), opts...) }, 4096, tolHalf},
		{"llama3-gqa-scaling-bf16", spec(llama), llama.Vocab, tolHalf},
		{"qwen2-bias-f16", spec(qwen), qwen.Vocab, tolHalf},
		{"smollm-tied-f32", spec(smol), smol.Vocab, tolF32},
	}
}

// TestGPUForwardMatchesTheCPU proves the GPU backend's logits agree with the
// CPU backend's within the tolerances above over a 64-token prompt (every
// position) and 64 decode steps, and that greedy decoding on the device
// gives the CPU's 64 tokens exactly.
func TestGPUForwardMatchesTheCPU(t *testing.T) {
	dev := openGPU(t)
	ctx := context.Background()
	for _, c := range gpuCases(t) {
		t.Run(c.name, func(t *testing.T) {
			cm, err := c.load()
			require.NoError(t, err)
			gm, err := c.load(WithDevice(dev))
			require.NoError(t, err)
			defer func() { require.NoError(t, gm.Close()) }()
			prompt := testTokens(64, c.vocab)
			cs, gs := cm.NewSession(), gm.NewSession()
			defer gs.Close()
			want, err := cs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			got, err := gs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			worst := relDiff32(want, got)
			for i := range 64 {
				tok := []uint32{uint32((i*37 + 3) % c.vocab)}
				want, err := cs.Forward(ctx, tok, false)
				require.NoError(t, err)
				got, err := gs.Forward(ctx, tok, false)
				require.NoError(t, err)
				worst = max(worst, relDiff32(want, got))
			}
			t.Logf("%s: max|d|/max|logit| = %.3g over the prompt and 64 decode steps (tolerance %g)", c.name, worst, c.tol)
			require.LessOrEqual(t, worst, c.tol)

			opts := GenerateOptions{MaxTokens: 64}
			wantRes, err := cm.GenerateTokens(ctx, prompt[:8], opts, nil)
			require.NoError(t, err)
			gotRes, err := gm.GenerateTokens(ctx, prompt[:8], opts, nil)
			require.NoError(t, err)
			require.Equal(t, wantRes.Tokens, gotRes.Tokens, "greedy tokens")
			t.Logf("%s: %d greedy tokens identical; GPU decode %.0f tokens/s", c.name, len(gotRes.Tokens), gotRes.DecodeTokensPerSecond())
		})
	}
}

// TestGPUBatchGivesEachSequenceItsAloneTokens is the batch test on the GPU:
// sequences of different lengths joining and leaving between steps each get
// the tokens they get alone (greedy, Gumbel and rejection sampling).
func TestGPUBatchGivesEachSequenceItsAloneTokens(t *testing.T) {
	dev := openGPU(t)
	spec := modeltest.Llama3Tiny()
	spec.DType = safetensors.BF16
	m := loadSpec(t, spec, WithDevice(dev))
	defer func() { require.NoError(t, m.Close()) }()
	requireBatchMatchesAlone(t, m, spec.Vocab)
}
