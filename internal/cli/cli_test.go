package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseAndExitCode: -h exits 0 with nothing reported, a rejected flag 2
// with nothing reported (the flag package did it), a cancelled run 130 and
// any other error 1, each reported once with the command's name.
func TestParseAndExitCode(t *testing.T) {
	fl := flag.NewFlagSet("cmd", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.Int("n", 1, "a number")
	var report bytes.Buffer
	exit := func(err error) int {
		report.Reset()
		return ExitCode("cmd", err, &report)
	}

	require.NoError(t, Parse(fl, []string{"-n", "2"}))
	require.Equal(t, 0, exit(nil))
	require.Empty(t, report.String())

	err := Parse(fl, []string{"-h"})
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Equal(t, 0, exit(err))
	require.Empty(t, report.String())

	err = Parse(fl, []string{"-n", "abc"})
	var ue UsageError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, 2, exit(fmt.Errorf("wrapped: %w", err)))
	require.Empty(t, report.String())

	require.Equal(t, 130, exit(fmt.Errorf("generating: %w", context.Canceled)))
	require.Equal(t, "cmd: generating: context canceled\n", report.String())

	require.Equal(t, 1, exit(errors.New("no model")))
	require.Equal(t, "cmd: no model\n", report.String())
}
