package model

import (
	"context"
	"testing"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/stretchr/testify/require"
)

// TestMistralMatchesTransformers proves the CPU forward pass computes what
// transformers' MistralForCausalLM computes, for v0.3's sliding_window null
// (from safetensors, and from the same weights as a GGUF written as
// llama.cpp writes Mistral: general.architecture llama) and for 7B v0.1's
// window on every layer (8 on a 32-token prompt, and 64 greedy tokens past
// it; safetensors only, as a llama GGUF has no window and llama.cpp runs
// none): logits at the golden positions within 1e-5 of max|logit| and 64
// greedy tokens identical (model/testdata/mistral-tiny-transformers.json,
// hf_compare.py --preset-golden --family mistral).
func TestMistralMatchesTransformers(t *testing.T) {
	g := readGolden(t, "testdata/mistral-tiny-transformers.json", "mistral")
	presets := map[string]func() modeltest.Spec{
		"mistral-tiny":        modeltest.MistralTiny,
		"mistral-tiny-window": modeltest.MistralTinyWindow,
	}
	require.Len(t, g.Variants, len(presets))
	for _, v := range g.Variants {
		t.Run(v.Name, func(t *testing.T) {
			mk, ok := presets[v.Name]
			require.True(t, ok, "no spec for %s", v.Name)
			spec := mk()
			spec.NoTokenizer = true
			dir := goldenCheckpoint(t, spec, v.Name, v.SHA256)
			paths := map[string]string{"safetensors": dir}
			if spec.SlidingWindow == 0 {
				asLlama := spec
				asLlama.Arch = "llama"
				paths["gguf"] = ggufFromSpec(t, asLlama, nil, nil)
			} else {
				require.Greater(t, len(v.PromptIDs), 2*spec.SlidingWindow, "the prompt must outrun the window")
			}
			for format, path := range paths {
				m, err := Load(path, WithoutTokenizer())
				require.NoError(t, err, format)
				c := m.Config()
				if format == "safetensors" {
					require.Equal(t, Mistral, c.Architecture)
				}
				require.Equal(t, spec.SlidingWindow, c.SlidingWindow)
				require.False(t, c.QKVBias || c.OBias || c.QKNorm || c.Gemma)
				checkGolden(t, format, m, v.PromptIDs, v.Positions, v.Logits, v.Greedy)
			}
		})
	}
}

// TestMistralRunsWhereLlamaRuns proves a Mistral without a window (v0.3)
// runs on the GPU backend (here the simulated device) with the CPU's
// logits and greedy tokens, while one with a window shorter than its
// context (7B v0.1) is refused there by *BackendError naming the
// sliding-window layers, not computed without them.
func TestMistralRunsWhereLlamaRuns(t *testing.T) {
	ctx := context.Background()
	spec := modeltest.MistralTiny()
	cpu := loadSpec(t, spec)
	gpu := loadSpec(t, spec, WithDevice(simDevice(t, nil)))
	require.Contains(t, gpu.Backend(), "gpu cuda:0")
	prompt := testTokens(21, spec.Vocab)
	want, err := cpu.NewSession().Forward(ctx, prompt, true)
	require.NoError(t, err)
	gs := gpu.NewSession()
	defer gs.Close()
	got, err := gs.Forward(ctx, prompt, true)
	require.NoError(t, err)
	d := relDiff32(want, got)
	t.Logf("prefill logits: max|d|/max|logit| = %.2g", d)
	require.Less(t, d, 1e-5)
	opts := GenerateOptions{MaxTokens: 24}
	wantRes, err := cpu.GenerateTokens(ctx, prompt[:5], opts, nil)
	require.NoError(t, err)
	gotRes, err := gpu.GenerateTokens(ctx, prompt[:5], opts, nil)
	require.NoError(t, err)
	require.Equal(t, wantRes.Tokens, gotRes.Tokens)

	window := modeltest.MistralTinyWindow()
	window.NoTokenizer = true
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, window))
	_, err = Load(dir, WithoutTokenizer(), WithDevice(simDevice(t, nil)))
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Equal(t, &BackendError{Backend: "gpu", Architecture: Mistral, Missing: []string{"sliding-window attention layers"}}, be)
}
