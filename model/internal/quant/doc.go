// Package quant decodes the weight formats of GGUF files (llama.cpp's ggml
// block formats) next to plain F32, F16 and BF16: Q8_0, Q4_0, Q4_1, Q5_0
// and Q5_1 (blocks of 32 elements, one or two float16 constants each; the
// Q5 types with a 32-bit word of fifth bits) and the K-quants Q4_K,
// Q5_K and Q6_K (super-blocks of 256 elements with 6- or 8-bit sub-block
// scales). Type values are ggml's type ids, as stored in a GGUF tensor info.
//
// A row of n elements is n/elems whole blocks laid out back to back
// (RowBytes). DequantizeRow widens one row to float32 exactly as ggml and
// the gguf Python package do: every value is a float16 (or float32) scale
// times small integers, rounded in float32 in the same order, so the result
// is bit-identical to the reference. DotRow is the fused product used by
// matrix-vector products: it decodes each block in registers and
// accumulates its product with x in float32, never writing the row out.
//
// Bad input (unknown type, a length that is not a whole number of blocks,
// a buffer of the wrong size) is an error from RowBytes and DequantizeRow;
// DotRow, which sits in the inner loop, returns NaN instead. Nothing here
// panics on bad input.
//
// On amd64 with AVX2, FMA and F16C, DotRow and DequantizeRow use Go
// assembly kernels for every block type and F16, chosen at start-up and
// checked in tests against the reference and the portable Go versions
// (DequantizeRow bit for bit); SetKernels selects a set by name for
// measurements.
package quant
