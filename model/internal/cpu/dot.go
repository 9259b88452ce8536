package cpu

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/hipgo/hipgo/model/internal/quant"
)

// Dot returns sum(a[i]*b[i]) over len(a) elements (b must be at least as long).
func Dot(a, b []float32) float32 { return dot(a, b) }

// DotBF16 returns sum(x[i]*w[i]) with w in bfloat16, accumulated in float32.
func DotBF16(x []float32, w []uint16) float32 { return dotBF16(x, w) }

// dot, dotBF16 and dot4 point at the fastest kernels this CPU supports (set
// by dot_amd64.go when AVX2 and FMA are present); the generic versions are
// the portable reference and the fallback.
var (
	dot      = dotGeneric
	dotBF16  = dotBF16Generic
	dot4     = dot4Generic
	dot4BF16 func(w []uint16, x []float32, stride int, out *[4]float32)
	simd     = "generic"
)

// SIMD names the active kernel set (see SetKernels).
func SIMD() string { return simd }

// kernels is one selectable set of inner loops.
type kernels struct {
	dot     func(a, b []float32) float32
	dotBF16 func(x []float32, w []uint16) float32
	dot4    func(w, x []float32, stride int, out *[4]float32)
	gemm    func(xt, w []float32, k, ldw int, acc *[gemmJ * gemmT]float32) // nil: no tiled product
	// dot4BF16 is dot4 over a bf16 row, widened in registers; nil: MatMul
	// widens the row into a buffer first.
	dot4BF16 func(w []uint16, x []float32, stride int, out *[4]float32)
	// quant names package quant's kernel set to select with this one; ""
	// means the set of the same name.
	quant string
}

var variants = map[string]kernels{"generic": {dot: dotGeneric, dotBF16: dotBF16Generic, dot4: dot4Generic}}

// SetKernels selects a kernel set by name, for measurements (the hfcompare
// tool and benchmarks): "generic" everywhere, and "avx2", "avx2-prefetch"
// and "avx2-rows" (avx2 without the tiled prefill products) where AVX2 and
// FMA are present. The default is chosen at start-up (dot_amd64.go). It
// selects package quant's set of the same name too, "avx2" for
// "avx2-rows" (its generic set where quant has no such set). Not safe to
// call while products run.
func SetKernels(name string) error {
	k, ok := variants[name]
	if !ok {
		return fmt.Errorf("cpu: no kernel set %q on this machine", name)
	}
	dot, dotBF16, dot4, gemm6x16, dot4BF16, simd = k.dot, k.dotBF16, k.dot4, k.gemm, k.dot4BF16, name
	if k.quant != "" {
		name = k.quant
	}
	if quant.SetKernels(name) != nil {
		_ = quant.SetKernels("generic")
	}
	return nil
}

// dot4Generic computes out[r] = w · x[r*stride : r*stride+len(w)] for r < 4.
func dot4Generic(w, x []float32, stride int, out *[4]float32) {
	for r := range 4 {
		out[r] = dotGeneric(w, x[r*stride:r*stride+len(w)])
	}
}

// dotGeneric uses eight independent accumulators so the adds pipeline
// instead of waiting on one another; the fixed-size subslices let the
// compiler drop bounds checks inside the loop.
func dotGeneric(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		aa := a[i : i+8 : i+8]
		bb := b[i : i+8 : i+8]
		s0 += aa[0] * bb[0]
		s1 += aa[1] * bb[1]
		s2 += aa[2] * bb[2]
		s3 += aa[3] * bb[3]
		s4 += aa[4] * bb[4]
		s5 += aa[5] * bb[5]
		s6 += aa[6] * bb[6]
		s7 += aa[7] * bb[7]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

func bf16(u uint16) float32 { return math.Float32frombits(uint32(u) << 16) }

func dotBF16Generic(x []float32, w []uint16) float32 {
	n := len(x)
	w = w[:n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		xx := x[i : i+8 : i+8]
		ww := w[i : i+8 : i+8]
		s0 += xx[0] * bf16(ww[0])
		s1 += xx[1] * bf16(ww[1])
		s2 += xx[2] * bf16(ww[2])
		s3 += xx[3] * bf16(ww[3])
		s4 += xx[4] * bf16(ww[4])
		s5 += xx[5] * bf16(ww[5])
		s6 += xx[6] * bf16(ww[6])
		s7 += xx[7] * bf16(ww[7])
	}
	for ; i < n; i++ {
		s0 += x[i] * bf16(w[i])
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// BF16ToF32 widens src into dst (len(dst) elements).
func BF16ToF32(dst []float32, src []uint16) { widenBF16(dst, src[:len(dst)]) }

// widenBF16 is BF16ToF32's loop: the AVX2 one where dot_amd64.go finds it
// (exact either way, so SetKernels leaves it alone).
var widenBF16 = widenBF16Generic

func widenBF16Generic(dst []float32, src []uint16) {
	if len(dst) == 0 {
		return
	}
	src = src[:len(dst)]
	// Written as dst's bits: under -race, math.Float32frombits is a checked
	// unsafe conversion per element (checkptr).
	bits := unsafe.Slice((*uint32)(unsafe.Pointer(&dst[0])), len(dst))
	for i, u := range src {
		bits[i] = uint32(u) << 16
	}
}

// Axpy adds a*x to y.
func Axpy(a float32, x, y []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}
