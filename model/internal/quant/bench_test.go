package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkDotRow measures each kernel's compute rate on rows that stay in
// the L2 cache (64 rows of 1536 elements), so memory bandwidth is out of
// the picture: BenchmarkMatVecQuant in package cpu measures the streaming
// rate. Gelem/s is weights consumed per second on one goroutine.
func BenchmarkDotRow(b *testing.B) {
	const rows, cols = 64, 1536
	r := rand.New(rand.NewPCG(5, 5))
	x := randVec(r, cols)
	defer func() { _ = SetKernels(Kernels()) }()
	def := Kernels()
	for _, typ := range allTypes {
		rb, _ := RowBytes(typ, cols)
		q := randRows(r, typ, rows, cols)
		for _, name := range []string{"generic", "avx2"} {
			if _, ok := variants[name]; !ok {
				continue
			}
			b.Run(name+"/"+typ.String(), func(b *testing.B) {
				_ = SetKernels(name)
				b.SetBytes(int64(len(q)))
				var sink float32
				for b.Loop() {
					for j := range rows {
						sink += DotRow(typ, q[j*rb:(j+1)*rb], x)
					}
				}
				b.ReportMetric(float64(rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
				_ = sink
			})
		}
	}
	_ = SetKernels(def)
}

// halfFields are the byte offsets of the float16 fields of each type's
// block (ggml-common.h).
var halfFields = map[Type][]int{Q4_0: {0}, Q4_1: {0, 2}, Q5_0: {0}, Q5_1: {0, 2}, Q8_0: {0}, Q4_K: {0, 2}, Q5_K: {0, 2}, Q6_K: {208}}

// randRows returns rows of random codes with normal float16 scales between
// about 2^-7 and 2^-3 (random float16 bits would include subnormals and
// NaN, whose arithmetic is slow on some CPUs and would distort timings).
// The float types get normally distributed values.
func randRows(r *rand.Rand, t Type, rows, cols int) []byte {
	rb, _ := RowBytes(t, rows*cols)
	q := make([]byte, rb)
	switch t {
	case F32, F16, BF16:
		for i, v := range randVec(r, rows*cols) {
			bits := math.Float32bits(v)
			switch t {
			case F32:
				binary.LittleEndian.PutUint32(q[4*i:], bits)
			case BF16:
				binary.LittleEndian.PutUint16(q[2*i:], uint16(bits>>16))
			default: // float16 of a value within 2^-14..2^15: rebias, truncate
				h := uint16(bits>>16)&0x8000 | uint16((int(bits>>23&0xff)-112)&0x1f)<<10 | uint16(bits>>13&0x3ff)
				binary.LittleEndian.PutUint16(q[2*i:], h)
			}
		}
		return q
	}
	for i := range q {
		q[i] = byte(r.Uint32())
	}
	_, bs := BlockSize(t)
	for b := 0; b < len(q); b += bs {
		for _, off := range halfFields[t] {
			binary.LittleEndian.PutUint16(q[b+off:], uint16(0x2000+r.IntN(0x1000))|uint16(r.IntN(2))<<15)
		}
	}
	return q
}

// BenchmarkDequantizeRow measures widening L2-resident rows (prefill
// widens each weight row once per tile of inputs), per kernel set.
func BenchmarkDequantizeRow(b *testing.B) {
	const rows, cols = 64, 1536
	r := rand.New(rand.NewPCG(6, 6))
	dst := make([]float32, cols)
	def := Kernels()
	defer func() { _ = SetKernels(def) }()
	for _, typ := range allTypes {
		rb, _ := RowBytes(typ, cols)
		q := randRows(r, typ, rows, cols)
		for _, name := range []string{"generic", "avx2"} {
			if _, ok := variants[name]; !ok {
				continue
			}
			b.Run(name+"/"+typ.String(), func(b *testing.B) {
				_ = SetKernels(name)
				b.SetBytes(int64(len(q)))
				for b.Loop() {
					for j := range rows {
						if err := DequantizeRow(typ, q[j*rb:(j+1)*rb], dst); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
			})
		}
	}
}
