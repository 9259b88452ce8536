package tokenizer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEmptyVocabulary: a tokenizer.json without a single token (empty
// model.vocab, no added tokens) is rejected at load with ErrInvalid naming
// model.vocab, while one whose only tokens are added tokens still loads.
func TestEmptyVocabulary(t *testing.T) {
	const bpe = `"model": {"type": "BPE", "vocab": {}, "merges": []}`
	for name, doc := range map[string]string{
		"no added_tokens":     `{` + bpe + `}`,
		"empty added_tokens":  `{"added_tokens": [], ` + bpe + `}`,
		"only an empty token": `{"added_tokens": [{"id": 0, "content": "", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}], ` + bpe + `}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(doc))
			require.ErrorIs(t, err, ErrInvalid)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, "model.vocab", e.Field)
			require.ErrorContains(t, err, "no tokens")
		})
	}

	t.Run("Load names the file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tokenizer.json")
		require.NoError(t, os.WriteFile(path, []byte(`{`+bpe+`}`), 0o644))
		_, err := Load(path)
		require.ErrorIs(t, err, ErrInvalid)
		require.ErrorContains(t, err, path)
		require.ErrorContains(t, err, "model.vocab")
	})

	t.Run("added tokens alone are a vocabulary", func(t *testing.T) {
		tok, err := Parse([]byte(`{"added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}], ` + bpe + `}`))
		require.NoError(t, err)
		require.Equal(t, 1, tok.VocabSize())
		require.Equal(t, []uint32{0}, tok.Encode("<s>", false))
	})
}
