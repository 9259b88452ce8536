package cpu

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkMatVec measures one decode-shaped product (SmolLM-135M's tied
// head, 49152x576, larger than any cache) on one goroutine per variant:
// memory bandwidth is what decode speed rests on.
func BenchmarkMatVec(b *testing.B) {
	const rows, cols = 49152, 576
	r := rand.New(rand.NewPCG(1, 1))
	wv := randVec(r, rows*cols)
	x := randVec(r, cols)
	out := make([]float32, rows)
	p := NewPool(1)
	def := SIMD()
	defer SetKernels(def)
	for name := range variants {
		for _, bf := range []bool{false, true} {
			w := Matrix{Rows: rows, Cols: cols, F32: wv}
			label := name + "/f32"
			if bf {
				w = Matrix{Rows: rows, Cols: cols, BF16: toBF16(wv)}
				label = name + "/bf16"
			}
			b.Run(label, func(b *testing.B) {
				if err := SetKernels(name); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(w.Bytes())
				for b.Loop() {
					p.MatMul(out, x, 1, &w, nil)
				}
			})
		}
	}
}
