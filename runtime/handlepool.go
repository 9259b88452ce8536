package runtime

import "sync"

// handlePool recycles settled driver events: creating one per Record would
// put a driver call on the hot path. The runtime destroys (here: returns)
// only events that have settled, so the driver is done with them.
type handlePool[T comparable] struct {
	mu    sync.Mutex
	items []T
}

// handlePoolMax bounds the pool; beyond it, handles are destroyed.
const handlePoolMax = 4096

// get returns a pooled handle, or the zero value when the pool is empty.
func (p *handlePool[T]) get() T {
	p.mu.Lock()
	defer p.mu.Unlock()
	var h T
	if n := len(p.items); n > 0 {
		h = p.items[n-1]
		p.items = p.items[:n-1]
	}
	return h
}

// put keeps h for reuse and reports whether it did (false: the pool is full
// and the caller destroys h).
func (p *handlePool[T]) put(h T) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.items) >= handlePoolMax {
		return false
	}
	p.items = append(p.items, h)
	return true
}

// drain empties the pool, for Close.
func (p *handlePool[T]) drain() []T {
	p.mu.Lock()
	defer p.mu.Unlock()
	items := p.items
	p.items = nil
	return items
}
