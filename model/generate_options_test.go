package model

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTopPZeroIsNotOff proves top-p's off is 1 and an explicit 0 is an
// error naming the fix when sampling, while the zero GenerateOptions
// (greedy, where no filter applies) stays valid.
func TestTopPZeroIsNotOff(t *testing.T) {
	m, _ := scriptModel("abc", 100, true)
	_, err := m.Generate(context.Background(), "p", GenerateOptions{Temperature: 0.8, TopP: 0, Seed: 1}, nil)
	require.ErrorIs(t, err, ErrOptions)
	require.ErrorContains(t, err, "off is 1")
	require.ErrorIs(t, GenerateOptions{Temperature: 1}.Validate(), ErrOptions)

	for _, ok := range []GenerateOptions{{}, {Temperature: 0.8, TopP: 1}, {Temperature: 0.8, TopP: 0.5}, DefaultGenerateOptions()} {
		require.NoError(t, ok.Validate(), "%+v", ok)
		_, err := m.Generate(context.Background(), "p", ok, nil)
		require.NoError(t, err, "%+v", ok)
	}
	// A bad value other than 0 gets no hint about 0.
	err = GenerateOptions{Temperature: 0.8, TopP: 1.5}.Validate()
	require.ErrorIs(t, err, ErrOptions)
	require.NotContains(t, err.Error(), "off is 1")
}

// TestDefaultGenerateOptions pins the defaults examples/generate's flags
// take from it.
func TestDefaultGenerateOptions(t *testing.T) {
	require.Equal(t, GenerateOptions{MaxTokens: 200, Temperature: 0.8, TopK: 40, TopP: 0.95}, DefaultGenerateOptions())
}

// TestGenerateOptionsValidateWithoutAModel proves the model-independent
// checks run on their own.
func TestGenerateOptionsValidateWithoutAModel(t *testing.T) {
	require.ErrorIs(t, GenerateOptions{MaxTokens: -1}.Validate(), ErrOptions)
	require.ErrorIs(t, GenerateOptions{Stop: []string{"x", ""}}.Validate(), ErrOptions)
	require.ErrorIs(t, GenerateOptions{Temperature: -1, TopP: 1}.Validate(), ErrOptions)
	require.ErrorIs(t, GenerateOptions{TopK: -3}.Validate(), ErrOptions)
	require.NoError(t, GenerateOptions{MaxTokens: 5, Stop: []string{"\n"}}.Validate())
}

// TestDecodeRateWhenCutShort proves a generation ended by cancel or by an
// error still reports the decode steps it ran and their rate.
func TestDecodeRateWhenCutShort(t *testing.T) {
	m, _ := scriptModel("abcdefgh", 100, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	res, err := m.Generate(ctx, "p", GenerateOptions{}, func(Token) error {
		if n++; n == 4 {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 3, res.DecodeSteps)
	require.Positive(t, res.DecodeDuration)
	require.Positive(t, res.DecodeTokensPerSecond())

	boom := errors.New("client went away")
	n = 0
	res, err = m.Generate(context.Background(), "p", GenerateOptions{}, func(Token) error {
		if n++; n == 3 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, 2, res.DecodeSteps)
	require.Positive(t, res.DecodeTokensPerSecond())
}
