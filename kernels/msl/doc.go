// Package msl reads the kernel signatures of a Metal Shading Language
// source: for each `kernel void` function, its [[buffer(n)]] arguments
// (a pointer bound with setBuffer, or a value in the constant address space
// passed with setBytes, and its size) and its [[threadgroup(n)]] arguments
// with their sizes. kernelc writes what it finds into the manifest and the
// Metal adapter binds launch arguments by it.
//
// The conventions it holds a source to (sampling.metal and forward.metal
// follow them):
//   - buffer(i) is argument i of the kernel's .cu twin, so buffer indices run
//     0, 1, 2... in the order the arguments are written;
//   - a pointer (`device T*`, `constant T*`, or any `device` argument) is a
//     device address on the host side, 8 bytes; a `constant T&` is a value of
//     T's size (scalars only);
//   - a threadgroup pointer argument names its size in bytes in a comment
//     right after it, `/* hipgo: 2048 bytes */`: Metal cannot know how long
//     a threadgroup pointer's memory is, and the host must set it;
//   - a kernel written for one block size says so with
//     [[max_total_threads_per_threadgroup(N)]] (a literal N), as a .cu
//     kernel does with KBOUNDS; the manifest records it as the block size;
//   - other arguments carry a Metal attribute ([[thread_position_in_grid]]
//     ...) and are not the host's.
//
// It is not a C++ preprocessor: it splices continued lines, drops comments
// and expands function-like macros whose body declares a kernel (the
// SP_GUMBEL_FUSED(NAME, TYPE) pattern) one level deep. Anything it cannot
// read is an error naming the kernel, never a guess.
package msl
