package sampling

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

// An event can fail without the device being lost: the driver could not
// answer its query. That says nothing about the work behind it, so the
// sampler must not free (or reuse) memory that work may still read. Before
// the fix reapRetired took Failed for lost and freed the retired scratch
// buffer while the kernel queued ahead of it was still running.
func TestAFailedQueryDoesNotFreeScratchUnderQueuedWork(t *testing.T) {
	var failQuery atomic.Bool
	var sim *simgpu.Device
	var flag *runtime.Buffer
	var freedEarly atomic.Int64
	drv := plumbingDriver(func(c *simgpu.Config) {
		c.DropCallbacks = true // the monitor's query is what settles events
		c.OnCall = func(call string) error {
			switch call {
			case "EventQuery":
				if failQuery.CompareAndSwap(true, false) {
					return simgpu.CodeInvalidValue
				}
			case "Free":
				b, err := sim.Bytes(driver.Ptr(flag.Ptr()), 4)
				if err == nil && binary.LittleEndian.Uint32(b) == 0 {
					freedEarly.Add(1) // the spin queued ahead has not finished
				}
			}
			return nil
		}
	})
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Close()) })
	sim = drv.Devices()[0]
	s, err := dev.NewStream()
	require.NoError(t, err)
	spin, f := spinKernel(t, dev)
	flag = f
	sm := NewSampler(dev)
	rng := rand.New(rand.NewPCG(5, 6))
	const V = 100
	small := Logits{Buf: upload(t, dev, gaussian(rng, V, 3)), B: 1, V: V}
	big := Logits{Buf: upload(t, dev, gaussian(rng, 2048*V, 3)), B: 2048, V: V} // 4·B bytes of arrival counters outgrow the first 4096
	out := outputs(t, dev, 2048)
	require.NoError(t, sm.GumbelMax(s, small, 1, Key{1, 1}, out))
	require.NoError(t, s.Synchronize(context.Background()))

	// A long kernel, then a call that outgrows the scratch: the old buffers
	// are retired behind the kernel.
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	require.NoError(t, s.Launch(spin, one, uint64(300*time.Millisecond), flag))
	require.NoError(t, sm.GumbelMax(s, big, 1, Key{2, 2}, out))
	sm.mu.Lock()
	require.NotEmpty(t, sm.retired)
	first := sm.retired[0].ev
	sm.mu.Unlock()
	failQuery.Store(true) // the monitor's next query, of the oldest retired event, fails
	require.Eventually(t, func() bool { return first.State() == runtime.Failed }, 5*time.Second, time.Millisecond)
	require.NoError(t, dev.Lost())

	require.NoError(t, sm.GumbelMax(s, big, 1, Key{3, 3}, out)) // reaps
	require.NoError(t, s.Synchronize(context.Background()))
	require.NoError(t, sm.GumbelMax(s, big, 1, Key{4, 4}, out)) // reaps again, after the work
	require.NoError(t, s.Synchronize(context.Background()))
	require.Zero(t, freedEarly.Load(), "scratch freed while the kernel queued ahead of it could still read it")
	sm.mu.Lock()
	defer sm.mu.Unlock()
	require.Empty(t, sm.retired, "once the work is done the retired buffers are freed")
}

// The same for a launch slot: a slot whose event failed a query is reused
// only after the work behind it is done, and the failure does not wedge the
// slot. Before the fix every later call that came round to that slot failed
// with the old query error.
func TestAFailedQueryDoesNotWedgeALaunchSlot(t *testing.T) {
	var failQuery atomic.Bool
	drv := plumbingDriver(func(c *simgpu.Config) {
		c.DropCallbacks = true
		c.OnCall = func(call string) error {
			if call == "EventQuery" && failQuery.CompareAndSwap(true, false) {
				return simgpu.CodeInvalidValue
			}
			return nil
		}
	})
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dev.Close()) })
	s, err := dev.NewStream()
	require.NoError(t, err)
	spin, flag := spinKernel(t, dev)
	sm := NewSampler(dev)
	rng := rand.New(rand.NewPCG(7, 8))
	const B, V = 2, 100
	logits := Logits{Buf: upload(t, dev, gaussian(rng, B*V, 3)), B: B, V: V}
	out := outputs(t, dev, B)
	p := []Params{{Temperature: 1, TopP: 0.9}}
	one := runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}
	require.NoError(t, s.Launch(spin, one, uint64(100*time.Millisecond), flag))
	require.NoError(t, sm.Rejection(s, logits, p, Key{1, 1}, 8, out))
	first := sm.slots[0].ev
	failQuery.Store(true)
	require.Eventually(t, func() bool { return first.State() == runtime.Failed }, 5*time.Second, time.Millisecond)
	for i := 1; i <= launchSlots; i++ { // the last comes back to slot 0
		require.NoError(t, sm.Rejection(s, logits, p, Key{2, uint32(i)}, 8, out), "call %d", i)
	}
	got := make([]uint32, 1)
	require.NoError(t, runtime.Download(flag, got))
	require.EqualValues(t, 1, got[0], "slot 0 was reused only after the work queued ahead of it")
}
