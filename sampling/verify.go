package sampling

import "sync"

// launchState is what the ring may know about a launch without waiting.
type launchState uint8

const (
	launchPending launchState = iota
	launchLanded
	launchFailed
)

// pendingLaunch is a rejection launch whose convergence flags have not been
// looked at. The GPU side implements it over a runtime event and host-visible
// copies of the ok and rounds arrays:
//
//   - launchState never blocks and never consumes the launch's error (the
//     error belongs to the request that owns the launch; reading it here
//     would lose it there);
//   - flags is called only after launchState reported launchLanded and
//     returns the landed ok and rounds arrays (len B each).
type pendingLaunch interface {
	launchState() launchState
	flags() (ok, rounds []uint32)
}

// ringSlots is the ring's size: enough for the launches of a few decode
// steps in flight.
const ringSlots = 4

type ringSlot struct {
	l   pendingLaunch
	cap uint32 // the max_rounds the launch ran with
}

// verifyRing holds rejection launches until they land. The production path
// never waits on a launch to read its flags (a synchronous read drained the
// queue while the next step was being built: -1.7x end to end in mlxcel);
// instead the next sampler call drains whatever has landed.
type verifyRing struct {
	mu    sync.Mutex
	slots [ringSlots]ringSlot
	next  int // round-robin victim when all slots are taken
}

// deferLaunch queues launch l (run with round cap maxRounds) for verification. If
// every slot is taken, the slot at the round-robin position is settled first:
// verified if it has landed, dropped if it failed, dropped unverified
// (ReasonVerifyEvicted) if it is still pending. It never blocks on the GPU.
func (r *Router) deferLaunch(l pendingLaunch, maxRounds uint32) {
	r.ring.mu.Lock()
	defer r.ring.mu.Unlock()
	for i := range r.ring.slots {
		if r.ring.slots[i].l == nil {
			r.ring.slots[i] = ringSlot{l, maxRounds}
			return
		}
	}
	v := r.ring.next
	r.ring.next = (v + 1) % ringSlots
	if !r.settle(r.ring.slots[v]) {
		r.record(ReasonVerifyEvicted, 1)
	}
	r.ring.slots[v] = ringSlot{l, maxRounds}
}

// Drain verifies every queued launch that has landed and drops every one that
// failed; pending ones stay. Call it at the start of each sampler call. It
// never blocks on the GPU.
func (r *Router) Drain() {
	r.ring.mu.Lock()
	defer r.ring.mu.Unlock()
	for i := range r.ring.slots {
		if s := r.ring.slots[i]; s.l != nil && r.settle(s) {
			r.ring.slots[i] = ringSlot{}
		}
	}
}

// Pending is the number of launches waiting in the ring.
func (r *Router) Pending() int {
	r.ring.mu.Lock()
	defer r.ring.mu.Unlock()
	n := 0
	for _, s := range r.ring.slots {
		if s.l != nil {
			n++
		}
	}
	return n
}

// settle inspects a landed launch's flags or drops a failed one, and reports
// whether the slot is done (false: still pending).
func (r *Router) settle(s ringSlot) bool {
	switch s.l.launchState() {
	case launchLanded:
		r.verify(s.l, s.cap)
		return true
	case launchFailed:
		r.record(ReasonLaunchFailed, 1)
		return true
	}
	return false
}

// verify counts the rows of a landed launch that overflowed the round cap
// (ok == StatusUnconverged and rounds == cap: a zeroed, unwritten buffer has
// rounds 0 and does not count) and the invalid rows. Overflowed tokens are
// not re-sampled: the argmax they returned is in the support.
func (r *Router) verify(l pendingLaunch, cap uint32) {
	ok, rounds := l.flags()
	var over, invalid uint64
	for i := range min(len(ok), len(rounds)) {
		switch {
		case ok[i] == uint32(StatusUnconverged) && rounds[i] == cap:
			over++
		case ok[i] == uint32(StatusInvalidRow):
			invalid++
		}
	}
	if over > 0 {
		r.overflowRows.Add(over)
		r.record(ReasonCapOverflow, 1)
	}
	if invalid > 0 {
		r.invalidRows.Add(invalid)
		r.record(ReasonInvalidRows, 1)
	}
}
