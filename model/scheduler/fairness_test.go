package scheduler

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hipgo/hipgo/model"
)

// longPrompt is n token ids of the demo model's vocabulary, none of them
// end of sequence.
func longPrompt(n, salt int) []uint32 {
	p := make([]uint32, n)
	for i := range p {
		p[i] = uint32(1 + (i*131+salt*17)%4000)
	}
	return p
}

// fairness submits 20 requests with 500-token prompts, then one with 8
// tokens, to a scheduler with room for all of them (MaxBatch 32), and
// returns the prompt tokens the model was fed before the short request's
// first token, its own included, and the time from its Submit to that
// token. The first long request is stepping (held in its first step) when
// the others arrive, so every run sees the same steps.
func fairness(t testing.TB, budget int) (int, time.Duration) {
	var hold chan struct{}
	entered := make(chan struct{}, 1)
	m := demoModel(t, model.WithStepFaults(func(step uint64) error {
		if step == 1 {
			entered <- struct{}{}
			<-hold
		}
		return nil
	}))
	hold = make(chan struct{})
	var short atomic.Pointer[Stream]
	var mu sync.Mutex
	fed, before := 0, -1
	s := New(m, Config{MaxBatch: 32, PrefillBudget: budget, OnStep: func(st StepInfo) {
		mu.Lock()
		defer mu.Unlock()
		// The tokens of the step before this one have been handed out.
		if sh := short.Load(); before < 0 && sh != nil && !sh.Usage().FirstToken.IsZero() {
			before = fed
		}
		fed += st.Prompt
	}})
	defer s.Close()
	ctx := context.Background()
	opts := model.GenerateOptions{MaxTokens: 4, Temperature: 0.9, TopP: 1, Seed: 1}
	var streams []*Stream
	st, err := s.Submit(ctx, Request{Prompt: longPrompt(500, 0), Options: opts})
	require.NoError(t, err)
	streams = append(streams, st)
	<-entered
	for i := 1; i < 20; i++ {
		st, err := s.Submit(ctx, Request{Prompt: longPrompt(500, i), Options: opts})
		require.NoError(t, err)
		streams = append(streams, st)
	}
	submitted := time.Now()
	st, err = s.Submit(ctx, Request{Prompt: longPrompt(8, 99), Options: model.GenerateOptions{MaxTokens: 2}})
	require.NoError(t, err)
	short.Store(st)
	close(hold)
	for _, st := range append(streams, st) {
		_, end := collect(st)
		require.NoError(t, end.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, before, 0, "a step ran after the short request's first token")
	return before, st.Usage().FirstToken.Sub(submitted)
}

// TestShortRequestIsNotStuckBehindLongPrefills is the fairness figure in
// tokens, which a loaded machine does not change: 20 requests with
// 500-token prompts, then one with 8. With the default prefill budget the
// short request's first token comes after at most the first long prompt
// (in its step when the others arrived) and one step's budget, where with
// whole prompts it came after all 20 (10,008 tokens).
func TestShortRequestIsNotStuckBehindLongPrefills(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	fed, _ := fairness(t, 0)
	t.Logf("prompt tokens fed before the short request's first token: %d (prefill budget %d)", fed, DefaultPrefillBudget)
	require.LessOrEqual(t, fed, 500+DefaultPrefillBudget)
	if !testing.Short() {
		whole, _ := fairness(t, -1)
		t.Logf("with whole prompts: %d", whole)
		require.Equal(t, 20*500+8, whole)
	}
}

// BenchmarkShortRequestFirstToken is the fairness figure in time: the
// short request's time to first token in fairness's load (the long
// requests' first step included), with the default prefill budget and with
// whole prompts.
//
//	go test ./model/scheduler -run '^$' -bench ShortRequestFirstToken -benchtime 3x
func BenchmarkShortRequestFirstToken(b *testing.B) {
	for _, c := range []struct {
		name   string
		budget int
	}{{"budget=512", 0}, {"whole", -1}} {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				_, ttft := fairness(b, c.budget)
				total += ttft
			}
			b.ReportMetric(total.Seconds()*1000/float64(b.N), "ttft-ms")
		})
	}
}
