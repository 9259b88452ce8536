package hip_test

import (
	"errors"
	"fmt"

	"github.com/hipgo/hipgo/hip"
	"github.com/hipgo/hipgo/internal/dynlib"
)

// A failed HIP call is an *hip.Error that names the call and matches its
// code's sentinel.
func ExampleError() {
	err := fmt.Errorf("sampler: %w", &hip.Error{Call: "hipStreamSynchronize", Code: hip.ErrIllegalAddress})
	fmt.Println(err)
	fmt.Println(errors.Is(err, hip.ErrIllegalAddress))
	var he *hip.Error
	if errors.As(err, &he) {
		fmt.Println(he.Call, he.Code.Sticky())
	}
	// Output:
	// sampler: hipStreamSynchronize: hipErrorIllegalAddress (700)
	// true
	// hipStreamSynchronize true
}

// Probing for a usable AMD GPU: every outcome is an error value, never a
// crash. (Not run as a test: the answer depends on the machine.)
func ExampleGetDeviceCount() {
	switch n, err := hip.GetDeviceCount(); {
	case errors.Is(err, dynlib.ErrNotFound):
		fmt.Println("no ROCm installed:", err)
	case errors.Is(err, hip.ErrNoDevice):
		fmt.Println("ROCm is installed but sees no AMD GPU")
	case err != nil:
		fmt.Println("HIP failed:", err)
	default:
		fmt.Println(n, "devices")
	}
}

// Device-bound calls run inside OnDevice, which pins the goroutine to its OS
// thread and makes the device current there.
func ExampleOnDevice() {
	release, err := hip.OnDevice(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer release()
	p, err := hip.Malloc(1 << 20)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := hip.Free(p); err != nil {
		fmt.Println(err)
	}
}
