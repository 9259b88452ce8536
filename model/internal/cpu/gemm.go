package cpu

import (
	"sync"

	"github.com/hipgo/hipgo/model/internal/quant"
)

// The tiled product (matMulTiles) runs where a kernel set has a gemm
// kernel: gemmJ weight rows against gemmT input rows at a time.
const (
	gemmT = 16 // input rows a tile: two vectors of 8 (see gemm6x16AVX2)
	gemmJ = 6  // weight rows broadcast against a tile
	// gemmMinT is the fewest input rows that take the tiled product; below
	// it a tile would be mostly padding. bf16 weights, which dot4BF16
	// reads straight into registers, take it from gemmMinTBF16: in batched
	// decode (the weights streamed from memory) 8 to 12 rows ran faster on
	// dot4BF16 than on the tiles.
	gemmMinT     = 8
	gemmMinTBF16 = 16
)

// useTiles: whether MatMul takes the tiled product for T inputs of w.
func useTiles(T int, w *Matrix) bool {
	switch {
	case gemm6x16 == nil:
		return false
	case w.BF16 != nil && dot4BF16 != nil:
		return T >= gemmMinTBF16
	}
	return T >= gemmMinT
}

// gemm6x16 is the active kernel set's tile kernel, or nil where it has
// none (then MatMul keeps its row-by-row products): acc[r*16+c] = w[r*ldw:
// r*ldw+k] · (column c of xt, stored k-major: xt[i*16+c]).
var gemm6x16 func(xt, w []float32, k, ldw int, acc *[gemmJ * gemmT]float32)

// gemm6x16Generic is the tile kernel's definition in Go, the reference the
// assembly is tested against.
func gemm6x16Generic(xt, w []float32, k, ldw int, acc *[gemmJ * gemmT]float32) {
	*acc = [gemmJ * gemmT]float32{}
	for i := range k {
		col := xt[i*gemmT : (i+1)*gemmT]
		for r := range gemmJ {
			wv := w[r*ldw+i]
			a := acc[r*gemmT : (r+1)*gemmT]
			for c := range gemmT {
				a[c] += wv * col[c]
			}
		}
	}
}

// tileBuffers recycles the transposed inputs of matMulTiles (T*K floats a
// call, megabytes in a long prefill).
var tileBuffers sync.Pool

// matMulTiles is MatMul where useTiles says so. x is first
// transposed into tiles of gemmT rows stored k-major (zeros past T); then
// each worker takes runs of gemmJ weight rows, widens bf16 or quantized
// rows once into its buffer (f32 rows are read in place), and runs the
// kernel over every tile. So each weight row is read from memory once per
// call, where the row-by-row path reads it once per tileT inputs, and the
// kernel's loads feed twice the FMAs of dot4's.
func (p *Pool) matMulTiles(out, x []float32, T int, w *Matrix, bias []float32) {
	K, N := w.Cols, w.Rows
	tiles := (T + gemmT - 1) / gemmT
	need := tiles * gemmT * K
	var xt []float32
	if b, ok := tileBuffers.Get().(*[]float32); ok && cap(*b) >= need {
		xt = (*b)[:need]
	} else {
		xt = make([]float32, need)
	}
	defer func() { tileBuffers.Put(&xt) }()
	p.For(tiles, p.workers, 1, func(lo, hi int) {
		for tile := lo; tile < hi; tile++ {
			dst := xt[tile*gemmT*K : (tile+1)*gemmT*K]
			for c := range gemmT {
				t := tile*gemmT + c
				if t >= T {
					for i := range K {
						dst[i*gemmT+c] = 0
					}
					continue
				}
				src := x[t*K : (t+1)*K]
				for i, v := range src {
					dst[i*gemmT+c] = v
				}
			}
		}
	})
	rb := 0
	if w.Q != nil {
		rb, _ = quant.RowBytes(w.QType, K)
	}
	groups := (N + gemmJ - 1) / gemmJ
	p.For(groups, 4*p.workers, 1, func(lo, hi int) {
		var buf []float32 // gemmJ rows widened; rows past N keep stale values, whose products are dropped
		var acc [gemmJ * gemmT]float32
		for g := lo; g < hi; g++ {
			j0 := g * gemmJ
			nj := min(gemmJ, N-j0)
			var rows []float32
			if w.F32 != nil && nj == gemmJ {
				rows = w.F32[j0*K : (j0+gemmJ)*K]
			} else {
				if buf == nil {
					buf = make([]float32, gemmJ*K)
				}
				for r := range nj {
					j, dst := j0+r, buf[r*K:(r+1)*K]
					switch {
					case w.F32 != nil:
						copy(dst, w.F32[j*K:(j+1)*K])
					case w.Q != nil:
						if err := quant.DequantizeRow(w.QType, w.Q[j*rb:(j+1)*rb], dst); err != nil {
							fillNaN(dst) // unreachable for a validated matrix; never silently zero
						}
					default:
						widenBF16(dst, w.BF16[j*K:(j+1)*K])
					}
				}
				rows = buf
			}
			for tile := range tiles {
				gemm6x16(xt[tile*gemmT*K:(tile+1)*gemmT*K], rows, K, K, &acc)
				t0 := tile * gemmT
				nt := min(gemmT, T-t0)
				for r := range nj {
					var b float32
					if bias != nil {
						b = bias[j0+r]
					}
					a := acc[r*gemmT : r*gemmT+nt]
					for c, v := range a {
						out[(t0+c)*N+j0+r] = v + b
					}
				}
			}
		}
	})
}
