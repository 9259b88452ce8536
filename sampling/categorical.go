package sampling

import (
	"math"
	"sync"
)

// Categorical draws one token per row from softmax(logits/T) by inverse CDF
// in float64: weights exp((l - max)/T), one uniform per row (word 0 of
// philox(key, {0, 2, row, 0})), the first index (ascending) whose running sum
// exceeds u * total. It is the CPU fallback for the Gumbel-max kernel: the
// same distribution, a different draw for the same key.
//
// temperatures has one entry per row or one for all rows; each must be
// finite and >= 0 (0, or a T whose reciprocal overflows float32, is greedy).
// NaN logits count as -inf; if a row has +inf logits its token is the lowest
// +inf index. A row with no finite or +inf logit gets token 0 and is named in
// the returned *InvalidLogitsError; every row is written either way.
func Categorical(tokens []uint32, logits []float32, B, V int, temperatures []float32, key Key) error {
	const entry = "sampling.Categorical"
	if err := checkShape(entry, logits, B, V, len(tokens)); err != nil {
		return err
	}
	if len(temperatures) != 1 && len(temperatures) != B {
		return shapeErr(entry, "len(temperatures) = %d, want 1 or B = %d", len(temperatures), B)
	}
	for r, t := range temperatures {
		row := r
		if len(temperatures) == 1 {
			row = -1
		}
		if err := (Params{Temperature: t, TopP: 1}).validate(row); err != nil {
			return err
		}
	}
	var bad badRows
	forRows(B, V, &fbPool, func(r int, s *fbScratch) {
		t := temperatures[0]
		if len(temperatures) > 1 {
			t = temperatures[r]
		}
		tok, ok := categoricalRow(logits[r*V:(r+1)*V], uint32(r), t, key, s)
		tokens[r] = tok
		if !ok {
			bad.add(r)
		}
	})
	return bad.err(entry)
}

// fbScratch is one worker's scratch for the fallbacks (length V each).
type fbScratch struct {
	x, e, w []float64
	idx     []int32
	keep    []bool
}

var fbPool = sync.Pool{New: func() any { return new(fbScratch) }}

func (s *fbScratch) size(V int) {
	if cap(s.x) < V {
		s.x, s.e, s.w = make([]float64, V), make([]float64, V), make([]float64, V)
		s.idx, s.keep = make([]int32, V), make([]bool, V)
	}
	s.x, s.e, s.w, s.idx, s.keep = s.x[:V], s.e[:V], s.w[:V], s.idx[:V], s.keep[:V]
}

// rowPrelude handles what every fallback row does first: the invalid row,
// the +inf row and the greedy row. It returns done = true with the token
// when one of them applies, and otherwise the max logit.
func rowPrelude(row []float32, temperature float32) (tok uint32, ok, done bool, M float32) {
	M, amax := rowMax(row)
	switch {
	case !(M > float32(math.Inf(-1))):
		return 0, false, true, M
	case math.IsInf(float64(M), 1), GumbelInvTemp(temperature) == 0:
		return amax, true, true, M
	}
	return 0, true, false, M
}

func categoricalRow(row []float32, r uint32, temperature float32, key Key, s *fbScratch) (uint32, bool) {
	tok, ok, done, M := rowPrelude(row, temperature)
	if done {
		return tok, ok
	}
	s.size(len(row))
	invT := 1 / float64(temperature)
	total := 0.0
	for i, l := range row {
		w := math.Exp((float64(clean(l)) - float64(M)) * invT)
		s.w[i] = w
		total += w
	}
	return drawIndex(s.w, nil, total, float64(fallbackUniform(key, r))), true
}

// drawIndex walks the weights in ascending index order (only kept ones when
// keep != nil) and returns the first index whose running sum exceeds
// u*total, or the last index with weight if rounding leaves the sum short.
func drawIndex(w []float64, keep []bool, total, u float64) uint32 {
	target := u * total
	cum, last := 0.0, -1
	for i, wi := range w {
		if wi <= 0 || (keep != nil && !keep[i]) {
			continue
		}
		cum += wi
		last = i
		if cum > target {
			return uint32(i)
		}
	}
	return uint32(last)
}
