package hostkern

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/stretchr/testify/require"
)

// wg_split_x_W and matmul_wg_W (forward.cu): the warpgroup-MMA pair for 1
// to 64 rows. The image is x's hi/lo parts in 64-wide stages of in, N = 2R
// rows a stage (R: rows rounded up to 16), swizzled in 16-byte units;
// the product splits in into S = ceil(in/ks) parts, each block one part
// of 128 outputs, the parts added in split order.

func wgRows(rows int) int { return (rows + 15) / 16 * 16 }

// wgSplitGrid, wgGrid: the pair's grids (forward.cu): one split thread per
// (stage, 16-byte chunk, image row of the hi half); one product block per
// 128 outputs and split of in.
func wgSplitGrid(rows, in int) int { return ceilDiv(ceilDiv(in, 64)*8*wgRows(rows), 256) }
func wgGrid(in, out, ks int) int   { return ceilDiv(out, 128) * ceilDiv(in, ks) }

// wgImageBytes is the size of wg_split_x_W's image: N rows of 128 bytes
// per 64-wide stage.
func wgImageBytes(rows, in int) int { return ceilDiv(in, 64) * 2 * wgRows(rows) * 128 }

// rn16 and widen16: f32 to the 16-bit type by round to nearest even, and
// back exactly.
func rn16(dtype string, v float32) uint16 {
	if dtype == "bf16" {
		return safetensors.Float32ToBF16(v)
	}
	return safetensors.Float32ToF16(v)
}

func widen16(dtype string, h uint16) float32 {
	if dtype == "bf16" {
		return safetensors.BF16ToFloat32(h)
	}
	return safetensors.F16ToFloat32(h)
}

// wgSplit is tc_split's pair for one value: hi = RN16(v), lo = RN16(v -
// hi), lo zero where hi is v exactly.
func wgSplit(dtype string, v float32) (hi, lo uint16) {
	hi = rn16(dtype, v)
	hv := widen16(dtype, hi)
	d := float32(0)
	if hv != v {
		d = v - hv
	}
	return hi, rn16(dtype, d)
}

// wgImage is the image as forward.cu's comment lays it out, built here
// from the layout's definition: x[n][64c + 8q + e] (n < R: row n's hi, R +
// n: row n's lo; zeros past rows and past in) at byte 2e of 16-byte unit
// c*N*8 + (n/8)*64 + (n%8)*8 + (q ^ n%8).
func wgImage(dtype string, x []float32, rows, in int) []byte {
	R := wgRows(rows)
	n2 := 2 * R
	img := make([]byte, wgImageBytes(rows, in))
	for c := range ceilDiv(in, 64) {
		for n := range n2 {
			r := n % R
			for q := range 8 {
				for e := range 8 {
					k := 64*c + 8*q + e
					v := float32(0)
					if r < rows && k < in {
						v = x[r*in+k]
					}
					hi, lo := wgSplit(dtype, v)
					h := hi
					if n >= R {
						h = lo
					}
					unit := c*n2*8 + (n/8)*64 + (n%8)*8 + (q ^ n%8)
					binary.LittleEndian.PutUint16(img[16*unit+2*e:], h)
				}
			}
		}
	}
	return img
}

// filled is a buffer of n bytes, every one b (0xff: NaN in f32, bf16 and
// f16 alike, so a value read from a byte nobody wrote shows in the sums).
func filled(n int, b byte) *Buf { return &Buf{Data: bytes.Repeat([]byte{b}, n)} }

// TestWGSplitXWritesTheSwizzledImage: wg_split_x_W's image equals, byte
// for byte, one built in Go from the layout forward.cu documents (the hi
// and lo rows of each 64-wide stage, the 128-byte swizzle, zeros for the
// rows between rows and R and for k past in), on both sources; nothing
// past the image is written. Shapes: a partial 16-row tile (5, 17, 33),
// R = 64, in not a multiple of 8 (13: a straddling chunk) or of 64, x off
// 16-byte alignment (the scalar load path); x holds values whose hi is
// exact (lo zero), -0, f16-subnormal and f16-overflowing values, and
// infinities, besides random ones.
func TestWGSplitXWritesTheSwizzledImage(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	specials := []float32{1, -0.0, 1e-6, -3e-8, 70000, float32(math.Inf(1)), float32(math.Inf(-1)), 0.1}
	type shape struct{ rows, in, shift int }
	shapes := []shape{{5, 72, 0}, {33, 13, 0}, {17, 200, 4}, {64, 136, 0}}
	for _, dtype := range []string{"bf16", "f16"} {
		var ls []Launch
		var xs []*Buf
		var want [][]byte
		for i, s := range shapes {
			x := randF32(rng, s.rows*s.in, 1)
			for j, v := range specials {
				x[(j*37+i)%len(x)] = v
			}
			xb := F32s(x)
			xb.Shift = s.shift
			const past = 64
			img := filled(wgImageBytes(s.rows, s.in)+past, 0xa5)
			ls = append(ls, Launch{"wg_split_x_" + dtype, wgSplitGrid(s.rows, s.in), []Arg{img, xb, U32(s.rows), U32(s.in)}})
			xs = append(xs, img)
			want = append(want, append(wgImage(dtype, x, s.rows, s.in), bytes.Repeat([]byte{0xa5}, past)...))
		}
		outs := runSeq(t, ls, true, xs...) // one process per source; the MSL port writes the same bytes
		for i, s := range shapes {
			t.Run(fmt.Sprintf("%s/rows%d/in%d/shift%d", dtype, s.rows, s.in, s.shift), func(t *testing.T) {
				each(t, outs, func(t *testing.T, b []*Buf) {
					require.Equal(t, want[i], b[i].Data, "the image, then 64 bytes past it left alone")
				})
			})
		}
	}
}

// wgCase is one matmul_wg_W launch: ks picks S = ceil(in/ks).
type wgCase struct {
	rows, in, out, ks int
	bias, acc         bool
}

// wgModel is the sum forward.cu's emulated path computes, written out in
// Go from its documentation: per output and split s, hi and lo each one
// f32 sum from +0 over the split's k in order of w times the part (every
// product exact; float32() keeps Go from fusing it into an fma; the
// zero-padded k past in add +0 to a sum that started at +0, which leaves
// it unchanged, so the loop stops at in), the split's value hi + lo, the
// splits added in split order, then bias, then y.
func wgModel(dtype string, c wgCase, x []float32, w []float32, b, y0 []float32) []float32 {
	hi, lo := make([]float32, len(x)), make([]float32, len(x))
	for i, v := range x {
		h, l := wgSplit(dtype, v)
		hi[i], lo[i] = widen16(dtype, h), widen16(dtype, l)
	}
	y := make([]float32, c.rows*c.out)
	for r := range c.rows {
		for o := range c.out {
			var total float32
			for s := 0; s*c.ks < c.in; s++ {
				var hs, ls float32
				for k := s * c.ks; k < min(c.in, (s+1)*c.ks); k++ {
					hs += float32(w[o*c.in+k] * hi[r*c.in+k])
					ls += float32(w[o*c.in+k] * lo[r*c.in+k])
				}
				if v := hs + ls; s == 0 {
					total = v
				} else {
					total += v
				}
			}
			if c.bias {
				total += b[o]
			}
			if c.acc {
				total += y0[r*c.out+o]
			}
			y[r*c.out+o] = total
		}
	}
	return y
}

// TestMatMulWG runs wg_split_x_W then matmul_wg_W on both sources over
// every row count class (1, 5, 16, 17, 32, 33, 48, 64: R = 16 to 64, full
// and partial), in of one partial stage (8), stage and a bit (72), and
// several stages (200, 600), out of one output, a partial second block
// (130) and a partial third (300), ks giving S = 1 (ks = in rounded up to
// 64, or more), S = 3 (the last split partial) and S = ceil(in/64) (one
// stage a split), bias and accumulate on and off. For each output it
// proves:
//   - both sources write the same bytes of y (the MSL port sums in
//     forward.cu's order) and those bytes are wgModel's: the documented
//     hi/lo, stage and split order, bit for bit;
//   - y is within a rigorous bound of the exact product (requireMatMulWG);
//   - with S = 1, ws is untouched; with S > 1 forward.cu leaves in ws [S,
//     rows, out] the split partials whose sum in split order, plus bias
//     and y, is y (the MSL port never touches ws);
//   - cnt is zero at the end. One cnt serves every launch of a dtype, as
//     the backend keeps one: each grouped launch finds it at zero only if
//     the one before reset it, or its last blocks never add the partials.
//
// The image starts as 0xff bytes (NaN), so a unit the split left unwritten
// would show in y. All of it holds for matmul_wgs_W too (matmul_wg_W
// warp-specialized, 3 warpgroups: here its block-synchronous twin, whose
// third warpgroup only copies), which runs every case as well.
func TestMatMulWG(t *testing.T) {
	for _, kernel := range []string{"matmul_wg_", "matmul_wgs_"} {
		t.Run(strings.TrimSuffix(kernel, "_"), func(t *testing.T) { testMatMulWG(t, kernel) })
	}
}

func testMatMulWG(t *testing.T, kernel string) {
	rng := rand.New(rand.NewPCG(43, 44))
	cases := []wgCase{
		{1, 8, 1, 64, false, false},       // S = 1 = ceil(in/64)
		{5, 72, 130, 64, true, false},     // S = 2 = ceil(in/64): the second split a partial stage
		{16, 200, 300, 1024, false, true}, // S = 1, ks past in
		{17, 600, 130, 256, true, true},   // S = 3
		{32, 600, 1, 64, false, true},     // S = 10 = ceil(in/64)
		{33, 200, 300, 64, true, false},   // S = 4 = ceil(in/64)
		{48, 72, 300, 128, false, false},  // S = 1
		{64, 600, 300, 256, true, true},   // S = 3
		{64, 8, 130, 64, true, false},     // S = 1
		{1, 600, 300, 256, false, true},   // S = 3
		{5, 600, 130, 640, true, true},    // S = 1, ks = in rounded up to 64
		{48, 200, 1, 64, false, false},    // S = 4 = ceil(in/64)
	}
	for _, dtype := range []string{"bf16", "f16"} {
		type run struct {
			mi    matMulInputs
			ws    *Buf
			ws0   []byte
			model []float32
		}
		runs := make([]run, len(cases))
		groups := 0
		for _, c := range cases {
			groups = max(groups, ceilDiv(c.out, 128))
		}
		cnt := U32s(make([]uint32, groups))
		var ls []Launch
		want := []*Buf{cnt}
		for i, c := range cases {
			mi := newMatMulInputs(rng, dtype, c.rows, c.in, c.out, c.bias, c.acc, 0)
			S := ceilDiv(c.in, c.ks)
			ws := filled(4*S*c.rows*c.out, 0xff)
			xs := filled(wgImageBytes(c.rows, c.in), 0xff)
			// mi.args: y, x, w, bias, rows, in, out, accumulate.
			args := []Arg{mi.y, xs, mi.args[2], mi.args[3], ws, cnt, mi.args[4], mi.args[5], mi.args[6], mi.args[7], U32(c.ks)}
			ls = append(ls,
				Launch{"wg_split_x_" + dtype, wgSplitGrid(c.rows, c.in), []Arg{xs, mi.args[1], U32(c.rows), U32(c.in)}},
				Launch{kernel + dtype, wgGrid(c.in, c.out, c.ks), args})
			want = append(want, mi.y, ws)
			runs[i] = run{mi, ws, append([]byte(nil), ws.Data...), wgModel(dtype, c, mi.x, mi.w.f32, mi.b, mi.y0)}
		}
		// One process per source for the dtype's 24 launches. Not exact:
		// forward.cu's split partials in ws are its own.
		outs := runSeq(t, ls, false, want...)
		t.Run(dtype+"/cnt", func(t *testing.T) {
			each(t, outs, func(t *testing.T, b []*Buf) {
				require.Equal(t, make([]uint32, groups), u32sOf(b[0]), "every group's count is back at zero")
			})
		})
		for i, c := range cases {
			S := ceilDiv(c.in, c.ks)
			t.Run(fmt.Sprintf("%s/%dx%dx%d/ks%d(S=%d)/bias=%v/acc=%v", dtype, c.rows, c.in, c.out, c.ks, S, c.bias, c.acc), func(t *testing.T) {
				r := runs[i]
				y := func(src int) *Buf { return outs[src][1+2*i] }
				ws := func(src int) *Buf { return outs[src][2+2*i] }
				require.Equal(t, y(0).Data, y(1).Data, "the MSL port writes forward.cu's bytes")
				for src, s := range sources {
					t.Run(s.name, func(t *testing.T) {
						require.Equal(t, F32s(r.model).Data, y(src).Data, "the documented summation order, bit for bit")
						requireMatMulWG(t, dtype, y(src).Floats(), r.mi, c)
						if S == 1 || s.name == "metal" {
							require.Equal(t, r.ws0, ws(src).Data, "ws untouched")
							return
						}
						// forward.cu with S > 1: y is its partials added in split order.
						part, got := ws(src).Floats(), y(src).Floats()
						for row := range c.rows {
							for o := range c.out {
								v := part[row*c.out+o]
								for sp := 1; sp < S; sp++ {
									v += part[(sp*c.rows+row)*c.out+o]
								}
								if c.bias {
									v += r.mi.b[o]
								}
								if c.acc {
									v += r.mi.y0[row*c.out+o]
								}
								if math.Float32bits(v) != math.Float32bits(got[row*c.out+o]) {
									require.Equalf(t, math.Float32bits(v), math.Float32bits(got[row*c.out+o]), "row %d out %d: y from ws's partials", row, o)
								}
							}
						}
					})
				}
			})
		}
	}
}

func u32sOf(b *Buf) []uint32 {
	v := make([]uint32, len(b.Data)/4)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(b.Data[4*i:])
	}
	return v
}

// requireMatMulWG holds matmul_wg_W's outputs to the exact product through
// requireMatMulTC. The split costs rel*sum|x w| + abs*sum|w| (tcSplit).
// Every product of two 16-bit values is exact in f32, and each of the
// 2*in hi and lo products (the zero padding adds exact zeros) passes
// through at most d = 64*ceil(in/64) additions in its split's hi or lo
// sum, one for hi + lo, S - 1 for the splits, one each for bias and y: an
// error of at most gamma(d + S + 2) times the terms' magnitudes, which are
// sum |w| (|hi| + |lo|) + |bias| + |y|, and |hi| + |lo| <= (1 + 2^-7)|x|
// + 2^-23 (the 2^-23: f16 parts in the subnormal range, at most one step
// 2^-24 each past their share of |x|). requireMatMulTC counts (1 +
// 2^-7)|x| and |bias| + |y|; the 2^-23 sum|w| goes in with abs.
func requireMatMulWG(t *testing.T, dtype string, got []float32, mi matMulInputs, c wgCase) {
	t.Helper()
	rel, abs := tcSplit(dtype)
	n := float64(64*ceilDiv(c.in, 64) + ceilDiv(c.in, c.ks) + 2)
	gamma := n * u32 / (1 - n*u32)
	abs += gamma * 0x1p-23
	requireMatMulTC(t, got, mi.x, mi.w, mi.y0, mi.b, mi.ref, c.rows, c.in, c.out, c.bias, c.acc, rel, abs, gamma)
}

// TestMatMulWGRefusesWhatItCannotDo: launches outside the pair's contract
// write nothing, on both sources: wg_split_x_W and matmul_wg_W with 65
// rows (past the 64 an m64 tile's N = 2R columns hold) or none, and
// matmul_wg_W with ks = 0 or ks = 96 (not a multiple of the 64-wide
// stage). y, the image, ws and cnt keep their initial bytes (y random,
// the image a real one for 64 rows, ws 0xff); each matmul launch's grid
// is the one it would have (ks = 64 where ks is refused), so blocks that
// would write are there.
func TestMatMulWGRefusesWhatItCannotDo(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	const in, out = 200, 300
	for _, dtype := range []string{"bf16", "f16"} {
		t.Run(dtype, func(t *testing.T) {
			w := makeWeights(rng, dtype, out*in, 0.1)
			x := randF32(rng, 65*in, 1)
			img := wgImage(dtype, x, 64, in)
			img = append(img, make([]byte, wgImageBytes(65, in)-len(img))...) // room for R = 80
			xs := &Buf{Data: img}
			split := filled(wgImageBytes(65, in), 0xa5)
			xb := F32s(x)
			y := F32s(randF32(rng, 65*out, 1))
			ws := filled(4*ceilDiv(in, 64)*65*out, 0xff)
			cnt := U32s(make([]uint32, ceilDiv(out, 128)))
			mm := func(rows, ks, gridKS int) Launch {
				return Launch{"matmul_wg_" + dtype, wgGrid(in, out, gridKS), []Arg{y, xs, w.buf, Null{}, ws, cnt, U32(rows), U32(in), U32(out), U32(1), U32(ks)}}
			}
			ls := []Launch{
				{"wg_split_x_" + dtype, wgSplitGrid(65, in), []Arg{split, xb, U32(65), U32(in)}},
				{"wg_split_x_" + dtype, wgSplitGrid(64, in), []Arg{split, xb, U32(0), U32(in)}},
				mm(65, 64, 64), mm(65, 256, 256), mm(0, 64, 64), mm(64, 0, 64), mm(64, 96, 96), mm(64, 96, 64),
				// in = 0 (no split to take), at ks 64 and at the largest ks,
				// where ceil(in / ks) computed as (in + ks - 1) / ks would wrap
				{"matmul_wg_" + dtype, 4, []Arg{y, xs, w.buf, Null{}, ws, cnt, U32(64), U32(0), U32(out), U32(1), U32(64)}},
				{"matmul_wg_" + dtype, 4, []Arg{y, xs, w.buf, Null{}, ws, cnt, U32(64), U32(0), U32(out), U32(1), U32(0xffffffc0)}},
			}
			init := []*Buf{y, xs, split, ws, cnt}
			before := make([][]byte, len(init))
			for i, b := range init {
				before[i] = append([]byte(nil), b.Data...)
			}
			outs := runSeq(t, ls, true, init...)
			each(t, outs, func(t *testing.T, b []*Buf) {
				for i, what := range []string{"y", "the image", "the split's output", "ws", "cnt"} {
					require.Equal(t, before[i], b[i].Data, "%s keeps its bytes", what)
				}
			})
		})
	}
}

// TestMatMulWGLeavesItsParts: with accumulate = 2 (FW_WG_LEAVE_PARTS)
// matmul_wg_W and matmul_wgs_W write their split partials to ws and
// nothing to y or cnt, and rmsnorm_fused_W's residual add of those
// partials gives the bytes of y the same product writes with accumulate
// = 1 (its last block's adds). Both sources write the same partials. S =
// 1 (ks past in), 3, and 8 over the 1B shape's hidden size (o at 32
// rows).
func TestMatMulWGLeavesItsParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	cases := []wgCase{
		{17, 200, 300, 1024, true, true},
		{5, 600, 130, 256, false, true},
		{32, 2048, 256, 256, false, true},
	}
	for _, kernel := range []string{"matmul_wg_", "matmul_wgs_"} {
		for _, dtype := range []string{"bf16", "f16"} {
			for _, c := range cases {
				S := ceilDiv(c.in, c.ks)
				t.Run(fmt.Sprintf("%s%s/%dx%dx%d/S=%d/bias=%v", kernel, dtype, c.rows, c.in, c.out, S, c.bias), func(t *testing.T) {
					mi := newMatMulInputs(rng, dtype, c.rows, c.in, c.out, c.bias, true, 0)
					xs := filled(wgImageBytes(c.rows, c.in), 0xff)
					cnt := U32s(make([]uint32, ceilDiv(c.out, 128)))
					yAdds, yParts := F32s(mi.y0), F32s(mi.y0)
					wsAdds, wsParts := filled(4*S*c.rows*c.out, 0xff), filled(4*S*c.rows*c.out, 0xff)
					norm := F32s(randF32(rng, c.out, 1))
					out := F32s(make([]float32, c.rows*c.out))
					product := func(y, ws *Buf, acc uint32) Launch {
						return Launch{kernel + dtype, wgGrid(c.in, c.out, c.ks), []Arg{y, xs, mi.args[2], mi.args[3], ws, cnt,
							U32(c.rows), U32(c.in), U32(c.out), U32(acc), U32(c.ks)}}
					}
					outs := runSeq(t, []Launch{
						{"wg_split_x_" + dtype, wgSplitGrid(c.rows, c.in), []Arg{xs, mi.args[1], U32(c.rows), U32(c.in)}},
						product(yAdds, wsAdds, 1),
						product(yParts, wsParts, 2),
					}, false, yAdds, yParts, wsParts, cnt)
					for src := range sources {
						require.Equal(t, F32s(mi.y0).Data, outs[src][1].Data, "%s: y untouched", sources[src].name)
						require.Equal(t, make([]uint32, ceilDiv(c.out, 128)), u32sOf(outs[src][3]), "%s: the counts stay zero", sources[src].name)
					}
					require.Equal(t, outs[0][2].Data, outs[1][2].Data, "the MSL port writes forward.cu's partials")
					res := runSeq(t, []Launch{{"rmsnorm_fused_f32", c.rows, []Arg{out, outs[0][1], outs[0][2], mi.args[3], norm,
						U32(S), U32(c.rows), U32(c.out), F32(1e-5), Null{}, U32(0)}}}, true, outs[0][1])
					each(t, res, func(t *testing.T, b []*Buf) {
						require.Equal(t, outs[0][0].Data, b[0].Data, "the residual add of the partials: the product's own bytes of y")
					})
				})
			}
		}
	}
}

// TestWGSiluSplitX: wg_silu_split_x_W writes, byte for byte, the image
// wg_split_x_W makes of silu_mul_f32's output, from gate|up in one launch;
// on both sources. Shapes: a partial 16-row tile, inter not a multiple of
// 4 (the scalar loads) or of 64 (a partial stage), 64 rows.
func TestWGSiluSplitX(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 50))
	for _, c := range []struct{ rows, inter int }{{5, 200}, {17, 130}, {32, 1024}, {64, 72}} {
		for _, dtype := range []string{"bf16", "f16"} {
			t.Run(fmt.Sprintf("%s/%dx%d", dtype, c.rows, c.inter), func(t *testing.T) {
				gu := F32s(randF32(rng, c.rows*2*c.inter, 3))
				act := F32s(make([]float32, c.rows*c.inter))
				want, got := filled(wgImageBytes(c.rows, c.inter), 0xff), filled(wgImageBytes(c.rows, c.inter), 0xff)
				grid := wgSplitGrid(c.rows, c.inter)
				outs := runSeq(t, []Launch{
					{"silu_mul_f32", ceilDiv(c.rows*c.inter, 256), []Arg{act, gu, U32(c.rows), U32(c.inter)}},
					{"wg_split_x_" + dtype, grid, []Arg{want, act, U32(c.rows), U32(c.inter)}},
					{"wg_silu_split_x_" + dtype, grid, []Arg{got, gu, U32(c.rows), U32(c.inter)}},
				}, true, want, got)
				each(t, outs, func(t *testing.T, b []*Buf) {
					require.Equal(t, b[0].Data, b[1].Data, "the image of silu_mul_f32's output")
				})
			})
		}
	}
}

// TestMatMulWGSilu: with accumulate = 4 (FW_WG_SILU) matmul_wg_W and
// matmul_wgs_W over gate|up (out = 2 inter) write, instead of y, byte for
// byte the image wg_silu_split_x_W makes of the y they write with
// accumulate 0 (bias included), over a buffer of 0xff bytes: rows past
// rows zero, a partial 16-row tile, in not a multiple of 64; on both
// sources. A split of in, or inter not a multiple of 64, writes nothing.
func TestMatMulWGSilu(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, kernel := range []string{"matmul_wg_", "matmul_wgs_"} {
		for _, dtype := range []string{"bf16", "f16"} {
			for _, c := range []struct {
				rows, in, inter int
				bias            bool
			}{{5, 200, 64, true}, {32, 2048, 256, false}, {17, 136, 128, true}, {64, 64, 192, false}} {
				t.Run(fmt.Sprintf("%s%s/%dx%dx%d/bias=%v", kernel, dtype, c.rows, c.in, 2*c.inter, c.bias), func(t *testing.T) {
					out, ks := 2*c.inter, ceilDiv(c.in, 64)*64
					mi := newMatMulInputs(rng, dtype, c.rows, c.in, out, c.bias, false, 0)
					xs := filled(wgImageBytes(c.rows, c.in), 0xff)
					cnt := U32s(make([]uint32, ceilDiv(out, 128)))
					ws := F32s(make([]float32, c.rows*out))
					gu := F32s(make([]float32, c.rows*out))
					want, got := filled(wgImageBytes(c.rows, c.inter), 0xff), filled(wgImageBytes(c.rows, c.inter), 0xff)
					product := func(y *Buf, acc uint32) Launch {
						return Launch{kernel + dtype, wgGrid(c.in, out, ks), []Arg{y, xs, mi.args[2], mi.args[3], ws, cnt,
							U32(c.rows), U32(c.in), U32(out), U32(acc), U32(ks)}}
					}
					outs := runSeq(t, []Launch{
						{"wg_split_x_" + dtype, wgSplitGrid(c.rows, c.in), []Arg{xs, mi.args[1], U32(c.rows), U32(c.in)}},
						product(gu, 0),
						{"wg_silu_split_x_" + dtype, wgSplitGrid(c.rows, c.inter), []Arg{want, gu, U32(c.rows), U32(c.inter)}},
						product(got, 4),
					}, true, want, got)
					each(t, outs, func(t *testing.T, b []*Buf) {
						require.Equal(t, b[0].Data, b[1].Data, "the image of silu_mul_f32's output of the product")
					})
				})
			}
			t.Run(kernel+dtype+"/refused", func(t *testing.T) {
				rows, in := 16, 256
				for _, c := range []struct {
					name    string
					out, ks int
				}{{"in split", 256, 128}, {"inter 96", 192, 256}} {
					mi := newMatMulInputs(rng, dtype, rows, in, c.out, false, false, 0)
					xs := filled(wgImageBytes(rows, in), 0)
					img := filled(wgImageBytes(rows, c.out/2), 0xff)
					ws, cnt := F32s(make([]float32, 2*rows*c.out)), U32s(make([]uint32, ceilDiv(c.out, 128)))
					outs := runSeq(t, []Launch{{kernel + dtype, wgGrid(in, c.out, c.ks), []Arg{img, xs, mi.args[2], mi.args[3], ws, cnt,
						U32(rows), U32(in), U32(c.out), U32(4), U32(c.ks)}}}, true, img)
					for src := range sources {
						require.Equal(t, filled(wgImageBytes(rows, c.out/2), 0xff).Data, outs[src][0].Data, "%s: %s: nothing written", sources[src].name, c.name)
					}
				}
			})
		}
	}
}
