package model

import (
	"testing"
	"testing/fstest"

	"github.com/hipgo/hipgo/model/modeltest"
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
	m, err := LoadFS(specFS(t, s), append([]Option{WithoutTokenizer()}, opts...)...)
	require.NoError(t, err)
	return m
}
