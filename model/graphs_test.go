package model

// Decode graphs (model/internal/gpu/graph.go) against plain launches, on
// the simulated device here and on the GPU in gpu_test.go.

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/simgpu"
	"github.com/hipgo/hipgo/model/internal/gpu"
	"github.com/hipgo/hipgo/model/internal/gpu/gpusim"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/runtime"
)

// loadGraphsAndPlain loads spec twice on dev: with decode graphs, and with
// HIPGO_GPU_GRAPHS=0.
func loadGraphsAndPlain(t *testing.T, spec modeltest.Spec, dev *runtime.Device) (graphs, plain *Model) {
	t.Helper()
	plain, graphs = loadEach(t, spec, EnvGPUGraphs, "0", dev, "1", dev)
	return graphs, plain
}

// loadEach loads spec on devA with the switch env set to a, then on devB
// with it set to b; both close when the test ends.
func loadEach(t *testing.T, spec modeltest.Spec, env, a string, devA *runtime.Device, b string, devB *runtime.Device) (ma, mb *Model) {
	t.Helper()
	t.Setenv(env, a)
	ma = loadSpec(t, spec, WithDevice(devA))
	t.Setenv(env, b)
	mb = loadSpec(t, spec, WithDevice(devB))
	t.Cleanup(func() {
		require.NoError(t, ma.Close())
		require.NoError(t, mb.Close())
	})
	return ma, mb
}

func graphStats(m *Model) gpu.GraphStats { return m.gpu().b.GraphStats() }

// schedSeq is one sequence of a batch schedule: it joins at step join and
// leaves once it has made left tokens.
type schedSeq struct {
	prompt     []uint32
	opts       GenerateOptions
	join, left int
}

// schedules are the batch runs the graph tests compare. The first has
// sequences of different lengths and sampling options joining and
// leaving, so the batch size and the block-table stride change; in the
// second a long prompt joins a lone sequence for one token (its prefill
// grows the scratch), then the lone sequence decodes on in the shape it
// had before, whose graph must not be replayed over the freed scratch.
func schedules(vocab int) map[string][]schedSeq {
	return map[string][]schedSeq{
		"join and leave": {
			{testTokens(3, vocab), GenerateOptions{}, 0, 40},
			{testTokens(17, vocab)[4:], GenerateOptions{Temperature: 0.9, TopP: 1, Seed: 5}, 0, 12},
			{testTokens(30, vocab), GenerateOptions{Temperature: 1.1, TopK: 20, TopP: 0.9, Seed: 9}, 2, 30},
			{testTokens(1, vocab), GenerateOptions{}, 5, 20},
			{testTokens(9, vocab)[2:], GenerateOptions{Temperature: 0.7, TopP: 1, MinP: 0.05, Seed: 2}, 8, 35},
			{testTokens(12, vocab), GenerateOptions{}, 21, 9},
		},
		"scratch grows under a graph": {
			{testTokens(3, vocab), GenerateOptions{}, 0, 12},
			{testTokens(120, vocab), GenerateOptions{}, 4, 1},
		},
	}
}

// batchRun steps one batch of m through sched and returns every step's
// tokens in order.
func batchRun(t *testing.T, m *Model, sched []schedSeq) [][]BatchToken {
	t.Helper()
	ctx := context.Background()
	b := m.NewBatch()
	defer b.Close()
	ids := make([]SeqID, len(sched))
	made := map[SeqID]int{}
	var out [][]BatchToken
	for step := 0; step < 64; step++ {
		for i, s := range sched {
			if s.join == step {
				id, err := b.Add(s.prompt, s.opts)
				require.NoError(t, err)
				ids[i] = id
			}
		}
		if b.Len() == 0 {
			break
		}
		toks, err := b.Step(ctx)
		require.NoError(t, err, "step %d", step)
		out = append(out, toks)
		for _, tok := range toks {
			made[tok.Seq]++
			for i, s := range sched {
				if ids[i] == tok.Seq && made[tok.Seq] == s.left {
					require.NoError(t, b.Remove(tok.Seq))
				}
			}
		}
	}
	return out
}

// requireGraphsGiveThePlainTokens proves decode steps replayed from graphs
// give exactly the tokens of plain launches, step by step, while sequences
// join and leave (so the batch size, the block-table stride and the
// scratch change under the graph cache), and that graphs were replayed.
func requireGraphsGiveThePlainTokens(t *testing.T, dev *runtime.Device, spec modeltest.Spec) *Model {
	graphs, plain := loadGraphsAndPlain(t, spec, dev)
	steps := 0
	for name, sched := range schedules(spec.Vocab) {
		want := batchRun(t, plain, sched)
		got := batchRun(t, graphs, sched)
		require.Equal(t, len(want), len(got), name)
		for i := range want {
			require.Equal(t, want[i], got[i], "%s: step %d", name, i)
		}
		steps += len(got)
	}
	res, err := plain.GenerateTokens(context.Background(), testTokens(5, spec.Vocab), GenerateOptions{MaxTokens: 24}, nil)
	require.NoError(t, err)
	gres, err := graphs.GenerateTokens(context.Background(), testTokens(5, spec.Vocab), GenerateOptions{MaxTokens: 24}, nil)
	require.NoError(t, err)
	require.Equal(t, res.Tokens, gres.Tokens, "greedy generation")

	st := graphStats(graphs)
	t.Logf("graphs: %+v over %d steps", st, steps)
	require.NoError(t, st.Err)
	require.Zero(t, st.Fallbacks)
	require.Positive(t, st.Captures)
	require.Greater(t, st.Replays, 2*st.Captures, "most decode steps replay a graph they did not capture")
	require.LessOrEqual(t, st.Live, 8, "the cache is bounded")
	require.Equal(t, gpu.GraphStats{}, graphStats(plain), "HIPGO_GPU_GRAPHS=0 captures nothing")
	return graphs
}

// TestSimGPUDecodeGraphsGiveThePlainTokens also proves the backend keeps at
// most 8 graphs (a schedule of many batch shapes) and that closing the
// model destroys them on the driver.
func TestSimGPUDecodeGraphsGiveThePlainTokens(t *testing.T) {
	drv := gpusim.Driver(2<<30, nil)
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	spec := modeltest.Llama3Tiny()
	m := requireGraphsGiveThePlainTokens(t, dev, spec)
	sim := drv.Devices()[0]

	// Grow the scratch first (13 rows, 130 tokens), so that nothing below
	// reallocates it (which would drop the graphs): then one sequence
	// joined by one more at a time makes 12 batch sizes, 12 graphs.
	warm := m.NewBatch()
	for i := range 13 {
		_, err := warm.Add(testTokens(10+i, spec.Vocab)[i:], GenerateOptions{})
		require.NoError(t, err)
	}
	_, err = warm.Step(context.Background())
	require.NoError(t, err)
	warm.Close()
	capturesBefore := graphStats(m).Captures
	b := m.NewBatch()
	defer b.Close()
	for i := range 12 {
		_, err := b.Add(testTokens(2+i, spec.Vocab), GenerateOptions{})
		require.NoError(t, err)
		for range 3 { // the prefill step, a capture, a replay
			_, err = b.Step(context.Background())
			require.NoError(t, err)
		}
		require.LessOrEqual(t, graphStats(m).Live, 8)
		require.LessOrEqual(t, sim.GraphsLive.Load(), int64(8), "evicted graphs are destroyed")
	}
	require.GreaterOrEqual(t, graphStats(m).Captures-capturesBefore, 12, "a graph per batch size")
	require.EqualValues(t, 8, sim.GraphsLive.Load(), "the 8 most recent kept")
	require.NoError(t, m.Close())
	require.Zero(t, sim.GraphsLive.Load(), "Close destroys the graphs")
}

// TestSimGPUDecodeGraphsFallBackWhenTheBackendCannotCapture proves a
// device without graphs decodes with plain launches, says why once in its
// stats, and gives the same tokens.
func TestSimGPUDecodeGraphsFallBackWhenTheBackendCannotCapture(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	drv := gpusim.DriverWith(2<<30, nil, func(c *simgpu.Config) { c.NoGraphs = true })
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(drv))
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	m := loadSpec(t, spec, WithDevice(dev))
	t.Setenv(EnvGPUGraphs, "0")
	plain := loadSpec(t, spec, WithDevice(simDevice(t, nil)))
	for name, sched := range schedules(spec.Vocab) {
		require.Equal(t, batchRun(t, plain, sched), batchRun(t, m, sched), name)
	}
	st := graphStats(m)
	require.ErrorIs(t, st.Err, errors.ErrUnsupported)
	require.Zero(t, st.Captures+st.Replays)
	require.Equal(t, 1, st.Fallbacks, "tried once, then off for good")
}

// TestGraphsEnvIsChecked: a value other than 0 or 1 of any GPU switch
// fails the load.
func TestGraphsEnvIsChecked(t *testing.T) {
	for _, env := range []string{EnvGPUGraphs, EnvGPUEarlyStart, EnvGPUFused, EnvGPUWarpgroupMMA, EnvGPULookahead, EnvGPUFoldAdds} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "no")
			_, err := LoadFS(specFS(t, modeltest.Llama3Tiny()), WithDevice(simDevice(t, nil)), WithoutTokenizer())
			require.ErrorIs(t, err, ErrOptions)
			require.ErrorContains(t, err, env)
		})
	}
}

// TestSimGPUFaultInAReplayedDecodeGraph proves a simulated fault in a
// kernel of a replayed decode graph fails the step that graph computes with
// the runtime's *FaultError and loses the device, which the model then
// reports, as a fault in a plain launch does. With the lookahead off, the
// fault is in the forward of the call that enqueues it. With it on, each
// call enqueues the next step's forward after its own work
// (model/internal/gpu/lookahead.go): the fault is sticky (on CUDA every
// wait after it fails), so the call that enqueued the faulting kernel fails
// when its wait comes after the fault, else the next call, whose forward it
// was (the simulation runs the work on its own goroutine, so either
// happens).
func TestSimGPUFaultInAReplayedDecodeGraph(t *testing.T) {
	for _, ahead := range []string{"0", "1"} {
		t.Run("lookahead="+ahead, func(t *testing.T) {
			t.Setenv(EnvGPULookahead, ahead)
			t.Setenv(EnvGPUGraphs, "1") // every decode step a graph, not by timing
			ctx := context.Background()
			spec := modeltest.Qwen2Tiny()
			faults := &gpusim.Faults{}
			dev := simDevice(t, faults)
			m := loadSpec(t, spec, WithDevice(dev))
			b := m.NewBatch()
			for i := range 2 {
				_, err := b.Add(testTokens(3+i, spec.Vocab), GenerateOptions{})
				require.NoError(t, err)
			}
			for range 4 { // prefill, captures, replays
				_, err := b.Step(ctx)
				require.NoError(t, err)
			}
			before := graphStats(m)
			require.Positive(t, before.Replays)
			n0 := faults.Launches()
			_, err := b.Step(ctx)
			require.NoError(t, err)
			perStep := faults.Launches() - n0
			require.Equal(t, before.Replays+1, graphStats(m).Replays, "that call replayed a graph")

			faults.Arm(perStep/2, simgpu.CodeIllegalAddr)
			_, err = b.Step(ctx)
			// The forward the fault hits (this call's own, or with the
			// lookahead the next step's, which this call enqueued) was a
			// replay. Counted here: when this call's wait does not see the
			// fault yet, the next call may replay another lookahead before
			// its own wait does.
			require.Equal(t, before.Replays+2, graphStats(m).Replays, "the failed step's forward was a replay")
			if ahead == "1" && err == nil {
				_, err = b.Step(ctx)
			}
			var be *BatchError
			require.ErrorAs(t, err, &be)
			require.Len(t, be.Seqs, 2)
			require.ErrorIs(t, err, runtime.ErrDeviceFault)
			var fe *runtime.FaultError
			require.ErrorAs(t, err, &fe, "the runtime's typed fault: %v", err)
			require.Error(t, m.DeviceLost())
			_, err = m.GenerateTokens(ctx, testTokens(4, spec.Vocab), GenerateOptions{MaxTokens: 2}, nil)
			var lost *runtime.DeviceLostError
			require.ErrorAs(t, err, &lost)
		})
	}
}

// TestSimGPUDecodeGraphsByTiming proves that with HIPGO_GPU_GRAPHS=auto
// the first decode steps of a batch size run plainly, then from graphs,
// each timed from the end of the step before it (here by a stand-in
// clock), and that the way with the smaller mean interval then takes every
// later step of that size; either way the tokens are the plain launches'.
// In the third case graphs have the best interval but the larger mean (as
// the lookahead makes intervals alternate on the H200), and plain wins; in
// the fourth an interval in which a graph was captured or first launched
// takes 50 ms more, and graphs still win (those intervals are not
// counted); in the fifth graphs are 1% faster, under the margin
// (graphTrialMargin), and plain wins.
func TestSimGPUDecodeGraphsByTiming(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name        string
		plain       []time.Duration // the plain steps' intervals, in turn
		graph       []time.Duration
		graphFaster bool
		capture     time.Duration // added to an interval in which a graph was captured or first launched
	}{
		{"graphs faster", []time.Duration{ms(2)}, []time.Duration{ms(1)}, true, 0},
		{"plain faster", []time.Duration{ms(1)}, []time.Duration{ms(2)}, false, 0},
		{"graphs best once, plain faster on average", []time.Duration{ms(1.2)}, []time.Duration{ms(0.5), ms(2.5)}, false, 0},
		{"graphs faster, their captures slow", []time.Duration{ms(2)}, []time.Duration{ms(1)}, true, ms(50)},
		{"graphs 1% faster: a tie, plain", []time.Duration{ms(1)}, []time.Duration{ms(0.99)}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, err := runtime.Open(context.Background(), runtime.WithDrivers(gpusim.Driver(2<<30, nil)))
			require.NoError(t, err)
			t.Cleanup(func() { _ = dev.Close() })
			spec := modeltest.Llama3Tiny()
			plain, timed := loadEach(t, spec, EnvGPUGraphs, "0", dev, "auto", dev)
			var steps []bool // each Step's: was its forward a graph's replay
			clock := time.Unix(0, 0)
			var plainN, graphN int
			timed.gpu().b.TimeGraphTrialsWith(func(graph, fresh bool) time.Time {
				steps = append(steps, graph)
				if fresh {
					clock = clock.Add(tc.capture)
				}
				if graph {
					clock = clock.Add(tc.graph[graphN%len(tc.graph)])
					graphN++
				} else {
					clock = clock.Add(tc.plain[plainN%len(tc.plain)])
					plainN++
				}
				return clock
			})
			// Two sequences, so every decode step has 2 rows.
			sched := []schedSeq{
				{testTokens(3, spec.Vocab), GenerateOptions{}, 0, 32},
				{testTokens(6, spec.Vocab), GenerateOptions{}, 0, 32},
			}
			want := batchRun(t, plain, sched)
			got := batchRun(t, timed, sched)
			require.Equal(t, want, got, "the plain launches' tokens")
			st := graphStats(timed)
			t.Logf("%+v; steps from graphs: %v", st, steps)
			require.Equal(t, map[int]bool{2: tc.graphFaster}, st.Timed)
			// The prefill, then at least nine plain decode steps (one more
			// where the lookahead enqueued a step before the ninth's interval
			// was in), then nine from graphs and as many more as intervals
			// held a capture (a shape has up to three graphs) or the
			// lookahead ran ahead, then the faster way.
			k := slices.Index(steps, true)
			require.GreaterOrEqual(t, k, 10, "the prefill and nine plain steps first: %v", steps)
			require.LessOrEqual(t, k, 11, "%v", steps)
			n := slices.Index(steps[k:], false)
			if tc.graphFaster {
				require.Equal(t, -1, n, "graphs from then on: %v", steps)
			} else {
				require.GreaterOrEqual(t, n, 9, "nine or more from graphs: %v", steps)
				require.LessOrEqual(t, n, 13, "%v", steps)
				require.NotContains(t, steps[k+n:], true, "plain from then on")
			}
			// Every step from a graph is a replay, and so may be one lookahead
			// more, enqueued after the last step and discarded.
			require.GreaterOrEqual(t, st.Replays, count(steps, true))
			require.LessOrEqual(t, st.Replays, count(steps, true)+1)
		})
	}
}

func count[T comparable](s []T, v T) (n int) {
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
