// Command kernelc builds the kernel artifacts under kernels/build from the
// portable sources in kernels/src, with Debian's clang-19 and lld-19, and
// NVIDIA's ptxas for the cubins.
//
//	go run ./tools/kernelc            rebuild kernels/build (and its manifest.json)
//	go run ./tools/kernelc -check     rebuild into a temporary directory and exit 1,
//	                                  listing every file that differs by any byte
//	go run ./tools/kernelc -out DIR   build the whole tree into DIR instead
//	go run ./tools/kernelc -inspect FILE [-json]
//	                                  print the metadata of an .hsaco, .cubin or .ptx file
//
// Every kernels/src/M.cu is a module M: it is compiled as HIP for each AMDGPU
// target (a raw code object, build/M/<gfx>.hsaco) and as CUDA for each PTX
// arch (build/M/<sm>.ptx), whose sm_80 and sm_90a PTX NVIDIA's ptxas
// 12.9.86 (the one scripts/deps.sh fetches into .cache/cuda/ptxas, or
// HIPGO_PTXAS) assembles into build/M/sm_80.cubin and build/M/sm_90a.cubin
// (cubinArches says why); a kernels/src/M.metal is copied to
// build/M/metal.metal. The output is byte-reproducible: clang runs in
// kernels/ on the relative path src/M.cu with a fixed -cuid, a clean
// environment and no timestamps, so two builds on machines with the same
// clang-19 give identical bytes, which is what -check (run by CI) relies on.
// The code-object version chosen for each target, and why, is documented in
// kernels/README.md.
package main
