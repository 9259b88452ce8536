//go:build !amd64.v3

// The Go compiler may fuse Exp's multiplies and adds into FMAs from
// GOAMD64=v3 on; below it, Exp's Go loop and the AVX2 kernels must agree
// to the bit.

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExpKernelsAreExpToTheBit checks the active expShift and swiglu
// against Exp's Go definition, bit for bit, over a spread of every float32
// exponent and sign (one value in 4093 bit patterns) and densely where Exp
// computes, the edges of Exp's
// cases (88.8, -104, NaN, infinities, zeros, denormals), shifts, in place,
// and lengths around the kernels' 4-value step.
func TestExpKernelsAreExpToTheBit(t *testing.T) {
	var xs []float32
	for b := uint64(0); b < 1<<32; b += 4093 {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	// Densely where Exp computes (about one bit pattern in 2039 of each
	// sign's range), so that a wrong step shows.
	for b := uint32(0); b <= math.Float32bits(88.8); b += 2039 {
		xs = append(xs, math.Float32frombits(b), -math.Float32frombits(b))
	}
	edge := func(f float32) []float32 {
		return []float32{f, math.Nextafter32(f, float32(math.Inf(1))), math.Nextafter32(f, float32(math.Inf(-1)))}
	}
	xs = append(xs, edge(88.8)...)
	xs = append(xs, edge(-104)...)
	xs = append(xs, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		math.Float32frombits(1), math.Float32frombits(0x807fffff), 1e-30, -87.3, 88.7)
	r := rand.New(rand.NewPCG(5, 6))
	for range 4096 {
		xs = append(xs, float32(r.Float64()*240-130))
	}
	same := func(what string, want, got []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(want[i]) != math.Float32bits(got[i]) && !(want[i] != want[i] && got[i] != got[i]) {
				require.Failf(t, "not Exp's bits", "%s, element %d: want %v (%#08x), got %v (%#08x)", what, i, want[i], math.Float32bits(want[i]), got[i], math.Float32bits(got[i]))
			}
		}
	}
	for _, shift := range []float32{0, 3.5, -2, 88} {
		want := make([]float32, len(xs))
		expShiftGeneric(want, xs, shift)
		got := make([]float32, len(xs))
		expShift(got, xs, shift)
		same("expShift", want, got)
		inPlace := append([]float32(nil), xs...)
		expShift(inPlace, inPlace, shift)
		same("expShift in place", want, inPlace)
	}
	up := make([]float32, len(xs))
	for i := range up {
		up[i] = float32(r.NormFloat64())
	}
	want := make([]float32, len(xs))
	swigluGeneric(want, xs, up)
	got := make([]float32, len(xs))
	swiglu(got, xs, up)
	same("swiglu", want, got)
	for n := range 9 {
		w, g := make([]float32, n), make([]float32, n)
		expShiftGeneric(w, xs[:n], 1)
		expShift(g, xs[:n], 1)
		same("expShift, short", w, g)
		swigluGeneric(w, xs[:n], up[:n])
		swiglu(g, xs[:n], up[:n])
		same("swiglu, short", w, g)
	}
}
