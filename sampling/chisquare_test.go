package sampling

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The chi-square survival function agrees with closed forms that share no
// code with it: for even df, Q(n, x) = e^-x sum_{k<n} x^k/k! (the Poisson
// tail); for odd df, Q(1/2, x) = erfc(sqrt x) and the recurrence
// Q(a+1, x) = Q(a, x) + x^a e^-x / Gamma(a+1).
func TestChiSquareSFMatchesClosedForms(t *testing.T) {
	xs := []float64{0.01, 0.5, 1, 2.5, 7, 15, 30, 60, 120, 250, 400}
	for df := 1; df <= 200; df++ {
		for _, x := range xs {
			h := x / 2
			var want float64
			if df%2 == 0 {
				term, sum := 1.0, 1.0
				for k := 1; k < df/2; k++ {
					term *= h / float64(k)
					sum += term
				}
				want = math.Exp(-h) * sum
			} else {
				want = math.Erfc(math.Sqrt(h))
				for a := 0.5; a < float64(df)/2-0.25; a++ {
					lg, _ := math.Lgamma(a + 1)
					want += math.Exp(a*math.Log(h) - h - lg)
				}
			}
			got := chiSquareSF(x, df)
			if want > 1e-290 {
				require.InDeltaf(t, 0, (got-want)/want, 1e-9, "df=%d x=%g: got %g want %g", df, x, got, want)
			}
		}
	}
}

// Published critical values (NIST/SEMATECH e-Handbook, Table 1.3.6.7.4, and
// the 1e-6 quantile of chi-square(1), 23.9281): the survival function at each
// is the table's tail probability.
func TestChiSquareSFAtTableCriticalValues(t *testing.T) {
	cases := []struct {
		x    float64
		df   int
		want float64
	}{
		{3.841, 1, 0.05}, {6.635, 1, 0.01}, {11.070, 5, 0.05}, {15.086, 5, 0.01},
		{18.307, 10, 0.05}, {23.209, 10, 0.01}, {124.342, 100, 0.05}, {135.807, 100, 0.01},
		{23.9281, 1, 1e-6},
	}
	for _, c := range cases {
		require.InDeltaf(t, c.want, chiSquareSF(c.x, c.df), c.want*2e-3, "x=%g df=%d", c.x, c.df)
	}
	require.Equal(t, 1.0, chiSquareSF(0, 3))
}
