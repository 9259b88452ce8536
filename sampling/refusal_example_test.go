package sampling_test

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/sampling"
)

// A direct kernel entry point on a backend without a port is refused with
// a typed error (errors.Is ErrNoKernelPort) before it touches the device;
// Sampler.Sample, the production path, routes the same call to the CPU
// fallback instead. The device here is the simulated GPU of the runtime's
// tests (internal/simgpu), a backend no sampler kernel is ported to; on a
// real GPU, NewSampler(dev) is the same call.
func ExampleNoKernelPortError() {
	ctx := context.Background()
	dev, err := runtime.Open(ctx, runtime.WithDrivers(simgpu.New(simgpu.Config{Devices: 1})))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	s, _ := dev.NewStream()
	const B, V = 1, 4
	buf, _ := dev.Alloc(4 * B * V)
	_ = runtime.Upload(buf, []float32{0.1, 2.5, float32(math.Inf(-1)), 0.7})
	logits := sampling.Logits{Buf: buf, B: B, V: V}
	tokens, _ := dev.Alloc(4 * B)
	status, _ := dev.Alloc(4 * B)

	sm := sampling.NewSampler(dev)
	err = sm.GumbelMax(s, logits, 0, sampling.Key{1, 2}, sampling.Outputs{Tokens: tokens, Status: status})
	fmt.Println(errors.Is(err, sampling.ErrNoKernelPort))
	fmt.Println(err)

	// Temperature 0 is greedy: the fallback's token is the argmax.
	d, err := sm.Sample(ctx, s, logits, []sampling.Params{{Temperature: 0, TopP: 1}}, sampling.Key{1, 2}, tokens)
	if err != nil {
		fmt.Println(err)
		return
	}
	out := make([]uint32, B)
	_ = runtime.Download(tokens, out)
	fmt.Println(d.Route, out[0])
	// Output:
	// true
	// sampling.GumbelMax: no kernel port for backend sim; callers take the categorical fallback instead
	// categorical-fallback 1
}
