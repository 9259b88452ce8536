package sampling

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
)

// TestPreloadLoadsTheModuleOnce: Preload loads the sampler module (on the
// simulated CUDA device of the plumbing check, so the real artifacts), a
// second Preload and both production routes after it load nothing more,
// and a sampler without Preload loads it at its first draw, as before.
func TestPreloadLoadsTheModuleOnce(t *testing.T) {
	var loads atomic.Int64
	drv := plumbingDriver(func(c *simgpu.Config) {
		c.OnLoadModule = func(image []byte) error {
			if bytes.Contains(image, []byte("gumbel_max_f32")) {
				loads.Add(1)
			}
			return nil
		}
	})
	d, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	s, err := d.NewStream()
	require.NoError(t, err)
	const B, V = 2, 500
	rng := rand.New(rand.NewPCG(5, 6))
	logits := Logits{Buf: upload(t, d, gaussian(rng, B*V, 3)), B: B, V: V}
	tokens, err := d.Alloc(4 * B)
	require.NoError(t, err)
	draw := func(sm *Sampler) {
		t.Helper()
		for _, p := range [][]Params{{{Temperature: 1, TopP: 1}}, {{Temperature: 1, TopP: 0.9}}} {
			_, err := sm.Sample(context.Background(), s, logits, p, Key{1, 2}, tokens)
			require.NoError(t, err)
		}
		require.NoError(t, s.Synchronize(context.Background()))
	}

	sm := NewSampler(d)
	require.Zero(t, loads.Load(), "NewSampler loads nothing")
	require.NoError(t, sm.Preload())
	require.EqualValues(t, 1, loads.Load(), "Preload loads the module")
	require.NoError(t, sm.Preload())
	draw(sm)
	require.EqualValues(t, 1, loads.Load(), "nothing more after it")

	lazy := NewSampler(d)
	draw(lazy)
	require.EqualValues(t, 2, loads.Load(), "without Preload, the first draw loads it")
}
