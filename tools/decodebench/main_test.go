package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/cli"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/runtime"
)

func TestBadFlagsAreErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-model", "x", "-batch", "0"},
		{"-model", "x", "-batch", "1,a"},
		{"-model", "x", "-new", "0"},
		{"-model", "x", "-prefill", "-1"},
		{"-model", "x", "-watchdog", "-1s"},
		{"-model", "x", "-watchdog", "soon"},
	} {
		_, err := parse(args)
		require.Error(t, err, "%v", args)
	}
}

// A tiny random checkpoint on the CPU: one JSON line per batch size and one
// for prefill, each with a positive rate and the backend named.
func TestPrintsOneLinePerMeasurement(t *testing.T) {
	dir := t.TempDir()
	spec := modeltest.SmolLMTiny()
	spec.NoTokenizer = true
	require.NoError(t, modeltest.Write(dir, spec))
	var out bytes.Buffer
	require.NoError(t, run([]string{"-model", dir, "-device", "cpu", "-batch", "1,3", "-prompt", "4", "-new", "5", "-prefill", "9", "-runs", "1"}, &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	want := []struct {
		phase string
		batch int
	}{{"decode", 1}, {"decode", 3}, {"prefill", 1}}
	for i, l := range lines {
		var r result
		require.NoError(t, json.Unmarshal([]byte(l), &r), l)
		require.Equal(t, want[i].phase, r.Phase, l)
		require.Equal(t, want[i].batch, r.Batch, l)
		require.Equal(t, "cpu", r.Device, l)
		require.Positive(t, r.TokensPerSec, l)
	}
}

// The pool holds every sequence's whole blocks: at -new 3 after a 16-token
// prompt (21 tokens of context, 2 blocks each) batch 32 needs 64 blocks,
// where 32 contexts' worth of tokens is only 42.
func TestPoolHoldsEverySequencesBlocks(t *testing.T) {
	for _, c := range []struct{ b, ctx int }{{32, 21}, {1, 1}, {7, 16}, {3, 17}, {32, 642}} {
		blocks := (c.ctx + model.KVBlockTokens - 1) / model.KVBlockTokens
		require.GreaterOrEqual(t, poolTokens(c.b, c.ctx), c.b*blocks*model.KVBlockTokens, "batch %d, context %d", c.b, c.ctx)
	}
}

// The watchdog goes to the runtime through HIPGO_GPU_WATCHDOG, 30 s unless
// the flag or the environment says otherwise; the environment wins.
func TestWatchdogReachesTheRuntime(t *testing.T) {
	o, err := parse([]string{"-model", "x"})
	require.NoError(t, err)
	t.Setenv(runtime.EnvWatchdog, "")
	setWatchdog(o.watchdog)
	require.Equal(t, "30s", os.Getenv(runtime.EnvWatchdog))
	d, err := runtime.ParseWatchdog(os.Getenv(runtime.EnvWatchdog))
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, d)

	t.Setenv(runtime.EnvWatchdog, "5s")
	setWatchdog(time.Minute)
	require.Equal(t, "5s", os.Getenv(runtime.EnvWatchdog), "the environment's watchdog is kept")

	t.Setenv(runtime.EnvWatchdog, "")
	o, err = parse([]string{"-model", "x", "-watchdog", "0"})
	require.NoError(t, err)
	setWatchdog(o.watchdog)
	require.Empty(t, os.Getenv(runtime.EnvWatchdog), "-watchdog 0: none")
}

// TestExitCodes: -h exits 0, a flag the flag package rejects exits 2
// without a second report, and any other error exits 1 naming the command.
func TestExitCodes(t *testing.T) {
	var report bytes.Buffer
	_, err := parse([]string{"-h"})
	require.Equal(t, 0, cli.ExitCode("decodebench", err, &report))
	_, err = parse([]string{"-no-such-flag"})
	require.Equal(t, 2, cli.ExitCode("decodebench", err, &report))
	require.Empty(t, report.String(), "the flag package has reported it")
	_, err = parse([]string{"-model", "x", "-batch", "0"})
	require.Equal(t, 1, cli.ExitCode("decodebench", err, &report))
	require.Equal(t, "decodebench: -batch \"0\": want positive integers\n", report.String())
}
