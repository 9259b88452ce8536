package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"testing/fstest"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestMappedLendsTensorsInPlace proves Mapped hands out a tensor's bytes
// inside the file's mapping (Linux and macOS), that lent bytes stay readable
// after Close while the Mapping is held, that reads through the closed File
// fail, and that files not opened by Open lend nothing.
func TestMappedLendsTensorsInPlace(t *testing.T) {
	a, _ := EncodeFloat32(F32, []float32{1, 2, 3})
	b, _ := EncodeFloat32(BF16, []float32{-1, 0.5})
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, []Tensor{{Name: "a", DType: F32, Shape: []int{3}, Data: a}, {Name: "b", DType: BF16, Shape: []int{2}, Data: b}}, nil))
	path := filepath.Join(t.TempDir(), SingleFile)
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))

	mem, err := FromBytes("mem", buf.Bytes())
	require.NoError(t, err)
	data, m, err := mem.Mapped("a")
	require.NoError(t, err)
	require.Nil(t, m, "FromBytes is not a mapping")
	require.Nil(t, data)
	fsf, err := OpenFS(fstest.MapFS{SingleFile: {Data: buf.Bytes()}}, SingleFile)
	require.NoError(t, err)
	_, m, err = fsf.Mapped("a")
	require.NoError(t, err)
	require.Nil(t, m, "an fs.FS file is not a mapping")

	f, err := Open(path)
	require.NoError(t, err)
	_, _, err = f.Mapped("nope")
	require.ErrorIs(t, err, ErrNotFound)
	data, m, err = f.Mapped("b")
	require.NoError(t, err)
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		require.Nil(t, m)
		return
	}
	require.NotNil(t, m)
	require.Equal(t, b, data)
	info, _ := f.Info("b")
	whole := m.data
	require.Equal(t, unsafe.Pointer(&whole[info.Offset]), unsafe.Pointer(&data[0]), "in place, not a copy")
	require.Equal(t, int(info.Size), cap(data), "capped at the tensor")

	require.NoError(t, f.Close())
	require.Equal(t, b, data, "lent bytes outlive Close while the Mapping is held")
	require.ErrorIs(t, f.ReadRaw("a", make([]byte, 12)), ErrIO, "the File itself is closed")
	_, _, err = f.Mapped("a")
	require.ErrorIs(t, err, ErrIO)
	runtime.KeepAlive(m)

	// Nothing lent: Close unmaps at once.
	g, err := Open(path)
	require.NoError(t, err)
	mp := g.mapped
	require.NoError(t, g.Close())
	require.Nil(t, mp.data)
	require.NoError(t, g.Close(), "Close twice")
}
