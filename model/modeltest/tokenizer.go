package modeltest

import (
	"encoding/json"
	"fmt"
)

// EndOfText is the special token at the top of every test vocabulary (the
// config's bos and eos id).
const EndOfText = "<|endoftext|>"

// byteSymbols is GPT-2's byte-to-character table: printable Latin-1 bytes
// stand for themselves and the rest are shifted to U+0100 upwards, so every
// byte has a visible one-character name.
func byteSymbols() [256]string {
	var out [256]string
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			out[b] = string(rune(b))
		} else {
			out[b] = string(rune(256 + n))
			n++
		}
	}
	return out
}

// Tokenizer renders a byte-level BPE tokenizer.json with exactly vocab
// tokens: the 256 bytes (ids 0-255), vocab-257 two-byte merges (letters and
// space first, so English text compresses a little), and EndOfText last.
func Tokenizer(vocab int) ([]byte, error) { return TokenizerWith(vocab, nil) }

// TokenizerWith is Tokenizer with extra special tokens, which take the ids
// just below EndOfText's in order (in place of the last merges).
func TokenizerWith(vocab int, special []string) ([]byte, error) {
	if vocab < 258+len(special) {
		return nil, fmt.Errorf("modeltest: tokenizer needs vocab >= %d, got %d", 258+len(special), vocab)
	}
	sym := byteSymbols()
	vocabMap := map[string]int{}
	for b := range 256 {
		vocabMap[sym[b]] = b
	}
	order := []byte(" etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ0123456789.,;:'\"!?-\n")
	seen := map[byte]bool{}
	for _, b := range order {
		seen[b] = true
	}
	for b := range 256 {
		if !seen[byte(b)] {
			order = append(order, byte(b))
		}
	}
	var merges []string
	id := 256
	for _, a := range order {
		for _, b := range order {
			if id >= vocab-1-len(special) {
				break
			}
			tok := sym[a] + sym[b]
			vocabMap[tok] = id
			merges = append(merges, sym[a]+" "+sym[b])
			id++
		}
	}
	var added []map[string]any
	for i, s := range append(append([]string(nil), special...), EndOfText) {
		tid := vocab - 1 - len(special) + i
		vocabMap[s] = tid
		added = append(added, map[string]any{
			"id": tid, "content": s, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true,
		})
	}
	doc := map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   added,
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocabMap, "merges": merges,
		},
	}
	return json.Marshal(doc)
}
