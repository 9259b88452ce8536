// Package shimbuild is the tests' way to the ROCm-shaped shim in
// tools/rocmshim (see its README.md): Build compiles it with gcc against the
// installed ROCm headers, Exports lists the symbols a built library defines.
// Its own tests run hipgo's ROCm adapter through the shim over a fake
// libcuda (tools/rocmshim/fakecuda) on a machine without a GPU; the GPU
// suite's rocmshim section runs the shim over the real CUDA driver. Test
// support only: nothing in hipgo's build imports it.
package shimbuild
