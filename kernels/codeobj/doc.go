// Package codeobj reads AMDGPU code objects (the .hsaco files that
// hipModuleLoadData and the HSA loader take) in pure Go: the ELF64 header
// with its target flags, the NT_AMDGPU_METADATA note (MessagePack, decoded by
// a small decoder of its own) and the kernel descriptors it names.
//
// Parse returns, per kernel, what a launcher checks before calling the
// driver: argument offsets, sizes and kinds (hidden arguments of code object
// v5 included, see Arg.Hidden), the kernarg segment size and alignment, LDS
// and scratch sizes, wavefront size, the maximum work-group size and register
// counts. Code object v3 to v6 are read (v4 and v5 are what hipgo ships).
//
// Input is untrusted: every offset, count and length is checked before use,
// nothing is allocated beyond a small multiple of the input size, and any
// inconsistency (including metadata that disagrees with the ELF header or
// with a kernel descriptor) is a *FormatError wrapping ErrNotCodeObject,
// ErrUnsupportedVersion, ErrMalformed or ErrNoMetadata. Parse never panics.
// The tests compare every field with llvm-readelf-19 on every shipped
// artifact.
package codeobj
