package sampling

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func ulpErr(got float32, want float64) float64 {
	ulp := math.Nextafter32(float32(math.Abs(want)), float32(math.Inf(1))) - float32(math.Abs(want))
	return math.Abs(float64(got)-want) / float64(ulp)
}

// sp_log is accurate to a few ulp against float64 math.Log over the whole
// positive normal range, including just below 1 where -log(u) must stay
// relatively accurate (an absolute-error log would give 0 there).
func TestSpLogAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(x float32) {
		want := math.Log(float64(x))
		got := spLog(x)
		if want == 0 {
			require.Equal(t, float32(0), got)
			return
		}
		require.LessOrEqualf(t, ulpErr(got, want), 4.0, "log(%v) = %v, want %v", x, got, want)
	}
	for i := 0; i < 200000; i++ {
		check(math.Float32frombits(0x00800000 + rng.Uint32N(0x7f000000)))
	}
	for w := uint32(0); w < 1<<23; w += 97 {
		check(Uniform(w << 9))
	}
	for k := 0; k < 4096; k++ {
		check(1 - float32(k+1)*0x1p-24)
		check(1 + float32(k+1)*0x1p-23)
	}
	require.Less(t, spLog(1-0x1p-24), float32(0))
}

// sp_exp is accurate to a few ulp on [-87, 0], exactly 1 at 0, and 0 (never
// subnormal) below -87, at -inf and for NaN.
func TestSpExpAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200000; i++ {
		x := -87 * rng.Float32()
		got := spExp(x)
		require.LessOrEqualf(t, ulpErr(got, math.Exp(float64(x))), 4.0, "exp(%v)", x)
		require.GreaterOrEqual(t, got, float32(math.SmallestNonzeroFloat32*(1<<23)))
	}
	require.Equal(t, float32(1), spExp(0))
	require.Equal(t, float32(1), spExp(float32(math.Copysign(0, -1))))
	for _, x := range []float32{-87.01, -100, -1e30, float32(math.Inf(-1)), float32(math.NaN())} {
		require.Equal(t, float32(0), spExp(x))
	}
}
