package cpu

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hipgo/hipgo/model/internal/quant"
	"github.com/stretchr/testify/require"
)

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func toBF16(v []float32) []uint16 {
	out := make([]uint16, len(v))
	for i, x := range v {
		out[i] = uint16(math.Float32bits(x) >> 16) // truncation: any bf16 value will do
	}
	return out
}

func dot64(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// sumAbs is the scale of a dot product's rounding error: float32
// accumulation of n terms errs by at most about n*eps*sum|a_i b_i|.
func sumAbs(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += math.Abs(float64(a[i]) * float64(b[i]))
	}
	return s
}

// TestDot proves both dot kernels (whichever implementation is active, and
// the generic one) match a float64 sum for lengths around every unrolling
// boundary, including zero, and for misaligned subslices.
func TestDot(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 576, 1000, 1536} {
		for _, off := range []int{0, 1, 3} {
			a := randVec(r, n+off)[off:]
			b := randVec(r, n+off)[off:]
			wb := toBF16(randVec(r, n+off))[off:]
			wf := make([]float32, n)
			BF16ToF32(wf, wb)
			want, tol := dot64(a, b), 1e-6*sumAbs(a, b)+1e-30
			require.InDelta(t, want, float64(Dot(a, b)), tol, "Dot n=%d off=%d", n, off)
			require.InDelta(t, want, float64(dotGeneric(a, b)), tol, "dotGeneric n=%d", n)
			want, tol = dot64(a, wf), 1e-6*sumAbs(a, wf)+1e-30
			require.InDelta(t, want, float64(DotBF16(a, wb)), tol, "DotBF16 n=%d off=%d", n, off)
			require.InDelta(t, want, float64(dotBF16Generic(a, wb)), tol, "dotBF16Generic n=%d", n)

			// dot4 against four rows of a strided block (stride > n, as in prefill tiles).
			stride := n + 5
			x := randVec(r, 3*stride+n)
			for name, f := range map[string]func([]float32, []float32, int, *[4]float32){"dot4": dot4, "dot4Generic": dot4Generic} {
				var o [4]float32
				f(a, x, stride, &o)
				for row := range 4 {
					xr := x[row*stride : row*stride+n]
					require.InDelta(t, dot64(a, xr), float64(o[row]), 1e-6*sumAbs(a, xr)+1e-30, "%s n=%d row=%d", name, n, row)
				}
			}
		}
	}
}

// TestMatMul proves the parallel product equals row-by-row float64 dot
// products plus bias, for one and many input rows (across the tileT
// boundary), float32 and bf16 weights, on a multi-worker pool.
func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	p := NewPool(3)
	for _, tc := range []struct{ rows, cols, T int }{{1, 5, 1}, {17, 33, 1}, {130, 64, 1}, {40, 24, 3}, {67, 40, 35}, {5, 8, 70}, {9, 13, 9}, {20, 3, 6}} {
		for _, bf := range []bool{false, true} {
			checkMatMul(t, r, p, tc.rows, tc.cols, tc.T, bf, "")
		}
	}
}

// checkMatMul runs p.MatMul on random rows x cols weights (bf16 when bf) and
// T input rows with a bias, and requires every output to equal the float64
// dot product plus bias within 1e-6 of the summed magnitudes.
func checkMatMul(t *testing.T, r *rand.Rand, p *Pool, rows, cols, T int, bf bool, label string) {
	t.Helper()
	wv := randVec(r, rows*cols)
	w := Matrix{Rows: rows, Cols: cols}
	if bf {
		w.BF16 = toBF16(wv)
		BF16ToF32(wv, w.BF16)
	} else {
		w.F32 = wv
	}
	x := randVec(r, T*cols)
	bias := randVec(r, rows)
	out := make([]float32, T*rows)
	p.MatMul(out, x, T, &w, bias)
	for tt := range T {
		xt := x[tt*cols : (tt+1)*cols]
		for j := range rows {
			row := wv[j*cols : (j+1)*cols]
			want := dot64(row, xt) + float64(bias[j])
			require.InDelta(t, want, float64(out[tt*rows+j]), 1e-6*(sumAbs(row, xt)+math.Abs(float64(bias[j]))),
				"%s rows=%d cols=%d T=%d bf16=%v t=%d j=%d", label, rows, cols, T, bf, tt, j)
		}
	}
}

// TestPoolCoversEachIndexOnce proves For and ForChunks visit [0,n) exactly
// once with chunk indices inside [0, chunks), for awkward splits.
func TestPoolCoversEachIndexOnce(t *testing.T) {
	p := NewPool(4)
	for _, tc := range []struct{ n, chunks, grain int }{{0, 4, 1}, {1, 4, 1}, {7, 4, 1}, {100, 16, 1}, {100, 3, 50}, {1000, 8, 16}, {5, 1, 1}} {
		hits := make([]int32, tc.n)
		p.ForChunks(tc.n, tc.chunks, tc.grain, func(c, lo, hi int) {
			require.GreaterOrEqual(t, c, 0)
			require.Less(t, c, max(1, tc.chunks))
			for i := lo; i < hi; i++ {
				atomic.AddInt32(&hits[i], 1)
			}
		})
		for i, h := range hits {
			require.Equal(t, int32(1), h, "%+v index %d", tc, i)
		}
	}
	require.Equal(t, 4, p.Workers())
	require.GreaterOrEqual(t, Shared().Workers(), 1)
}

// TestRMSNorm checks against x_i * w_i / sqrt(mean(x²)+eps) in float64.
func TestRMSNorm(t *testing.T) {
	x := []float32{1, -2, 3, 0.5}
	w := []float32{1, 0.5, 2, -1}
	eps := float32(1e-5)
	ms := (1.0 + 4 + 9 + 0.25) / 4
	inv := 1 / math.Sqrt(ms+1e-5)
	out := make([]float32, 4)
	RMSNorm(out, x, w, eps)
	for i := range x {
		require.InDelta(t, float64(x[i])*inv*float64(w[i]), float64(out[i]), 1e-6)
	}
	RMSNorm(x, x, w, eps) // in place
	require.Equal(t, out, x)
}

// TestRoPEHandCase checks the rotate_half convention on a case worked by
// hand: head_dim 4 pairs (x0,x2) and (x1,x3), not adjacent elements.
func TestRoPEHandCase(t *testing.T) {
	// Two heads; angles 90° for pair 0 and 180° for pair 1.
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	cos := []float32{0, -1}
	sin := []float32{1, 0}
	RoPE(x, 2, 4, cos, sin)
	// pair0: (1,3) rotated 90° -> (1*0-3*1, 3*0+1*1) = (-3, 1)
	// pair1: (2,4) rotated 180° -> (-2, -4)
	require.Equal(t, []float32{-3, -2, 1, -4, -7, -6, 5, -8}, x)
}

// TestSoftmaxAndSwiGLU check the definitions in float64.
func TestSoftmaxAndSwiGLU(t *testing.T) {
	x := []float32{1, 2, 3, -1000}
	Softmax(x)
	z := math.Exp(1) + math.Exp(2) + math.Exp(3)
	for i, v := range []float64{1, 2, 3} {
		require.InDelta(t, math.Exp(v)/z, float64(x[i]), 1e-7)
	}
	require.Zero(t, x[3])
	Softmax(nil)

	g := []float32{-3, 0, 0.5, 20}
	u := []float32{2, 5, -1, 0.25}
	out := make([]float32, 4)
	SwiGLU(out, g, u)
	for i := range g {
		gg := float64(g[i])
		require.InDelta(t, gg/(1+math.Exp(-gg))*float64(u[i]), float64(out[i]), 1e-6)
	}
}

// TestGeGLU proves GeGLU's GELU is PyTorch's tanh approximation
// (transformers' gelu_pytorch_tanh), not the exact erf GELU: the values are
// torch.nn.functional.gelu(x, approximate="tanh") in float32 (torch 2.15),
// times up.
func TestGeGLU(t *testing.T) {
	g := []float32{-6, -3, -1, -0.5, 0, 0.25, 1, 2.5, 8}
	torchTanh := []float32{-0.0, -0.0036374330520629883, -0.15880799293518066, -0.1542859971523285, 0.0,
		0.14967535436153412, 0.8411920070648193, 2.4849157333374023, 8.0}
	u := make([]float32, len(g))
	for i := range u {
		u[i] = float32(i) - 2.5
	}
	out := make([]float32, len(g))
	GeGLU(out, g, u)
	for i := range g {
		want := torchTanh[i] * u[i]
		require.InDelta(t, want, out[i], 2e-7*math.Max(1, math.Abs(float64(want))), "gelu(%g)*%g", g[i], u[i])
		exact := float64(g[i]) / 2 * (1 + math.Erf(float64(g[i])/math.Sqrt2)) * float64(u[i])
		if math.Abs(exact-float64(want)) > 1e-5 {
			require.Greater(t, math.Abs(exact-float64(out[i])), 1e-5, "gelu(%g) is the tanh approximation, not erf's", g[i])
		}
	}
}

// TestExp proves the fast exp is within 1 float32 ulp of math.Exp across its
// range, saturates to +Inf and 0 at the ends, and passes NaN through.
func TestExp(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	check := func(x float32) {
		want := float32(math.Exp(float64(x)))
		got := Exp(x)
		if want == 0 || math.IsInf(float64(want), 0) {
			require.Equal(t, want, got, "x=%g", x)
			return
		}
		ulp := math.Abs(float64(math.Nextafter32(want, float32(math.Inf(1))) - want))
		require.LessOrEqual(t, math.Abs(float64(got-want)), ulp, "x=%g", x)
	}
	for range 200000 {
		check(float32(r.Float64()*200 - 110))
	}
	for _, x := range []float32{0, -0, 1, -1, 88.7, 88.72, -87.3, -103.9, -104.5, 89, 1e-8, -1e-8} {
		check(x)
	}
	require.True(t, math.IsNaN(float64(Exp(float32(math.NaN())))))
}

// TestKernelVariants proves every selectable kernel variant computes the
// same products (float32 and bf16, one and many input rows, odd shapes).
func TestKernelVariants(t *testing.T) {
	defer func() { require.NoError(t, SetKernels(SIMD())) }()
	def := SIMD()
	r := rand.New(rand.NewPCG(7, 8))
	p := NewPool(2)
	for name := range variants {
		require.NoError(t, SetKernels(name))
		require.Equal(t, name, SIMD())
		for _, tc := range []struct{ rows, cols, T int }{{1, 5, 1}, {67, 40, 1}, {66, 37, 1}, {9, 13, 6}, {7, 40, 5}, {5, 51, 7}, {13, 37, 8}, {20, 9, 33}} {
			for _, bf := range []bool{false, true} {
				checkMatMul(t, r, p, tc.rows, tc.cols, tc.T, bf, name)
			}
		}
		wantQuant := name
		if name == "avx2-rows" {
			wantQuant = "avx2"
		}
		require.Equal(t, wantQuant, quant.Kernels(), "quant follows cpu")
		for _, typ := range []quant.Type{quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.Q8_0, quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.F16} {
			elems, _ := quant.BlockSize(typ)
			checkMatMulQuant(t, r, p, typ, 33, 3*max(elems, 32), 1)
			checkMatMulQuant(t, r, p, typ, 9, 3*max(elems, 32), 5)
			checkMatMulQuant(t, r, p, typ, 7, 3*max(elems, 32), 17)
		}
	}
	require.Error(t, SetKernels("nope"))
	require.NoError(t, SetKernels(def))
}

// TestPoolLimit proves a limited view never runs more of a loop's ranges at
// once than its limit, and a limit of one runs them all on the caller.
func TestPoolLimit(t *testing.T) {
	p := NewPool(4)
	for _, limit := range []int{1, 2} {
		v := p.WithLimit(limit)
		require.Equal(t, limit, v.Workers())
		var running, peak atomic.Int32
		v.ForChunks(64, 64, 1, func(_, _, _ int) {
			n := running.Add(1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			time.Sleep(50 * time.Microsecond) // long enough for helpers to overlap if they exist
			running.Add(-1)
		})
		require.LessOrEqual(t, peak.Load(), int32(limit))
	}
	require.Equal(t, 4, p.WithLimit(99).Workers())
}

// TestBF16ToF32EveryPattern: each of the 65536 bf16 values (NaN payloads,
// infinities, subnormals and signed zeros included) widens to the float32
// whose high half is its bits and low half zero, through the active loop
// and the generic one, at lengths around the assembly's 8-value steps and
// at an odd offset, and BF16ToF32 writes len(dst) values, no more.
func TestBF16ToF32EveryPattern(t *testing.T) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	for name, widen := range map[string]func([]float32, []uint16){"active": BF16ToF32, "generic": widenBF16Generic} {
		t.Run(name, func(t *testing.T) {
			dst := make([]float32, len(src)+1)
			dst[len(src)] = 7
			widen(dst[:len(src)], src)
			for i, v := range dst[:len(src)] {
				if math.Float32bits(v) != uint32(i)<<16 {
					require.Failf(t, "wrong widening", "bf16 %#04x: float32 bits %#08x, want %#08x", i, math.Float32bits(v), uint32(i)<<16)
				}
			}
			require.Equal(t, float32(7), dst[len(src)], "past len(dst)")
			widen(nil, src) // nothing to write
			for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 33} {
				for i := range dst[:n+2] {
					dst[i] = -1
				}
				widen(dst[1:1+n], src[0x3f80+3:])
				require.Equal(t, float32(-1), dst[0], "n %d: before dst", n)
				require.Equal(t, float32(-1), dst[1+n], "n %d: past len(dst)", n)
				for i, v := range dst[1 : 1+n] {
					require.Equal(t, uint32(0x3f80+3+i)<<16, math.Float32bits(v), "n %d, value %d", n, i)
				}
			}
		})
	}
}

// TestTileKernel proves the active set's tile kernel equals its Go
// definition to float32 rounding, over depths around its loop (0, 1, odd,
// long) and row strides wider than the depth; and that it reads only the
// extents it is given (the slices end exactly there).
func TestTileKernel(t *testing.T) {
	if gemm6x16 == nil {
		t.Skipf("kernel set %s has no tile kernel", SIMD())
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct{ k, ldw int }{{0, 0}, {1, 1}, {1, 7}, {7, 7}, {37, 40}, {576, 576}, {1000, 1003}} {
		xt := randVec(r, tc.k*gemmT)
		w := randVec(r, (gemmJ-1)*tc.ldw+tc.k)
		var got, want [gemmJ * gemmT]float32
		for i := range got {
			got[i] = float32(math.NaN()) // every output is written
		}
		gemm6x16(xt, w, tc.k, tc.ldw, &got)
		gemm6x16Generic(xt, w, tc.k, tc.ldw, &want)
		for i := range got {
			row, col := i/gemmT, i%gemmT
			var mag float64
			for kk := range tc.k {
				mag += math.Abs(float64(w[row*tc.ldw+kk]) * float64(xt[kk*gemmT+col]))
			}
			require.InDelta(t, want[i], got[i], 1e-6*mag, "k=%d ldw=%d row %d column %d", tc.k, tc.ldw, row, col)
		}
	}
}
