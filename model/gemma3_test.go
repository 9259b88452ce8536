package model

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/stretchr/testify/require"
)

const gemma3GoldenFile = "testdata/gemma3-tiny-transformers.json"

// gemma3Presets are the specs of the golden file's variants, by
// mktestmodel preset.
var gemma3Presets = map[string]func() modeltest.Spec{
	"gemma3-tiny":         modeltest.Gemma3Tiny,
	"gemma3-tiny-softcap": modeltest.Gemma3TinySoftcap,
	"gemma3-tiny-scalar":  modeltest.Gemma3TinyScalar,
}

// TestGemma3MatchesTransformers proves the CPU forward pass computes what
// transformers' Gemma3ForCausalLM computes: embeddings scaled by
// sqrt(hidden), (1+w) RMSNorms, four norms a layer, a GeGLU MLP, q/k
// norms, sliding-window layers (window 8 on a 32-token prompt, and 64
// greedy tokens past it, through the KV cache that drops what fell out of
// the window) beside global ones, each with its RoPE base (linear scaling
// on the global ones), tied and untied heads, final logit soft-capping,
// attention biases, and an attention scale other than head_dim's: logits
// at the golden positions within 1e-5 of max|logit| and 64 greedy tokens
// identical, from safetensors and from the same weights as a GGUF (the
// attention scale variant from safetensors only: GGUF has no key for
// query_pre_attn_scalar, and llama.cpp uses head_dim's).
func TestGemma3MatchesTransformers(t *testing.T) {
	data, err := os.ReadFile(gemma3GoldenFile)
	require.NoError(t, err, "regenerate with hf_compare.py --preset-golden --family gemma3 (see its doc)")
	var g qwen3Golden
	require.NoError(t, json.Unmarshal(data, &g))
	require.Len(t, g.Variants, len(gemma3Presets))
	for _, v := range g.Variants {
		t.Run(v.Name, func(t *testing.T) {
			mk, ok := gemma3Presets[v.Name]
			require.True(t, ok, "no spec for %s", v.Name)
			spec := mk()
			spec.NoTokenizer = true
			files, err := modeltest.Safetensors(spec)
			require.NoError(t, err)
			sum := sha256.Sum256(files["model.safetensors"])
			require.Equal(t, v.SHA256, hex.EncodeToString(sum[:]),
				"modeltest's %s weights are not the ones the golden file was made from; regenerate it", v.Name)
			require.Equal(t, spec.Tie, v.Tie)
			require.Greater(t, len(v.PromptIDs), 2*spec.SlidingWindow, "the prompt must outrun the window")
			dir := t.TempDir()
			require.NoError(t, modeltest.Write(dir, spec))
			paths := map[string]string{"safetensors": dir}
			if spec.QueryPreAttnScalar == 0 {
				paths["gguf"] = ggufFromSpec(t, spec, nil, nil)
			}
			for format, path := range paths {
				m, err := Load(path, WithoutTokenizer())
				require.NoError(t, err, format)
				c := m.Config()
				require.Equal(t, Gemma3, c.Architecture)
				require.True(t, c.Gemma && c.QKNorm)
				require.Equal(t, spec.SlidingWindow, c.SlidingWindow)
				require.Contains(t, c.SlidingLayers, true)
				require.Contains(t, c.SlidingLayers, false)
				checkGolden(t, format, m, v.PromptIDs, v.Positions, v.Logits, v.Greedy)
			}
		})
	}
}

// TestSlidingWindowCacheDropsWhatFellOut proves a sliding-window layer's
// CPU cache keeps only the rows its queries can still see, so its memory
// stops growing with the context (at most 2*window+prefillChunk rows) while
// the global layer's keeps every position, and that dropping them changes
// nothing: a 100-token prompt (two prefill chunks) and 700 decode steps
// give the logits, bit for bit, of a sequence whose every layer keeps
// every row.
func TestSlidingWindowCacheDropsWhatFellOut(t *testing.T) {
	spec := modeltest.Gemma3Tiny()
	spec.MaxPos = 1024
	m := loadSpec(t, spec)
	be := m.be.(*cpuBackend)
	ctx := context.Background()
	const total = 800
	slide := be.newSequence(total).(*cpuSequence)
	keep := be.newSequence(total).(*cpuSequence)
	for l := range keep.kv {
		require.Equal(t, be.cfg.window(l), slide.kv[l].window, "layer %d", l)
		keep.kv[l].window = 0
	}
	require.Zero(t, slide.kv[5].window, "layer 5 is global")
	V := spec.Vocab
	a, b := make([]float32, V), make([]float32, V)
	prompt := testTokens(100, V)
	require.NoError(t, slide.forward(ctx, prompt, false, a))
	require.NoError(t, keep.forward(ctx, prompt, false, b))
	require.Equal(t, b, a, "prompt")
	for i := len(prompt); i < total; i++ {
		tok := argmaxF32(a)
		require.NoError(t, slide.forward(ctx, []uint32{tok}, false, a))
		require.NoError(t, keep.forward(ctx, []uint32{tok}, false, b))
		require.Equal(t, b, a, "position %d", i)
	}
	kvD := spec.KVHeads * spec.HeadDim
	for l, kv := range slide.kv {
		rows := len(kv.k) / kvD
		if kv.window > 0 {
			require.LessOrEqual(t, rows, 2*kv.window+prefillChunk, "layer %d", l)
			require.Positive(t, kv.base, "layer %d dropped its oldest rows", l)
		} else {
			require.GreaterOrEqual(t, rows, total, "layer %d", l)
		}
	}
}
