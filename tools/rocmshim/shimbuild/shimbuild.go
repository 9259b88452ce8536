package shimbuild

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/internal/testenv"
)

// The libraries build.sh makes.
const (
	HIPLibrary = "libamdhip64.so.6"
	HSALibrary = "libhsa-runtime64.so.1"
)

// Dir returns tools/rocmshim (where build.sh is), from this file's place.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// Build compiles the shim into a temporary directory and returns it. gcc and
// the ROCm headers are host tools (make test installs them): missing, the
// test fails in CI and skips elsewhere.
func Build(t testing.TB) string {
	t.Helper()
	testenv.LookPath(t, "gcc")
	testenv.LookPath(t, "nm")
	for _, h := range []string{"/usr/include/hip/hip_runtime_api.h", "/usr/include/hsa/hsa_ext_amd.h"} {
		if _, err := exec.Command("test", "-f", h).Output(); err != nil {
			testenv.NeedHost(t, err)
		}
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(Dir(), "build.sh"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building rocmshim: %v\n%s", err, b)
	}
	return out
}

// Exports returns the dynamic symbols a library defines (nm -D
// --defined-only), without their version suffixes.
func Exports(t testing.TB, lib string) map[string]bool {
	t.Helper()
	b, err := exec.Command("nm", "-D", "--defined-only", lib).Output()
	if err != nil {
		t.Fatalf("nm -D %s: %v", lib, err)
	}
	syms := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		name, _, _ := strings.Cut(f[2], "@")
		syms[name] = true
	}
	return syms
}
