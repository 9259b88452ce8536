package cuda

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPrepareImage proves PTX text gets exactly one NUL appended when it has
// none (without modifying the caller's slice), NUL-terminated PTX and binary
// images (cubin ELF, fatbin) pass unchanged, and an empty image is rejected.
func TestPrepareImage(t *testing.T) {
	ptx := []byte(".version 7.8\n.target sm_80\n")
	got, err := prepareImage(ptx)
	require.NoError(t, err)
	require.Equal(t, append(bytes.Clone(ptx), 0), got)
	require.Equal(t, byte('\n'), ptx[len(ptx)-1], "caller's slice untouched")

	terminated := append(bytes.Clone(ptx), 0)
	got, err = prepareImage(terminated)
	require.NoError(t, err)
	require.Same(t, &terminated[0], &got[0], "already terminated: no copy")

	for name, img := range map[string][]byte{
		"cubin":  []byte("\x7fELF\x02\x01\x01\x33rest-of-elf"),
		"fatbin": []byte("\x50\xed\x55\xba\x01\x00\x10\x00payload"),
	} {
		got, err = prepareImage(img)
		require.NoError(t, err, name)
		require.Equal(t, img, got, name)
	}

	_, err = prepareImage(nil)
	require.ErrorIs(t, err, ErrInvalidValue)
}

// FuzzPrepareImage checks prepareImage's invariants on arbitrary bytes: it
// never fails on a non-empty image, binary images are untouched, and anything
// else comes back as the input followed by a terminating NUL.
func FuzzPrepareImage(f *testing.F) {
	f.Add([]byte(".version 7.8\n.target sm_80\n.address_size 64\n"))
	f.Add([]byte("\x7fELF"))
	f.Add([]byte("\x50\xed\x55\xba"))
	f.Add([]byte{0})
	f.Add([]byte("x\x00y"))
	f.Fuzz(func(t *testing.T, img []byte) {
		got, err := prepareImage(img)
		if len(img) == 0 {
			require.ErrorIs(t, err, ErrInvalidValue)
			return
		}
		require.NoError(t, err)
		if bytes.HasPrefix(img, []byte(elfMagic)) || bytes.HasPrefix(img, []byte(fatbinMagic)) {
			require.Equal(t, img, got)
			return
		}
		require.Equal(t, byte(0), got[len(got)-1])
		require.True(t, bytes.Equal(img, got) || bytes.Equal(append(bytes.Clone(img), 0), got))
	})
}

// TestLogText proves the JIT log reader trusts the size the driver wrote back
// only up to the buffer, and stops at a NUL.
func TestLogText(t *testing.T) {
	buf := []byte("line 1\nline 2\n\x00garbage")
	require.Equal(t, "line 1\nline 2", logText(buf, 14))
	require.Equal(t, "line 1", logText(buf, 6))
	require.Equal(t, "line 1\nline 2", logText(buf, 1<<40|uintptr(len(buf)+5)), "upper half ignored, size capped")
	require.Equal(t, "", logText(buf, 0))
}
