//go:build unix

package main

import (
	"bytes"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSIGTERMReportsLikeCtrlC proves SIGTERM (kill's default, a service
// manager's stop) ends a run the way Ctrl-C does, with the speed line and
// "stopped: cancelled", instead of killing the process silently. The test
// sends SIGTERM to its own process: without the handler it would die.
func TestSIGTERMReportsLikeCtrlC(t *testing.T) {
	dir := tinyModel(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		ctx, stop := signalContext()
		require.NoError(t, syscall.Kill(syscall.Getpid(), sig))
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%v did not end the context", sig)
		}
		var out, errOut bytes.Buffer
		err := run(ctx, []string{"-model", dir, "-n", "4", "-device", "cpu", "-seed", "3"}, &out, &errOut)
		stop()
		require.ErrorIs(t, err, ctx.Err(), "%v", sig)
		require.Regexp(t, `(?m)^prompt: \d+ tokens, [0-9.]+ tokens/s; decode: 0 tokens, 0.0 tokens/s; stopped: cancelled; seed 3$`, errOut.String(), "%v", sig)
	}
}
