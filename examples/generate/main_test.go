package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/stretchr/testify/require"
)

// TestRunStreamsAndReports proves the command loads a checkpoint directory,
// writes the prompt and the generated text to stdout, and reports load,
// prompt and decode speeds and the stop reason on stderr.
func TestRunStreamsAndReports(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, modeltest.SmolLMTiny()))
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-model", dir, "-prompt", "Amen", "-n", "6", "-temp", "0", "-seed", "1"}, &out, &errOut)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out.String(), "Amen"), out.String())
	require.Contains(t, errOut.String(), "loaded "+dir)
	require.Regexp(t, `prompt: \d+ tokens, [0-9.]+ tokens/s; decode: \d+ tokens, [0-9.]+ tokens/s; stopped: (max_tokens|eos); seed 1`, errOut.String())

	// The same flags and seed give the same text, as the greedy contract says.
	m, err := model.Load(dir)
	require.NoError(t, err)
	res, err := m.Generate(context.Background(), "Amen", model.GenerateOptions{MaxTokens: 6, TopK: 40, TopP: 0.95, Seed: 1}, nil)
	require.NoError(t, err)
	require.Equal(t, "Amen"+res.Text+"\n", out.String())
}

// TestRunErrors proves bad flags and bad models are errors, not panics.
func TestRunErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	ctx := context.Background()
	require.ErrorIs(t, run(ctx, []string{"-model", t.TempDir()}, &out, &errOut), model.ErrConfig)
	require.Error(t, run(ctx, []string{"-n", "x"}, &out, &errOut))
	require.Error(t, run(ctx, []string{"stray"}, &out, &errOut))
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, modeltest.SmolLMTiny()))
	require.ErrorIs(t, run(ctx, []string{"-model", dir, "-top-p", "2"}, &out, &errOut), model.ErrOptions)
	if demoModel == nil {
		require.ErrorContains(t, run(ctx, nil, &out, &errOut), "no demo model")
	}
}

// TestProgressBar proves the bar draws only for large loads on a terminal,
// redraws only when the percentage changes, and ends its line.
func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	b := &progressBar{w: &buf, percent: -1, enabled: true}
	b.update(1, minBarBytes-1) // small: nothing
	require.Empty(t, buf.String())
	total := int64(minBarBytes) * 2
	b.update(total/2, total)
	b.update(total/2+1, total) // same percentage: no redraw
	b.update(total, total)
	b.done()
	require.Equal(t, 2, strings.Count(buf.String(), "\r"))
	require.Contains(t, buf.String(), " 50% ")
	require.True(t, strings.HasSuffix(buf.String(), "100% 128/128 MB\n"))

	buf.Reset()
	off := newProgressBar(&buf) // a buffer is not a terminal
	off.update(total, total)
	off.done()
	require.Empty(t, buf.String())
}

// TestDemoModel proves the default run (no -model) generates text from the
// embedded demo model and exits cleanly.
func TestDemoModel(t *testing.T) {
	if demoModel == nil {
		t.Skip("model/demo is not in this build yet (demo.go has the hipgo_demo build tag until it lands)")
	}
	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-n", "20", "-seed", "1"}, &out, &errOut))
	require.Greater(t, len(strings.TrimSpace(out.String())), len("And God said"))
	require.Contains(t, errOut.String(), "loaded the demo model")
	require.Contains(t, errOut.String(), "decode: ")
}
