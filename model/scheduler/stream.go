package scheduler

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/hipgo/hipgo/model"
)

// Stream is one request's output. The scheduler appends text without
// blocking; the caller takes it with Next as fast as it likes.
type Stream struct {
	ctx    context.Context
	req    Request
	notify chan struct{} // 1-buffered: something new

	mu       sync.Mutex
	pending  strings.Builder
	lps      []Logprob
	tokens   int
	first    time.Time // the first step's token
	last     time.Time // the latest token
	finished bool
	why      Finish
	err      error
}

func newStream(ctx context.Context, r Request) *Stream {
	return &Stream{ctx: ctx, req: r, notify: make(chan struct{}, 1)}
}

func (s *Stream) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// push adds released text and the generated token's logprobs (nil: none
// asked, or an end of sequence); n is the tokens generated so far.
func (s *Stream) push(text string, lp *Logprob, n int, now time.Time) {
	s.mu.Lock()
	s.pending.WriteString(text)
	if lp != nil {
		s.lps = append(s.lps, *lp)
	}
	if s.first.IsZero() {
		s.first = now // the first step's token, end of sequence included
	}
	s.tokens, s.last = n, now
	s.mu.Unlock()
	s.signal()
}

// complete ends the request normally.
func (s *Stream) complete(why Finish) {
	s.mu.Lock()
	if !s.finished {
		s.finished, s.why = true, why
	}
	s.mu.Unlock()
	s.signal()
}

// finish ends the request; text is released first, err (when not nil)
// fails it.
func (s *Stream) finish(text string, err error) {
	s.mu.Lock()
	s.pending.WriteString(text)
	if !s.finished {
		s.finished, s.err = true, err
	}
	s.mu.Unlock()
	s.signal()
}

// Logprob is a generated token and its logprobs (model.TokenLogprobs).
type Logprob struct {
	ID uint32
	model.TokenLogprobs
}

// Chunk is what Next returns: text released since the last call, and at the
// end Done with the finish reason or the request's error.
type Chunk struct {
	Text string
	// Logprobs are those of the tokens generated since the last call, when
	// the request asked for them. The text of a token can come in a later
	// chunk than its logprobs (bytes of an incomplete character or of a
	// possible stop string are held back), and the tokens of a stop string
	// have logprobs but no text.
	Logprobs []Logprob
	Done     bool
	Finish   Finish // when Done without Err
	Err      error  // when Done: why the request failed
}

// Next waits for new text or the end. It returns the request context's
// error when that ends first (the scheduler then drops the request before
// its next step).
func (s *Stream) Next() Chunk {
	for {
		s.mu.Lock()
		c := Chunk{Text: s.pending.String(), Logprobs: s.lps, Done: s.finished, Finish: s.why, Err: s.err}
		s.pending.Reset()
		s.lps = nil
		s.mu.Unlock()
		if c.Text != "" || len(c.Logprobs) > 0 || c.Done {
			return c
		}
		select {
		case <-s.notify:
		case <-s.ctx.Done():
			return Chunk{Done: true, Err: s.ctx.Err()}
		}
	}
}

// Usage is a request's token counts and timing so far.
type Usage struct {
	PromptTokens     int
	CompletionTokens int       // generated, end of sequence excluded
	FirstToken       time.Time // when the first token was generated; zero before
	LastToken        time.Time
}

// Usage reports the request's counts.
func (s *Stream) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Usage{PromptTokens: len(s.req.Prompt), CompletionTokens: s.tokens, FirstToken: s.first, LastToken: s.last}
}
