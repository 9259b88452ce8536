package model

import (
	"encoding/json"
	"fmt"

	"github.com/hipgo/hipgo/model/gguf"
	"github.com/hipgo/hipgo/model/tokenizer"
)

// GGUF token types (llama.cpp's llama_token_type).
const (
	ggufTokenUnknown     = 2
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
// "gpt2") with its merges and pre-tokenizer (tokenizer.ggml.pre), or a
// SentencePiece BPE (tokenizer.ggml.model "llama": Llama 2, Mistral, Gemma)
// with its scores and <0xNN> byte tokens; control, unknown and user-defined
// tokens as added tokens, and BOS and EOS added as
// tokenizer.ggml.add_bos_token and add_eos_token say. It is written as the
// tokenizer.json the file was converted from and parsed by package
// tokenizer, so one implementation serves both formats.
func tokenizerFromGGUF(f *gguf.File) (*tokenizer.Tokenizer, error) {
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("model: %s: %s: %w: %s", f.Name(), field, ErrTokenizer, fmt.Sprintf(format, args...))
	}
	wrap := func(err error) error { return fmt.Errorf("model: %w: %w", ErrTokenizer, err) }
	kind, err := f.String("tokenizer.ggml.model")
	if err != nil {
		return nil, wrap(err)
	}
	if kind != "gpt2" && kind != "llama" {
		return nil, fail("tokenizer.ggml.model", "%q is not supported (want gpt2, a byte-level BPE, or llama, a SentencePiece BPE)", kind)
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, wrap(err)
	}
	var types []int64
	if _, ok := f.Lookup("tokenizer.ggml.token_type"); ok {
		if types, err = f.Ints("tokenizer.ggml.token_type"); err != nil {
			return nil, wrap(err)
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
		case ggufTokenControl, ggufTokenUnknown, ggufTokenUserDefined:
			added = append(added, map[string]any{"id": id, "content": tok, "single_word": false, "lstrip": false,
				"rstrip": false, "normalized": false, "special": types[id] != ggufTokenUserDefined})
		}
	}
	model := map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "fuse_unk": false, "byte_fallback": false,
		"ignore_merges": false, "vocab": vocab}
	js := map[string]any{"version": "1.0", "added_tokens": added, "model": model}

	// llama.cpp adds BOS by default to SentencePiece vocabularies only.
	addBOS, addEOS := kind == "llama", false
	if v, err := f.Bool("tokenizer.ggml.add_bos_token"); err == nil {
		addBOS = v
	}
	if v, err := f.Bool("tokenizer.ggml.add_eos_token"); err == nil {
		addEOS = v
	}
	if addBOS || addEOS {
		single := []any{}
		specials := map[string]any{}
		special := func(key string) error {
			id, err := f.Int(key, len(tokens)-1)
			if err != nil {
				return wrap(err)
			}
			single = append(single, map[string]any{"SpecialToken": map[string]any{"id": tokens[id], "type_id": 0}})
			specials[tokens[id]] = map[string]any{"id": tokens[id], "ids": []int{id}, "tokens": []string{tokens[id]}}
			return nil
		}
		if addBOS {
			if err := special("tokenizer.ggml.bos_token_id"); err != nil {
				return nil, err
			}
		}
		single = append(single, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}})
		if addEOS {
			if err := special("tokenizer.ggml.eos_token_id"); err != nil {
				return nil, err
			}
		}
		js["post_processor"] = map[string]any{"type": "TemplateProcessing", "single": single, "special_tokens": specials}
	}

	var scores []float32
	if kind == "gpt2" {
		pre := "default"
		if v, ok := f.Lookup("tokenizer.ggml.pre"); ok {
			pre = v.String()
		}
		preTok, ok := ggufPreTokenizers[pre]
		if !ok {
			return nil, fail("tokenizer.ggml.pre", "pre-tokenizer %q is not supported", pre)
		}
		merges, err := f.Strings("tokenizer.ggml.merges")
		if err != nil {
			return nil, wrap(err)
		}
		model["merges"] = merges
		js["pre_tokenizer"] = preTok
		js["decoder"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}
		if ggufNFC[pre] {
			js["normalizer"] = map[string]any{"type": "NFC"}
		}
	} else {
		if scores, err = f.Floats("tokenizer.ggml.scores"); err != nil {
			return nil, wrap(err)
		}
		if len(scores) != len(tokens) {
			return nil, fail("tokenizer.ggml.scores", "%d scores for %d tokens", len(scores), len(tokens))
		}
		if v, err := f.Bool("tokenizer.ggml.remove_extra_whitespaces"); err == nil && v {
			return nil, fail("tokenizer.ggml.remove_extra_whitespaces", "true is not supported")
		}
		model["merges"] = []string{}
		model["byte_fallback"] = true
		if _, ok := f.Lookup("tokenizer.ggml.unknown_token_id"); ok {
			unk, err := f.Int("tokenizer.ggml.unknown_token_id", len(tokens)-1)
			if err != nil {
				return nil, wrap(err)
			}
			model["unk_token"] = tokens[unk]
		}
		// llama.cpp writes spaces as "▁" and, with add_space_prefix (on
		// unless the file says otherwise), puts one before the text and
		// after every special token: what the Prepend normalizer does to
		// each piece between added tokens. Decoding drops that space again.
		addSpace := true
		if v, err := f.Bool("tokenizer.ggml.add_space_prefix"); err == nil {
			addSpace = v
		}
		replace := map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "\u2581"}
		decoders := []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "\u2581"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
		}
		js["normalizer"] = replace
		if addSpace {
			js["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
				map[string]any{"type": "Prepend", "prepend": "\u2581"}, replace}}
			decoders = append(decoders, map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0})
		}
		js["decoder"] = map[string]any{"type": "Sequence", "decoders": decoders}
	}
	data, err := json.Marshal(js)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w: %w", f.Name(), ErrTokenizer, err)
	}
	var t *tokenizer.Tokenizer
	if kind == "llama" {
		t, err = tokenizer.ParseWithScores(data, scores)
	} else {
		t, err = tokenizer.Parse(data)
	}
	if err != nil {
		return nil, fmt.Errorf("model: %s: tokenizer.ggml.*: %w: %w", f.Name(), ErrTokenizer, err)
	}
	return t, nil
}
