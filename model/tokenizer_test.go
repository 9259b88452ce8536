package model

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/stretchr/testify/require"
)

// TestGenerateWithTokenizer proves the whole text path on a directory with a
// real tokenizer.json: Load, Encode, generation, streaming decode; the
// streamed pieces concatenate to the decoded ids and to Result.Text.
func TestGenerateWithTokenizer(t *testing.T) {
	spec := modeltest.SmolLMTiny()
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, spec))
	m, err := Load(dir)
	require.NoError(t, err)
	tok := m.Tokenizer()
	require.NotNil(t, tok)
	require.Equal(t, spec.Vocab, tok.VocabSize())

	var pieces strings.Builder
	res, err := m.Generate(context.Background(), "In the beginning", GenerateOptions{MaxTokens: 10, Temperature: 1, TopP: 1, Seed: 3},
		func(t Token) error { pieces.WriteString(t.Text); return nil })
	require.NoError(t, err)
	require.Equal(t, len(tok.Encode("In the beginning", true)), res.PromptTokens)
	require.NotEmpty(t, res.Tokens)
	require.Equal(t, res.Text, pieces.String())
	if res.Reason != StopEOS {
		require.Equal(t, tok.Decode(res.Tokens), res.Text)
	}

	// LoadFS reads the same files from an fs.FS.
	m2, err := LoadFS(os.DirFS(dir))
	require.NoError(t, err)
	res2, err := m2.Generate(context.Background(), "In the beginning", GenerateOptions{MaxTokens: 10, Temperature: 1, TopP: 1, Seed: 3}, nil)
	require.NoError(t, err)
	require.Equal(t, res.Tokens, res2.Tokens)
}

// TestBadTokenizer proves an unusable tokenizer.json fails Load with
// ErrTokenizer and the tokenizer package's reason.
func TestBadTokenizer(t *testing.T) {
	spec := modeltest.SmolLMTiny()
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, spec))
	path := filepath.Join(dir, TokenizerFile)
	require.NoError(t, os.WriteFile(path, []byte(`{"model":{"type":"Unigram","vocab":[]}}`), 0o644))
	_, err := Load(dir)
	require.ErrorIs(t, err, ErrTokenizer)
	require.Contains(t, err.Error(), path)

	require.NoError(t, os.Remove(path))
	_, err = Load(dir)
	require.ErrorIs(t, err, ErrTokenizer)
	_, err = LoadFS(os.DirFS(dir))
	require.ErrorIs(t, err, ErrTokenizer)

	m, err := Load(dir, WithoutTokenizer())
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), "x", GenerateOptions{}, nil)
	require.ErrorIs(t, err, ErrNoTokenizer)
}
