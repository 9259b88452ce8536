package model

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/stretchr/testify/require"
)

// specFS renders a random model into an in-memory file system.
func specFS(t testing.TB, s modeltest.Spec) fstest.MapFS {
	t.Helper()
	cfg, err := modeltest.Config(s)
	require.NoError(t, err)
	fsys := fstest.MapFS{ConfigFile: {Data: cfg}}
	files, err := modeltest.Safetensors(s)
	require.NoError(t, err)
	for n, d := range files {
		fsys[n] = &fstest.MapFile{Data: d}
	}
	if !s.NoTokenizer {
		tok, err := modeltest.TokenizerWith(s.Vocab, s.ChatTokens)
		require.NoError(t, err)
		fsys[TokenizerFile] = &fstest.MapFile{Data: tok}
		if s.ChatTemplate != "" {
			tc, err := modeltest.TokenizerConfig(s)
			require.NoError(t, err)
			fsys[TokenizerConfigFile] = &fstest.MapFile{Data: tc}
		}
	}
	return fsys
}

// loadSpec loads a random model without a tokenizer.
func loadSpec(t testing.TB, s modeltest.Spec, opts ...Option) *Model {
	t.Helper()
	return loadFiles(t, specFS(t, s), opts...)
}

// loadFiles loads specFS's files without a tokenizer: a test that loads one
// large spec several times writes its weights once (generating them is
// most of such a test's time under -race).
func loadFiles(t testing.TB, fsys fstest.MapFS, opts ...Option) *Model {
	t.Helper()
	m, err := LoadFS(fsys, append([]Option{WithoutTokenizer()}, opts...)...)
	require.NoError(t, err)
	return m
}

// warpgroupSpec is a one-layer bf16 Llama whose products at 2 to 64 rows
// take every route of the sm_90a module: gate|up (32768 outputs, in
// whole) and down (in 16384 in 16 parts) matmul_wgs_W, q|k|v and o the
// tc_split_x_W + matmul_tcx_W pair (launch.go's wgSplitK).
func warpgroupSpec() modeltest.Spec {
	spec := modeltest.Llama3Tiny()
	spec.Hidden, spec.Heads, spec.KVHeads, spec.Intermediate, spec.Layers, spec.Vocab = 1024, 8, 2, 16384, 1, 512
	spec.DType, spec.Std = safetensors.BF16, 0.02
	return spec
}

// foldSpec: two layers of the Llama-3.2-1B widths where the residual
// products split over in (hidden 2048: 16 tiles of 128 outputs, so 8 parts;
// o's in 2048 in parts of 256, down's 4096 in parts of 512), which
// residualProduct folds into the norm after them; a small intermediate
// and vocab keep the CPU reference quick.
func foldSpec() modeltest.Spec {
	spec := modeltest.Llama3Tiny()
	spec.Hidden, spec.Heads, spec.KVHeads, spec.Intermediate, spec.Layers, spec.Vocab = 2048, 16, 4, 4096, 2, 512
	spec.DType, spec.Std = safetensors.BF16, 0.02
	return spec
}

// promptedSeq is a text prompt and the options it generates with.
type promptedSeq struct {
	prompt string
	o      GenerateOptions
}

// aloneAndBatched generates each of seqs alone (MaxTokens n), then all of
// them stepped together in one Batch at each prefill budget, and returns
// what each generated alone and, per budget, each sequence's batch tokens:
// n of them, or up to and with an end-of-sequence token.
func aloneAndBatched(t *testing.T, m *Model, seqs []promptedSeq, n int, budgets []int) (alone []Result, batched [][][]BatchToken) {
	t.Helper()
	ctx := context.Background()
	prompts := make([][]uint32, len(seqs))
	for i, s := range seqs {
		var err error
		prompts[i], err = m.PromptTokens(s.prompt)
		require.NoError(t, err)
		o := s.o
		o.MaxTokens = n
		res, err := m.GenerateTokens(ctx, prompts[i], o, nil)
		require.NoError(t, err)
		alone = append(alone, res)
	}
	for _, budget := range budgets {
		b := m.NewBatch()
		b.SetPrefillBudget(budget)
		ids := map[SeqID]int{}
		for i, s := range seqs {
			id, err := b.Add(prompts[i], s.o)
			require.NoError(t, err)
			ids[id] = i
		}
		got := make([][]BatchToken, len(seqs))
		for range 400 {
			toks, err := b.Step(ctx)
			require.NoError(t, err)
			for _, tk := range toks {
				i := ids[tk.Seq]
				got[i] = append(got[i], tk)
				if m.IsEOS(tk.ID) || len(got[i]) == n {
					require.NoError(t, b.Remove(tk.Seq))
				}
			}
			if b.Len() == 0 {
				break
			}
		}
		b.Close()
		batched = append(batched, got)
	}
	return alone, batched
}
