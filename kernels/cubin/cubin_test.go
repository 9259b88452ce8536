package cubin

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func readBuilt(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "build", filepath.FromSlash(rel)))
	require.NoError(t, err)
	return b
}

// TestParseShippedCubin reads the testkernels cubin that kernelc ships: ptxas
// 12.9's sm_90a machine code, with the module's five kernels as entries and
// none of its internal functions.
func TestParseShippedCubin(t *testing.T) {
	f, err := Parse(readBuilt(t, "testkernels/sm_90a.cubin"))
	require.NoError(t, err)
	require.Equal(t, 90, f.SM)
	require.Equal(t, 90, f.Virtual)
	require.True(t, f.ArchSpecific)
	require.Equal(t, "sm_90a", f.Arch())
	require.Equal(t, []string{"bounded_fill_u32", "empty", "fill_u32", "oob_write_u32", "spin_ns"}, f.Entries)
	require.Equal(t, "sm_80", (&File{SM: 80}).Arch())
}

// TestParseRejectsWhatIsNotACubin: other files and corrupt headers are
// ErrFormat, and no cut of a real cubin panics or parses.
func TestParseRejectsWhatIsNotACubin(t *testing.T) {
	good := readBuilt(t, "testkernels/sm_90a.cubin")
	mutate := func(fn func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		fn(b)
		return b
	}
	le := binary.LittleEndian
	for name, b := range map[string][]byte{
		"empty":              nil,
		"PTX text":           readBuilt(t, "testkernels/sm_90a.ptx"),
		"AMDGPU code object": readBuilt(t, "testkernels/gfx90a.hsaco"),
		"ELF32":              mutate(func(b []byte) { b[4] = 1 }),
		"big endian":         mutate(func(b []byte) { b[5] = 2 }),
		"another machine":    mutate(func(b []byte) { le.PutUint16(b[18:], 62) }),
		"no SM in e_flags":   mutate(func(b []byte) { b[48] = 0 }),
		"section table past the end": mutate(func(b []byte) {
			le.PutUint64(b[40:], uint64(len(b)))
		}),
		"section entries of 40 bytes": mutate(func(b []byte) { le.PutUint16(b[58:], 40) }),
	} {
		_, err := Parse(b)
		require.ErrorIs(t, err, ErrFormat, name)
	}
	for n := 0; n < len(good); n += 97 {
		_, err := Parse(good[:n])
		require.ErrorIs(t, err, ErrFormat, "the first %d bytes", n)
	}
}

// FuzzParse: any input gives a File or ErrFormat, never a panic.
func FuzzParse(f *testing.F) {
	f.Add(readBuilt(f, "testkernels/sm_90a.cubin"))
	f.Add([]byte("\x7fELF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := Parse(b); err != nil {
			require.ErrorIs(t, err, ErrFormat)
		}
	})
}

// TestIsCUDA tells a cubin from the other artifacts: the shipped cubin is
// CUDA's, an HSACO (ELF for AMDGPU), PTX text and a cut header are not.
func TestIsCUDA(t *testing.T) {
	good := readBuilt(t, "testkernels/sm_90a.cubin")
	require.True(t, IsCUDA(good))
	require.False(t, IsCUDA(readBuilt(t, "testkernels/gfx1100.hsaco")))
	require.False(t, IsCUDA(readBuilt(t, "testkernels/sm_90a.ptx")))
	require.False(t, IsCUDA(good[:19]))
}
