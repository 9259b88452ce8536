package model

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/stretchr/testify/require"
)

// writeCheckpoint writes spec's config and weights to a directory after
// letting mutate change the tensor list.
func writeCheckpoint(t *testing.T, spec modeltest.Spec, mutate func([]safetensors.Tensor) []safetensors.Tensor) string {
	t.Helper()
	dir := t.TempDir()
	cfg, err := modeltest.Config(spec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), cfg, 0o644))
	var ts []safetensors.Tensor
	for _, tt := range modeltest.Tensors(spec) {
		b, err := safetensors.EncodeFloat32(spec.DType, tt.Values)
		require.NoError(t, err)
		ts = append(ts, safetensors.Tensor{Name: tt.Name, DType: spec.DType, Shape: tt.Shape, Data: b})
	}
	if mutate != nil {
		ts = mutate(ts)
	}
	var buf bytes.Buffer
	require.NoError(t, safetensors.Write(&buf, ts, nil))
	require.NoError(t, os.WriteFile(filepath.Join(dir, safetensors.SingleFile), buf.Bytes(), 0o644))
	return dir
}

func drop(name string) func([]safetensors.Tensor) []safetensors.Tensor {
	return func(ts []safetensors.Tensor) []safetensors.Tensor {
		out := ts[:0]
		for _, t := range ts {
			if t.Name != name {
				out = append(out, t)
			}
		}
		return out
	}
}

// TestLoadDirectory proves Load reads a checkpoint directory (single file and
// sharded) into a model that computes the reference logits.
func TestLoadDirectory(t *testing.T) {
	for _, shard := range []int{0, 5} {
		spec := modeltest.SmolLMTiny()
		spec.ShardTensors, spec.NoTokenizer = shard, true
		dir := t.TempDir()
		require.NoError(t, modeltest.Write(dir, spec))
		var calls int
		var last, total int64
		m, err := Load(dir, WithoutTokenizer(), WithProgress(func(d, tot int64) { calls++; last, total = d, tot }))
		require.NoError(t, err)
		require.Positive(t, calls)
		require.Equal(t, total, last, "progress ends at the total")
		require.Positive(t, m.WeightBytes())
		tokens := testTokens(5, spec.Vocab)
		got, err := m.NewSession().Forward(context.Background(), tokens, false)
		require.NoError(t, err)
		require.LessOrEqual(t, relDiff(t, got, newRef(spec).logits(tokens)[4]), 1e-4)
	}
}

// TestLoadOfACheckpointFileNamesTheDirectory proves Load given one file of
// a Hugging Face checkpoint (its weights, a shard, its config or
// tokenizer) says to pass the directory that holds it, instead of failing
// to read it as a GGUF file.
func TestLoadOfACheckpointFileNamesTheDirectory(t *testing.T) {
	spec := modeltest.SmolLMTiny()
	spec.ShardTensors = 5
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, spec))
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	require.Greater(t, len(names), 3)
	for _, name := range names {
		_, err := Load(name)
		var ce *ConfigError
		require.ErrorAs(t, err, &ce, name)
		require.Equal(t, name, ce.File)
		require.ErrorContains(t, err, "pass the directory that holds it, "+dir, name)
	}
}

// TestBadCheckpoints proves each broken checkpoint fails to load with an
// error that names the file and the tensor (and shapes where they differ),
// wrapped so errors.Is finds its kind — and never panics.
func TestBadCheckpoints(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	spec.NoTokenizer = true
	weights := filepath.Join("<dir>", safetensors.SingleFile)
	cases := []struct {
		name   string
		mutate func([]safetensors.Tensor) []safetensors.Tensor
		kind   error
		want   []string
	}{
		{"missing tensor", drop("model.layers.1.mlp.up_proj.weight"), ErrWeights,
			[]string{weights, `"model.layers.1.mlp.up_proj.weight"`, "missing", "[96 64]"}},
		{"missing untied head", drop("lm_head.weight"), ErrWeights, []string{`"lm_head.weight"`, "missing"}},
		{"shape mismatch", func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i := range ts {
				if ts[i].Name == "model.layers.0.self_attn.k_proj.weight" {
					ts[i].Shape = []int{64, 32} // config: 2 kv heads * 16 = 32 rows of 64
				}
			}
			return ts
		}, ErrWeights, []string{weights, `"model.layers.0.self_attn.k_proj.weight"`, "want shape [32 64], got [64 32]"}},
		{"wrong dtype", func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i := range ts {
				if ts[i].Name == "model.norm.weight" {
					ts[i].DType = safetensors.I32
				}
			}
			return ts
		}, ErrWeights, []string{weights, `"model.norm.weight"`, "dtype I32"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCheckpoint(t, spec, tc.mutate)
			_, err := Load(dir, WithoutTokenizer())
			require.ErrorIs(t, err, tc.kind)
			var te *TensorError
			require.ErrorAs(t, err, &te)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), filepath.ToSlash(replaceDir(w, dir)))
			}
		})
	}

	t.Run("truncated file", func(t *testing.T) {
		dir := writeCheckpoint(t, spec, nil)
		path := filepath.Join(dir, safetensors.SingleFile)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, data[:len(data)-100], 0o644))
		_, err = Load(dir, WithoutTokenizer())
		require.ErrorIs(t, err, safetensors.ErrTruncated)
		require.Contains(t, err.Error(), path)
		require.Contains(t, err.Error(), `"model.norm.weight"`) // the last tensor by name, whose bytes were cut
	})
	t.Run("no weights", func(t *testing.T) {
		dir := writeCheckpoint(t, spec, nil)
		require.NoError(t, os.Remove(filepath.Join(dir, safetensors.SingleFile)))
		_, err := Load(dir, WithoutTokenizer())
		require.ErrorIs(t, err, safetensors.ErrIO)
		require.Contains(t, err.Error(), safetensors.SingleFile)
	})
	t.Run("no config", func(t *testing.T) {
		_, err := Load(t.TempDir())
		require.ErrorIs(t, err, ErrConfig)
		require.Contains(t, err.Error(), ConfigFile)
	})
	t.Run("no such path", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "llama")
		_, err := Load(missing)
		require.ErrorIs(t, err, ErrConfig)
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.Equal(t, "model: "+missing+": no model directory or GGUF file: stat "+missing+": no such file or directory", err.Error())
	})
	t.Run("config disagrees with weights", func(t *testing.T) {
		other := spec
		other.Intermediate = 80
		dir := writeCheckpoint(t, other, nil)
		cfg, err := modeltest.Config(spec) // intermediate 96
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigFile), cfg, 0o644))
		_, err = Load(dir, WithoutTokenizer())
		require.ErrorIs(t, err, ErrWeights)
		require.Contains(t, err.Error(), `"model.layers.0.mlp.gate_proj.weight"`)
		require.Contains(t, err.Error(), "want shape [96 64], got [80 64]")
	})
	t.Run("bad options", func(t *testing.T) {
		dir := writeCheckpoint(t, spec, nil)
		_, err := Load(dir, WithoutTokenizer(), WithContextLength(-1))
		require.ErrorIs(t, err, ErrOptions)
		_, err = Load(dir, WithoutTokenizer(), WithWeightFormat(7))
		require.ErrorIs(t, err, ErrOptions)
	})
}

func replaceDir(s, dir string) string {
	return string(bytes.ReplaceAll([]byte(s), []byte("<dir>"), []byte(dir)))
}

// TestSessionLimits proves a sequence longer than the context, or a token
// outside the vocabulary, is refused before any work, leaving the session
// usable.
func TestSessionLimits(t *testing.T) {
	spec := modeltest.Qwen2Tiny()
	m := loadSpec(t, spec, WithContextLength(10))
	require.Equal(t, 10, m.ContextLength())
	s := m.NewSession()
	_, err := s.Forward(context.Background(), testTokens(11, spec.Vocab), false)
	require.ErrorIs(t, err, ErrContextLength)
	var ce *ContextError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 11, ce.Tokens)
	require.Equal(t, 10, ce.Context)
	require.Zero(t, s.Len())

	_, err = s.Forward(context.Background(), []uint32{uint32(spec.Vocab)}, false)
	require.ErrorIs(t, err, ErrTokenID)
	_, err = s.Forward(context.Background(), nil, false)
	require.ErrorIs(t, err, ErrOptions)

	_, err = s.Forward(context.Background(), testTokens(10, spec.Vocab), false)
	require.NoError(t, err)
	_, err = s.Forward(context.Background(), []uint32{1}, false)
	require.ErrorIs(t, err, ErrContextLength)
}
