package hip

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestParseTargetID proves target ids split into processor and features
// and that strings which are not target ids (what a wrong struct offset
// would read) are refused.
func TestParseTargetID(t *testing.T) {
	for _, c := range []struct{ in, arch string }{
		{"gfx90a:sramecc+:xnack-", "gfx90a"},
		{"gfx942:sramecc+:xnack+", "gfx942"},
		{"gfx1100", "gfx1100"},
		{"gfx1151", "gfx1151"},
		{"gfx906:xnack", "gfx906"},
	} {
		tg, err := ParseTargetID(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.arch, tg.Arch)
		require.Equal(t, c.in, tg.ID)
	}
	for _, bad := range []string{"", "gfx", "AMD Instinct MI210", "gfx90A", "gfx90a:", "gfx90a:+", "gfx90a:xnack++", "gfx 90a", "\x01\x02", "sramecc+"} {
		_, err := ParseTargetID(bad)
		require.ErrorIs(t, err, ErrBadTargetID, "%q", bad)
	}
}

// synthProps builds a zeroed hipDeviceProp_t image of size bytes with the
// device name at byte 0 (where both layouts keep it) and archName at off.
func synthProps(size, off int, archName string) []byte {
	b := make([]byte, size)
	copy(b, "AMD Instinct MI210")
	copy(b[off:], archName)
	return b
}

// TestTargetFromPropsLayouts proves gcnArchName is read at 396 in the R0000
// layout (sizeof 792, ROCm ≤ 5) and at 1160 in R0600 (sizeof 1472, ROCm ≥ 6),
// and that reading one layout at the other's offset fails instead of
// returning garbage.
func TestTargetFromPropsLayouts(t *testing.T) {
	r0000 := synthProps(792, gcnArchNameOffsetR0000, "gfx90a:sramecc+:xnack-")
	r0600 := synthProps(1472, gcnArchNameOffsetR0600, "gfx1100")

	tg, err := targetFromProps(r0000, 396)
	require.NoError(t, err)
	require.Equal(t, Target{Arch: "gfx90a", ID: "gfx90a:sramecc+:xnack-"}, tg)
	tg, err = targetFromProps(r0600, 1160)
	require.NoError(t, err)
	require.Equal(t, Target{Arch: "gfx1100", ID: "gfx1100"}, tg)

	// Wrong layout: R0000 bytes are too short for 1160; R0600 bytes hold
	// no target id at 396.
	_, err = targetFromProps(r0000, 1160)
	require.Error(t, err)
	_, err = targetFromProps(r0600, 396)
	require.ErrorIs(t, err, ErrBadTargetID)

	// A name filling all 256 bytes without NUL is refused.
	full := make([]byte, 792)
	for i := 396; i < 396+256; i++ {
		full[i] = 'a'
	}
	_, err = targetFromProps(full, 396)
	require.ErrorIs(t, err, ErrBadTargetID)
	// A negative or out-of-range offset is an error, not a panic.
	_, err = targetFromProps(r0000, -1)
	require.Error(t, err)
}

// TestR0000OffsetMatchesHeader proves the offsets against the installed
// ROCm 5.2 header with a C compiler: clang-19 must accept static asserts
// that gcnArchName is at 396 and sizeof(hipDeviceProp_t) is 792.
func TestR0000OffsetMatchesHeader(t *testing.T) {
	clang := testenv.LookPath(t, "clang-19")
	if _, err := os.Stat("/usr/include/hip/hip_runtime_api.h"); err != nil {
		testenv.NeedHost(t, err)
	}
	src := filepath.Join(t.TempDir(), "offsets.cc")
	require.NoError(t, os.WriteFile(src, []byte(`#include <hip/hip_runtime_api.h>
#include <cstddef>
static_assert(offsetof(hipDeviceProp_t, gcnArchName) == 396, "gcnArchName");
static_assert(sizeof(((hipDeviceProp_t*)0)->gcnArchName) == 256, "gcnArchName size");
static_assert(sizeof(hipDeviceProp_t) == 792, "sizeof");
`), 0o644))
	out, err := exec.Command(clang, "-D__HIP_PLATFORM_AMD__", "-x", "c++", "-std=c++17", "-fsyntax-only", src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, 396, gcnArchNameOffsetR0000)
}

// FuzzTargetFromProps proves arbitrary property bytes never panic the
// reader, and anything it accepts is a well-formed target id.
func FuzzTargetFromProps(f *testing.F) {
	f.Add(synthProps(792, 396, "gfx90a:sramecc+:xnack-"), 396)
	f.Add(synthProps(1472, 1160, "gfx942"), 1160)
	f.Add([]byte("short"), 0)
	f.Add(make([]byte, 300), 44)
	f.Fuzz(func(t *testing.T, b []byte, off int) {
		tg, err := targetFromProps(b, off)
		if err == nil {
			again, err := ParseTargetID(tg.ID)
			if err != nil || again != tg {
				t.Fatalf("accepted %q but it does not round-trip: %v", tg.ID, err)
			}
		}
	})
}
