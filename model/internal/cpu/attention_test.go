package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScoresAndWeightedRows proves both against float64 sums, for head
// sizes around the kernels' 8- and 64-column steps and key counts around
// dot4's 4, with rows strided wider than a head, in every kernel set; and
// that WeightedRows overwrites o (it starts as NaN).
func TestScoresAndWeightedRows(t *testing.T) {
	defer func() { require.NoError(t, SetKernels(SIMD())) }()
	r := rand.New(rand.NewPCG(11, 12))
	for name := range variants {
		require.NoError(t, SetKernels(name))
		for _, hd := range []int{1, 7, 8, 64, 72, 128, 130} {
			for _, n := range []int{0, 1, 3, 4, 5, 33} {
				stride := 3*hd + 5
				q := randVec(r, hd)
				k := randVec(r, max(0, (n-1)*stride+hd))
				v := randVec(r, max(0, (n-1)*stride+hd))
				const scale = 0.125
				sc := make([]float32, n)
				Scores(sc, q, k, stride, scale)
				for j := range n {
					want := scale * dot64(q, k[j*stride:j*stride+hd])
					require.InDelta(t, want, float64(sc[j]), 1e-6*scale*sumAbs(q, k[j*stride:j*stride+hd]), "%s hd=%d n=%d key %d", name, hd, n, j)
				}
				o := make([]float32, hd)
				for i := range o {
					o[i] = float32(math.NaN())
				}
				WeightedRows(o, sc, v, stride)
				for c := range hd {
					var want, mag float64
					for j := range n {
						want += float64(sc[j]) * float64(v[j*stride+c])
						mag += math.Abs(float64(sc[j]) * float64(v[j*stride+c]))
					}
					require.InDelta(t, want, float64(o[c]), 1e-6*mag, "%s hd=%d n=%d column %d", name, hd, n, c)
				}
			}
		}
	}
}
