package runtime_test

// Launches whose blocks use more than driver.DefaultSharedMem (48 KiB) of
// shared memory, on the simulated backend, which refuses such a launch with
// CodeInvalidValue unless the function's limit was raised to cover it, as
// CUDA does.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

// probeStatic is the static shared memory of the kernel these tests launch:
// it counts against the limits with the launch's dynamic shared memory.
const probeStatic = 4096

// driverCalls records the simulated driver's calls by name (Config.OnCall),
// and fails those it is told to.
type driverCalls struct {
	mu     sync.Mutex
	names  []string
	fail   map[string]error
	inside func(call string) // run inside each call, without mu
}

func (l *driverCalls) hook(call string) error {
	l.mu.Lock()
	l.names = append(l.names, call)
	err, inside := l.fail[call], l.inside
	l.mu.Unlock()
	if inside != nil {
		inside(call)
	}
	return err
}

// runInside makes fn run inside every later driver call.
func (l *driverCalls) runInside(fn func(call string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inside = fn
}

// launchCalls is take without the calls the monitor makes on its own
// goroutine (EventQuery, EventDestroy), which may land at any time after an
// earlier Record: what is left are the calls of the launches since.
func (l *driverCalls) launchCalls() []string {
	return slices.DeleteFunc(l.take(), func(c string) bool { return c == "EventQuery" || c == "EventDestroy" })
}

// failWith makes every later call named call fail with err (nil: succeed).
func (l *driverCalls) failWith(call string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail == nil {
		l.fail = map[string]error{}
	}
	l.fail[call] = err
}

// take returns the calls since the last take.
func (l *driverCalls) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.names
	l.names = nil
	return out
}

type sharedRig struct {
	sim   *simgpu.Device
	dev   *runtime.Device
	k     *runtime.Kernel // "big_fill": fill_u32 with probeStatic bytes of static shared memory
	buf   *runtime.Buffer // 4 bytes
	calls *driverCalls
}

func newSharedRig(t *testing.T, cfg simgpu.Config) *sharedRig {
	t.Helper()
	big := simgpu.FillU32
	big.Name = "big_fill"
	big.StaticShared = probeStatic
	calls := &driverCalls{}
	cfg.Devices = 1
	cfg.Kernels = []simgpu.KernelDef{big, simgpu.FillU32}
	cfg.OnCall = calls.hook
	drv := simgpu.New(cfg)
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() }) // the tests check the device themselves
	specs := specsFor(big)
	specs[0].StaticShared = probeStatic
	mod, err := dev.LoadImage([]byte("big"), specs)
	require.NoError(t, err)
	k, err := mod.Kernel("big_fill")
	require.NoError(t, err)
	buf, err := dev.Alloc(4)
	require.NoError(t, err)
	calls.take()
	return &sharedRig{sim: drv.Devices()[0], dev: dev, k: k, buf: buf, calls: calls}
}

func withShared(dyn int) runtime.LaunchConfig {
	cfg := one
	cfg.SharedMem = dyn
	return cfg
}

// fill launches big_fill with dyn bytes of dynamic shared memory.
func (r *sharedRig) fill(s *runtime.Stream, dyn int, v uint32) error {
	return s.Launch(r.k, withShared(dyn), r.buf, v, uint32(1))
}

// requireRan proves the last fill on s ran: the buffer holds v.
func (r *sharedRig) requireRan(t *testing.T, s *runtime.Stream, v uint32) {
	t.Helper()
	require.NoError(t, s.Synchronize(context.Background()))
	got := make([]uint32, 1)
	require.NoError(t, runtime.Download(r.buf, got))
	require.Equal(t, v, got[0])
}

// TestSharedMemoryOverTheDefaultRaisesTheLimitOncePerKernelAndSize proves a
// launch whose static plus dynamic shared memory passes 48 KiB raises the
// kernel's limit to its dynamic size before the launch reaches the driver
// (the simulated driver would refuse it otherwise), that a launch the
// largest raise so far covers makes no second raise, and that a larger one
// raises again.
func TestSharedMemoryOverTheDefaultRaisesTheLimitOncePerKernelAndSize(t *testing.T) {
	r := newSharedRig(t, simgpu.Config{Kind: driver.CUDA})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	r.calls.take()

	const first = 80 << 10
	require.NoError(t, r.fill(s, first, 1))
	require.Equal(t, []string{"SetMaxDynamicShared", "Launch"}, r.calls.launchCalls(), "the raise, then the launch")
	require.Equal(t, first, r.sim.MaxDynamicShared("big_fill"))
	r.requireRan(t, s, 1)

	for i, dyn := range []int{first, 64 << 10, driver.DefaultSharedMem - probeStatic + 1, first} {
		r.calls.take()
		require.NoError(t, r.fill(s, dyn, uint32(10+i)))
		require.Equal(t, []string{"Launch"}, r.calls.launchCalls(), "%d bytes: the raise to %d covers it", dyn, first)
		r.requireRan(t, s, uint32(10+i))
	}
	require.EqualValues(t, 1, r.sim.SharedRaises.Load())

	const second = 100 << 10
	r.calls.take()
	require.NoError(t, r.fill(s, second, 2))
	require.Equal(t, []string{"SetMaxDynamicShared", "Launch"}, r.calls.launchCalls())
	require.Equal(t, second, r.sim.MaxDynamicShared("big_fill"))
	r.requireRan(t, s, 2)
	require.NoError(t, r.fill(s, first, 3), "a smaller launch after the larger raise")
	r.requireRan(t, s, 3)
	require.EqualValues(t, 2, r.sim.SharedRaises.Load())
}

// TestSharedMemoryAtOrUnderTheDefaultMakesNoExtraDriverCall proves launches
// whose static plus dynamic shared memory stays within 48 KiB reach the
// driver as before: one call each, no raise.
func TestSharedMemoryAtOrUnderTheDefaultMakesNoExtraDriverCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  simgpu.Config
	}{
		{"a backend that can raise", simgpu.Config{Kind: driver.CUDA}},
		{"a backend that cannot", simgpu.Config{Kind: driver.ROCm, NoSharedRaise: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSharedRig(t, tc.cfg)
			s, err := r.dev.NewStream()
			require.NoError(t, err)
			r.calls.take()
			for _, dyn := range []int{0, 1024, driver.DefaultSharedMem - probeStatic} {
				require.NoError(t, r.fill(s, dyn, uint32(dyn)))
				require.Equal(t, []string{"Launch"}, r.calls.take(), "%d + %d bytes", probeStatic, dyn)
			}
			require.Zero(t, r.sim.SharedRaises.Load())
			require.Zero(t, r.sim.MaxDynamicShared("big_fill"))
			r.requireRan(t, s, driver.DefaultSharedMem-probeStatic)
		})
	}
}

// TestSharedMemoryOverTheDeviceMaximumIsRefusedAndTheDeviceStaysUsable
// proves a launch whose static plus dynamic shared memory passes the
// device's opt-in maximum is a *LaunchError naming the kernel, the bytes
// asked and the maximum, before any driver call (no raise either), and that
// the device and the kernel stay usable up to the maximum itself.
func TestSharedMemoryOverTheDeviceMaximumIsRefusedAndTheDeviceStaysUsable(t *testing.T) {
	r := newSharedRig(t, simgpu.Config{Kind: driver.CUDA})
	require.Equal(t, simgpu.DefaultMaxSharedOptin, r.dev.Info().MaxSharedOptin, "the simulated device is an H100's or H200's")
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	r.calls.take()

	over := simgpu.DefaultMaxSharedOptin - probeStatic + 1
	err = r.fill(s, over, 1)
	var le *runtime.LaunchError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "big_fill", le.Kernel)
	require.ErrorIs(t, err, runtime.ErrLaunchRejected)
	require.Equal(t, fmt.Sprintf("launch big_fill rejected: %d bytes of shared memory per block (%d static + %d dynamic) is over the device's maximum of %d",
		simgpu.DefaultMaxSharedOptin+1, probeStatic, over, simgpu.DefaultMaxSharedOptin), err.Error())
	require.Empty(t, r.calls.take(), "refused before the driver")
	require.Zero(t, r.sim.SharedRaises.Load())
	require.NoError(t, r.dev.Lost())

	require.NoError(t, r.fill(s, over-1, 2), "the maximum itself fits")
	r.requireRan(t, s, 2)
	require.Equal(t, over-1, r.sim.MaxDynamicShared("big_fill"))
}

// TestABackendThatCannotRaiseLeavesSharedMemoryToTheDriver proves that on
// a backend whose functions cannot raise their limit (ROCm, Metal) a launch
// over 48 KiB goes to the driver unchanged, with no raise: what it refuses
// is a *LaunchError wrapping its code, and the device stays usable.
func TestABackendThatCannotRaiseLeavesSharedMemoryToTheDriver(t *testing.T) {
	r := newSharedRig(t, simgpu.Config{Kind: driver.ROCm, NoSharedRaise: true})
	require.Zero(t, r.dev.Info().MaxSharedOptin)
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	r.calls.take()

	// The simulated ROCm device refuses what is over the default, as a
	// device with 48 KiB of LDS would: the driver's code, no raise.
	dyn := driver.DefaultSharedMem - probeStatic + 1
	err = r.fill(s, dyn, 1)
	var le *runtime.LaunchError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "big_fill", le.Kernel)
	require.ErrorIs(t, err, simgpu.CodeInvalidValue, "the driver's refusal")
	require.NotContains(t, r.calls.take(), "SetMaxDynamicShared")
	require.NoError(t, r.dev.Lost())

	require.NoError(t, r.fill(s, dyn-1, 2))
	r.requireRan(t, s, 2)
}

// TestAFailedRaiseIsALaunchErrorAndIsRetried proves that when the driver
// refuses the raise the launch is a *LaunchError carrying the driver's code
// and the sizes, the launch itself never reaches the driver, the device
// stays usable, and the next launch tries the raise again (a refused raise
// is not remembered).
func TestAFailedRaiseIsALaunchErrorAndIsRetried(t *testing.T) {
	r := newSharedRig(t, simgpu.Config{Kind: driver.CUDA})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	r.calls.failWith("SetMaxDynamicShared", simgpu.CodeInvalidValue)
	r.calls.take()

	const dyn = 80 << 10
	err = r.fill(s, dyn, 1)
	var le *runtime.LaunchError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "big_fill", le.Kernel)
	require.ErrorIs(t, err, simgpu.CodeInvalidValue)
	require.Equal(t, fmt.Sprintf("launch big_fill rejected: raising its dynamic shared memory limit to %d bytes for %d bytes of shared memory per block (%d static + %d dynamic): simErrorInvalidValue (1)",
		dyn, probeStatic+dyn, probeStatic, dyn), err.Error())
	require.Equal(t, []string{"SetMaxDynamicShared"}, r.calls.take(), "the launch never reached the driver")
	require.NoError(t, r.dev.Lost())

	r.calls.failWith("SetMaxDynamicShared", nil)
	require.NoError(t, r.fill(s, dyn, 2))
	require.Equal(t, []string{"SetMaxDynamicShared", "Launch"}, r.calls.take(), "raised this time")
	r.requireRan(t, s, 2)
}

// TestConcurrentLargeSharedLaunchesNeverLowerTheLimit proves launches of
// one kernel from several streams at once, with several sizes over 48 KiB,
// all pass: the simulated driver sets the limit it is given, so a raise to a
// smaller size landing after a larger one would fail the larger launches.
// The raises are at most one per size. Run with -race.
func TestConcurrentLargeSharedLaunchesNeverLowerTheLimit(t *testing.T) {
	r := newSharedRig(t, simgpu.Config{Kind: driver.CUDA})
	sizes := []int{56 << 10, 72 << 10, 96 << 10, 128 << 10, 200 << 10}
	const streams, rounds = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i := range streams {
		s, err := r.dev.NewStream()
		require.NoError(t, err)
		buf := mustAlloc(t, r.dev) // a buffer per stream: the fills race for nothing else
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range rounds {
				// Each stream walks the sizes from another place, so raises
				// to different sizes race.
				if err := s.Launch(r.k, withShared(sizes[(i+j)%len(sizes)]), buf, uint32(j), uint32(1)); err != nil {
					errs <- err
					return
				}
			}
			errs <- s.Synchronize(context.Background())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.LessOrEqual(t, r.sim.SharedRaises.Load(), int64(len(sizes)))
	require.Equal(t, slices.Max(sizes), r.sim.MaxDynamicShared("big_fill"))
	require.NoError(t, r.dev.Lost())
}

// TestARaiseInProgressIsNotUndercutByAnotherStream proves a raise and the
// check before it are one step per kernel: while one stream's raise to a
// smaller size is inside the driver, another stream launching the same
// kernel with a larger size waits for it, then raises past it. Without
// that, the smaller raise, landing last, would lower the limit under the
// larger launches (which the simulated driver then refuses), or the
// runtime would forget the larger raise and make it again. The second
// stream's launch is started from inside the first raise; the first raise
// waits up to a second for it to finish, which it cannot while the raise
// holds the kernel.
func TestARaiseInProgressIsNotUndercutByAnotherStream(t *testing.T) {
	r := newSharedRig(t, simgpu.Config{Kind: driver.CUDA})
	small, large := 56<<10, 200<<10
	sa, err := r.dev.NewStream()
	require.NoError(t, err)
	sb, err := r.dev.NewStream()
	require.NoError(t, err)
	bufB := mustAlloc(t, r.dev)
	var first atomic.Bool
	bErr, bDone := make(chan error, 1), make(chan struct{})
	r.calls.runInside(func(call string) {
		if call != "SetMaxDynamicShared" || !first.CompareAndSwap(false, true) {
			return
		}
		go func() {
			defer close(bDone)
			bErr <- sb.Launch(r.k, withShared(large), bufB, uint32(2), uint32(1))
		}()
		select {
		case <-bDone:
		case <-time.After(300 * time.Millisecond):
		}
	})
	require.NoError(t, r.fill(sa, small, 1))
	<-bDone
	require.NoError(t, <-bErr)
	require.EqualValues(t, 2, r.sim.SharedRaises.Load(), "the small raise, then the large one")
	require.Equal(t, large, r.sim.MaxDynamicShared("big_fill"))

	require.NoError(t, r.fill(sa, large, 3), "the large raise still holds")
	require.EqualValues(t, 2, r.sim.SharedRaises.Load(), "and is remembered")
	r.requireRan(t, sa, 3)
	require.NoError(t, sb.Synchronize(context.Background()))
	got := make([]uint32, 1)
	require.NoError(t, runtime.Download(bufB, got))
	require.EqualValues(t, 2, got[0])
}
