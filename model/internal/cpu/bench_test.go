package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/hipgo/hipgo/model/internal/quant"
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

// BenchmarkMatVecQuant measures one decode-shaped product (12288x1536,
// larger than any cache) on one goroutine for every weight format, float32
// and bfloat16 included, per kernel set. MB/s is weight bytes read;
// Gelem/s is weights consumed, which compares formats of different sizes.
func BenchmarkMatVecQuant(b *testing.B) {
	const rows, cols = 12288, 1536
	r := rand.New(rand.NewPCG(2, 2))
	wv := randVec(r, rows*cols)
	x := randVec(r, cols)
	out := make([]float32, rows)
	p := NewPool(1)
	formats := []struct {
		name string
		w    Matrix
	}{
		{"f32", Matrix{Rows: rows, Cols: cols, F32: wv}},
		{"bf16", Matrix{Rows: rows, Cols: cols, BF16: toBF16(wv)}},
	}
	for _, t := range []quant.Type{quant.F16, quant.Q8_0, quant.Q6_K, quant.Q5_K, quant.Q4_K, quant.Q4_1, quant.Q4_0} {
		formats = append(formats, struct {
			name string
			w    Matrix
		}{t.String(), Matrix{Rows: rows, Cols: cols, Q: randQuant(r, t, rows, cols), QType: t}})
	}
	def := SIMD()
	defer SetKernels(def)
	for _, name := range kernelNames() {
		for _, f := range formats {
			b.Run(name+"/"+f.name, func(b *testing.B) {
				if err := SetKernels(name); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(f.w.Bytes())
				for b.Loop() {
					p.MatMul(out, x, 1, &f.w, nil)
				}
				b.ReportMetric(float64(rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
			})
		}
	}
}

// kernelNames lists the kernel sets in a stable order.
func kernelNames() []string {
	var names []string
	for _, n := range []string{"generic", "avx2", "avx2-prefetch"} {
		if _, ok := variants[n]; ok {
			names = append(names, n)
		}
	}
	return names
}
