package model

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/sampling"
)

// logSoftmax64 is the test's own log-softmax of a row of logits, in float64.
func logSoftmax64(logits []float32) []float64 {
	m := math.Inf(-1)
	for _, x := range logits {
		m = math.Max(m, float64(x))
	}
	var s float64
	for _, x := range logits {
		s += math.Exp(float64(x) - m)
	}
	out := make([]float64, len(logits))
	for i, x := range logits {
		out[i] = float64(x) - m - math.Log(s)
	}
	return out
}

// TestLogprobsAreTheLogSoftmaxOfTheForwardLogits: for greedy and sampled
// generation, with and without penalties, each generated token's logprob is
// within 1e-4 of the log-softmax of the CPU forward's logits at its place
// (Session.Forward over the prompt and the tokens before it), untouched by
// the temperature, the filters and the penalties; the top list is the k
// best of those logits, best first, each within 1e-4, and their
// probabilities sum to at most 1; greedy decoding picks the top-1; the
// emitted tokens carry the same logprobs as the Result.
func TestLogprobsAreTheLogSoftmaxOfTheForwardLogits(t *testing.T) {
	m, err := LoadFS(demo.FS())
	require.NoError(t, err)
	ctx := context.Background()
	prompt, err := m.PromptTokens("And God said, Let there be light")
	require.NoError(t, err)
	const n = 16
	for _, tc := range []struct {
		name string
		o    GenerateOptions
	}{
		{"greedy, top 5", GenerateOptions{Logprobs: true, TopLogprobs: 5}},
		{"greedy, no top", GenerateOptions{Logprobs: true}},
		{"sampled, top 20", GenerateOptions{Temperature: 0.7, TopK: 40, TopP: 0.9, Seed: 7, Logprobs: true, TopLogprobs: 20}},
		{"sampled with penalties, top 3", GenerateOptions{Temperature: 1.3, TopP: 1, Seed: 8, PresencePenalty: 1, RepetitionPenalty: 1.3,
			LogitBias: map[uint32]float32{prompt[1]: 4}, Logprobs: true, TopLogprobs: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.MaxTokens = n
			var emitted []TokenLogprobs
			res, err := m.GenerateTokens(ctx, prompt, o, func(tk Token) error {
				require.NotNil(t, tk.Logprobs)
				emitted = append(emitted, *tk.Logprobs)
				return nil
			})
			require.NoError(t, err)
			require.Len(t, res.Tokens, n)
			require.Len(t, res.Logprobs, n)
			require.Equal(t, res.Logprobs, emitted)

			s := m.NewSession()
			defer s.Close()
			logits, err := s.Forward(ctx, prompt, false)
			require.NoError(t, err)
			for k, tok := range res.Tokens {
				want := logSoftmax64(logits)
				got := res.Logprobs[k]
				require.InDelta(t, want[tok], float64(got.Logprob), 1e-4, "token %d", k)
				require.Len(t, got.Top, o.TopLogprobs)
				order := make([]int, len(want))
				for i := range order {
					order[i] = i
				}
				slices.SortStableFunc(order, func(a, b int) int { return -cmpF(want[a], want[b]) })
				var mass float64
				for i, e := range got.Top {
					require.Equal(t, uint32(order[i]), e.ID, "token %d, top %d", k, i)
					require.InDelta(t, want[order[i]], float64(e.Logprob), 1e-4)
					mass += math.Exp(float64(e.Logprob))
				}
				require.LessOrEqual(t, mass, 1.0)
				if o.Temperature == 0 {
					require.Equal(t, uint32(order[0]), tok, "greedy picks the top-1")
				}
				if logits, err = s.Forward(ctx, []uint32{tok}, false); err != nil {
					require.NoError(t, err)
				}
			}
		})
	}
	res, err := m.GenerateTokens(ctx, prompt, GenerateOptions{MaxTokens: 2}, nil)
	require.NoError(t, err)
	require.Nil(t, res.Logprobs, "no logprobs unless asked for")
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestLogprobsInABatchAreEachSequencesOwn: sequences stepped together
// through the CPU's batched decode, prompts fed whole or in slices, one
// without logprobs, each get the logprobs they get alone (the same top
// ids, values within 1e-5: the batched pass rounds differently), and none
// for the one that did not ask.
func TestLogprobsInABatchAreEachSequencesOwn(t *testing.T) {
	m, err := LoadFS(demo.FS())
	require.NoError(t, err)
	seqs := []promptedSeq{
		{"And God said", GenerateOptions{Temperature: 0.8, TopP: 1, Seed: 1, Logprobs: true, TopLogprobs: 4}},
		{"In the beginning God created the heaven and the earth.", GenerateOptions{RepetitionPenalty: 1.4, Logprobs: true}},
		{"And the earth was without form", GenerateOptions{Temperature: 0.8, TopP: 1, Seed: 1}},
		{"Let there be light", GenerateOptions{Logprobs: true, TopLogprobs: 2}},
	}
	const n = 8
	budgets := []int{0, 5}
	alone, batched := aloneAndBatched(t, m, seqs, n, budgets)
	for _, res := range alone {
		require.Len(t, res.Tokens, n)
	}
	for k, got := range batched {
		budget := budgets[k]
		for i, toks := range got {
			var lps []TokenLogprobs
			for _, tk := range toks {
				require.Equal(t, seqs[i].o.Logprobs, tk.Logprobs != nil)
				if tk.Logprobs != nil {
					lps = append(lps, *tk.Logprobs)
				}
			}
			// The batched decode's logits are the single sequence's within
			// float32 rounding: the same ids, the values within 1e-5.
			require.Len(t, lps, len(alone[i].Logprobs), "prefill budget %d, sequence %d", budget, i)
			for k, want := range alone[i].Logprobs {
				require.InDelta(t, want.Logprob, lps[k].Logprob, 1e-5)
				require.Len(t, lps[k].Top, len(want.Top))
				for j, e := range want.Top {
					require.Equal(t, e.ID, lps[k].Top[j].ID, "prefill budget %d, sequence %d, token %d", budget, i, k)
					require.InDelta(t, e.Logprob, lps[k].Top[j].Logprob, 1e-5)
				}
			}
		}
	}
}

// TestGPUBackendRefusesLogprobsByName: on the GPU backend (the simulated
// device), whose logits never leave the device, logprobs are an
// *UnsupportedOptionError naming "logprobs" and the backend, from
// CheckOptions, Generate and Batch.Add alike; logprobs false runs. A
// top_logprobs outside 0..20, or without logprobs, is a ParameterError
// naming top_logprobs on any backend.
func TestGPUBackendRefusesLogprobsByName(t *testing.T) {
	g, err := LoadFS(demo.FS(), WithDevice(simDevice(t, nil)))
	require.NoError(t, err)
	defer g.Close()
	ctx := context.Background()
	prompt := []uint32{1, 2, 3}
	for _, o := range []GenerateOptions{{Logprobs: true}, {Logprobs: true, TopLogprobs: 5}} {
		var ue *UnsupportedOptionError
		err := g.CheckOptions(o)
		require.True(t, errors.As(err, &ue), "%v", err)
		require.Equal(t, "logprobs", ue.Option)
		require.Equal(t, g.Backend(), ue.Backend)
		require.ErrorIs(t, err, ErrUnsupportedOption)
		_, err = g.GenerateTokens(ctx, prompt, o, nil)
		require.True(t, errors.As(err, &ue), "Generate: %v", err)
		b := g.NewBatch()
		_, err = b.Add(prompt, o)
		b.Close()
		require.True(t, errors.As(err, &ue), "Batch.Add: %v", err)
	}
	res, err := g.GenerateTokens(ctx, prompt, GenerateOptions{MaxTokens: 2}, nil)
	require.NoError(t, err)
	require.Len(t, res.Tokens, 2)

	c, err := LoadFS(demo.FS())
	require.NoError(t, err)
	for _, o := range []GenerateOptions{{Logprobs: true, TopLogprobs: 21}, {Logprobs: true, TopLogprobs: -1}, {TopLogprobs: 2}} {
		err := c.CheckOptions(o)
		var pe *sampling.ParameterError
		require.True(t, errors.As(err, &pe), "%+v: %v", o, err)
		require.Equal(t, "top_logprobs", pe.Name)
		require.ErrorIs(t, err, ErrOptions)
	}
	require.NoError(t, c.CheckOptions(GenerateOptions{Logprobs: true, TopLogprobs: 20}))
}
