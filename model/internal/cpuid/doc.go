// Package cpuid reports the x86 features the assembly kernels of packages
// cpu and quant need (AVX2, FMA, F16C, and OS support for the YMM
// registers) and the CPU vendor, read once with CPUID and XGETBV. On other
// architectures every feature is absent.
package cpuid
