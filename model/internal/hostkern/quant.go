package hostkern

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// BuildQuant compiles the host driver of the quantized forward kernels
// (kernels/src/qforward.cu, driven by kernels/hostemu/qforward_driver.cc
// with Build's flags and protocol) into dir.
func BuildQuant(clang, dir string) (*Driver, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "qforward-driver")
	shim := filepath.Join(root, "kernels", "hostemu", "hostemu.h")
	cmd := exec.Command(clang, "-std=c++20", "-O2", "-pthread", "-ffp-contract=off",
		"-Wall", "-Wno-unknown-pragmas", "-Wno-unused-function", "-Werror",
		fmt.Sprintf("-DHIPGO_HOST_SHIM=%q", shim), "-I", filepath.Join(root, "kernels", "src"),
		filepath.Join(root, "kernels", "hostemu", "qforward_driver.cc"), "-o", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("hostkern: %s: %w\n%s", cmd, err, msg)
	}
	return &Driver{path: out}, nil
}
