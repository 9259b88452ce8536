package model

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
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
	requireGemmaGolden(t, gemma3GoldenFile, Gemma3, gemma3Presets)
}

// TestGemma2MatchesTransformers proves the same for transformers'
// Gemma2ForCausalLM: Gemma's layout without q/k norms, every other layer
// sliding (window 8 on a 32-token prompt) with one RoPE base, attention
// logit soft-capping (4.5) and final logit soft-capping (6.5), from
// safetensors and GGUF.
func TestGemma2MatchesTransformers(t *testing.T) {
	requireGemmaGolden(t, "testdata/gemma2-tiny-transformers.json", Gemma2,
		map[string]func() modeltest.Spec{"gemma2-tiny": modeltest.Gemma2Tiny})
}

func requireGemmaGolden(t *testing.T, file string, arch Architecture, presets map[string]func() modeltest.Spec) {
	g := readGolden(t, file, string(arch))
	require.Len(t, g.Variants, len(presets))
	for _, v := range g.Variants {
		t.Run(v.Name, func(t *testing.T) {
			mk, ok := presets[v.Name]
			require.True(t, ok, "no spec for %s", v.Name)
			spec := mk()
			spec.NoTokenizer = true
			require.Equal(t, spec.Tie, v.Tie)
			require.Greater(t, len(v.PromptIDs), 2*spec.SlidingWindow, "the prompt must outrun the window")
			dir := goldenCheckpoint(t, spec, v.Name, v.SHA256)
			paths := map[string]string{"safetensors": dir}
			if spec.QueryPreAttnScalar == 0 {
				paths["gguf"] = ggufFromSpec(t, spec, nil, nil)
			}
			for format, path := range paths {
				m, err := Load(path, WithoutTokenizer())
				require.NoError(t, err, format)
				c := m.Config()
				require.Equal(t, arch, c.Architecture)
				require.True(t, c.Gemma)
				require.Equal(t, arch == Gemma3, c.QKNorm)
				require.Equal(t, spec.SlidingWindow, c.SlidingWindow)
				require.Equal(t, spec.AttnSoftcap, c.AttnLogitSoftcap)
				require.Equal(t, spec.FinalSoftcap, c.FinalLogitSoftcap)
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

// TestGemma3ConditionalGenerationLoadsItsTextModel proves a
// Gemma3ForConditionalGeneration checkpoint loads as its text model: the
// config from text_config (eos_token_id from the top level where
// text_config has none), the weights from language_model.model.* (the
// published checkpoints' and transformers 5's save_pretrained names) or
// model.language_model.*, the vision tower and projector left unread,
// giving the logits of the same weights as a Gemma3ForCausalLM bit for bit;
// a tensor outside those is still refused, and text_config must be an
// object.
func TestGemma3ConditionalGenerationLoadsItsTextModel(t *testing.T) {
	spec := modeltest.Gemma3Tiny()
	spec.NoTokenizer = true
	ctx := context.Background()
	prompt := testTokens(32, spec.Vocab)
	logits := func(t *testing.T, path string) ([]float32, Config) {
		m, err := Load(path, WithoutTokenizer())
		require.NoError(t, err)
		defer m.Close()
		out, err := m.NewSession().Forward(ctx, prompt, true)
		require.NoError(t, err)
		return out, m.Config()
	}
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, spec))
	want, textCfg := logits(t, dir)

	textJSON, err := modeltest.Config(spec)
	require.NoError(t, err)
	var tc map[string]any
	require.NoError(t, json.Unmarshal(textJSON, &tc))
	eos := tc["eos_token_id"]
	delete(tc, "architectures")
	delete(tc, "eos_token_id")
	write := func(t *testing.T, prefix string, extra ...string) string {
		cfg, err := json.Marshal(map[string]any{
			"architectures": []string{Gemma3Vision}, "model_type": "gemma3", "eos_token_id": eos,
			"text_config": tc, "vision_config": map[string]any{"model_type": "siglip_vision_model", "hidden_size": 8},
			"mm_tokens_per_image": 4, "image_token_index": spec.Vocab - 2})
		require.NoError(t, err)
		var ts []safetensors.Tensor
		for _, w := range modeltest.Tensors(spec) {
			data, err := safetensors.EncodeFloat32(safetensors.F32, w.Values)
			require.NoError(t, err)
			ts = append(ts, safetensors.Tensor{Name: prefix + strings.TrimPrefix(w.Name, "model."), DType: safetensors.F32, Shape: w.Shape, Data: data})
		}
		for _, n := range append([]string{"vision_tower.vision_model.post_layernorm.weight", "multi_modal_projector.mm_soft_emb_norm.weight"}, extra...) {
			ts = append(ts, safetensors.Tensor{Name: n, DType: safetensors.F32, Shape: []int{2}, Data: make([]byte, 8)})
		}
		var buf bytes.Buffer
		require.NoError(t, safetensors.Write(&buf, ts, nil))
		d := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(d, ConfigFile), cfg, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "model.safetensors"), buf.Bytes(), 0o644))
		return d
	}
	for _, prefix := range []string{"language_model.model.", "model.language_model."} {
		t.Run(prefix, func(t *testing.T) {
			got, c := logits(t, write(t, prefix))
			require.Equal(t, want, got)
			require.True(t, c.VisionSkipped)
			c.VisionSkipped = false
			require.Equal(t, textCfg, c)
		})
	}
	t.Run("unknown tensor", func(t *testing.T) {
		_, err := Load(write(t, "language_model.model.", "audio_tower.weight"), WithoutTokenizer())
		var te *TensorError
		require.ErrorAs(t, err, &te)
		require.Equal(t, "audio_tower.weight", te.Tensor)
	})
	t.Run("text_config", func(t *testing.T) {
		_, err := ParseConfig("", []byte(`{"architectures":["Gemma3ForConditionalGeneration"],"text_config":3}`))
		var ce *ConfigError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "text_config", ce.Field)
		_, err = ParseConfig("", []byte(`{"architectures":["Gemma3ForConditionalGeneration"],"text_config":{"hidden_size":-1}}`))
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "text_config.hidden_size", ce.Field)
	})
}
