package quant

import "fmt"

// SetKernels selects a kernel set by name, for measurements: "generic"
// everywhere, and "avx2" where AVX2, FMA and F16C are present (the default
// there). Not safe to call while products run.
func SetKernels(name string) error {
	k, ok := variants[name]
	if !ok {
		return fmt.Errorf("quant: no kernel set %q on this machine", name)
	}
	kern, kernName = k, name
	return nil
}

// Kernels names the active kernel set.
func Kernels() string { return kernName }

// KernelSets lists the kernel sets this CPU can run.
func KernelSets() []string {
	out := make([]string, 0, len(variants))
	for name := range variants {
		out = append(out, name)
	}
	return out
}
