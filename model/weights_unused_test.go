package model

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/stretchr/testify/require"
)

// TestCheckpointTensorsTheConfigDoesNotUse proves a checkpoint holding
// tensors the config does not call for (a third layer under a two-layer
// config, biases the config does not declare) fails to load with an
// ErrWeights *TensorError naming them, while the known harmless extras (a
// tied lm_head.weight, rotary inv_freq caches) still load.
func TestCheckpointTensorsTheConfigDoesNotUse(t *testing.T) {
	spec := modeltest.Llama3Tiny() // 2 layers, untied, f32
	spec.NoTokenizer = true

	t.Run("extra layer", func(t *testing.T) {
		three := spec
		three.Layers = 3
		dir := writeCheckpoint(t, three, nil)
		cfg, err := modeltest.Config(spec)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), cfg, 0o644))
		_, err = Load(dir, WithoutTokenizer())
		require.Error(t, err)
		require.ErrorIs(t, err, ErrWeights)
		var te *TensorError
		require.ErrorAs(t, err, &te)
		require.Contains(t, err.Error(), filepath.Join(dir, safetensors.SingleFile))
		// Sorted by name the first is input_layernorm; 9 tensors in all.
		require.Contains(t, err.Error(), `"model.layers.2.input_layernorm.weight"`)
		require.Contains(t, err.Error(), "config.json's 2 layers")
		require.Contains(t, err.Error(), "and 5 more")
		t.Log(err)
	})
	t.Run("undeclared biases", func(t *testing.T) {
		biased := spec
		biased.AttnBias = true
		dir := writeCheckpoint(t, biased, nil)
		cfg, err := modeltest.Config(spec) // attention_bias false
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), cfg, 0o644))
		_, err = Load(dir, WithoutTokenizer())
		require.ErrorIs(t, err, ErrWeights)
		require.Contains(t, err.Error(), `"model.layers.0.self_attn.k_proj.bias"`)
		require.Contains(t, err.Error(), "not used by config.json")
	})
	t.Run("from an fs.FS too", func(t *testing.T) {
		three := spec
		three.Layers = 3
		fsys := specFS(t, three)
		cfg, err := modeltest.Config(spec)
		require.NoError(t, err)
		fsys[ConfigFile].Data = cfg
		_, err = LoadFS(fsys, WithoutTokenizer())
		require.ErrorIs(t, err, ErrWeights)
		require.Contains(t, err.Error(), `"model.layers.2.`)
		// The device loader (here the simulated GPU) refuses it the same way.
		_, err = LoadFS(fsys, WithoutTokenizer(), WithDevice(simDevice(t, nil)))
		require.ErrorIs(t, err, ErrWeights)
		require.Contains(t, err.Error(), `"model.layers.2.`)
	})

	// The extras transformers itself ignores still load, and the model
	// computes the reference logits.
	tied := modeltest.SmolLMTiny()
	tied.NoTokenizer = true
	harmless := func(ts []safetensors.Tensor) []safetensors.Tensor {
		for _, x := range ts {
			if x.Name == "model.embed_tokens.weight" {
				ts = append(ts, safetensors.Tensor{Name: "lm_head.weight", DType: x.DType, Shape: x.Shape, Data: x.Data})
			}
		}
		inv, err := safetensors.EncodeFloat32(safetensors.F32, make([]float32, 8))
		require.NoError(t, err)
		for _, n := range []string{"model.layers.0.self_attn.rotary_emb.inv_freq", "model.rotary_emb.inv_freq"} {
			ts = append(ts, safetensors.Tensor{Name: n, DType: safetensors.F32, Shape: []int{8}, Data: inv})
		}
		return ts
	}
	dir := writeCheckpoint(t, tied, harmless)
	var last, total int64
	m, err := Load(dir, WithoutTokenizer(), WithProgress(func(d, tot int64) { last, total = d, tot }))
	require.NoError(t, err, "a tied lm_head.weight and rotary caches load")
	require.Equal(t, total, last, "progress ends at the total")
	tokens := testTokens(4, tied.Vocab)
	got, err := m.NewSession().Forward(context.Background(), tokens, false)
	require.NoError(t, err)
	require.LessOrEqual(t, relDiff(t, got, newRef(tied).logits(tokens)[3]), 1e-4)
}
