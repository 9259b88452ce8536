package modeltest_test

import (
	"math"
	"testing"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/tokenizer"
	"github.com/stretchr/testify/require"
)

// TestTokenizerIsUsable proves the generated tokenizer.json is a valid
// byte-level BPE with exactly the requested vocabulary: it round-trips
// arbitrary text (ASCII, accents, emoji, control bytes), merges common
// pairs, and ends with the EndOfText special token.
func TestTokenizerIsUsable(t *testing.T) {
	data, err := modeltest.Tokenizer(600)
	require.NoError(t, err)
	tok, err := tokenizer.Parse(data)
	require.NoError(t, err)
	require.Equal(t, 600, tok.VocabSize())
	id, ok := tok.TokenID(modeltest.EndOfText)
	require.True(t, ok)
	require.Equal(t, uint32(599), id)
	for _, s := range []string{"In the beginning God created", "naïve café ☕ 🎉", "tab\tnew\nline\x00"} {
		ids := tok.Encode(s, true)
		require.Equal(t, s, tok.Decode(ids))
	}
	require.Less(t, len(tok.Encode("the the the", false)), len("the the the"), "merges shorten text")

	_, err = modeltest.Tokenizer(257)
	require.Error(t, err)
}

// TestConfigMatchesSpec proves each preset's config.json parses into the
// dimensions, rope settings and biases of its Spec, in both the
// transformers 4 and 5 layouts.
func TestConfigMatchesSpec(t *testing.T) {
	for _, s := range []modeltest.Spec{modeltest.Llama3Tiny(), modeltest.Qwen2Tiny(), modeltest.SmolLMTiny(), modeltest.SmolLM135M()} {
		for _, v := range []int{4, 5} {
			s.ConfigVersion = v
			data, err := modeltest.Config(s)
			require.NoError(t, err)
			c, err := model.ParseConfig("", data)
			require.NoError(t, err)
			require.Equal(t, s.Hidden, c.HiddenSize)
			require.Equal(t, s.Layers, c.NumLayers)
			require.Equal(t, s.KVHeads, c.NumKVHeads)
			require.Equal(t, s.Vocab, c.VocabSize)
			require.Equal(t, s.Tie, c.TieWordEmbeddings)
			require.Equal(t, s.RopeTheta, c.RopeTheta)
			require.Equal(t, s.Llama3 != nil, c.RopeScaling != nil)
			require.Equal(t, s.Arch == "qwen2", c.QKVBias)
		}
	}
}

// TestTensorsAreDeterministic proves a Spec always yields the same weights
// and a different seed different ones, with values already rounded to the
// spec's dtype.
func TestTensorsAreDeterministic(t *testing.T) {
	s := modeltest.SmolLMTiny()
	a, b := modeltest.Tensors(s), modeltest.Tensors(s)
	require.Equal(t, a, b)
	s.Seed++
	require.NotEqual(t, a[0].Values, modeltest.Tensors(s)[0].Values)
	for _, v := range a[0].Values {
		require.Zero(t, math.Float32bits(v)&0xffff, "bf16 spec: low 16 bits are zero")
	}
}
