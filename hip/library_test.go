package hip

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/hipgo/hipgo/internal/dynlib"
	"github.com/stretchr/testify/require"
)

// TestLoadRealLibrary proves Load finds the installed runtime, reports the
// file it came from, and that version queries work without a GPU.
func TestLoadRealLibrary(t *testing.T) {
	needLibrary(t)
	path := LibraryPath()
	require.True(t, filepath.IsAbs(path), "LibraryPath %q", path)
	rt, err := RuntimeVersion()
	require.NoError(t, err)
	drv, err := DriverVersion()
	require.NoError(t, err)
	require.Positive(t, rt)
	require.Positive(t, drv)
	major, minor, patch := SplitVersion(rt)
	require.GreaterOrEqual(t, major, 5)
	t.Logf("loaded %s: hipRuntimeGetVersion=%d (%d.%d.%d), hipDriverGetVersion=%d", path, rt, major, minor, patch, drv)
}

// TestSplitVersion proves the HIP_VERSION decoding on the documented
// example (hip_version.h: major*10000000 + minor*100000 + patch).
func TestSplitVersion(t *testing.T) {
	major, minor, patch := SplitVersion(50221153)
	require.Equal(t, []int{5, 2, 21153}, []int{major, minor, patch})
	major, minor, patch = SplitVersion(60032830)
	require.Equal(t, []int{6, 0, 32830}, []int{major, minor, patch})
}

// TestLoadEnvNonexistent proves HIPGO_HIP_LIBRARY replaces the candidates
// and a missing file is a *dynlib.NotFoundError naming exactly that path.
// It calls the uncached loader, so the process's cached Load is untouched.
func TestLoadEnvNonexistent(t *testing.T) {
	const bogus = "/nonexistent/hipgo/libamdhip64.so.99"
	t.Setenv(EnvLibrary, bogus)
	_, err := openAPI()
	require.ErrorIs(t, err, dynlib.ErrNotFound)
	var nf *dynlib.NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Len(t, nf.Tried, 1)
	require.Equal(t, bogus, nf.Tried[0].Path)
	require.Equal(t, EnvLibrary, nf.EnvVar)
	require.Contains(t, err.Error(), bogus)
}

// TestLoadWrongLibrary proves a library that opens but is not HIP (libc)
// is a *dynlib.MissingSymbolError listing what it lacks, not a panic.
func TestLoadWrongLibrary(t *testing.T) {
	t.Setenv(EnvLibrary, "libc.so.6")
	_, err := openAPI()
	var ms *dynlib.MissingSymbolError
	require.ErrorAs(t, err, &ms)
	require.Contains(t, ms.Missing, "hipInit")
	require.Contains(t, ms.Missing, "hipModuleLaunchKernel")
	// Optional symbols are never reported missing.
	require.NotContains(t, ms.Missing, "hipKernelGetParamInfo")
	require.NotContains(t, ms.Missing, "hipLaunchHostFunc")
	require.NotContains(t, ms.Missing, "hipGraphLaunch")
}

// TestOptionalFunctionsOnThisLibrary proves optional functions the loaded
// library lacks give *UnsupportedError (errors.ErrUnsupported), and that
// ROCm 5.2 lacks exactly the ones the bindings say it does.
func TestOptionalFunctionsOnThisLibrary(t *testing.T) {
	needLibrary(t)
	a, err := get()
	require.NoError(t, err)
	major, minor := runtimeMajorMinor(t)
	if major == 5 && minor == 2 {
		require.Nil(t, a.hipKernelGetParamInfo, "ROCm 5.2 exports hipKernelGetParamInfo?")
		require.Nil(t, a.hipGetDevicePropertiesR0600, "ROCm 5.2 exports hipGetDevicePropertiesR0600?")
		require.Nil(t, a.hipLaunchHostFunc, "Debian's ROCm 5.2 exports hipLaunchHostFunc?")
		require.NotNil(t, a.hipGetDeviceProperties)
		require.True(t, a.graphBound(), "ROCm 5.2 exports the hip_4.3 graph calls")
	}
	if !a.graphBound() {
		err := StreamBeginCapture(0, CaptureModeRelaxed)
		require.ErrorIs(t, err, errors.ErrUnsupported)
		t.Logf("StreamBeginCapture: %v", err)
	}
	if a.hipKernelGetParamInfo == nil {
		_, _, err := KernelGetParamInfo(0, 0)
		require.ErrorIs(t, err, errors.ErrUnsupported)
		var ue *UnsupportedError
		require.ErrorAs(t, err, &ue)
		require.Equal(t, "hipKernelGetParamInfo", ue.Func)
		t.Logf("KernelGetParamInfo: %v", err)
	}
	if a.hipLaunchHostFunc == nil {
		err := LaunchHostFunc(0, func() {})
		require.ErrorIs(t, err, errors.ErrUnsupported)
		t.Logf("LaunchHostFunc: %v", err)
	}
}
