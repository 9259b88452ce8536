package tokenizer

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTextBytesAreWhatATokenAddsToTheText: with Llama 2's decoder chain
// (▁ to space, byte fallback, fuse, strip one leading space) a token's
// TextBytes are what it adds to the decoded text after another token: its
// ▁ is a space there, though Decode drops it at the start of a text; a byte
// token is its byte; a special token has none.
func TestTextBytesAreWhatATokenAddsToTheText(t *testing.T) {
	vocab := []string{"<unk>", "<s>", "▁hi", "there", "<0x41>", "▁", "a"}
	v := map[string]int{}
	for i, tok := range vocab {
		v[tok] = i
	}
	doc := map[string]any{
		"version":      "1.0",
		"added_tokens": []any{map[string]any{"id": 1, "content": "<s>", "special": true, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false}},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0}}},
		"model": map[string]any{"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true, "vocab": v, "merges": []any{}},
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	tok, err := Parse(data)
	require.NoError(t, err)
	text := func(id uint32) string {
		b, ok := tok.TextBytes(id)
		require.True(t, ok, id)
		return string(b)
	}
	require.Equal(t, " hi", text(2))
	require.Equal(t, "hi", tok.Decode([]uint32{2}), "Decode drops the leading space of a text")
	require.Equal(t, "there", text(3))
	require.Equal(t, "A", text(4))
	for _, ids := range [][]uint32{{6, 2}, {3, 2, 5, 3}, {6, 4, 2}} {
		want := tok.Decode(ids[:1])
		for _, id := range ids[1:] {
			want += text(id)
		}
		require.Equal(t, tok.Decode(ids), want, "%v", ids)
	}
	_, ok := tok.TextBytes(1)
	require.False(t, ok, "a special token adds no text")
}
