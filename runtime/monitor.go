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

// monitor settles a device's events by asking the driver. It runs while any
// event is unsettled: it is the authority for faults (callbacks report
// success only, and after a fault they never run), and it lands the events
// no callback covers. Per stream it queries only the oldest unsettled event:
// a stream completes in order, so a later event cannot be done before it.
// It also destroys the driver events of settled ones, because callbacks must
// not call the driver.
type monitor struct {
	dev *Device

	mu      sync.Mutex
	pending map[*Event]struct{}
	active  map[*Stream]struct{} // streams with unsettled events
	reap    []driver.Event       // settled events' driver handles, destroyed outside callbacks
	seq     uint64
	// ended is set once, by end, when the device is lost or closed: from
	// then on nothing is tracked, so an event recorded while the device
	// was being lost cannot slip in after the fan-out and stay pending.
	ended   error
	waiters int
	running bool
	stopped bool
	wake    chan struct{}
	exited  chan struct{}
}

func newMonitor(d *Device) *monitor {
	return &monitor{dev: d, pending: map[*Event]struct{}{}, active: map[*Stream]struct{}{}, wake: make(chan struct{}, 1)}
}

// add numbers a recorded event in record order, tracks it, lists it on its
// stream and makes sure the monitor runs, all under m.mu. Done in two steps,
// either order loses events: listed first, the monitor can settle the event
// before it is tracked (it then stays pending for ever); tracked first, the
// monitor can retire the stream (nothing listed yet) and never look at it
// again. retire holds m.mu while it checks the list, so it sees both or
// neither. It reports false, tracking nothing, once the monitor has ended
// (end holds m.mu too, so an event is either failed by end's fan-out or
// refused here): the caller reports the loss or the close instead.
func (m *monitor) add(e *Event) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended != nil {
		// The driver event was recorded and is done with nothing: it goes
		// where settled handles go.
		m.reap = append(m.reap, e.drv)
		e.drv = nil
		return false
	}
	m.seq++
	e.seq = m.seq
	m.pending[e] = struct{}{}
	s := e.stream
	s.evMu.Lock()
	s.pruneLocked()
	s.evs = append(s.evs, e)
	s.evMu.Unlock()
	m.active[s] = struct{}{}
	m.ensureRunningLocked()
	return true
}

func (m *monitor) ensureRunningLocked() {
	if !m.running && !m.stopped {
		m.running = true
		m.exited = make(chan struct{})
		go m.run()
	}
}

// finished is called once per event as it settles (possibly from a driver
// thread): it only moves the driver handle to the reap list, or leaves that
// to the last query in progress on it.
func (m *monitor) finished(e *Event) {
	m.mu.Lock()
	delete(m.pending, e)
	m.reapLocked(e)
	m.mu.Unlock()
}

// reapLocked hands a settled event's driver handle to the reap list once no
// query is using it.
func (m *monitor) reapLocked(e *Event) {
	if e.drv != nil && e.queries == 0 && State(e.state.Load()) != Pending {
		m.reap = append(m.reap, e.drv)
		e.drv = nil
	}
}

// kick makes the monitor poll now (a new waiter, or a callback that left
// later events on its stream).
func (m *monitor) kick() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// end stops tracking for good and fails every pending event with err (the
// device-lost fan-out, or Close), or with the error of an earlier end. The
// stop and the snapshot are one step under m.mu, which add also holds. It
// makes no driver call.
func (m *monitor) end(err error) {
	m.mu.Lock()
	if m.ended == nil {
		m.ended = err
	}
	err = m.ended
	evs := m.snapshotLocked()
	m.mu.Unlock()
	for _, e := range evs {
		e.finish(err)
	}
}

// inFlight names the last kernel of each stream with pending events, in
// record order.
func (m *monitor) inFlight() []string {
	var out []string
	seen := map[*Stream]bool{}
	for _, e := range m.snapshot() {
		if e.kernel != "" && !seen[e.stream] {
			seen[e.stream] = true
			out = append(out, e.kernel)
		}
	}
	return out
}

// snapshot returns the pending events in record order.
func (m *monitor) snapshot() []*Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snapshotLocked()
}

func (m *monitor) snapshotLocked() []*Event {
	evs := make([]*Event, 0, len(m.pending))
	for e := range m.pending {
		evs = append(evs, e)
	}
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
	m.ensureRunningLocked()
	m.mu.Unlock()
	m.kick()
}

func (m *monitor) removeWaiter() {
	m.mu.Lock()
	m.waiters--
	m.mu.Unlock()
}

// shutdown ends the monitor for good (Close): it fails every pending event
// with cause (end), stops the polling goroutine and waits for it until
// deadline. It reports false when the goroutine did not exit in time: it is
// stuck inside a driver call, and the caller must not tear the device down
// under it.
func (m *monitor) shutdown(cause error, deadline time.Time) bool {
	m.end(cause)
	m.mu.Lock()
	m.stopped = true
	exited := m.exited
	running := m.running
	m.mu.Unlock()
	if !running {
		return true
	}
	m.kick()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-exited:
		return true
	case <-t.C:
		return false
	}
}

// run polls while any event is unsettled or anyone waits, then exits; the
// next Record or Wait starts it again.
func (m *monitor) run() {
	defer close(m.exited)
	interval := minPoll
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		m.mu.Lock()
		if m.stopped || (m.waiters == 0 && len(m.pending) == 0) {
			// Destroy the reaped handles while still running, so that
			// Close (which waits for a running monitor to exit) never
			// tears the driver down under one of these destroys; then
			// look again, as work may have come meanwhile. Once ended,
			// leave them (destroyReaped).
			if reap := m.reap; len(reap) > 0 && m.ended == nil {
				m.reap = nil
				m.mu.Unlock()
				m.destroy(reap)
				continue
			}
			m.running = false
			m.mu.Unlock()
			return
		}
		streams := make([]*Stream, 0, len(m.active))
		for s := range m.active {
			streams = append(streams, s)
		}
		m.mu.Unlock()

		progressed := m.sweep(streams)
		if progressed {
			interval = minPoll
		} else if interval < maxPoll {
			interval = min(interval*2, maxPoll)
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

// sweep advances each active stream and destroys reaped driver events. It
// reports whether any event settled.
func (m *monitor) sweep(streams []*Stream) bool {
	d := m.dev
	progressed := false
	for _, s := range streams {
		if d.lost.Load() != nil {
			return progressed
		}
		if m.advance(s) {
			progressed = true
		}
		m.retire(s)
	}
	m.destroyReaped()
	return progressed
}

// advance settles the stream's oldest events for as long as the driver says
// they are done.
func (m *monitor) advance(s *Stream) bool {
	progressed := false
	for {
		e := s.oldestPending()
		if e == nil || !m.query(e) {
			return progressed
		}
		progressed = true
	}
}

// retire drops a stream with no unsettled events from the active set. The
// stream's list is checked under both locks, so a Record racing with it
// either lands in the list first (the stream stays) or re-adds it after.
func (m *monitor) retire(s *Stream) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.oldestPending() == nil {
		delete(m.active, s)
	}
}

// poll is one non-blocking query for Event.State. Once the monitor has
// ended (lost or closed) it asks nothing: end settled every event.
func (m *monitor) poll(e *Event) {
	m.mu.Lock()
	ended := m.ended != nil
	m.mu.Unlock()
	if ended || m.dev.enter() != nil {
		return
	}
	defer m.dev.leave()
	m.query(e)
}

// query asks the driver about one event and settles it when the driver has
// an answer; it reports whether the event is settled. A sticky error loses
// the device (failing every pending event); any other error fails this
// event alone.
func (m *monitor) query(e *Event) bool {
	m.mu.Lock()
	if State(e.state.Load()) != Pending {
		m.mu.Unlock()
		return true
	}
	drv := e.drv
	if drv == nil || m.ended != nil {
		m.mu.Unlock()
		return false
	}
	e.queries++ // the handle stays ours until the query returns
	m.mu.Unlock()
	err := drv.Query()
	m.mu.Lock()
	e.queries--
	m.reapLocked(e) // settled by someone else meanwhile
	m.mu.Unlock()
	switch {
	case err == nil:
		e.finish(nil)
		return true
	case errors.Is(err, driver.ErrNotReady):
		return false
	}
	d := m.dev
	if d.drv.Classify(err) == driver.Fault {
		f := d.markLost(&FaultError{Device: d.label, Kernel: e.kernel, Op: "event query", Kind: faultKind(err), Err: err})
		e.finish(f) // already failed by markLost unless it lost a race; same error either way
		return true
	}
	// Not a fault (an invalid handle, say): the device is fine and the
	// event's work may or may not be done; the event fails with the
	// driver's error as what it is (d.fail classifies it).
	op := "event query"
	if e.kernel != "" {
		op += " after kernel " + e.kernel
	}
	e.finish(d.fail(op, e.kernel, err))
	return true
}

// destroyReaped destroys settled events' driver handles. Once the monitor
// has ended it leaves them: after a loss no driver call is made, and after
// Close, teardown destroys them (takeReaped) before the driver closes.
func (m *monitor) destroyReaped() {
	m.mu.Lock()
	if m.ended != nil {
		m.mu.Unlock()
		return
	}
	reap := m.reap
	m.reap = nil
	m.mu.Unlock()
	m.destroy(reap)
}

// takeReaped hands the handles left to destroy to Close's teardown.
func (m *monitor) takeReaped() []driver.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	reap := m.reap
	m.reap = nil
	return reap
}

func (m *monitor) destroy(reap []driver.Event) {
	for _, ev := range reap {
		// A destroy failure leaks one driver event; it is not the event's
		// error (the event already settled), so it is counted (Stats), not
		// returned.
		if err := ev.Destroy(); err != nil {
			m.dev.destroyErrors.Add(1)
		}
	}
}
