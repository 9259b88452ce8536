package tokenizer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestByteLevelTableKnownValues checks the byte-to-character table against
// values visible in every GPT-2-family vocabulary: "Ġ" for space, "Ċ" for
// newline, "ĉ" for tab, "Ā" for byte 0 and "Ń" for 0xAD, the last remapped
// byte.
func TestByteLevelTableKnownValues(t *testing.T) {
	require.Equal(t, 'Ġ', byteRune[' '])
	require.Equal(t, 'Ċ', byteRune['\n'])
	require.Equal(t, 'ĉ', byteRune['\t'])
	require.Equal(t, 'Ā', byteRune[0])
	require.Equal(t, 'Ń', byteRune[0xAD])
	require.Equal(t, 'é', byteRune[0xE9])
	for b, c := range gpt2ByteChar() {
		require.Equal(t, c, byteUTF8[b], "byte %#x", b)
		require.Equal(t, int16(b), runeByte[byteRune[b]])
	}
}

// llama3Tiny: the Llama 3 pre-tokenizer and template over a byte vocabulary
// with merges chosen so that a wrong split gives different ids.
func llama3Tiny() fixture {
	return fixture{
		vocab: byteVocab("Ġw", "ĠĠ", "12", "123", "34", "45"), // 256..261
		merges: [][2]string{
			{"Ġ", "Ġ"},  // 0
			{"Ġ", "w"},  // 1
			{"3", "4"},  // 2
			{"1", "2"},  // 3
			{"4", "5"},  // 4
			{"12", "3"}, // 5
		},
		added: []addedFixture{
			{content: "<|begin_of_text|>", special: true, id: 128000}, // gets 262
			{content: "<|eot_id|>", special: true, id: 128009},        // gets 263
		},
		preTokenizer:  sequence("pretokenizers", splitPre(llama3Pattern), byteLevelPre(false, false)),
		postProcessor: bosTemplate("<|begin_of_text|>", 262),
		decoder:       byteLevelDecoder,
	}
}

// TestLlama3StyleHandDerived: "a  w12345" splits into "a" " " " w" "123"
// "45", which encode as a=97, Ġ=32, Ġw=256 (rank 1), 123=259 (1 2 -> 12,
// then 12 3), 45=261. Without the split, "  w" would give ĠĠ w (rank 0 first)
// = 257 119 and "12345" would give 12 34 5 = 258 260 53.
func TestLlama3StyleHandDerived(t *testing.T) {
	tok := llama3Tiny().parse(t)
	require.Equal(t, ids(97, 32, 256, 259, 261), tok.Encode("a  w12345", false))
	require.Equal(t, ids(262, 97, 32, 256, 259, 261), tok.Encode("a  w12345", true), "the template puts BOS first")
	require.Equal(t, ids(262), tok.Encode("", true), "an empty text is just BOS")
	require.Empty(t, tok.Encode("", false))

	// Special tokens written in the text are single tokens, and the template
	// adds BOS even when the text starts with one, as `tokenizers` does.
	require.Equal(t, ids(262, 97, 263), tok.Encode("<|begin_of_text|>a<|eot_id|>", false))
	require.Equal(t, ids(262, 262, 97, 263), tok.Encode("<|begin_of_text|>a<|eot_id|>", true))
	// A partial special token is plain text.
	require.Equal(t, cat(byteIDs("<|eot")), tok.Encode("<|eot", false))
}

// TestAddedTokenIDsFollowTokenizers: when loading, `tokenizers` gives each
// added token its vocabulary id if it has one and otherwise the next id after
// the vocabulary, in file order; the "id" field is not used
// (tokenizer/serialization.rs only warns when it differs).
func TestAddedTokenIDsFollowTokenizers(t *testing.T) {
	f := fixture{
		vocab: byteVocab("hi"), // 256 entries + "hi" = 257
		added: []addedFixture{
			{content: "<a>", special: true, id: 999}, // not in vocab: 257
			{content: "hi", special: true, id: 5},    // in vocab: keeps 256
			{content: "<b>", id: 3},                  // 258
		},
		preTokenizer: byteLevelPre(false, true),
		decoder:      byteLevelDecoder,
	}
	tok := f.parse(t)
	for content, want := range map[string]uint32{"<a>": 257, "hi": 256, "<b>": 258} {
		id, ok := tok.TokenID(content)
		require.True(t, ok)
		require.Equal(t, want, id, content)
	}
	require.Equal(t, 259, tok.VocabSize())
	require.Equal(t, ids(256, 257), tok.SpecialIDs(), "special: <a> and hi, not <b>")
	s, ok := tok.Token(258)
	require.True(t, ok)
	require.Equal(t, "<b>", s)
	_, ok = tok.Token(259)
	require.False(t, ok)
	id, ok := tok.TokenID(bl(" "))
	require.True(t, ok)
	require.Equal(t, uint32(' '), id)
}

// TestAddedTokenFlags checks lstrip, rstrip, single_word and
// leftmost-longest matching, each worked out from find_matches in
// `tokenizers`' added_vocabulary.rs. The vocabulary is bytes only (no
// merges), so text encodes to its bytes after the GPT-2 split.
func TestAddedTokenFlags(t *testing.T) {
	f := fixture{
		vocab: byteVocab(),
		added: []addedFixture{
			{content: "[L]", lstrip: true, special: true}, // 256
			{content: "[R]", rstrip: true, special: true}, // 257
			{content: "ab", singleWord: true},             // 258
			{content: "[N]", special: true},               // 259
			{content: "<a>"},                              // 260
			{content: "<a><b>"},                           // 261
		},
		preTokenizer: byteLevelPre(false, true),
		decoder:      byteLevelDecoder,
	}
	tok := f.parse(t)
	cases := []struct {
		text string
		want []uint32
		why  string
	}{
		{"x [L] y", cat(byteIDs("x"), []int{256}, byteIDs(" y")), "lstrip takes the space before"},
		{"x \t[L]", cat(byteIDs("x"), []int{256}), "lstrip takes all whitespace before"},
		{"x [R] y", cat(byteIDs("x "), []int{257}, byteIDs("y")), "rstrip takes the space after"},
		{"x [N] y", cat(byteIDs("x "), []int{259}, byteIDs(" y")), "no strip"},
		{"ab cd", cat([]int{258}, byteIDs(" cd")), "single_word at a word boundary"},
		{"xab cd", cat(byteIDs("xab cd")), "single_word inside a word is not matched"},
		{"ab_", cat(byteIDs("ab_")), "'_' is a word character"},
		{"(ab)", cat(byteIDs("("), []int{258}, byteIDs(")")), "punctuation is a boundary"},
		{"<a><b>", ids(261), "the longest token at the leftmost position"},
		{"<a><b", cat([]int{260}, byteIDs("<b")), "the shorter one when the longer is incomplete"},
		{"[L][L]", ids(256, 256), "adjacent tokens"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, tok.Encode(c.text, false), "%q: %s", c.text, c.why)
	}
}

// TestNormalizedAddedTokens: a normalized=true token is matched after the
// NFC normalizer runs, a normalized=false one only in the raw text. ǎ is
// U+01CE = a + U+030C, Ǹ is U+01F8 = N + U+0300; neither is a byte-level
// character, so both get new ids.
func TestNormalizedAddedTokens(t *testing.T) {
	f := fixture{
		vocab: byteVocab(),
		added: []addedFixture{
			{content: "ǎ", normalized: true},  // 256
			{content: "Ǹ", normalized: false}, // 257
		},
		normalizer:   map[string]any{"type": "NFC"},
		preTokenizer: byteLevelPre(false, true),
		decoder:      byteLevelDecoder,
	}
	tok := f.parse(t)
	require.Equal(t, ids(256), tok.Encode("a\u030C", false), "decomposed ǎ composes, then matches")
	require.Equal(t, ids(256), tok.Encode("ǎ", false))
	require.Equal(t, ids(257), tok.Encode("Ǹ", false))
	require.Equal(t, ids(0xC7, 0xB8), tok.Encode("N\u0300", false), "decomposed Ǹ only composes after the raw match, so it is bytes C7 B8")
}

// TestAddPrefixSpace: ByteLevel's add_prefix_space applies to every piece of
// text between added tokens (pre_tokenizers/byte_level.rs prepends a space
// to each split that lacks one).
func TestAddPrefixSpace(t *testing.T) {
	f := gpt2Tiny()
	f.preTokenizer = byteLevelPre(true, true)
	f.added = []addedFixture{{content: "<|endoftext|>", special: true}} // 262
	tok := f.parse(t)
	require.Equal(t, ids(258), tok.Encode("the", false))
	require.Equal(t, ids(258), tok.Encode(" the", false), "no second space")
	require.Equal(t, ids(258, 262, 258), tok.Encode("the<|endoftext|>the", false))
}

// TestDecode covers the decoder: byte-level tokens back to text, special
// tokens kept or skipped, unknown ids skipped.
func TestDecode(t *testing.T) {
	tok := llama3Tiny().parse(t)
	text := "<|begin_of_text|>a  w12345 é 😀<|eot_id|>"
	all := tok.Encode(text, false)
	require.Equal(t, text, tok.Decode(all))
	require.Equal(t, "a  w12345 é 😀", tok.DecodeWith(all, DecodeOptions{SkipSpecial: true}))
	require.Equal(t, "ab", tok.Decode(ids(97, 100000, 98)), "an unknown id is skipped")
}

// TestDecodeInvalidUTF8 uses the example of Table 3-8 in the Unicode
// Standard (chapter 3, "U+FFFD Substitution of Maximal Subparts"): bytes
// 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 decode to
// a FFFD FFFD FFFD b FFFD c FFFD FFFD d, which is what Rust's
// from_utf8_lossy (and so `tokenizers`) produces.
func TestDecodeInvalidUTF8(t *testing.T) {
	tok := fixture{vocab: byteVocab(), preTokenizer: byteLevelPre(false, true), decoder: byteLevelDecoder}.parse(t)
	in := []byte{0x61, 0xF1, 0x80, 0x80, 0xE1, 0x80, 0xC2, 0x62, 0x80, 0x63, 0x80, 0xBF, 0x64}
	var idList []uint32
	for _, b := range in {
		idList = append(idList, uint32(b))
	}
	require.Equal(t, "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd", tok.Decode(idList))
	// Surrogates and overlong forms are invalid too: ED A0 80 is three
	// maximal subparts, C0 AF two.
	require.Equal(t, "\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD", tok.Decode(ids(0xED, 0xA0, 0x80, 0xC0, 0xAF)))
}

// TestDecodeWithoutDecoder: with "decoder": null, `tokenizers` joins the
// tokens with spaces.
func TestDecodeWithoutDecoder(t *testing.T) {
	tok := fixture{vocab: map[string]int{"a": 0, "b": 1}}.parse(t)
	require.Equal(t, "a b a", tok.Decode(ids(0, 1, 0)))
	d := tok.NewStreamDecoder()
	require.Equal(t, "a", d.Add(0))
	require.Equal(t, " b", d.Add(1))
}

// TestPieceIsEachTokensOwnBytes: a token's piece is the bytes it decodes
// to alone (part of a UTF-8 character for a split emoji, special tokens
// kept), the pieces of a text's tokens concatenate to its bytes, and an
// unknown id has none.
func TestPieceIsEachTokensOwnBytes(t *testing.T) {
	tok := fixture{vocab: byteVocab(), preTokenizer: byteLevelPre(false, true), decoder: byteLevelDecoder}.parse(t)
	var got []byte
	for _, id := range tok.Encode("a😀", false) {
		p, ok := tok.Piece(id)
		require.True(t, ok)
		require.Len(t, p, 1, "a byte vocabulary's pieces are single bytes")
		got = append(got, p...)
	}
	require.Equal(t, []byte("a😀"), got)
	_, ok := tok.Piece(100000)
	require.False(t, ok, "an unknown id")

	l3 := llama3Tiny().parse(t)
	var joined []byte
	text := "<|begin_of_text|>a  w12345 é"
	for _, id := range l3.Encode(text, false) {
		p, ok := l3.Piece(id)
		require.True(t, ok)
		joined = append(joined, p...)
	}
	require.Equal(t, text, string(joined), "special tokens keep their text")

	plain := fixture{vocab: map[string]int{"a": 0, "bc": 1}}.parse(t)
	p, ok := plain.Piece(1)
	require.True(t, ok)
	require.Equal(t, "bc", string(p), "without a decoder the piece is the token's text")
}

// TestDecodeLiteralAddedToken: an added token with characters outside the
// byte-level table (a literal newline) decodes to its own text.
func TestDecodeLiteralAddedToken(t *testing.T) {
	f := fixture{vocab: byteVocab(), added: []addedFixture{{content: "\n"}}, preTokenizer: byteLevelPre(false, true), decoder: byteLevelDecoder}
	tok := f.parse(t)
	idList := tok.Encode("a\nb", false)
	require.Equal(t, ids('a', 256, 'b'), idList)
	require.Equal(t, "a\nb", tok.Decode(idList))
}

// TestStreamDecoderHoldsSplitCharacters: with a byte vocabulary an emoji is
// four tokens; nothing is returned until the fourth.
func TestStreamDecoderHoldsSplitCharacters(t *testing.T) {
	tok := fixture{vocab: byteVocab(), preTokenizer: byteLevelPre(false, true), decoder: byteLevelDecoder}.parse(t)
	d := tok.NewStreamDecoder()
	var got []string
	for _, id := range tok.Encode("a😀", false) {
		got = append(got, d.Add(id))
	}
	require.Equal(t, []string{"a", "", "", "", "😀"}, got)
	require.Equal(t, "", d.Flush())
	// An incomplete character at the end comes out of Flush as U+FFFD.
	require.Equal(t, "", d.Add(0xF0))
	require.Equal(t, "\uFFFD", d.Flush())
	// A byte that cannot continue the pending one releases both.
	require.Equal(t, "", d.Add(0xE2))
	require.Equal(t, "\uFFFDA", d.Add('A'))
}
