package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
)

// BenchmarkSimStep is a decode-like step on the simulated backend (launch,
// Record, Wait): the runtime's own wake-up latency per completion source,
// since the simulated kernel takes no time. It measures the host side only;
// BenchmarkGPUDecodeStep (sampling) is the same on a GPU.
func BenchmarkSimStep(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  simgpu.Config
		opts []runtime.Option
	}{
		{"cuda-callbacks", simgpu.Config{}, nil},
		{"hip-callbacks", simgpu.Config{HIPCallbacks: true}, nil},
		{"monitor-only", simgpu.Config{}, []runtime.Option{runtime.WithoutCallbacks()}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := tc.cfg
			cfg.Devices = 1
			cfg.Kernels = []simgpu.KernelDef{simgpu.Empty}
			dev, err := runtime.Open(context.Background(), append([]runtime.Option{runtime.WithDrivers(simgpu.New(cfg))}, tc.opts...)...)
			require.NoError(b, err)
			defer dev.Close()
			mod, err := dev.LoadImage([]byte("m"), specsFor(simgpu.Empty))
			require.NoError(b, err)
			k, err := mod.Kernel("empty")
			require.NoError(b, err)
			s, err := dev.NewStream()
			require.NoError(b, err)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.Launch(k, one); err != nil {
					b.Fatal(err)
				}
				ev, err := s.Record()
				if err != nil {
					b.Fatal(err)
				}
				if err := ev.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
