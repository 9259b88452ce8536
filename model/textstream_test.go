package model

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/runtime"
)

// TestBatchWithTextStreamGivesGenerateText proves a caller stepping a Batch
// with a TextStream releases the same text pieces, and stops at the same
// place, as Generate: with and without a stop string that the sampled text
// contains, and at max tokens.
func TestBatchWithTextStreamGivesGenerateText(t *testing.T) {
	ctx := context.Background()
	m, err := LoadFS(demo.FS())
	require.NoError(t, err)
	base := GenerateOptions{MaxTokens: 24, Temperature: 0.9, TopP: 1, Seed: 7}
	full, err := m.Generate(ctx, "And God said", base, nil)
	require.NoError(t, err)
	require.Greater(t, len(full.Text), 10)
	stop := strings.TrimSpace(full.Text[len(full.Text)/2:])[:3] // appears in the sampled text
	for _, stops := range [][]string{nil, {stop}} {
		opts := base
		opts.Stop = stops
		var want []string
		res, err := m.Generate(ctx, "And God said", opts, func(tk Token) error { want = append(want, tk.Text); return nil })
		require.NoError(t, err)

		prompt, err := m.PromptTokens("And God said")
		require.NoError(t, err)
		b := m.NewBatch()
		id, err := b.Add(prompt, opts)
		require.NoError(t, err)
		ts := m.NewTextStream(stops)
		var got []string
		var text strings.Builder
		n := 0
		for range 100 {
			toks, err := b.Step(ctx)
			require.NoError(t, err)
			require.Equal(t, id, toks[0].Seq)
			if m.IsEOS(toks[0].ID) {
				s, _ := ts.Finish()
				got = append(got, s)
				break
			}
			n++
			s, stopped := ts.Add(toks[0].ID)
			if !stopped && n == opts.MaxTokens {
				var rest string
				rest, stopped = ts.Finish()
				s += rest
			}
			got = append(got, s)
			text.WriteString(s)
			if stopped || n == opts.MaxTokens {
				break
			}
		}
		b.Close()
		require.Equal(t, res.Text, text.String(), "stops %q", stops)
		require.Equal(t, strings.Join(want, ""), strings.Join(got, ""))
		if stops != nil {
			require.Equal(t, StopString, res.Reason)
			require.NotContains(t, text.String(), stop)
		}
	}
}

// TestWithStepFaultsFailsTheChosenStepsOnly proves the injected error fails
// every sequence of the chosen step and no other step: the sequences added
// after it generate what they generate without faults.
func TestWithStepFaultsFailsTheChosenStepsOnly(t *testing.T) {
	ctx := context.Background()
	clean, err := LoadFS(demo.FS())
	require.NoError(t, err)
	injected := errors.New("injected")
	m, err := LoadFS(demo.FS(), WithStepFaults(func(step uint64) error {
		switch step {
		case 2:
			return injected
		case 4:
			return &runtime.DeviceLostError{Device: "sim", Cause: errors.New("boom")}
		}
		return nil
	}))
	require.NoError(t, err)
	prompt, err := m.PromptTokens("In the beginning")
	require.NoError(t, err)
	b := m.NewBatch()
	a, _ := b.Add(prompt, GenerateOptions{})
	c, _ := b.Add(prompt, GenerateOptions{Seed: 3, Temperature: 1, TopP: 1})
	_, err = b.Step(ctx) // step 1
	require.NoError(t, err)
	_, err = b.Step(ctx) // step 2
	var be *BatchError
	require.ErrorAs(t, err, &be)
	require.ErrorIs(t, err, injected)
	require.ElementsMatch(t, []SeqID{a, c}, be.Seqs)
	require.Zero(t, b.Len())

	want, err := clean.GenerateTokens(ctx, prompt, GenerateOptions{MaxTokens: 1}, nil)
	require.NoError(t, err)
	got, err := m.GenerateTokens(ctx, prompt, GenerateOptions{MaxTokens: 1}, nil) // step 3
	require.NoError(t, err)
	require.Equal(t, want.Tokens, got.Tokens)
	_, err = m.GenerateTokens(ctx, prompt, GenerateOptions{MaxTokens: 1}, nil) // step 4
	require.ErrorIs(t, err, runtime.ErrDeviceLost)
	require.NoError(t, m.DeviceLost(), "the CPU model has no device to lose")
	require.Nil(t, m.SamplingRouter())
}
