package cpu

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// spin is how long an idle worker polls for the next loop, and a loop's
// caller for its helpers' last range, before blocking. A decode step runs
// its products a few tens of microseconds apart, and waking a parked
// goroutine costs several microseconds each time; polling for longer than
// a step's gaps only burns the core.
const spin = 50 * time.Microsecond

// Pool runs parallel loops on a fixed set of worker goroutines shared by
// every model and session in the process, so concurrent generations share
// the cores instead of multiplying goroutines.
type Pool struct {
	workers int
	tasks   chan task
}

// task is one helper's share of a loop: it claims chunks until none are
// left, then counts itself out of left and wg.
type task struct {
	run  func()
	left *atomic.Int32
	wg   *sync.WaitGroup
}

var (
	sharedOnce sync.Once
	shared     *Pool
)

// Shared returns the process-wide pool, sized by GOMAXPROCS at first use.
func Shared() *Pool {
	sharedOnce.Do(func() { shared = NewPool(runtime.GOMAXPROCS(0)) })
	return shared
}

// NewPool starts workers-1 goroutines (the caller of For is the last worker).
// They live as long as the process: pools are meant to be few and shared.
func NewPool(workers int) *Pool {
	workers = max(1, workers)
	p := &Pool{workers: workers, tasks: make(chan task, 256)}
	for range workers - 1 {
		go p.work()
	}
	return p
}

// WithLimit returns a view of p whose loops use at most n goroutines (the
// caller included); it shares p's workers.
func (p *Pool) WithLimit(n int) *Pool {
	return &Pool{workers: min(max(1, n), p.workers), tasks: p.tasks}
}

// Workers is the pool's parallelism including the caller.
func (p *Pool) Workers() int { return p.workers }

func (p *Pool) work() {
	// A fault in a loop body (weights read in place from a mapped file that
	// was truncated under the model) panics instead of killing the process;
	// ForChunks hands it to its caller.
	debug.SetPanicOnFault(true)
	for {
		t, ok := p.next()
		if !ok {
			return
		}
		t.run()
		t.left.Add(-1)
		t.wg.Done()
	}
}

// next takes the next task: it polls the queue for spin before it blocks
// on it.
func (p *Pool) next() (task, bool) {
	var start time.Time
	for i := 0; ; i++ {
		select {
		case t, ok := <-p.tasks:
			return t, ok
		default:
		}
		if i&63 == 63 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > spin {
				t, ok := <-p.tasks
				return t, ok
			}
			runtime.Gosched() // let other goroutines of this P run
		}
	}
}

// await returns once left is zero: it polls for spin, then waits on wg.
func await(left *atomic.Int32, wg *sync.WaitGroup) {
	var start time.Time
	for i := 0; left.Load() > 0; i++ {
		if i&63 == 63 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > spin {
				break
			}
			runtime.Gosched()
		}
	}
	wg.Wait()
}

// FaultAddr reports whether a recovered panic is a memory fault (the
// runtime error debug.SetPanicOnFault raises) and at which address.
func FaultAddr(r any) (uintptr, bool) {
	f, ok := r.(interface{ Addr() uintptr })
	if !ok {
		return 0, false
	}
	return f.Addr(), true
}

// For calls fn over [0, n) split into at most chunks contiguous ranges of at
// least grain items, runs them on the pool and the calling goroutine, and
// returns when all are done. fn must not call For on the same pool.
func (p *Pool) For(n, chunks, grain int, fn func(lo, hi int)) {
	p.ForChunks(n, chunks, grain, func(_, lo, hi int) { fn(lo, hi) })
}

// ForChunks is For that also passes each range's index in [0, chunks), so
// callers can give each range its own scratch buffer.
//
// A memory fault in fn on a helper (see work) is re-raised in the caller
// once every range is done, as the same panic; a caller that set
// debug.SetPanicOnFault sees its own faults the same way, and can recover
// both.
//
// The caller and up to workers-1 helpers claim ranges from a shared counter,
// so a loop costs at most workers-1 channel sends however finely it is
// split, and a helper that starts late (its core busy with another
// generation) simply claims fewer ranges. Idle helpers poll for the next
// loop, and the caller for the helpers' last range, for spin before they
// block, so the loops of one step do not pay a goroutine wake-up each.
func (p *Pool) ForChunks(n, chunks, grain int, fn func(chunk, lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(1, grain)
	chunks = max(1, min(chunks, (n+grain-1)/grain))
	if chunks == 1 || p.workers == 1 {
		fn(0, 0, n)
		return
	}
	step := (n + chunks - 1) / chunks
	chunks = (n + step - 1) / step
	var next atomic.Int32
	var faultMu sync.Mutex
	var fault any // the first helper's fault
	run := func() {
		for {
			c := int(next.Add(1)) - 1
			if c >= chunks {
				return
			}
			fn(c, c*step, min(n, (c+1)*step))
		}
	}
	helper := func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := FaultAddr(r); !ok {
					panic(r)
				}
				faultMu.Lock()
				if fault == nil {
					fault = r
				}
				faultMu.Unlock()
			}
		}()
		run()
	}
	var wg sync.WaitGroup
	var left atomic.Int32
	helpers := min(p.workers, chunks) - 1
	wg.Add(helpers)
	left.Store(int32(helpers))
	for range helpers {
		p.tasks <- task{run: helper, left: &left, wg: &wg}
	}
	func() {
		defer await(&left, &wg) // the helpers are done with fn's data even if run panics
		run()
	}()
	if fault != nil { // wg.Wait ordered the helpers' writes before this read
		panic(fault)
	}
}
