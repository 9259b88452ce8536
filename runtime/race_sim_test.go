package runtime_test

// Races between the runtime's own steps and a device that is lost or closed
// in the middle of a driver call, reproduced deterministically by doing the
// losing or closing from inside the simulated driver call (simgpu.Config.OnCall).

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/runtime/driver"
)

// onceIn returns an OnCall hook that runs fn inside the first call named
// call after arm is set, and a pointer to arm.
func onceIn(call string, fn func()) (func(string) error, *atomic.Bool) {
	var armed atomic.Bool
	return func(c string) error {
		if c == call && armed.CompareAndSwap(true, false) {
			fn()
		}
		return nil
	}, &armed
}

// An out-of-band fault (the HSA system event handler) that arrives while
// Record is inside the driver: the device is lost and its pending events
// failed before Record tracks its event. Before the fix the event was
// tracked after the fan-out and nothing ever looked at it again: Wait never
// returned without a deadline.
func TestRecordRacingAnOutOfBandFaultNeverLeavesAnEventPending(t *testing.T) {
	var sim *simgpu.Device
	hook, armed := onceIn("Record", func() {
		require.True(t, sim.InjectAsyncFault(0xbad000, "page not present"))
	})
	r := newRig(t, simgpu.Config{OnCall: hook, DropCallbacks: true})
	sim = r.sim
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	flag := mustAlloc(t, r.dev)
	require.NoError(t, s.Launch(r.spin, one, uint64(time.Hour), flag))
	before, err := s.Record()
	require.NoError(t, err)

	armed.Store(true)
	ev, err := s.Record()
	require.ErrorIs(t, err, runtime.ErrDeviceLost, "the device was lost before Record could track its event")
	require.Nil(t, ev)
	var fe *runtime.FaultError
	require.ErrorAs(t, err, &fe)
	require.EqualValues(t, 0xbad000, fe.Address)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.Same(t, fe, errAs(before.Wait(ctx)), "the event recorded before the fault failed with it")
}

// Close while Record is inside the driver: Close fails every pending event
// and stops the monitor for good before Record tracks its event. Before the
// fix that event was tracked after the fan-out, by a monitor that refuses to
// restart: Pending for ever, and State kept asking the driver of a closed
// device. Close also destroys every driver event, the racing one included.
func TestCloseRacingRecordNeverLeavesAnEventPending(t *testing.T) {
	var dev *runtime.Device
	var before *runtime.Event
	closed := make(chan error, 1)
	hook, armed := onceIn("Record", func() {
		go func() { closed <- dev.Close() }()
		<-before.Done() // Close's fan-out has run
	})
	r := newRig(t, simgpu.Config{OnCall: hook, DropCallbacks: true})
	dev = r.dev
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	other, err := r.dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, other.Launch(r.spin, one, uint64(time.Hour), mustAlloc(t, r.dev)))
	before, err = other.Record()
	require.NoError(t, err)

	armed.Store(true)
	ev, err := s.Record()
	require.ErrorIs(t, err, runtime.ErrClosed, "the device closed before Record could track its event")
	require.Nil(t, ev)
	require.NoError(t, <-closed)
	require.ErrorIs(t, before.Err(), runtime.ErrClosed)

	calls := r.sim.DriverCalls.Load()
	require.Equal(t, runtime.Failed, before.State())
	require.ErrorIs(t, before.Wait(context.Background()), runtime.ErrClosed)
	require.Equal(t, calls, r.sim.DriverCalls.Load(), "State and Wait after Close made driver calls")
	require.Zero(t, r.sim.EventsLive.Load(), "driver events left undestroyed by Close")
}

// After a fault a driver call can hang for ever (ROCm has such hangs in
// queries). Close must still return within its bound, and the events it
// abandons must not stay pending. Before the fix Close waited for the
// monitor, stuck inside the query, for ever.
func TestCloseIsBoundedWhenADriverCallNeverReturns(t *testing.T) {
	hang := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	r := newRig(t, simgpu.Config{DropCallbacks: true, OnCall: func(call string) error {
		if call == "EventQuery" {
			once.Do(func() { close(entered) })
			<-hang
		}
		return nil
	}})
	t.Cleanup(func() { close(hang) })
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.Launch(r.spin, one, uint64(time.Hour), mustAlloc(t, r.dev)))
	ev, err := s.Record()
	require.NoError(t, err)
	<-entered // the monitor is inside a query that never returns

	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- r.dev.Close() }()
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not return while a driver call hung")
	}
	took := time.Since(start)
	t.Logf("Close returned after %v: %v", took, err)
	require.Less(t, took, 10*time.Second, "Close's bound is 2 s; the margin is for a loaded CI machine")
	require.ErrorContains(t, err, "stuck in a driver call")
	require.ErrorIs(t, ev.Err(), runtime.ErrClosed, "the abandoned event failed instead of staying pending")
}

// The monitor queries an event's driver handle without holding its lock;
// meanwhile a callback lands the event and a Record elsewhere destroys
// (recycles, on CUDA and HIP) its handle. Before the fix the query then ran
// on the destroyed handle: on HIP a use after free, on a recycled handle the
// answer about another event.
func TestNoDriverCallSeesADestroyedEventHandle(t *testing.T) {
	var ev *runtime.Event
	var other *runtime.Stream
	hookDone := make(chan struct{})
	hook, armed := onceIn("EventQuery", func() {
		defer close(hookDone)
		<-ev.Done() // the callback landed it while this query is in the driver
		_, err := other.Record()
		require.NoError(t, err) // Record destroys settled events' handles
	})
	r := newRig(t, simgpu.Config{OnCall: hook}, runtime.WithWaitSpin(0)) // Record enqueues the callback
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	other, err = r.dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.Launch(r.spin, one, uint64(20*time.Millisecond), mustAlloc(t, r.dev)))
	ev, err = s.Record()
	require.NoError(t, err)
	armed.Store(true) // the monitor's next query of ev
	select {
	case <-hookDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the monitor never queried the event")
	}
	require.NoError(t, ev.Wait(context.Background()))
	require.NoError(t, other.Synchronize(context.Background()))
	require.Zero(t, r.sim.StaleHandleCalls.Load(), "driver calls on a destroyed event handle")
	require.NoError(t, r.dev.Close())
	require.Zero(t, r.sim.EventsLive.Load(), "every driver event destroyed, once")
}

// A query that fails without a fault (an invalid handle, say) fails its
// event with the driver's error as what it is: not a device fault, and the
// device stays usable. Before the fix it was a *FaultError (errors.Is
// ErrDeviceFault) on a device that was not lost.
func TestANonFaultQueryErrorIsNotADeviceFault(t *testing.T) {
	var armed atomic.Bool
	r := newRig(t, simgpu.Config{DropCallbacks: true, OnCall: func(call string) error {
		if call == "EventQuery" && armed.CompareAndSwap(true, false) {
			return simgpu.CodeInvalidValue
		}
		return nil
	}})
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.Launch(r.spin, one, uint64(20*time.Millisecond), mustAlloc(t, r.dev)))
	ev, err := s.Record()
	require.NoError(t, err)
	armed.Store(true)
	werr := ev.Wait(context.Background())
	require.ErrorIs(t, werr, simgpu.CodeInvalidValue)
	require.NotErrorIs(t, werr, runtime.ErrDeviceFault)
	require.NotErrorIs(t, werr, runtime.ErrDeviceLost)
	require.Contains(t, werr.Error(), "event query")
	require.Equal(t, runtime.Failed, ev.State())
	require.NoError(t, r.dev.Lost())
	r.fillAndCheck(t, s, 5)
}

// On ROCm a host callback says nothing about how the work ahead ended (CLR
// hands it hipSuccess whatever happened, and ROCclr runs callbacks after a
// fault too): it only wakes the monitor, whose query decides. Before the fix
// the callback landed an event whose work had faulted.
func TestAHIPCallbackNeverLandsAnEventByItself(t *testing.T) {
	r := newRig(t, simgpu.Config{HIPCallbacks: true})
	require.False(t, r.dev.Info().NotifyReportsSuccess)
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	// A short spin ahead of the fault, so the event and its callback are
	// recorded before the fault happens (without it the simulated kernel can
	// fault first, and Record rightly refuses on a lost device).
	require.NoError(t, s.Launch(r.spin, one, uint64(50*time.Millisecond), mustAlloc(t, r.dev)))
	require.NoError(t, s.Launch(r.oob, one, mustAlloc(t, r.dev), uint32(1), uint64(1)<<40))
	ev, err := s.Record()
	require.NoError(t, err)
	werr := ev.Wait(context.Background())
	require.Greater(t, r.sim.Callbacks.Load(), int64(0), "the callback ran after the fault, as on ROCm")
	require.ErrorIs(t, werr, runtime.ErrDeviceFault, "the fault, not the callback's success")
	require.Equal(t, runtime.Failed, ev.State())

	// And without a fault the callback's wake-up lands events (through the
	// monitor's query).
	r2 := newRig(t, simgpu.Config{HIPCallbacks: true})
	s2, err := r2.dev.NewStream()
	require.NoError(t, err)
	r2.fillAndCheck(t, s2, 9)
}

// On CUDA the callback's word is good: it lands events itself, the fast
// path, even when no query would ever say the work is done.
func TestACUDACallbackLandsEventsItself(t *testing.T) {
	r := newRig(t, simgpu.Config{OnCall: func(call string) error {
		if call == "EventQuery" {
			return driver.ErrNotReady // the monitor never sees completion
		}
		return nil
	}})
	require.True(t, r.dev.Info().NotifyReportsSuccess)
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	ev, err := s.Record()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, ev.Wait(ctx))
	require.EqualValues(t, 1, r.sim.Callbacks.Load())
}

// Close while another goroutine is inside a driver call (here Alloc): the
// driver is torn down only after that call returned. Before the fix Close
// closed the driver under it (the soak showed it as a data race between
// NewStream and the driver's Close under -race).
func TestCloseWaitsForDriverCallsInProgress(t *testing.T) {
	var mu sync.Mutex
	var order []string
	inAlloc, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r := newRig(t, simgpu.Config{OnCall: func(call string) error {
		record := func(s string) {
			mu.Lock()
			order = append(order, s)
			mu.Unlock()
		}
		if call == "Alloc" || call == "Close" {
			record(call)
		}
		if call == "Alloc" {
			// Recorded inside the driver's call, not by its caller after it
			// returned: the caller's goroutine may run after Close, which
			// only has to wait for the driver's call to end.
			once.Do(func() { close(inAlloc); <-release; record("Alloc returned") })
		}
		return nil
	}})
	allocated := make(chan error, 1)
	go func() {
		b, err := r.dev.Alloc(4)
		if err == nil {
			err = b.Free()
		}
		allocated <- err
	}()
	<-inAlloc
	closed := make(chan error, 1)
	go func() { closed <- r.dev.Close() }()
	time.Sleep(20 * time.Millisecond) // give Close the time to run ahead, were it to
	close(release)
	require.NoError(t, <-closed)
	require.ErrorIs(t, <-allocated, runtime.ErrClosed, "the buffer's Free comes after Close")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"Alloc", "Alloc returned", "Close"}, order, "the driver closed under a call in progress")
}

// The driver's classes each decide something: NotFound (a kernel the
// module lacks) is ErrNotFound; Rejected is a *LaunchError (the device is
// fine); an unclassified launch failure is the driver's error, not a claim
// that the launch was refused. Before, NotFound and Rejected were sorted and
// then treated like any other error.
func TestDriverClassesDecideTheError(t *testing.T) {
	var failLaunch atomic.Value
	r := newRig(t, simgpu.Config{OnCall: func(call string) error {
		if c, ok := failLaunch.Load().(simgpu.Code); ok && call == "Launch" && c != 0 {
			return c
		}
		return nil
	}})
	mod, err := r.dev.LoadImage([]byte("m"), []runtime.KernelSpec{{Name: "not_in_the_module"}})
	require.NoError(t, err)
	_, err = mod.Kernel("not_in_the_module")
	require.ErrorIs(t, err, runtime.ErrNotFound)
	require.ErrorIs(t, err, simgpu.CodeNotFound)

	s, err := r.dev.NewStream()
	require.NoError(t, err)
	buf := mustAlloc(t, r.dev)
	failLaunch.Store(simgpu.CodeInvalidValue)
	err = s.Launch(r.fill, one, buf, uint32(1), uint32(1))
	require.ErrorIs(t, err, runtime.ErrLaunchRejected)
	failLaunch.Store(simgpu.Code(999)) // a code the driver does not classify
	err = s.Launch(r.fill, one, buf, uint32(1), uint32(1))
	require.ErrorIs(t, err, simgpu.Code(999))
	require.NotErrorIs(t, err, runtime.ErrLaunchRejected)
	failLaunch.Store(simgpu.Code(0))
	require.NoError(t, r.dev.Lost())
	r.fillAndCheck(t, s, 3)
}

// The monitor destroys the handles it reaped as it stops polling, and Close
// must wait for those destroys: before the fix the monitor said it had
// stopped before it destroyed them, so Close tore the driver down and
// returned with a destroy still in it (a real driver's destroy after its
// context is gone; TestNoDriverCallSeesADestroyedEventHandle saw a handle
// left live after Close once under load).
func TestCloseWaitsForTheMonitorsLastDestroys(t *testing.T) {
	var armed atomic.Bool
	inDestroy := make(chan struct{})
	var once sync.Once
	hook := func(c string) error {
		if c == "EventDestroy" && armed.Load() {
			once.Do(func() {
				close(inDestroy)
				time.Sleep(100 * time.Millisecond) // Close comes meanwhile
			})
		}
		return nil
	}
	r := newRig(t, simgpu.Config{OnCall: hook}, runtime.WithWaitSpin(0))
	s, err := r.dev.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.Launch(r.spin, one, uint64(time.Millisecond), mustAlloc(t, r.dev)))
	ev, err := s.Record()
	require.NoError(t, err)
	armed.Store(true)
	require.NoError(t, ev.Wait(context.Background()))
	select {
	case <-inDestroy:
	case <-time.After(10 * time.Second):
		t.Fatal("the monitor never destroyed the settled event's handle")
	}
	require.NoError(t, r.dev.Close())
	require.Zero(t, r.sim.EventsLive.Load(), "every driver event destroyed before Close returned")
}
