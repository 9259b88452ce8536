package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/internal/cli"
	"github.com/hipgo/hipgo/mlx"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/chat"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/runtime"
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
	require.Regexp(t, `prompt: \d+ tokens, [0-9.]+ tokens/s; decode: \d+ tokens, [0-9.]+ tokens/s; stopped: (max_tokens|eos)\n$`, errOut.String())

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
// kjvWords are the commonest words of the King James Bible. A model that
// learned the corpus writes mostly these; an untrained one writes random
// token pieces.
var kjvWords = strings.Fields(`the and of to that in he shall unto for i his a lord they be is him not them
it with all thou thy was god which my me said but ye their have will thee from as are when this out were
upon man by you israel king up there hath then people came had house into her come one we children before
your also day land men let go she no o or saith if an so made at our now us even what every hand who son
sons father over against may do say did give given these those went days earth heaven behold things`)

// TestDemoModel runs the program with no -model: the embedded demo model
// loads, generates greedily, and writes text in the corpus's style (most
// words among the corpus's commonest), with the speeds on stderr.
func TestDemoModel(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-n", "60", "-temp", "0", "-prompt", "And God said"}, &out, &errOut))
	text := strings.ToLower(out.String())
	require.True(t, strings.HasPrefix(text, "and god said"), "the prompt is echoed first: %q", text)
	common := map[string]bool{}
	for _, w := range kjvWords {
		common[w] = true
	}
	words := strings.FieldsFunc(text, func(r rune) bool { return !('a' <= r && r <= 'z') })
	hits := 0
	for _, w := range words {
		if common[w] {
			hits++
		}
	}
	require.GreaterOrEqual(t, len(words), 30, "%q", text)
	require.Greater(t, float64(hits)/float64(len(words)), 0.5, "too few common KJV words in %q", text)
	require.Contains(t, errOut.String(), "loaded the demo model")
	require.Contains(t, errOut.String(), "decode: ")
	t.Logf("%d/%d words among the corpus's commonest: %q", hits, len(words), out.String())
}

// TestRunChat proves -chat formats -system and -prompt with the model's chat
// template, prints only the reply (what model.Chat returns for the same
// messages and seed), and that -chat on a model without a template, or
// -system without -chat, is a clear error.
func TestRunChat(t *testing.T) {
	src, err := os.ReadFile("../../model/chat/testdata/templates/smollm2.jinja")
	require.NoError(t, err)
	s := modeltest.SmolLMTiny()
	s.ChatTokens = []string{"<|im_start|>", "<|im_end|>"}
	s.ChatTemplate = string(src)
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, s))
	var out, errOut bytes.Buffer
	ctx := context.Background()
	args := []string{"-model", dir, "-chat", "-system", "Be brief.", "-prompt", "Hi", "-n", "8", "-temp", "0", "-seed", "1"}
	require.NoError(t, run(ctx, args, &out, &errOut))
	m, err := model.Load(dir)
	require.NoError(t, err)
	res, err := m.Chat(ctx, []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}},
		model.GenerateOptions{MaxTokens: 8, TopK: 40, TopP: 0.95, Seed: 1}, nil)
	require.NoError(t, err)
	require.Equal(t, res.Text+"\n", out.String(), "only the reply is printed")
	require.NotContains(t, out.String(), "Hi")
	want, err := m.ChatTemplate().Render([]chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}, true)
	require.NoError(t, err)
	require.Equal(t, len(m.Tokenizer().Encode(want, false)), res.PromptTokens)
	require.Regexp(t, `prompt: \d+ tokens`, errOut.String())
	t.Logf("reply %q (%s)", res.Text, res.Reason)

	plain := t.TempDir()
	require.NoError(t, modeltest.Write(plain, modeltest.SmolLMTiny()))
	err = run(ctx, []string{"-model", plain, "-chat", "-prompt", "Hi"}, &out, &errOut)
	require.ErrorIs(t, err, model.ErrNoChatTemplate)
	require.ErrorContains(t, err, "drop -chat")
	require.ErrorContains(t, run(ctx, []string{"-model", dir, "-system", "x"}, &out, &errOut), "-system needs -chat")
	if demoModel != nil {
		require.ErrorIs(t, run(ctx, []string{"-chat", "-n", "1"}, &out, &errOut), model.ErrNoChatTemplate)
	}
}

// TestDeviceFlag proves -device cpu runs on the CPU, -device auto without a
// GPU says in one line why it runs on the CPU, -device gpu without one is
// an error naming why, and another value is an option error.
func TestDeviceFlag(t *testing.T) {
	if _, err := runtime.Open(context.Background()); err == nil {
		t.Skip("this machine has a GPU: the no-GPU paths cannot be shown here")
	}
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, modeltest.SmolLMTiny()))
	ctx := context.Background()
	args := func(device string) []string {
		return []string{"-model", dir, "-prompt", "Amen", "-n", "3", "-seed", "1", "-device", device}
	}
	var out, errOut bytes.Buffer
	require.NoError(t, run(ctx, args("cpu"), &out, &errOut))
	require.Contains(t, errOut.String(), "on the CPU, ")
	require.NotContains(t, errOut.String(), "running on the CPU:")

	out.Reset()
	errOut.Reset()
	require.NoError(t, run(ctx, args("auto"), &out, &errOut))
	require.Regexp(t, `(?m)^running on the CPU: no usable GPU: \[.*\]$`, errOut.String())

	err := run(ctx, args("gpu"), &out, &errOut)
	require.ErrorIs(t, err, model.ErrNoGPU)
	require.ErrorIs(t, err, runtime.ErrNoDevice)
	require.ErrorIs(t, run(ctx, args("tpu"), &out, &errOut), model.ErrOptions)
	if mlx.Load() != nil {
		require.ErrorIs(t, run(ctx, args("mlx"), &out, &errOut), model.ErrNoMLX)
	}
}

// TestRunChecksFlagsFirst proves bad flags are errors before the model
// loads and before anything reaches stdout, and that a flag the flag
// package rejected is reported once (by it), not again by main.
func TestRunChecksFlagsFirst(t *testing.T) {
	ctx := context.Background()
	missing := t.TempDir() + "/no-model" // loading it would fail with ErrConfig
	for _, args := range [][]string{
		{"-top-p", "0"},
		{"-top-p", "0", "-temp", "0"},
		{"-top-p", "1.5"},
		{"-threads", "-2"},
		{"-seed", "-5"},
		{"-n", "-1"},
		{"-temp", "-1"},
		{"-top-k", "-1"},
	} {
		var out, errOut bytes.Buffer
		err := run(ctx, append([]string{"-model", missing}, args...), &out, &errOut)
		require.ErrorIs(t, err, model.ErrOptions, "%v", args)
		require.NotErrorIs(t, err, model.ErrConfig, "%v: the model loaded before the flags were checked", args)
		require.Empty(t, out.String(), "%v", args)
	}

	var out, errOut bytes.Buffer
	err := run(ctx, []string{"-n", "abc"}, &out, &errOut)
	var ue cli.UsageError
	require.ErrorAs(t, err, &ue) // main exits 2 without printing it again
	require.Equal(t, 1, strings.Count(errOut.String(), `invalid value "abc" for flag -n`), errOut.String())
	require.ErrorAs(t, run(ctx, []string{"-stop", ""}, &out, &errOut), &ue)
}

// TestRunEchoesOnlyAnAcceptedPrompt proves a prompt the model rejects (longer
// than its context) is an error and is not echoed.
func TestRunEchoesOnlyAnAcceptedPrompt(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, modeltest.SmolLMTiny()))
	var out, errOut bytes.Buffer
	long := strings.Repeat("Amen ", 20000)
	var ce *model.ContextError
	require.ErrorAs(t, run(context.Background(), []string{"-model", dir, "-prompt", long, "-n", "4"}, &out, &errOut), &ce)
	require.Empty(t, out.String())
	require.NotContains(t, errOut.String(), long)
}

// TestRunStop proves -stop ends the text before the stop string: a greedy
// run's text cut at a string from its middle.
func TestRunStop(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, modeltest.SmolLMTiny()))
	args := []string{"-model", dir, "-prompt", "Amen", "-n", "24", "-temp", "0", "-seed", "1"}
	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), args, &out, &errOut))
	text := strings.TrimSuffix(strings.TrimPrefix(out.String(), "Amen"), "\n")
	require.GreaterOrEqual(t, len(text), 8, "the greedy run is too short to cut")
	stop := text[len(text)/2 : len(text)/2+2]
	want := text[:strings.Index(text, stop)]

	out.Reset()
	errOut.Reset()
	require.NoError(t, run(context.Background(), append(args, "-stop", "never-appears", "-stop", stop), &out, &errOut))
	require.Equal(t, "Amen"+want+"\n", out.String())
	require.Contains(t, errOut.String(), "stopped: stop")
}

// TestUsageShowsDefaultsAsWritten: -h prints the float32 defaults as they
// are written (0.95, not 0.949999988079071), and each parses back to the
// default itself.
func TestUsageShowsDefaultsAsWritten(t *testing.T) {
	var out, errOut bytes.Buffer
	require.ErrorIs(t, run(context.Background(), []string{"-h"}, &out, &errOut), flag.ErrHelp)
	usage := errOut.String()
	require.Contains(t, usage, "(default 0.95)")
	require.Contains(t, usage, "(default 0.8)")
	require.NotContains(t, usage, "0.9499")
	require.NotContains(t, usage, "0.8000")
	for _, f := range []float32{0.95, 0.8, 0.05, 1e-7, 0.1} {
		require.Equal(t, f, float32(decimal(f)))
	}
}
