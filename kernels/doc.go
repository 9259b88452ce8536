// Package kernels ships hipgo's precompiled GPU kernels inside the Go
// binary: every artifact under kernels/build is embedded, so `go get` needs
// no C toolchain. tools/kernelc builds the artifacts from the portable
// sources in kernels/src; CI rebuilds them and fails on any byte of
// difference.
//
// Load(module, format, arch) returns the image for a device and the launch
// facts of each kernel (parameter offsets and sizes, argument-buffer size,
// maximum block size, static shared memory, wavefront size). Those facts come
// from manifest.json, which kernelc derives from the artifacts themselves
// (the code object's metadata note, the PTX .entry lines, the MSL kernel
// signatures read by kernels/msl); a test re-parses
// every embedded artifact and requires the same result.
//
// Choosing the artifact for a device (arch):
//
//   - hsaco: the processor must match exactly. A target id such as
//     "gfx90a:sramecc+:xnack-" (or "amdgcn-amd-amdhsa--gfx90a") matches
//     gfx90a: the code objects leave xnack and sramecc unspecified, which
//     the loader accepts under either setting. A different processor, even a
//     close one (gfx1101 for gfx1100), never matches: ISAs differ.
//   - ptx: the newest shipped PTX whose sm is not above the device's.
//     "sm_90" and "sm_90a" get sm_90a, the arch-specific target that only
//     compute capability 9.0 runs (Hopper's wgmma); sm_89 gets sm_80;
//     sm_100 or sm_120 get sm_90, and "compute_90" (generic PTX) sm_90: the
//     driver JIT-compiles generic PTX for any GPU at or above its target.
//     The driver must also know the PTX ISA version (.version 7.0 for
//     sm_80, 7.8 for sm_90, 8.0 for sm_90a, i.e. a CUDA 11.8 or newer
//     driver for sm_90 and 12.0 or newer for sm_90a; runtime.LoadModule
//     falls back to sm_90 where the driver refuses the sm_90a PTX).
//   - cubin: machine code that ptxas compiled from one PTX artifact (its
//     Source), shipped for sm_80 and sm_90a. The arch-specific sm_90a runs
//     on its own sm alone ("sm_90" or "sm_90a" takes it); the plain sm_80
//     runs on its major revision at or above its minor (sm_80, sm_86,
//     sm_87, sm_89), as NVIDIA guarantees for machine code; no cubin runs
//     across major revisions (sm_100 and sm_120 get PTX), and "compute_90"
//     or a family target take none. runtime.LoadModule loads it in place of
//     the PTX, so the GPU starts without the driver compiling megabytes of
//     PTX, and falls back to the PTX where the driver refuses it.
//   - msl: one source for every Apple GPU; arch is ignored.
//
// Otherwise Load returns a *NoBinaryError (errors.Is(err, ErrNoBinary))
// listing the arches that are shipped.
//
// Code object versions: gfx90a, gfx942, gfx1030, gfx1100, gfx1101 and
// gfx1102 ship code object v4; gfx1150, gfx1151, gfx1200 and gfx1201 ship
// v5. v4 is loaded by every ROCm since 4.1 (Debian's ROCm 5.2 included) and by
// current releases, and was the compilers' default when those older
// processors were introduced; v5 is loaded from ROCm 5.2 on, and the
// gfx115x/gfx12 processors are only known to ROCm 6.1/6.2 and later, which
// all load it.
// kernels/README.md lists the runtime versions per artifact and the sources.
// Under v5 a kernel that reads the block or grid size through HIP's implicit
// arguments gets hidden_* parameters (Param.Hidden) that the launcher must
// fill; kernels/src/portable.h reads those sizes from the dispatch packet
// instead, so kernels written with it have none (a test holds testkernels
// to that).
package kernels
