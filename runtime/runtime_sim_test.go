package runtime_test

// These tests drive the runtime's state machine with the simulated backend
// (internal/simgpu): injected rejections, asynchronous faults, callbacks that
// never come, callbacks from C threads, hangs. They prove the runtime's logic,
// not any GPU's behaviour; the CUDA tests on real hardware do that.

import (
	"context"
	"errors"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

// specsFor describes simulated kernels with naturally aligned parameters,
// the layout the simulated driver also reports.
func specsFor(defs ...simgpu.KernelDef) []runtime.KernelSpec {
	var out []runtime.KernelSpec
	for _, d := range defs {
		s := runtime.KernelSpec{Name: d.Name}
		off := 0
		for _, sz := range d.ParamSizes {
			off = (off + sz - 1) / sz * sz
			s.Params = append(s.Params, runtime.ParamSpec{Offset: off, Size: sz, Pointer: false})
			off += sz
		}
		out = append(out, s)
	}
	return out
}

type rig struct {
	drv  *simgpu.Driver
	sim  *simgpu.Device
	dev  *runtime.Device
	mod  *runtime.Module
	fill *runtime.Kernel
	oob  *runtime.Kernel
	spin *runtime.Kernel
}

func newRig(t *testing.T, cfg simgpu.Config, opts ...runtime.Option) *rig {
	t.Helper()
	cfg.Devices = 1
	cfg.Kernels = []simgpu.KernelDef{simgpu.FillU32, simgpu.OOBWriteU32, simgpu.SpinNs, simgpu.Empty}
	drv := simgpu.New(cfg)
	dev, err := runtime.Open(context.Background(), append([]runtime.Option{runtime.WithDrivers(drv)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() }) // the tests assert Close where it matters
	specs := specsFor(simgpu.FillU32, simgpu.OOBWriteU32, simgpu.SpinNs, simgpu.Empty)
	mod, err := dev.LoadImage([]byte("testkernels"), specs)
	require.NoError(t, err)
	r := &rig{drv: drv, sim: drv.Devices()[0], dev: dev, mod: mod}
	r.fill, err = mod.Kernel("fill_u32")
	require.NoError(t, err)
	r.oob, err = mod.Kernel("oob_write_u32")
	require.NoError(t, err)
	r.spin, err = mod.Kernel("spin_ns")
	require.NoError(t, err)
	return r
}

var one = runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}

// fillAndCheck launches fill on s and verifies the device memory, proving
// the device is usable.
func (r *rig) fillAndCheck(t *testing.T, s *runtime.Stream, value uint32) {
	t.Helper()
	const n = 64
	buf, err := r.dev.Alloc(4 * n)
	require.NoError(t, err)
	defer func() { require.NoError(t, buf.Free()) }()
	require.NoError(t, s.Launch(r.fill, one, buf, value, uint32(n)))
	ev, err := s.Record()
	require.NoError(t, err)
	require.NoError(t, ev.Wait(context.Background()))
	got := make([]uint32, n)
	require.NoError(t, runtime.Download(buf, got))
	for i, v := range got {
		require.Equal(t, value, v, "element %d", i)
	}
}

func TestEventLandsThroughCallbackAndMonitor(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  simgpu.Config
		opts []runtime.Option
	}{
		{"callback", simgpu.Config{}, nil},
		{"callbacks never come: the monitor lands it", simgpu.Config{DropCallbacks: true}, nil},
		{"no callbacks enqueued", simgpu.Config{}, []runtime.Option{runtime.WithoutCallbacks()}},
		{"callbacks on C threads", simgpu.Config{ForeignThreadCallbacks: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.cfg, tc.opts...)
			s, err := r.dev.NewStream()
			require.NoError(t, err)
			r.fillAndCheck(t, s, 0xC0FFEE)
			if tc.cfg.DropCallbacks {
				require.Zero(t, r.sim.Callbacks.Load(), "the simulated driver dropped every callback")
			}
		})
	}
}

// TestCallbacksOnlyForWaitsThatSleep: a host callback stalls its stream
// until the host has run it, so with a wait spin the runtime enqueues one
// only for a Wait whose spin ended with the event pending (the callback
// then wakes its sleep); with a spin of 0 every Wait sleeps at once, and
// Record enqueues it.
func TestCallbacksOnlyForWaitsThatSleep(t *testing.T) {
	var notifies atomic.Int64
	count := simgpu.Config{OnCall: func(call string) error {
		if call == "Notify" {
			notifies.Add(1)
		}
		return nil
	}}
	ctx := context.Background()
	// A spin far longer than the kernel: the Wait sees it land.
	r := newRig(t, count, runtime.WithWaitSpin(10*time.Second))
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.Launch(r.fill, one, mustAlloc(t, r.dev), uint32(1), uint32(1)))
	ev, err := s.Record()
	require.NoError(t, err)
	require.NoError(t, ev.Wait(ctx))
	require.Zero(t, notifies.Load(), "the spin saw it land: no callback")

	// A spin far shorter than the kernel: the Wait sleeps.
	r = newRig(t, count, runtime.WithWaitSpin(time.Millisecond))
	s, err = r.dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.Launch(r.spin, one, uint64(200*time.Millisecond), mustAlloc(t, r.dev)))
	ev, err = s.Record()
	require.NoError(t, err)
	require.Zero(t, notifies.Load(), "none at Record")
	require.NoError(t, ev.Wait(ctx))
	require.EqualValues(t, 1, notifies.Load(), "the Wait whose spin ended enqueued one")

	notifies.Store(0)
	r = newRig(t, count, runtime.WithWaitSpin(0))
	s, err = r.dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.Launch(r.spin, one, uint64(20*time.Millisecond), mustAlloc(t, r.dev)))
	ev, err = s.Record()
	require.NoError(t, err)
	require.EqualValues(t, 1, notifies.Load(), "a spin of 0: Record enqueues it")
	require.NoError(t, ev.Wait(ctx))
	require.EqualValues(t, 1, notifies.Load())
}

func TestManyEventsFromForeignThreadsLandWithoutLeaks(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("foreign-thread callbacks are simulated with pthread_create on linux only")
	}
	before := goruntime.NumGoroutine()
	// A spin of 0: every Record enqueues a callback when none is
	// outstanding (with a spin, only a Wait that sleeps does).
	r := newRig(t, simgpu.Config{ForeignThreadCallbacks: true}, runtime.WithWaitSpin(0))
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	const n = 2000
	evs := make([]*runtime.Event, 0, n)
	for i := 0; i < n; i++ {
		require.NoError(t, s.Launch(r.fill, one, mustAlloc(t, r.dev), uint32(i), uint32(1)))
		ev, err := s.Record()
		require.NoError(t, err)
		evs = append(evs, ev)
	}
	// Nobody waits: the coalesced callbacks (called from C threads) land
	// most events and the monitor the rest, so Done closes for every one.
	select {
	case <-evs[n-1].Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the last event never landed without a waiter")
	}
	for i, ev := range evs {
		select {
		case <-ev.Done():
		default:
			t.Fatalf("event %d is still pending after a later one landed", i)
		}
		require.NoError(t, ev.Err())
	}
	cbs := r.sim.Callbacks.Load()
	require.GreaterOrEqual(t, cbs, int64(1))
	require.Less(t, cbs, int64(n), "callbacks are coalesced: at most one outstanding per stream")
	t.Logf("%d events landed by %d callbacks from C threads", n, cbs)
	require.NoError(t, r.dev.Close())
	require.Eventually(t, func() bool { return goruntime.NumGoroutine() <= before+1 }, 5*time.Second, 10*time.Millisecond,
		"goroutines: %d before, %d after", before, goruntime.NumGoroutine())
}

func mustAlloc(t *testing.T, d *runtime.Device) *runtime.Buffer {
	t.Helper()
	b, err := d.Alloc(4)
	require.NoError(t, err)
	return b
}

func TestLaunchIsCheckedAgainstMetadataBeforeTheDriver(t *testing.T) {
	r := newRig(t, simgpu.Config{})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	buf := mustAlloc(t, r.dev)
	// A kernel built for 256 threads (like bounded_fill_u32's launch bound).
	bounded, err := r.dev.LoadImage([]byte("bounded"), []runtime.KernelSpec{{
		Name: "fill_u32", MaxThreads: 256,
		Params: []runtime.ParamSpec{{Offset: 0, Size: 8, Pointer: true}, {Offset: 8, Size: 4}, {Offset: 12, Size: 4}},
	}})
	require.NoError(t, err)
	bk, err := bounded.Kernel("fill_u32")
	require.NoError(t, err)

	calls := r.sim.DriverCalls.Load()
	for _, tc := range []struct {
		name   string
		k      *runtime.Kernel
		cfg    runtime.LaunchConfig
		args   []any
		reason string
	}{
		{"too few arguments", r.fill, one, []any{buf, uint32(1)}, "takes 3 arguments, got 2"},
		{"wrong size", r.fill, one, []any{buf, uint64(1), uint32(1)}, "argument 1: the kernel's parameter is 4 bytes, got uint64 (8 bytes)"},
		{"host-sized int", r.fill, one, []any{buf, 1, uint32(1)}, "argument 1: argument of type int is not a kernel argument type"},
		{"scalar where a pointer goes", bk, one, []any{uint64(5), uint32(1), uint32(1)}, "argument 0: the kernel's parameter is a device pointer, got uint64"},
		{"oversized block", bk, runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 512, Y: 1, Z: 1}},
			[]any{buf, uint32(1), uint32(1)}, "block of 512 threads exceeds the 256 the kernel was built for"},
		{"block over the device", r.fill, runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 2048, Y: 1, Z: 1}},
			[]any{buf, uint32(1), uint32(1)}, "block of 2048 threads exceeds the device's 1024"},
		{"zero grid", r.fill, runtime.LaunchConfig{Block: runtime.Dim3{X: 1, Y: 1, Z: 1}}, []any{buf, uint32(1), uint32(1)}, "grid 0x0x0 has a zero dimension"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Launch(tc.k, tc.cfg, tc.args...)
			var le *runtime.LaunchError
			require.ErrorAs(t, err, &le)
			require.Equal(t, "fill_u32", le.Kernel)
			require.Contains(t, le.Reason, tc.reason)
			require.ErrorIs(t, err, runtime.ErrLaunchRejected)
			require.ErrorIs(t, err, runtime.ErrInvalidArgument)
		})
	}
	require.Equal(t, calls, r.sim.DriverCalls.Load(), "no refused launch reached the driver")
	r.fillAndCheck(t, s, 7)
}

// TestEarlyStartReachesTheDriverOnlyWhenAsked proves LaunchConfig.EarlyStart
// picks the driver's early launch (CUDA: programmatic stream serialization)
// and a plain config never does: an early launch of a kernel that does not
// wait for the work ahead would race with it.
func TestEarlyStartReachesTheDriverOnlyWhenAsked(t *testing.T) {
	r := newRig(t, simgpu.Config{})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	buf := mustAlloc(t, r.dev)
	require.NoError(t, s.Launch(r.fill, one, buf, uint32(1), uint32(1)))
	require.Zero(t, r.sim.EarlyLaunches.Load(), "a plain config launches plainly")
	early := one
	early.EarlyStart = true
	require.NoError(t, s.Launch(r.fill, early, buf, uint32(9), uint32(1)))
	require.EqualValues(t, 1, r.sim.EarlyLaunches.Load())
	require.EqualValues(t, 2, r.sim.Launches.Load())
	require.NoError(t, s.Synchronize(context.Background()))
	got := make([]uint32, 1)
	require.NoError(t, runtime.Download(buf, got))
	require.EqualValues(t, 9, got[0], "the early launch ran, after the plain one")
}

func TestDriverRejectionLeavesTheDeviceUsable(t *testing.T) {
	rejecting := simgpu.FillU32
	rejecting.Name = "picky"
	rejecting.Reject = func(_, block driver.Dim3) error {
		if block.X > 1 {
			return simgpu.CodeInvalidValue
		}
		return nil
	}
	cfg := simgpu.Config{Devices: 1, Kernels: []simgpu.KernelDef{rejecting, simgpu.FillU32}}
	drv := simgpu.New(cfg)
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	defer dev.Close()
	mod, err := dev.LoadImage([]byte("m"), specsFor(rejecting))
	require.NoError(t, err)
	k, err := mod.Kernel("picky")
	require.NoError(t, err)
	s, err := dev.NewStream()
	require.NoError(t, err)
	buf, err := dev.Alloc(64)
	require.NoError(t, err)

	start := time.Now()
	err = s.Launch(k, runtime.LaunchConfig{Grid: runtime.Dim3{X: 1, Y: 1, Z: 1}, Block: runtime.Dim3{X: 2, Y: 1, Z: 1}}, buf, uint32(3), uint32(2))
	took := time.Since(start)
	t.Logf("the driver's rejection returned in %v", took)
	// Synchronous: it waits for nothing (the bound is wide for a loaded CI
	// machine under -race; a wait would be for the whole test's timeout).
	require.Less(t, took, time.Second)
	var le *runtime.LaunchError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "picky", le.Kernel)
	require.ErrorIs(t, err, simgpu.CodeInvalidValue, "the driver's code is wrapped")
	require.ErrorIs(t, err, runtime.ErrLaunchRejected)
	require.NotErrorIs(t, err, runtime.ErrInvalidArgument, "the driver, not the runtime, refused it")
	require.Contains(t, err.Error(), "launch picky rejected: simErrorInvalidValue (1)")
	require.NoError(t, dev.Lost())

	require.NoError(t, s.Launch(k, one, buf, uint32(3), uint32(16)))
	require.NoError(t, s.Synchronize(context.Background()))
	got := make([]uint32, 16)
	require.NoError(t, runtime.Download(buf, got))
	for _, v := range got {
		require.EqualValues(t, 3, v)
	}
}

func TestArgumentsArePackedAtTheMetadataOffsets(t *testing.T) {
	var seen []uint64
	var mu sync.Mutex
	probe := simgpu.KernelDef{Name: "probe", ParamSizes: []int{1, 4, 8, 2, 8, 4}, Run: func(_ *simgpu.Device, _, _ driver.Dim3, a []uint64, _ <-chan struct{}) error {
		mu.Lock()
		seen = append([]uint64(nil), a...)
		mu.Unlock()
		return nil
	}}
	drv := simgpu.New(simgpu.Config{Devices: 1, Kernels: []simgpu.KernelDef{probe}})
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	defer dev.Close()
	mod, err := dev.LoadImage([]byte("m"), specsFor(probe))
	require.NoError(t, err)
	k, err := mod.Kernel("probe")
	require.NoError(t, err)
	require.Equal(t, []runtime.ParamSpec{{0, 1, false}, {4, 4, false}, {8, 8, false}, {16, 2, false}, {24, 8, false}, {32, 4, false}}, k.Spec().Params)
	s, err := dev.NewStream()
	require.NoError(t, err)
	buf, err := dev.Alloc(16)
	require.NoError(t, err)
	require.NoError(t, s.Launch(k, one, true, float32(1.5), int64(-3), uint16(0xBEEF), buf.At(4), int32(-7)))
	require.NoError(t, s.Synchronize(context.Background()))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []uint64{1, 0x3FC00000, uint64(0xFFFFFFFFFFFFFFFD), 0xBEEF, uint64(buf.Ptr()) + 4, 0xFFFFFFF9}, seen)
}

func TestLayoutMismatchWithTheDriverIsAnError(t *testing.T) {
	drv := simgpu.New(simgpu.Config{Devices: 1, Kernels: []simgpu.KernelDef{simgpu.FillU32}})
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	defer dev.Close()
	// Metadata claiming the value sits at offset 12 disagrees with the
	// driver (8): launching would read garbage, so Kernel refuses.
	mod, err := dev.LoadImage([]byte("m"), []runtime.KernelSpec{{Name: "fill_u32", Params: []runtime.ParamSpec{{0, 8, true}, {12, 4, false}, {16, 4, false}}}})
	require.NoError(t, err)
	_, err = mod.Kernel("fill_u32")
	require.ErrorIs(t, err, runtime.ErrInvalidArgument)
	require.Contains(t, err.Error(), "parameter 1: metadata says offset 12 size 4, the driver says offset 8 size 4")
}

func TestAsyncFaultFailsWaitersEverywhereAndLosesTheDevice(t *testing.T) {
	for _, cb := range []bool{true, false} {
		name := "callbacks"
		if !cb {
			name = "callbacks never come"
		}
		t.Run(name, func(t *testing.T) {
			r := newRig(t, simgpu.Config{DropCallbacks: !cb})
			faulting, err := r.dev.NewStream()
			require.NoError(t, err)
			other, err := r.dev.NewStream()
			require.NoError(t, err)
			buf := mustAlloc(t, r.dev)
			flag := mustAlloc(t, r.dev)

			// Work on another stream that is still running when the fault hits.
			require.NoError(t, other.Launch(r.spin, one, uint64(time.Hour), flag))
			otherEv, err := other.Record()
			require.NoError(t, err)

			// A short spin first, so the fault happens after the record (the
			// monitor would otherwise see it, and lose the device, first).
			require.NoError(t, faulting.Launch(r.spin, one, uint64(200*time.Millisecond), flag))
			require.NoError(t, faulting.Launch(r.oob, one, buf, uint32(1), uint64(1)<<40))
			ev, err := faulting.Record()
			require.NoError(t, err)

			start := time.Now()
			werr := ev.Wait(context.Background())
			took := time.Since(start)
			t.Logf("Wait failed %v after it began (a 200 ms spin ran first)", took)
			require.Less(t, took, 10*time.Second)
			var fe *runtime.FaultError
			require.ErrorAs(t, werr, &fe)
			// Which stream reports a sticky fault first is the driver's
			// choice; the culprit is among the kernels in flight.
			require.Contains(t, fe.InFlight, "oob_write_u32")
			require.Contains(t, fe.InFlight, "spin_ns")
			require.Contains(t, werr.Error(), "kernels in flight: spin_ns, oob_write_u32")
			require.ErrorIs(t, werr, runtime.ErrDeviceFault)
			require.ErrorIs(t, werr, simgpu.CodeIllegalAddr)

			// The error is not consumed: every read and every waiter sees it.
			require.Equal(t, runtime.Failed, ev.State())
			require.Same(t, fe, ev.Err())
			require.Same(t, fe, ev.Err())
			require.Same(t, fe, errAs(ev.Wait(context.Background())))

			// The pending event on the other stream failed with the same fault.
			require.Same(t, fe, errAs(otherEv.Wait(context.Background())))
			require.Same(t, fe, r.dev.Lost())

			// Later calls fail at once without calling the driver.
			calls := r.sim.DriverCalls.Load()
			t0 := time.Now()
			err = faulting.Launch(r.fill, one, buf, uint32(1), uint32(1))
			took = time.Since(t0)
			t.Logf("launch on the lost device failed in %v", took)
			// "At once" is proved by the driver-call count below; the bound
			// only catches a wait (it is wide for a loaded CI machine).
			require.Less(t, took, 100*time.Millisecond)
			var lost *runtime.DeviceLostError
			require.ErrorAs(t, err, &lost)
			require.Same(t, fe, lost.Cause)
			require.ErrorIs(t, err, runtime.ErrDeviceLost)
			require.ErrorIs(t, err, simgpu.CodeIllegalAddr)
			_, err = r.dev.Alloc(4)
			require.ErrorIs(t, err, runtime.ErrDeviceLost)
			_, err = faulting.Record()
			require.ErrorIs(t, err, runtime.ErrDeviceLost)
			_, err = r.dev.NewStream()
			require.ErrorIs(t, err, runtime.ErrDeviceLost)
			require.ErrorIs(t, runtime.Download(buf, make([]uint32, 1)), runtime.ErrDeviceLost)
			require.Equal(t, calls, r.sim.DriverCalls.Load(), "no driver call after the device was lost")
			require.NoError(t, r.dev.Close())
		})
	}
}

func errAs(err error) *runtime.FaultError {
	var fe *runtime.FaultError
	if errors.As(err, &fe) {
		return fe
	}
	return nil
}

func TestOutOfBandFaultIsClaimedAndDelivered(t *testing.T) {
	r := newRig(t, simgpu.Config{DropCallbacks: true})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	flag := mustAlloc(t, r.dev)
	require.NoError(t, s.Launch(r.spin, one, uint64(time.Hour), flag))
	ev, err := s.Record()
	require.NoError(t, err)

	require.True(t, r.sim.InjectAsyncFault(0xdead000, "page not present"), "the runtime claims the fault, which stops ROCr from aborting")
	werr := ev.Wait(context.Background())
	var fe *runtime.FaultError
	require.ErrorAs(t, werr, &fe)
	require.EqualValues(t, 0xdead000, fe.Address)
	require.Equal(t, "page not present", fe.Reason)
	require.Contains(t, werr.Error(), "memory fault at address 0xdead000 (page not present)")
	_, err = s.Record()
	require.ErrorIs(t, err, runtime.ErrDeviceLost)
}

func TestWatchdogFailsTheWaitAndNamesTheKernel(t *testing.T) {
	r := newRig(t, simgpu.Config{}, runtime.WithWatchdog(100*time.Millisecond))
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	flag := mustAlloc(t, r.dev)
	require.NoError(t, s.Launch(r.spin, one, uint64(time.Second), flag))
	ev, err := s.Record()
	require.NoError(t, err)
	start := time.Now()
	err = ev.Wait(context.Background())
	took := time.Since(start)
	t.Logf("the 100 ms watchdog fired after %v", took)
	var we *runtime.WatchdogError
	require.ErrorAs(t, err, &we)
	require.ErrorIs(t, err, runtime.ErrWatchdog)
	require.Equal(t, "spin_ns", we.Kernel)
	require.GreaterOrEqual(t, took, 100*time.Millisecond)
	// Well before the 1 s kernel ends, with room for a loaded machine.
	require.Less(t, took, 800*time.Millisecond)
	require.Contains(t, err.Error(), "last kernel on the stream: spin_ns")
	// The watchdog fails the wait, not the event: it still lands.
	require.Equal(t, runtime.Pending, ev.State())
	require.Eventually(t, func() bool { return ev.State() == runtime.Landed }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, ev.Err())
	require.NoError(t, r.dev.Lost())
}

// A Wait polls for the device's WaitSpin before it sleeps; the watchdog and
// the context still bound it while it polls.
func TestWaitSpinNeverOutlastsTheWatchdog(t *testing.T) {
	ev := behindASpin(t, runtime.WithWatchdog(50*time.Millisecond), runtime.WithWaitSpin(time.Hour))
	start := time.Now()
	err := ev.Wait(context.Background())
	took := time.Since(start)
	var we *runtime.WatchdogError
	require.ErrorAs(t, err, &we, "polled past the watchdog (%v)", took)
	require.GreaterOrEqual(t, we.Waited, 50*time.Millisecond)
	require.Less(t, took, time.Second, "the poll outlasted the 50 ms watchdog")
	require.Equal(t, runtime.Pending, ev.State())
}

func TestWaitSpinHonoursTheContext(t *testing.T) {
	ev := behindASpin(t, runtime.WithWatchdog(0), runtime.WithWaitSpin(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.ErrorIs(t, ev.Wait(ctx), context.DeadlineExceeded)
	require.Less(t, time.Since(start), time.Second, "the poll outlasted the context")
	// Polling lands the event once the kernel ends, whether or not a
	// callback or the monitor got there first.
	require.NoError(t, ev.Wait(context.Background()))
	require.Equal(t, runtime.Landed, ev.State())
}

// behindASpin opens a simulated device with opts and returns an event
// recorded behind a 2 s kernel.
func behindASpin(t *testing.T, opts ...runtime.Option) *runtime.Event {
	t.Helper()
	r := newRig(t, simgpu.Config{}, opts...)
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	flag := mustAlloc(t, r.dev)
	require.NoError(t, s.Launch(r.spin, one, uint64(2*time.Second), flag))
	ev, err := s.Record()
	require.NoError(t, err)
	return ev
}

func TestWithoutWatchdogALongKernelLands(t *testing.T) {
	r := newRig(t, simgpu.Config{}, runtime.WithWatchdog(0))
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	flag := mustAlloc(t, r.dev)
	require.NoError(t, s.Launch(r.spin, one, uint64(300*time.Millisecond), flag))
	require.NoError(t, s.Synchronize(context.Background()))
	got := make([]uint32, 1)
	require.NoError(t, runtime.Download(flag, got))
	require.EqualValues(t, 1, got[0])
}

func TestWaitHonoursTheContextAndLeavesTheEventPending(t *testing.T) {
	r := newRig(t, simgpu.Config{})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	flag := mustAlloc(t, r.dev)
	// The kernel outlasts the context by far, so a late timer on a loaded
	// machine still ends the wait first.
	require.NoError(t, s.Launch(r.spin, one, uint64(time.Second), flag))
	ev, err := s.Record()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, ev.Wait(ctx), context.DeadlineExceeded)
	require.Nil(t, ev.Err())
	require.NoError(t, ev.Wait(context.Background()))
}

func TestOutOfMemoryLeavesTheDeviceUsable(t *testing.T) {
	r := newRig(t, simgpu.Config{Memory: 1 << 20})
	_, err := r.dev.Alloc(2 << 20)
	var oom *runtime.OutOfMemoryError
	require.ErrorAs(t, err, &oom)
	require.EqualValues(t, 2<<20, oom.Requested)
	require.EqualValues(t, 1<<20, oom.Total)
	require.ErrorIs(t, err, runtime.ErrOutOfMemory)
	require.ErrorIs(t, err, simgpu.CodeOutOfMemory)
	require.NoError(t, r.dev.Lost())
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	r.fillAndCheck(t, s, 42)
}

func TestCloseOnALostDeviceIsBounded(t *testing.T) {
	r := newRig(t, simgpu.Config{CloseBlocks: true})
	defer r.sim.Release()
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	buf := mustAlloc(t, r.dev)
	require.NoError(t, s.Launch(r.oob, one, buf, uint32(1), uint64(1)<<40))
	require.ErrorIs(t, s.Synchronize(context.Background()), runtime.ErrDeviceFault)
	start := time.Now()
	err = r.dev.Close()
	took := time.Since(start)
	t.Logf("Close returned after %v (bound 2 s)", took)
	require.Less(t, took, 10*time.Second)
	require.ErrorIs(t, err, runtime.ErrDeviceLost)
	require.Contains(t, err.Error(), "did not finish")
}

func TestConcurrentWaitersAllSeeTheSameOutcome(t *testing.T) {
	r := newRig(t, simgpu.Config{DropCallbacks: true})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	buf := mustAlloc(t, r.dev)
	flag := mustAlloc(t, r.dev)
	require.NoError(t, s.Launch(r.spin, one, uint64(20*time.Millisecond), flag))
	require.NoError(t, s.Launch(r.oob, one, buf, uint32(1), uint64(1)<<40))
	ev, err := s.Record()
	require.NoError(t, err)
	errs := make([]error, 16)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ev.Wait(context.Background())
		}()
	}
	wg.Wait()
	for _, e := range errs {
		require.Same(t, errAs(errs[0]), errAs(e))
		require.NotNil(t, errAs(e))
	}
}

func TestOpenReportsEveryBackendTried(t *testing.T) {
	empty := simgpu.New(simgpu.Config{Devices: 0})
	broken := simgpu.New(simgpu.Config{Devices: 1})
	broken.InitErr = errors.New("init failed: simErrorInvalidValue (1)")
	_, err := runtime.Open(context.Background(), runtime.WithDrivers(empty, broken))
	var oe *runtime.OpenError
	require.ErrorAs(t, err, &oe)
	require.ErrorIs(t, err, runtime.ErrNoDevice)
	require.Len(t, oe.Attempts, 2)
	require.ErrorIs(t, oe.Attempts[0].Err, runtime.ErrNoDevice)
	require.Contains(t, err.Error(), "[sim: no device]")
	require.Contains(t, err.Error(), "init failed: simErrorInvalidValue (1)")
}

func TestOpenRejectsBadConfiguration(t *testing.T) {
	drv := simgpu.New(simgpu.Config{Devices: 1})
	for _, tc := range []struct {
		name, env, val, want string
		opts                 []runtime.Option
	}{
		{"watchdog not a duration", runtime.EnvWatchdog, "10", `HIPGO_GPU_WATCHDOG="10" is not a Go duration`, nil},
		{"watchdog negative", runtime.EnvWatchdog, "-1s", `HIPGO_GPU_WATCHDOG="-1s" is negative`, nil},
		{"wait spin not a duration", runtime.EnvWaitSpin, "5", `HIPGO_GPU_WAIT_SPIN="5" is not a Go duration`, nil},
		{"wait spin negative", runtime.EnvWaitSpin, "-2ms", `HIPGO_GPU_WAIT_SPIN="-2ms" is negative`, nil},
		{"wait spin option negative", "", "", "wait spin -1ms is negative", []runtime.Option{runtime.WithWaitSpin(-time.Millisecond)}},
		{"unknown backend", runtime.EnvBackend, "opencl", `backend "opencl" is not one of sim`, nil},
		{"ordinal past the devices", "", "", "device 3 requested, 1 present", []runtime.Option{runtime.WithOrdinal(3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv(tc.env, tc.val)
			}
			_, err := runtime.Open(context.Background(), append([]runtime.Option{runtime.WithDrivers(drv)}, tc.opts...)...)
			require.ErrorIs(t, err, runtime.ErrInvalidArgument)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	t.Setenv(runtime.EnvWatchdog, "250ms")
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	require.Equal(t, 250*time.Millisecond, dev.Watchdog())
	require.Equal(t, runtime.HostWaitSpin, dev.WaitSpin(), "the simulated device runs on the host")
	require.NoError(t, dev.Close())
	t.Setenv(runtime.EnvWaitSpin, "0")
	dev, err = runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	require.Zero(t, dev.WaitSpin())
	require.NoError(t, dev.Close())
	// A device that runs apart from the host (any real GPU) polls for
	// DefaultWaitSpin; the environment still overrides it.
	t.Setenv(runtime.EnvWaitSpin, "")
	dev, err = runtime.Open(context.Background(), runtime.WithDrivers(offHost{drv}))
	require.NoError(t, err)
	require.Equal(t, runtime.DefaultWaitSpin, dev.WaitSpin())
	require.NoError(t, dev.Close())
	t.Setenv(runtime.EnvWaitSpin, "0")
	// The option overrides the environment.
	dev, err = runtime.Open(context.Background(), runtime.WithDrivers(drv), runtime.WithWaitSpin(3*time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, 3*time.Millisecond, dev.WaitSpin())
	require.NoError(t, dev.Close())
}

func TestBufferCopiesAreBoundsChecked(t *testing.T) {
	r := newRig(t, simgpu.Config{})
	buf, err := r.dev.Alloc(16)
	require.NoError(t, err)
	require.ErrorIs(t, buf.Write(8, make([]byte, 9)), runtime.ErrInvalidArgument)
	require.ErrorIs(t, buf.Read(-1, make([]byte, 1)), runtime.ErrInvalidArgument)
	want := []byte("0123456789abcdef")
	require.NoError(t, buf.Write(0, want))
	got := make([]byte, 16)
	require.NoError(t, buf.Read(0, got))
	require.Equal(t, want, got)
	require.NoError(t, buf.Free())
	require.ErrorIs(t, buf.Free(), runtime.ErrClosed)
	require.ErrorIs(t, buf.Read(0, got), runtime.ErrClosed)
	_, err = r.dev.Alloc(0)
	require.ErrorIs(t, err, runtime.ErrInvalidArgument)
}

// TimeGPU brackets exactly the work its callback enqueues, waits for it, and
// destroys both timing events.
func TestTimeGPUTimesTheEnqueuedWork(t *testing.T) {
	r := newRig(t, simgpu.Config{GPUTimer: true})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	flag := mustAlloc(t, r.dev)
	// Work enqueued before the first mark is not counted.
	require.NoError(t, s.Launch(r.spin, one, uint64(500*time.Millisecond), flag))
	got, err := s.TimeGPU(context.Background(), func() error {
		return s.Launch(r.spin, one, uint64(30*time.Millisecond), flag)
	})
	require.NoError(t, err)
	t.Logf("TimeGPU of a 30 ms spin behind a 500 ms one: %v", got)
	require.GreaterOrEqual(t, got, 30*time.Millisecond)
	require.Less(t, got, 400*time.Millisecond, "the spin queued before the first mark was counted")
	require.Zero(t, r.sim.MarksLive.Load(), "timing events leaked")
}

func TestTimeGPUWithoutATimerIsUnsupportedAndEnqueuesNothing(t *testing.T) {
	r := newRig(t, simgpu.Config{})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	called := false
	_, err = s.TimeGPU(context.Background(), func() error { called = true; return nil })
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.Contains(t, err.Error(), "no GPU timer")
	require.False(t, called)
}

func TestTimeGPUReturnsTheFaultOfTheTimedWork(t *testing.T) {
	r := newRig(t, simgpu.Config{GPUTimer: true})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	buf := mustAlloc(t, r.dev)
	_, err = s.TimeGPU(context.Background(), func() error {
		return s.Launch(r.oob, one, buf, uint32(1), uint64(1)<<40)
	})
	require.ErrorIs(t, err, runtime.ErrDeviceFault)
	require.Contains(t, err.Error(), "oob_write_u32")
}

func TestTimeGPUReturnsTheEnqueueError(t *testing.T) {
	r := newRig(t, simgpu.Config{GPUTimer: true})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	boom := errors.New("boom")
	_, err = s.TimeGPU(context.Background(), func() error { return boom })
	require.ErrorIs(t, err, boom)
	require.Zero(t, r.sim.MarksLive.Load(), "the start mark leaked")
}

// offHost is a simulated driver whose devices say they run apart from the
// host, as a real GPU's do.
type offHost struct{ driver.Driver }

func (o offHost) Open(ordinal int) (driver.Device, error) {
	d, err := o.Driver.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return offHostDevice{d}, nil
}

type offHostDevice struct{ driver.Device }

func (d offHostDevice) Info() driver.Info {
	info := d.Device.Info()
	info.RunsOnHost = false
	return info
}
