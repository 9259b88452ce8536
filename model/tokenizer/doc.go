// Package tokenizer reads a Hugging Face tokenizer.json for a BPE model,
// byte-level (GPT-2, Llama 3, Qwen2/2.5/3) or SentencePiece-style with byte
// fallback (Llama 2, Mistral, Gemma), and encodes and decodes text with it
// in pure Go. ParseWithScores reads the same models from a SentencePiece
// vocabulary with scores instead of merges (GGUF's tokenizer.ggml.model
// "llama"), merging by score as llama.cpp does.
//
// The contract is that Encode returns exactly the ids that the Rust
// `tokenizers` library returns for the same file and text (its encode with
// add_special_tokens set as addSpecial): the added-token split, the
// normalizer, the pre-tokenizer, the BPE merge loop and the post-processor
// template follow that library's semantics. Go's regexp cannot compile the
// pre-tokenizer patterns these models use (they need lookahead, `\s+(?!\S)`,
// and Unicode `\s`), so the patterns are recognised by their exact text and
// run by hand-written matchers (pattern.go).
//
// Implemented: model BPE (vocab; merges as "a b" strings or [a, b] pairs;
// ignore_merges; unk_token and fuse_unk; byte_fallback; dropout null or 0);
// added_tokens with single_word, lstrip, rstrip, normalized and special;
// normalizers NFC, Prepend, Replace (String patterns) and Sequence;
// pre-tokenizers ByteLevel (add_prefix_space, use_regex), Split (a String
// pattern, or the GPT-2, Llama-3 and Qwen2 Regex patterns; every behavior;
// invert), Digits, Metaspace (prepend_scheme always, never, and first when
// it is the first pre-tokenizer; split) and Sequence; post-processors
// TemplateProcessing (single-sequence template), ByteLevel and Sequence;
// decoders ByteLevel alone, and Replace, ByteFallback, Fuse, Strip and
// Metaspace, alone or in a Sequence. Any other component, option or regex
// is an *Error wrapping ErrUnsupported that names the file and the JSON
// field: never a silent approximation. truncation and padding are not
// applied.
//
// Encode never fails once a tokenizer is loaded: it accepts any string,
// including invalid UTF-8, whose bytes are encoded as byte-level tokens.
// Decode replaces invalid UTF-8 the way Rust's String::from_utf8_lossy does.
// A *Tokenizer is safe for concurrent use; a *StreamDecoder is not.
package tokenizer
