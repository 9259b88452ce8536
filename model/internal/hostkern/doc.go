// Package hostkern runs the forward kernels of kernels/src/forward.cu (and,
// with BuildQuant, the quantized ones of kernels/src/qforward.cu, checked
// against quant.DequantizeRow) on the host, for tests: the kernel source is compiled with clang++-19 around
// kernels/hostemu/hostemu.h (one std::thread per GPU thread, barriers for
// block_sync and for exchanges within 32-thread groups) and driven through
// a small binary protocol (kernels/hostemu/forward_driver.cc). BuildMetal
// builds the same driver around the kernels' MSL port,
// kernels/src/forward.metal (kernels/hostemu/metal stands in for Apple's
// metal_stdlib), and BuildQuantMetal around qforward.metal. The tests in
// this package run every kernel on both
// sources, check each against the CPU backend's ops (model/internal/cpu)
// and require the two to write the same bytes where they take the same
// path; package model composes them
// into whole forward passes and checks those against the CPU forward.
//
// It proves the kernels' indexing, reductions, barriers and numerics as C++
// on the host; it does not prove what the GPU compilers and hardware do
// with them (tools/gpubench/forward_kernels.py does, on a GPU).
package hostkern
