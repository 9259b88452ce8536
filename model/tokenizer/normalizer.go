package tokenizer

import "strings"

// normalizer is a tokenizer.json normalizer. A Sequence is flattened into
// its steps, applied in order.
type normalizer interface {
	normalize(s string) string
}

type nfcNormalizer struct{}

func (nfcNormalizer) normalize(s string) string { return nfc(s) }

type normalizerSequence []normalizer

func (seq normalizerSequence) normalize(s string) string {
	for _, n := range seq {
		s = n.normalize(s)
	}
	return s
}

// prependNormalizer puts its text before any non-empty string (`tokenizers`'
// Prepend; SentencePiece's "▁" prefix in Llama 2's tokenizer.json).
type prependNormalizer string

func (p prependNormalizer) normalize(s string) string {
	if s == "" {
		return s
	}
	return string(p) + s
}

// replaceNormalizer replaces every occurrence of a literal string, leftmost
// first and without overlaps (`tokenizers`' Replace with a String pattern).
type replaceNormalizer struct{ old, new string }

func (r replaceNormalizer) normalize(s string) string {
	return strings.ReplaceAll(s, r.old, r.new)
}
