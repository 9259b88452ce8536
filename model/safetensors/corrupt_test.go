package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// TestCorruptHeaders proves each malformed file is rejected at open with an
// *Error of the right kind that names the file and, where one is at fault,
// the tensor — never a panic and never a later out-of-range read.
func TestCorruptHeaders(t *testing.T) {
	good := `{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	withLen := func(n uint64, rest []byte) []byte {
		out := binary.LittleEndian.AppendUint64(nil, n)
		return append(out, rest...)
	}
	cases := []struct {
		name   string
		file   []byte
		kind   error
		tensor string
		msg    string
	}{
		{"empty file", nil, ErrTruncated, "", "shorter than the 8-byte header length"},
		{"length beyond the file", withLen(1000, []byte(good)), ErrTruncated, "", "header length 1000"},
		{"length past the bound", withLen(MaxHeaderSize+1, []byte(good)), ErrHeader, "", "exceeds"},
		{"length huge", withLen(1<<63, nil), ErrHeader, "", "exceeds"},
		{"not JSON", rawFile(`{"w":`, nil), ErrHeader, "", "invalid JSON"},
		{"not an object", rawFile(`[1,2]`, nil), ErrHeader, "", "not a JSON object"},
		{"unknown dtype", rawFile(`{"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)), ErrHeader, "w", `unknown dtype "F33"`},
		{"byte size vs dtype", rawFile(`{"w":{"dtype":"F16","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)), ErrHeader, "w", "needs 4"},
		{"byte size vs shape", rawFile(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)), ErrHeader, "w", "needs 12"},
		{"offsets out of range", rawFile(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`, make([]byte, 8)), ErrTruncated, "w", "beyond the 8 bytes"},
		{"truncated data", rawFile(good, make([]byte, 5)), ErrTruncated, "w", "beyond the 5 bytes"},
		{"decreasing offsets", rawFile(`{"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, make([]byte, 8)), ErrHeader, "w", "not an increasing range"},
		{"negative offset", rawFile(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`, make([]byte, 8)), ErrHeader, "w", "not an increasing range"},
		{"three offsets", rawFile(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8,9]}}`, make([]byte, 8)), ErrHeader, "w", "has 3 values"},
		{"negative dim", rawFile(`{"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, make([]byte, 8)), ErrHeader, "w", "negative dimension"},
		{"overflowing shape", rawFile(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, make([]byte, 8)), ErrHeader, "w", "too large"},
		{"missing shape", rawFile(`{"w":{"dtype":"F32","data_offsets":[0,8]}}`, make([]byte, 8)), ErrHeader, "w", "needs dtype, shape and data_offsets"},
		{"entry not an object", rawFile(`{"w":7}`, nil), ErrHeader, "w", "entry is not"},
		{"bad metadata", rawFile(`{"__metadata__":{"a":1}}`, nil), ErrHeader, "", "__metadata__"},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)),
			ErrHeader, "b", `overlaps tensor "a"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromBytes("bad.safetensors", tc.file)
			require.Error(t, err)
			require.ErrorIs(t, err, tc.kind)
			var se *Error
			require.ErrorAs(t, err, &se)
			require.Equal(t, "bad.safetensors", se.File)
			require.Equal(t, tc.tensor, se.Tensor)
			require.Contains(t, err.Error(), "bad.safetensors")
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

// TestTruncatedMappedFile proves a file cut short on disk is caught at Open
// (the header's offsets no longer fit), naming the path and tensor.
func TestTruncatedMappedFile(t *testing.T) {
	var buf bytes.Buffer
	b, _ := EncodeFloat32(F32, make([]float32, 100))
	require.NoError(t, Write(&buf, []Tensor{{Name: "model.norm.weight", DType: F32, Shape: []int{100}, Data: b}}, nil))
	path := filepath.Join(t.TempDir(), "model.safetensors")
	require.NoError(t, os.WriteFile(path, buf.Bytes()[:buf.Len()-10], 0o644))
	_, err := Open(path)
	require.ErrorIs(t, err, ErrTruncated)
	require.Contains(t, err.Error(), path)
	require.Contains(t, err.Error(), `"model.norm.weight"`)

	_, err = Open(filepath.Join(t.TempDir(), "absent.safetensors"))
	require.ErrorIs(t, err, ErrIO)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// TestReadErrors proves reads of absent tensors, wrong destinations and
// unconvertible dtypes are errors that name the tensor.
func TestReadErrors(t *testing.T) {
	f, err := FromBytes("m", rawFile(`{"i":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)))
	require.NoError(t, err)
	err = f.ReadFloat32("nope", make([]float32, 1))
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), `"nope"`)
	require.ErrorIs(t, f.ReadFloat32("i", make([]float32, 1)), ErrDType)
	require.ErrorIs(t, f.ReadFloat32("w", make([]float32, 2)), ErrDType)
	require.ErrorIs(t, f.ReadBF16("w", make([]uint16, 1)), ErrDType)
	require.ErrorIs(t, f.ReadRaw("w", make([]byte, 3)), ErrDType)
	raw := make([]byte, 4)
	require.NoError(t, f.ReadRaw("w", raw))
}

func shard(t *testing.T, names ...string) []byte {
	var ts []Tensor
	for i, n := range names {
		b, err := EncodeFloat32(F32, []float32{float32(i + 1)})
		require.NoError(t, err)
		ts = append(ts, Tensor{Name: n, DType: F32, Shape: []int{1}, Data: b})
	}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, ts, nil))
	return buf.Bytes()
}

// TestShardedSet proves a sharded checkpoint resolves each tensor to its
// shard, from a directory and from an fs.FS, and that a single file works.
func TestShardedSet(t *testing.T) {
	index := `{"metadata":{"total_size":8},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`
	files := map[string][]byte{
		IndexFile:                          []byte(index),
		"model-00001-of-00002.safetensors": shard(t, "a"),
		"model-00002-of-00002.safetensors": shard(t, "b"),
	}
	dir := t.TempDir()
	mfs := fstest.MapFS{}
	for n, d := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), d, 0o644))
		mfs["m/"+n] = &fstest.MapFile{Data: d}
	}
	fromDir, err := OpenDir(dir)
	require.NoError(t, err)
	defer fromDir.Close()
	fromFS, err := OpenDirFS(mfs, "m")
	require.NoError(t, err)
	defer fromFS.Close()
	for _, s := range []*Set{fromDir, fromFS} {
		require.Equal(t, []string{"a", "b"}, s.Names())
		require.Len(t, s.Files(), 2)
		_, f, ok := s.Info("b")
		require.True(t, ok)
		require.Equal(t, "model-00002-of-00002.safetensors", filepath.Base(f.Name()))
		v := make([]float32, 1)
		require.NoError(t, f.ReadFloat32("b", v))
		require.Equal(t, float32(1), v[0])
	}

	single, err := OpenDirFS(fstest.MapFS{SingleFile: {Data: shard(t, "x", "y")}}, ".")
	require.NoError(t, err)
	require.Equal(t, []string{"x", "y"}, single.Names())
}

// TestBadIndex proves a malformed or inconsistent index is an ErrIndex naming
// the index file (and the tensor when one is at fault).
func TestBadIndex(t *testing.T) {
	cases := []struct {
		name, index, tensor string
		shards              map[string][]byte
		kind                error
	}{
		{"not JSON", `{`, "", nil, ErrIndex},
		{"empty map", `{"weight_map":{}}`, "", nil, ErrIndex},
		{"escaping shard", `{"weight_map":{"a":"../evil.safetensors"}}`, "a", nil, ErrIndex},
		{"wrong shard", `{"weight_map":{"a":"s2.safetensors","b":"s2.safetensors"}}`, "a",
			map[string][]byte{"s2.safetensors": shard(t, "b")}, ErrIndex},
		{"missing shard", `{"weight_map":{"a":"s1.safetensors"}}`, "", nil, ErrIO},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mfs := fstest.MapFS{IndexFile: {Data: []byte(tc.index)}}
			for n, d := range tc.shards {
				mfs[n] = &fstest.MapFile{Data: d}
			}
			_, err := OpenDirFS(mfs, ".")
			require.ErrorIs(t, err, tc.kind)
			var se *Error
			require.True(t, errors.As(err, &se))
			require.Equal(t, tc.tensor, se.Tensor)
		})
	}

	// The same tensor in two shards is ambiguous.
	a, b := mustFile(t, "s1", shard(t, "a")), mustFile(t, "s2", shard(t, "a"))
	_, err := NewSet(a, b)
	require.ErrorIs(t, err, ErrIndex)
	require.Contains(t, err.Error(), "also in s1")
}

func mustFile(t *testing.T, name string, data []byte) *File {
	f, err := FromBytes(name, data)
	require.NoError(t, err)
	return f
}

// TestWriteRejects proves the writer refuses tensors whose bytes disagree
// with their dtype and shape, rather than writing a corrupt file.
func TestWriteRejects(t *testing.T) {
	var buf bytes.Buffer
	require.Error(t, Write(&buf, []Tensor{{Name: "a", DType: F32, Shape: []int{2}, Data: make([]byte, 4)}}, nil))
	require.Error(t, Write(&buf, []Tensor{{Name: "a", DType: "X", Shape: []int{1}, Data: make([]byte, 4)}}, nil))
	require.Error(t, Write(&buf, []Tensor{{Name: "a", DType: F32, Data: make([]byte, 4)}, {Name: "a", DType: F32, Data: make([]byte, 4)}}, nil))
	_, err := EncodeFloat32(I32, nil)
	require.Error(t, err)
}
