package hostkern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// tcGrid is matmul_tc_W's grid (forward.cu): below 64 rows 32-row x
// 16-output tiles (out < 16384) or 32 x 64; 128 x 64 from 64 rows.
func tcGrid(rows, out int) int {
	if rows < 64 {
		if out < 16384 {
			return ceilDiv(rows, 32) * ceilDiv(out, 16)
		}
		return ceilDiv(rows, 32) * ceilDiv(out, 64)
	}
	return ceilDiv(rows, 128) * ceilDiv(out, 64)
}

// tcSplit is the hi/lo split's error for weights of dtype: |x - hi - lo|
// <= rel*|x| + abs. hi = RN(x) errs by at most u|x| and lo = RN(x - hi) by
// at most u|x - hi| <= u^2|x|, with u the unit roundoff of the 16-bit
// type (bf16: 8-bit significand, u = 2^-8; f16: 11 bits, u = 2^-11); an
// f16 lo in the subnormal range errs by at most half its step, 2^-25.
func tcSplit(dtype string) (rel, abs float64) {
	if dtype == "bf16" {
		return 0x1p-16, 0
	}
	return 0x1p-22, 0x1p-25
}

// checkMatMulTC runs matmul_tc_<dtype> on random data and holds each output
// to the exact (float64) product over the kernel's own inputs: the split
// costs rel*sum|x w| + abs*sum|w| (above); every product of two 16-bit
// values is exact in f32, so the rest is f32 summation of the 2*in hi and
// lo products, the partial sums of the slices of in (at most 8), bias and
// y: gamma(2*in + 8) * (the sum of the terms' magnitudes, at most
// (1 + 2^-7) sum|x w| + |bias| + |y|). cpu.MatMul is held to the same
// bound, and the kernel to twice it against cpu.MatMul.
func checkMatMulTC(t *testing.T, rng *rand.Rand, dtype string, rows, in, out int, bias, acc bool, shift int) {
	mi := newMatMulInputs(rng, dtype, rows, in, out, bias, acc, shift)
	x, w, y0, b, ref := mi.x, mi.w, mi.y0, mi.b, mi.ref
	// The MSL port sums in forward.cu's fragment order: the same bytes.
	outs := runAll(t, Launch{"matmul_tc_" + dtype, tcGrid(rows, out), mi.args}, true, mi.y)
	rel, abs := tcSplit(dtype)
	gamma := float64(2*in+8) * u32 / (1 - float64(2*in+8)*u32)
	each(t, outs, func(t *testing.T, ob []*Buf) {
		requireMatMulTC(t, ob[0].Floats(), x, w, y0, b, ref, rows, in, out, bias, acc, rel, abs, gamma)
	})
}

func requireMatMulTC(t *testing.T, got, x []float32, w wdata, y0, b, ref []float32, rows, in, out int, bias, acc bool, rel, abs, gamma float64) {
	worst := 0.0
	for r := range rows {
		for o := range out {
			var sum, mag, wsum float64
			for k := range in {
				p := float64(x[r*in+k]) * float64(w.f32[o*in+k])
				sum += p
				mag += math.Abs(p)
				wsum += math.Abs(float64(w.f32[o*in+k]))
			}
			split := rel*mag + abs*wsum
			terms := (1 + 0x1p-7) * mag
			if bias {
				sum += float64(b[o])
				terms += math.Abs(float64(b[o]))
			}
			cpuv := float64(ref[r*out+o])
			if acc {
				sum += float64(y0[r*out+o])
				terms += math.Abs(float64(y0[r*out+o]))
				cpuv += float64(y0[r*out+o])
			}
			tol := split + gamma*terms + 1e-30
			g := float64(got[r*out+o])
			requireProduct(t, r, o, g, cpuv, sum, tol)
			worst = max(worst, math.Abs(g-sum)/tol)
		}
	}
	t.Logf("worst |kernel-exact| / bound = %.3f", worst)
}

// TestMatMulTC checks matmul_tc_bf16/_f16 through the host emulation of
// their MMA fragments on all three tiles (rows < 64: 32 x 16 tiles with in
// split over 8 warps, or from 16384 outputs 32 x 64 with in split over 4;
// rows >= 64: 128 x 64 tiles), partial row, output and in
// chunks (in 80: a half chunk; 77: the scalar path, in not a multiple of
// 8; shift 4: x and y off 16-byte alignment, the scalar path too), with and
// without bias and accumulate.
func TestMatMulTC(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	type shape struct{ rows, in, out int }
	shapes := []shape{
		{1, 64, 8}, {15, 80, 100}, {16, 576, 8}, {33, 64, 100}, {64, 80, 8},
		{130, 64, 100}, {16, 2048, 100}, {1, 576, 576}, {15, 77, 33}, {33, 80, 576}, {64, 2048, 8},
		{130, 576, 100}, {64, 576, 576}, {17, 40, 16392},
	}
	for _, dtype := range []string{"bf16", "f16"} {
		for i, s := range shapes {
			bias := i%3 == 1
			acc := i%2 == 1
			shift := 0
			if i%4 == 3 {
				shift = 4
			}
			name := fmt.Sprintf("%s/%dx%dx%d/bias=%v/acc=%v/shift=%d", dtype, s.rows, s.in, s.out, bias, acc, shift)
			t.Run(name, func(t *testing.T) {
				checkMatMulTC(t, rng, dtype, s.rows, s.in, s.out, bias, acc, shift)
			})
		}
	}
}

// TestMatMulTCKeepsTheActivationsLowBits: x = 1 + 3*2^-10 (bf16) or
// 1 + 3*2^-13 (f16) in every element, against positive weights: the 16-bit
// rounding of x is 1 (an error of 2.9e-3 resp. 3.7e-4 relative, of one sign
// in every product), while x - 1 is exactly a 16-bit value. With the lo
// MMA the result is exact up to f32 summation; a kernel that fed only the
// rounded activations (one MMA) would be off by 2.9e-3 resp. 3.7e-4 of the
// sum, more than 10 times the bound checked here.
func TestMatMulTCKeepsTheActivationsLowBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, c := range []struct {
		dtype string
		x     float32
	}{{"bf16", 1 + 3.0/1024}, {"f16", 1 + 3.0/8192}} {
		t.Run(c.dtype, func(t *testing.T) {
			const rows, in, out = 40, 96, 24
			x := make([]float32, rows*in)
			for i := range x {
				x[i] = c.x
			}
			w := positive(makeWeights(rng, c.dtype, out*in, 0.1))
			yb := F32s(make([]float32, rows*out))
			outs := runAll(t, Launch{"matmul_tc_" + c.dtype, tcGrid(rows, out), []Arg{yb, F32s(x), w.buf, Null{}, U32(rows), U32(in), U32(out), U32(0)}}, true, yb)
			got := outs[0][0].Floats() // the MSL port's bytes are the same (runAll)
			worst, rounded := 0.0, 0.0
			for r := range rows {
				for o := range out {
					var sum, hiOnly float64
					for k := range in {
						sum += float64(c.x) * float64(w.f32[o*in+k])
						hiOnly += float64(w.f32[o*in+k]) // x rounded to the 16-bit type is 1
					}
					worst = max(worst, math.Abs(float64(got[r*out+o])-sum)/sum)
					rounded = max(rounded, math.Abs(hiOnly-sum)/sum)
				}
			}
			bound := float64(2*in+8) * u32 * (1 + 0x1p-7)
			t.Logf("worst relative error %.3g (bound %.3g); with x rounded to %s: %.3g", worst, bound, c.dtype, rounded)
			require.LessOrEqual(t, worst, bound)
			require.Greater(t, rounded, 10*bound, "the input must tell the split from a single MMA")
		})
	}
}

// positive re-encodes w with the magnitudes of its values (sign bit
// cleared: exact in both 16-bit types).
func positive(w wdata) wdata {
	h := make([]uint16, len(w.f32))
	v := make([]float32, len(w.f32))
	for i := range h {
		h[i] = (uint16(w.buf.Data[2*i]) | uint16(w.buf.Data[2*i+1])<<8) &^ 0x8000
		v[i] = float32(math.Abs(float64(w.f32[i])))
	}
	out := wdata{name: w.name, buf: U16s(h), f32: v}
	if w.bf16 != nil {
		out.bf16 = h
	}
	return out
}

// tcxGrid and tcxSplitGrid are matmul_tcx_W's and tc_split_x_W's grids
// (forward.cu): 32-row tiles of 8 (out <= 2048), 16 (below 16384) or 64
// outputs; one split thread per (16-row tile, 32-wide chunk, half, lane).
func tcxGrid(rows, out int) int {
	n := 64
	switch {
	case out <= 2048:
		n = 8
	case out < 16384:
		n = 16
	}
	return ceilDiv(rows, 32) * ceilDiv(out, n)
}

func tcxSplitGrid(rows, in int) int { return ceilDiv(ceilDiv(rows, 16)*ceilDiv(in, 32)*64, 256) }

// tcxSplitBytes is the size of tc_split_x_W's fragments of x [rows, in].
func tcxSplitBytes(rows, in int) int { return ceilDiv(rows, 16) * ceilDiv(in, 32) * 2048 }

// TestMatMulTCXWritesMatMulTCsBytes: tc_split_x_W then matmul_tcx_W (the
// backend's pair below 64 rows) write exactly the bytes matmul_tc_W writes
// on the same inputs (their tiles take in in the same slices and chunks,
// and the split fragments are the ones matmul_tc_W's warps make), on all
// three output tiles (out <= 2048, below 16384, from 16384), partial
// 16-row tiles, row tiles, output tiles and chunks, the scalar paths
// (in 77, shift 4), with and without bias and accumulate; and they hold
// matmul_tc_W's error bound against the exact product. The MSL ports give
// the same bytes (runSeq).
func TestMatMulTCXWritesMatMulTCsBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	type shape struct{ rows, in, out int }
	shapes := []shape{
		{16, 64, 8}, {17, 80, 100}, {32, 576, 24}, {33, 77, 100}, {63, 64, 2056}, {40, 40, 16392}, {1, 96, 8},
	}
	for _, dtype := range []string{"bf16", "f16"} {
		for i, s := range shapes {
			bias, acc, shift := i%3 == 1, i%2 == 1, 0
			if i%4 == 3 {
				shift = 4
			}
			t.Run(fmt.Sprintf("%s/%dx%dx%d/bias=%v/acc=%v/shift=%d", dtype, s.rows, s.in, s.out, bias, acc, shift), func(t *testing.T) {
				mi := newMatMulInputs(rng, dtype, s.rows, s.in, s.out, bias, acc, shift)
				tc := runAll(t, Launch{"matmul_tc_" + dtype, tcGrid(s.rows, s.out), mi.args}, true, mi.y)
				xs := F32s(make([]float32, ceilDiv(s.rows, 16)*ceilDiv(s.in, 32)*512))
				x := mi.args[1]
				args := append([]Arg{mi.y, xs}, mi.args[2:]...)
				outs := runSeq(t, []Launch{
					{"tc_split_x_" + dtype, tcxSplitGrid(s.rows, s.in), []Arg{xs, x, U32(s.rows), U32(s.in)}},
					{"matmul_tcx_" + dtype, tcxGrid(s.rows, s.out), args},
				}, true, mi.y)
				require.Equal(t, tc[0][0].Data, outs[0][0].Data, "matmul_tcx after tc_split_x against matmul_tc")
				rel, abs := tcSplit(dtype)
				gamma := float64(2*s.in+8) * u32 / (1 - float64(2*s.in+8)*u32)
				requireMatMulTC(t, outs[0][0].Floats(), mi.x, mi.w, mi.y0, mi.b, mi.ref, s.rows, s.in, s.out, bias, acc, rel, abs, gamma)
			})
		}
	}
}
