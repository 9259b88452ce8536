package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hipgo/hipgo/internal/loadtest"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/runtime"
)

// TestLoadWithInjectedStepFailures is the CI-size load test: 64 concurrent
// streaming clients x 20 requests (2 under -race; max_tokens 4, the demo
// model on the CPU) while 5% of batch steps fail with a launch rejection.
// Each failed step advanced nothing and is retried, so every request
// completes, and the metrics count the failures and their retries; none
// outlasts its timeout, and after shutdown no goroutine is left.
func TestLoadWithInjectedStepFailures(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	// Exactly one step in 20 fails (steps 10, 30, 50, ...), so even the
	// short run under -race has failures.
	m, err := model.LoadFS(demo.FS(), model.WithStepFaults(func(step uint64) error {
		if step%20 == 10 {
			return &runtime.LaunchError{Kernel: "injected", Reason: "5% of steps fail"}
		}
		return nil
	}))
	require.NoError(t, err)
	srv := New(Options{ModelName: demoName})
	sch := scheduler.New(m, scheduler.Config{MaxBatch: 32, MaxQueue: 64, MaxFailedSteps: -1, OnStep: srv.OnStep})
	srv.SetScheduler(sch)
	hs := httptest.NewServer(srv)
	defer func() { // before the leak check, also when an assertion fails
		sch.Close()
		hs.Close()
		http.DefaultClient.CloseIdleConnections()
	}()

	ctx := context.Background()
	perClient := 20
	if raceEnabled {
		perClient = 2
	}
	rep := loadtest.Run(ctx, loadtest.Config{BaseURL: hs.URL, Model: demoName, Clients: 64, Requests: perClient, MaxTokens: 4, Timeout: 2 * time.Minute})
	t.Logf("load (64 clients x %d, max_tokens 4, 5%% failed steps, demo model on the CPU):\n%s", perClient, rep.Summary())

	require.Equal(t, 64*perClient, rep.Requests)
	require.Zero(t, rep.Hangs, "requests past their timeout")
	require.Empty(t, rep.Malformed, "answers that were neither a completion nor an OpenAI error")
	require.Equal(t, rep.Requests, rep.Completions+sum(rep.Errors))
	require.Equal(t, rep.Requests, rep.Completions, "every request survives: %v", rep.Errors)
	_, metrics := get(t, hs.URL+"/metrics")
	failed, retried := metricValue(t, metrics, "hipgo_failed_steps_total"), metricValue(t, metrics, "hipgo_step_retries_total")
	require.Positive(t, failed, "5%% of steps failed")
	require.Equal(t, failed, retried, "every failed step was retried")
}

// metricValue is the value of an unlabelled metric in an exposition.
func metricValue(t *testing.T, exposition, name string) float64 {
	t.Helper()
	for line := range strings.Lines(exposition) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(t, err)
			return f
		}
	}
	require.Failf(t, "no such metric", "%s", name)
	return 0
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
