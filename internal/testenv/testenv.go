package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// GPURequired reports whether missing GPU support must fail tests.
func GPURequired() bool { return os.Getenv("HIPGO_REQUIRE_GPU") == "1" }

// HostToolsRequired reports whether missing host packages must fail tests.
func HostToolsRequired() bool {
	return os.Getenv("CI") == "true" || os.Getenv("HIPGO_REQUIRE_HOST_TOOLS") == "1"
}

// NeedGPU skips the test with why, or fails it when HIPGO_REQUIRE_GPU=1.
// Call it when err says the GPU (or its driver) is unusable.
func NeedGPU(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if GPURequired() {
		t.Fatalf("HIPGO_REQUIRE_GPU=1 but the GPU is unusable: %v", err)
	}
	t.Skipf("no usable GPU (set HIPGO_REQUIRE_GPU=1 to make this a failure): %v", err)
}

// NeedHost skips the test with why, or fails it in CI. Call it when err says a
// host package (a Debian library or tool) is missing.
func NeedHost(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if HostToolsRequired() {
		t.Fatalf("CI must have this but it is missing (make test installs it): %v", err)
	}
	t.Skipf("host package missing (make test installs it; CI=true makes this a failure): %v", err)
}

// LookPath finds a host tool, failing or skipping through NeedHost.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	NeedHost(t, err)
	return p
}

// MLXRequired reports whether a missing libmlxc must fail tests.
func MLXRequired() bool { return os.Getenv("HIPGO_REQUIRE_MLX") == "1" }

// NeedMLX skips the test with why, or fails it when HIPGO_REQUIRE_MLX=1.
// Call it when err says libmlxc could not be loaded. No package registry
// carries mlx-c, so CI has no libmlxc: there these tests skip, and make test
// prints how many.
func NeedMLX(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if MLXRequired() {
		t.Fatalf("HIPGO_REQUIRE_MLX=1 but libmlxc is unusable: %v", err)
	}
	t.Skipf("libmlxc is not available: no package registry carries mlx-c (build it as docs/mlx.md says and set HIPGO_MLX_LIBRARY; HIPGO_REQUIRE_MLX=1 makes this a failure): %v", err)
}
