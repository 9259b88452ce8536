package tokenizer

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Test fixtures are tokenizer.json files built here, small enough that the
// expected ids can be worked out by hand.

// gpt2ByteChar is GPT-2's bytes_to_unicode, written out again from its
// published definition (not from bytelevel.go): printable bytes
// '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves, and the other
// bytes, in order, for U+0100, U+0101, ...
func gpt2ByteChar() map[byte]string {
	m := map[byte]string{}
	next := rune(0x100)
	for b := 0; b < 256; b++ {
		if (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[byte(b)] = string(rune(b))
		} else {
			m[byte(b)] = string(next)
			next++
		}
	}
	return m
}

// bl writes a string in the byte-level alphabet ("Ġworld" for " world").
func bl(s string) string {
	table := gpt2ByteChar()
	out := ""
	for i := 0; i < len(s); i++ {
		out += table[s[i]]
	}
	return out
}

type addedFixture struct {
	content                                         string
	special, lstrip, rstrip, singleWord, normalized bool
	id                                              int // written to the file; `tokenizers` ignores it
}

// fixture describes a tokenizer.json.
type fixture struct {
	vocab         map[string]int
	merges        [][2]string
	legacyMerges  bool // write merges as "a b" strings
	ignoreMerges  bool
	unk           string
	fuseUnk       bool
	added         []addedFixture
	normalizer    any
	preTokenizer  any
	postProcessor any
	decoder       any
}

// byteVocab is the 256 byte-level characters with id = byte value, plus
// extra tokens numbered from 256 in order.
func byteVocab(extra ...string) map[string]int {
	v := map[string]int{}
	for b, c := range gpt2ByteChar() {
		v[c] = int(b)
	}
	for i, e := range extra {
		v[e] = 256 + i
	}
	return v
}

func (f fixture) json(t testing.TB) []byte {
	t.Helper()
	var merges []any
	for _, m := range f.merges {
		if f.legacyMerges {
			merges = append(merges, m[0]+" "+m[1])
		} else {
			merges = append(merges, []string{m[0], m[1]})
		}
	}
	if merges == nil {
		merges = []any{}
	}
	model := map[string]any{
		"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
		"end_of_word_suffix": nil, "fuse_unk": f.fuseUnk, "byte_fallback": false,
		"ignore_merges": f.ignoreMerges, "vocab": f.vocab, "merges": merges,
	}
	if f.unk != "" {
		model["unk_token"] = f.unk
	}
	added := []any{}
	for _, a := range f.added {
		added = append(added, map[string]any{
			"id": a.id, "content": a.content, "single_word": a.singleWord, "lstrip": a.lstrip,
			"rstrip": a.rstrip, "normalized": a.normalized, "special": a.special,
		})
	}
	doc := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": f.normalizer, "pre_tokenizer": f.preTokenizer,
		"post_processor": f.postProcessor, "decoder": f.decoder, "model": model,
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	return data
}

func (f fixture) parse(t testing.TB) *Tokenizer {
	t.Helper()
	tok, err := Parse(f.json(t))
	require.NoError(t, err)
	return tok
}

// JSON components as `tokenizers` writes them.
func byteLevelPre(addPrefixSpace, useRegex bool) map[string]any {
	return map[string]any{"type": "ByteLevel", "add_prefix_space": addPrefixSpace, "trim_offsets": true, "use_regex": useRegex}
}

func splitPre(regex string) map[string]any {
	return map[string]any{"type": "Split", "pattern": map[string]any{"Regex": regex}, "behavior": "Isolated", "invert": false}
}

func sequence(key string, items ...any) map[string]any {
	return map[string]any{"type": "Sequence", key: items}
}

var byteLevelDecoder = map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}

// bosTemplate is Llama 3's post-processor: ByteLevel, then a template that
// puts the named token first.
func bosTemplate(name string, id int) map[string]any {
	return sequence("processors",
		map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
		map[string]any{
			"type":   "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": name, "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair": []any{map[string]any{"SpecialToken": map[string]any{"id": name, "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": name, "type_id": 1}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{name: map[string]any{"id": name, "ids": []int{id}, "tokens": []string{name}}},
		})
}

// ids is a shorthand for expected id lists.
func ids(v ...int) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = uint32(x)
	}
	return out
}

// byteIDs is the ids of s's bytes in a byteVocab (id = byte value).
func byteIDs(s string) []int {
	out := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int(s[i])
	}
	return out
}

func cat(parts ...[]int) []uint32 {
	var all []int
	for _, p := range parts {
		all = append(all, p...)
	}
	return ids(all...)
}
