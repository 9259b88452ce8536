package quant

import "github.com/hipgo/hipgo/model/internal/cpuid"

// The assembly kernels take whole blocks (nb >= 1); DotRow has validated
// the row's size against len(x).

//go:noescape
func dotQ8_0AVX2(row *byte, x *float32, nb int) float32

//go:noescape
func dotQ4_0AVX2(row *byte, x *float32, nb int) float32

//go:noescape
func dotQ4_1AVX2(row *byte, x *float32, nb int) float32

//go:noescape
func dotQ5_0AVX2(row *byte, x *float32, nb int) float32

//go:noescape
func dotQ5_1AVX2(row *byte, x *float32, nb int) float32

//go:noescape
func dotQ4_KAVX2(row *byte, x *float32, nb int) float32

//go:noescape
func dotQ5_KAVX2(row *byte, x *float32, nb int) float32

//go:noescape
func dotQ6_KAVX2(row *byte, x *float32, nb int) float32

//go:noescape
func dotF16AVX2(row *byte, x *float32, n int) float32

//go:noescape
func dequantQ8_0AVX2(src *byte, dst *float32, nb int)

//go:noescape
func dequantQ4_0AVX2(src *byte, dst *float32, nb int)

//go:noescape
func dequantQ4_1AVX2(src *byte, dst *float32, nb int)

//go:noescape
func dequantQ5_0AVX2(src *byte, dst *float32, nb int)

//go:noescape
func dequantQ5_1AVX2(src *byte, dst *float32, nb int)

//go:noescape
func dequantQ4_KAVX2(src *byte, dst *float32, nb int)

//go:noescape
func dequantQ5_KAVX2(src *byte, dst *float32, nb int)

//go:noescape
func dequantQ6_KAVX2(src *byte, dst *float32, nb int)

//go:noescape
func dequantF16AVX2(src *byte, dst *float32, n int)

// dequantF16Asm widens the multiple of 8 with VCVTPH2PS and the tail here.
// VCVTPH2PS is exact, except that it quiets a signalling NaN (the
// reference keeps the payload bit): no weight is a signalling NaN.
func dequantF16Asm(src []byte, dst []float32) {
	m := len(dst) &^ 7
	if m > 0 {
		dequantF16AVX2(&src[0], &dst[0], m)
	}
	for i := m; i < len(dst); i++ {
		dst[i] = f16at(src[2*i:])
	}
}

// dotF16Asm runs the kernel on the multiple of 8 and sums the tail here.
func dotF16Asm(row []byte, x []float32) float32 {
	m := len(x) &^ 7
	var s float32
	if m > 0 {
		s = dotF16AVX2(&row[0], &x[0], m)
	}
	for i := m; i < len(x); i++ {
		s += x[i] * f16at(row[2*i:])
	}
	return s
}

func init() {
	if !cpuid.F16C() {
		return
	}
	avx2 := generic
	avx2.dot[Q8_0] = func(row []byte, x []float32) float32 { return dotQ8_0AVX2(&row[0], &x[0], len(x)/32) }
	avx2.dot[Q4_0] = func(row []byte, x []float32) float32 { return dotQ4_0AVX2(&row[0], &x[0], len(x)/32) }
	avx2.dot[Q4_1] = func(row []byte, x []float32) float32 { return dotQ4_1AVX2(&row[0], &x[0], len(x)/32) }
	avx2.dot[Q5_0] = func(row []byte, x []float32) float32 { return dotQ5_0AVX2(&row[0], &x[0], len(x)/32) }
	avx2.dot[Q5_1] = func(row []byte, x []float32) float32 { return dotQ5_1AVX2(&row[0], &x[0], len(x)/32) }
	avx2.dot[Q4_K] = func(row []byte, x []float32) float32 { return dotQ4_KAVX2(&row[0], &x[0], len(x)/qk) }
	avx2.dot[Q5_K] = func(row []byte, x []float32) float32 { return dotQ5_KAVX2(&row[0], &x[0], len(x)/qk) }
	avx2.dot[Q6_K] = func(row []byte, x []float32) float32 { return dotQ6_KAVX2(&row[0], &x[0], len(x)/qk) }
	avx2.dot[F16] = dotF16Asm
	avx2.dequant[Q8_0] = func(src []byte, dst []float32) { dequantQ8_0AVX2(&src[0], &dst[0], len(dst)/32) }
	avx2.dequant[Q4_0] = func(src []byte, dst []float32) { dequantQ4_0AVX2(&src[0], &dst[0], len(dst)/32) }
	avx2.dequant[Q4_1] = func(src []byte, dst []float32) { dequantQ4_1AVX2(&src[0], &dst[0], len(dst)/32) }
	avx2.dequant[Q5_0] = func(src []byte, dst []float32) { dequantQ5_0AVX2(&src[0], &dst[0], len(dst)/32) }
	avx2.dequant[Q5_1] = func(src []byte, dst []float32) { dequantQ5_1AVX2(&src[0], &dst[0], len(dst)/32) }
	avx2.dequant[Q4_K] = func(src []byte, dst []float32) { dequantQ4_KAVX2(&src[0], &dst[0], len(dst)/qk) }
	avx2.dequant[Q5_K] = func(src []byte, dst []float32) { dequantQ5_KAVX2(&src[0], &dst[0], len(dst)/qk) }
	avx2.dequant[Q6_K] = func(src []byte, dst []float32) { dequantQ6_KAVX2(&src[0], &dst[0], len(dst)/qk) }
	avx2.dequant[F16] = dequantF16Asm
	// cpu's two amd64 sets differ only in a software prefetch of float
	// weights; the quantized kernels are the same in both.
	variants["avx2"] = avx2
	variants["avx2-prefetch"] = avx2
	kern, kernName = avx2, "avx2"
}
