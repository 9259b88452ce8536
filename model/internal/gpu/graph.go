package gpu

import (
	"context"
	"errors"
	"log"

	"github.com/hipgo/hipgo/runtime"
)

// Decode steps replay a captured graph of their forward launches (9 a
// layer): batch-1 decode is bound by the host's launch cost otherwise.
// A graph bakes in every launch's arguments: the token count, the rows,
// the block-table stride, and the addresses of the weights, the KV cache
// and the scratch. The first three are its key; the scratch's
// reallocation drops every graph (ensure). The metadata upload before the
// graph and the sampler after it stay plain, so the graph reads each
// step's tokens, positions and block tables from the device.

// maxGraphs bounds the cache: a server's batch changes size as sequences
// join and leave, and each size is a graph (three with the lookahead's:
// graphKey).
const maxGraphs = 8

// graphKey: a decode step's shape, and what its launches bake in besides
// the scratch: the metadata buffer and where the embedding reads the
// tokens (a lookahead's, lookahead.go).
type graphKey struct {
	T, rows, maxBlocks int
	metaBuf            int
	chained            bool
}

// graphCache is the backend's decode graphs, least recently used first.
type graphCache struct {
	off    bool // Options.NoGraphs, or the stream cannot capture at all
	keys   []graphKey
	graphs map[graphKey]*runtime.Graph // nil: the capture failed, launch plainly
	logged bool
	stats  GraphStats
}

// GraphStats counts what the decode-graph cache did.
type GraphStats struct {
	Captures, Replays, Fallbacks int
	Live                         int // graphs held now (at most maxGraphs)
	// Err is the first capture failure, after which its key (or, when the
	// backend has no graphs, every step) launched plainly.
	Err error
}

// GraphStats reports the decode-graph cache's counters.
func (b *Backend) GraphStats() GraphStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.graphs.stats
	for _, g := range b.graphs.graphs {
		if g != nil {
			st.Live++
		}
	}
	return st
}

// replay runs plan p's forward as a graph: captured the first time its key
// is seen, replayed since. replayed is false when p should launch plainly
// (graphs off, or its capture failed): nothing was enqueued then.
func (b *Backend) replay(ctx context.Context, p *plan) (replayed bool, err error) {
	gc := &b.graphs
	if gc.off {
		return false, nil
	}
	key := graphKey{p.T, p.rows, p.maxBlocks, p.metaBuf, p.chained}
	g, seen := gc.graphs[key]
	if seen && g == nil {
		gc.stats.Fallbacks++
		return false, nil
	}
	if !seen {
		g, err = b.s.Capture(func() error { return b.forward(ctx, p) })
		var ce *runtime.CaptureError
		switch {
		case errors.As(err, &ce):
			// The capture itself failed, not a launch: launch plainly, and
			// do not try again for this key (for none when there are no
			// graphs here at all).
			gc.note(err)
			gc.stats.Fallbacks++
			if errors.Is(err, errors.ErrUnsupported) {
				gc.off = true
				return false, nil
			}
			gc.put(key, nil)
			return false, nil
		case err != nil:
			return true, err // the forward's own error: the step fails as a plain one would
		}
		gc.stats.Captures++
		if err := gc.put(key, g); err != nil {
			return true, err // closing an evicted graph failed: the device is in trouble
		}
	}
	gc.touch(key)
	gc.stats.Replays++
	return true, b.s.LaunchGraph(g)
}

// note records (and logs, once) the first capture failure.
func (gc *graphCache) note(err error) {
	if gc.stats.Err == nil {
		gc.stats.Err = err
	}
	if !gc.logged {
		gc.logged = true
		log.Printf("gpu: decode graphs: %v", err)
	}
}

// put adds key, evicting the least recently used graph beyond maxGraphs.
func (gc *graphCache) put(key graphKey, g *runtime.Graph) error {
	if gc.graphs == nil {
		gc.graphs = map[graphKey]*runtime.Graph{}
	}
	gc.graphs[key] = g
	gc.keys = append(gc.keys, key)
	var err error
	for len(gc.keys) > maxGraphs {
		old := gc.keys[0]
		gc.keys = gc.keys[1:]
		if og := gc.graphs[old]; og != nil {
			err = errors.Join(err, og.Close())
		}
		delete(gc.graphs, old)
	}
	return err
}

// touch makes key the most recently used.
func (gc *graphCache) touch(key graphKey) {
	for i, k := range gc.keys {
		if k == key {
			copy(gc.keys[i:], gc.keys[i+1:])
			gc.keys[len(gc.keys)-1] = key
			return
		}
	}
}

// drop closes every graph (the scratch they use is about to change, or the
// backend closes). Failed captures are forgotten too: the next capture may
// succeed.
func (gc *graphCache) drop() error {
	var err error
	for _, g := range gc.graphs {
		if g != nil {
			err = errors.Join(err, g.Close())
		}
	}
	clear(gc.graphs)
	gc.keys = gc.keys[:0]
	return err
}

// InjectFault is for tests of the fault path with a real device fault: the
// next forward pass calls fn with the backend's stream after its first
// layer, to launch a faulting kernel there. The decode graphs are dropped
// first, so when the next step is a decode step its graph is captured with
// fn's kernel inside and the fault happens in the replay.
func (b *Backend) InjectFault(fn func(s *runtime.Stream) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ahead != nil { // its graph may be running: let it finish first
		b.ahead = nil
		if err := b.s.Synchronize(context.Background()); err != nil {
			return err
		}
	}
	b.inject = fn
	return b.graphs.drop()
}
