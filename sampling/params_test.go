package sampling

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every parameter outside its range is an error that errors.Is
// ErrInvalidParameter, names the parameter and the value, and is returned
// by every entry point before anything is written.
func TestInvalidParametersAreNamedErrors(t *testing.T) {
	inf := float32(math.Inf(1))
	cases := []struct {
		p     Params
		name  string
		value string
	}{
		{withP(-1, 0, 1, 0), "temperature", "-1"},
		{withP(nan, 0, 1, 0), "temperature", "NaN"},
		{withP(inf, 0, 1, 0), "temperature", "+Inf"},
		{withP(1, -1, 1, 0), "top_k", "-1"},
		{withP(1, 0, 0, 0), "top_p", "0"},
		{withP(1, 0, -0.5, 0), "top_p", "-0.5"},
		{withP(1, 0, 1.5, 0), "top_p", "1.5"},
		{withP(1, 0, nan, 0), "top_p", "NaN"},
		{withP(1, 0, 1, -0.1), "min_p", "-0.1"},
		{withP(1, 0, 1, 1.5), "min_p", "1.5"},
		{withP(1, 0, 1, nan), "min_p", "NaN"},
		{Params{}, "top_p", "0"}, // the zero value is not valid
	}
	logits := []float32{1, 2, 3, 4, 5, 6}
	for _, c := range cases {
		check := func(err error, row int) {
			t.Helper()
			require.ErrorIs(t, err, ErrInvalidParameter, "%+v", c.p)
			var pe *ParameterError
			require.True(t, errors.As(err, &pe))
			require.Equal(t, c.name, pe.Name)
			require.Equal(t, row, pe.Row)
			require.Contains(t, err.Error(), c.name+" "+c.value)
		}
		check(c.p.Validate(), -1)
		tok := []uint32{77, 77}
		res := RejectionResult{tok, make([]uint32, 2), make([]uint32, 2)}
		check(Argpartition(tok, logits, 2, 3, []Params{DefaultParams(), c.p}, Key{}), 1)
		check(RejectionCPU(res, logits, 2, 3, []Params{DefaultParams(), c.p}, Key{}, MaxRounds), 1)
		check(PackParams(make([]float32, 8), []Params{c.p}, 2, 3), -1)
		if c.name == "temperature" {
			check(GumbelMaxCPU(tok, logits, 2, 3, c.p.Temperature, Key{}), -1)
			check(Categorical(tok, logits, 2, 3, []float32{1, c.p.Temperature}, Key{}), 1)
		}
		require.Equal(t, []uint32{77, 77}, tok, "nothing is written on a parameter error")
	}
	res := RejectionResult{make([]uint32, 1), make([]uint32, 1), make([]uint32, 1)}
	for _, mr := range []int{0, -1, 33} {
		err := RejectionCPU(res, []float32{1}, 1, 1, []Params{DefaultParams()}, Key{}, mr)
		require.ErrorIs(t, err, ErrInvalidParameter)
		require.Contains(t, err.Error(), "max_rounds")
	}
	// Valid edges.
	for _, p := range []Params{withP(0, 0, 1, 0), withP(1, 1, 1e-9, 1), withP(1e30, 1000, 1, 0)} {
		require.NoError(t, p.Validate())
	}
}

// Shapes that do not fit are ErrShape errors naming the mismatch.
func TestShapeErrors(t *testing.T) {
	tok := make([]uint32, 2)
	l := make([]float32, 6)
	p := []Params{DefaultParams()}
	cases := []struct {
		err  error
		text string
	}{
		{GumbelMaxCPU(tok, l, 0, 3, 1, Key{}), "B = 0"},
		{GumbelMaxCPU(tok, l, 2, 0, 1, Key{}), "V = 0"},
		{GumbelMaxCPU(tok, l, 2, 4, 1, Key{}), "len(logits) = 6"},
		{GumbelMaxCPU(tok[:1], l, 2, 3, 1, Key{}), "len(tokens) = 1"},
		{Categorical(tok, l, 2, 3, []float32{1, 1, 1}, Key{}), "len(temperatures) = 3"},
		{Argpartition(tok, l, 2, 3, []Params{p[0], p[0], p[0]}, Key{}), "len(params) = 3"},
		{RejectionCPU(RejectionResult{tok, tok[:1], tok}, l, 2, 3, p, Key{}, 1), "len(OK) = 1"},
		{PackParams(make([]float32, 7), p, 2, 3), "len(dst) = 7"},
		{PackParams(make([]float32, 8), p, 2, MaxKernelVocab+1), "V = 16777217"},
	}
	for _, c := range cases {
		require.ErrorIs(t, c.err, ErrShape)
		require.Contains(t, c.err.Error(), c.text)
	}
}

// PackParams writes the kernel's [B,4] layout with top_k 0 when it is off
// or k >= V; GumbelInvTemp is 1/T, or 0 (greedy) for T = 0 and for T whose
// reciprocal overflows.
func TestPackParamsAndInvTemp(t *testing.T) {
	dst := make([]float32, 12)
	require.NoError(t, PackParams(dst, []Params{withP(0.5, 3, 0.9, 0.1), withP(1, 10, 1, 0), withP(0, 12, 0.2, 1)}, 3, 10))
	require.Equal(t, []float32{0.5, 3, 0.9, 0.1, 1, 0, 1, 0, 0, 0, 0.2, 1}, dst)
	require.Equal(t, float32(2), GumbelInvTemp(0.5))
	require.Equal(t, float32(0), GumbelInvTemp(0))
	require.Equal(t, float32(0), GumbelInvTemp(1e-45))
	require.Equal(t, float32(1)/float32(0.7), GumbelInvTemp(0.7))
}
