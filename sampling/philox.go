package sampling

import "math/bits"

// Key is the Philox key of one sampling call. Reusing a key with the same
// logits and parameters reproduces the same tokens, on the CPU and on every
// kernel port.
type Key [2]uint32

// Counter spaces. Every random word is word w of philox(key, {c0, c1, row, 0}):
//
//	Gumbel noise of element i:        c0 = i >> 2, c1 = 0, w = i & 3
//	rejection round n (0-based):      c0 = n,      c1 = 1, w = 0
//	Categorical / Argpartition draw:  c0 = 0,      c1 = 2, w = 0
//
// The second word keeps the spaces disjoint, and the row is part of the
// counter, so no draw depends on the batch layout or the launch shape.
const (
	counterGumbel    = 0
	counterRejection = 1
	counterFallback  = 2
)

// Philox4x32 is Philox4x32-10 (Salmon et al., Random123): ten rounds with
// multipliers 0xD2511F53, 0xCD9E8D57 and Weyl key increments 0x9E3779B9,
// 0xBB67AE85.
func Philox4x32(ctr [4]uint32, key Key) [4]uint32 {
	c0, c1, c2, c3 := ctr[0], ctr[1], ctr[2], ctr[3]
	k0, k1 := key[0], key[1]
	for i := 0; i < 10; i++ {
		hi0, lo0 := bits.Mul32(0xD2511F53, c0)
		hi1, lo1 := bits.Mul32(0xCD9E8D57, c2)
		c0, c1, c2, c3 = hi1^c1^k0, lo1, hi0^c3^k1, lo0
		k0 += 0x9E3779B9
		k1 += 0xBB67AE85
	}
	return [4]uint32{c0, c1, c2, c3}
}

// Uniform maps a random word to ((w >> 9) + 0.5) * 2^-23. Every step is exact
// in float32, so the result lies in [2^-24, 1 - 2^-24]: strictly inside
// (0, 1), and -log(-log u) is always finite.
func Uniform(w uint32) float32 {
	return (float32(w>>9) + 0.5) * 0x1p-23
}

// KeyFromSeed derives the key for step `step` of a generation loop seeded
// with `seed`: k = splitmix64(splitmix64(seed) + step), Key{low 32 bits,
// high 32 bits}. Distinct steps give unrelated keys.
func KeyFromSeed(seed, step uint64) Key {
	k := splitmix64(splitmix64(seed) + step)
	return Key{uint32(k), uint32(k >> 32)}
}

// splitmix64 is one output of Steele, Lea and Flood's SplitMix64 from state
// x: the state advances by the golden-ratio increment, then the finaliser
// mixes it.
func splitmix64(x uint64) uint64 {
	z := x + 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// fallbackUniform is the one uniform a Categorical or Argpartition row uses.
func fallbackUniform(key Key, row uint32) float32 {
	return Uniform(Philox4x32([4]uint32{0, counterFallback, row, 0}, key)[0])
}
