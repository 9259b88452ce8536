package sampling

import (
	"math"
	"slices"
)

// MaxTopLogprobs is the most alternatives Logprobs lists for a token
// (OpenAI's top_logprobs range is 0..20).
const MaxTopLogprobs = 20

// TokenLogprob is a token and its log-probability.
type TokenLogprob struct {
	ID      uint32
	Logprob float32
}

// Logprobs is the log-softmax of row, one row of logits as the forward
// pass gives them (before penalties, temperature and filters: the model's
// own distribution, as OpenAI and vLLM report logprobs), at token id, and
// the k most probable tokens of row, best first (ties: the lower id
// first). It is computed in float64; row is not changed. A NaN logit is
// never listed.
func Logprobs(row []float32, id uint32, k int) (float32, []TokenLogprob) {
	lse := logSumExp(row)
	top := make([]TokenLogprob, 0, k+1)
	better := func(a, b TokenLogprob) bool { return a.Logprob > b.Logprob || a.Logprob == b.Logprob && a.ID < b.ID }
	for j, x := range row {
		if k == 0 {
			break
		}
		if x != x {
			continue
		}
		t := TokenLogprob{ID: uint32(j), Logprob: x}
		if len(top) == k && !better(t, top[k-1]) {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, t, func(a, b TokenLogprob) int {
			if better(a, b) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, t)
		if len(top) > k {
			top = top[:k]
		}
	}
	for i := range top {
		top[i].Logprob = float32(float64(top[i].Logprob) - lse)
	}
	lp := float32(math.Inf(-1))
	if int(id) < len(row) {
		lp = float32(float64(row[id]) - lse)
	}
	return lp, top
}

// logSumExp is log(sum(exp(row))) in float64, NaNs left out.
func logSumExp(row []float32) float64 {
	m := math.Inf(-1)
	for _, x := range row {
		if float64(x) > m {
			m = float64(x)
		}
	}
	if math.IsInf(m, 0) {
		return m
	}
	var s float64
	for _, x := range row {
		if x == x {
			s += math.Exp(float64(x) - m)
		}
	}
	return m + math.Log(s)
}
