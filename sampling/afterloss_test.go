package sampling

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
)

// After the device is lost no Sampler method calls into the driver: every
// path (both production routes, the direct entry points, the fallback) fails
// at once through the runtime. Runs on the simulated CUDA device of the
// plumbing check, so the real sampler module and its argument checks are
// used.
func TestSamplerMakesNoDriverCallAfterTheDeviceIsLost(t *testing.T) {
	var mu sync.Mutex
	var dev *runtime.Device
	var after []string
	drv := plumbingDriver(func(c *simgpu.Config) {
		c.OnCall = func(call string) error {
			mu.Lock()
			defer mu.Unlock()
			if dev != nil && dev.Lost() != nil {
				after = append(after, call)
			}
			return nil
		}
	})
	d, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	mu.Lock()
	dev = d
	mu.Unlock()
	s, err := d.NewStream()
	require.NoError(t, err)
	sm := NewSampler(d)
	const B, V = 4, 1000
	rng := rand.New(rand.NewPCG(3, 4))
	logits := Logits{Buf: upload(t, d, gaussian(rng, B*V, 3)), B: B, V: V}
	tokens, err := d.Alloc(4 * B)
	require.NoError(t, err)
	out := outputs(t, d, B)
	ctx := context.Background()
	gumbel := []Params{{Temperature: 1, TopP: 1}}
	rejection := []Params{{Temperature: 1, TopP: 0.9}}
	// Warm every path: module, scratch, slots, the verification ring.
	for _, p := range [][]Params{gumbel, rejection} {
		_, err := sm.Sample(ctx, s, logits, p, Key{1, 2}, tokens)
		require.NoError(t, err)
	}
	require.NoError(t, s.Synchronize(ctx))

	mod, err := d.LoadModule("testkernels")
	require.NoError(t, err)
	oob, err := mod.Kernel("oob_write_u32")
	require.NoError(t, err)
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	require.NoError(t, s.Launch(oob, one, tokens, uint32(1), uint64(1)<<40))
	// Queued behind the fault, unless the fault is already seen (the
	// simulated kernel runs at once; under -race it often wins): then the
	// device is lost and the call must say so.
	if _, err = sm.Sample(ctx, s, logits, rejection, Key{3, 4}, tokens); err != nil {
		require.ErrorIs(t, err, runtime.ErrDeviceLost)
	}
	require.ErrorIs(t, s.Synchronize(ctx), runtime.ErrDeviceFault)
	mu.Lock()
	after = nil
	mu.Unlock()

	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Sample gumbel", func() error { _, err := sm.Sample(ctx, s, logits, gumbel, Key{5, 6}, tokens); return err }},
		{"Sample rejection", func() error { _, err := sm.Sample(ctx, s, logits, rejection, Key{5, 6}, tokens); return err }},
		{"Sample fallback", func() error {
			_, err := sm.Sample(ctx, s, logits, []Params{{Temperature: 1, TopP: 1, TopK: 5000}}, Key{5, 6}, tokens)
			return err
		}},
		{"GumbelMax", func() error { return sm.GumbelMax(s, logits, 1, Key{7, 8}, out) }},
		{"Rejection", func() error { return sm.Rejection(s, logits, rejection, Key{7, 8}, 8, out) }},
		{"Router.Drain", func() error { sm.Router().Drain(); return runtime.ErrDeviceLost }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.call(), runtime.ErrDeviceLost)
			mu.Lock()
			defer mu.Unlock()
			require.Empty(t, after, "driver calls after the loss")
		})
	}
}
