package hostkern

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/stretchr/testify/require"
)

// The fused decode kernels (rmsnorm_matmul_W, rmsnorm_matmul_silu_W,
// rope_kv_store_f32) promise the bytes of the unfused launches they
// replace. Each test runs the fused launch and the unfused sequence on
// every source, on copies of the same buffers, and requires: the same
// bytes from both ways on each source, the same bytes from both sources,
// and (through the unfused kernels' own tests, and a check here) agreement
// with the CPU ops.

// runSeqs runs each sequence of launches on every source (each sequence on
// its own copies of the buffers) and returns outs[source][seq][j], the copy
// of want[j] after that sequence.
func runSeqs(t *testing.T, seqs [][]Launch, want ...*Buf) [][][]*Buf {
	t.Helper()
	outs := make([][][]*Buf, len(sources))
	for i, s := range sources {
		for _, seq := range seqs {
			bufs := map[*Buf]*Buf{}
			var ls []Launch
			for _, l := range seq {
				ls = append(ls, cloneLaunch(l, bufs))
			}
			require.NoError(t, s.driver(t).Run(context.Background(), ls...), s.name)
			var got []*Buf
			for _, w := range want {
				c, ok := bufs[w]
				require.True(t, ok, "a wanted buffer is an argument of every sequence")
				got = append(got, c)
			}
			outs[i] = append(outs[i], got)
		}
	}
	return outs
}

// requireSameBytes: on every source, every sequence left each wanted buffer
// as the first sequence did; with across, every source as the first source.
func requireSameBytes(t *testing.T, outs [][][]*Buf, across bool, what string) {
	t.Helper()
	for i, s := range sources {
		for q := 1; q < len(outs[i]); q++ {
			for j := range outs[i][q] {
				require.Truef(t, bytes.Equal(outs[i][0][j].Data, outs[i][q][j].Data), "%s: %s: fused and unfused differ (buffer %d)", s.name, what, j)
			}
		}
		if across && i > 0 {
			for j := range outs[i][0] {
				require.Truef(t, bytes.Equal(outs[0][0][j].Data, outs[i][0][j].Data), "%s: %s wrote other bytes than %s (buffer %d)", what, s.name, sources[0].name, j)
			}
		}
	}
}

func matvecGrid(rows, out int) int { return ceilDiv(out, 8) * ceilDiv(rows, 8) }

// TestRMSNormMatMul: rmsnorm_matmul_W equals rmsnorm_W then matmul_W's
// matvec path bit for bit, on awkward shapes: in not a multiple of 8 (the
// scalar path), in above rmsnorm's register-cached 4096, odd out, rows
// across two 8-row tiles, bias and accumulate; and it is within matmul's
// error bound of the CPU's rmsnorm then matmul. With x off 16-byte
// alignment forward.cu takes the scalar path (the MSL port the vector one):
// then the fused kernel is checked against the CPU only.
func TestRMSNormMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	type shape struct{ rows, in, out int }
	shapes := []shape{{1, 2048, 40}, {1, 64, 48}, {1, 13, 29}, {3, 1000, 67}, {8, 96, 17}, {9, 40, 33},
		{1, 4104, 9}, {5, 1040, 24}, {2, 16, 5003}, {1, 576, 93}, {16, 72, 31}, {1, 4099, 5}}
	for _, dtype := range []string{"f32", "bf16", "f16"} {
		for i, s := range shapes {
			bias, acc := i%3 == 1, i%2 == 1
			shift := 0
			if i == 5 || i == 10 {
				shift = 4
			}
			t.Run(fmt.Sprintf("%s/%dx%dx%d/bias=%v/acc=%v/shift=%d", dtype, s.rows, s.in, s.out, bias, acc, shift), func(t *testing.T) {
				checkRMSNormMatMul(t, rng, dtype, s.rows, s.in, s.out, bias, acc, shift)
			})
		}
	}
}

func checkRMSNormMatMul(t *testing.T, rng *rand.Rand, dtype string, rows, in, out int, bias, acc bool, shift int) {
	x := randF32(rng, rows*in, 2)
	nw := makeWeights(rng, dtype, in, 1) // the norm weight in W, as rmsnorm_W takes it; the fused kernel takes it widened
	nwf := F32s(nw.f32)
	w := makeWeights(rng, dtype, out*in, 0.1)
	y0 := randF32(rng, rows*out, 1)
	var b []float32
	var bArg Arg = Null{}
	if bias {
		b = randF32(rng, out, 1)
		bArg = F32s(b)
	}
	accU := U32(0)
	if acc {
		accU = 1
	}
	eps := float32(1e-5)
	xb, yb, xn := F32s(x), F32s(y0), F32s(make([]float32, rows*in))
	xb.Shift, yb.Shift = shift, shift
	fused := Launch{"rmsnorm_matmul_" + dtype, matvecGrid(rows, out), []Arg{yb, xb, nwf, w.buf, bArg, U32(rows), U32(in), U32(out), accU, F32(eps)}}
	norm := Launch{"rmsnorm_" + dtype, rows, []Arg{xn, xb, nw.buf, U32(rows), U32(in), F32(eps)}}
	mm := Launch{"matmul_" + dtype, matvecGrid(rows, out), []Arg{yb, xn, w.buf, bArg, U32(rows), U32(in), U32(out), accU}}
	seqs := [][]Launch{{fused}}
	if shift == 0 {
		seqs = append(seqs, []Launch{norm, mm})
	}
	outs := runSeqs(t, seqs, yb)
	requireSameBytes(t, outs, shift == 0 || in%8 != 0, "rmsnorm_matmul_"+dtype)

	// The CPU: rmsnorm, then the exact product over its output; the bound is
	// matmul's (checkMatMul) plus the normalized inputs' 1e-6 relative
	// (TestRMSNorm).
	m := cpu.Matrix{Rows: out, Cols: in}
	if w.bf16 != nil {
		m.BF16 = w.bf16
	} else {
		m.F32 = w.f32
	}
	gamma := float64(in+2) * u32 / (1 - float64(in+2)*u32)
	for i, s := range sources {
		got := outs[i][0][0].Floats()
		worst := 0.0
		for r := range rows {
			xr := make([]float32, in)
			cpu.RMSNorm(xr, x[r*in:(r+1)*in], nw.f32, eps)
			for o := range out {
				var sum, mag float64
				for k := range in {
					p := float64(xr[k]) * float64(w.f32[o*in+k])
					sum += p
					mag += math.Abs(p)
				}
				if bias {
					sum += float64(b[o])
					mag += math.Abs(float64(b[o]))
				}
				if acc {
					sum += float64(y0[r*out+o])
					mag += math.Abs(float64(y0[r*out+o]))
				}
				tol := (gamma+1e-6)*mag + 1e-30
				g := float64(got[r*out+o])
				require.LessOrEqualf(t, math.Abs(g-sum), tol, "%s: row %d out %d: kernel %v, cpu %v", s.name, r, o, g, sum)
				worst = max(worst, math.Abs(g-sum)/tol)
			}
		}
		t.Logf("%s: worst |kernel-cpu| / bound = %.3f", s.name, worst)
	}
}

// TestRMSNormMatMulSiLU: rmsnorm_matmul_silu_W equals rmsnorm_W, matmul_W
// (gate|up) and silu_mul_f32 bit for bit: inter not a multiple of the
// block's 4 columns, rows across two tiles, the scalar path, bias, and
// weights large enough that exp(-g) overflows and underflows.
func TestRMSNormMatMulSiLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	type shape struct {
		rows, in, inter int
		wscale          float64
	}
	shapes := []shape{{1, 2048, 40, 0.1}, {1, 64, 8, 0.1}, {3, 96, 13, 0.1}, {8, 40, 5, 0.5}, {9, 1000, 7, 0.1},
		{1, 13, 6, 0.5}, {1, 2048, 11, 4}, {2, 4112, 3, 0.05}}
	for _, dtype := range []string{"f32", "bf16", "f16"} {
		for i, s := range shapes {
			bias := i%2 == 1
			t.Run(fmt.Sprintf("%s/%dx%dx%d/bias=%v", dtype, s.rows, s.in, s.inter, bias), func(t *testing.T) {
				checkRMSNormMatMulSiLU(t, rng, dtype, s.rows, s.in, s.inter, s.wscale, bias)
			})
		}
	}
}

func checkRMSNormMatMulSiLU(t *testing.T, rng *rand.Rand, dtype string, rows, in, inter int, wscale float64, bias bool) {
	x := randF32(rng, rows*in, 2)
	nw := makeWeights(rng, dtype, in, 1)
	nwf := F32s(nw.f32)
	w := makeWeights(rng, dtype, 2*inter*in, wscale)
	var b []float32
	var bArg Arg = Null{}
	if bias {
		b = randF32(rng, 2*inter, 1)
		bArg = F32s(b)
	}
	eps := float32(1e-6)
	xb := F32s(x)
	act := F32s(randF32(rng, rows*inter, 1))
	xn, gu := F32s(make([]float32, rows*in)), F32s(make([]float32, rows*2*inter))
	fused := Launch{"rmsnorm_matmul_silu_" + dtype, ceilDiv(inter, 4) * ceilDiv(rows, 8), []Arg{act, xb, nwf, w.buf, bArg, U32(rows), U32(in), U32(inter), F32(eps)}}
	unfused := []Launch{
		{"rmsnorm_" + dtype, rows, []Arg{xn, xb, nw.buf, U32(rows), U32(in), F32(eps)}},
		{"matmul_" + dtype, matvecGrid(rows, 2*inter), []Arg{gu, xn, w.buf, bArg, U32(rows), U32(in), U32(2 * inter), U32(0)}},
		{"silu_mul_f32", ceilDiv(rows*inter, 256), []Arg{act, gu, U32(rows), U32(inter)}},
	}
	outs := runSeqs(t, [][]Launch{{fused}, unfused}, act)
	requireSameBytes(t, outs, true, "rmsnorm_matmul_silu_"+dtype)

	// The CPU: rmsnorm, gate|up product, SwiGLU. g and u agree to within
	// matmul's bound (eg, eu) twice over (kernel and CPU each against the
	// exact sum); |silu'| <= 1.1 and |silu(g)| <= |g|, so silu(g)*u moves by
	// at most 1.1 eg (|u|+eu) + eu (|g|+eg), plus a few ulp of rounding.
	m := cpu.Matrix{Rows: 2 * inter, Cols: in}
	if w.bf16 != nil {
		m.BF16 = w.bf16
	} else {
		m.F32 = w.f32
	}
	gamma := float64(in+2) * u32 / (1 - float64(in+2)*u32)
	ref := make([]float32, 2*inter)
	want := make([]float32, inter)
	for i, s := range sources {
		got := outs[i][0][0].Floats()
		for r := range rows {
			xr := make([]float32, in)
			cpu.RMSNorm(xr, x[r*in:(r+1)*in], nw.f32, eps)
			cpu.NewPool(1).MatMul(ref, xr, 1, &m, b)
			cpu.SwiGLU(want, ref[:inter], ref[inter:])
			for c := range inter {
				var mg, mu float64
				for k := range in {
					mg += math.Abs(float64(xr[k]) * float64(w.f32[c*in+k]))
					mu += math.Abs(float64(xr[k]) * float64(w.f32[(inter+c)*in+k]))
				}
				if bias {
					mg += math.Abs(float64(b[c]))
					mu += math.Abs(float64(b[inter+c]))
				}
				e := 2 * (gamma + 1e-6)
				g, u := math.Abs(float64(ref[c])), math.Abs(float64(ref[inter+c]))
				eg, eu := e*mg, e*mu
				tol := 1.1*eg*(u+eu) + eu*(g+eg) + 8*u32*math.Abs(float64(want[c])) + 1e-30
				require.LessOrEqualf(t, math.Abs(float64(got[r*inter+c]-want[c])), tol, "%s: row %d col %d: kernel %v, cpu %v", s.name, r, c, got[r*inter+c], want[c])
			}
		}
	}
}

// TestRoPEKVStore: rope_kv_store_f32 equals rope_f32 of the q and k heads
// then kv_store_f32 bit for bit (the qkv rows and both caches): GQA and
// MHA, an odd head_dim (its last element is stored unrotated), rows with a
// gap past v, and out-of-range slots (rotated, not stored).
func TestRoPEKVStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, c := range []struct{ heads, kvHeads, headdim, extra int }{{4, 2, 64, 0}, {3, 1, 10, 5}, {6, 2, 7, 1}, {2, 2, 128, 3}, {32, 8, 64, 0}} {
		t.Run(fmt.Sprintf("h%d/kv%d/d%d", c.heads, c.kvHeads, c.headdim), func(t *testing.T) {
			half, kvD := c.headdim/2, c.kvHeads*c.headdim
			inv := make([]float32, max(half, 1))
			for i := range half {
				inv[i] = float32(1 / math.Pow(500000, float64(2*i)/float64(c.headdim)))
			}
			pos := []uint32{0, 1, 17, 1000, 131071, 77777}
			const numSlots = 40
			slots := []uint32{3, 39, 40, 17, 1 << 30, 0}
			T := len(pos)
			stride := (c.heads+2*c.kvHeads)*c.headdim + c.extra
			qkv := F32s(randF32(rng, T*stride, 1))
			kc, vc := F32s(randF32(rng, numSlots*kvD, 1)), F32s(randF32(rng, numSlots*kvD, 1))
			kOff, vOff := c.heads*c.headdim, (c.heads+c.kvHeads)*c.headdim
			fused := Launch{"rope_kv_store_f32", T, []Arg{qkv, kc, vc, U32s(pos), F32s(inv), U32s(slots), U32(T), U32(c.heads), U32(c.kvHeads), U32(c.headdim), U32(stride), U32(numSlots)}}
			ps, ss := U32s(pos), U32s(slots)
			unfused := []Launch{
				{"rope_f32", T, []Arg{qkv, ps, F32s(inv), U32(T), U32(c.heads + c.kvHeads), U32(c.headdim), U32(stride)}},
				{"kv_store_f32", T, []Arg{kc, vc, qkv, ss, U32(T), U32(kvD), U32(kOff), U32(vOff), U32(stride), U32(numSlots)}},
			}
			outs := runSeqs(t, [][]Launch{{fused}, unfused}, qkv, kc, vc)
			requireSameBytes(t, outs, true, "rope_kv_store_f32")
			// It did something: slot 3's k row is token 0's rotated k.
			q := outs[0][0][0].Floats()
			require.Equal(t, q[kOff:kOff+kvD], outs[0][0][1].Floats()[3*kvD:4*kvD])
		})
	}
}
