package hostkern

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/model/internal/cpu"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/stretchr/testify/require"
)

// source is one text of the forward kernels compiled for the host: the
// portable HIP/CUDA source (kernels/src/forward.cu) and its MSL port
// (kernels/src/forward.metal). Every test runs its launches on both and
// checks both against the CPU ops.
type source struct {
	name  string
	build func(clang, dir string) (*Driver, error)
	once  sync.Once
	d     *Driver
	err   error
}

var (
	sources  = []*source{{name: "cuda-hip", build: Build}, {name: "metal", build: BuildMetal}}
	qsources = []*source{{name: "cuda-hip", build: BuildQuant}, {name: "metal", build: BuildQuantMetal}}
	buildDir string // removed by TestMain
	dirOnce  sync.Once
	dirErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{buildDir} {
		if d != "" {
			_ = os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

// driver builds the source's host driver once per test binary.
func (s *source) driver(t *testing.T) *Driver {
	t.Helper()
	clang := testenv.LookPath(t, "clang++-19")
	dirOnce.Do(func() { buildDir, dirErr = os.MkdirTemp("", "hostkern") })
	require.NoError(t, dirErr)
	s.once.Do(func() {
		dir := filepath.Join(buildDir, s.name) // one per source: the drivers' file names differ by module
		if s.err = os.MkdirAll(dir, 0o755); s.err == nil {
			s.d, s.err = s.build(clang, dir)
		}
	})
	require.NoError(t, s.err, s.name)
	return s.d
}

// cloneLaunch copies l with fresh copies of its buffers (views follow their
// buffer); bufs maps each original to its copy.
func cloneLaunch(l Launch, bufs map[*Buf]*Buf) Launch {
	cp := func(b *Buf) *Buf {
		c, ok := bufs[b]
		if !ok {
			c = &Buf{Data: append([]byte(nil), b.Data...), Shift: b.Shift}
			bufs[b] = c
		}
		return c
	}
	out := Launch{Kernel: l.Kernel, Grid: l.Grid, Args: make([]Arg, len(l.Args))}
	for i, a := range l.Args {
		switch a := a.(type) {
		case *Buf:
			out.Args[i] = cp(a)
		case View:
			out.Args[i] = View{B: cp(a.B), Off: a.Off}
		default:
			out.Args[i] = a
		}
	}
	return out
}

// runAll runs l on every source's driver, each on its own copy of l's
// buffers, and returns each source's copies of want (outs[i][j] is source
// i's want[j]). With exact set it also requires every source to leave
// every buffer byte for byte as the first (forward.cu) does: the MSL port
// does the same arithmetic in the same order, so only a port bug (or a
// path the port takes differently, which the caller says) makes them
// differ.
func runAll(t *testing.T, l Launch, exact bool, want ...*Buf) [][]*Buf {
	t.Helper()
	return runOn(t, sources, l, exact, want...)
}

// runOn is runAll over srcs (sources, or qsources for the quantized
// kernels; both list the HIP/CUDA text first, then the MSL port).
func runOn(t *testing.T, srcs []*source, l Launch, exact bool, want ...*Buf) [][]*Buf {
	t.Helper()
	return runSeqOn(t, srcs, []Launch{l}, exact, want...)
}

// runSeq is runAll over launches run in order in one driver process each
// (a buffer one writes is the next one's input).
func runSeq(t *testing.T, ls []Launch, exact bool, want ...*Buf) [][]*Buf {
	t.Helper()
	return runSeqOn(t, sources, ls, exact, want...)
}

func runSeqOn(t *testing.T, srcs []*source, ls []Launch, exact bool, want ...*Buf) [][]*Buf {
	t.Helper()
	var all []map[*Buf]*Buf
	outs := make([][]*Buf, len(srcs))
	for i, s := range srcs {
		bufs := map[*Buf]*Buf{}
		cl := make([]Launch, len(ls))
		for j, l := range ls {
			cl[j] = cloneLaunch(l, bufs)
		}
		require.NoError(t, s.driver(t).Run(context.Background(), cl...), s.name)
		all = append(all, bufs)
		for _, w := range want {
			outs[i] = append(outs[i], bufs[w])
		}
	}
	if exact {
		for i := 1; i < len(srcs); i++ {
			for orig, b := range all[i] {
				require.Truef(t, bytes.Equal(all[0][orig].Data, b.Data), "%s: %s wrote other bytes than %s did", ls[len(ls)-1].Kernel, srcs[i].name, srcs[0].name)
			}
		}
	}
	return outs
}

// each runs check on every source's outputs from runAll, as a subtest named
// after the source.
func each(t *testing.T, outs [][]*Buf, check func(t *testing.T, bufs []*Buf)) {
	t.Helper()
	eachOn(t, sources, outs, check)
}

// eachOn is each for the outputs of runSeqOn over srcs.
func eachOn(t *testing.T, srcs []*source, outs [][]*Buf, check func(t *testing.T, bufs []*Buf)) {
	t.Helper()
	for i, s := range srcs {
		t.Run(s.name, func(t *testing.T) { check(t, outs[i]) })
	}
}

func randF32(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return v
}

// weights of one dtype: the stored patterns and their exact f32 values.
type wdata struct {
	name string
	buf  *Buf
	f32  []float32
	bf16 []uint16 // for cpu.Matrix when dtype is bf16
}

func makeWeights(rng *rand.Rand, dtype string, n int, scale float64) wdata {
	v := randF32(rng, n, scale)
	switch dtype {
	case "bf16":
		h := make([]uint16, n)
		for i, x := range v {
			h[i] = safetensors.Float32ToBF16(x)
			v[i] = safetensors.BF16ToFloat32(h[i])
		}
		return wdata{dtype, U16s(h), v, h}
	case "f16":
		h := make([]uint16, n)
		for i, x := range v {
			h[i] = safetensors.Float32ToF16(x)
			v[i] = safetensors.F16ToFloat32(h[i])
		}
		return wdata{dtype, U16s(h), v, nil}
	}
	return wdata{dtype, F32s(v), v, nil}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Unit roundoff of float32.
const u32 = 0x1p-24

func TestEmbed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dtype := range []string{"f32", "bf16", "f16"} {
		t.Run(dtype, func(t *testing.T) {
			const vocab, hidden = 37, 301
			w := makeWeights(rng, dtype, vocab*hidden, 1)
			tokens := []uint32{0, 36, 5, 37, 1 << 31, 5, 12}
			out := F32s(make([]float32, len(tokens)*hidden))
			outs := runAll(t, Launch{"embed_" + dtype, len(tokens), []Arg{out, w.buf, U32s(tokens), U32(len(tokens)), U32(hidden), U32(vocab)}}, true, out)
			each(t, outs, func(t *testing.T, b []*Buf) {
				got := b[0].Floats()
				for i, id := range tokens {
					want := make([]float32, hidden)
					if id < vocab {
						copy(want, w.f32[int(id)*hidden:])
					}
					require.Equalf(t, want, got[i*hidden:(i+1)*hidden], "token %d (id %d): out-of-range ids give zeros", i, id)
				}
			})
		})
	}
}

// TestRMSNorm: the kernel's float32 block sum against cpu.RMSNorm's float64
// one. Both compute the same scale up to the rounding of the sum of squares
// (float32, about log2(dim) roundings of at most 2^-24 relative each, with
// every term positive) and of one sqrt and one divide: the tolerance is
// 1e-6 relative per element (measured below 3e-7).
func TestRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dtype := range []string{"f32", "bf16", "f16"} {
		for i, dim := range []int{1, 7, 64, 576, 1000, 4099} {
			rows := []int{3, 1, 7, 3, 2, 3}[i]
			t.Run(fmt.Sprintf("%s/dim%d/rows%d", dtype, dim, rows), func(t *testing.T) {
				x := randF32(rng, rows*dim, 2)
				w := makeWeights(rng, dtype, dim, 1)
				eps := float32(1e-5)
				out := F32s(make([]float32, rows*dim))
				outs := runAll(t, Launch{"rmsnorm_" + dtype, rows, []Arg{out, F32s(x), w.buf, U32(rows), U32(dim), F32(eps)}}, true, out)
				each(t, outs, func(t *testing.T, b []*Buf) {
					got := b[0].Floats()
					worst := 0.0
					for r := range rows {
						want := make([]float32, dim)
						cpu.RMSNorm(want, x[r*dim:(r+1)*dim], w.f32, eps)
						for i := range want {
							d := math.Abs(float64(got[r*dim+i] - want[i]))
							require.LessOrEqualf(t, d, 1e-6*math.Abs(float64(want[i]))+1e-30, "row %d elem %d: %v vs %v", r, i, got[r*dim+i], want[i])
							if want[i] != 0 {
								worst = max(worst, d/math.Abs(float64(want[i])))
							}
						}
					}
					t.Logf("max relative difference %.2g", worst)
				})
			})
		}
	}
}

// TestRMSNormParts: rmsnorm_fused_W leaves x as the parts added in part
// order, then the bias, then x (matmul_wg_W's last block's order), bit
// for bit as Go adds them in float32, and writes out as rmsnorm_W writes
// it from that x, byte for byte, in the same process; on both sources,
// which write the same bytes. Shapes: a short row, the 1B shape's hidden
// size with 8 parts (o and down at 32 rows), and a row past the cached
// path (4099 > 4096).
func TestRMSNormParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dtype := range []string{"f32", "bf16", "f16"} {
		for i, dim := range []int{7, 576, 2048, 4099} {
			rows, parts, withBias := []int{3, 2, 5, 2}[i], []int{1, 3, 8, 2}[i], i%2 == 1
			t.Run(fmt.Sprintf("%s/dim%d/rows%d/parts%d/bias=%v", dtype, dim, rows, parts, withBias), func(t *testing.T) {
				x0, ws := randF32(rng, rows*dim, 2), randF32(rng, parts*rows*dim, 1)
				w := makeWeights(rng, dtype, dim, 1)
				var bias []float32
				var biasArg Arg = Null{}
				if withBias {
					bias = randF32(rng, dim, 1)
					biasArg = F32s(bias)
				}
				want := make([]float32, rows*dim)
				for r := range rows {
					for i := range dim {
						v := ws[r*dim+i]
						for s := 1; s < parts; s++ {
							v += ws[(s*rows+r)*dim+i]
						}
						if withBias {
							v += bias[i]
						}
						want[r*dim+i] = v + x0[r*dim+i]
					}
				}
				const eps = float32(1e-5)
				x, out, outRef := F32s(x0), F32s(make([]float32, rows*dim)), F32s(make([]float32, rows*dim))
				outs := runSeq(t, []Launch{
					{"rmsnorm_fused_" + dtype, rows, []Arg{out, x, F32s(ws), biasArg, w.buf, U32(parts), U32(rows), U32(dim), F32(eps), Null{}, U32(0)}},
					{"rmsnorm_" + dtype, rows, []Arg{outRef, F32s(want), w.buf, U32(rows), U32(dim), F32(eps)}},
				}, true, x, out, outRef)
				each(t, outs, func(t *testing.T, b []*Buf) {
					require.Equal(t, F32s(want).Data, b[0].Data, "x: the parts, the bias, then x")
					require.Equal(t, b[2].Data, b[1].Data, "out: rmsnorm_W's bytes from that x")
				})
			})
		}
	}
}

// TestRMSNormFusedSplits: rmsnorm_fused_W's image for each split code
// (1, 2: tc_split_x_W's fragments in bf16, f16; 3, 4: wg_split_x_W's
// swizzled image) is, byte for byte, the one the split kernel makes of
// the out it writes, padding rows (up to a multiple of 16) and k past
// dim included; out is the same as without a split; with and without
// parts, rows held in registers and (4099 > 4096) not; on both sources.
func TestRMSNormFusedSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	splits := []struct {
		code   uint32
		kernel string
		bytes  func(rows, in int) int
		grid   func(rows, in int) int
	}{
		{1, "tc_split_x_bf16", tcxSplitBytes, tcxSplitGrid},
		{2, "tc_split_x_f16", tcxSplitBytes, tcxSplitGrid},
		{3, "wg_split_x_bf16", wgImageBytes, wgSplitGrid},
		{4, "wg_split_x_f16", wgImageBytes, wgSplitGrid},
	}
	for _, sp := range splits {
		for i, dim := range []int{200, 2048, 72, 4099} {
			rows, parts := []int{5, 32, 17, 3}[i], []int{0, 8, 3, 2}[i]
			t.Run(fmt.Sprintf("%s/dim%d/rows%d/parts%d", sp.kernel, dim, rows, parts), func(t *testing.T) {
				x0 := randF32(rng, rows*dim, 2)
				ws := F32s(randF32(rng, max(parts, 1)*rows*dim, 1))
				w := makeWeights(rng, "bf16", dim, 1)
				const eps = float32(1e-5)
				out, outRef := F32s(make([]float32, rows*dim)), F32s(make([]float32, rows*dim))
				img, imgRef := filled(sp.bytes(rows, dim), 0xff), filled(sp.bytes(rows, dim), 0xff)
				outs := runSeq(t, []Launch{
					{"rmsnorm_fused_bf16", ceilDiv(rows, 16) * 16, []Arg{out, F32s(x0), ws, Null{}, w.buf, U32(parts), U32(rows), U32(dim), F32(eps), img, U32(sp.code)}},
					{"rmsnorm_fused_bf16", rows, []Arg{outRef, F32s(x0), ws, Null{}, w.buf, U32(parts), U32(rows), U32(dim), F32(eps), Null{}, U32(0)}},
					{sp.kernel, sp.grid(rows, dim), []Arg{imgRef, outRef, U32(rows), U32(dim)}},
				}, true, out, outRef, img, imgRef)
				each(t, outs, func(t *testing.T, b []*Buf) {
					require.Equal(t, b[1].Data, b[0].Data, "out as without the split")
					require.Equal(t, b[3].Data, b[2].Data, "the split kernel's image of out")
				})
			})
		}
	}
}

// TestMatMul checks matmul_W on both paths (rows < 64: matvec, rows >= 64:
// tiled), aligned and unaligned (in not a multiple of 8, or pointers off
// 16-byte boundaries: the scalar loops), with and without bias and
// accumulate. The reference is float64 over the same (exactly widened)
// weights; any summation order of n float32 products and sums is within
// gamma(n+2) * (sum |x_i w_i| + |bias| + |y0|), gamma(n) = n u / (1 - n u),
// which is the tolerance. cpu.MatMul is held to the same bound, and the
// kernel to twice it against cpu.MatMul.
func TestMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	type shape struct{ rows, in, out int }
	// out = 50257 and 5003: odd vocabularies (the last block of 8 outputs
	// holds 1 or 3).
	shapes := []shape{{1, 64, 48}, {1, 576, 93}, {1, 13, 29}, {3, 1000, 67}, {8, 96, 17}, {9, 40, 33}, {63, 24, 19},
		{64, 40, 70}, {70, 33, 65}, {130, 48, 20}, {1, 24, 50257}, {2, 16, 5003}, {1, 2048, 40}, {5, 1040, 24},
		{7, 72, 31}, {65, 100, 130}}
	for _, dtype := range []string{"f32", "bf16", "f16"} {
		for i, s := range shapes {
			bias := i%3 == 1
			acc := i%2 == 1
			shift := 0
			if i%4 == 3 {
				shift = 4 // x and y off 16-byte alignment: the scalar path
			}
			name := fmt.Sprintf("%s/%dx%dx%d/bias=%v/acc=%v/shift=%d", dtype, s.rows, s.in, s.out, bias, acc, shift)
			t.Run(name, func(t *testing.T) {
				checkMatMul(t, rng, dtype, s.rows, s.in, s.out, bias, acc, shift)
			})
		}
	}
}

// matMulInputs is one matmul_W-shaped launch's random inputs (x and y
// shifted by shift floats off alignment), its argument list (y, x, w, bias,
// rows, in, out, accumulate) and the CPU's product x . w^T (+ bias), before
// accumulate.
type matMulInputs struct {
	x, y0, b, ref []float32
	w             wdata
	y             *Buf
	args          []Arg
}

func newMatMulInputs(rng *rand.Rand, dtype string, rows, in, out int, bias, acc bool, shift int) matMulInputs {
	in0 := matMulInputs{x: randF32(rng, rows*in, 1), w: makeWeights(rng, dtype, out*in, 0.1), y0: randF32(rng, rows*out, 1)}
	var bArg Arg = Null{}
	if bias {
		in0.b = randF32(rng, out, 1)
		bArg = F32s(in0.b)
	}
	xb, yb := F32s(in0.x), F32s(in0.y0)
	xb.Shift, yb.Shift = shift, shift
	accU := U32(0)
	if acc {
		accU = 1
	}
	in0.y = yb
	in0.args = []Arg{yb, xb, in0.w.buf, bArg, U32(rows), U32(in), U32(out), accU}
	m := cpu.Matrix{Rows: out, Cols: in}
	if in0.w.bf16 != nil {
		m.BF16 = in0.w.bf16
	} else {
		m.F32 = in0.w.f32
	}
	in0.ref = make([]float32, rows*out)
	cpu.NewPool(1).MatMul(in0.ref, in0.x, rows, &m, in0.b)
	return in0
}

func checkMatMul(t *testing.T, rng *rand.Rand, dtype string, rows, in, out int, bias, acc bool, shift int) {
	mi := newMatMulInputs(rng, dtype, rows, in, out, bias, acc, shift)
	x, w, y0, b, ref := mi.x, mi.w, mi.y0, mi.b, mi.ref
	grid := ceilDiv(out, 8) * ceilDiv(rows, 8)
	if rows >= 64 {
		grid = ceilDiv(out, 64) * ceilDiv(rows, 64)
	}
	// The MSL port's vector path needs only in % 8 == 0 (packed loads),
	// forward.cu's also 16-byte aligned pointers: with x off alignment and
	// in % 8 == 0 the matvec path sums in another order there.
	exact := rows >= 64 || shift == 0 || in%8 != 0
	outs := runAll(t, Launch{"matmul_" + dtype, grid, mi.args}, exact, mi.y)
	gamma := float64(in+2) * u32 / (1 - float64(in+2)*u32)
	each(t, outs, func(t *testing.T, ob []*Buf) {
		got := ob[0].Floats()
		worst := 0.0
		for r := range rows {
			for o := range out {
				var sum, mag float64
				for k := range in {
					p := float64(x[r*in+k]) * float64(w.f32[o*in+k])
					sum += p
					mag += math.Abs(p)
				}
				if bias {
					sum += float64(b[o])
					mag += math.Abs(float64(b[o]))
				}
				cpuv := float64(ref[r*out+o])
				if acc {
					sum += float64(y0[r*out+o])
					mag += math.Abs(float64(y0[r*out+o]))
					cpuv += float64(y0[r*out+o])
				}
				tol := gamma*mag + 1e-30
				g := float64(got[r*out+o])
				requireProduct(t, r, o, g, cpuv, sum, tol)
				worst = max(worst, math.Abs(g-sum)/tol)
			}
		}
		t.Logf("worst |kernel-exact| / bound = %.3f (same bytes as forward.cu's: %v)", worst, exact)
	})
}

// requireProduct holds one output of a product: the kernel's value g and
// the CPU's cpuv each within tol of the exact sum (cpuv also within its own
// rounding), and so within 2*tol of each other. It calls require only on a
// miss: a call per element (a stack walk for t.Helper) was most of the
// large cases' time under -race. A NaN fails the <= and then require.
func requireProduct(t *testing.T, r, o int, g, cpuv, sum, tol float64) {
	if math.Abs(g-sum) <= tol && math.Abs(cpuv-sum) <= tol+math.Abs(cpuv)*u32 && math.Abs(g-cpuv) <= 2*tol+math.Abs(cpuv)*u32 {
		return
	}
	t.Helper()
	require.LessOrEqualf(t, math.Abs(g-sum), tol, "row %d out %d: kernel %v, exact %v", r, o, g, sum)
	require.LessOrEqualf(t, math.Abs(cpuv-sum), tol+math.Abs(cpuv)*u32, "row %d out %d: cpu %v, exact %v", r, o, cpuv, sum)
	require.LessOrEqualf(t, math.Abs(g-cpuv), 2*tol+math.Abs(cpuv)*u32, "row %d out %d: kernel %v, cpu %v", r, o, g, cpuv)
}

// TestRoPE: against cpu.RoPE given the CPU backend's angles (float32
// inv_freq*pos, then float64 cos/sin rounded to float32). mf_sincosf is
// within about 1e-7 of the true values (Cody-Waite with a 72-bit pi/2 and
// Taylor polynomials), the CPU's within 3e-8; on values of magnitude ~1
// each rotated element then differs by at most ~4e-7 absolute: the
// tolerance is 1e-6 * (|lo| + |hi|) per pair, for positions up to 2^20.
func TestRoPE(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ heads, headdim, extra int }{{4, 64, 0}, {3, 10, 5}, {2, 128, 3}, {1, 2, 0}} {
		t.Run(fmt.Sprintf("h%d/d%d", c.heads, c.headdim), func(t *testing.T) {
			half := c.headdim / 2
			inv := make([]float32, half)
			for i := range inv {
				inv[i] = float32(1 / math.Pow(500000, float64(2*i)/float64(c.headdim)))
			}
			pos := []uint32{0, 1, 2, 17, 1000, 8191, 131071, 131072, 1 << 20, 77777}
			stride := c.heads*c.headdim + c.extra
			x := randF32(rng, len(pos)*stride, 1)
			xb := F32s(x)
			outs := runAll(t, Launch{"rope_f32", len(pos), []Arg{xb, U32s(pos), F32s(inv), U32(len(pos)), U32(c.heads), U32(c.headdim), U32(stride)}}, true, xb)
			each(t, outs, func(t *testing.T, b []*Buf) {
				got := b[0].Floats()
				worst := 0.0
				for ti, p := range pos {
					cs, sn := make([]float32, half), make([]float32, half)
					for i, f := range inv {
						a := float64(f * float32(p))
						cs[i], sn[i] = float32(math.Cos(a)), float32(math.Sin(a))
					}
					want := append([]float32(nil), x[ti*stride:(ti+1)*stride]...)
					cpu.RoPE(want, c.heads, c.headdim, cs, sn)
					for h := range c.heads {
						for i := range half {
							lo, hi := h*c.headdim+i, h*c.headdim+i+half
							tol := 1e-6 * (math.Abs(float64(x[ti*stride+lo])) + math.Abs(float64(x[ti*stride+hi])))
							for _, e := range []int{lo, hi} {
								d := math.Abs(float64(got[ti*stride+e] - want[e]))
								require.LessOrEqualf(t, d, tol, "pos %d head %d pair %d", p, h, i)
								worst = max(worst, d)
							}
						}
					}
					for e := c.heads * c.headdim; e < stride; e++ {
						require.Equal(t, x[ti*stride+e], got[ti*stride+e], "past the heads nothing changes")
					}
				}
				t.Logf("max |kernel - cpu| = %.2g", worst)
			})
		})
	}
}

func TestKVStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const tokens, kvDim, stride, kOff, vOff, numSlots = 5, 40, 130, 50, 90, 64
	qkv := randF32(rng, tokens*stride, 1)
	slots := []uint32{3, 63, 64, 17, 1 << 30} // 64 and 2^30 are out of range: skipped
	k0, v0 := randF32(rng, numSlots*kvDim, 1), randF32(rng, numSlots*kvDim, 1)
	kb, vb := F32s(k0), F32s(v0)
	outs := runAll(t, Launch{"kv_store_f32", tokens, []Arg{kb, vb, F32s(qkv), U32s(slots), U32(tokens), U32(kvDim), U32(kOff), U32(vOff), U32(stride), U32(numSlots)}}, true, kb, vb)
	wantK, wantV := append([]float32(nil), k0...), append([]float32(nil), v0...)
	for ti, s := range slots {
		if s >= numSlots {
			continue
		}
		copy(wantK[int(s)*kvDim:(int(s)+1)*kvDim], qkv[ti*stride+kOff:])
		copy(wantV[int(s)*kvDim:(int(s)+1)*kvDim], qkv[ti*stride+vOff:])
	}
	each(t, outs, func(t *testing.T, b []*Buf) {
		require.Equal(t, wantK, b[0].Floats())
		require.Equal(t, wantV, b[1].Floats())
	})
}

func TestSiLUMulAddCopyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const rows, inter = 3, 1001
	gu := randF32(rng, rows*2*inter, 4)
	gu[5], gu[7] = 100, -100 // exp overflow and underflow
	out := F32s(make([]float32, rows*inter))
	// Fewer blocks than elements: grid-stride.
	outs := runAll(t, Launch{"silu_mul_f32", 7, []Arg{out, F32s(gu), U32(rows), U32(inter)}}, true, out)
	each(t, outs, func(t *testing.T, b []*Buf) {
		got := b[0].Floats()
		for r := range rows {
			want := make([]float32, inter)
			cpu.SwiGLU(want, gu[r*2*inter:r*2*inter+inter], gu[r*2*inter+inter:(r+1)*2*inter])
			for i := range want {
				// exp within ~1 ulp of cpu.Exp, then the same divide and
				// multiply: a few ulp.
				require.LessOrEqualf(t, math.Abs(float64(got[r*inter+i]-want[i])), 4*u32*2*math.Abs(float64(want[i])), "row %d elem %d", r, i)
			}
		}
	})

	y, x := randF32(rng, 777, 1), randF32(rng, 777, 1)
	yb := F32s(y)
	outs = runAll(t, Launch{"add_f32", 2, []Arg{yb, F32s(x), U32(777)}}, true, yb)
	each(t, outs, func(t *testing.T, b []*Buf) {
		for i, v := range b[0].Floats() {
			require.Equal(t, y[i]+x[i], v)
		}
	})

	const dim = 300
	src := randF32(rng, 6*dim, 1)
	idx := []uint32{5, 0, 5, 2}
	dst := F32s(make([]float32, len(idx)*dim))
	outs = runAll(t, Launch{"copy_rows_f32", len(idx), []Arg{dst, F32s(src), U32s(idx), U32(len(idx)), U32(dim)}}, true, dst)
	each(t, outs, func(t *testing.T, b []*Buf) {
		for i, r := range idx {
			require.Equal(t, src[int(r)*dim:(int(r)+1)*dim], b[0].Floats()[i*dim:(i+1)*dim])
		}
	})
}

// attnCase is a batch of sequences over a block-table KV cache: each
// sequence has ctx cached positions and nq queries at its last positions
// (nq = 1: decode; nq = ctx: prefill of the whole sequence).
type attnCase struct {
	heads, kvHeads, headdim int
	ctx, nq                 []int
	shift                   int  // bytes the qkv and cache buffers sit past a 64-byte boundary
	kv16                    bool // the caches in half precision (the *_kv16 kernels): each value rounded to f16
}

// TestAttention: attention_f32 against the CPU backend's attention
// (model/forward.go: cpu.Dot * scale, cpu.Softmax, cpu.Axpy), with the keys
// scattered over blocks of 16 slots in a shuffled order per sequence. The
// kernel's online softmax (running max and rescaled sums in float32, accurate
// exp) and the CPU's two-pass softmax (float64 sum) agree to a few float32
// roundings of each probability; the output is a convex combination of v,
// so the tolerance is 2e-6 * max|v| per element (measured below 4e-7).
func TestAttention(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	cases := []attnCase{
		{heads: 4, kvHeads: 4, headdim: 64, ctx: []int{1, 17, 40}, nq: []int{1, 1, 1}},  // decode, MHA
		{heads: 6, kvHeads: 2, headdim: 32, ctx: []int{33, 5}, nq: []int{1, 1}},         // GQA 3
		{heads: 8, kvHeads: 2, headdim: 128, ctx: []int{70}, nq: []int{70}},             // prefill, GQA 4
		{heads: 3, kvHeads: 1, headdim: 40, ctx: []int{16, 50, 2}, nq: []int{16, 1, 2}}, // mixed, odd head_dim
		{heads: 2, kvHeads: 1, headdim: 256, ctx: []int{9}, nq: []int{9}},               // widest head
		// Four sequences at block edges (1, 7, 64, 65 cached), decode and
		// short prefills side by side, GQA 4, head_dim not a multiple of 32.
		{heads: 8, kvHeads: 2, headdim: 48, ctx: []int{1, 7, 64, 65}, nq: []int{1, 7, 1, 2}},
	}
	for ci, c := range cases {
		t.Run(fmt.Sprintf("case%d/h%d/kv%d/d%d", ci, c.heads, c.kvHeads, c.headdim), func(t *testing.T) {
			checkAttention(t, rng, c, "attention_f32")
		})
	}
}

// TestAttentionGQA: attention_gqa_f32 (one block per kv head for its up to
// 4 query heads, 32 key groups) against the CPU attention at the same
// tolerance: GQA 2, 3 and 4, MHA, head_dim 32 to 128 (48 and 100: partial
// lanes), 1000 keys, fewer keys than groups, several sequences. Shapes it
// does not take (5 query heads a kv head, head_dim 160, heads not a
// multiple of kv_heads) leave the output untouched.
func TestAttentionGQA(t *testing.T) {
	cases := []attnCase{
		{heads: 4, kvHeads: 4, headdim: 64, ctx: []int{1, 17, 40}, nq: []int{1, 1, 1}},
		{heads: 6, kvHeads: 2, headdim: 32, ctx: []int{33, 5}, nq: []int{1, 1}},
		{heads: 8, kvHeads: 2, headdim: 48, ctx: []int{1, 7, 64, 65}, nq: []int{1, 7, 1, 2}},
		{heads: 8, kvHeads: 2, headdim: 64, ctx: []int{1000, 20}, nq: []int{1, 1}},
		{heads: 4, kvHeads: 2, headdim: 128, ctx: []int{300, 31, 2}, nq: []int{1, 1, 1}},
		{heads: 9, kvHeads: 3, headdim: 100, ctx: []int{129}, nq: []int{3}},
	}
	for ci, c := range cases {
		t.Run(fmt.Sprintf("case%d/h%d/kv%d/d%d", ci, c.heads, c.kvHeads, c.headdim), func(t *testing.T) {
			checkAttention(t, rand.New(rand.NewPCG(31, uint64(ci))), c, "attention_gqa_f32")
		})
	}
	checkRefused(t, "attention_gqa_f32", []attnCase{
		{heads: 10, kvHeads: 2, headdim: 64, ctx: []int{9}, nq: []int{1}},
		{heads: 4, kvHeads: 2, headdim: 160, ctx: []int{9}, nq: []int{1}},
		{heads: 6, kvHeads: 4, headdim: 64, ctx: []int{9}, nq: []int{1}},
	})
}

// checkRefused launches a decode kernel that takes one block per kv head
// on each of the shapes (one query at position 8 over 16 zero keys), which
// it must refuse: the output, all sevens, stays so.
func checkRefused(t *testing.T, kernel string, shapes []attnCase) {
	for _, c := range shapes {
		t.Run(fmt.Sprintf("refused/h%d/kv%d/d%d", c.heads, c.kvHeads, c.headdim), func(t *testing.T) {
			checkUntouched(t, c, kernel)
		})
	}
}

func checkUntouched(t *testing.T, c attnCase, kernel string) {
	const bs = 16
	sevens := make([]float32, c.heads*c.headdim)
	for i := range sevens {
		sevens[i] = 7
	}
	out := F32s(sevens)
	qkv := F32s(randF32(rand.New(rand.NewPCG(1, 2)), (c.heads+2*c.kvHeads)*c.headdim, 1))
	kc, vc := F32s(make([]float32, bs*c.kvHeads*c.headdim)), F32s(make([]float32, bs*c.kvHeads*c.headdim))
	outs := runAll(t, Launch{kernel, c.kvHeads, []Arg{out, qkv, kc, vc, U32s([]uint32{0}), U32s([]uint32{8}), U32s([]uint32{0}),
		U32(1), U32(bs), U32(1), U32(c.heads), U32(c.kvHeads), U32(c.headdim), U32((c.heads + 2*c.kvHeads) * c.headdim), F32(0.125)}}, true, out)
	each(t, outs, func(t *testing.T, b []*Buf) {
		for i, v := range b[0].Floats() {
			require.Equalf(t, float32(7), v, "element %d written", i)
		}
	})
}

// TestAttentionWarps: attention_warps_f32 (key groups of 8, 16 or 32
// lanes by head_dim, 2 columns of 4 dims a lane, each group with its own
// online softmax over every 16th, 8th or 4th key and a ring of 4 keys in
// flight (2 for 8 heads), merged at the end) against the CPU attention at
// attention_f32's tolerance: the Llama-3.2-1B decode shape over 16, 80,
// 144, 150 and 1 keys in one launch (the groups of one warp with
// different counts of keys; 80 and more are past the first ring's 64);
// MHA (the body for 4 heads running 1) at head_dim 64 and 100; GQA 7 and 8 (the
// body for 8, one lane a head at head_dim 64, merged in two rounds of 4
// heads); head_dim 16 and 48 (lanes without a second column, or any),
// 80, 100 and 128 (16-lane groups), 130 and 50 (not multiples of 4: the
// scalar loads), 256; 1000 keys (the ring refilled many times), one key,
// keys at block edges, several queries of one sequence; and caches and q
// 4 bytes past 16-byte alignment (the scalar loads at head_dim 64). Every
// case runs on both texts, which must write the same bytes. Shapes it
// does not take leave the output untouched.
func TestAttentionWarps(t *testing.T) {
	one := func(n int) []int {
		v := make([]int, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	cases := []attnCase{
		{heads: 32, kvHeads: 8, headdim: 64, ctx: []int{16, 80, 144, 150, 1}, nq: one(5)},
		{heads: 4, kvHeads: 4, headdim: 64, ctx: []int{1, 17, 40}, nq: one(3)},
		{heads: 16, kvHeads: 2, headdim: 64, ctx: []int{1000, 129, 3}, nq: one(3)},
		{heads: 14, kvHeads: 2, headdim: 16, ctx: []int{77, 2}, nq: one(2)},
		{heads: 8, kvHeads: 2, headdim: 48, ctx: []int{1, 7, 64, 65}, nq: []int{1, 7, 1, 2}},
		{heads: 8, kvHeads: 2, headdim: 80, ctx: []int{300, 33}, nq: one(2)},
		{heads: 6, kvHeads: 6, headdim: 100, ctx: []int{65, 1}, nq: one(2)},
		{heads: 8, kvHeads: 2, headdim: 128, ctx: []int{257, 20}, nq: []int{1, 3}},
		{heads: 9, kvHeads: 3, headdim: 130, ctx: []int{129}, nq: []int{3}},
		{heads: 2, kvHeads: 1, headdim: 256, ctx: []int{270, 9}, nq: one(2)},
		{heads: 16, kvHeads: 2, headdim: 256, ctx: []int{97, 31}, nq: []int{1, 2}},
		{heads: 3, kvHeads: 1, headdim: 50, ctx: []int{80}, nq: one(1)},
		{heads: 8, kvHeads: 2, headdim: 64, ctx: []int{100, 33}, nq: one(2), shift: 4},
	}
	for ci, c := range cases {
		t.Run(fmt.Sprintf("case%d/h%d/kv%d/d%d", ci, c.heads, c.kvHeads, c.headdim), func(t *testing.T) {
			checkAttention(t, rand.New(rand.NewPCG(43, uint64(ci))), c, "attention_warps_f32")
		})
	}
	checkRefused(t, "attention_warps_f32", []attnCase{
		{heads: 18, kvHeads: 2, headdim: 64, ctx: []int{9}, nq: []int{1}},
		{heads: 4, kvHeads: 2, headdim: 260, ctx: []int{9}, nq: []int{1}},
		{heads: 6, kvHeads: 4, headdim: 64, ctx: []int{9}, nq: []int{1}},
	})
}

// TestAttentionSplit: attention_split_f32 then attention_merge_f32 against
// the CPU attention
// at attention_f32's tolerance: each token's keys cut into 2 to 64 ranges
// of attention_warps_f32's body, on TestAttentionWarps' shapes and on the
// cuts' edges: more ranges than keys (ranges with none: a max of -inf and
// a sum of 0 that the merge skips), keys an exact multiple of the ranges,
// one key, 2000 keys in 64 ranges, and tokens of one batch with 1 to 1000
// keys side by side (each cut by its own count).
func TestAttentionSplit(t *testing.T) {
	cases := []struct {
		attnCase
		ranges int
	}{
		{attnCase{heads: 32, kvHeads: 8, headdim: 64, ctx: []int{16, 80, 144, 150, 1}, nq: []int{1, 1, 1, 1, 1}}, 4},
		{attnCase{heads: 32, kvHeads: 8, headdim: 64, ctx: []int{2000}, nq: []int{1}}, 64},
		{attnCase{heads: 4, kvHeads: 4, headdim: 64, ctx: []int{1, 17, 40}, nq: []int{1, 1, 1}}, 3},
		{attnCase{heads: 16, kvHeads: 2, headdim: 64, ctx: []int{1000, 129, 3}, nq: []int{1, 1, 1}}, 8},
		{attnCase{heads: 14, kvHeads: 2, headdim: 16, ctx: []int{77, 2}, nq: []int{1, 1}}, 5},
		{attnCase{heads: 8, kvHeads: 2, headdim: 80, ctx: []int{300, 33}, nq: []int{1, 1}}, 2},
		{attnCase{heads: 8, kvHeads: 2, headdim: 128, ctx: []int{256, 20}, nq: []int{1, 3}}, 16},
		{attnCase{heads: 9, kvHeads: 3, headdim: 130, ctx: []int{129}, nq: []int{3}}, 7},
		{attnCase{heads: 16, kvHeads: 2, headdim: 256, ctx: []int{97, 31}, nq: []int{1, 2}}, 6},
		{attnCase{heads: 8, kvHeads: 2, headdim: 64, ctx: []int{100, 33}, nq: []int{1, 1}, shift: 4}, 9},
	}
	for ci, c := range cases {
		t.Run(fmt.Sprintf("case%d/h%d/kv%d/d%d/r%d", ci, c.heads, c.kvHeads, c.headdim, c.ranges), func(t *testing.T) {
			checkAttentionOn(t, rand.New(rand.NewPCG(47, uint64(ci))), c.attnCase, sources, func(args []Arg, tokens int) []Launch {
				H, KV, hd, R := c.heads, c.kvHeads, c.headdim, c.ranges
				part, ml := F32s(make([]float32, tokens*H*R*hd)), F32s(make([]float32, tokens*H*R*2))
				split := append(append([]Arg{part}, args[1:]...), ml, U32(R))
				return []Launch{
					{"attention_split_f32", tokens * KV * R, split},
					{"attention_merge_f32", tokens * H, []Arg{args[0], part, ml, U32(tokens), U32(H), U32(hd), U32(R)}},
				}
			})
		})
	}
}

// TestAttentionPrefill: attention_prefill_f32 against the same CPU
// attention as TestAttention, on the shapes that cross its tiles: 16-token
// query tiles that end mid-sequence (17, 65, 130 tokens), tiles holding
// several sequences (short prefills and decode tokens side by side), 32-key
// tiles cut by the causal mask and by the context, head_dim 48 and 40 (a
// partial 64-dim chunk) and 256 (four chunks), GQA 4, and a chunk whose
// queries sit at the end of a longer cached context (a later prefill
// chunk). Same tolerance as attention_f32.
func TestAttentionPrefill(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	cases := []attnCase{
		{heads: 4, kvHeads: 1, headdim: 64, ctx: []int{1}, nq: []int{1}},                                                 // one token
		{heads: 8, kvHeads: 2, headdim: 64, ctx: []int{17}, nq: []int{17}},                                               // GQA 4, a 1-row last tile
		{heads: 8, kvHeads: 2, headdim: 48, ctx: []int{64}, nq: []int{64}},                                               // exact tiles, partial chunk
		{heads: 4, kvHeads: 1, headdim: 64, ctx: []int{65}, nq: []int{65}},                                               // a key tile of 1
		{heads: 8, kvHeads: 2, headdim: 64, ctx: []int{130}, nq: []int{130}},                                             // 9 query tiles, 5 key tiles
		{heads: 6, kvHeads: 2, headdim: 48, ctx: []int{5, 40, 1, 23}, nq: []int{5, 40, 1, 23}},                           // sequences sharing tiles
		{heads: 8, kvHeads: 2, headdim: 64, ctx: []int{100, 3, 50}, nq: []int{20, 1, 17}},                                // later chunks and a decode token
		{heads: 3, kvHeads: 1, headdim: 40, ctx: []int{33}, nq: []int{33}},                                               // odd head_dim
		{heads: 2, kvHeads: 1, headdim: 256, ctx: []int{37}, nq: []int{37}},                                              // widest head
		{heads: 4, kvHeads: 4, headdim: 64, ctx: []int{2, 2, 2, 2, 2, 2, 2, 2, 2}, nq: []int{2, 2, 2, 2, 2, 2, 2, 2, 2}}, // MHA, 9 runs
	}
	for ci, c := range cases {
		t.Run(fmt.Sprintf("case%d/h%d/kv%d/d%d", ci, c.heads, c.kvHeads, c.headdim), func(t *testing.T) {
			checkAttention(t, rng, c, "attention_prefill_f32")
		})
	}
}

// attnGrid is each attention kernel's grid (forward.cu's rule above it).
func attnGrid(kernel string, tokens, heads, kvHeads int) int {
	switch kernel {
	case "attention_prefill_f32":
		return ceilDiv(tokens, 16) * heads // FW_ATTP_ROWS query tokens per block
	case "attention_gqa_f32", "attention_warps_f32":
		return tokens * kvHeads
	}
	return tokens * heads
}

// checkAttention runs kernel on case c (inputs drawn from rng), holds its
// output to the CPU's attention, and returns it (one slice per source).
func checkAttention(t *testing.T, rng *rand.Rand, c attnCase, kernel string) [][]float32 {
	return checkAttentionOn(t, rng, c, sources, func(args []Arg, tokens int) []Launch {
		return []Launch{{kernel, attnGrid(kernel, tokens, c.heads, c.kvHeads), args}}
	})
}

// checkAttentionOn is checkAttention over srcs, for the launches that
// launches makes from attention_f32's arguments (out first) and the tokens.
func checkAttentionOn(t *testing.T, rng *rand.Rand, c attnCase, srcs []*source, launches func(args []Arg, tokens int) []Launch) [][]float32 {
	const bs = 16
	H, KV, hd := c.heads, c.kvHeads, c.headdim
	kvD := KV * hd
	stride := (H+2*KV)*hd + 3 // q|k|v rows with a gap, as the backend's qkv buffer may have
	nseq := len(c.ctx)
	maxBlocks := 0
	for _, n := range c.ctx {
		maxBlocks = max(maxBlocks, ceilDiv(n, bs))
	}
	maxBlocks++ // one unused entry per row
	// Block tables: distinct physical blocks, shuffled, across sequences.
	perm := rng.Perm(nseq * maxBlocks)
	tables := make([]uint32, nseq*maxBlocks)
	for i := range tables {
		tables[i] = uint32(perm[i])
	}
	numSlots := nseq * maxBlocks * bs
	kc, vc := randF32(rng, numSlots*kvD, 1), randF32(rng, numSlots*kvD, 1)
	kcb, vcb := F32s(kc), F32s(vc)
	if c.kv16 { // the kernels read f16 values, which the CPU's attention takes exactly
		kcb, vcb = halves(kc), halves(vc)
	}
	// The CPU's per-sequence contiguous caches, [ctx, kvD].
	slot := func(s, j int) int { return int(tables[s*maxBlocks+j/bs])*bs + j%bs }
	var qSeq, qPos []uint32
	for s := range nseq {
		for i := c.ctx[s] - c.nq[s]; i < c.ctx[s]; i++ {
			qSeq = append(qSeq, uint32(s))
			qPos = append(qPos, uint32(i))
		}
	}
	T := len(qSeq)
	qkv := randF32(rng, T*stride, 1)
	scale := float32(1 / math.Sqrt(float64(hd)))
	out := F32s(make([]float32, T*H*hd))
	qkvb := F32s(qkv)
	qkvb.Shift, kcb.Shift, vcb.Shift = c.shift, c.shift, c.shift
	ls := launches([]Arg{out, qkvb, kcb, vcb, U32s(qSeq), U32s(qPos), U32s(tables),
		U32(maxBlocks), U32(bs), U32(T), U32(H), U32(KV), U32(hd), U32(stride), F32(scale)}, T)
	outs := runSeqOn(t, srcs, ls, true, out)
	eachOn(t, srcs, outs, func(t *testing.T, b []*Buf) {
		got := b[0].Floats()
		vmax := 0.0
		for _, v := range vc {
			vmax = max(vmax, math.Abs(float64(v)))
		}
		worst := 0.0
		group := H / KV
		for ti := range T {
			s, p := int(qSeq[ti]), int(qPos[ti])
			for h := range H {
				off := (h / group) * hd
				q := qkv[ti*stride+h*hd : ti*stride+(h+1)*hd]
				sc := make([]float32, p+1)
				for j := range sc {
					sc[j] = cpu.Dot(q, kc[slot(s, j)*kvD+off:slot(s, j)*kvD+off+hd]) * scale
				}
				cpu.Softmax(sc)
				want := make([]float32, hd)
				for j, pr := range sc {
					cpu.Axpy(pr, vc[slot(s, j)*kvD+off:slot(s, j)*kvD+off+hd], want)
				}
				for d := range hd {
					diff := math.Abs(float64(got[ti*H*hd+h*hd+d] - want[d]))
					require.LessOrEqualf(t, diff, 2e-6*vmax, "token %d (seq %d pos %d) head %d dim %d: %v vs %v", ti, s, p, h, d, got[ti*H*hd+h*hd+d], want[d])
					worst = max(worst, diff/vmax)
				}
			}
		}
		t.Logf("%d queries, max |kernel - cpu| / max|v| = %.2g", T, worst)
	})
	var got [][]float32
	for _, o := range outs {
		got = append(got, o[0].Floats())
	}
	return got
}
