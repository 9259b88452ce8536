package kernels_test

import (
	"errors"
	"fmt"

	"github.com/hipgo/hipgo/kernels"
)

// Load the PTX of the test kernels for an sm_89 GPU: it gets the sm_80 PTX,
// which the driver JIT-compiles for it.
func ExampleLoad() {
	image, info, err := kernels.Load("testkernels", kernels.FormatPTX, "sm_89")
	if err != nil {
		fmt.Println(err)
		return
	}
	a, _ := kernels.Resolve("testkernels", kernels.FormatPTX, "sm_89")
	fmt.Println(a.Path, len(image) == a.Size)
	for _, k := range info {
		if k.Name == "bounded_fill_u32" {
			fmt.Println(k.Name, "max threads per block:", k.MaxThreadsPerBlock, "argument bytes:", k.KernargSize)
		}
	}
	// Output:
	// testkernels/sm_80.ptx true
	// bounded_fill_u32 max threads per block: 256 argument bytes: 16
}

// An arch that is not shipped is a *NoBinaryError listing what is.
func ExampleNoBinaryError() {
	_, _, err := kernels.Load("testkernels", kernels.FormatPTX, "sm_75")
	var nb *kernels.NoBinaryError
	fmt.Println(errors.Is(err, kernels.ErrNoBinary), errors.As(err, &nb), nb.Shipped)
	// Output:
	// true true [sm_80 sm_90 sm_90a]
}
