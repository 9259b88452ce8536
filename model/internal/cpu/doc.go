// Package cpu holds the numeric kernels of the CPU forward pass: dot
// products (float32 and bfloat16 weights, and GGUF quantized rows through
// package quant, decoded inside the product; float32 accumulation), matrix
// products split over a shared worker pool, attention's scores and
// weighted sums, RMSNorm, rotary embeddings, softmax and SiLU. Everything
// is portable Go; on amd64 with AVX2 and FMA the dot-product kernels, the
// prefill products' tile kernel (6 weight rows against 16 inputs, gemm.go)
// and attention's weighted sum are Go assembly (no cgo, no C toolchain),
// chosen at start-up and checked against the Go versions in tests. Kernels do not
// allocate per element and do not validate shapes: the model package checks
// every shape once at load (Matrix.Validate checks a weight's storage).
package cpu
