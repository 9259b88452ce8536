package cpu

import (
	"errors"
	"fmt"
	"math"

	"github.com/hipgo/hipgo/model/internal/quant"
)

// Matrix is a row-major [Rows, Cols] weight (a Linear layer's [out, in]):
// exactly one of F32, BF16 and Q holds its Rows*Cols elements. Q holds Rows
// rows of quant.RowBytes(QType, Cols) bytes each, in a GGUF block format
// (or F16), decoded inside the products and never widened whole.
type Matrix struct {
	Rows, Cols int
	F32        []float32
	BF16       []uint16
	Q          []byte
	QType      quant.Type
}

// ErrMatrix reports a Matrix whose storage does not match its shape.
var ErrMatrix = errors.New("cpu: malformed matrix")

// Bytes is the memory the weight occupies.
func (m *Matrix) Bytes() int64 {
	switch {
	case m.Q != nil:
		return int64(len(m.Q))
	case m.BF16 != nil:
		return int64(len(m.BF16)) * 2
	}
	return int64(len(m.F32)) * 4
}

// Validate checks that exactly one storage holds the matrix and that its
// length matches Rows and Cols (for Q: whole blocks per row of QType).
// The products assume a valid matrix; loaders call this once.
func (m *Matrix) Validate() error {
	set := 0
	for _, nonNil := range []bool{m.F32 != nil, m.BF16 != nil, m.Q != nil} {
		if nonNil {
			set++
		}
	}
	if set != 1 || m.Rows < 0 || m.Cols < 0 {
		return fmt.Errorf("%w: [%d, %d] with %d storages set (want exactly one)", ErrMatrix, m.Rows, m.Cols, set)
	}
	n := int64(m.Rows) * int64(m.Cols)
	switch {
	case m.F32 != nil && int64(len(m.F32)) != n:
		return fmt.Errorf("%w: [%d, %d] holds %d float32 values", ErrMatrix, m.Rows, m.Cols, len(m.F32))
	case m.BF16 != nil && int64(len(m.BF16)) != n:
		return fmt.Errorf("%w: [%d, %d] holds %d bfloat16 values", ErrMatrix, m.Rows, m.Cols, len(m.BF16))
	case m.Q != nil:
		rb, err := quant.RowBytes(m.QType, m.Cols)
		if err != nil {
			return fmt.Errorf("%w: [%d, %d]: %w", ErrMatrix, m.Rows, m.Cols, err)
		}
		if int64(len(m.Q)) != int64(m.Rows)*int64(rb) {
			return fmt.Errorf("%w: [%d, %d] of %v holds %d bytes (want %d)", ErrMatrix, m.Rows, m.Cols, m.QType, len(m.Q), int64(m.Rows)*int64(rb))
		}
	}
	return nil
}

// Row widens row j into dst (Cols values), whatever the storage: an
// embedding lookup. It fails when j is out of range or the matrix invalid.
func (m *Matrix) Row(dst []float32, j int) error {
	if j < 0 || j >= m.Rows || len(dst) != m.Cols {
		return fmt.Errorf("%w: row %d into %d values of a [%d, %d] matrix", ErrMatrix, j, len(dst), m.Rows, m.Cols)
	}
	K := m.Cols
	switch {
	case m.Q != nil:
		rb, err := quant.RowBytes(m.QType, K)
		if err != nil || len(m.Q) < (j+1)*rb {
			return fmt.Errorf("%w: row %d of a [%d, %d] %v matrix of %d bytes", ErrMatrix, j, m.Rows, K, m.QType, len(m.Q))
		}
		return quant.DequantizeRow(m.QType, m.Q[j*rb:(j+1)*rb], dst)
	case m.BF16 != nil && len(m.BF16) >= (j+1)*K:
		BF16ToF32(dst, m.BF16[j*K:(j+1)*K])
	case m.F32 != nil && len(m.F32) >= (j+1)*K:
		copy(dst, m.F32[j*K:(j+1)*K])
	default:
		return fmt.Errorf("%w: row %d of a [%d, %d] matrix with short storage", ErrMatrix, j, m.Rows, K)
	}
	return nil
}

// tileT bounds how many input rows one pass over a weight row touches, so the
// block of activations stays in the core's L2 cache during prefill.
const tileT = 32

// MatMul computes out[t*Rows+j] = x[t] · W[j] + bias[j] for t < T, where x
// holds T rows of Cols values. Where useTiles says so it runs the tiled
// product (gemm.go). Otherwise rows of W are split over the pool and each
// weight row is read once per tile of tileT inputs: through dotBF16 or
// quant.DotRow when T == 1 (decode); for more inputs a bf16 row through
// dot4BF16 where the kernel set has it, else widened (as quantized rows
// are) once per tile into a per-worker buffer for dot4.
func (p *Pool) MatMul(out, x []float32, T int, w *Matrix, bias []float32) {
	if useTiles(T, w) {
		p.matMulTiles(out, x, T, w, bias)
		return
	}
	K, N := w.Cols, w.Rows
	rb := 0 // bytes per quantized row; shapes were validated at load
	if w.Q != nil {
		rb, _ = quant.RowBytes(w.QType, K)
	}
	p.For(N, 4*p.workers, 16, func(lo, hi int) {
		var wide []float32 // a bf16 or quantized row widened once, reused across the tile
		if T > 1 && (w.Q != nil || w.BF16 != nil && dot4BF16 == nil) {
			wide = make([]float32, K)
		}
		for t0 := 0; t0 < T; t0 += tileT {
			t1 := min(T, t0+tileT)
			for j := lo; j < hi; j++ {
				var b float32
				if bias != nil {
					b = bias[j]
				}
				var row []float32
				switch {
				case w.F32 != nil:
					row = w.F32[j*K : (j+1)*K]
				case w.Q != nil && T == 1:
					out[j] = quant.DotRow(w.QType, w.Q[j*rb:(j+1)*rb], x[:K]) + b
					continue
				case w.Q != nil:
					if err := quant.DequantizeRow(w.QType, w.Q[j*rb:(j+1)*rb], wide); err != nil {
						fillNaN(wide) // unreachable for a validated matrix; never silently zero
					}
					row = wide
				case T == 1:
					out[j] = dotBF16(x[:K], w.BF16[j*K:(j+1)*K]) + b
					continue
				case dot4BF16 != nil:
					// Straight from the bf16 row: one read of it from
					// memory, into registers, for the first four inputs.
					rowProducts(out, x, w.BF16[j*K:(j+1)*K], N, j, t0, t1, b, dot4BF16, dotBF16)
					continue
				default:
					BF16ToF32(wide, w.BF16[j*K:(j+1)*K])
					row = wide
				}
				rowProducts(out, x, row, N, j, t0, t1, b, dot4, dotRow)
			}
		}
	})
}

// rowProducts writes out[t*N+j] = x[t] · row + b for t0 <= t < t1, four
// inputs a call of four and the rest one by one.
func rowProducts[E float32 | uint16](out, x []float32, row []E, N, j, t0, t1 int, b float32,
	four func(w []E, x []float32, stride int, out *[4]float32), one func(x []float32, w []E) float32) {
	K := len(row)
	t := t0
	for ; t+4 <= t1; t += 4 {
		var o [4]float32
		four(row, x[t*K:(t+4)*K], K, &o)
		out[t*N+j] = o[0] + b
		out[(t+1)*N+j] = o[1] + b
		out[(t+2)*N+j] = o[2] + b
		out[(t+3)*N+j] = o[3] + b
	}
	for ; t < t1; t++ {
		out[t*N+j] = one(x[t*K:(t+1)*K], row) + b
	}
}

// dotRow is dot with rowProducts' argument order.
func dotRow(x, row []float32) float32 { return dot(row, x) }

func fillNaN(v []float32) {
	nan := float32(math.NaN())
	for i := range v {
		v[i] = nan
	}
}
