package model

// The GPU backend's lookahead (model/internal/gpu/lookahead.go): the same
// tokens as without it, whatever the caller does between steps; on the
// simulated device here, on the GPU in gpu_test.go.

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model/internal/gpu"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/safetensors"
	"github.com/hipgo/hipgo/runtime"
	"github.com/hipgo/hipgo/sampling"
)

func lookaheadStats(m *Model) gpu.LookaheadStats { return m.gpu().b.LookaheadStats() }

// TestSimGPULookaheadGivesTheTokensWithout runs the batch schedules
// (sequences of different lengths and sampling options joining and
// leaving, so that many lookaheads are discarded) and a greedy generation
// with the lookahead on and off, with decode graphs and without: the tokens
// are the same step by step, and lookaheads were used.
func TestSimGPULookaheadGivesTheTokensWithout(t *testing.T) {
	requireLookaheadGivesTheTokensWithout(t, func() *runtime.Device { return simDevice(t, nil) })
}

func requireLookaheadGivesTheTokensWithout(t *testing.T, device func() *runtime.Device) {
	spec := modeltest.Llama3Tiny()
	spec.DType = safetensors.BF16
	for _, graphs := range []string{"1", "0"} {
		t.Run("graphs="+graphs, func(t *testing.T) {
			t.Setenv(EnvGPUGraphs, graphs)
			off, on := loadEach(t, spec, EnvGPULookahead, "0", device(), "1", device())
			for name, sched := range schedules(spec.Vocab) {
				want := batchRun(t, off, sched)
				got := batchRun(t, on, sched)
				require.Equal(t, want, got, name)
			}
			st := lookaheadStats(on)
			t.Logf("schedules: %+v", st)
			require.Positive(t, st.Used)
			require.Less(t, st.Used, st.Enqueued, "joins and leaves discard some")

			ctx := context.Background()
			before := lookaheadStats(on)
			opts := GenerateOptions{MaxTokens: 40}
			want, err := off.GenerateTokens(ctx, testTokens(5, spec.Vocab), opts, nil)
			require.NoError(t, err)
			got, err := on.GenerateTokens(ctx, testTokens(5, spec.Vocab), opts, nil)
			require.NoError(t, err)
			require.Equal(t, want.Tokens, got.Tokens, "greedy generation")
			greedySteps := got.DecodeSteps
			opts = GenerateOptions{MaxTokens: 40, Temperature: 0.8, TopP: 1, TopK: 20, Seed: 3}
			want, err = off.GenerateTokens(ctx, testTokens(7, spec.Vocab), opts, nil)
			require.NoError(t, err)
			got, err = on.GenerateTokens(ctx, testTokens(7, spec.Vocab), opts, nil)
			require.NoError(t, err)
			require.Equal(t, want.Tokens, got.Tokens, "sampled generation")
			require.Equal(t, generationLookaheads(5, greedySteps)+generationLookaheads(7, got.DecodeSteps),
				lookaheadStats(on).Used-before.Used, "a generation's decode steps use their lookaheads")
			require.Zero(t, lookaheadStats(off), "HIPGO_GPU_LOOKAHEAD=0 enqueues none")
		})
	}
}

// generationLookaheads is how many lookaheads a generation with prompt p
// and d decode steps uses: decode step k (k = 1 .. d) feeds the token at
// p+k-1, and step k+1 uses the lookahead step k enqueued, unless that
// token, at p+k, needs a block the sequence does not hold yet (the first
// decode step follows the prefill, which enqueues none).
func generationLookaheads(p, d int) int {
	used := 0
	for k := 1; k < d; k++ {
		if (p+k)%gpu.BlockSize != 0 {
			used++
		}
	}
	return used
}

// TestSimGPULookaheadIsDiscardedByOtherCalls drives the backend directly
// with what Batch never does: a sequence fed a token other than the one it
// sampled, a Forward on a sequence with a lookahead pending, a released
// sequence whose blocks a new one takes while a lookahead still writes
// into them, and a different batch of the same shape. Every result equals
// the lookahead-free backend's, and only the true continuations use the
// lookahead.
func TestSimGPULookaheadIsDiscardedByOtherCalls(t *testing.T) {
	requireLookaheadIsDiscardedByOtherCalls(t, simDevice(t, nil), simDevice(t, nil))
}

// requireLookaheadIsDiscardedByOtherCalls runs the calls on devOff with the
// lookahead off and on devOn with it on (they may be one device).
func requireLookaheadIsDiscardedByOtherCalls(t *testing.T, devOff, devOn *runtime.Device) {
	spec := modeltest.Llama3Tiny()
	spec.DType = safetensors.BF16
	off, on := loadEach(t, spec, EnvGPULookahead, "0", devOff, "1", devOn)
	ctx := context.Background()
	greedy := sampling.Params{Temperature: 0, TopP: 1}

	type trace struct {
		tokens [][]uint32
		logits []float32
	}
	run := func(m *Model) (trace, gpu.LookaheadStats) {
		b := m.gpu().b
		var tr trace
		step := func(seqs []*gpu.Sequence, feed [][]uint32) []uint32 {
			items := make([]gpu.Item, len(seqs))
			for i := range seqs {
				items[i] = gpu.Item{Seq: seqs[i], Tokens: feed[i], Params: greedy}
			}
			out := make([]uint32, len(items))
			require.NoError(t, b.Step(ctx, items, out))
			tr.tokens = append(tr.tokens, out)
			return out
		}
		a, c := b.NewSequence(64), b.NewSequence(64)
		out := step([]*gpu.Sequence{a, c}, [][]uint32{testTokens(3, spec.Vocab), testTokens(6, spec.Vocab)})
		out = step([]*gpu.Sequence{a, c}, [][]uint32{{out[0]}, {out[1]}}) // enqueues a lookahead
		out = step([]*gpu.Sequence{a, c}, [][]uint32{{out[0]}, {out[1]}}) // uses it
		// A token other than the sampled one for c.
		out = step([]*gpu.Sequence{a, c}, [][]uint32{{out[0]}, {(out[1] + 1) % uint32(spec.Vocab)}})
		// The same sequences in the other order.
		out = step([]*gpu.Sequence{c, a}, [][]uint32{{out[1]}, {out[0]}})
		// A Forward on a while a lookahead for both is pending.
		logits := make([]float32, spec.Vocab)
		require.NoError(t, b.Forward(ctx, a, []uint32{out[1]}, false, logits))
		tr.logits = append(tr.logits, logits...)
		out = step([]*gpu.Sequence{c, a}, [][]uint32{{out[0]}, {3}})
		out = step([]*gpu.Sequence{c, a}, [][]uint32{{out[0]}, {out[1]}}) // a lookahead again
		// c leaves with the lookahead pending; a new sequence takes its blocks.
		c.Release()
		d := b.NewSequence(64)
		out2 := step([]*gpu.Sequence{a, d}, [][]uint32{{out[1]}, testTokens(20, spec.Vocab)})
		for range 3 {
			out2 = step([]*gpu.Sequence{a, d}, [][]uint32{{out2[0]}, {out2[1]}})
		}
		a.Release()
		d.Release()
		return tr, b.LookaheadStats()
	}
	want, offStats := run(off)
	got, st := run(on)
	require.Equal(t, want, got)
	require.Zero(t, offStats)
	t.Logf("lookaheads: %+v", st)
	require.Equal(t, 4, st.Used, "the unchanged continuations only")
	require.Equal(t, 9, st.Enqueued, "every decode step (sampled together, no new block) enqueues one")
}
