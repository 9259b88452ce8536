package sampling

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// parallelWork is the B*V below which a call runs on the calling goroutine:
// under it, starting workers costs more than it saves.
const parallelWork = 1 << 16

// forRows runs fn(r, scratch) for every row r in [0, B), spreading rows over
// up to GOMAXPROCS goroutines when B*V is large enough. Each goroutine takes
// one scratch value from pool for all its rows and returns it afterwards.
func forRows[S any](B, V int, pool *sync.Pool, fn func(r int, s *S)) {
	workers := min(runtime.GOMAXPROCS(0), B)
	if workers <= 1 || B*V < parallelWork {
		s := pool.Get().(*S)
		for r := 0; r < B; r++ {
			fn(r, s)
		}
		pool.Put(s)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := pool.Get().(*S)
			defer pool.Put(s)
			for {
				r := int(next.Add(1) - 1)
				if r >= B {
					return
				}
				fn(r, s)
			}
		}()
	}
	wg.Wait()
}

// badRows collects the rows without a finite or +inf logit. Rows are rare,
// so a mutex is enough.
type badRows struct {
	mu   sync.Mutex
	rows []int
}

func (b *badRows) add(r int) {
	b.mu.Lock()
	b.rows = append(b.rows, r)
	b.mu.Unlock()
}

func (b *badRows) err(entry string) error {
	if len(b.rows) == 0 {
		return nil
	}
	slices.Sort(b.rows)
	return &InvalidLogitsError{Entry: entry, Rows: b.rows}
}

// rowMax returns the largest logit (NaN as -inf) and its lowest index, or
// (-inf, none) for an empty row. Used by every sampler: the kernels' first
// reduction gives the same pair whatever its order, because (max, lowest
// index) is a total order.
func rowMax(row []float32) (float32, uint32) {
	m, at := float32(math.Inf(-1)), uint32(none)
	for i, x := range row {
		x = clean(x)
		if better(x, uint32(i), m, at) {
			m, at = x, uint32(i)
		}
	}
	return m, at
}

// better is sp_better: larger value, lower index on ties.
func better(a float32, ia uint32, b float32, ib uint32) bool {
	return a > b || (a == b && ia < ib)
}

const none = 0xffffffff
