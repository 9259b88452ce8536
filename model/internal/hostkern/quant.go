package hostkern

import (
	"fmt"
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
	shim := filepath.Join(root, "kernels", "hostemu", "hostemu.h")
	return build(clang, "qforward_driver.cc", filepath.Join(dir, "qforward-driver"),
		fmt.Sprintf("-DHIPGO_HOST_SHIM=%q", shim), "-I", filepath.Join(root, "kernels", "src"))
}

// BuildQuantMetal compiles the same driver around kernels/src/qforward.metal,
// the quantized kernels' MSL port, as BuildMetal does forward.metal.
func BuildQuantMetal(clang, dir string) (*Driver, error) {
	return buildMetal(clang, dir, "qforward", "-DQF_METAL")
}
