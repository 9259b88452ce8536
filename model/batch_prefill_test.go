package model

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/runtime"
)

// TestPrefillBudgetFeedsPromptsInSlices proves a batch with a prefill
// budget feeds at most that many prompt tokens a step, the prompt with the
// fewest tokens left first (a short prompt added behind two long ones gets
// its token in the first step), a sequence returns no token until its whole
// prompt is fed, and every sequence gets the tokens it gets alone, on the
// CPU and on the GPU backend (simulated device).
func TestPrefillBudgetFeedsPromptsInSlices(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	dev := simDevice(t, nil)
	for name, m := range map[string]*Model{"cpu": loadSpec(t, spec), "gpu": loadSpec(t, spec, WithDevice(dev))} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			const budget, n = 8, 4
			prompts := [][]uint32{testTokens(30, spec.Vocab), testTokens(17, spec.Vocab)[2:], testTokens(3, spec.Vocab)}
			opts := []GenerateOptions{{}, {Temperature: 0.9, TopP: 1, Seed: 3}, {Temperature: 1.1, TopK: 20, TopP: 0.9, Seed: 7}}
			alone := make([][]uint32, len(prompts))
			for i := range prompts {
				o := opts[i]
				o.MaxTokens = n
				res, err := m.GenerateTokens(ctx, prompts[i], o, nil)
				require.NoError(t, err)
				alone[i] = res.Tokens
			}
			b := m.NewBatch()
			defer b.Close()
			b.SetPrefillBudget(budget)
			ids := map[SeqID]int{}
			for i := range prompts {
				id, err := b.Add(prompts[i], opts[i])
				require.NoError(t, err)
				ids[id] = i
			}
			got := make([][]uint32, len(prompts))
			first := make([]int, len(prompts)) // the step of each sequence's first token
			fed := 0
			for step := 1; b.Len() > 0; step++ {
				require.Less(t, step, 40)
				toks, err := b.Step(ctx)
				require.NoError(t, err)
				st := b.LastStep()
				require.LessOrEqual(t, st.Prompt, budget, "step %d", step)
				require.Equal(t, len(toks), st.Tokens)
				fed += st.Prompt
				for _, tok := range toks {
					i := ids[tok.Seq]
					if len(got[i]) == 0 {
						first[i] = step
					}
					got[i] = append(got[i], tok.ID)
					if len(got[i]) == len(alone[i]) {
						require.NoError(t, b.Remove(tok.Seq))
					}
				}
			}
			require.Equal(t, 30+15+3, fed, "every prompt token fed once")
			require.Equal(t, alone, got)
			require.Equal(t, 1, first[2], "the 3-token prompt went first")
			require.Equal(t, 3, first[1], "the 15-token prompt: 5 tokens in step 1, 8 in step 2, 2 in step 3")
			require.Equal(t, 6, first[0], "the 30-token prompt: 6 tokens in step 3, then 8 a step")
		})
	}
}

// TestRetryableStepLeavesTheBatchAsItWas proves a step that failed on a
// launch rejection before it ran (WithStepFaults) removes nothing and says
// it is retryable, and that the next Step gives every sequence the tokens
// a run with no failure gives (the same keys: a failed step draws nothing);
// an error that is no launch rejection still removes the step's sequences.
func TestRetryableStepLeavesTheBatchAsItWas(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	ctx := context.Background()
	var fail error
	m := loadSpec(t, spec, WithStepFaults(func(uint64) error { e := fail; fail = nil; return e }))
	prompts := [][]uint32{testTokens(9, spec.Vocab), testTokens(4, spec.Vocab)}
	opts := GenerateOptions{Temperature: 0.9, TopP: 1, Seed: 11, MaxTokens: 5}
	var want [][]uint32
	for _, p := range prompts {
		res, err := m.GenerateTokens(ctx, p, opts, nil)
		require.NoError(t, err)
		want = append(want, res.Tokens)
	}
	b := m.NewBatch()
	defer b.Close()
	for _, p := range prompts {
		_, err := b.Add(p, opts)
		require.NoError(t, err)
	}
	got := make([][]uint32, len(prompts))
	for step := range 5 {
		if step == 0 || step == 2 {
			fail = &runtime.LaunchError{Kernel: "injected", Reason: "test"}
			_, err := b.Step(ctx)
			var be *BatchError
			require.ErrorAs(t, err, &be)
			require.True(t, be.Retryable)
			require.Empty(t, be.Seqs)
			require.ErrorIs(t, err, runtime.ErrLaunchRejected)
			require.Equal(t, 2, b.Len(), "nothing removed")
		}
		toks, err := b.Step(ctx)
		require.NoError(t, err)
		for i, tok := range toks {
			got[i] = append(got[i], tok.ID)
		}
	}
	require.Equal(t, want, got)

	fail = errors.New("not a launch rejection")
	_, err := b.Step(ctx)
	var be *BatchError
	require.ErrorAs(t, err, &be)
	require.False(t, be.Retryable)
	require.Len(t, be.Seqs, 2)
	require.Zero(t, b.Len())
}

// advanceThenReject is a backend whose step runs, then says a launch was
// rejected: a step that moved its sequences and failed.
type advanceThenReject struct{ backend }

func (a advanceThenReject) step(ctx context.Context, items []stepItem, out []uint32) error {
	if err := a.backend.step(ctx, items, out); err != nil {
		return err
	}
	return &runtime.LaunchError{Kernel: "after the step", Reason: "test"}
}

// TestStepThatAdvancedIsNotRetryable proves a launch rejection after a
// sequence's cache advanced is no retryable failure: the step's sequences
// fail and leave the batch, since a retry would feed their tokens twice.
func TestStepThatAdvancedIsNotRetryable(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	m := loadSpec(t, spec)
	m.be = advanceThenReject{m.be}
	b := m.NewBatch()
	defer b.Close()
	id, err := b.Add(testTokens(5, spec.Vocab), GenerateOptions{})
	require.NoError(t, err)
	_, err = b.Step(context.Background())
	var be *BatchError
	require.ErrorAs(t, err, &be)
	require.False(t, be.Retryable)
	require.Equal(t, []SeqID{id}, be.Seqs)
	require.Zero(t, b.Len())
}
