package scheduler

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hipgo/hipgo/model"
)

// TestLogprobsReachTheStreamInTokenOrder: requests batched together, one
// ending on a stop string and one without logprobs, get through their
// Streams the token ids and logprobs that Generate gives them alone (the
// tokens of the stop string included, none for an end of sequence), the
// top ids the same and the values within 1e-5 (the batched pass rounds
// differently).
func TestLogprobsReachTheStreamInTokenOrder(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	m := demoModel(t)
	s := New(m, Config{MaxBatch: 2})
	defer s.Close()
	opts := []model.GenerateOptions{
		{MaxTokens: 12, Temperature: 0.9, TopP: 1, Seed: 1, Logprobs: true, TopLogprobs: 3},
		{MaxTokens: 12, Logprobs: true},
		{MaxTokens: 12, Temperature: 0.9, TopP: 1, Seed: 2},
		{MaxTokens: 40, Logprobs: true, TopLogprobs: 1, Stop: []string{"the"}},
	}
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Go(func() {
			ids, err := m.PromptTokens("And God said")
			require.NoError(t, err)
			want, err := m.GenerateTokens(context.Background(), ids, o, nil)
			require.NoError(t, err)
			if o.Stop != nil {
				require.Equal(t, model.StopString, want.Reason, "the stop string is met")
			}
			st, err := s.Submit(context.Background(), Request{Prompt: ids, Options: o})
			require.NoError(t, err)
			var text strings.Builder
			var got []Logprob
			for {
				c := st.Next()
				text.WriteString(c.Text)
				got = append(got, c.Logprobs...)
				if c.Done {
					require.NoError(t, c.Err)
					break
				}
			}
			require.Equal(t, want.Text, text.String(), "request %d", i)
			if !o.Logprobs {
				require.Empty(t, got)
				return
			}
			require.Len(t, got, len(want.Tokens), "request %d", i)
			for k, w := range want.Logprobs {
				require.Equal(t, want.Tokens[k], got[k].ID)
				require.InDelta(t, w.Logprob, got[k].Logprob, 1e-5)
				require.Len(t, got[k].Top, len(w.Top))
				for j, e := range w.Top {
					require.Equal(t, e.ID, got[k].Top[j].ID)
					require.InDelta(t, e.Logprob, got[k].Top[j].Logprob, 1e-5)
				}
			}
		})
	}
	wg.Wait()
}
