package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hipgo/hipgo/model"
	"github.com/stretchr/testify/require"
)

// TestPromptFromFileAndStdin proves -prompt-file FILE, -prompt - and
// -prompt-file - give the same text as -prompt with the file's contents
// (one trailing newline dropped), including -chat's reply.
func TestPromptFromFileAndStdin(t *testing.T) {
	ctx := context.Background()
	gen := func(stdin string, args ...string) string {
		var out, errOut bytes.Buffer
		require.NoError(t, runWithStdin(ctx, args, strings.NewReader(stdin), &out, &errOut), "%v: %s", args, errOut.String())
		return out.String()
	}
	for _, tc := range []struct {
		dir  string
		chat []string
	}{{tinyModel(t), nil}, {chatModel(t), []string{"-chat", "-system", "Be brief."}}} {
		base := append([]string{"-model", tc.dir, "-n", "8", "-temp", "0", "-device", "cpu"}, tc.chat...)
		want := gen("", append(base, "-prompt", "In the beginning")...)
		file := filepath.Join(t.TempDir(), "prompt.txt")
		require.NoError(t, os.WriteFile(file, []byte("In the beginning\n"), 0o644))
		require.Equal(t, want, gen("", append(base, "-prompt-file", file)...), "-prompt-file %v", tc.chat)
		require.Equal(t, want, gen("In the beginning\n", append(base, "-prompt", "-")...), "-prompt - %v", tc.chat)
		require.Equal(t, want, gen("In the beginning", append(base, "-prompt-file", "-")...), "-prompt-file - %v", tc.chat)
		require.NotEqual(t, want, gen("", append(base, "-prompt", "In the beginning\n\n")...), "%v: the text depends on the prompt, so the equalities above are not vacuous", tc.chat)
	}
}

// TestLongPromptFromFile proves a prompt far over the 128 KiB a shell
// argument may hold gets in through -prompt-file: the model sees all of it
// (here more tokens than the context holds, which is its error to report).
func TestLongPromptFromFile(t *testing.T) {
	dir := tinyModel(t)
	long := strings.Repeat("Amen ", 60000) // 300 KB
	file := filepath.Join(t.TempDir(), "long.txt")
	require.NoError(t, os.WriteFile(file, []byte(long), 0o644))
	m, err := model.Load(dir)
	require.NoError(t, err)
	ids, err := m.PromptTokens(long)
	require.NoError(t, err)

	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"-model", dir, "-prompt-file", file, "-n", "1", "-device", "cpu"}, &out, &errOut)
	var ce *model.ContextError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, len(ids), ce.Tokens, "every byte of the file reached the model")
	require.Empty(t, out.String())
}

// TestPromptFlagErrors proves a missing prompt file, an empty -prompt-file
// and both -prompt and -prompt-file are errors naming the flag, before the
// model loads.
func TestPromptFlagErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-model")
	nofile := filepath.Join(t.TempDir(), "no-prompt.txt")
	var out, errOut bytes.Buffer
	run := func(args ...string) error {
		return runWithStdin(context.Background(), append([]string{"-model", missing}, args...), strings.NewReader(""), &out, &errOut)
	}
	err := run("-prompt-file", nofile)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.True(t, strings.HasPrefix(err.Error(), "-prompt-file: "), err.Error())
	require.ErrorContains(t, err, nofile)

	err = run("-prompt-file", "")
	require.ErrorIs(t, err, model.ErrOptions)
	require.ErrorContains(t, err, "-prompt-file")

	err = run("-prompt", "x", "-prompt-file", nofile)
	require.ErrorIs(t, err, model.ErrOptions)
	require.ErrorContains(t, err, "-prompt and -prompt-file")
	require.NotErrorIs(t, err, model.ErrConfig)
}
