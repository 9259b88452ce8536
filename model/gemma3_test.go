package model

import (
	"context"
	"testing"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/stretchr/testify/require"
)

// TestSlidingWindowCacheDropsWhatFellOut proves a sliding-window layer's
// CPU cache keeps only the rows its queries can still see, so its memory
// stops growing with the context (at most 2*window+prefillChunk rows) while
// the global layer's keeps every position, and that dropping them changes
// nothing: a 100-token prompt (two prefill chunks) and 700 decode steps
// give the logits, bit for bit, of a sequence whose every layer keeps
// every row.
func TestSlidingWindowCacheDropsWhatFellOut(t *testing.T) {
	spec := modeltest.Gemma3Tiny()
	spec.MaxPos = 1024
	m := loadSpec(t, spec)
	be := m.be.(*cpuBackend)
	ctx := context.Background()
	const total = 800
	slide := be.newSequence(total).(*cpuSequence)
	keep := be.newSequence(total).(*cpuSequence)
	for l := range keep.kv {
		require.Equal(t, be.cfg.window(l), slide.kv[l].window, "layer %d", l)
		keep.kv[l].window = 0
	}
	require.Zero(t, slide.kv[5].window, "layer 5 is global")
	V := spec.Vocab
	a, b := make([]float32, V), make([]float32, V)
	prompt := testTokens(100, V)
	require.NoError(t, slide.forward(ctx, prompt, false, a))
	require.NoError(t, keep.forward(ctx, prompt, false, b))
	require.Equal(t, b, a, "prompt")
	for i := len(prompt); i < total; i++ {
		tok := argmaxF32(a)
		require.NoError(t, slide.forward(ctx, []uint32{tok}, false, a))
		require.NoError(t, keep.forward(ctx, []uint32{tok}, false, b))
		require.Equal(t, b, a, "position %d", i)
	}
	kvD := spec.KVHeads * spec.HeadDim
	for l, kv := range slide.kv {
		rows := len(kv.k) / kvD
		if kv.window > 0 {
			require.LessOrEqual(t, rows, 2*kv.window+prefillChunk, "layer %d", l)
			require.Positive(t, kv.base, "layer %d dropped its oldest rows", l)
		} else {
			require.GreaterOrEqual(t, rows, total, "layer %d", l)
		}
	}
}
