package sampling

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLogprobsFollowTheirDefinition: the logprob of a token is
// logit - log(sum(exp(logits))) (exact on a row whose probabilities are
// known), the top list is the k best, best first, ties to the lower id,
// NaN left out, a k past the row lists the whole row, and the row is left
// as it was.
func TestLogprobsFollowTheirDefinition(t *testing.T) {
	ln := func(x float64) float32 { return float32(math.Log(x)) }
	// Probabilities 0.5, 0.25, 0.125, 0.125 shifted by 3.
	row := []float32{ln(0.125) + 3, ln(0.5) + 3, ln(0.125) + 3, ln(0.25) + 3}
	before := append([]float32(nil), row...)
	lp, top := Logprobs(row, 3, 3)
	require.InDelta(t, math.Log(0.25), float64(lp), 1e-6)
	require.Equal(t, []uint32{1, 3, 0}, []uint32{top[0].ID, top[1].ID, top[2].ID})
	require.InDelta(t, math.Log(0.5), float64(top[0].Logprob), 1e-6)
	require.InDelta(t, math.Log(0.125), float64(top[2].Logprob), 1e-6)
	require.Equal(t, before, row)

	_, top = Logprobs(row, 0, 0)
	require.Empty(t, top)
	_, top = Logprobs(row, 0, 10)
	require.Len(t, top, 4)

	nan := []float32{float32(math.NaN()), 1, 1}
	lp, top = Logprobs(nan, 2, 2)
	require.InDelta(t, math.Log(0.5), float64(lp), 1e-6)
	require.Equal(t, []TokenLogprob{{1, float32(math.Log(0.5))}, {2, float32(math.Log(0.5))}}, top)
}
