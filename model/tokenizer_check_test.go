package model

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/tokenizer"
	"github.com/stretchr/testify/require"
)

// emptyTokenizerJSON is a tokenizer.json without a single token.
const emptyTokenizerJSON = `{"version": "1.0", "added_tokens": [], "model": {"type": "BPE", "vocab": {}, "merges": []}}`

// checkpointWithTokenizer writes spec's checkpoint with tok as its
// tokenizer.json.
func checkpointWithTokenizer(t *testing.T, spec modeltest.Spec, tok []byte) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, spec))
	require.NoError(t, os.WriteFile(filepath.Join(dir, TokenizerFile), tok, 0o644))
	return dir
}

// TestLoadRejectsTokenizerBeyondVocabSize proves a checkpoint whose
// tokenizer has ids at or above config.json's vocab_size (ids the
// embedding has no row for) fails to load with ErrTokenizer, naming both
// numbers and both files, from a directory and through LoadFS; and that a
// tokenizer smaller than vocab_size (a padded embedding) still loads.
func TestLoadRejectsTokenizerBeyondVocabSize(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	V := spec.Vocab
	for _, n := range []int{V + 1, V + 3} { // ids up to V: one past the last row
		t.Run(fmt.Sprintf("%d tokens", n), func(t *testing.T) {
			tok, err := modeltest.Tokenizer(n)
			require.NoError(t, err)
			want := fmt.Sprintf("has ids up to %d but ", n-1)
			size := fmt.Sprintf("vocab_size is %d", V)

			dir := checkpointWithTokenizer(t, spec, tok)
			_, err = Load(dir)
			require.ErrorIs(t, err, ErrTokenizer)
			require.ErrorContains(t, err, filepath.Join(dir, TokenizerFile)+" "+want+filepath.Join(dir, ConfigFile)+"'s "+size)

			fsys := specFS(t, spec)
			fsys[TokenizerFile] = &fstest.MapFile{Data: tok}
			_, err = LoadFS(fsys)
			require.ErrorIs(t, err, ErrTokenizer)
			require.ErrorContains(t, err, "tokenizer.json "+want+"config.json's "+size)
		})
	}

	t.Run("smaller tokenizer loads", func(t *testing.T) {
		tok, err := modeltest.Tokenizer(V - 20)
		require.NoError(t, err)
		m, err := Load(checkpointWithTokenizer(t, spec, tok))
		require.NoError(t, err)
		require.Equal(t, V-20, m.Tokenizer().VocabSize())
		require.Equal(t, V, m.Config().VocabSize)
	})
	t.Run("equal sizes load", func(t *testing.T) {
		m, err := LoadFS(specFS(t, spec))
		require.NoError(t, err)
		require.Equal(t, V, m.Tokenizer().VocabSize())
	})
	t.Run("without tokenizer it is not read", func(t *testing.T) {
		tok, err := modeltest.Tokenizer(V + 3)
		require.NoError(t, err)
		_, err = Load(checkpointWithTokenizer(t, spec, tok), WithoutTokenizer())
		require.NoError(t, err)
	})
}

// TestLoadRejectsEmptyTokenizer proves a tokenizer.json with no tokens at
// all fails to load, with ErrTokenizer and the tokenizer package's
// ErrInvalid, rather than loading a model that can encode nothing.
func TestLoadRejectsEmptyTokenizer(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	dir := checkpointWithTokenizer(t, spec, []byte(emptyTokenizerJSON))
	_, err := Load(dir)
	require.ErrorIs(t, err, ErrTokenizer)
	require.ErrorIs(t, err, tokenizer.ErrInvalid)
	require.ErrorContains(t, err, filepath.Join(dir, TokenizerFile))
	require.ErrorContains(t, err, "model.vocab")

	fsys := specFS(t, spec)
	fsys[TokenizerFile] = &fstest.MapFile{Data: []byte(emptyTokenizerJSON)}
	_, err = LoadFS(fsys)
	require.ErrorIs(t, err, ErrTokenizer)
	require.ErrorIs(t, err, tokenizer.ErrInvalid)
}

// TestLoadGGUFRejectsTokenizerBeyondVocabSize: a GGUF whose
// tokenizer.ggml.tokens outnumber its explicit {arch}.vocab_size is refused
// the same way; fewer tokens load.
func TestLoadGGUFRejectsTokenizerBeyondVocabSize(t *testing.T) {
	spec := modeltest.Qwen2Tiny()
	V := spec.Vocab
	ggufTokens := func(n int) map[string]any {
		tokens := []string{"a", "b", "ab"}
		for i := len(tokens); i < n; i++ {
			tokens = append(tokens, fmt.Sprintf("t%d", i))
		}
		return map[string]any{"qwen2.vocab_size": uint32(V), "tokenizer.ggml.model": "gpt2",
			"tokenizer.ggml.tokens": tokens, "tokenizer.ggml.merges": []string{"a b"}}
	}
	path := ggufFromSpec(t, spec, ggufTokens(V+2), nil)
	_, err := Load(path)
	require.ErrorIs(t, err, ErrTokenizer)
	require.ErrorContains(t, err, fmt.Sprintf("%s: tokenizer.ggml.tokens has ids up to %d but qwen2.vocab_size is %d", path, V+1, V))

	m, err := Load(ggufFromSpec(t, spec, ggufTokens(V-10), nil))
	require.NoError(t, err)
	require.Equal(t, V-10, m.Tokenizer().VocabSize())
}
