package gpu

import (
	"context"
	"errors"
	"log"
	"log/slog"
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

// graphKey is decode plan p's key.
func (p *plan) graphKey() graphKey { return graphKey{p.T, p.rows, p.maxBlocks, p.metaBuf, p.chained} }

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
	// The last Step's end, its row count and how its forward ran, for the
	// interval to the next one.
	prevEnd  time.Time
	prevRows int
	prevArm  trialArm
	// fresh: a graph was captured, and so first launched (replay launches
	// it at once), since the last Step's end, by this Step's forward or its
	// lookahead's; that interval is not a step's.
	fresh bool
	now   func(graph, fresh bool) time.Time // time.Now; tests substitute their own
}

// trialArm is how a trial's step ran: not timed, plainly, from a graph.
type trialArm int

const (
	armNone trialArm = iota
	armPlain
	armGraph
)

// graphTrialSteps is how many decode steps of a row count a trial runs
// each way: first plainly, then from graphs. Each step but the first of
// each way is timed from the end of the step before it (its Step's return),
// which with the lookahead is the time a step takes when they follow one
// another. Intervals in which a graph was captured and first launched are
// not counted, and the way whose other intervals have the smaller mean
// decides. Their mean, not their best: with the lookahead one interval can
// be short and the next long, so the best interval is far below a step's
// real time and picks graphs where they are slower. (A step timed alone,
// with TimeGPU, is a wrong measure too: it finds graphs faster where they
// are not.)
const graphTrialSteps = 9

// graphTrialMargin: graphs take a row count's steps only where their mean
// interval is this much below the plain one's. The trial runs a
// generation's first steps, over the shortest contexts, where graphs can
// time slightly faster even where plain launches win over the rest of the
// generation; where graphs pay (small models) they win by far more than
// the margin.
const graphTrialMargin = 0.02

// graphTrial is the timing of a row count's first decode steps; once
// decided, use says which way its steps go from then on.
type graphTrial struct {
	plain, graph []time.Duration // intervals of steps run each way
	decided, use bool
}

// arm is the way the next step of t runs: plainly until graphTrialSteps-1
// plain intervals are in, then from graphs. It counts intervals, not
// steps, since a lookahead's step may be enqueued and then discarded, and
// a step may not follow one of its own trial (a row count whose steps
// never follow one another stays plain).
func (t *graphTrial) arm() trialArm {
	if len(t.plain) < graphTrialSteps-1 {
		return armPlain
	}
	return armGraph
}

// decide settles t, for steps of rows rows, once both ways have their
// intervals: graphs where their mean beat the plain one's by
// graphTrialMargin. It logs the choice.
func (t *graphTrial) decide(rows int) {
	if len(t.plain) < graphTrialSteps-1 || len(t.graph) < graphTrialSteps-1 {
		return
	}
	g, p := meanInterval(t.graph), meanInterval(t.plain)
	t.decided, t.use = true, float64(g) < float64(p)*(1-graphTrialMargin)
	slog.Info("gpu: decode steps by timing", "rows", rows, "graphs", t.use, "graph_step", g, "plain_step", p)
}

// meanInterval is the mean of ds (not empty).
func meanInterval(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// stepDone notes the end of a Step that sampled plan p's forward: an
// interval for p's trial where the Step before it was a step of the same
// trial run the same way.
func (gc *graphCache) stepDone(p *plan) {
	if !gc.timed {
		return
	}
	now := gc.now(p.replayed, gc.fresh)
	if t := gc.trials[p.rows]; t != nil && !t.decided && p.arm != armNone && gc.prevArm == p.arm && gc.prevRows == p.rows && !gc.fresh {
		d := now.Sub(gc.prevEnd)
		if p.arm == armGraph {
			t.graph = append(t.graph, d)
		} else {
			t.plain = append(t.plain, d)
		}
		t.decide(p.rows)
	}
	gc.prevEnd, gc.prevRows, gc.prevArm, gc.fresh = now, p.rows, p.arm, false
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
	var t *graphTrial // p's trial, where it is undecided
	if gc.timed {
		switch t = gc.trial(p.rows); {
		case t.decided && !t.use:
			return false, nil
		case t.decided:
			t = nil
		default:
			if p.arm = t.arm(); p.arm == armPlain {
				return false, nil
			}
		}
	}
	g, err := b.graph(ctx, p)
	if g == nil {
		if t != nil && err == nil { // no graph for this key: plain it is
			t.decided, t.use, p.arm = true, false, armNone
		}
		return err != nil, err
	}
	gc.touch(p.graphKey())
	gc.stats.Replays++
	p.replayed = true
	return true, b.s.LaunchGraph(g)
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

// graph is plan p's decode graph, captured the first time its key is seen:
// nil where p launches plainly (its capture failed, now or before; then
// err is nil, and nothing was enqueued), or with err the forward's own
// error from the capture.
func (b *Backend) graph(ctx context.Context, p *plan) (*runtime.Graph, error) {
	gc := &b.graphs
	key := p.graphKey()
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
		gc.fresh = true
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

// TimeGraphTrialsWith makes graph trials (Options.GraphsByTiming) read
// the end of each Step from now instead of the clock: graph says whether
// that Step's forward was a graph's replay, fresh whether a graph was
// captured (and first launched) since the Step before it. For tests.
func (b *Backend) TimeGraphTrialsWith(now func(graph, fresh bool) time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.graphs.now = now
}
