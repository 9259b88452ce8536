package cpu

import "math"

// RMSNorm writes x / sqrt(mean(x²) + eps) * w to out (out may alias x). The
// mean is accumulated in float64 so long rows lose no precision.
func RMSNorm(out, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	// transformers computes rsqrt(mean + eps) in float32; doing the same keeps
	// results bit-close to it.
	inv := float32(1 / math.Sqrt(float64(float32(ss/float64(len(x)))+eps)))
	w = w[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = w[i] * (v * inv)
	}
}

// RoPE rotates each of the heads of x (heads*headDim values) by the angles
// whose cosines and sines are cos and sin (headDim/2 each), in Hugging Face's
// rotate_half layout: element i pairs with element i+headDim/2.
func RoPE(x []float32, heads, headDim int, cos, sin []float32) {
	half := headDim / 2
	cos, sin = cos[:half], sin[:half]
	for h := range heads {
		v := x[h*headDim : (h+1)*headDim]
		lo, hi := v[:half], v[half:headDim]
		for i := range half {
			a, b := lo[i], hi[i]
			lo[i] = a*cos[i] - b*sin[i]
			hi[i] = b*cos[i] + a*sin[i]
		}
	}
}

// Softmax replaces x by exp(x - max) / sum in place.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	expShift(x, x, m)
	var sum float64
	for _, e := range x {
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// SwiGLU writes silu(gate) * up to out: silu(g) = g / (1 + exp(-g)).
func SwiGLU(out, gate, up []float32) {
	swiglu(out, gate[:len(out)], up[:len(out)])
}

// GeGLU writes gelu(gate) * up to out, with GELU's tanh approximation
// (PyTorch's gelu(approximate="tanh"), transformers' gelu_pytorch_tanh):
// gelu(g) = g/2 * (1 + tanh(sqrt(2/pi) * (g + 0.044715 g³))), in float64
// and rounded once.
func GeGLU(out, gate, up []float32) {
	gate, up = gate[:len(out)], up[:len(out)]
	const c = 0.7978845608028654 // sqrt(2/pi)
	for i, g := range gate {
		x := float64(g)
		out[i] = float32(0.5*x*(1+math.Tanh(c*(x+0.044715*x*x*x)))) * up[i]
	}
}

// expShift and swiglu are Softmax's and SwiGLU's loops: the AVX2 ones
// where dot_amd64.go finds them, which give the Go loops' values to the bit
// (see EXP4 in exp_amd64.s).
var (
	expShift = expShiftGeneric
	swiglu   = swigluGeneric
)

// expShiftGeneric sets dst[i] = Exp(src[i] - shift); dst may be src.
func expShiftGeneric(dst, src []float32, shift float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = Exp(v - shift)
	}
}

func swigluGeneric(out, gate, up []float32) {
	gate, up = gate[:len(out)], up[:len(out)]
	for i, g := range gate {
		out[i] = g / (1 + Exp(-g)) * up[i]
	}
}

// Exp is exp(x) accurate to float32 rounding (relative error below 1e-9
// before the final rounding), about five times cheaper than math.Exp: 2^k
// times a degree-9 polynomial on |r| <= ln2/2, in float64.
func Exp(x float32) float32 {
	switch {
	case x > 88.8:
		return float32(math.Inf(1))
	case x < -104:
		return 0
	case x != x:
		return x
	}
	const (
		log2e = 1.4426950408889634
		ln2hi = 6.93147180369123816490e-01
		ln2lo = 1.90821492927058770002e-10
	)
	xf := float64(x)
	k := math.Floor(xf*log2e + 0.5)
	r := xf - k*ln2hi - k*ln2lo
	// Taylor series of exp(r) to r^9/9!: the remainder is < 3e-12 for |r| <= 0.347.
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040+r*(1.0/40320+r*(1.0/362880)))))))))
	// 2^k as a float64 built from its exponent bits; k is in [-151, 129] here.
	return float32(p * math.Float64frombits(uint64(int64(k)+1023)<<52))
}
