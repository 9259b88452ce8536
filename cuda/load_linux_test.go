//go:build linux

package cuda

import (
	"path/filepath"
	"testing"

	"github.com/hipgo/hipgo/internal/dynlib"
	"github.com/stretchr/testify/require"
)

// TestLoadMissingPathIsNotFound proves that HIPGO_CUDA_LIBRARY pointing at
// nothing gives a *dynlib.NotFoundError naming exactly that path (and no
// fallback to the default candidates), without touching Load's cache.
func TestLoadMissingPathIsNotFound(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcuda-not-here.so.1")
	t.Setenv(EnvLibrary, missing)
	d, err := loadDriver()
	require.Nil(t, d)
	var nf *dynlib.NotFoundError
	require.ErrorAs(t, err, &nf)
	require.ErrorIs(t, err, dynlib.ErrNotFound)
	require.Len(t, nf.Tried, 1)
	require.Equal(t, missing, nf.Tried[0].Path)
	require.Equal(t, EnvLibrary, nf.EnvVar)
	require.Contains(t, err.Error(), missing)
}

// TestLoadWrongLibraryIsMissingSymbols proves that a library that opens but
// is not libcuda (glibc) gives a *dynlib.MissingSymbolError listing the
// required entry points, without a panic, and does not demand the optional
// ones (cuFuncGetParamInfo, cuLaunchKernelEx).
func TestLoadWrongLibraryIsMissingSymbols(t *testing.T) {
	t.Setenv(EnvLibrary, "libc.so.6")
	d, err := loadDriver()
	require.Nil(t, d)
	var ms *dynlib.MissingSymbolError
	require.ErrorAs(t, err, &ms)
	require.Equal(t, "libc.so.6", ms.Path)
	require.Contains(t, ms.Missing, "cuInit")
	require.Contains(t, ms.Missing, "cuLaunchKernel")
	require.Contains(t, ms.Missing, "cuMemAlloc_v2")
	require.Contains(t, ms.Missing, "cuEventElapsedTime_v2|cuEventElapsedTime")
	require.NotContains(t, ms.Missing, "cuFuncGetParamInfo")
	require.NotContains(t, ms.Missing, "cuLaunchKernelEx")
	required := 0
	for _, f := range (&driver{}).table() {
		if f.Since == "" {
			required++
		}
	}
	require.Len(t, ms.Missing, required, "every required symbol is reported")
}
