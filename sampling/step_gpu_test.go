package sampling

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/runtime"
)

// BenchmarkGPUDecodeStep is one decode-like step as a generation loop runs
// it: a 1x32000 Gumbel launch, Record, Wait, and the 4-byte token read
// back; wall time per step, so the runtime's wake-up latency is in it (the
// number to put beside PyTorch's argmax().item()). Sub-benchmarks per
// completion path: "callbacks" is the default device (on CUDA the callback
// lands the event; on ROCm, HIPGO_BACKEND=rocm, it only wakes the monitor),
// "monitor-only" opens the device WithoutCallbacks.
func BenchmarkGPUDecodeStep(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []runtime.Option
	}{
		{"callbacks", nil},
		{"monitor-only", []runtime.Option{runtime.WithoutCallbacks()}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			opts := tc.opts
			if os.Getenv(envPlumbing) == "1" {
				opts = append(opts, runtime.WithDrivers(plumbingDriver()))
			}
			dev, err := runtime.Open(context.Background(), opts...)
			if errors.Is(err, runtime.ErrNoDevice) {
				testenv.NeedGPU(b, err)
			}
			require.NoError(b, err)
			defer func() { require.NoError(b, dev.Close()) }()
			s, err := dev.NewStream()
			require.NoError(b, err)
			sm := NewSampler(dev)
			const V = 32000
			logits := Logits{Buf: upload(b, dev, gaussian(rand.New(rand.NewPCG(1, 2)), V, 5)), B: 1, V: V}
			out := outputs(b, dev, 1)
			tok := make([]uint32, 1)
			ctx := context.Background()
			step := func(i int) {
				if err := sm.GumbelMax(s, logits, 1, Key{1, uint32(i)}, out); err != nil {
					b.Fatal(err)
				}
				ev, err := s.Record()
				if err != nil {
					b.Fatal(err)
				}
				if err := ev.Wait(ctx); err != nil {
					b.Fatal(err)
				}
				if err := runtime.Download(out.Tokens, tok); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; i < 100; i++ { // load the module, warm the slots
				step(i)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				step(i)
			}
		})
	}
}
