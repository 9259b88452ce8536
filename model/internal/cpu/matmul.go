package cpu

// Matrix is a row-major [Rows, Cols] weight (a Linear layer's [out, in]):
// exactly one of F32 and BF16 holds its Rows*Cols elements.
type Matrix struct {
	Rows, Cols int
	F32        []float32
	BF16       []uint16
}

// Bytes is the memory the weight occupies.
func (m *Matrix) Bytes() int64 {
	if m.BF16 != nil {
		return int64(len(m.BF16)) * 2
	}
	return int64(len(m.F32)) * 4
}

// tileT bounds how many input rows one pass over a weight row touches, so the
// block of activations stays in the core's L2 cache during prefill.
const tileT = 32

// MatMul computes out[t*Rows+j] = x[t] · W[j] + bias[j] for t < T, where x
// holds T rows of Cols values. Rows of W are split over the pool; each weight
// row is read once per tile of tileT inputs.
func (p *Pool) MatMul(out, x []float32, T int, w *Matrix, bias []float32) {
	K, N := w.Cols, w.Rows
	p.For(N, 4*p.workers, 16, func(lo, hi int) {
		var wide []float32 // a bf16 row widened once, reused across the tile
		if w.BF16 != nil && T > 1 {
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
				case T == 1:
					out[j] = dotBF16(x[:K], w.BF16[j*K:(j+1)*K]) + b
					continue
				default:
					BF16ToF32(wide, w.BF16[j*K:(j+1)*K])
					row = wide
				}
				t := t0
				for ; t+4 <= t1; t += 4 {
					var o [4]float32
					dot4(row, x[t*K:(t+4)*K], K, &o)
					out[t*N+j] = o[0] + b
					out[(t+1)*N+j] = o[1] + b
					out[(t+2)*N+j] = o[2] + b
					out[(t+3)*N+j] = o[3] + b
				}
				for ; t < t1; t++ {
					out[t*N+j] = dot(row, x[t*K:(t+1)*K]) + b
				}
			}
		}
	})
}
