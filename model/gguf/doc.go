// Package gguf reads GGUF files, the format of llama.cpp and ollama, versions
// 2 and 3: the metadata (every value type, arrays and nested arrays
// included), the tensor infos, and each tensor's bytes as stored (F32, F16,
// BF16 or a ggml block-quantized type).
//
// A File validates everything when it is opened: the magic and version,
// every count against the bytes left in the file (so a count of 2^60 is an
// error, not an allocation), string lengths, value types, tensor dimensions
// and types (a type id ggml does not define is ErrType), general.alignment
// (a power of two), each tensor's offset against that alignment, its extent
// against the file's end, and that no two tensors overlap. After Open
// succeeds, reading any tensor cannot go out of range. Every error is a
// *Error naming the file and the metadata key or tensor at fault; errors.Is
// matches its kind (ErrFormat, ErrTruncated, ErrType, ErrLayout, ErrNotFound,
// ErrIO).
//
// Tensor data is read through an io.ReaderAt: a memory-mapped file
// (golang.org/x/exp/mmap) for Open, or the caller's reader (NewReader,
// FromBytes). Nothing copies the whole file; ReadTensor copies one tensor's
// bytes into the caller's buffer, as package safetensors does and for the
// same reasons: weights that pointed into the mapping would tie the model's
// lifetime to the file and turn a file truncated under us into a fault that
// kills the process; and the model fuses q|k|v and gate|up into one matrix
// and un-permutes llama's q/k rows, which rewrites the bytes anyway.
//
// Why not github.com/gpustack/gguf-parser-go (v0.28.1, MIT, no cgo)? Its
// parser only opens paths itself (or URLs), so it cannot read our mapping,
// an fs.FS or a byte slice; it has no API to read tensor data (it estimates
// memory); and its one package links HTTP clients, an ssh/ed25519 registry
// login, gonum and json-iterator into every binary that parses a file. The
// format is small enough that this reader, fuzzed, costs less.
//
// Write produces GGUF v3 files, for tests and tools.
package gguf
