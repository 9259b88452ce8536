package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
)

// Open gives up on a slow backend when ctx ends; the device that backend
// opens afterwards is closed, not leaked (on CUDA a retained primary
// context, on ROCm a device still registered for HSA faults). Before the fix
// nothing ever closed it.
func TestOpenClosesADeviceThatArrivesAfterCtxEnded(t *testing.T) {
	release := make(chan struct{})
	drv := simgpu.New(simgpu.Config{Devices: 1, OnCall: func(call string) error {
		if call == "Open" {
			<-release
		}
		return nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := runtime.Open(ctx, runtime.WithDrivers(drv))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(release)
	require.Eventually(t, func() bool { return len(drv.Devices()) == 1 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return drv.Devices()[0].Closed() }, 5*time.Second, time.Millisecond,
		"the device opened after Open gave up was never closed")
}

// Stream.Close on a lost device makes no driver call but still lets go of
// what the stream holds outside the driver (driver.Abandoner; the runtime's
// own kernel-argument memory is checked in leak_internal_test.go). Before
// the fix it did neither.
func TestStreamCloseOnALostDeviceReleasesItsHostMemory(t *testing.T) {
	r := newRig(t, simgpu.Config{})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	idle, err := r.dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.Launch(r.oob, one, mustAlloc(t, r.dev), uint32(1), uint64(1)<<40))
	require.ErrorIs(t, s.Synchronize(context.Background()), runtime.ErrDeviceFault)
	calls := r.sim.DriverCalls.Load()
	require.ErrorIs(t, idle.Close(), runtime.ErrDeviceLost)
	require.Equal(t, calls, r.sim.DriverCalls.Load(), "no driver call after the loss")
	require.EqualValues(t, 1, r.sim.StreamsLive.Load(), "the closed stream was let go of")
	require.NoError(t, r.dev.Close())
	require.Zero(t, r.sim.StreamsLive.Load(), "Close lets go of the rest")
}

// Device.Stats exposes what the runtime counts and never returns as an
// error: driver events it failed to destroy (each leaks a handle) and host
// callbacks it failed to enqueue (the monitor lands those events instead).
func TestStatsCountWhatIsNotAnError(t *testing.T) {
	var failNotify, failDestroy atomic.Bool
	r := newRig(t, simgpu.Config{OnCall: func(call string) error {
		switch {
		case call == "Notify" && failNotify.CompareAndSwap(true, false),
			call == "EventDestroy" && failDestroy.CompareAndSwap(true, false):
			return simgpu.CodeInvalidValue
		}
		return nil
	}}, runtime.WithWaitSpin(0)) // Record enqueues the callback
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	require.Equal(t, runtime.Stats{}, r.dev.Stats())
	failNotify.Store(true)
	failDestroy.Store(true)
	ev, err := s.Record()
	require.NoError(t, err, "a callback that cannot be enqueued is not the record's error")
	require.NoError(t, ev.Wait(context.Background()), "the monitor lands it")
	require.NoError(t, s.Synchronize(context.Background())) // reaps ev's handle: its destroy fails
	require.Eventually(t, func() bool { return r.dev.Stats().EventDestroyErrors == 1 }, 5*time.Second, time.Millisecond)
	st := r.dev.Stats()
	require.EqualValues(t, 1, st.NotifyErrors)
	require.EqualValues(t, 1, st.EventDestroyErrors)
}
