package sampling

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPenaltiesFollowTheirDefinitions computes each penalised logit
// directly, in float64, from the definitions: OpenAI's logit_bias (added)
// and mu[j] - c[j]*frequency - (c[j] > 0)*presence over the generated
// counts, and transformers' RepetitionPenaltyLogitsProcessor (score < 0:
// score*penalty, else score/penalty) over the prompt and the output, bias
// first; Apply must agree to float32 rounding and leave every other logit
// bit for bit as it was.
func TestPenaltiesFollowTheirDefinitions(t *testing.T) {
	const V = 64
	rng := rand.New(rand.NewPCG(7, 11))
	row := make([]float32, V)
	for i := range row {
		row[i] = float32(rng.NormFloat64() * 4)
	}
	row[3], row[9] = 0, float32(math.Inf(-1))
	prompt := []uint32{1, 2, 3, 2, 9, 40}
	generated := []uint32{5, 2, 5, 5, 7, 40}
	for _, p := range []Penalties{
		{LogitBias: map[uint32]float32{5: 100, 6: -100, 11: 0.5}},
		{Presence: 1.5},
		{Frequency: 0.75},
		{Presence: -2, Frequency: 2},
		{Repetition: 1.3},
		{Repetition: 0.8},
		{LogitBias: map[uint32]float32{2: -3, 5: 7}, Presence: 0.5, Frequency: 0.25, Repetition: 1.7},
	} {
		h := NewHistory(prompt)
		count := map[uint32]int{}
		seen := map[uint32]bool{}
		for _, id := range prompt {
			seen[id] = true
		}
		for _, id := range generated {
			h.Add(id)
			count[id]++
			seen[id] = true
		}
		got := append([]float32(nil), row...)
		p.Apply(got, h)
		for j := range V {
			id := uint32(j)
			x := float64(row[j]) + float64(p.LogitBias[id])
			if r := float64(p.Repetition); r != 0 && seen[id] {
				if x < 0 {
					x *= r
				} else {
					x /= r
				}
			}
			c := float64(count[id])
			x -= c * float64(p.Frequency)
			if c > 0 {
				x -= float64(p.Presence)
			}
			touched := seen[id] && p.Repetition != 0 || count[id] > 0 && (p.Presence != 0 || p.Frequency != 0) || p.LogitBias[id] != 0
			switch {
			case !touched:
				require.Equal(t, math.Float32bits(row[j]), math.Float32bits(got[j]), "%+v: token %d has no penalty", p, j)
			case math.IsInf(x, 0):
				require.Equal(t, x, float64(got[j]), "%+v: token %d", p, j)
			default:
				require.InDelta(t, x, float64(got[j]), 1e-5*math.Max(1, math.Abs(x)), "%+v: token %d", p, j)
			}
		}
	}
}

// TestPenaltiesChangeNothingWhenOff: the zero Penalties, repetition 1,
// and zero biases leave the row bit for bit and list nothing active.
func TestPenaltiesChangeNothingWhenOff(t *testing.T) {
	row := []float32{-3, 0, 2.5, float32(math.Inf(-1))}
	h := NewHistory([]uint32{0, 1, 2, 3})
	h.Add(2)
	for _, p := range []Penalties{{}, {Repetition: 1}, {LogitBias: map[uint32]float32{1: 0}}} {
		got := append([]float32(nil), row...)
		p.Apply(got, h)
		require.Equal(t, row, got, "%+v", p)
		require.Empty(t, p.Active(), "%+v", p)
	}
	require.Equal(t, []string{"logit_bias", "presence_penalty", "frequency_penalty", "repetition_penalty"},
		Penalties{LogitBias: map[uint32]float32{1: 2}, Presence: 1, Frequency: -1, Repetition: 1.1}.Active())
}

// TestPenaltiesValidateNamesTheParameter: OpenAI's ranges ([-2, 2] for the
// penalties, [-100, 100] for a bias), a repetition penalty that is finite
// and positive (0: unset), and logit_bias keys within the vocabulary when
// V is given; the error names the parameter and the smallest bad key.
func TestPenaltiesValidateNamesTheParameter(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, p := range []Penalties{
		{Presence: -2, Frequency: 2, Repetition: 0.01, LogitBias: map[uint32]float32{0: -100, 99: 100}},
		{Repetition: 0}, {Repetition: 1e30},
	} {
		require.NoError(t, p.Validate(100), "%+v", p)
	}
	for _, tc := range []struct {
		p     Penalties
		V     int
		name  string
		value string
	}{
		{Penalties{Presence: 2.01}, 0, "presence_penalty", "2.01"},
		{Penalties{Presence: nan}, 0, "presence_penalty", "NaN"},
		{Penalties{Frequency: -2.5}, 0, "frequency_penalty", "-2.5"},
		{Penalties{Repetition: -1}, 0, "repetition_penalty", "-1"},
		{Penalties{Repetition: inf}, 0, "repetition_penalty", "+Inf"},
		{Penalties{Repetition: nan}, 0, "repetition_penalty", "NaN"},
		{Penalties{LogitBias: map[uint32]float32{7: 101, 3: -100.5, 9: 1}}, 0, "logit_bias", "3: -100.5"},
		{Penalties{LogitBias: map[uint32]float32{5: nan}}, 0, "logit_bias", "5: NaN"},
		{Penalties{LogitBias: map[uint32]float32{100: 1, 4000: 1, 2: 1}}, 100, "logit_bias", "100: 1"},
	} {
		err := tc.p.Validate(tc.V)
		var pe *ParameterError
		require.True(t, errors.As(err, &pe), "%+v: %v", tc.p, err)
		require.ErrorIs(t, err, ErrInvalidParameter)
		require.Equal(t, tc.name, pe.Name)
		require.Equal(t, tc.value, pe.Value)
	}
	require.NoError(t, Penalties{LogitBias: map[uint32]float32{4000: 1}}.Validate(0), "without V the keys are not checked")
}
