package quant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var allTypes = []Type{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K}

// refFile names one testdata file and the type of its rows.
type refFile struct {
	name string
	t    Type
}

// refFiles are every testdata file: one per type (random and
// reference-quantized rows), and rows of the real SmolLM2-135M-Instruct
// Q4_1 GGUF (its Q4_1 layers and Q8_0 embedding).
func refFiles() []refFile {
	var out []refFile
	for _, t := range allTypes {
		out = append(out, refFile{t.String(), t})
	}
	return append(out, refFile{"SmolLM2_Q4_1", Q4_1}, refFile{"SmolLM2_Q8_0", Q8_0})
}

// refRows is one testdata file: rows of n elements in type t, and the gguf
// Python package's dequantization of each (see testdata/gen.py).
type refRows struct {
	t    Type
	n    int
	rows [][]byte
	want [][]float32
}

func loadRef(t *testing.T, f refFile) refRows {
	t.Helper()
	typ := f.t
	b, err := os.ReadFile(filepath.Join("testdata", f.name+".bin"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(b), 8)
	n, rows := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:]))
	rb, err := RowBytes(typ, n)
	require.NoError(t, err)
	require.Len(t, b, 8+rows*rb+rows*n*4, "%v: file size", typ)
	r := refRows{t: typ, n: n}
	vals := b[8+rows*rb:]
	for i := range rows {
		r.rows = append(r.rows, b[8+i*rb:8+(i+1)*rb])
		w := make([]float32, n)
		for j := range w {
			w[j] = math.Float32frombits(binary.LittleEndian.Uint32(vals[4*(i*n+j):]))
		}
		r.want = append(r.want, w)
	}
	return r
}

// TestLayoutsMatchGGML pins each type's id, name and block layout to ggml's
// (ggml.h's enum ggml_type, ggml-common.h's block structs, and the gguf
// package's GGML_QUANT_SIZES).
func TestLayoutsMatchGGML(t *testing.T) {
	for _, tc := range []struct {
		t            Type
		id           uint32
		name         string
		elems, bytes int
	}{
		{F32, 0, "F32", 1, 4}, {F16, 1, "F16", 1, 2}, {Q4_0, 2, "Q4_0", 32, 18}, {Q4_1, 3, "Q4_1", 32, 20},
		{Q8_0, 8, "Q8_0", 32, 34}, {Q4_K, 12, "Q4_K", 256, 144}, {Q5_K, 13, "Q5_K", 256, 176},
		{Q6_K, 14, "Q6_K", 256, 210}, {BF16, 30, "BF16", 1, 2}, {Q5_0, 6, "Q5_0", 32, 22}, {Q5_1, 7, "Q5_1", 32, 24},
	} {
		require.Equal(t, tc.id, uint32(tc.t))
		require.Equal(t, tc.name, tc.t.String())
		require.True(t, tc.t.Known())
		e, b := BlockSize(tc.t)
		require.Equal(t, [2]int{tc.elems, tc.bytes}, [2]int{e, b}, tc.name)
		rb, err := RowBytes(tc.t, 3*tc.elems)
		require.NoError(t, err)
		require.Equal(t, 3*tc.bytes, rb)
	}
	require.Equal(t, "Type(10)", Q2_KID.String())
	require.False(t, Q2_KID.Known())
	e, b := BlockSize(Q2_KID)
	require.Zero(t, e+b)
}

// Q2_KID is a real ggml type this package does not decode.
const Q2_KID Type = 10

// TestDequantizeRowMatchesReference proves every type decodes bit-for-bit
// as the gguf package's numpy reference does, in every kernel set, over
// rows quantized by that reference, rows of random blocks (every code,
// scale and sign) and rows of the real SmolLM2 GGUF.
func TestDequantizeRowMatchesReference(t *testing.T) {
	defer func() { require.NoError(t, SetKernels(Kernels())) }()
	def := Kernels()
	for _, name := range KernelSets() {
		require.NoError(t, SetKernels(name))
		for _, f := range refFiles() {
			ref, typ := loadRef(t, f), f.t
			elems, bytes := BlockSize(typ)
			for i, row := range ref.rows {
				// The whole row, and a shorter prefix of whole blocks (19
				// elements for the float types: vector part and tail).
				for _, n := range []int{ref.n, map[int]int{1: 19, 32: 96, 256: 256}[elems]} {
					got := make([]float32, n)
					require.NoError(t, DequantizeRow(typ, row[:n/elems*bytes], got))
					for j := range got {
						if math.Float32bits(got[j]) != math.Float32bits(ref.want[i][j]) {
							t.Fatalf("%s %v row %d elem %d: got %g (%#x), reference %g (%#x)", name, typ, i, j,
								got[j], math.Float32bits(got[j]), ref.want[i][j], math.Float32bits(ref.want[i][j]))
						}
					}
				}
			}
		}
	}
	require.NoError(t, SetKernels(def))
}

// dotTolerance bounds float32 rounding of a dot product of x with a row
// whose block b has largest magnitude mag[b]: every variant factors each
// block's scale and offset out, and both terms are at most about three
// times the block's largest value, so the error is a few hundred float32
// epsilons of sum(|x_i| * 4 * mag(block of i)) at these lengths.
func dotTolerance(typ Type, w, x []float32) float64 {
	elems, _ := BlockSize(typ)
	var tol float64
	for b := 0; b < len(w); b += elems {
		var m float64
		for _, v := range w[b : b+elems] {
			m = max(m, math.Abs(float64(v)))
		}
		for _, v := range x[b : b+elems] {
			tol += math.Abs(float64(v)) * 4 * m
		}
	}
	return 1e-5*tol + 1e-30
}

func dot64(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// TestDotRowMatchesReference proves DotRow, in every kernel set this CPU
// has, equals the float64 dot product of x with the reference's dequantized
// row within dotTolerance, for whole rows and for every block-aligned prefix
// length that the kernels unroll differently.
func TestDotRowMatchesReference(t *testing.T) {
	defer func() { require.NoError(t, SetKernels(Kernels())) }()
	def := Kernels()
	r := rand.New(rand.NewPCG(1, 2))
	for _, name := range KernelSets() {
		require.NoError(t, SetKernels(name))
		for _, f := range refFiles() {
			ref, typ := loadRef(t, f), f.t
			elems, bytes := BlockSize(typ)
			for i, row := range ref.rows {
				for _, nb := range []int{1, 2, 3, 5, 7, 8, 9, 16, ref.n / elems} {
					n := nb * elems
					if n > ref.n {
						continue
					}
					x := randVec(r, n)
					w := ref.want[i][:n]
					got := DotRow(typ, row[:nb*bytes], x)
					require.InDelta(t, dot64(w, x), float64(got), dotTolerance(typ, w, x), "%s %v row %d n=%d", name, typ, i, n)
				}
			}
		}
	}
	require.NoError(t, SetKernels(def))
}

// TestKernelSetsAgree proves every kernel set computes what the generic Go
// reference computes, within the same tolerance, on long random rows.
func TestKernelSetsAgree(t *testing.T) {
	defer func() { require.NoError(t, SetKernels(Kernels())) }()
	def := Kernels()
	r := rand.New(rand.NewPCG(3, 4))
	for _, f := range refFiles() {
		ref, typ := loadRef(t, f), f.t
		for i, row := range ref.rows {
			x := randVec(r, ref.n)
			want := generic.dot[typ](row, x)
			for _, name := range KernelSets() {
				require.NoError(t, SetKernels(name))
				got := DotRow(typ, row, x)
				require.InDelta(t, float64(want), float64(got), 2*dotTolerance(typ, ref.want[i], x), "%s %v row %d", name, typ, i)
			}
		}
	}
	require.Error(t, SetKernels("nope"))
	require.NoError(t, SetKernels(def))
}

// TestBadInput proves unknown types, lengths that are not whole blocks and
// buffers of the wrong size are errors (DotRow: NaN), never panics.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    Type
		src  int // bytes
		n    int // elements
		want error
	}{
		{"unknown Q2_K", Q2_KID, 84, 256, ErrUnknownType},
		{"unknown huge id", Type(1 << 31), 4, 1, ErrUnknownType},
		{"Q4_0 half block", Q4_0, 9, 16, ErrBlockSize},
		{"Q4_K 255 elements", Q4_K, 144, 255, ErrBlockSize},
		{"Q8_0 short", Q8_0, 33, 32, ErrSize},
		{"Q6_K long", Q6_K, 211, 256, ErrSize},
		{"Q4_1 empty buffer", Q4_1, 0, 64, ErrSize},
		{"F16 odd bytes", F16, 3, 2, ErrSize},
		{"Q5_K two rows for one", Q5_K, 352, 256, ErrSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := DequantizeRow(tc.t, make([]byte, tc.src), make([]float32, tc.n))
			require.ErrorIs(t, err, tc.want)
			require.True(t, math.IsNaN(float64(DotRow(tc.t, make([]byte, tc.src), make([]float32, tc.n)))))
		})
	}
	_, err := RowBytes(Q4_0, -32)
	require.ErrorIs(t, err, ErrBlockSize)
	// An empty row is valid and its product is zero.
	require.NoError(t, DequantizeRow(Q4_K, nil, nil))
	require.Zero(t, DotRow(Q4_K, nil, nil))
}

// TestHalfToFloat proves the float16 widening is exact for all 65536 bit
// patterns, against a definition in float64 arithmetic.
func TestHalfToFloat(t *testing.T) {
	for h := range 1 << 16 {
		exp, man := (h>>10)&0x1f, float64(h&0x3ff)
		sign := 1.0
		if h&0x8000 != 0 {
			sign = -1
		}
		got := halfToFloat(uint16(h))
		switch {
		case exp == 0x1f && man == 0:
			require.True(t, math.IsInf(float64(got), int(sign)), "%#x", h)
		case exp == 0x1f:
			require.True(t, math.IsNaN(float64(got)), "%#x", h)
		case exp == 0:
			require.Equal(t, math.Float32bits(float32(sign*man*math.Pow(2, -24))), math.Float32bits(got), "%#x", h)
		default:
			require.Equal(t, float32(sign*(1+man/1024)*math.Pow(2, float64(exp-15))), got, "%#x", h)
		}
	}
}

// FuzzDequantizeRow proves arbitrary bytes, lengths and type ids never
// panic: either an error, or a row of exactly RowBytes whose DotRow with
// ones equals the float64 sum of the decoded values where that is finite.
func FuzzDequantizeRow(f *testing.F) {
	for _, typ := range allTypes {
		e, b := BlockSize(typ)
		f.Add(uint32(typ), uint16(e), make([]byte, b))
		f.Add(uint32(typ), uint16(2*e), make([]byte, 2*b-1))
	}
	f.Add(uint32(6), uint16(32), make([]byte, 22))
	f.Fuzz(func(t *testing.T, id uint32, n uint16, data []byte) {
		typ := Type(id)
		dst := make([]float32, int(n)%2048)
		err := DequantizeRow(typ, data, dst)
		ones := make([]float32, len(dst))
		for i := range ones {
			ones[i] = 1
		}
		got := DotRow(typ, data, ones)
		if err != nil {
			if !errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrBlockSize) && !errors.Is(err, ErrSize) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if !math.IsNaN(float64(got)) {
				t.Fatalf("DotRow on bad input gave %g, want NaN", got)
			}
			return
		}
		rb, _ := RowBytes(typ, len(dst))
		if rb != len(data) {
			t.Fatalf("accepted %d bytes, row is %d", len(data), rb)
		}
		// The active kernels decode exactly as the generic ones (NaN aside:
		// VCVTPH2PS quiets signalling NaNs).
		if len(dst) > 0 {
			ref := make([]float32, len(dst))
			generic.dequant[typ](data, ref)
			for i := range ref {
				if math.Float32bits(ref[i]) != math.Float32bits(dst[i]) && !(math.IsNaN(float64(ref[i])) && math.IsNaN(float64(dst[i]))) {
					t.Fatalf("%v elem %d: %s kernels %g, generic %g", typ, i, Kernels(), dst[i], ref[i])
				}
			}
		}
		var want, mag float64
		for _, v := range dst {
			want += float64(v)
			mag += math.Abs(float64(v))
		}
		if math.IsInf(mag, 0) || math.IsNaN(mag) || mag > 1e30 {
			return
		}
		if math.Abs(want-float64(got)) > 1e-4*mag+1e-30 {
			t.Fatalf("%v n=%d: DotRow(ones)=%g, sum=%g (mag %g)", typ, len(dst), got, want, mag)
		}
	})
}

func ExampleDequantizeRow() {
	// One Q8_0 block: scale 0.5 (float16 0x3800), codes 0, 1, -2, 3, ...
	blk := make([]byte, 34)
	blk[0], blk[1] = 0x00, 0x38
	for i := range 32 {
		q := int8(i)
		if i%2 == 0 {
			q = -q
		}
		blk[2+i] = byte(q)
	}
	row := make([]float32, 32)
	if err := DequantizeRow(Q8_0, blk, row); err != nil {
		fmt.Println(err)
	}
	fmt.Println(row[:4])
	_, err := RowBytes(Q4_K, 100)
	fmt.Println(err)
	// Output:
	// [0 0.5 -1 1.5]
	// quant: length is not a multiple of the block size: 100 elements of Q4_K (blocks of 256)
}
