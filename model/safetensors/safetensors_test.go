package safetensors

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
)

// rawFile builds a file by hand from a header string and data bytes, so the
// reader is tested against the format itself rather than our writer.
func rawFile(header string, data []byte) []byte {
	out := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(out, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

func le32(vals ...float32) []byte {
	out := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out
}

// TestReadHandBuiltFile proves the reader decodes F32, BF16 and F16 tensors
// placed by a hand-written header, with the bit patterns fixed by IEEE 754 and
// the bfloat16 definition (1.0 = 0x3f80 bf16 = 0x3c00 f16, -2 = 0xc000 both).
func TestReadHandBuiltFile(t *testing.T) {
	data := le32(1.5, -0.25, 3)
	data = append(data, 0x80, 0x3f, 0x00, 0xc0) // bf16 1.0, -2.0
	data = append(data, 0x00, 0x3c, 0x00, 0xc0) // f16 1.0, -2.0
	hdr := `{"__metadata__":{"format":"pt"},` +
		`"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},` +
		`"b":{"dtype":"BF16","shape":[1,2],"data_offsets":[12,16]},` +
		`"c":{"dtype":"F16","shape":[2],"data_offsets":[16,20]}}`
	f, err := FromBytes("hand.safetensors", rawFile(hdr, data))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, f.Names())
	require.Equal(t, map[string]string{"format": "pt"}, f.Metadata())

	a := make([]float32, 3)
	require.NoError(t, f.ReadFloat32("a", a))
	require.Equal(t, []float32{1.5, -0.25, 3}, a)

	b := make([]float32, 2)
	require.NoError(t, f.ReadFloat32("b", b))
	require.Equal(t, []float32{1, -2}, b)
	braw := make([]uint16, 2)
	require.NoError(t, f.ReadBF16("b", braw))
	require.Equal(t, []uint16{0x3f80, 0xc000}, braw)

	c := make([]float32, 2)
	require.NoError(t, f.ReadFloat32("c", c))
	require.Equal(t, []float32{1, -2}, c)

	info, ok := f.Info("b")
	require.True(t, ok)
	require.Equal(t, []int{1, 2}, info.Shape)
	require.Equal(t, BF16, info.DType)
	require.Equal(t, int64(8+len(hdr)+12), info.Offset)
}

// TestF16Exhaustive checks every half-precision bit pattern against the
// format's definition computed in float64, and that encoding inverts it.
func TestF16Exhaustive(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		s, e, m := h>>15, (h>>10)&0x1f, h&0x3ff
		got := F16ToFloat32(uint16(h))
		sign := 1.0
		if s == 1 {
			sign = -1
		}
		var want float64
		switch {
		case e == 0x1f && m != 0:
			require.True(t, math.IsNaN(float64(got)), "h=%#04x", h)
			continue
		case e == 0x1f:
			want = math.Inf(int(sign))
		case e == 0:
			want = sign * math.Ldexp(float64(m), -24)
		default:
			want = sign * math.Ldexp(1+float64(m)/1024, e-15)
		}
		require.Equal(t, want, float64(got), "h=%#04x", h)
		require.Equal(t, uint16(h), Float32ToF16(got), "round trip h=%#04x", h)
	}
}

// TestRoundingToHalfAndBF16 proves round-to-nearest-even at the tie points
// (values chosen so the tie is exact in float32).
func TestRoundingToHalfAndBF16(t *testing.T) {
	// bf16 keeps 7 mantissa bits: 1+2^-8 is halfway between 1 and 1+2^-7 -> even (1).
	require.Equal(t, uint16(0x3f80), Float32ToBF16(1+1.0/256))
	require.Equal(t, uint16(0x3f82), Float32ToBF16(1+3.0/256)) // halfway, rounds up to even
	require.Equal(t, uint16(0x3f81), Float32ToBF16(1+1.0/256+1.0/65536))
	require.True(t, math.IsNaN(float64(BF16ToFloat32(Float32ToBF16(float32(math.NaN()))))))
	// f16 keeps 10 bits: 1+2^-11 ties to 1, 1+3*2^-11 ties up to 1+2^-9.
	require.Equal(t, uint16(0x3c00), Float32ToF16(1+1.0/2048))
	require.Equal(t, uint16(0x3c02), Float32ToF16(1+3.0/2048))
	require.Equal(t, uint16(0x7c00), Float32ToF16(70000))   // overflow to inf
	require.Equal(t, uint16(0x7bff), Float32ToF16(65504))   // largest finite
	require.Equal(t, uint16(0x0001), Float32ToF16(5.96e-8)) // smallest subnormal (2^-24 ~ 5.96e-8)
	require.Equal(t, uint16(0x0000), Float32ToF16(2.9e-8))  // below half of it
}

// TestWriteReadRoundTrip proves Write produces files the reader accepts, for
// every float dtype, through bytes, a mapped file and an fs.FS.
func TestWriteReadRoundTrip(t *testing.T) {
	vals := []float32{0, 1, -2, 0.5, 1024, -0.125} // exact in all three dtypes
	var ts []Tensor
	for _, dt := range []DType{F32, F16, BF16} {
		b, err := EncodeFloat32(dt, vals)
		require.NoError(t, err)
		ts = append(ts, Tensor{Name: "t." + string(dt), DType: dt, Shape: []int{2, 3}, Data: b})
	}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, ts, map[string]string{"k": "v"}))
	hlen := binary.LittleEndian.Uint64(buf.Bytes())
	require.Zero(t, hlen%8, "data section is 8-byte aligned")

	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	mapped, err := Open(path)
	require.NoError(t, err)
	defer mapped.Close()
	inMem, err := FromBytes("mem", buf.Bytes())
	require.NoError(t, err)
	viaFS, err := OpenFS(fstest.MapFS{"m.safetensors": {Data: buf.Bytes()}}, "m.safetensors")
	require.NoError(t, err)
	defer viaFS.Close()
	noReaderAt, err := OpenFS(plainFS{buf.Bytes()}, "m.safetensors")
	require.NoError(t, err)

	for _, f := range []*File{mapped, inMem, viaFS, noReaderAt} {
		require.Equal(t, "v", f.Metadata()["k"])
		for _, dt := range []DType{F32, F16, BF16} {
			got := make([]float32, 6)
			require.NoError(t, f.ReadFloat32("t."+string(dt), got), f.Name())
			require.Equal(t, vals, got, "%s %s", f.Name(), dt)
		}
	}
}

// TestLargeConversionChunks proves chunked conversion covers tensors larger
// than one chunk, with a non-multiple tail.
func TestLargeConversionChunks(t *testing.T) {
	n := chunkBytes/2*2 + 123 // BF16: two full chunks and a tail
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(i % 251) // exact in bf16
	}
	b, err := EncodeFloat32(BF16, vals)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, []Tensor{{Name: "x", DType: BF16, Shape: []int{n}, Data: b}}, nil))
	f, err := FromBytes("big", buf.Bytes())
	require.NoError(t, err)
	got := make([]float32, n)
	require.NoError(t, f.ReadFloat32("x", got))
	require.Equal(t, vals, got)
}

type plainFS struct{ data []byte }

// plainFile has Read but not ReadAt, so OpenFS takes its read-all path.
type plainFile struct {
	r    *bytes.Reader
	size int64
}

func (p plainFS) Open(string) (fs.File, error) {
	return plainFile{bytes.NewReader(p.data), int64(len(p.data))}, nil
}
func (f plainFile) Stat() (fs.FileInfo, error) { return fileInfo(f.size), nil }
func (f plainFile) Close() error               { return nil }
func (f plainFile) Read(p []byte) (int, error) { return f.r.Read(p) }

type fileInfo int64

func (fi fileInfo) Name() string       { return "m.safetensors" }
func (fi fileInfo) Size() int64        { return int64(fi) }
func (fi fileInfo) Mode() fs.FileMode  { return 0o444 }
func (fi fileInfo) ModTime() time.Time { return time.Time{} }
func (fi fileInfo) IsDir() bool        { return false }
func (fi fileInfo) Sys() any           { return nil }
