//go:build !amd64

package cpuid

// AVX2FMA is false off amd64.
func AVX2FMA() bool { return false }

// F16C is false off amd64.
func F16C() bool { return false }

// Intel is false off amd64.
func Intel() bool { return false }
