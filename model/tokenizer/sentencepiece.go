package tokenizer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// ParseWithScores is Parse for a SentencePiece BPE vocabulary given with
// its scores instead of merges, as GGUF files carry them
// (tokenizer.ggml.model "llama": tokenizer.ggml.tokens and scores):
// scores[id] is the score of the token with that id. The file's model must
// be a BPE with an empty merges list; everything else (added tokens,
// normalizer, pre-tokenizer, post-processor, decoder) is read as Parse reads
// it.
//
// The model then merges as llama.cpp's SentencePiece tokenizer does: any
// two adjacent symbols whose concatenation is a token may merge, the token
// with the highest score first, the leftmost among equal scores; a
// character outside the vocabulary stays a symbol of its own and, if
// nothing merges it, becomes the byte tokens <0xNN> of its UTF-8.
func ParseWithScores(data []byte, scores []float32) (*Tokenizer, error) {
	t, err := Parse(data)
	if err != nil {
		return nil, err
	}
	m := t.model
	if len(m.merges) > 0 {
		return nil, invalid("model.merges", "a vocabulary with scores has no merges", nil)
	}
	size := 0
	for _, id := range m.vocab {
		size = max(size, int(id)+1)
	}
	if len(scores) < size {
		return nil, invalid("model.vocab", fmt.Sprintf("%d scores for ids up to %d", len(scores), size-1), nil)
	}
	m.scoreRank = scoreRanks(scores[:size])
	return t, nil
}

// scoreRanks gives each id the rank of its score: 0 for the highest, equal
// scores sharing a rank, NaN below everything.
func scoreRanks(scores []float32) []uint32 {
	key := func(s float32) float64 {
		if math.IsNaN(float64(s)) {
			return math.Inf(-1)
		}
		return float64(s)
	}
	order := make([]uint32, len(scores))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return cmp.Compare(key(scores[b]), key(scores[a])) })
	ranks := make([]uint32, len(scores))
	rank := uint32(0)
	for i, id := range order {
		if i > 0 && key(scores[id]) != key(scores[order[i-1]]) {
			rank++
		}
		ranks[id] = rank
	}
	return ranks
}
