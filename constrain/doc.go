// Package constrain is constrained decoding for JSON: a grammar compiled
// from a JSON schema (or "any JSON object"), recognized incrementally over
// bytes by a pushdown recognizer, and a per-step token mask over a
// tokenizer's vocabulary.
//
// CompileSchema and JSONObject build a Grammar once per request. NewVocab
// compiles a vocabulary (token id → the bytes it adds to the text) into a
// byte trie once per model. A Matcher follows one generation: Mask sets the
// tokens that keep the text a prefix of some value the grammar accepts,
// found by walking the trie against the recognizer's state and pruning a
// subtree at the first byte the recognizer rejects; Accept advances it by
// the sampled token; CanEnd reports whether the value is complete, which is
// when end of sequence may be sampled (after a complete value nothing else
// is allowed).
//
// The value starts at the first byte and ends at the last: no whitespace
// around it. Every prefix the recognizer accepts can be completed (no
// dead ends), so
// some token is always allowed when the vocabulary has every byte as a
// token, as byte-level BPE and byte-fallback vocabularies do. Whitespace
// between tokens is none, one space, or a newline and at most MaxIndent
// spaces or tabs, so a model cannot loop in it. Text is produced in one canonical form where JSON
// allows several only for enum and const values (compact, as json.Marshal
// writes them with sorted keys); elsewhere any valid JSON is allowed.
package constrain
