package runtime

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/hipgo/hipgo/runtime/driver"
)

// Polling intervals of the monitor: it starts fast so a short wait costs
// little latency and backs off to maxPoll so a long one costs little CPU.
// A fault is reported within maxPoll of the driver knowing it.
const (
	minPoll = 20 * time.Microsecond
	maxPoll = time.Millisecond
)

// monitor tracks a device's pending events. While anyone waits it queries
// them (the authority for faults: callbacks report success only, and after a
// fault they never run). It also destroys driver events of settled ones,
// because callbacks must not call the driver.
type monitor struct {
	dev *Device

	mu      sync.Mutex
	pending map[*Event]struct{}
	reap    []driver.Event // settled events' driver handles, destroyed outside callbacks
	seq     uint64
	waiters int
	running bool
	stopped bool
	wake    chan struct{}
	exited  chan struct{}
}

func newMonitor(d *Device) *monitor {
	return &monitor{dev: d, pending: map[*Event]struct{}{}, wake: make(chan struct{}, 1)}
}

func (m *monitor) add(e *Event) {
	m.mu.Lock()
	m.seq++
	e.seq = m.seq
	m.pending[e] = struct{}{}
	m.mu.Unlock()
}

// finished is called once per event as it settles (possibly from a driver
// thread): it only moves the driver handle to the reap list.
func (m *monitor) finished(e *Event) {
	m.mu.Lock()
	delete(m.pending, e)
	if e.drv != nil {
		m.reap = append(m.reap, e.drv)
		e.drv = nil
	}
	m.mu.Unlock()
}

// failAll fails every pending event with err (the device-lost fan-out, or
// Close). It makes no driver call.
func (m *monitor) failAll(err error) {
	for _, e := range m.snapshot() {
		e.finish(err)
	}
}

// inFlight names the last kernel of each stream with pending events, in
// record order.
func (m *monitor) inFlight() []string {
	evs := m.snapshot()
	var out []string
	seen := map[*Stream]bool{}
	for _, e := range evs {
		if e.kernel != "" && !seen[e.stream] {
			seen[e.stream] = true
			out = append(out, e.kernel)
		}
	}
	return out
}

// snapshot returns the pending events in record order, so queries go
// oldest first.
func (m *monitor) snapshot() []*Event {
	m.mu.Lock()
	evs := make([]*Event, 0, len(m.pending))
	for e := range m.pending {
		evs = append(evs, e)
	}
	m.mu.Unlock()
	slices.SortFunc(evs, func(a, b *Event) int { return cmp.Compare(a.seq, b.seq) })
	return evs
}

// pendingCount is the number of unsettled events (for tests and leak checks).
func (m *monitor) pendingCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}

func (m *monitor) addWaiter() {
	m.mu.Lock()
	m.waiters++
	start := !m.running && !m.stopped
	if start {
		m.running = true
		m.exited = make(chan struct{})
	}
	m.mu.Unlock()
	if start {
		go m.run()
	}
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *monitor) removeWaiter() {
	m.mu.Lock()
	m.waiters--
	m.mu.Unlock()
}

// stop ends the polling goroutine for good (Close).
func (m *monitor) stop() {
	m.mu.Lock()
	m.stopped = true
	exited := m.exited
	running := m.running
	m.mu.Unlock()
	if running {
		select {
		case m.wake <- struct{}{}:
		default:
		}
		<-exited
	}
}

// run polls while anyone waits, then exits; the next waiter starts it again.
func (m *monitor) run() {
	defer close(m.exited)
	interval := minPoll
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		m.mu.Lock()
		if m.waiters == 0 || m.stopped {
			m.running = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()

		progressed := m.sweep(m.snapshot())
		if progressed {
			interval = minPoll
		} else if interval < maxPoll {
			interval *= 2
			if interval > maxPoll {
				interval = maxPoll
			}
		}
		timer.Reset(interval)
		select {
		case <-timer.C:
		case <-m.wake:
			if !timer.Stop() {
				<-timer.C
			}
			interval = minPoll
		}
	}
}

// sweep queries each pending event once and destroys reaped driver events.
// It reports whether any event settled.
func (m *monitor) sweep(evs []*Event) bool {
	d := m.dev
	if d.lost.Load() != nil {
		return false
	}
	progressed := false
	for _, e := range evs {
		if d.lost.Load() != nil {
			break
		}
		if m.query(e) {
			progressed = true
		}
	}
	m.destroyReaped()
	return progressed
}

// poll is one non-blocking query for Event.State.
func (m *monitor) poll(e *Event) {
	if m.dev.lost.Load() != nil {
		return
	}
	m.query(e)
}

// query asks the driver about one event and settles it when the driver has
// an answer. A sticky error loses the device (failing every pending event).
func (m *monitor) query(e *Event) bool {
	m.mu.Lock()
	drv := e.drv
	m.mu.Unlock()
	if drv == nil || State(e.state.Load()) != Pending {
		return false
	}
	err := drv.Query()
	switch {
	case err == nil:
		return e.finish(nil)
	case errors.Is(err, driver.ErrNotReady):
		return false
	}
	d := m.dev
	if d.drv.Classify(err) == driver.Fault {
		f := d.markLost(&FaultError{Device: d.label, Kernel: e.kernel, Op: "event query", Kind: faultKind(err), Err: err})
		e.finish(f) // already failed by markLost unless it lost a race; same error either way
		return true
	}
	return e.finish(&FaultError{Device: d.label, Kernel: e.kernel, Op: "event query", Kind: faultKind(err), Err: err})
}

func (m *monitor) destroyReaped() {
	m.mu.Lock()
	reap := m.reap
	m.reap = nil
	m.mu.Unlock()
	if m.dev.lost.Load() != nil {
		return // no driver calls after a fault
	}
	for _, ev := range reap {
		// A destroy failure leaks one driver event; it is not the event's
		// error (the event already settled), so it is dropped here on purpose
		// and counted for tests.
		if err := ev.Destroy(); err != nil {
			m.dev.destroyErrors.Add(1)
		}
	}
}
