package cpu

import "github.com/hipgo/hipgo/model/internal/cpuid"

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func dotBF16AVX2(x *float32, w *uint16, n int) float32

//go:noescape
func dotAVX2PF(a, b *float32, n int) float32

//go:noescape
func dotBF16AVX2PF(x *float32, w *uint16, n int) float32

//go:noescape
func dot4AVX2(w, x *float32, n, stride int, out *[4]float32)

//go:noescape
func widenBF16AVX2(dst *float32, src *uint16, n int)

//go:noescape
func dot4BF16AVX2(w *uint16, x *float32, n, stride int, out *[4]float32)

//go:noescape
func weightedRows64AVX2(o, p, v *float32, n, stride int)

//go:noescape
func weightedRows8AVX2(o, p, v *float32, n, stride int)

//go:noescape
func expShiftAVX2(dst, src *float32, n int, shift float32)

//go:noescape
func swigluAVX2(out, gate, up *float32, n int)

//go:noescape
func gemm6x16AVX2(xt, w *float32, k, ldw int, acc *[gemmJ * gemmT]float32)

func init() {
	if !cpuid.AVX2FMA() {
		return
	}
	// Besides speed, the assembly keeps -race's per-element checks out of
	// the CPU references' bf16 prefill products.
	widenBF16 = widenBF16Asm
	weightedRows = weightedRowsAsm
	expShift, swiglu = expShiftAsm, swigluAsm
	variants["avx2"] = kernels{dot: dotAsm, dotBF16: dotBF16Asm, dot4: dot4Asm, gemm: gemmAsm, dot4BF16: dot4BF16Asm}
	variants["avx2-prefetch"] = kernels{dot: dotAsmPF, dotBF16: dotBF16AsmPF, dot4: dot4Asm, gemm: gemmAsm, dot4BF16: dot4BF16Asm}
	// The products of several inputs as they were before the tile kernel
	// and dot4BF16 (dot4 over widened rows), to measure them side by side.
	variants["avx2-rows"] = kernels{dot: dotAsm, dotBF16: dotBF16Asm, dot4: dot4Asm, quant: "avx2"}
	// Decode streams every weight once per token from memory. A software
	// prefetch 1 KB ahead raised single-core bandwidth, and decode with it,
	// on the Intel Xeon we measured but lowered it on an AMD EPYC, whose
	// hardware prefetchers already keep up; so it is chosen by vendor.
	name := "avx2"
	if cpuid.Intel() {
		name = "avx2-prefetch"
	}
	_ = SetKernels(name)
}

func dotAsmPF(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	m := n &^ 7
	var s float32
	if m > 0 {
		s = dotAVX2PF(&a[0], &b[0], m)
	}
	for i := m; i < n; i++ {
		s += a[i] * b[i]
	}
	return s
}

func dotBF16AsmPF(x []float32, w []uint16) float32 {
	n := len(x)
	w = w[:n]
	m := n &^ 7
	var s float32
	if m > 0 {
		s = dotBF16AVX2PF(&x[0], &w[0], m)
	}
	for i := m; i < n; i++ {
		s += x[i] * bf16(w[i])
	}
	return s
}

// The assembly kernels take multiples of 8 elements; the tails are summed here.

func dotAsm(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	m := n &^ 7
	var s float32
	if m > 0 {
		s = dotAVX2(&a[0], &b[0], m)
	}
	for i := m; i < n; i++ {
		s += a[i] * b[i]
	}
	return s
}

func dotBF16Asm(x []float32, w []uint16) float32 {
	n := len(x)
	w = w[:n]
	m := n &^ 7
	var s float32
	if m > 0 {
		s = dotBF16AVX2(&x[0], &w[0], m)
	}
	for i := m; i < n; i++ {
		s += x[i] * bf16(w[i])
	}
	return s
}

func dot4Asm(w, x []float32, stride int, out *[4]float32) {
	n := len(w)
	_ = x[3*stride+n-1] // the fourth row must be in bounds
	m := n &^ 7
	if m > 0 {
		dot4AVX2(&w[0], &x[0], m, stride, out)
	} else {
		*out = [4]float32{}
	}
	for i := m; i < n; i++ {
		for r := range 4 {
			out[r] += w[i] * x[r*stride+i]
		}
	}
}

func dot4BF16Asm(w []uint16, x []float32, stride int, out *[4]float32) {
	n := len(w)
	_ = x[3*stride+n-1] // the fourth row must be in bounds
	m := n &^ 7
	if m > 0 {
		dot4BF16AVX2(&w[0], &x[0], m, stride, out)
	} else {
		*out = [4]float32{}
	}
	for i := m; i < n; i++ {
		for r := range 4 {
			out[r] += bf16(w[i]) * x[r*stride+i]
		}
	}
}

// gemmAsm checks the extents gemm6x16AVX2 reads: k values of each of the
// gemmJ rows ldw apart, and k columns of the tile.
func gemmAsm(xt, w []float32, k, ldw int, acc *[gemmJ * gemmT]float32) {
	if k <= 0 {
		*acc = [gemmJ * gemmT]float32{}
		return
	}
	_ = xt[k*gemmT-1]
	_ = w[(gemmJ-1)*ldw+k-1]
	gemm6x16AVX2(&xt[0], &w[0], k, ldw, acc)
}

// weightedRowsAsm runs the 64-column kernel, then the 8-column one, over
// o; WeightedRows has checked v's extent. Columns past the last 8 are
// summed in Go.
func weightedRowsAsm(o, p, v []float32, stride int) {
	c := 0
	for ; c+64 <= len(o); c += 64 {
		weightedRows64AVX2(&o[c], &p[0], &v[c], len(p), stride)
	}
	for ; c+8 <= len(o); c += 8 {
		weightedRows8AVX2(&o[c], &p[0], &v[c], len(p), stride)
	}
	weightedColumns(o, p, v, stride, c)
}

// The exp kernels take multiples of 4 elements; the Go loops do the rest.

func expShiftAsm(dst, src []float32, shift float32) {
	n := len(dst)
	src = src[:n]
	m := n &^ 3
	if m > 0 {
		expShiftAVX2(&dst[0], &src[0], m, shift)
	}
	expShiftGeneric(dst[m:], src[m:], shift)
}

func swigluAsm(out, gate, up []float32) {
	n := len(out)
	gate, up = gate[:n], up[:n]
	m := n &^ 3
	if m > 0 {
		swigluAVX2(&out[0], &gate[0], &up[0], m)
	}
	swigluGeneric(out[m:], gate[m:], up[m:])
}

func widenBF16Asm(dst []float32, src []uint16) {
	n := len(dst)
	src = src[:n]
	m := n &^ 7
	if m > 0 {
		widenBF16AVX2(&dst[0], &src[0], m)
	}
	for i := m; i < n; i++ {
		dst[i] = bf16(src[i])
	}
}
