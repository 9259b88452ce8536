package sampling

import (
	"bytes"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeLaunch stands in for a GPU launch: its state is set by the test, and
// it records whether its flags were read.
type fakeLaunch struct {
	state     atomic.Uint32
	ok, rnd   []uint32
	flagReads atomic.Int32
}

func newFake(st launchState, ok, rounds []uint32) *fakeLaunch {
	f := &fakeLaunch{ok: ok, rnd: rounds}
	f.state.Store(uint32(st))
	return f
}

func (f *fakeLaunch) launchState() launchState { return launchState(f.state.Load()) }
func (f *fakeLaunch) flags() ([]uint32, []uint32) {
	if f.launchState() != launchLanded {
		panic("flags read before the launch landed")
	}
	f.flagReads.Add(1)
	return f.ok, f.rnd
}

func quietRouter() *Router {
	r := NewRouter(BackendCUDA, DefaultPolicy(BackendCUDA))
	r.Logger = slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	return r
}

// Drain inspects only landed launches: a pending one stays (its flags are not
// read), a landed one is verified and removed, and overflow counts only rows
// with ok == 0 AND rounds == cap (a zeroed, unwritten row has rounds 0).
func TestDrainVerifiesOnlyLandedLaunches(t *testing.T) {
	r := quietRouter()
	pending := newFake(launchPending, nil, nil)
	landed := newFake(launchLanded,
		[]uint32{1, 0, 0, 0, 2, 1},
		[]uint32{3, 32, 0, 5, 0, 31})
	r.deferLaunch(pending, 32)
	r.deferLaunch(landed, 32)
	r.Drain()
	require.Equal(t, int32(0), pending.flagReads.Load())
	require.Equal(t, int32(1), landed.flagReads.Load())
	require.Equal(t, uint64(1), r.OverflowRows(), "only row 1 has ok == 0 and rounds == cap")
	require.Equal(t, uint64(1), r.Count(ReasonCapOverflow))
	require.Equal(t, uint64(1), r.InvalidRows())
	require.Equal(t, 1, r.Pending())

	pending.state.Store(uint32(launchLanded))
	pending.ok, pending.rnd = []uint32{0, 0, 0}, []uint32{32, 32, 8} // row 2: rounds below the cap
	r.Drain()
	require.Equal(t, uint64(3), r.OverflowRows())
	require.Equal(t, uint64(2), r.Count(ReasonCapOverflow))
	require.Equal(t, 0, r.Pending())
}

// A failed launch is dropped without reading its flags, and the ring has no
// way to touch its error: the interface exposes only the state.
func TestDrainDropsFailedLaunchWithoutReadingIt(t *testing.T) {
	r := quietRouter()
	failed := newFake(launchFailed, []uint32{0}, []uint32{32})
	r.deferLaunch(failed, 32)
	r.Drain()
	require.Equal(t, int32(0), failed.flagReads.Load())
	require.Equal(t, uint64(1), r.Count(ReasonLaunchFailed))
	require.Equal(t, uint64(0), r.OverflowRows())
	require.Equal(t, 0, r.Pending())
}

// With all four slots taken, deferLaunch settles the slot at the round-robin
// position: a landed victim is verified, a failed one dropped, a pending one
// evicted unverified (counted). The position advances 0, 1, 2, 3, 0.
func TestDeferRoundRobinVictim(t *testing.T) {
	r := quietRouter()
	slots := []*fakeLaunch{
		newFake(launchPending, nil, nil),
		newFake(launchPending, nil, nil),
		newFake(launchPending, nil, nil),
		newFake(launchPending, nil, nil),
	}
	for _, f := range slots {
		r.deferLaunch(f, 4)
	}
	require.Equal(t, 4, r.Pending())
	slots[0].state.Store(uint32(launchLanded))
	slots[0].ok, slots[0].rnd = []uint32{0}, []uint32{4}
	r.deferLaunch(newFake(launchPending, nil, nil), 4) // victim: slot 0, landed
	require.Equal(t, int32(1), slots[0].flagReads.Load())
	require.Equal(t, uint64(1), r.OverflowRows())
	require.Equal(t, uint64(0), r.Count(ReasonVerifyEvicted))

	slots[1].state.Store(uint32(launchFailed))
	r.deferLaunch(newFake(launchPending, nil, nil), 4) // victim: slot 1, failed
	require.Equal(t, uint64(1), r.Count(ReasonLaunchFailed))
	require.Equal(t, int32(0), slots[1].flagReads.Load())

	r.deferLaunch(newFake(launchPending, nil, nil), 4) // victim: slot 2, pending
	require.Equal(t, uint64(1), r.Count(ReasonVerifyEvicted))
	require.Equal(t, int32(0), slots[2].flagReads.Load())
	r.deferLaunch(newFake(launchPending, nil, nil), 4) // slot 3
	r.deferLaunch(newFake(launchPending, nil, nil), 4) // back to slot 0
	require.Equal(t, uint64(3), r.Count(ReasonVerifyEvicted))
	require.Equal(t, 4, r.Pending())
	require.Equal(t, 1, r.ring.next)
}

// Concurrent deferLaunch and Drain from many goroutines keep the counts exact (run
// under -race to check the locking).
func TestRingConcurrentUse(t *testing.T) {
	r := quietRouter()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				r.Drain()
				r.deferLaunch(newFake(launchLanded, []uint32{0, 1}, []uint32{32, 2}), 32)
			}
		}()
	}
	wg.Wait()
	r.Drain()
	require.Equal(t, uint64(1600), r.OverflowRows())
	require.Equal(t, 0, r.Pending())
}
