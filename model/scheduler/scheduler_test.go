package scheduler

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/runtime"
)

func demoModel(t testing.TB, opts ...model.Option) *model.Model {
	t.Helper()
	m, err := model.LoadFS(demo.FS(), opts...)
	require.NoError(t, err)
	return m
}

// collect reads a stream to its end.
func collect(st *Stream) (string, Chunk) {
	var b strings.Builder
	for range 100000 {
		c := st.Next()
		b.WriteString(c.Text)
		if c.Done {
			return b.String(), c
		}
	}
	panic("stream never ended")
}

func req(t *testing.T, m *model.Model, prompt string, seed uint64, n int) Request {
	ids, err := m.PromptTokens(prompt)
	require.NoError(t, err)
	return Request{Prompt: ids, Options: model.GenerateOptions{MaxTokens: n, Temperature: 0.9, TopP: 1, Seed: seed}}
}

// TestConcurrentRequestsGetTheirAloneText proves requests batched together
// (more than MaxBatch, so some wait in the queue and join between steps)
// each get exactly the text Generate gives them alone with the same seed,
// and the usage counts match.
func TestConcurrentRequestsGetTheirAloneText(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	m := demoModel(t)
	s := New(m, Config{MaxBatch: 3})
	defer s.Close()
	const n = 7
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := req(t, m, "And God said", uint64(i), 5+i)
			want, err := m.GenerateTokens(context.Background(), r.Prompt, r.Options, nil)
			require.NoError(t, err)
			st, err := s.Submit(context.Background(), r)
			require.NoError(t, err)
			text, end := collect(st)
			require.NoError(t, end.Err)
			require.Equal(t, want.Text, text, "request %d", i)
			require.Equal(t, len(want.Tokens), st.Usage().CompletionTokens)
			if want.Reason == model.StopMaxTokens {
				require.Equal(t, FinishLength, end.Finish)
			}
		})
	}
	wg.Wait()
}

// TestFailedStepFailsOnlyItsRequests proves an injected step failure ends
// the requests in that step with the error and the next request is served;
// and MaxFailedSteps consecutive failures stop admission.
func TestFailedStepFailsOnlyItsRequests(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	injected := errors.New("injected step failure")
	var failing atomic.Bool
	m := demoModel(t, model.WithStepFaults(func(uint64) error {
		if failing.Load() {
			return injected
		}
		return nil
	}))
	s := New(m, Config{MaxFailedSteps: 3})
	defer s.Close()
	ctx := context.Background()
	failing.Store(true)
	st, err := s.Submit(ctx, req(t, m, "x", 1, 4))
	require.NoError(t, err)
	_, end := collect(st)
	require.ErrorIs(t, end.Err, injected)
	failing.Store(false)
	st, err = s.Submit(ctx, req(t, m, "x", 1, 4))
	require.NoError(t, err)
	_, end = collect(st)
	require.NoError(t, end.Err)
	require.NoError(t, s.Status().Down)

	failing.Store(true)
	for range 3 {
		st, err := s.Submit(ctx, req(t, m, "x", 1, 4))
		require.NoError(t, err)
		_, end := collect(st)
		require.ErrorIs(t, end.Err, injected)
	}
	// The third failure's end is delivered after the scheduler went down
	// (it used to be before: under load a Submit slipped in and was queued).
	require.ErrorIs(t, s.Status().Down, ErrUnavailable)
	_, err = s.Submit(ctx, req(t, m, "x", 1, 4))
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "3 consecutive steps failed")
	require.ErrorIs(t, s.Status().Down, ErrUnavailable)
}

// TestDeviceLossEndsRequestsAndFallsBack proves a lost device ends the
// running requests with an UnavailableError wrapping the fault and refuses
// later ones at once; with a Fallback, later requests are served by it.
func TestDeviceLossEndsRequestsAndFallsBack(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	lost := &runtime.DeviceLostError{Device: "sim:0", Cause: errors.New("illegal address")}
	for _, fallback := range []bool{false, true} {
		var steps atomic.Int64
		m := demoModel(t, model.WithStepFaults(func(step uint64) error {
			steps.Add(1)
			if step == 3 {
				return lost
			}
			return nil
		}))
		cfg := Config{}
		if fallback {
			cfg.Fallback = func() (*model.Model, error) { return model.LoadFS(demo.FS()) }
		}
		s := New(m, cfg)
		ctx := context.Background()
		st, err := s.Submit(ctx, req(t, m, "x", 1, 10))
		require.NoError(t, err)
		_, end := collect(st)
		require.ErrorIs(t, end.Err, ErrUnavailable)
		require.ErrorIs(t, end.Err, runtime.ErrDeviceLost)
		status := s.Status()
		require.ErrorIs(t, status.DeviceLost, runtime.ErrDeviceLost)
		require.False(t, status.LostAt.IsZero())
		st, err = s.Submit(ctx, req(t, m, "x", 1, 3))
		if !fallback {
			require.ErrorIs(t, err, ErrUnavailable)
			require.ErrorIs(t, s.Status().Down, runtime.ErrDeviceLost)
		} else {
			require.NoError(t, err)
			_, end := collect(st)
			require.NoError(t, end.Err)
			require.True(t, s.Status().FellBack)
			require.NotSame(t, m, s.Status().Model)
		}
		s.Close()
	}
}

// TestCancelledRequestFreesItsSlot proves a request whose context ends
// leaves the batch: with MaxBatch 1 a second request runs after the first
// is cancelled, long before the first would have finished.
func TestCancelledRequestFreesItsSlot(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	m := demoModel(t)
	s := New(m, Config{MaxBatch: 1, MaxQueue: 1})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	long, err := s.Submit(ctx, req(t, m, "x", 1, 0)) // until the context is full
	require.NoError(t, err)
	c := long.Next()
	require.False(t, c.Done)
	st, err := s.Submit(context.Background(), req(t, m, "y", 2, 3))
	require.NoError(t, err)
	_, err = s.Submit(context.Background(), req(t, m, "z", 2, 3))
	require.ErrorIs(t, err, ErrQueueFull, "one running, one queued")
	cancel()
	start := time.Now()
	_, end := collect(st)
	require.NoError(t, end.Err)
	t.Logf("the queued request finished %v after the cancel", time.Since(start))
	require.ErrorIs(t, long.Next().Err, context.Canceled)
}

// leakOpts ignores the model's shared CPU worker pool, which lives for the
// process by design.
var leakOpts = []goleak.Option{goleak.IgnoreAnyFunction("github.com/hipgo/hipgo/model/internal/cpu.(*Pool).work")}

// TestIdleSchedulerRunsNothing: once every request has ended, Status says
// nothing runs (the running-sequences gauge and /health/ready read it),
// whatever the batch held at its fullest.
func TestIdleSchedulerRunsNothing(t *testing.T) {
	m := demoModel(t)
	s := New(m, Config{MaxBatch: 8})
	defer s.Close()
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			st, err := s.Submit(context.Background(), req(t, m, "And God said", uint64(i), 3+2*i))
			require.NoError(t, err)
			_, end := collect(st)
			require.NoError(t, end.Err)
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool { return s.Status().Running == 0 }, 5*time.Second, time.Millisecond,
		"running stays at %d on an idle scheduler", s.Status().Running)
	require.Equal(t, 0, s.Status().Queued)
}
