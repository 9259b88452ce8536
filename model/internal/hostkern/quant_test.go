package hostkern

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hipgo/hipgo/model/internal/quant"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/stretchr/testify/require"
)

// quantTypes are the block formats with kernels, by kernel suffix.
var quantTypes = []struct {
	suffix string
	t      quant.Type
}{{"q4_0", quant.Q4_0}, {"q4_1", quant.Q4_1}, {"q5_0", quant.Q5_0}, {"q5_1", quant.Q5_1}, {"q8_0", quant.Q8_0}, {"q4_k", quant.Q4_K}, {"q5_k", quant.Q5_K}, {"q6_k", quant.Q6_K}}

// randBlocks makes rows rows of n weights of type t: random quants and
// scales, with the float16 factors set to random moderate values (random
// bits would give infinities and NaNs) and returns the bytes and the
// reference decoding (quant.DequantizeRow).
func randBlocks(t *testing.T, rng *rand.Rand, typ quant.Type, rows, n int) ([]byte, []float32) {
	rb, err := quant.RowBytes(typ, n)
	require.NoError(t, err)
	data := make([]byte, rows*rb)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	f16 := func(b []byte, scale float64) {
		binary.LittleEndian.PutUint16(b, safetensors.Float32ToF16(float32((rng.Float64()*2-1)*scale)))
	}
	_, bs := quant.BlockSize(typ)
	for off := 0; off < len(data); off += bs {
		blk := data[off : off+bs]
		switch typ {
		case quant.Q4_0, quant.Q8_0, quant.Q5_0:
			f16(blk, 0.05)
		case quant.Q4_1, quant.Q5_1:
			f16(blk, 0.05)
			f16(blk[2:], 0.2)
		case quant.Q4_K, quant.Q5_K:
			f16(blk, 0.01)
			f16(blk[2:], 0.01)
		case quant.Q6_K:
			f16(blk[208:], 0.002)
		}
	}
	w := make([]float32, rows*n)
	for r := range rows {
		require.NoError(t, quant.DequantizeRow(typ, data[r*rb:(r+1)*rb], w[r*n:(r+1)*n]))
	}
	return data, w
}

// TestQuantEmbed: embed_Q's rows are bit-identical to quant.DequantizeRow
// (the decoders do the reference's float32 operations in its order), and
// out-of-range tokens give zero rows.
func TestQuantEmbed(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, qt := range quantTypes {
		elems, _ := quant.BlockSize(qt.t)
		for _, hidden := range []int{elems, 3 * elems, 9 * 32} {
			if hidden%elems != 0 {
				continue
			}
			t.Run(fmt.Sprintf("%s/hidden%d", qt.suffix, hidden), func(t *testing.T) {
				const vocab = 11
				data, w := randBlocks(t, rng, qt.t, vocab, hidden)
				tokens := []uint32{0, 10, 3, 11, 1 << 31, 3}
				out := F32s(make([]float32, len(tokens)*hidden))
				outs := runOn(t, qsources, Launch{"embed_" + qt.suffix, len(tokens),
					[]Arg{out, &Buf{Data: data}, U32s(tokens), U32(len(tokens)), U32(hidden), U32(vocab)}}, true, out)
				each(t, outs, func(t *testing.T, b []*Buf) {
					got := b[0].Floats()
					for i, id := range tokens {
						want := make([]float32, hidden)
						if id < vocab {
							copy(want, w[int(id)*hidden:])
						}
						require.Equalf(t, want, got[i*hidden:(i+1)*hidden], "token %d (id %d)", i, id)
					}
				})
			})
		}
	}
}

// TestQuantMatMul checks matmul_Q on both paths (rows < 64: matvec, rows >=
// 64: tiled), x and y on and off 16-byte boundaries, with and without bias
// and accumulate, for in of 1 block up to more units than a 32-lane group
// has lanes. The reference is float64 over quant.DequantizeRow's weights
// (which the kernels reproduce exactly, TestQuantEmbed): any float32
// summation of the n products is within gamma(n+2) * (sum |x_i w_i| +
// |bias| + |y0|), gamma(n) = n u / (1 - n u), which is the tolerance.
func TestQuantMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	type shape struct{ rows, blocks, out int }
	// blocks: in = blocks * the type's block elements. 9 K-blocks are 72
	// units (lanes wrap twice); 37 32-blocks, 37 units. 130 blocks (25
	// K-blocks) take matvec_Q through several shared-memory stages a row,
	// rows starting and ending off the 16-byte words it copies.
	shapes := []shape{{1, 1, 8}, {1, 9, 37}, {3, 2, 13}, {9, 3, 17}, {1, 37, 5}, {63, 1, 9}, {64, 2, 70}, {70, 3, 65}, {130, 1, 20}, {2, 130, 11}}
	for _, qt := range quantTypes {
		for i, s := range shapes {
			elems, _ := quant.BlockSize(qt.t)
			in := s.blocks * elems
			if qt.t >= quant.Q4_K && s.blocks > 9 {
				in = 9 * elems // keep the host emulation quick
				if s.blocks > 100 {
					in = 25 * elems
				}
			}
			bias, acc, shift := i%3 == 1, i%2 == 1, 0
			if i%4 == 3 {
				shift = 4
			}
			t.Run(fmt.Sprintf("%s/%dx%dx%d/bias=%v/acc=%v/shift=%d", qt.suffix, s.rows, in, s.out, bias, acc, shift), func(t *testing.T) {
				checkQuantMatMul(t, rng, qt.suffix, qt.t, s.rows, in, s.out, bias, acc, shift)
			})
		}
	}
}

func checkQuantMatMul(t *testing.T, rng *rand.Rand, suffix string, typ quant.Type, rows, in, out int, bias, acc bool, shift int) {
	data, w := randBlocks(t, rng, typ, out, in)
	x := randF32(rng, rows*in, 1)
	y0 := randF32(rng, rows*out, 1)
	var b []float32
	var bArg Arg = Null{}
	if bias {
		b = randF32(rng, out, 1)
		bArg = F32s(b)
	}
	xb, yb := F32s(x), F32s(y0)
	xb.Shift, yb.Shift = shift, shift
	accU := U32(0)
	if acc {
		accU = 1
	}
	// matvec1_Q, matvec_Q and matmul_Q compute the same for any rows (the
	// backend takes matvec1_Q for one row, matvec_Q below 64), each with
	// its own grid.
	for _, k := range []struct {
		name string
		grid int
	}{{"matvec1_" + suffix, ceilDiv(out, 8) * rows}, {"matvec_" + suffix, ceilDiv(out, 8) * ceilDiv(rows, 8)}, {"matmul_" + suffix, ceilDiv(out, 64) * ceilDiv(rows, 64)}} {
		t.Run(k.name, func(t *testing.T) {
			// Both texts read x's values whatever its alignment and do
			// the same fma sequence: the same bytes always.
			outs := runOn(t, qsources, Launch{k.name, k.grid,
				[]Arg{yb, xb, &Buf{Data: data}, bArg, U32(rows), U32(in), U32(out), accU}}, true, yb)
			checkProducts(t, outs, x, w, b, y0, rows, in, out, bias, acc)
		})
	}
}

// checkProducts: every output is within gamma(in+2) of the exact
// float64 sum of its products (and bias and y0).
func checkProducts(t *testing.T, outs [][]*Buf, x, w, b, y0 []float32, rows, in, out int, bias, acc bool) {
	gamma := float64(in+2) * u32 / (1 - float64(in+2)*u32)
	each(t, outs, func(t *testing.T, ob []*Buf) {
		got := ob[0].Floats()
		worst := 0.0
		for r := range rows {
			for o := range out {
				var sum, mag float64
				for k := range in {
					p := float64(x[r*in+k]) * float64(w[o*in+k])
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
				tol := gamma*mag + 1e-30
				g := float64(got[r*out+o])
				require.LessOrEqualf(t, math.Abs(g-sum), tol, "row %d out %d: kernel %v, exact %v", r, o, g, sum)
				worst = max(worst, math.Abs(g-sum)/tol)
			}
		}
		t.Logf("worst error %.3f of the bound", worst)
	})
}

// TestQuantMatMulBadIn: an in that is not a whole number of blocks makes
// the kernel write nothing (the host checks first; the kernel must not
// read past the rows).
func TestQuantMatMulBadIn(t *testing.T) {
	for _, k := range []string{"matvec_q4_k", "matmul_q4_k"} {
		y0 := []float32{1, 2, 3}
		yb := F32s(y0)
		outs := runOn(t, qsources, Launch{k, 1,
			[]Arg{yb, F32s(make([]float32, 100)), &Buf{Data: make([]byte, 144)}, Null{}, U32(1), U32(100), U32(3), U32(0)}}, true, yb)
		each(t, outs, func(t *testing.T, b []*Buf) { require.Equal(t, y0, b[0].Floats(), k) })
	}
}

// TestScatterCols: an unfused projection's [rows, cols] output lands in
// columns [off, off+cols) of rows of stride columns, nothing else moves.
func TestScatterCols(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	const rows, cols, stride, off = 5, 300, 700, 123
	src := randF32(rng, rows*cols, 1)
	dst0 := randF32(rng, rows*stride, 1)
	db := F32s(dst0)
	outs := runOn(t, qsources, Launch{"scatter_cols_f32", rows,
		[]Arg{db, F32s(src), U32(rows), U32(cols), U32(stride), U32(off)}}, true, db)
	want := append([]float32(nil), dst0...)
	for r := range rows {
		copy(want[r*stride+off:], src[r*cols:(r+1)*cols])
	}
	each(t, outs, func(t *testing.T, b []*Buf) { require.Equal(t, want, b[0].Floats()) })
}

// TestQuantDequant: dequant_Q writes each weight as quant.DequantizeRow
// decodes it, rounded to the nearest float16 (safetensors.Float32ToF16),
// at every row and column, for shapes whose pieces do not fill the last
// block of threads.
func TestQuantDequant(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, qt := range quantTypes {
		elems, _ := quant.BlockSize(qt.t)
		for _, s := range []struct{ out, blocks int }{{1, 1}, {3, 2}, {37, 3}} {
			in := s.blocks * elems
			t.Run(fmt.Sprintf("%s/%dx%d", qt.suffix, s.out, in), func(t *testing.T) {
				data, w := randBlocks(t, rng, qt.t, s.out, in)
				dst := U16s(make([]uint16, s.out*in))
				for i := range dst.Data {
					dst.Data[i] = 0xff // no weight is 0xffff (a NaN): a missed one shows
				}
				outs := runOn(t, qsources, Launch{"dequant_" + qt.suffix, ceilDiv(s.out*in/8, 256),
					[]Arg{dst, &Buf{Data: data}, U32(s.out), U32(in)}}, true, dst)
				each(t, outs, func(t *testing.T, b []*Buf) {
					for i, v := range w {
						got := binary.LittleEndian.Uint16(b[0].Data[2*i:])
						require.Equalf(t, safetensors.Float32ToF16(v), got, "row %d col %d: %v", i/in, i%in, v)
					}
				})
			})
		}
	}
}
