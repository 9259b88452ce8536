package model

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/stretchr/testify/require"
)

// qwen3Golden is model/testdata/qwen3-tiny-transformers.json: transformers'
// float32 forward over the checkpoints mktestmodel writes (the weights
// modeltest.Qwen3Tiny draws), written by hf_compare.py --preset-golden.
type qwen3Golden struct {
	Reference string `json:"reference"`
	Variants  []struct {
		Name       string      `json:"name"`
		Tie        bool        `json:"tie"`
		SHA256     string      `json:"safetensors_sha256"`
		PromptIDs  []uint32    `json:"prompt_ids"`
		Greedy     []uint32    `json:"greedy"`
		Positions  []int       `json:"positions"`
		Logits     [][]float64 `json:"logits"`
		MinTop2Gap float64     `json:"min_top2_gap"`
	} `json:"variants"`
}

const qwen3GoldenFile = "testdata/qwen3-tiny-transformers.json"

// TestQwen3MatchesTransformers proves the CPU forward pass computes what
// transformers' Qwen3ForCausalLM computes (per-head q/k RMSNorm before
// RoPE, a head_dim of 24 beside hidden/heads = 16, untied and tied heads),
// from the safetensors checkpoint and from the same weights as a GGUF:
// logits at the golden positions within 1e-5 of max|logit|, and 64 greedy
// tokens through the KV cache identical.
func TestQwen3MatchesTransformers(t *testing.T) {
	g := readGolden(t, qwen3GoldenFile, "qwen3")
	require.Len(t, g.Variants, 2)
	for _, v := range g.Variants {
		t.Run(v.Name, func(t *testing.T) {
			spec := modeltest.Qwen3Tiny()
			spec.Tie, spec.NoTokenizer = v.Tie, true
			dir := goldenCheckpoint(t, spec, v.Name, v.SHA256)
			for format, path := range map[string]string{"safetensors": dir, "gguf": ggufFromSpec(t, spec, nil, nil)} {
				m, err := Load(path, WithoutTokenizer())
				require.NoError(t, err, format)
				require.Equal(t, Qwen3, m.Config().Architecture)
				require.True(t, m.Config().QKNorm)
				checkGolden(t, format, m, v.PromptIDs, v.Positions, v.Logits, v.Greedy)
			}
		})
	}
}

// readGolden reads a golden file hf_compare.py --preset-golden --family
// family wrote.
func readGolden(t *testing.T, file, family string) qwen3Golden {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err, "regenerate with hf_compare.py --preset-golden --family %s (see its doc)", family)
	var g qwen3Golden
	require.NoError(t, json.Unmarshal(data, &g))
	return g
}

// goldenCheckpoint writes spec as a safetensors directory, after checking
// that its weights are the ones golden variant name was made from.
func goldenCheckpoint(t *testing.T, spec modeltest.Spec, name, sha string) string {
	t.Helper()
	files, err := modeltest.Safetensors(spec)
	require.NoError(t, err)
	sum := sha256.Sum256(files["model.safetensors"])
	require.Equal(t, sha, hex.EncodeToString(sum[:]),
		"modeltest's %s weights are not the ones the golden file was made from; regenerate it", name)
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, spec))
	return dir
}

// checkGolden compares m's logits of prompt at positions with want (max
// |d| over max |want|, all rows together) and its greedy continuation.
func checkGolden(t *testing.T, format string, m *Model, prompt []uint32, positions []int, want [][]float64, greedy []uint32) {
	t.Helper()
	ctx := context.Background()
	V := m.Config().VocabSize
	s := m.NewSession()
	all, err := s.Forward(ctx, prompt, true)
	require.NoError(t, err)
	var md, mw float64
	for i, p := range positions {
		require.Len(t, want[i], V)
		for j, w := range want[i] {
			md = math.Max(md, math.Abs(float64(all[p*V+j])-w))
			mw = math.Max(mw, math.Abs(w))
		}
	}
	t.Logf("%s: max|d|/max|logit| = %.3g (max|logit| %.2f)", format, md/mw, mw)
	require.LessOrEqual(t, md/mw, 1e-5, "%s: logits against transformers", format)
	last := all[(len(prompt)-1)*V:]
	var got []uint32
	for range greedy {
		id := argmaxF32(last)
		got = append(got, id)
		if last, err = s.Forward(ctx, []uint32{id}, false); err != nil {
			require.NoError(t, err)
		}
	}
	require.Equal(t, greedy, got, "%s: greedy tokens against transformers", format)
}
