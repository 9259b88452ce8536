package sampling

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/runtime"
)

// Outgrowing the Gumbel scratch while earlier work is still queued must not
// free memory that work may use: the old buffers wait, retired, until an
// event recorded at the replacement settles, and a later call frees them.
// Runs on the simulated "cuda" device of the plumbing check, with a spin
// kernel holding the stream busy.
func TestGumbelScratchOutgrownWhileQueuedIsFreedOnlyAfterTheQueueDrains(t *testing.T) {
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(plumbingDriver()))
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Close()) }()
	s, err := dev.NewStream()
	require.NoError(t, err)
	sm := NewSampler(dev)
	spin, flag := spinKernel(t, dev)
	rng := rand.New(rand.NewPCG(5, 6))

	draw := func(B, V int) {
		host := gaussian(rng, B*V, 3)
		buf := upload(t, dev, host)
		out := outputs(t, dev, B)
		key := Key{rng.Uint32(), rng.Uint32()}
		require.NoError(t, sm.GumbelMax(s, Logits{Buf: buf, B: B, V: V}, 1, key, out))
		require.NoError(t, s.Synchronize(context.Background()))
		want := make([]uint32, B)
		require.NoError(t, GumbelMaxCPU(want, host, B, V, 1, key))
		require.Equal(t, want, download(t, out.Tokens, B))
	}

	draw(2, 1000) // 4 KiB of scratch each
	old := []*runtime.Buffer{sm.partVal, sm.partIdx, sm.arrivals}
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	require.NoError(t, s.Launch(spin, one, uint64(300*time.Millisecond), flag))
	// 3000 rows need 12 KiB: every buffer is outgrown while the spin is queued.
	B, V := 3000, 8
	host := gaussian(rng, B*V, 3)
	buf := upload(t, dev, host)
	out := outputs(t, dev, B)
	require.NoError(t, sm.GumbelMax(s, Logits{Buf: buf, B: B, V: V}, 1, Key{1, 2}, out))
	require.Len(t, sm.retired, 3)
	for i, r := range sm.retired {
		require.Same(t, old[i], r.buf)
		require.Equal(t, runtime.Pending, r.ev.State(), "retired while the spin is queued")
	}
	require.NoError(t, s.Synchronize(context.Background()))
	want := make([]uint32, B)
	require.NoError(t, GumbelMaxCPU(want, host, B, V, 1, Key{1, 2}))
	require.Equal(t, want, download(t, out.Tokens, B))

	draw(B, V) // the queue has drained: this call frees the retired buffers
	require.Empty(t, sm.retired)
	require.Len(t, download(t, sm.arrivals, B), B)
	require.Equal(t, make([]uint32, B), download(t, sm.arrivals, B), "a new counter buffer starts at zero")
}

// The Gumbel launch asks to start early (runtime.LaunchConfig.EarlyStart:
// its kernel waits for the work ahead before touching memory); the
// rejection kernel has no such wait, so its launch must stay plain. On the
// simulated "cuda" device of the plumbing check, which counts early
// launches apart.
func TestOnlyTheGumbelLaunchStartsEarly(t *testing.T) {
	drv := plumbingDriver()
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Close()) }()
	sim := drv.Devices()[0]
	s, err := dev.NewStream()
	require.NoError(t, err)
	sm := NewSampler(dev)
	rng := rand.New(rand.NewPCG(7, 8))
	const B, V = 3, 500
	logits := Logits{Buf: upload(t, dev, gaussian(rng, B*V, 3)), B: B, V: V}
	out := outputs(t, dev, B)
	launches := sim.Launches.Load()
	require.NoError(t, sm.GumbelMax(s, logits, 1, Key{1, 2}, out))
	require.Equal(t, launches+1, sim.Launches.Load())
	require.EqualValues(t, 1, sim.EarlyLaunches.Load(), "the Gumbel launch starts early")
	require.NoError(t, sm.Rejection(s, logits, []Params{{Temperature: 1, TopP: 0.9}}, Key{1, 2}, MaxRounds, out))
	require.Equal(t, launches+2, sim.Launches.Load())
	require.EqualValues(t, 1, sim.EarlyLaunches.Load(), "the rejection launch is plain")
	require.NoError(t, s.Synchronize(context.Background()))
}
