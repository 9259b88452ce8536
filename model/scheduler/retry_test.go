package scheduler

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/runtime"
)

// TestRetryableStepFailuresAreRetried proves a step that failed on a launch
// rejection runs again: two failures in a row (three tries, the default)
// leave the request with exactly the text it gets with no failure, and
// OnStep reports each retry; a third failure in a row fails the request
// with the rejection; a device fault is never retried.
func TestRetryableStepFailuresAreRetried(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	rejected := &runtime.LaunchError{Kernel: "injected", Reason: "test"}
	fault := &runtime.FaultError{Device: "sim:0", Kind: "illegal address"}
	for _, c := range []struct {
		name    string
		fail    map[uint64]error // by step
		ok      bool
		retries int
		errIs   error
	}{
		{"two rejections", map[uint64]error{2: rejected, 3: rejected}, true, 2, nil},
		{"three rejections", map[uint64]error{2: rejected, 3: rejected, 4: rejected}, false, 2, runtime.ErrLaunchRejected},
		{"device fault", map[uint64]error{2: fault}, false, 0, runtime.ErrDeviceFault},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := demoModel(t, model.WithStepFaults(func(step uint64) error { return c.fail[step] }))
			var mu sync.Mutex
			var failed, retries int
			s := New(m, Config{OnStep: func(st StepInfo) {
				mu.Lock()
				defer mu.Unlock()
				if st.Err != nil {
					failed++
				}
				if st.Retry {
					retries++
				}
			}})
			defer s.Close()
			r := req(t, m, "And God said", 7, 6)
			want, err := demoModel(t).GenerateTokens(context.Background(), r.Prompt, r.Options, nil)
			require.NoError(t, err)
			st, err := s.Submit(context.Background(), r)
			require.NoError(t, err)
			text, end := collect(st)
			if c.ok {
				require.NoError(t, end.Err)
				require.Equal(t, want.Text, text)
			} else {
				require.ErrorIs(t, end.Err, c.errIs)
			}
			s.Close()
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, len(c.fail), failed, "failed steps")
			require.Equal(t, c.retries, retries)
		})
	}
}

// TestRetriesThatRunOutCountForTheGuard proves a step whose every try was
// rejected is one failed step for Config.MaxFailedSteps: with a guard of 1
// its request fails with the rejection and the scheduler stops admitting.
func TestRetriesThatRunOutCountForTheGuard(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	rejected := &runtime.LaunchError{Kernel: "injected", Reason: "test"}
	m := demoModel(t, model.WithStepFaults(func(uint64) error { return rejected }))
	s := New(m, Config{MaxFailedSteps: 1})
	defer s.Close()
	st, err := s.Submit(context.Background(), req(t, m, "x", 1, 4))
	require.NoError(t, err)
	_, end := collect(st)
	require.ErrorIs(t, end.Err, runtime.ErrLaunchRejected)
	require.ErrorIs(t, s.Status().Down, ErrUnavailable)
	_, err = s.Submit(context.Background(), req(t, m, "x", 1, 4))
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorContains(t, err, "1 consecutive steps failed")
}
