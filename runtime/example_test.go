package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
)

// Open the GPU, launch a kernel shipped in the module (package kernels) and
// wait for it. Every failure is an error on the call or the event that
// meets it. This example needs a GPU, so it is compiled, not run.
func Example() {
	ctx := context.Background()
	dev, err := runtime.Open(ctx) // ROCm, then CUDA, then Metal; HIPGO_BACKEND picks one
	if err != nil {
		fmt.Println(err) // *runtime.OpenError: every backend tried, and why each is unusable
		return
	}
	defer dev.Close()
	mod, err := dev.LoadModule("testkernels") // the embedded binary for this GPU's arch
	if err != nil {
		fmt.Println(err)
		return
	}
	fill, err := mod.Kernel("fill_u32")
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := dev.NewStream()
	if err != nil {
		fmt.Println(err)
		return
	}
	const n = 1024
	buf, err := dev.Alloc(4 * n)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := runtime.LaunchConfig{Grid: runtime.Dim3{X: n / 256, Y: 1, Z: 1}, Block: runtime.Dim3{X: 256, Y: 1, Z: 1}}
	if err := s.Launch(fill, cfg, buf, uint32(7), uint32(n)); err != nil {
		fmt.Println(err) // a *runtime.LaunchError: rejected before it ran; the device stays usable
		return
	}
	ev, err := s.Record()
	if err != nil {
		fmt.Println(err)
		return
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = ev.Wait(waitCtx)
	var fault *runtime.FaultError
	var watchdog *runtime.WatchdogError
	switch {
	case err == nil:
		out := make([]uint32, n)
		_ = runtime.Download(buf, out)
		fmt.Println(out[0], out[n-1])
	case errors.As(err, &fault):
		fmt.Println("the kernel faulted, the device is lost:", fault.Kind, fault.Kernel)
	case errors.As(err, &watchdog):
		fmt.Println("hung:", watchdog)
	default:
		fmt.Println(err) // ctx's error, or the driver's
	}
}

// The typed faults, shown on the simulated GPU that the runtime's own tests
// use (internal/simgpu: Go functions as kernels, a write past a buffer as a
// sticky illegal-address fault), since a real fault needs a GPU. A fault
// fails the event with a *FaultError naming the kernel and loses the
// device: every later call fails at once with a *DeviceLostError that
// wraps it, without calling the driver.
func ExampleEvent_Wait() {
	ctx := context.Background()
	sim := simgpu.New(simgpu.Config{Devices: 1, Kernels: []simgpu.KernelDef{simgpu.FillU32, simgpu.OOBWriteU32}})
	dev, err := runtime.Open(ctx, runtime.WithDrivers(sim))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	// A real program calls dev.LoadModule("testkernels"); the simulated
	// kernels are loaded with their argument layouts.
	mod, err := dev.LoadImage([]byte("testkernels"), []runtime.KernelSpec{
		{Name: "fill_u32", Params: []runtime.ParamSpec{{Offset: 0, Size: 8}, {Offset: 8, Size: 4}, {Offset: 12, Size: 4}}},
		{Name: "oob_write_u32", Params: []runtime.ParamSpec{{Offset: 0, Size: 8}, {Offset: 8, Size: 4}, {Offset: 16, Size: 8}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fill, _ := mod.Kernel("fill_u32")
	oob, _ := mod.Kernel("oob_write_u32")
	s, _ := dev.NewStream()
	buf, _ := dev.Alloc(4 * 4)
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}

	_ = s.Launch(fill, one, buf, uint32(7), uint32(4))
	ev, _ := s.Record()
	fmt.Println("fill:", ev.Wait(ctx))

	_ = s.Launch(oob, one, buf, uint32(1), uint64(1)<<40) // writes far past the buffer
	ev, err = s.Record()
	if err == nil { // the fault may have been seen already
		err = ev.Wait(ctx)
	}
	var fault *runtime.FaultError
	if errors.As(err, &fault) {
		fmt.Println("fault:", errors.Is(err, runtime.ErrDeviceFault), fault.Kernel)
	}
	err = s.Launch(fill, one, buf, uint32(7), uint32(4))
	var lost *runtime.DeviceLostError
	fmt.Println("after it:", errors.As(err, &lost), errors.Is(err, runtime.ErrDeviceLost), errors.Is(err, runtime.ErrDeviceFault))
	// Output:
	// fill: <nil>
	// fault: true oob_write_u32
	// after it: true true true
}
