package cuda_test

import (
	"errors"
	"fmt"

	"github.com/hipgo/hipgo/cuda"
)

// A driver failure is an *cuda.Error that names the C call; errors.Is finds
// its code through any wrapping, and Sticky says whether the process must
// restart.
func ExampleError() {
	var err error = &cuda.Error{Call: "cuStreamSynchronize", Code: cuda.ErrIllegalAddress}
	err = fmt.Errorf("decode step 12: %w", err)

	fmt.Println(err)
	fmt.Println(errors.Is(err, cuda.ErrIllegalAddress))
	var code cuda.Code
	if errors.As(err, &code) {
		fmt.Println(code.Name(), code.Sticky())
	}
	// Output:
	// decode step 12: cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700)
	// true
	// CUDA_ERROR_ILLEGAL_ADDRESS true
}

// The typical start: load libcuda, initialise, take device 0's primary
// context, and make every context-bound call between Lock and Unlock.
func ExampleLoad() {
	if err := cuda.Load(); err != nil {
		fmt.Println("no CUDA:", err)
		return
	}
	if err := cuda.Init(); err != nil {
		fmt.Println("no CUDA device:", err)
		return
	}
	dev, err := cuda.DeviceGet(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, err := dev.PrimaryCtxRetain()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		if err := dev.PrimaryCtxRelease(); err != nil {
			fmt.Println(err)
		}
	}()
	if err := ctx.Lock(); err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Unlock()
	p, err := cuda.MemAlloc(1 << 20)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := cuda.MemFree(p); err != nil {
		fmt.Println(err)
	}
}
