package runtime

import (
	"context"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hipgo/hipgo/runtime/driver"
)

// State is an event's launch state.
type State uint32

const (
	Pending State = iota
	Landed
	Failed
)

func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Landed:
		return "landed"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Event marks a point in a stream. It is Pending until all work enqueued on
// the stream before it completes, then exactly once Landed, or Failed with an
// error that every reader and waiter sees. Reading never consumes the error.
type Event struct {
	dev      *Device
	stream   *Stream
	kernel   string // last kernel launched on the stream before the record
	recorded time.Time

	drv driver.Event // under mon.mu; nil once handed to the reap list
	seq uint64       // record order on the device
	// queries counts driver queries in progress on drv (under mon.mu): a
	// settled event's handle is reaped (destroyed or recycled) only when
	// none is, so no query ever sees a handle reused or freed.
	queries int

	state atomic.Uint32
	err   error // written once, before state leaves Pending
	once  sync.Once
	done  chan struct{}
}

func newEvent(s *Stream, drv driver.Event, kernel string) *Event {
	e := &Event{
		dev: s.dev, stream: s, kernel: kernel, recorded: time.Now(),
		drv: drv, done: make(chan struct{}),
	}
	if eventCreated != nil {
		eventCreated(e)
	}
	return e
}

// eventCreated, when set (by a test, before any device opens), sees every
// event the runtime creates, so a soak can check that none stays pending.
var eventCreated func(*Event)

// finish settles the event once; later calls do nothing. It never blocks and
// makes no driver call, so driver callbacks may call it.
func (e *Event) finish(err error) bool {
	won := false
	e.once.Do(func() {
		won = true
		e.err = err
		if err == nil {
			e.state.Store(uint32(Landed))
		} else {
			e.state.Store(uint32(Failed))
		}
		close(e.done)
	})
	if won {
		e.dev.mon.finished(e)
	}
	return won
}

// State returns the event's state without waiting. When the event is still
// pending it asks the driver once (a non-blocking query), so a caller that
// never waits still sees completion and faults.
func (e *Event) State() State {
	if s := State(e.state.Load()); s != Pending {
		return s
	}
	e.dev.mon.poll(e)
	return State(e.state.Load())
}

// Err returns the event's error: nil while pending or once landed. It does
// not consume it.
func (e *Event) Err() error {
	if State(e.state.Load()) == Failed {
		return e.err
	}
	return nil
}

// spin polls the event until it settles (true), ctx ends or deadline
// passes (false), yielding the processor between queries. A Wait polls for
// the device's WaitSpin before it sleeps: a sleeping Wait is woken by the
// host callback or the monitor, later than a poll sees the event land (on
// the H200, 150-250 µs later for a 1 ms decode step; a Go timer under 1 ms
// sleeps about 1 ms in an idle process, and with WithoutCallbacks the
// monitor's backoff added about 190 µs a step).
func (e *Event) spin(ctx context.Context, deadline time.Time) bool {
	for {
		if e.State() != Pending {
			return true
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			return false
		}
		goruntime.Gosched()
	}
}

// Done is closed when the event lands or fails.
func (e *Event) Done() <-chan struct{} { return e.done }

// Kernel names the last kernel launched on the stream before this event.
func (e *Event) Kernel() string { return e.kernel }

// Wait blocks until the event lands (nil), fails (its error), ctx ends
// (ctx.Err()), or the device's watchdog expires (*WatchdogError; the event
// stays pending).
func (e *Event) Wait(ctx context.Context) error {
	select {
	case <-e.done:
		return e.err
	default:
	}
	m := e.dev.mon
	m.addWaiter()
	defer m.removeWaiter()
	start := time.Now()
	wd := e.dev.watchdog
	spin := e.dev.waitSpin
	if wd > 0 && spin > wd {
		spin = wd // the watchdog bounds the whole Wait, polling included
	}
	if e.spin(ctx, start.Add(spin)) {
		return e.err
	}
	if spin > 0 {
		e.stream.notifyLate(e) // the callback that wakes the sleep below
	}

	var expired <-chan time.Time
	if wd > 0 {
		t := time.NewTimer(wd - time.Since(start))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-e.done:
		return e.err
	case <-ctx.Done():
		return ctx.Err()
	case <-expired:
		// The event may have settled in the same instant: prefer its result.
		select {
		case <-e.done:
			return e.err
		default:
		}
		now := time.Now()
		return &WatchdogError{
			Device: e.dev.label, Kernel: e.kernel, Waited: now.Sub(start),
			Pending: now.Sub(e.recorded), Limit: e.dev.watchdog,
		}
	}
}
