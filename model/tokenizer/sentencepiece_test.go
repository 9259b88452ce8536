package tokenizer

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// spmDoc is a tokenizer.json of a SentencePiece-style BPE with byte
// fallback over vocab (ids in order) and no merges, normalizer, or
// decoder beyond ByteFallback and Fuse.
func spmDoc(t testing.TB, vocab ...string) []byte {
	t.Helper()
	v := map[string]int{}
	for i, tok := range vocab {
		v[tok] = i
	}
	doc := map[string]any{
		"version": "1.0", "added_tokens": []any{},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"}}},
		"model":   map[string]any{"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true, "vocab": v, "merges": []any{}},
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	return data
}

// TestScoresMergeHighestFirst: in "abc" the pairs ab and bc compete; the
// token with the higher score merges first, the leftmost on a tie (as in
// llama.cpp's llm_tokenizer_spm).
func TestScoresMergeHighestFirst(t *testing.T) {
	data := spmDoc(t, "<unk>", "a", "b", "c", "ab", "bc")
	for _, c := range []struct {
		name   string
		scores []float32
		want   []uint32
	}{
		{"bc scores higher", []float32{0, 0, 0, 0, -2, -1}, ids(1, 5)},
		{"ab scores higher", []float32{0, 0, 0, 0, -1, -2}, ids(4, 3)},
		{"a tie goes to the left", []float32{0, 0, 0, 0, -1, -1}, ids(4, 3)},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok, err := ParseWithScores(data, c.scores)
			require.NoError(t, err)
			require.Equal(t, c.want, tok.Encode("abc", false))
		})
	}
}

// TestScoresUnknownCharacter: a character outside the vocabulary still
// merges when the pair is a token ("xé" below), and alone it becomes the
// byte tokens of its UTF-8 (é is C3 A9).
func TestScoresUnknownCharacter(t *testing.T) {
	tok, err := ParseWithScores(spmDoc(t, "<unk>", "x", "xé", "<0xC3>", "<0xA9>"), []float32{0, 0, -1, 0, 0})
	require.NoError(t, err)
	require.Equal(t, ids(2), tok.Encode("xé", false))
	require.Equal(t, ids(3, 4, 1), tok.Encode("éx", false))
	require.Equal(t, "éx", tok.Decode(ids(3, 4, 1)))
	_, err = ParseWithScores(spmDoc(t, "<unk>", "x"), []float32{0})
	require.ErrorIs(t, err, ErrInvalid, "fewer scores than tokens")
}

// TestByteFallback: `tokenizers`' BPE with byte_fallback gives a character
// outside the vocabulary its byte tokens when all exist, else the unknown
// token; its ByteFallback decoder turns an invalid byte run into one U+FFFD
// per byte.
func TestByteFallback(t *testing.T) {
	tok, err := Parse(spmDoc(t, "<unk>", "x", "<0xC3>", "<0xA9>", "<0xE4>", "<0xBD>"))
	require.NoError(t, err)
	require.Equal(t, ids(1, 2, 3), tok.Encode("xé", false))
	require.Equal(t, ids(0), tok.Encode("ü", false), "ü is C3 BC, and there is no <0xBC>")
	require.Equal(t, "x\uFFFD\uFFFDx", tok.Decode(ids(1, 4, 5, 1)))
	require.Equal(t, "xé", tok.Decode(ids(1, 2, 3)))
	d := tok.NewStreamDecoder()
	require.Equal(t, "x", d.Add(1))
	require.Empty(t, d.Add(2), "a byte run is held until it ends")
	require.Empty(t, d.Add(3))
	require.Equal(t, "éx", d.Add(1))
}

// TestByteTokenSpelling follows Rust's u8::from_str_radix, which takes a
// leading '+'.
func TestByteTokenSpelling(t *testing.T) {
	for tok, want := range map[string]int{"<0x41>": 0x41, "<0xff>": 0xFF, "<0x+A>": 0x0A, "<0xG1>": -1, "<0x4>": -1, "<0x411>": -1} {
		b, ok := byteToken(tok)
		if want < 0 {
			require.False(t, ok, tok)
			continue
		}
		require.True(t, ok, tok)
		require.Equal(t, byte(want), b, tok)
	}
}

// TestMetaspace: spaces become ▁, "first" prepends only at the start of the
// text (not after an added token), and split cuts before each ▁.
func TestMetaspace(t *testing.T) {
	pieces := func(m *metaspaceStep, s string, atStart bool) []string { return m.split(nil, s, atStart) }
	require.Equal(t, []string{"▁a", "▁b"}, pieces(&metaspaceStep{replacement: "▁", scheme: prependFirst, splitPieces: true}, "a b", true))
	require.Equal(t, []string{"a", "▁b"}, pieces(&metaspaceStep{replacement: "▁", scheme: prependFirst, splitPieces: true}, "a b", false))
	require.Equal(t, []string{"▁a", "▁", "▁b"}, pieces(&metaspaceStep{replacement: "▁", scheme: prependAlways, splitPieces: true}, "a  b", false))
	require.Equal(t, []string{"a▁▁b▁"}, pieces(&metaspaceStep{replacement: "▁", scheme: prependNever}, "a  b ", true))
}
