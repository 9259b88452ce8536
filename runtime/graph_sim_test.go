package runtime_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
)

// words reads n u32 values of buf.
func words(t *testing.T, buf *runtime.Buffer, n int) []uint32 {
	t.Helper()
	got := make([]uint32, n)
	require.NoError(t, runtime.Download(buf, got))
	return got
}

func filled(n int, v uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestGraphReplaysItsCapturedLaunches proves a capture runs nothing, that
// each LaunchGraph runs the captured kernels with the argument values of
// the capture, in order with the stream's plain launches, and that an
// early-start launch is captured early (a programmatic edge from the kernel
// before it) except the capture's first, which has no kernel before it.
func TestGraphReplaysItsCapturedLaunches(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, simgpu.Config{})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	const n = 16
	a, err := r.dev.Alloc(4 * n)
	require.NoError(t, err)
	b, err := r.dev.Alloc(4 * n)
	require.NoError(t, err)

	value := uint32(7)
	early := one
	early.EarlyStart = true
	g, err := s.Capture(func() error {
		if err := s.Launch(r.fill, early, a, value, uint32(n)); err != nil {
			return err
		}
		return s.Launch(r.fill, early, b, value+1, uint32(n/2))
	})
	require.NoError(t, err)
	require.Equal(t, 2, g.Kernels())
	require.Zero(t, r.sim.Launches.Load(), "a capture launches nothing")
	require.Equal(t, int64(1), r.sim.EarlyLaunches.Load(), "the second kernel captured early, the first plainly")
	require.NoError(t, s.Synchronize(ctx))
	require.Equal(t, filled(n, 0), words(t, a, n), "nothing ran")

	value = 99 // the graph holds the values of the capture
	require.NoError(t, s.LaunchGraph(g))
	require.NoError(t, s.Synchronize(ctx))
	require.Equal(t, filled(n, 7), words(t, a, n))
	require.Equal(t, append(filled(n/2, 8), filled(n/2, 0)...), words(t, b, n))

	// In order with plain launches: overwrite, replay, overwrite again.
	require.NoError(t, s.Launch(r.fill, one, a, uint32(1), uint32(n)))
	require.NoError(t, s.LaunchGraph(g))
	require.NoError(t, s.Synchronize(ctx))
	require.Equal(t, filled(n, 7), words(t, a, n))
	require.NoError(t, s.Launch(r.fill, one, a, uint32(2), uint32(n)))
	require.NoError(t, s.Synchronize(ctx))
	require.Equal(t, filled(n, 2), words(t, a, n))
	require.EqualValues(t, 2, r.sim.GraphLaunches.Load())

	ev, err := s.Record()
	require.NoError(t, err)
	require.NoError(t, s.LaunchGraph(g))
	ev2, err := s.Record()
	require.NoError(t, err)
	require.Equal(t, "fill_u32", ev2.Kernel(), "an event after a replay names the graph's last kernel")
	require.NoError(t, ev.Wait(ctx))
	require.NoError(t, ev2.Wait(ctx))
	// An early-start launch right after a replay is launched plainly; the
	// next one starts early again.
	base := r.sim.EarlyLaunches.Load()
	require.NoError(t, s.LaunchGraph(g))
	require.NoError(t, s.Launch(r.fill, early, b, uint32(3), uint32(1)))
	require.Equal(t, base, r.sim.EarlyLaunches.Load(), "plain right after a replay")
	require.NoError(t, s.Launch(r.fill, early, b, uint32(3), uint32(1)))
	require.Equal(t, base+1, r.sim.EarlyLaunches.Load())
	require.NoError(t, s.Synchronize(ctx))
	require.NoError(t, g.Close())
	require.NoError(t, g.Close(), "a second Close does nothing")
	require.Zero(t, r.sim.GraphsLive.Load())
	require.ErrorIs(t, s.LaunchGraph(g), runtime.ErrClosed)
}

// TestFaultInAReplayedGraphLosesTheDevice proves a fault in a replayed
// kernel fails the event recorded after the replay with the runtime's
// *FaultError naming the kernel, loses the device, and that afterwards
// neither LaunchGraph, Capture nor Close of a graph calls the driver.
func TestFaultInAReplayedGraphLosesTheDevice(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, simgpu.Config{})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	buf := mustAlloc(t, r.dev)
	g, err := s.Capture(func() error {
		if err := s.Launch(r.fill, one, buf, uint32(1), uint32(1)); err != nil {
			return err
		}
		return s.Launch(r.oob, one, buf, uint32(1), uint64(1)<<40)
	})
	require.NoError(t, err)
	spare, err := s.Capture(func() error { return s.Launch(r.fill, one, buf, uint32(2), uint32(1)) })
	require.NoError(t, err)
	require.NoError(t, s.Synchronize(ctx), "capturing the faulty kernel ran nothing")
	require.NoError(t, r.dev.Lost())

	require.NoError(t, s.LaunchGraph(g))
	ev, err := s.Record()
	if err == nil { // the fault may already have lost the device
		err = ev.Wait(ctx)
	}
	require.ErrorIs(t, err, runtime.ErrDeviceFault)
	var fe *runtime.FaultError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "oob_write_u32", fe.Kernel)
	require.Error(t, r.dev.Lost())

	calls := r.sim.DriverCalls.Load()
	var lost *runtime.DeviceLostError
	require.ErrorAs(t, s.LaunchGraph(spare), &lost)
	called := false
	_, err = s.Capture(func() error { called = true; return nil })
	require.ErrorAs(t, err, &lost)
	require.False(t, called, "no capture on a lost device")
	require.ErrorIs(t, spare.Close(), runtime.ErrDeviceLost)
	require.ErrorIs(t, g.Close(), runtime.ErrDeviceLost)
	require.Equal(t, calls, r.sim.DriverCalls.Load(), "no driver call after the loss")
}

// TestCaptureRefusesWhatItCannotRecord proves Record, Synchronize and
// TimeGPU on a capturing stream are refused with ErrCapturing and end the
// capture on the driver: later launches of the capture fail, Capture
// returns the refusal even when enqueue drops it, no graph is left and the
// stream works as before.
func TestCaptureRefusesWhatItCannotRecord(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		timer bool
		call  func(s *runtime.Stream) error
	}{
		{"record", false, func(s *runtime.Stream) error { _, err := s.Record(); return err }},
		{"synchronize", false, func(s *runtime.Stream) error { return s.Synchronize(ctx) }},
		{"time GPU, no timer", false, func(s *runtime.Stream) error {
			_, err := s.TimeGPU(ctx, func() error { return nil })
			return err
		}},
		{"time GPU", true, func(s *runtime.Stream) error {
			_, err := s.TimeGPU(ctx, func() error { return nil })
			return err
		}},
	} {
		for _, drop := range []bool{false, true} {
			name := tc.name
			if drop {
				name += ", enqueue drops the error"
			}
			t.Run(name, func(t *testing.T) {
				r := newRig(t, simgpu.Config{GPUTimer: tc.timer})
				s, err := r.dev.NewStream()
				require.NoError(t, err)
				buf := mustAlloc(t, r.dev)
				var callErr, laterErr error
				g, err := s.Capture(func() error {
					if err := s.Launch(r.fill, one, buf, uint32(1), uint32(1)); err != nil {
						return err
					}
					callErr = tc.call(s)
					require.Zero(t, r.sim.Capturing.Load(), "the refusal ended the capture on the driver")
					laterErr = s.Launch(r.fill, one, buf, uint32(1), uint32(1))
					if drop {
						return nil
					}
					return callErr
				})
				require.Nil(t, g)
				require.ErrorIs(t, err, runtime.ErrCapturing)
				require.ErrorIs(t, callErr, runtime.ErrCapturing)
				require.ErrorContains(t, callErr, "ended and discarded")
				require.ErrorIs(t, laterErr, runtime.ErrCapturing, "a launch after the refusal")
				require.Zero(t, r.sim.Launches.Load(), "nothing ran")
				require.Zero(t, r.sim.Capturing.Load())
				require.Zero(t, r.sim.GraphsLive.Load())
				require.NoError(t, r.dev.Lost())
				r.fillAndCheck(t, s, 0xAB)
			})
		}
	}
}

// TestCaptureDiscardedWhenEnqueueFails proves an error from enqueue, or a
// launch the driver rejects during the capture (which invalidates it on
// CUDA), ends and discards the capture and is what Capture returns; and a
// panic in enqueue leaves no stream capturing.
func TestCaptureDiscardedWhenEnqueueFails(t *testing.T) {
	mine := errors.New("enqueue failed")
	var failLaunch bool
	var mu sync.Mutex
	r := newRig(t, simgpu.Config{OnCall: func(call string) error {
		mu.Lock()
		defer mu.Unlock()
		if call == "Launch" && failLaunch {
			failLaunch = false
			return simgpu.CodeInvalidValue
		}
		return nil
	}})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	buf := mustAlloc(t, r.dev)
	launch := func() error { return s.Launch(r.fill, one, buf, uint32(1), uint32(1)) }

	g, err := s.Capture(func() error {
		if err := launch(); err != nil {
			return err
		}
		return mine
	})
	require.Nil(t, g)
	require.ErrorIs(t, err, mine)
	require.Zero(t, r.sim.Capturing.Load())
	require.Zero(t, r.sim.GraphsLive.Load())

	g, err = s.Capture(func() error {
		mu.Lock()
		failLaunch = true
		mu.Unlock()
		return launch()
	})
	require.Nil(t, g)
	var le *runtime.LaunchError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "fill_u32", le.Kernel)
	require.Zero(t, r.sim.Capturing.Load())
	require.Zero(t, r.sim.GraphsLive.Load())

	require.Panics(t, func() {
		_, _ = s.Capture(func() error { panic("boom") })
	})
	require.Zero(t, r.sim.Capturing.Load(), "a panicking enqueue leaves no capture")
	g, err = s.Capture(launch)
	require.NoError(t, err, "the stream captures again")
	require.NoError(t, g.Close())
	r.fillAndCheck(t, s, 5)
}

// TestCaptureOnABackendWithoutGraphs proves a backend that cannot capture
// gives a *CaptureError matching errors.ErrUnsupported without running
// enqueue, and the stream stays usable.
func TestCaptureOnABackendWithoutGraphs(t *testing.T) {
	r := newRig(t, simgpu.Config{NoGraphs: true})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	called := false
	g, err := s.Capture(func() error { called = true; return nil })
	require.Nil(t, g)
	require.False(t, called)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	var ce *runtime.CaptureError
	require.ErrorAs(t, err, &ce)
	r.fillAndCheck(t, s, 3)
}

// TestLaunchGraphRefusesAGraphOfAnotherStream proves a graph replays only
// on the stream that captured it: another stream of the device, or of
// another device, gets a *LaunchError and runs nothing.
func TestLaunchGraphRefusesAGraphOfAnotherStream(t *testing.T) {
	r := newRig(t, simgpu.Config{})
	other := newRig(t, simgpu.Config{})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	s2, err := r.dev.NewStream()
	require.NoError(t, err)
	s3, err := other.dev.NewStream()
	require.NoError(t, err)
	buf := mustAlloc(t, r.dev)
	g, err := s.Capture(func() error { return s.Launch(r.fill, one, buf, uint32(1), uint32(1)) })
	require.NoError(t, err)
	for _, on := range []*runtime.Stream{s2, s3} {
		var le *runtime.LaunchError
		require.ErrorAs(t, on.LaunchGraph(g), &le)
		require.ErrorContains(t, le, "another stream")
	}
	var le *runtime.LaunchError
	require.ErrorAs(t, s.LaunchGraph(nil), &le)
	require.Zero(t, r.sim.GraphLaunches.Load()+other.sim.GraphLaunches.Load())
	require.NoError(t, s.LaunchGraph(g))
	require.NoError(t, s.Synchronize(context.Background()))
}

// TestStreamAndDeviceCloseFreeTheirGraphs proves closing a stream destroys
// its graphs (and ends a capture in progress), and closing the device
// destroys those of its streams: the simulated driver counts none live.
func TestStreamAndDeviceCloseFreeTheirGraphs(t *testing.T) {
	r := newRig(t, simgpu.Config{})
	buf := mustAlloc(t, r.dev)
	capture := func(s *runtime.Stream) *runtime.Graph {
		g, err := s.Capture(func() error { return s.Launch(r.fill, one, buf, uint32(1), uint32(1)) })
		require.NoError(t, err)
		return g
	}
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	g := capture(s)
	capture(s)
	require.EqualValues(t, 2, r.sim.GraphsLive.Load())
	require.NoError(t, g.Close())
	require.EqualValues(t, 1, r.sim.GraphsLive.Load())

	// Close during a capture ends it; the capture's launches then fail.
	var launchErr error
	_, err = s.Capture(func() error {
		require.NoError(t, s.Close())
		launchErr = s.Launch(r.fill, one, buf, uint32(1), uint32(1))
		return launchErr
	})
	require.ErrorIs(t, err, runtime.ErrClosed)
	require.ErrorIs(t, launchErr, runtime.ErrClosed)
	require.Zero(t, r.sim.GraphsLive.Load())
	require.Zero(t, r.sim.Capturing.Load())
	require.ErrorIs(t, s.LaunchGraph(g), runtime.ErrClosed)

	s2, err := r.dev.NewStream()
	require.NoError(t, err)
	capture(s2)
	capture(s2)
	require.EqualValues(t, 2, r.sim.GraphsLive.Load())
	require.NoError(t, r.dev.Close())
	require.Zero(t, r.sim.GraphsLive.Load())
	require.Zero(t, r.sim.StreamsLive.Load())
}

// TestCaptureWithConcurrentCallsNeitherDeadlocksNorLeaks: launches and
// records from other goroutines during a capture are the caller's
// mistake, but the runtime must end in a consistent state: Capture returns
// (a graph or ErrCapturing), nothing is left capturing, and the stream
// works afterwards. Run it with -race.
func TestCaptureWithConcurrentCallsNeitherDeadlocksNorLeaks(t *testing.T) {
	r := newRig(t, simgpu.Config{})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	buf := mustAlloc(t, r.dev)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			g, err := s.Capture(func() error {
				var wg sync.WaitGroup
				for i := range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if i%2 == 0 {
							_ = s.Launch(r.fill, one, buf, uint32(i), uint32(1)) // captured, or refused: either is fine here
						} else if ev, err := s.Record(); err == nil {
							_ = ev.Wait(context.Background()) // an event recorded before the capture began
						}
					}()
				}
				wg.Wait()
				return s.Launch(r.fill, one, buf, uint32(9), uint32(1))
			})
			if err != nil {
				require.ErrorIs(t, err, runtime.ErrCapturing)
				continue
			}
			require.NoError(t, g.Close())
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("captures with concurrent calls did not finish in 30 s")
	}
	require.Zero(t, r.sim.Capturing.Load())
	require.Zero(t, r.sim.GraphsLive.Load())
	r.fillAndCheck(t, s, 11)
}
