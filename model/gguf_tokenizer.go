package model

import (
	"encoding/json"
	"fmt"

	"github.com/hipgo/hipgo/model/gguf"
	"github.com/hipgo/hipgo/model/tokenizer"
)

// GGUF token types (llama.cpp's llama_token_type).
const (
	ggufTokenControl     = 3
	ggufTokenUserDefined = 4
)

// ggufPreTokenizers maps tokenizer.ggml.pre (llama.cpp's name for a
// model's pre-tokenizer) to the tokenizer.json pre_tokenizer the model was
// trained with; the regexes are llama.cpp's for the same name.
var ggufPreTokenizers = map[string]any{
	"default": byteLevel(true),
	"gpt2":    byteLevel(true),
	// llama.cpp splits digits one by one, then applies GPT-2's regex: the
	// tokenizers library's Digits(individual_digits) + ByteLevel.
	"smollm":    preSequence(map[string]any{"type": "Digits", "individual_digits": true}, byteLevel(true)),
	"starcoder": preSequence(map[string]any{"type": "Digits", "individual_digits": true}, byteLevel(true)),
	"refact":    preSequence(map[string]any{"type": "Digits", "individual_digits": true}, byteLevel(true)),
	"llama-bpe": preSequence(split(`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`), byteLevel(false)),
	"qwen2":     preSequence(split(`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`), byteLevel(false)),
}

// ggufNFC lists the pre-tokenizers whose Hugging Face tokenizer normalizes
// to NFC first (Qwen2's does; transformers' GGUF loader adds it too, while
// llama.cpp does not normalize: we follow the tokenizer the model was
// trained with).
var ggufNFC = map[string]bool{"qwen2": true}

func byteLevel(regex bool) map[string]any {
	return map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": regex}
}

func split(re string) map[string]any {
	return map[string]any{"type": "Split", "pattern": map[string]any{"Regex": re}, "behavior": "Isolated", "invert": false}
}

func preSequence(steps ...any) map[string]any {
	return map[string]any{"type": "Sequence", "pretokenizers": steps}
}

// tokenizerFromGGUF builds the tokenizer a GGUF file describes in
// tokenizer.ggml.*: a GPT-2-style byte-level BPE (tokenizer.ggml.model
// "gpt2") with its merges, pre-tokenizer (tokenizer.ggml.pre), control and
// user-defined tokens as added tokens, and the BOS token prepended when
// tokenizer.ggml.add_bos_token says so. It is written as the tokenizer.json
// the file was converted from and parsed by package tokenizer, so one
// implementation serves both formats.
func tokenizerFromGGUF(f *gguf.File) (*tokenizer.Tokenizer, error) {
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("model: %s: %s: %w: %s", f.Name(), field, ErrTokenizer, fmt.Sprintf(format, args...))
	}
	kind, err := f.String("tokenizer.ggml.model")
	if err != nil {
		return nil, fmt.Errorf("model: %w: %w", ErrTokenizer, err)
	}
	if kind != "gpt2" {
		return nil, fail("tokenizer.ggml.model", "%q is not supported (want gpt2, a byte-level BPE)", kind)
	}
	pre := "default"
	if v, ok := f.Lookup("tokenizer.ggml.pre"); ok {
		pre = v.String()
	}
	preTok, ok := ggufPreTokenizers[pre]
	if !ok {
		return nil, fail("tokenizer.ggml.pre", "pre-tokenizer %q is not supported", pre)
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, fmt.Errorf("model: %w: %w", ErrTokenizer, err)
	}
	merges, err := f.Strings("tokenizer.ggml.merges")
	if err != nil {
		return nil, fmt.Errorf("model: %w: %w", ErrTokenizer, err)
	}
	var types []int64
	if _, ok := f.Lookup("tokenizer.ggml.token_type"); ok {
		if types, err = f.Ints("tokenizer.ggml.token_type"); err != nil {
			return nil, fmt.Errorf("model: %w: %w", ErrTokenizer, err)
		}
		if len(types) != len(tokens) {
			return nil, fail("tokenizer.ggml.token_type", "%d types for %d tokens", len(types), len(tokens))
		}
	}
	vocab := make(map[string]int, len(tokens))
	var added []map[string]any
	for id, tok := range tokens {
		if _, dup := vocab[tok]; !dup {
			vocab[tok] = id
		}
		if types == nil {
			continue
		}
		switch types[id] {
		case ggufTokenControl, ggufTokenUserDefined:
			added = append(added, map[string]any{"id": id, "content": tok, "single_word": false, "lstrip": false,
				"rstrip": false, "normalized": false, "special": types[id] == ggufTokenControl})
		}
	}
	js := map[string]any{
		"version":       "1.0",
		"added_tokens":  added,
		"normalizer":    nil,
		"pre_tokenizer": preTok,
		"decoder":       map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "fuse_unk": false, "byte_fallback": false,
			"ignore_merges": false, "vocab": vocab, "merges": merges},
	}
	if ggufNFC[pre] {
		js["normalizer"] = map[string]any{"type": "NFC"}
	}
	if addBOS, err := f.Bool("tokenizer.ggml.add_bos_token"); err == nil && addBOS {
		bos, err := f.Int("tokenizer.ggml.bos_token_id", len(tokens)-1)
		if err != nil {
			return nil, fmt.Errorf("model: %w: %w", ErrTokenizer, err)
		}
		js["post_processor"] = map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": tokens[bos], "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"special_tokens": map[string]any{tokens[bos]: map[string]any{"id": tokens[bos], "ids": []int{bos}, "tokens": []string{tokens[bos]}}}}
	}
	data, err := json.Marshal(js)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w: %w", f.Name(), ErrTokenizer, err)
	}
	t, err := tokenizer.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("model: %s: tokenizer.ggml.*: %w: %w", f.Name(), ErrTokenizer, err)
	}
	return t, nil
}
