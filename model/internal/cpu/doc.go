// Package cpu holds the numeric kernels of the CPU forward pass: dot
// products (float32 and bfloat16 weights, float32 accumulation; GGUF
// quantized weights through package quant, decoded inside the product), matrix
// products split over a shared worker pool, RMSNorm, rotary embeddings,
// softmax and SiLU. Everything is portable Go; on amd64 with AVX2 and FMA
// the three dot-product kernels are Go assembly (no cgo, no C toolchain),
// chosen at start-up and checked against the Go versions in tests. Kernels
// do not allocate per element and do not validate shapes: the model package
// checks every shape once at load.
package cpu
