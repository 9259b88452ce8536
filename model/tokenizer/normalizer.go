package tokenizer

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
