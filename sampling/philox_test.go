package sampling

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Philox4x32-10 reproduces Random123's published known-answer vectors
// (kat_vectors, the three "philox4x32 10" lines: counter, key, result).
func TestPhilox4x32KnownAnswers(t *testing.T) {
	cases := []struct {
		ctr  [4]uint32
		key  Key
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, Key{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, Key{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, Key{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, c := range cases {
		require.Equal(t, c.want, Philox4x32(c.ctr, c.key))
	}
}

// The uniform's extremes are exact and strictly inside (0,1) in float32,
// and the Gumbel noise is finite there. The check would catch the 24-bit
// variant that once shipped elsewhere: ((w>>8)+0.5)*2^-24 rounds to 1.0.
func TestUniformExtremesStayInsideUnitInterval(t *testing.T) {
	require.Equal(t, float32(0x1p-24), Uniform(0))
	require.Equal(t, float32(1-0x1p-24), Uniform(0xffffffff))
	for _, w := range []uint32{0, 1, 0x1ff, 0x200, 0x7fffffff, 0x80000000, 0xfffffe00, 0xffffffff} {
		u := Uniform(w)
		require.Truef(t, u > 0 && u < 1, "Uniform(%#x) = %v", w, u)
		g := spGumbel(w)
		require.Falsef(t, math.IsInf(float64(g), 0) || math.IsNaN(float64(g)), "gumbel(%#x) = %v", w, g)
	}
	// Negative control: the 24-bit mapping reaches 1.0 in float32.
	bad := (float32(uint32(0xffffffff)>>8) + 0.5) * 0x1p-24
	require.Equal(t, float32(1), bad)
	// Monotone and exact over a sweep of the top and bottom of the range.
	prev := float32(0)
	for m := uint32(0); m < 1<<23; m += 4093 {
		u := Uniform(m << 9)
		require.Equal(t, (float64(m)+0.5)/(1<<23), float64(u))
		require.Greater(t, u, prev)
		prev = u
	}
}

// SplitMix64 from state 0, 1*golden, 2*golden, 3*golden gives the reference
// generator's first four outputs (Vigna's splitmix64.c, seed 0).
func TestSplitMix64KnownAnswers(t *testing.T) {
	want := []uint64{0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC}
	for n, w := range want {
		require.Equal(t, w, splitmix64(uint64(n)*0x9E3779B97F4A7C15))
	}
}

// KeyFromSeed is the documented composition, deterministic, and gives
// distinct keys for distinct steps and seeds.
func TestKeyFromSeed(t *testing.T) {
	k := splitmix64(splitmix64(7) + 3)
	require.Equal(t, Key{uint32(k), uint32(k >> 32)}, KeyFromSeed(7, 3))
	seen := map[Key]bool{}
	for seed := uint64(0); seed < 8; seed++ {
		for step := uint64(0); step < 1000; step++ {
			key := KeyFromSeed(seed, step)
			require.False(t, seen[key], "seed %d step %d repeats a key", seed, step)
			seen[key] = true
		}
	}
}
