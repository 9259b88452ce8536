package gpu

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"slices"
	"time"

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
	// timed: whether decode steps of a row count replay graphs is decided
	// by timing both ways (Options.GraphsByTiming): trials, by row count.
	timed  bool
	trials map[int]*graphTrial
	// timeGPU times enqueued work on the device (the stream's TimeGPU;
	// tests substitute their own).
	timeGPU func(ctx context.Context, graph bool, enqueue func() error) (time.Duration, error)
}

// graphTrialRuns is how many decode steps of each kind a trial times. The
// first steps of a row count alternate: plain, graph, plain, ... (a
// graph's capture is not timed), and the faster way's best step decides.
const graphTrialRuns = 3

// graphTrial is the timing of a row count's first decode steps, launched
// plainly and replayed from graphs; once decided, use says which way the
// row count's steps go from then on.
type graphTrial struct {
	plain, graph []time.Duration
	decided, use bool
}

// decide settles t, for steps of rows rows, once both ways have
// graphTrialRuns steps: graphs where their fastest step beat the fastest
// plain one. It logs the choice.
func (t *graphTrial) decide(rows int) {
	if len(t.plain) < graphTrialRuns || len(t.graph) < graphTrialRuns {
		return
	}
	g, p := slices.Min(t.graph), slices.Min(t.plain)
	t.decided, t.use = true, g < p
	slog.Info("gpu: decode steps by timing", "rows", rows, "graphs", t.use, "graph_step", g, "plain_step", p)
}

// GraphStats counts what the decode-graph cache did.
type GraphStats struct {
	Captures, Replays, Fallbacks int
	Live                         int // graphs held now (at most maxGraphs)
	// Timed is what timing decided (Options.GraphsByTiming), by a decode
	// step's row count: whether its steps replay graphs.
	Timed map[int]bool
	// Err is the first capture failure, after which its key (or, when the
	// backend has no graphs, every step) launched plainly.
	Err error
}

// GraphStats reports the decode-graph cache's counters.
func (b *Backend) GraphStats() GraphStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.graphs.stats
	for rows, t := range b.graphs.trials {
		if t.decided {
			if st.Timed == nil {
				st.Timed = map[int]bool{}
			}
			st.Timed[rows] = t.use
		}
	}
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
	var trial *graphTrial
	if gc.timed {
		if trial = gc.trial(p.rows); trial.decided {
			if !trial.use {
				return false, nil
			}
			trial = nil
		} else if len(trial.plain) <= len(trial.graph) {
			return b.timePlain(ctx, p, trial)
		}
	}
	g, err := b.graph(ctx, p)
	if g == nil {
		if trial != nil && err == nil { // no graph for this key: plain it is
			trial.decided, trial.use = true, false
		}
		return err != nil, err
	}
	key := graphKey{p.T, p.rows, p.maxBlocks, p.metaBuf, p.chained}
	gc.touch(key)
	gc.stats.Replays++
	if trial == nil {
		return true, b.s.LaunchGraph(g)
	}
	d, err := gc.timeGPU(ctx, true, func() error { return b.s.LaunchGraph(g) })
	if err != nil {
		return true, err
	}
	trial.graph = append(trial.graph, d)
	trial.decide(p.rows)
	return true, nil
}

// trial is the timing of row count rows, started on first use.
func (gc *graphCache) trial(rows int) *graphTrial {
	if gc.trials == nil {
		gc.trials = map[int]*graphTrial{}
	}
	t := gc.trials[rows]
	if t == nil {
		t = &graphTrial{}
		gc.trials[rows] = t
	}
	return t
}

// timePlain runs p's forward plainly as a timed step of trial t. Where the
// device cannot time work (the simulated one), nothing was enqueued, and
// the row count keeps its graphs, as without timing.
func (b *Backend) timePlain(ctx context.Context, p *plan, t *graphTrial) (bool, error) {
	d, err := b.graphs.timeGPU(ctx, false, func() error { return b.forward(ctx, p) })
	if errors.Is(err, errors.ErrUnsupported) {
		t.decided, t.use = true, true
		return b.replay(ctx, p)
	}
	if err != nil {
		return true, err
	}
	t.plain = append(t.plain, d)
	t.decide(p.rows)
	return true, nil
}

// graph is plan p's decode graph, captured the first time its key is seen:
// nil where p launches plainly (its capture failed, now or before; then
// err is nil, and nothing was enqueued), or with err the forward's own
// error from the capture.
func (b *Backend) graph(ctx context.Context, p *plan) (*runtime.Graph, error) {
	gc := &b.graphs
	key := graphKey{p.T, p.rows, p.maxBlocks, p.metaBuf, p.chained}
	g, seen := gc.graphs[key]
	if seen && g == nil {
		gc.stats.Fallbacks++
		return nil, nil
	}
	if !seen {
		var err error
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
				return nil, nil
			}
			gc.put(key, nil)
			return nil, nil
		case err != nil:
			return nil, err // the forward's own error: the step fails as a plain one would
		}
		gc.stats.Captures++
		if err := gc.put(key, g); err != nil {
			return nil, err // closing an evicted graph failed: the device is in trouble
		}
	}
	return g, nil
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

// TimeGraphTrialsWith makes the timing of graph trials (Options.
// GraphsByTiming) call fn instead of the stream's TimeGPU: fn enqueues
// with enqueue, waits for it and returns its time; graph says whether it
// is a graph's replay. For tests, where the simulated device cannot time.
func (b *Backend) TimeGraphTrialsWith(fn func(ctx context.Context, graph bool, enqueue func() error) (time.Duration, error)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.graphs.timeGPU = fn
}
