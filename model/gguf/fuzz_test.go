package gguf

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReader proves that any byte string either fails to open with an
// *Error or opens into a file whose every tensor reads in full and whose
// metadata and tensors write back and read again unchanged. Seeds are in
// testdata/fuzz/FuzzReader (a valid file of every value type, aligned
// variants, and each corruption of TestCorruptFilesNameTheFieldOrTensor);
// `HIPGO_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds` rewrites them.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := FromBytes("fuzz", data)
		if err != nil {
			var ge *Error
			require.ErrorAs(t, err, &ge)
			return
		}
		var tensors []Tensor
		for _, info := range file.Tensors() {
			buf := make([]byte, info.Size)
			require.NoError(t, file.ReadTensor(info.Name, buf))
			tensors = append(tensors, Tensor{Name: info.Name, Dims: info.Dims, Type: info.Type, Data: buf})
		}
		meta := file.Metadata()
		var out bytes.Buffer
		require.NoError(t, Write(&out, meta, tensors))
		again, err := FromBytes("again", out.Bytes())
		require.NoError(t, err)
		var m1, m2 bytes.Buffer
		require.NoError(t, Write(&m1, meta, nil))
		require.NoError(t, Write(&m2, again.Metadata(), nil))
		require.Equal(t, m1.Bytes(), m2.Bytes(), "metadata changed in a round trip")
		require.Len(t, again.Tensors(), len(tensors))
		for _, want := range tensors {
			got := make([]byte, len(want.Data))
			require.NoError(t, again.ReadTensor(want.Name, got))
			require.Equal(t, want.Data, got)
		}
	})
}

var writeSeeds = os.Getenv("HIPGO_WRITE_FUZZ_SEEDS") == "1"

// TestWriteFuzzSeeds regenerates the committed seed corpus when
// HIPGO_WRITE_FUZZ_SEEDS=1; otherwise it checks that the corpus exists.
func TestWriteFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzReader")
	if !writeSeeds {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.NotEmpty(t, entries)
		return
	}
	tensors := sampleTensors()
	good := encode(t, sampleMeta(t), tensors)
	seeds := map[string][]byte{
		"valid":         good,
		"valid-aligned": encode(t, append(sampleMeta(t), kv(t, AlignmentKey, uint32(64))), tensors),
		"no-tensors":    encode(t, sampleMeta(t), nil),
		"empty-header":  encode(t, nil, nil),
		"truncated":     good[:len(good)/2],
	}
	plain := encode(t, nil, tensors)
	typeOff := tensorInfoOffset(tensors, 1) + 8 + len(tensors[1].Name) + 4 + 8*len(tensors[1].Dims)
	seeds["unknown-type"] = putU32(plain, typeOff, 4)
	seeds["misaligned"] = putU64(plain, typeOff+4, 100)
	seeds["overlap"] = putU64(plain, typeOff+4, 64)
	seeds["huge-kv-count"] = putU64(plain, offKVCount, 1<<60)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, data := range seeds {
		var b bytes.Buffer
		b.WriteString("go test fuzz v1\n[]byte(")
		b.WriteString(quoteBytes(data))
		b.WriteString(")\n")
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644))
	}
}

func quoteBytes(b []byte) string {
	const hex = "0123456789abcdef"
	var s bytes.Buffer
	s.WriteByte('"')
	for _, c := range b {
		switch {
		case c == '"' || c == '\\':
			s.WriteByte('\\')
			s.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			s.WriteByte(c)
		default:
			s.WriteString(`\x`)
			s.WriteByte(hex[c>>4])
			s.WriteByte(hex[c&15])
		}
	}
	s.WriteByte('"')
	return s.String()
}
