package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
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

// BenchmarkMatVecQuant measures one decode-shaped product with 1536
// columns on one goroutine for every weight format, float32 and bfloat16
// included, per kernel set. Each format gets about 96 MiB of weights (three
// times this machine's 32 MiB L3, so the rows stream from memory as in
// decode). MB/s is weight bytes read; Gelem/s is weights consumed, which
// compares formats of different sizes; cpuGB/s is weight bytes per second
// of the thread's CPU time (Linux), which a loaded machine distorts less.
func BenchmarkMatVecQuant(b *testing.B) {
	const cols, target = 1536, 96 << 20
	r := rand.New(rand.NewPCG(2, 2))
	x := randVec(r, cols)
	formats := []string{"f32", "bf16"}
	for _, t := range quantFormats {
		formats = append(formats, t.String())
	}
	def := SIMD()
	defer SetKernels(def)
	p := NewPool(1)
	for _, f := range formats {
		var w Matrix
		switch f {
		case "f32":
			rows := target / (4 * cols)
			w = Matrix{Rows: rows, Cols: cols, F32: randVec(r, rows*cols)}
		case "bf16":
			rows := target / (2 * cols)
			w = Matrix{Rows: rows, Cols: cols, BF16: toBF16(randVec(r, rows*cols))}
		default:
			var t quant.Type
			for _, c := range quantFormats {
				if c.String() == f {
					t = c
				}
			}
			rb, _ := quant.RowBytes(t, cols)
			rows := target / rb
			w = Matrix{Rows: rows, Cols: cols, Q: randQuant(r, t, rows, cols), QType: t}
		}
		out := make([]float32, w.Rows)
		for _, name := range kernelNames() {
			b.Run(name+"/"+f, func(b *testing.B) {
				if err := SetKernels(name); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(w.Bytes())
				// A pool of one runs the product on this goroutine: pin it
				// to its thread so the thread's CPU time is the product's.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c0, ok := threadCPU()
				for b.Loop() {
					p.MatMul(out, x, 1, &w, nil)
				}
				b.ReportMetric(float64(w.Rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
				if c1, _ := threadCPU(); ok && c1 > c0 {
					b.ReportMetric(float64(w.Bytes())*float64(b.N)/(c1-c0).Seconds()/1e9, "cpuGB/s")
				}
			})
		}
	}
}

// quantFormats are the quantized formats BenchmarkMatVecQuant measures,
// widest first.
var quantFormats = []quant.Type{quant.F16, quant.Q8_0, quant.Q6_K, quant.Q5_K, quant.Q5_1, quant.Q5_0, quant.Q4_K, quant.Q4_1, quant.Q4_0}

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

// BenchmarkPrefillQuant measures prefill-shaped products (16, 64 and 512
// inputs, 1536x1536 weights) for f32, bf16 and quantized weights on the
// shared pool, with the row-by-row products (avx2-rows) and the tiled ones
// (avx2) side by side where both exist.
func BenchmarkPrefillQuant(b *testing.B) {
	defer func() { _ = SetKernels(SIMD()) }()
	sets := []string{SIMD()}
	if _, ok := variants["avx2-rows"]; ok {
		sets = []string{"avx2-rows", "avx2"}
	}
	const rows, cols = 1536, 1536
	r := rand.New(rand.NewPCG(3, 3))
	formats := map[string]Matrix{
		"f32":  {Rows: rows, Cols: cols, F32: randVec(r, rows*cols)},
		"bf16": {Rows: rows, Cols: cols, BF16: toBF16(randVec(r, rows*cols))},
	}
	for _, t := range []quant.Type{quant.Q8_0, quant.Q4_1, quant.Q4_K, quant.Q6_K} {
		formats[t.String()] = Matrix{Rows: rows, Cols: cols, Q: randQuant(r, t, rows, cols), QType: t}
	}
	for _, T := range []int{16, 64, 512} {
		x := randVec(r, T*cols)
		out := make([]float32, T*rows)
		for _, name := range []string{"f32", "bf16", "Q8_0", "Q4_1", "Q4_K", "Q6_K"} {
			w := formats[name]
			for _, set := range sets {
				b.Run(fmt.Sprintf("T%d/%s/%s", T, name, set), func(b *testing.B) {
					if err := SetKernels(set); err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						Shared().MatMul(out, x, T, &w, nil)
					}
					b.ReportMetric(float64(2*rows*cols*T)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}
