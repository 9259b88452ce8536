package sampling

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// chiSquareSF is the chi-square survival function P(X >= x) with df degrees
// of freedom: the regularized upper incomplete gamma Q(df/2, x/2), by its
// series below a+1 and Lentz's continued fraction above.
func chiSquareSF(x float64, df int) float64 {
	if x <= 0 {
		return 1
	}
	return gammaQ(float64(df)/2, x/2)
}

func gammaQ(a, x float64) float64 {
	lg, _ := math.Lgamma(a)
	front := math.Exp(a*math.Log(x) - x - lg)
	if x < a+1 {
		// P(a, x) = x^a e^-x / Gamma(a) * sum x^n / (a (a+1) ... (a+n)).
		term, sum := 1/a, 1/a
		for n := 1; n < 10000; n++ {
			term *= x / (a + float64(n))
			sum += term
			if term < sum*1e-17 {
				break
			}
		}
		return 1 - front*sum
	}
	// Q(a, x) = x^a e^-x / Gamma(a) * 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...))).
	const tiny = 1e-300
	b := x + 1 - a
	c := 1 / tiny
	d := 1 / b
	h := d
	for i := 1; i < 10000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-16 {
			break
		}
	}
	return front * h
}

// chiSquareP compares observed counts with expected probabilities. Bins whose
// expected count is below 5 are pooled (and the pool merged into the
// smallest regular bin if it is still below 5). Tokens of probability 0 must
// have no counts: that is a membership failure, reported separately.
func chiSquareP(t *testing.T, counts []int, probs []float64) (p float64, stat float64, df int) {
	t.Helper()
	n := 0
	for _, c := range counts {
		n += c
	}
	for i, q := range probs {
		require.Falsef(t, q == 0 && counts[i] > 0, "token %d has probability 0 but was drawn %d times", i, counts[i])
	}
	type bin struct{ obs, exp float64 }
	var bins []bin
	var pool bin
	for i, q := range probs {
		if q == 0 {
			continue
		}
		e := q * float64(n)
		if e < 5 {
			pool.obs += float64(counts[i])
			pool.exp += e
			continue
		}
		bins = append(bins, bin{float64(counts[i]), e})
	}
	if pool.exp > 0 {
		if pool.exp >= 5 || len(bins) == 0 {
			bins = append(bins, pool)
		} else {
			s := 0
			for i := range bins {
				if bins[i].exp < bins[s].exp {
					s = i
				}
			}
			bins[s].obs += pool.obs
			bins[s].exp += pool.exp
		}
	}
	if len(bins) < 2 {
		return 1, 0, 0 // a single outcome: nothing to test beyond membership
	}
	for _, b := range bins {
		d := b.obs - b.exp
		stat += d * d / b.exp
	}
	df = len(bins) - 1
	return chiSquareSF(stat, df), stat, df
}

// target is the one-distribution rule in float64, computed straight from its
// definition by comparing logits (O(V^2)); it shares no code with the
// samplers. nil means the row is invalid.
func target(row []float32, p Params) []float64 {
	V := len(row)
	l := make([]float64, V)
	M, amax := math.Inf(-1), -1
	for i, x := range row {
		v := float64(x)
		if math.IsNaN(v) {
			v = math.Inf(-1)
		}
		l[i] = v
		if v > M {
			M, amax = v, i
		}
	}
	out := make([]float64, V)
	if amax < 0 {
		return nil
	}
	if math.IsInf(M, 1) || p.Temperature == 0 {
		out[amax] = 1
		return out
	}
	P := make([]float64, V)
	S := 0.0
	for i := range l {
		P[i] = math.Exp(l[i] - M)
		S += P[i]
	}
	for i := range P {
		P[i] /= S
	}
	pmax := P[amax]
	total := 0.0
	for i := range l {
		if math.IsInf(l[i], -1) {
			continue
		}
		more, above := 0, 0.0
		for j := range l {
			if l[j] > l[i] {
				more++
				above += P[j]
			}
		}
		if p.TopK > 0 && more >= p.TopK {
			continue
		}
		if p.TopP < 1 && !(above < float64(p.TopP)) {
			continue
		}
		if p.MinP > 0 && !(P[i] >= float64(p.MinP)*pmax) {
			continue
		}
		out[i] = math.Exp((l[i] - M) / float64(p.Temperature))
		total += out[i]
	}
	for i := range out {
		out[i] /= total
	}
	return out
}
