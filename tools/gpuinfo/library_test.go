package main

import (
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// envRunMain makes the test binary run gpuinfo's main instead of the tests:
// each backend's library is opened once per process, so each case needs one.
const envRunMain = "HIPGO_GPUINFO_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		os.Args = []string{"gpuinfo", "-timeout", "60s"}
		main()
	}
	os.Exit(m.Run())
}

// gpuinfoWithCUDA runs gpuinfo with HIPGO_CUDA_LIBRARY set to path and
// returns its cuda line.
func gpuinfoWithCUDA(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRunMain+"=1", "HIPGO_CUDA_LIBRARY="+path)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		require.NotEqual(t, exitFailed, ee.ExitCode(), "gpuinfo could not report: %s", ee.Stderr)
	} else {
		require.NoError(t, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "cuda ") {
			return line
		}
	}
	t.Fatalf("no cuda line in:\n%s", out)
	return ""
}

// A file at HIPGO_CUDA_LIBRARY that dlopen refuses is reported as found but
// not opened, with dlopen's reason; a path with nothing there is still
// "library not found" with the path tried.
func TestGpuinfoTellsARefusedLibraryFromAMissingOne(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("libcuda is opened only on linux")
	}
	dir := t.TempDir()
	bogus := filepath.Join(dir, "libcuda.so.1")
	require.NoError(t, os.WriteFile(bogus, []byte(strings.Repeat("not a shared library\n", 64)), 0o644))

	line := gpuinfoWithCUDA(t, bogus)
	t.Log(line)
	require.Contains(t, line, "cuda   unusable: libcuda: library found but could not be opened: "+bogus+": invalid ELF header")
	require.NotContains(t, line, "library not found")

	missing := filepath.Join(dir, "nothere", "libcuda.so.1")
	line = gpuinfoWithCUDA(t, missing)
	t.Log(line)
	require.Contains(t, line, "cuda   unusable: libcuda: library not found (tried "+missing+"; set HIPGO_CUDA_LIBRARY to its path)")
}
