package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/chat"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/stretchr/testify/require"
)

// tinyModel writes the tiny test checkpoint to a temporary directory.
func tinyModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, modeltest.SmolLMTiny()))
	return dir
}

// apiNames are the library's names for the options (GenerateOptions
// fields, sampling's parameter names): a CLI error never uses them.
var apiNames = regexp.MustCompile(`MaxTokens|Temperature|temperature|TopK|top_k|TopP|top_p|MinP|min_p|DefaultGenerateOptions|Threads|Seed`)

// TestFlagErrorsNameTheFlag proves every rejected value is reported with
// the flag as the user typed it (-n, -temp, -top-p...) and the value, never
// with an API field name, before the model loads.
func TestFlagErrorsNameTheFlag(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-model") // loading it would be an ErrConfig
	for _, tc := range []struct {
		args []string
		want string // the error's start
	}{
		{[]string{"-n", "-1"}, "-n -1: "},
		{[]string{"-temp", "-1"}, "-temp -1: "},
		{[]string{"-temp", "NaN"}, "-temp NaN: "},
		{[]string{"-temp", "+Inf"}, "-temp +Inf: "},
		{[]string{"-top-k", "-3"}, "-top-k -3: "},
		{[]string{"-top-p", "0"}, "-top-p 0: "},
		{[]string{"-top-p", "1.5"}, "-top-p 1.5: "},
		{[]string{"-top-p", "NaN"}, "-top-p NaN: "},
		{[]string{"-min-p", "2"}, "-min-p 2: "},
		{[]string{"-min-p", "-0.1"}, "-min-p -0.1: "},
		{[]string{"-threads", "-2"}, "-threads -2: "},
		{[]string{"-seed", "-5"}, "-seed -5: "},
		{[]string{"-device", "tpu"}, `-device "tpu": `},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"-model", missing}, tc.args...), &out, &errOut)
		require.ErrorIs(t, err, model.ErrOptions, "%v", tc.args)
		require.NotErrorIs(t, err, model.ErrConfig, "%v: the model loaded before the flags were checked", tc.args)
		require.True(t, strings.HasPrefix(err.Error(), tc.want), "%v: %q does not start with %q", tc.args, err, tc.want)
		require.NotRegexp(t, apiNames, err.Error(), "%v", tc.args)
		require.Empty(t, out.String())
	}
}

// TestFloatFlagsAreCheckedBeforeNarrowing proves a float flag is checked as
// the float64 the user typed and then as the float32 the model takes: a
// temperature that overflows float32 and a top-p that rounds to 0 are
// errors naming the flag and its value as typed, not the library's
// complaint about +Inf or TopP 0.
func TestFloatFlagsAreCheckedBeforeNarrowing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-model")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-temp", "1e308"}, "-temp 1e+308: "},
		{[]string{"-temp", "3.5e38"}, "-temp 3.5e+38: "},
		{[]string{"-top-p", "1e-50"}, "-top-p 1e-50: "},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"-model", missing}, tc.args...), &out, &errOut)
		require.ErrorIs(t, err, model.ErrOptions, "%v", tc.args)
		require.True(t, strings.HasPrefix(err.Error(), tc.want), "%v: %q does not start with %q", tc.args, err, tc.want)
		require.Contains(t, err.Error(), "float32", "%v: the message says why a value in range is refused", tc.args)
		require.NotRegexp(t, apiNames, err.Error(), "%v", tc.args)
	}
	// The largest float32 is a temperature, and a min-p too small for
	// float32 is off (it filtered nothing): both run.
	dir := tinyModel(t)
	for _, args := range [][]string{{"-temp", "3.4e38"}, {"-min-p", "1e-50"}} {
		var out, errOut bytes.Buffer
		require.NoError(t, run(context.Background(), append([]string{"-model", dir, "-n", "2", "-seed", "1", "-device", "cpu"}, args...), &out, &errOut), "%v", args)
	}
}

// TestChatShowsTheTemplatesCompileError proves -chat on a model whose
// chat_template.jinja does not compile reports the compile error and the
// file, not "no chat template ... drop -chat" (which is for plain models).
func TestChatShowsTheTemplatesCompileError(t *testing.T) {
	dir := tinyModel(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, model.ChatTemplateFile), []byte("{% for m in messages %}{{ m.content }}"), 0o644))
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-model", dir, "-chat", "-prompt", "Hi", "-n", "2"}, &out, &errOut)
	require.ErrorIs(t, err, model.ErrNoChatTemplate)
	require.ErrorIs(t, err, chat.ErrTemplate)
	require.ErrorContains(t, err, model.ChatTemplateFile)
	require.NotContains(t, err.Error(), "drop -chat")
	require.Empty(t, out.String())

	// Without -chat the model still generates.
	require.NoError(t, run(context.Background(), []string{"-model", dir, "-prompt", "Hi", "-n", "2", "-device", "cpu"}, &out, &errOut))
}

// TestPromptOverTheContextPrintsNoSpeeds proves a prompt the model refuses
// is reported as an error alone, without a "prompt: N tokens, 0.0
// tokens/s ... stopped: error" line as if it had run.
func TestPromptOverTheContextPrintsNoSpeeds(t *testing.T) {
	dir := tinyModel(t)
	var out, errOut bytes.Buffer
	var ce *model.ContextError
	err := run(context.Background(), []string{"-model", dir, "-prompt", strings.Repeat("Amen ", 20000), "-n", "4", "-device", "cpu"}, &out, &errOut)
	require.ErrorAs(t, err, &ce)
	require.NotContains(t, errOut.String(), "tokens/s")
	require.NotContains(t, errOut.String(), "stopped:")
}

// TestModelFlagNamesTheDirectory proves -model pointing at a file of a
// Hugging Face checkpoint (model.safetensors, config.json) says to pass the
// directory that holds it, instead of "not a GGUF file".
func TestModelFlagNamesTheDirectory(t *testing.T) {
	dir := tinyModel(t)
	for _, name := range []string{"model.safetensors", "config.json"} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"-model", filepath.Join(dir, name)}, &out, &errOut)
		require.ErrorIs(t, err, model.ErrConfig, name)
		require.ErrorContains(t, err, "pass the directory that holds it, "+dir, name)
		require.NotContains(t, err.Error(), "not a GGUF file", name)
	}
}

// TestThreadsReport proves the load line says "1 thread" (not "1
// threads"), and that -threads above what the process can run at once
// is said on stderr with the number used, not capped silently.
func TestThreadsReport(t *testing.T) {
	dir := tinyModel(t)
	base := []string{"-model", dir, "-n", "1", "-device", "cpu", "-seed", "1"}
	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), append(base, "-threads", "1"), &out, &errOut))
	require.Contains(t, errOut.String(), "on the CPU, 1 thread)")

	errOut.Reset()
	require.NoError(t, run(context.Background(), append(base, "-threads", "100000"), &out, &errOut))
	require.Regexp(t, `(?m)^-threads 100000: this process runs at most (\d+) at once \(GOMAXPROCS\), so it uses (\d+)$`, errOut.String())
	m := regexp.MustCompile(`on the CPU, (\d+) threads?\)`).FindStringSubmatch(errOut.String())
	require.NotNil(t, m, errOut.String())
	require.Contains(t, errOut.String(), "so it uses "+m[1]+"\n")

	errOut.Reset()
	require.NoError(t, run(context.Background(), append(base, "-threads", "1"), &out, &errOut))
	require.NotContains(t, errOut.String(), "-threads")
}

// TestSeedIsPrintedOnlyWhenItMatters proves the speed line names the seed
// of a sampled run (to repeat it) and no seed for a greedy run, whose text
// no seed changes.
func TestSeedIsPrintedOnlyWhenItMatters(t *testing.T) {
	dir := tinyModel(t)
	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-model", dir, "-n", "3", "-temp", "0", "-device", "cpu"}, &out, &errOut))
	require.Regexp(t, `(?m)^prompt: .*stopped: \w+$`, errOut.String())
	require.NotContains(t, errOut.String(), "seed")

	errOut.Reset()
	require.NoError(t, run(context.Background(), []string{"-model", dir, "-n", "3", "-temp", "0.7", "-seed", "42", "-device", "cpu"}, &out, &errOut))
	require.Regexp(t, `(?m)^prompt: .*stopped: \w+; seed 42$`, errOut.String())
}

// TestSystemFlagIsConsistent proves -system without -chat is an error
// whatever its value (empty included), and that -chat -system "" sends an
// empty system message: SmolLM2's template then writes no default system
// prompt, so the prompt is what the template renders for exactly those
// messages.
func TestSystemFlagIsConsistent(t *testing.T) {
	dir := chatModel(t)
	var out, errOut bytes.Buffer
	ctx := context.Background()
	for _, v := range []string{"", "Be brief."} {
		err := run(ctx, []string{"-model", dir, "-system", v}, &out, &errOut)
		require.ErrorIs(t, err, model.ErrOptions, "-system %q", v)
		require.ErrorContains(t, err, "-system needs -chat", "-system %q", v)
	}

	m, err := model.Load(dir)
	require.NoError(t, err)
	count := func(msgs []chat.Message) int {
		ids, err := m.ChatPrompt(msgs)
		require.NoError(t, err)
		return len(ids)
	}
	user := chat.Message{Role: "user", Content: "Hi"}
	withEmpty, without := count([]chat.Message{{Role: "system"}, user}), count([]chat.Message{user})
	require.NotEqual(t, withEmpty, without, "the template's default system prompt makes the two differ")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"-system", ""}, withEmpty},
		{nil, without},
	} {
		errOut.Reset()
		require.NoError(t, run(ctx, append([]string{"-model", dir, "-chat", "-prompt", "Hi", "-n", "1", "-device", "cpu"}, tc.args...), &out, &errOut))
		require.Contains(t, errOut.String(), fmt.Sprintf("prompt: %d tokens", tc.want), "%v", tc.args)
	}
}

// TestHelpSaysWhatTheCommandDoes proves -h opens with what the command
// does before the flags.
func TestHelpSaysWhatTheCommandDoes(t *testing.T) {
	var out, errOut bytes.Buffer
	require.ErrorIs(t, run(context.Background(), []string{"-h"}, &out, &errOut), flag.ErrHelp)
	first, _, _ := strings.Cut(errOut.String(), "\n")
	require.Contains(t, first, "streams text from a llama-family model")
	require.Contains(t, errOut.String(), "-prompt-file")
}

// chatModel writes the tiny checkpoint with SmolLM2's chat template.
func chatModel(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../model/chat/testdata/templates/smollm2.jinja")
	require.NoError(t, err)
	s := modeltest.SmolLMTiny()
	s.ChatTokens = []string{"<|im_start|>", "<|im_end|>"}
	s.ChatTemplate = string(src)
	dir := t.TempDir()
	require.NoError(t, modeltest.Write(dir, s))
	return dir
}
