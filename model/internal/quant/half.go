package quant

import "math"

// halfToFloat widens an IEEE 754 binary16 value to float32 exactly
// (subnormals, infinities and NaN payloads included).
func halfToFloat(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0: // normal: rebias 15 -> 127
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: man * 2^-24, exact in float32.
	f := float32(man) * (1.0 / (1 << 24))
	return math.Float32frombits(sign | math.Float32bits(f))
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

// le32 reads the little-endian uint32 at b[0:4].
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// f16at reads the little-endian float16 at b[0:2].
func f16at(b []byte) float32 { return halfToFloat(le16(b)) }

func bf16(u uint16) float32 { return math.Float32frombits(uint32(u) << 16) }
