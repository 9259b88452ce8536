package model

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/runtime"
)

// tolQuant bounds GPU against CPU logits (max|d| / max|logit|) for the
// quantized tiny models: both decode the same weights exactly (the kernels
// reproduce quant.DequantizeRow bit for bit, hostkern's TestQuantEmbed), so
// only the float32 summation order differs, as for float32 weights
// (tolF32); the random-block weights are rougher than the float32 specs'
// and get ten times that.
const tolQuant = 1e-4

// TestGPUQuantizedGGUFMatchesTheCPU runs the quantized tiny GGUF models
// (every block format, a Q4_K_M-style unfused layer) on the GPU against the
// CPU backend: logits within tolQuant over a 48-token prompt and 48 decode
// steps, and the same 48 greedy tokens.
func TestGPUQuantizedGGUFMatchesTheCPU(t *testing.T) {
	dev := openGPU(t)
	ctx := context.Background()
	for i, c := range quantGGUFCases() {
		t.Run(c.name, func(t *testing.T) {
			path := ggufFromSpec(t, c.spec, nil, quantizeGGUF(t, uint64(i+1), c.types))
			cm, err := Load(path, WithoutTokenizer())
			require.NoError(t, err)
			gm, err := Load(path, WithoutTokenizer(), WithDevice(dev))
			require.NoError(t, err)
			defer func() { require.NoError(t, gm.Close()) }()
			require.Equal(t, c.layers, gm.be.(*gpuBackend).b.Unfused())
			prompt := testTokens(48, c.spec.Vocab)
			cs, gs := cm.NewSession(), gm.NewSession()
			defer gs.Close()
			want, err := cs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			got, err := gs.Forward(ctx, prompt, true)
			require.NoError(t, err)
			worst := relDiff32(want, got)
			for j := range 48 {
				tok := []uint32{uint32((j*37 + 3) % c.spec.Vocab)}
				want, err := cs.Forward(ctx, tok, false)
				require.NoError(t, err)
				got, err := gs.Forward(ctx, tok, false)
				require.NoError(t, err)
				worst = max(worst, relDiff32(want, got))
			}
			t.Logf("%s: max|d|/max|logit| = %.3g over the prompt and 48 decode steps (tolerance %g)", c.name, worst, tolQuant)
			require.LessOrEqual(t, worst, tolQuant)
			opts := GenerateOptions{MaxTokens: 48}
			wantRes, err := cm.GenerateTokens(ctx, prompt[:8], opts, nil)
			require.NoError(t, err)
			gotRes, err := gm.GenerateTokens(ctx, prompt[:8], opts, nil)
			require.NoError(t, err)
			require.Equal(t, wantRes.Tokens, gotRes.Tokens, "greedy tokens")
		})
	}
}

// TestGPUQuantizedBatchDequantizes: TestSimGPUQuantizedBatchDequantizes on
// the GPU: 8 sequences decoded together give each the greedy tokens of the
// model's float16 twin alone on the CPU.
func TestGPUQuantizedBatchDequantizes(t *testing.T) {
	dev := openGPU(t)
	checkBatchDequantizes(t, func() *runtime.Device { return dev })
}

// TestGPUQuantizedPrefillDequantizes: TestSimGPUQuantizedPrefillDequantizes
// on the GPU: an 80-token prefill of a quantized model gives the logits of
// its float16-layer twin on the CPU, and one-row steps run matvec_Q.
func TestGPUQuantizedPrefillDequantizes(t *testing.T) {
	dev := openGPU(t)
	checkPrefillDequantizes(t, func() *runtime.Device { return dev }, tolQuant)
}
