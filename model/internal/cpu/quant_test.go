package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hipgo/hipgo/model/internal/quant"
	"github.com/stretchr/testify/require"
)

// halfFields are the byte offsets of the float16 scales in one block of
// each quantized type (ggml-common.h); randQuant writes moderate values there.
var halfFields = map[quant.Type][]int{
	quant.F16: {0}, quant.Q4_0: {0}, quant.Q4_1: {0, 2}, quant.Q5_0: {0}, quant.Q5_1: {0, 2},
	quant.Q8_0: {0}, quant.Q4_K: {0, 2}, quant.Q5_K: {0, 2}, quant.Q6_K: {208},
}

// randQuant returns rows x cols random weights of type t: random codes,
// float16 scales of either sign between about 2^-7 and 2^-3.
func randQuant(r *rand.Rand, t quant.Type, rows, cols int) []byte {
	rb, err := quant.RowBytes(t, cols)
	if err != nil {
		panic(err)
	}
	q := make([]byte, rows*rb)
	for i := range q {
		q[i] = byte(r.Uint32())
	}
	_, bs := quant.BlockSize(t)
	for b := 0; b < len(q); b += bs {
		for _, off := range halfFields[t] {
			h := uint16(0x2000+r.IntN(0x1000)) | uint16(r.IntN(2))<<15
			q[b+off], q[b+off+1] = byte(h), byte(h>>8)
		}
	}
	return q
}

// TestMatMulQuantized proves the product over quantized weights equals the
// float64 product of x with the rows as quant.DequantizeRow widens them,
// plus bias: decode (T=1, the fused DotRow) and prefill (T>1, rows widened
// per tile), across the tileT boundary, on a multi-worker pool.
func TestMatMulQuantized(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	p := NewPool(3)
	for _, typ := range []quant.Type{quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.Q8_0, quant.Q4_K, quant.Q5_K, quant.Q6_K, quant.F16} {
		elems, _ := quant.BlockSize(typ)
		cols := max(elems, 32) * 2
		for _, tc := range []struct{ rows, T int }{{1, 1}, {37, 1}, {130, 1}, {19, 3}, {21, 35}} {
			checkMatMulQuant(t, r, p, typ, tc.rows, cols, tc.T)
		}
	}
}

func checkMatMulQuant(t *testing.T, r *rand.Rand, p *Pool, typ quant.Type, rows, cols, T int) {
	t.Helper()
	w := Matrix{Rows: rows, Cols: cols, Q: randQuant(r, typ, rows, cols), QType: typ}
	require.NoError(t, w.Validate())
	rb, _ := quant.RowBytes(typ, cols)
	require.Equal(t, int64(rows*rb), w.Bytes())
	x := randVec(r, T*cols)
	bias := randVec(r, rows)
	out := make([]float32, T*rows)
	p.MatMul(out, x, T, &w, bias)
	row := make([]float32, cols)
	for j := range rows {
		require.NoError(t, w.Row(row, j))
		var wmax float64
		for _, v := range row {
			wmax = max(wmax, math.Abs(float64(v)))
		}
		for tt := range T {
			xt := x[tt*cols : (tt+1)*cols]
			var xabs float64
			for _, v := range xt {
				xabs += math.Abs(float64(v))
			}
			want := dot64(row, xt) + float64(bias[j])
			// Scales factored out per block: the error is bounded by the
			// block magnitudes (see quant's dotTolerance), here the row's.
			tol := 4e-5*xabs*wmax + 1e-6*math.Abs(float64(bias[j]))
			require.InDelta(t, want, float64(out[tt*rows+j]), tol, "%v rows=%d cols=%d T=%d t=%d j=%d", typ, rows, cols, T, tt, j)
		}
	}
}

// TestMatrixValidateAndRow proves Validate rejects every storage that does
// not match the shape, and Row widens each storage or fails cleanly.
func TestMatrixValidateAndRow(t *testing.T) {
	q := randQuant(rand.New(rand.NewPCG(1, 1)), quant.Q8_0, 2, 64)
	for _, tc := range []struct {
		name string
		m    Matrix
		ok   bool
	}{
		{"f32", Matrix{Rows: 2, Cols: 3, F32: make([]float32, 6)}, true},
		{"bf16", Matrix{Rows: 2, Cols: 3, BF16: make([]uint16, 6)}, true},
		{"q8_0", Matrix{Rows: 2, Cols: 64, Q: q, QType: quant.Q8_0}, true},
		{"none", Matrix{Rows: 2, Cols: 3}, false},
		{"two", Matrix{Rows: 2, Cols: 3, F32: make([]float32, 6), BF16: make([]uint16, 6)}, false},
		{"f32 short", Matrix{Rows: 2, Cols: 3, F32: make([]float32, 5)}, false},
		{"bf16 long", Matrix{Rows: 2, Cols: 3, BF16: make([]uint16, 7)}, false},
		{"q short", Matrix{Rows: 2, Cols: 64, Q: q[:len(q)-1], QType: quant.Q8_0}, false},
		{"q partial block", Matrix{Rows: 2, Cols: 48, Q: q, QType: quant.Q8_0}, false},
		{"q unknown type", Matrix{Rows: 2, Cols: 64, Q: q, QType: 10}, false}, // ggml's Q2_K
		{"negative", Matrix{Rows: -1, Cols: 3, F32: []float32{}}, false},
	} {
		err := tc.m.Validate()
		if tc.ok {
			require.NoError(t, err, tc.name)
			dst := make([]float32, tc.m.Cols)
			require.NoError(t, tc.m.Row(dst, 1), tc.name)
			require.ErrorIs(t, tc.m.Row(dst, 2), ErrMatrix, tc.name)
			require.ErrorIs(t, tc.m.Row(dst[1:], 0), ErrMatrix, tc.name)
		} else {
			require.ErrorIs(t, err, ErrMatrix, tc.name)
		}
	}
	// Row of a quantized matrix is the second row's DequantizeRow.
	m := Matrix{Rows: 2, Cols: 64, Q: q, QType: quant.Q8_0}
	got, want := make([]float32, 64), make([]float32, 64)
	require.NoError(t, m.Row(got, 1))
	require.NoError(t, quant.DequantizeRow(quant.Q8_0, q[68:], want))
	require.Equal(t, want, got)
}
