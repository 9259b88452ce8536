package model

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model/modeltest"
)

// TestCPUBatchDecodesInOnePass: once its sequences have run their prompts,
// a CPU batch step of one token each is one forward pass for all of them
// (each weight read once), where it was a pass a sequence; a step in which
// a sequence joins runs its prompt alone, then the others together. The
// tokens equal each sequence's alone (requireBatchMatchesAlone, in
// TestBatchGivesEachSequenceItsAloneTokens).
func TestCPUBatchDecodesInOnePass(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	m := loadSpec(t, spec)
	be := m.be.(*cpuBackend)
	ctx := context.Background()
	b := m.NewBatch()
	defer b.Close()
	for i := range 5 {
		_, err := b.Add(testTokens(3+i, spec.Vocab), GenerateOptions{Temperature: 0.8, TopP: 1, Seed: uint64(i)})
		require.NoError(t, err)
	}
	before := be.passes.Load()
	_, err := b.Step(ctx) // five prompts, each its own pass
	require.NoError(t, err)
	require.EqualValues(t, 5, be.passes.Load()-before)
	for range 3 {
		before = be.passes.Load()
		toks, err := b.Step(ctx)
		require.NoError(t, err)
		require.Len(t, toks, 5)
		require.EqualValues(t, 1, be.passes.Load()-before, "one pass for five sequences")
	}
	_, err = b.Add(testTokens(4, spec.Vocab), GenerateOptions{})
	require.NoError(t, err)
	before = be.passes.Load()
	_, err = b.Step(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, be.passes.Load()-before, "the new prompt, then the five together")
}

// TestCPUBatchDecodeChecksEveryContextFirst: a batched decode step in which
// one sequence has no room left fails with *ContextError before any
// sequence's cache moves.
func TestCPUBatchDecodeChecksEveryContextFirst(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	m := loadSpec(t, spec)
	be := m.be.(*cpuBackend)
	ctx := context.Background()
	var items []stepItem
	for i, n := range []int{3, 8, 5} {
		s := be.newSequence(8).(*cpuSequence)
		require.NoError(t, s.forward(ctx, testTokens(n, spec.Vocab), false, make([]float32, spec.Vocab)))
		items = append(items, stepItem{seq: s, tokens: []uint32{uint32(i)}})
	}
	out := make([]uint32, len(items))
	var ce *ContextError
	require.ErrorAs(t, be.step(ctx, items, out), &ce)
	require.Equal(t, 9, ce.Tokens)
	for i, n := range []int{3, 8, 5} {
		require.Equal(t, n, items[i].seq.len(), "sequence %d did not move", i)
	}
}
