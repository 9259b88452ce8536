package sampling

import "math"

// The float32 functions the kernels use (kernels/src/sampling_common.h),
// written operation for operation. Each product that feeds an addition is
// converted to float32 explicitly: Go may fuse x*y+z into one rounding, and
// an explicit conversion forbids it (the kernels forbid it the same way).

const (
	ln2Hi  = float32(0.693138123)    // 0x3f317180: 16 significant bits, so e*ln2Hi is exact
	ln2Lo  = float32(9.05800061e-06) // 0x3717f7d1
	log2e  = float32(1.44269502)     // 0x3fb8aa3b
	sqrt2b = 0x3fb504f3              // float32 bits of sqrt(2)
)

// spLog is sp_log: the natural log of a positive, normal, finite x.
func spLog(x float32) float32 {
	b := math.Float32bits(x)
	e := int32(b>>23) - 127
	mb := b&0x007fffff | 0x3f800000
	if mb > sqrt2b {
		mb -= 0x00800000
		e++
	}
	f := math.Float32frombits(mb) - 1
	s := f / (2 + f)
	z := s * s
	p := float32(0.222222224)
	p = 0.285714298 + float32(z*p)
	p = 0.400000006 + float32(z*p)
	p = 0.666666687 + float32(z*p)
	p = z * p
	logm := (s + s) + float32(s*p)
	fe := float32(e)
	return float32(fe*ln2Hi) + (float32(fe*ln2Lo) + logm)
}

// spExp is sp_exp: e^x for x <= 0, with 0 for x < -87, -inf and NaN.
func spExp(x float32) float32 {
	if !(x >= -87) {
		return 0
	}
	kf := float32(math.Floor(float64(float32(x*log2e) + 0.5)))
	r := (x - float32(kf*ln2Hi)) - float32(kf*ln2Lo)
	p := float32(0.00138888892)
	p = 0.00833333377 + float32(r*p)
	p = 0.0416666679 + float32(r*p)
	p = 0.166666672 + float32(r*p)
	p = 0.5 + float32(r*p)
	p = 1 + float32(r*p)
	p = 1 + float32(r*p)
	k := int32(kf)
	return float32(p * math.Float32frombits(uint32(k+127)<<23)) // exact: a power-of-two scale
}

// spGumbel is sp_gumbel: -log(-log u) for the word's uniform; always finite.
func spGumbel(w uint32) float32 {
	u := Uniform(w)
	return -spLog(-spLog(u))
}

// clean maps NaN to -inf, as every kernel does on load.
func clean(x float32) float32 {
	if x != x {
		return float32(math.Inf(-1))
	}
	return x
}
