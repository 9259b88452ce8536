package model

import (
	"context"
	"testing"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/stretchr/testify/require"
)

func testTokens(n, vocab int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32((i*131 + 7) % vocab)
	}
	return out
}

// forwardSpecs cover each supported layout: Llama 3 GQA with llama3 rope
// scaling (positions reach past original_max_position_embeddings), Qwen2
// q/k/v biases, a tied bf16 SmolLM-style model, Llama attention/MLP biases
// with an explicit head_dim, a transformers-5 config, a sharded f16 file,
// and Qwen3's q/k norms with a head_dim other than hidden/heads (untied f32;
// tied bf16 with attention biases).
func forwardSpecs() map[string]modeltest.Spec {
	biased := modeltest.Llama3Tiny()
	biased.Llama3, biased.AttnBias, biased.MLPBias, biased.HeadDim, biased.Seed = nil, true, true, 8, 9
	v5 := modeltest.Llama3Tiny()
	v5.ConfigVersion, v5.Seed = 5, 10
	sharded := modeltest.Qwen2Tiny()
	sharded.DType, sharded.ShardTensors, sharded.Seed = safetensors.F16, 7, 11
	qwen3Tied := modeltest.Qwen3Tiny()
	qwen3Tied.Tie, qwen3Tied.DType, qwen3Tied.AttnBias, qwen3Tied.Seed = true, safetensors.BF16, true, 12
	return map[string]modeltest.Spec{
		"llama3-gqa-rope-scaling": modeltest.Llama3Tiny(),
		"qwen2-qkv-bias":          modeltest.Qwen2Tiny(),
		"smollm-tied-bf16":        modeltest.SmolLMTiny(),
		"llama-biases-head-dim":   biased,
		"transformers5-config":    v5,
		"sharded-f16":             sharded,
		"qwen3-qk-norm-head-dim":  modeltest.Qwen3Tiny(),
		"qwen3-tied-bf16-bias":    qwen3Tied,
	}
}

// TestForwardMatchesReference proves the float32 forward pass agrees with the
// independent float64 reference to 1e-4 relative (max |diff| over max |logit|)
// both when the prompt is processed at once (prefill, crossing the 64-token
// chunk boundary) and token by token through the KV cache.
func TestForwardMatchesReference(t *testing.T) {
	for name, spec := range forwardSpecs() {
		t.Run(name, func(t *testing.T) {
			T := 70
			if spec.Llama3 != nil {
				// Past original_max_position_embeddings (64), where llama3 scaling changes angles.
				T = 80
			}
			tokens := testTokens(T, spec.Vocab)
			want := newRef(spec).logits(tokens)
			for _, format := range []WeightFormat{WeightsAuto, WeightsF32} {
				m := loadSpec(t, spec, WithWeightFormat(format))
				V := m.Config().VocabSize

				all, err := m.NewSession().Forward(context.Background(), tokens, true)
				require.NoError(t, err)
				for i := range T {
					require.LessOrEqual(t, relDiff(t, all[i*V:(i+1)*V], want[i]), 1e-4, "prefill position %d", i)
				}

				s := m.NewSession()
				for i, id := range tokens {
					got, err := s.Forward(context.Background(), []uint32{id}, false)
					require.NoError(t, err)
					require.LessOrEqual(t, relDiff(t, got, want[i]), 1e-4, "decode position %d", i)
				}
				require.Equal(t, T, s.Len())

				// Mixed: a prefill then decode steps continue the same cache.
				s = m.NewSession()
				last, err := s.Forward(context.Background(), tokens[:T-3], false)
				require.NoError(t, err)
				require.LessOrEqual(t, relDiff(t, last, want[T-4]), 1e-4)
				for i := T - 3; i < T; i++ {
					got, err := s.Forward(context.Background(), tokens[i:i+1], false)
					require.NoError(t, err)
					require.LessOrEqual(t, relDiff(t, got, want[i]), 1e-4, "decode after prefill, position %d", i)
				}
			}
		})
	}
}

// TestReferenceIsSensitive guards the comparison above: a model whose weights
// differ in one layer norm must not agree with the reference.
func TestReferenceIsSensitive(t *testing.T) {
	spec := modeltest.Qwen2Tiny()
	tokens := testTokens(8, spec.Vocab)
	other := spec
	other.Seed++
	want := newRef(other).logits(tokens)
	m := loadSpec(t, spec)
	got, err := m.NewSession().Forward(context.Background(), tokens, false)
	require.NoError(t, err)
	require.Greater(t, relDiff(t, got, want[len(tokens)-1]), 1e-2)
}
