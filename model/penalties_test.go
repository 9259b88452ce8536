package model

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/sampling"
)

// directPenalties is the test's own computation of the penalised logits,
// in float64 from the definitions: logit_bias added; transformers'
// repetition penalty (score < 0: score*penalty, else score/penalty) on
// every token of the prompt or the output; OpenAI's
// mu[j] - c[j]*frequency - (c[j] > 0)*presence with c the counts in the
// output.
func directPenalties(logits []float32, o GenerateOptions, prompt, generated []uint32) []float32 {
	seen := map[uint32]bool{}
	count := map[uint32]int{}
	for _, id := range prompt {
		seen[id] = true
	}
	for _, id := range generated {
		seen[id] = true
		count[id]++
	}
	out := make([]float32, len(logits))
	for j, l := range logits {
		id := uint32(j)
		x := float64(l) + float64(o.LogitBias[id])
		if r := float64(o.RepetitionPenalty); r != 0 && seen[id] {
			if x < 0 {
				x *= r
			} else {
				x /= r
			}
		}
		c := float64(count[id])
		x -= c * float64(o.FrequencyPenalty)
		if c > 0 {
			x -= float64(o.PresencePenalty)
		}
		out[j] = float32(x)
	}
	return out
}

// replay checks tokens, generated from prompt with o, one draw at a time
// against the CPU forward pass: each step's logits (Session.Forward),
// penalised by directPenalties, drawn by the CPU sampler with the step's
// key, must give the token that was generated.
func replay(t *testing.T, m *Model, prompt []uint32, o GenerateOptions, tokens []uint32) {
	t.Helper()
	ctx := context.Background()
	params, err := samplingParams(o)
	require.NoError(t, err)
	s := m.NewSession()
	defer s.Close()
	logits, err := s.Forward(ctx, prompt, false)
	require.NoError(t, err)
	V := m.Config().VocabSize
	out := make([]uint32, 1)
	for k, tok := range tokens {
		row := directPenalties(logits, o, prompt, tokens[:k])
		require.NoError(t, sampling.Argpartition(out, row, 1, V, []sampling.Params{params}, sampling.KeyFromSeed(o.Seed, uint64(k))))
		require.Equal(t, out[0], tok, "draw %d", k)
		if logits, err = s.Forward(ctx, []uint32{tok}, false); err != nil {
			require.NoError(t, err)
		}
	}
}

// TestPenaltiesMatchADirectComputationOnTheLogits: generation with
// presence, frequency and repetition penalties and a logit bias, greedy
// and sampled, draws at every step exactly the token that the CPU
// forward's logits, penalised by the test's own computation from the
// prompt and the tokens so far, give under the same key; and the
// penalties change what is generated.
func TestPenaltiesMatchADirectComputationOnTheLogits(t *testing.T) {
	m, err := LoadFS(demo.FS())
	require.NoError(t, err)
	ctx := context.Background()
	prompt, err := m.PromptTokens("And God said, Let there be light: and there was light.")
	require.NoError(t, err)
	const n = 24
	for _, tc := range []struct {
		name string
		o    GenerateOptions
	}{
		{"presence and frequency, greedy", GenerateOptions{PresencePenalty: 1.5, FrequencyPenalty: 1}},
		{"presence and frequency, sampled", GenerateOptions{Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: 3, PresencePenalty: 0.5, FrequencyPenalty: 2}},
		{"negative presence, sampled", GenerateOptions{Temperature: 1, TopP: 1, Seed: 4, PresencePenalty: -2}},
		{"repetition, greedy", GenerateOptions{RepetitionPenalty: 1.5}},
		{"repetition below 1, sampled", GenerateOptions{Temperature: 0.7, TopP: 0.9, Seed: 5, RepetitionPenalty: 0.8}},
		{"all with a bias, sampled", GenerateOptions{Temperature: 0.9, TopK: 20, TopP: 1, MinP: 0.02, Seed: 6, PresencePenalty: 0.4, FrequencyPenalty: 0.6, RepetitionPenalty: 1.2,
			LogitBias: map[uint32]float32{prompt[1]: 3, prompt[2]: -5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.MaxTokens = n
			res, err := m.GenerateTokens(ctx, prompt, o, nil)
			require.NoError(t, err)
			require.Len(t, res.Tokens, n, "no EOS in %d tokens: the replay covers them all", n)
			replay(t, m, prompt, o, res.Tokens)

			plain := o
			plain.LogitBias, plain.PresencePenalty, plain.FrequencyPenalty, plain.RepetitionPenalty = nil, 0, 0, 0
			base, err := m.GenerateTokens(ctx, prompt, plain, nil)
			require.NoError(t, err)
			require.NotEqual(t, base.Tokens, res.Tokens, "the penalties changed the tokens")
		})
	}
}

// TestGreedyUnderALargeLogitBiasPicksTheBiasedToken: a bias of 100 on a
// token the model would not pick makes greedy decoding pick it at every
// step; a bias of -100 on the greedy first token makes the first token the
// next best of the CPU logits.
func TestGreedyUnderALargeLogitBiasPicksTheBiasedToken(t *testing.T) {
	m, err := LoadFS(demo.FS())
	require.NoError(t, err)
	ctx := context.Background()
	prompt, err := m.PromptTokens("In the beginning")
	require.NoError(t, err)
	s := m.NewSession()
	defer s.Close()
	logits, err := s.Forward(ctx, prompt, false)
	require.NoError(t, err)
	order := make([]uint32, len(logits))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortStableFunc(order, func(a, b uint32) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return 0
	})
	best, second := order[0], order[1]
	unlikely := order[len(order)/2] // a middling token the model would not pick
	require.False(t, m.IsEOS(unlikely))

	res, err := m.GenerateTokens(ctx, prompt, GenerateOptions{MaxTokens: 6, LogitBias: map[uint32]float32{unlikely: 100}}, nil)
	require.NoError(t, err)
	require.Equal(t, []uint32{unlikely, unlikely, unlikely, unlikely, unlikely, unlikely}, res.Tokens)

	res, err = m.GenerateTokens(ctx, prompt, GenerateOptions{MaxTokens: 1, LogitBias: map[uint32]float32{best: -100}}, nil)
	require.NoError(t, err)
	require.Equal(t, []uint32{second}, res.Tokens)
}

// TestPenaltiesInABatchAreEachSequencesOwn: sequences with different
// penalties (and one with none) stepped together through the CPU's
// batched decode, with prompts fed whole or in slices, each get the tokens
// they get alone: each sequence's history is its own, its whole prompt
// counts for the repetition penalty from the first draw.
func TestPenaltiesInABatchAreEachSequencesOwn(t *testing.T) {
	m, err := LoadFS(demo.FS())
	require.NoError(t, err)
	seqs := []promptedSeq{
		{"And God said", GenerateOptions{Temperature: 0.8, TopP: 1, Seed: 1, PresencePenalty: 1, FrequencyPenalty: 1}},
		{"In the beginning God created the heaven and the earth.", GenerateOptions{RepetitionPenalty: 1.4}},
		{"And the earth was without form", GenerateOptions{Temperature: 0.8, TopP: 1, Seed: 1}},
		{"Let there be light", GenerateOptions{Temperature: 1, TopK: 50, TopP: 1, Seed: 2, RepetitionPenalty: 1.3, FrequencyPenalty: 0.5, LogitBias: map[uint32]float32{7: 2}}},
	}
	const n = 12
	budgets := []int{0, 5}
	alone, batched := aloneAndBatched(t, m, seqs, n, budgets)
	want := make([][]uint32, len(seqs))
	for i, res := range alone {
		require.Len(t, res.Tokens, n)
		want[i] = res.Tokens
	}
	for k, got := range batched {
		ids := make([][]uint32, len(seqs))
		for i, toks := range got {
			for _, tk := range toks {
				ids[i] = append(ids[i], tk.ID)
			}
		}
		require.Equal(t, want, ids, "prefill budget %d", budgets[k])
	}
}

// TestGPUBackendRefusesPenaltiesByName: on the GPU backend (the simulated
// device), which samples on the device, each active penalty is an
// *UnsupportedOptionError naming it and the backend, from CheckOptions,
// Generate and Batch.Add alike; penalties that ask for nothing (0, a
// repetition penalty of 1, a zero bias) are accepted. On the CPU a
// logit_bias key outside the vocabulary is a ParameterError naming
// logit_bias.
func TestGPUBackendRefusesPenaltiesByName(t *testing.T) {
	g, err := LoadFS(demo.FS(), WithDevice(simDevice(t, nil)))
	require.NoError(t, err)
	defer g.Close()
	ctx := context.Background()
	prompt := []uint32{1, 2, 3}
	for _, tc := range []struct {
		name string
		o    GenerateOptions
	}{
		{"logit_bias", GenerateOptions{LogitBias: map[uint32]float32{5: 1}}},
		{"presence_penalty", GenerateOptions{PresencePenalty: 0.5}},
		{"frequency_penalty", GenerateOptions{FrequencyPenalty: -0.5}},
		{"repetition_penalty", GenerateOptions{RepetitionPenalty: 1.1}},
	} {
		var ue *UnsupportedOptionError
		err := g.CheckOptions(tc.o)
		require.True(t, errors.As(err, &ue), "%s: %v", tc.name, err)
		require.Equal(t, tc.name, ue.Option)
		require.Equal(t, g.Backend(), ue.Backend)
		require.Contains(t, ue.Backend, "gpu")
		require.ErrorIs(t, err, ErrUnsupportedOption)
		_, err = g.GenerateTokens(ctx, prompt, tc.o, nil)
		require.True(t, errors.As(err, &ue), "Generate: %v", err)
		require.Equal(t, tc.name, ue.Option)
		b := g.NewBatch()
		_, err = b.Add(prompt, tc.o)
		b.Close()
		require.True(t, errors.As(err, &ue), "Batch.Add: %v", err)
	}
	res, err := g.GenerateTokens(ctx, prompt, GenerateOptions{MaxTokens: 2, RepetitionPenalty: 1, LogitBias: map[uint32]float32{5: 0}}, nil)
	require.NoError(t, err, "penalties that ask for nothing run on the GPU")
	require.Len(t, res.Tokens, 2)

	c, err := LoadFS(demo.FS())
	require.NoError(t, err)
	V := c.Config().VocabSize
	err = c.CheckOptions(GenerateOptions{LogitBias: map[uint32]float32{uint32(V): 1}})
	var pe *sampling.ParameterError
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, "logit_bias", pe.Name)
	require.ErrorIs(t, err, ErrOptions)
	require.NoError(t, c.CheckOptions(GenerateOptions{LogitBias: map[uint32]float32{uint32(V - 1): 1}, PresencePenalty: 2, FrequencyPenalty: -2, RepetitionPenalty: 3}))
}
