package model

import (
	"testing"

	"github.com/hipgo/hipgo/model/gguf"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/stretchr/testify/require"
)

// TestPhi3MatchesTransformers proves the CPU forward pass computes what
// transformers' Phi3ForCausalLM computes: fused qkv_proj and gate_up_proj,
// RoPE on the first 12 of each head's 16 values, and LongRoPE with an
// original context of 32 (model/testdata/phi3-tiny-transformers.json,
// hf_compare.py --preset-golden --family phi3). A 24-token prompt takes
// the short factors and its 64 greedy tokens cross into the long ones (each
// step's new key with them, the keys cached before keeping theirs, as
// transformers' cache keeps them); a 48-token prompt takes the long
// factors throughout. Logits at the golden positions within 1e-5 of
// max|logit| and 64 greedy tokens identical.
func TestPhi3MatchesTransformers(t *testing.T) {
	g := readGolden(t, "testdata/phi3-tiny-transformers.json", "phi3")
	require.Len(t, g.Variants, 2)
	spec := modeltest.Phi3Tiny()
	spec.NoTokenizer = true
	// Both variants run the same weights (their prompts differ).
	require.Equal(t, g.Variants[0].SHA256, g.Variants[1].SHA256)
	dir := goldenCheckpoint(t, spec, "phi3-tiny", g.Variants[0].SHA256)
	m, err := Load(dir, WithoutTokenizer())
	require.NoError(t, err)
	c := m.Config()
	require.Equal(t, Phi3, c.Architecture)
	require.Equal(t, 12, c.RotaryDim)
	require.Equal(t, "longrope", c.RopeScaling.Type)
	orig := spec.LongRoPE.OriginalMaxPositionEmbeddings
	for _, v := range g.Variants {
		t.Run(v.Name, func(t *testing.T) {
			require.Greater(t, len(v.PromptIDs)+len(v.Greedy), orig, "generation must pass the original context")
			checkGolden(t, "safetensors", m, v.PromptIDs, v.Positions, v.Logits, v.Greedy)
		})
	}
}

// TestPhi3RefusedWhereNotComputed proves a Phi-3 is refused, not
// miscomputed, where its steps are missing: the GPU backend (on the
// simulated device) names the fused weights, partial rotary and LongRoPE
// in a *BackendError, and a phi3 GGUF is a *ConfigError on
// general.architecture that points to the safetensors checkpoint.
func TestPhi3RefusedWhereNotComputed(t *testing.T) {
	spec := modeltest.Phi3Tiny()
	spec.NoTokenizer = true
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, spec))
	_, err := Load(dir, WithoutTokenizer(), WithDevice(simDevice(t, nil)))
	var be *BackendError
	require.ErrorAs(t, err, &be)
	require.Equal(t, &BackendError{Backend: "gpu", Architecture: Phi3, Missing: []string{
		"Phi-3's fused qkv_proj and gate_up_proj weights",
		"partial rotary embeddings (partial_rotary_factor)",
		"LongRoPE scaling (short and long factors, attention factor)"}}, be)

	path := ggufFromSpec(t, modeltest.Qwen2Tiny(), map[string]any{"general.architecture": "phi3"}, func(ts []gguf.Tensor) []gguf.Tensor { return ts })
	_, err = Load(path, WithoutTokenizer())
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "general.architecture", ce.Field)
	require.Contains(t, err.Error(), "Phi-3 safetensors")
}
