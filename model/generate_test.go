package model

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/sampling"
	"github.com/stretchr/testify/require"
)

// byteCodec is a stand-in tokenizer: ids below 256 are bytes, others render
// as "<id>". Its stream decoder holds back incomplete UTF-8 like the real one.
type byteCodec struct{}

func (byteCodec) Encode(text string, _ bool) []uint32 {
	ids := make([]uint32, len(text))
	for i := range len(text) {
		ids[i] = uint32(text[i])
	}
	return ids
}

func (byteCodec) Decode(ids []uint32) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(byteText(id))
	}
	return b.String()
}

func byteText(id uint32) string {
	if id < 256 {
		return string([]byte{byte(id)})
	}
	return fmt.Sprintf("<%d>", id)
}

func (byteCodec) newStream() streamDecoder { return &byteStream{} }

func (s *byteStream) Flush() string {
	out := strings.ToValidUTF8(string(s.buf), "\uFFFD")
	s.buf = nil
	return out
}

type byteStream struct{ buf []byte }

func (s *byteStream) Add(id uint32) string {
	s.buf = append(s.buf, byteText(id)...)
	n := len(s.buf)
	for n > 0 && !utf8.Valid(s.buf[:n]) {
		n--
	}
	out := string(s.buf[:n])
	s.buf = s.buf[n:]
	return out
}

// scriptBackend makes greedy decoding produce script, one token per step.
type scriptBackend struct {
	vocab      int
	script     []uint32
	blockFirst bool // prefill waits for ctx to end
	forwards   atomic.Int32
}

func (b *scriptBackend) name() string { return "script" }
func (b *scriptBackend) newSequence(int) sequence {
	return &scriptSeq{b: b}
}

type scriptSeq struct {
	b       *scriptBackend
	n, step int
}

func (s *scriptSeq) len() int { return s.n }
func (s *scriptSeq) release() {}

func (b *scriptBackend) step(ctx context.Context, items []stepItem, out []uint32) error {
	return hostStep(ctx, b.vocab, items, out)
}
func (b *scriptBackend) close() error { return nil }

func (b *scriptBackend) samplesOnHost() bool { return true }
func (s *scriptSeq) forward(ctx context.Context, tokens []uint32, _ bool, logits []float32) error {
	s.b.forwards.Add(1)
	if s.b.blockFirst && s.step == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	s.n += len(tokens)
	clear(logits)
	if s.step < len(s.b.script) {
		logits[s.b.script[s.step]] = 1
	}
	s.step++
	return nil
}

const scriptEOS = 300

func scriptModel(script string, ctxLen int, eos bool) (*Model, *scriptBackend) {
	ids := byteCodec{}.Encode(script, false)
	if eos {
		ids = append(ids, scriptEOS)
	}
	b := &scriptBackend{vocab: 301, script: ids}
	return &Model{cfg: Config{VocabSize: 301, BOSTokenID: -1}, be: b, tok: byteCodec{}, ctxLen: ctxLen, eos: map[uint32]bool{scriptEOS: true}}, b
}

func collect(t *testing.T, m *Model, prompt string, opts GenerateOptions) (Result, []Token, error) {
	t.Helper()
	var toks []Token
	res, err := m.Generate(context.Background(), prompt, opts, func(tok Token) error {
		toks = append(toks, tok)
		return nil
	})
	return res, toks, err
}

func joinText(toks []Token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.Text)
	}
	return b.String()
}

// TestGenerateStreamsInOrder proves tokens are emitted one by one in the
// order generated, their pieces concatenate to Result.Text, the EOS token
// ends generation without being emitted, and a character split across two
// tokens is released whole.
func TestGenerateStreamsInOrder(t *testing.T) {
	m, _ := scriptModel("Hi é!", 100, true)
	res, toks, err := collect(t, m, "ab", GenerateOptions{})
	require.NoError(t, err)
	require.Equal(t, StopEOS, res.Reason)
	require.Equal(t, "Hi é!", res.Text)
	require.Equal(t, res.Text, joinText(toks))
	want := []uint32{'H', 'i', ' ', 0xc3, 0xa9, '!'}
	require.Equal(t, want, res.Tokens)
	require.Len(t, toks, len(want))
	for i, tok := range toks {
		require.Equal(t, want[i], tok.ID)
	}
	require.Equal(t, "", toks[3].Text, "first byte of é is held back")
	require.Equal(t, "é", toks[4].Text)
	require.Equal(t, 2, res.PromptTokens)
	require.Equal(t, len(want), res.DecodeSteps)
}

// TestGenerateStopStrings proves stop strings end generation even when they
// span tokens, that no part of them is ever emitted, that text which only
// looked like a stop string's start is released once it diverges, and that
// held-back text is flushed when generation stops for another reason.
func TestGenerateStopStrings(t *testing.T) {
	cases := []struct {
		name, script string
		stops        []string
		max          int
		text         string
		reason       StopReason
	}{
		{"spans tokens", "abc STOP def", []string{"STOP"}, 0, "abc ", StopString},
		{"false start released", "xSTyST!STOPz", []string{"STOP"}, 0, "xSTyST!", StopString},
		{"earliest of several", "one two three", []string{"three", "two"}, 0, "one ", StopString},
		{"multibyte stop", "aé€b", []string{"€"}, 0, "aé", StopString},
		{"held text flushed at max tokens", "abST", []string{"STOP"}, 4, "abST", StopMaxTokens},
		{"held text flushed at EOS", "abST", []string{"STOP"}, 0, "abST", StopEOS},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := scriptModel(tc.script, 100, true)
			res, toks, err := collect(t, m, "p", GenerateOptions{Stop: tc.stops, MaxTokens: tc.max})
			require.NoError(t, err)
			require.Equal(t, tc.reason, res.Reason)
			require.Equal(t, tc.text, res.Text)
			require.Equal(t, tc.text, joinText(toks))
			// Streaming never got ahead of what is finally returned.
			var soFar string
			for _, tok := range toks {
				soFar += tok.Text
				require.True(t, strings.HasPrefix(tc.text, soFar), "emitted %q beyond %q", soFar, tc.text)
			}
		})
	}
}

// TestStopMatcher checks the hold-back rule directly: only a suffix that is
// a proper prefix of some stop string is held.
func TestStopMatcher(t *testing.T) {
	s := &stopMatcher{stops: []string{"</s>", "END"}}
	r, found := s.push("hello <")
	require.False(t, found)
	require.Equal(t, "hello ", r)
	r, _ = s.push("/")
	require.Equal(t, "", r)
	r, _ = s.push("x E")
	require.Equal(t, "</x ", r)
	r, found = s.push("ND more")
	require.True(t, found)
	require.Equal(t, "", r)
	require.Equal(t, "", s.flush())
}

// TestGenerateLimits proves MaxTokens and the context length end
// generation with their reasons, and that a prompt longer than the context
// is refused before the backend runs.
func TestGenerateLimits(t *testing.T) {
	m, _ := scriptModel("abcdefgh", 100, false)
	res, toks, err := collect(t, m, "p", GenerateOptions{MaxTokens: 3})
	require.NoError(t, err)
	require.Equal(t, StopMaxTokens, res.Reason)
	require.Equal(t, "abc", res.Text)
	require.Len(t, toks, 3)
	require.Equal(t, 2, res.DecodeSteps, "the last token is not fed back")

	m, _ = scriptModel("abcdefgh", 6, false)
	res, _, err = collect(t, m, "pppp", GenerateOptions{})
	require.NoError(t, err)
	require.Equal(t, StopContextLength, res.Reason)
	require.Equal(t, "ab", res.Text, "4 prompt + 2 generated fill 6")

	m, b := scriptModel("abc", 6, false)
	res, _, err = collect(t, m, "1234567", GenerateOptions{})
	require.ErrorIs(t, err, ErrContextLength)
	var ce *ContextError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 7, ce.Tokens)
	require.Equal(t, 6, ce.Context)
	require.Contains(t, err.Error(), "prompt of 7 tokens exceeds the context length of 6")
	require.Equal(t, StopError, res.Reason)
	require.Zero(t, b.forwards.Load(), "refused before any forward pass")
}

// TestGenerateOptionErrors proves out-of-range options are refused with
// ErrOptions before the backend runs.
func TestGenerateOptionErrors(t *testing.T) {
	for name, o := range map[string]GenerateOptions{
		"negative temperature": {Temperature: -1},
		"NaN temperature":      {Temperature: float32(nan())},
		"top-k":                {TopK: -1},
		"top-p":                {TopP: 1.5},
		"min-p":                {MinP: -0.1},
		"max tokens":           {MaxTokens: -1},
		"empty stop":           {Stop: []string{"x", ""}},
	} {
		t.Run(name, func(t *testing.T) {
			m, b := scriptModel("abc", 100, false)
			_, _, err := collect(t, m, "p", o)
			require.ErrorIs(t, err, ErrOptions)
			require.Zero(t, b.forwards.Load())
			if o.MaxTokens == 0 && o.Stop == nil {
				require.ErrorIs(t, err, sampling.ErrInvalidParameter, "validated by the sampling package")
			}
		})
	}
}

func nan() float64 { var z float64; return z / z }

// TestGenerateCancel proves cancelling ctx stops generation promptly with
// ctx.Err(): during the prefill, between tokens, and before starting.
func TestGenerateCancel(t *testing.T) {
	m, b := scriptModel("abc", 100, false)
	b.blockFirst = true
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	start := time.Now()
	res, err := m.Generate(ctx, "p", GenerateOptions{}, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, StopCancelled, res.Reason)
	require.Less(t, time.Since(start), 2*time.Second)

	m, _ = scriptModel("abcdefgh", 100, false)
	ctx, cancel = context.WithCancel(context.Background())
	n := 0
	res, err = m.Generate(ctx, "p", GenerateOptions{}, func(Token) error {
		n++
		if n == 2 {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, StopCancelled, res.Reason)
	require.Equal(t, "ab", res.Text)

	_, err = m.Generate(ctx, "p", GenerateOptions{}, nil) // already cancelled
	require.ErrorIs(t, err, context.Canceled)

	boom := errors.New("client went away")
	res, err = m.Generate(context.Background(), "p", GenerateOptions{}, func(Token) error { return boom })
	require.ErrorIs(t, err, boom)
	require.Equal(t, StopError, res.Reason)
}

// TestGenerateCancelRealPrefill proves a long prefill on the real CPU
// backend notices cancellation between layers rather than finishing: the
// session is left holding only the chunks completed before the cancel.
func TestGenerateCancelRealPrefill(t *testing.T) {
	spec := modeltest.Llama3Tiny()
	spec.Layers, spec.MaxPos = 8, 4096
	m := loadSpec(t, spec)
	prompt := testTokens(4000, spec.Vocab)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	s := m.NewSession()
	start := time.Now()
	_, err := s.Forward(ctx, prompt, false)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 500*time.Millisecond)
	require.Less(t, s.Len(), len(prompt), "stopped inside the prefill")
	require.Zero(t, s.Len()%prefillChunk, "only whole chunks are kept")

	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start = time.Now()
	res, err := m.GenerateTokens(ctx, prompt, GenerateOptions{}, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, StopCancelled, res.Reason)
	require.Less(t, time.Since(start), 500*time.Millisecond)
}

// TestSamplingFollowsContract proves Generate's tokens are exactly what the
// sampling package's CPU sampler draws from the logits a Session computes,
// keyed by KeyFromSeed(seed, step): greedy at temperature 0, and a filtered,
// tempered draw otherwise.
func TestSamplingFollowsContract(t *testing.T) {
	spec := modeltest.Qwen2Tiny()
	m := loadSpec(t, spec)
	prompt := testTokens(5, spec.Vocab)
	for _, opts := range []GenerateOptions{
		{MaxTokens: 8},
		{MaxTokens: 8, Temperature: 0.9, TopK: 20, TopP: 0.9, MinP: 0.01, Seed: 7},
	} {
		res, err := m.GenerateTokens(context.Background(), prompt, opts, nil)
		require.NoError(t, err)
		require.Len(t, res.Tokens, 8)

		topP := opts.TopP
		if topP == 0 {
			topP = 1
		}
		params := []sampling.Params{{Temperature: opts.Temperature, TopK: opts.TopK, TopP: topP, MinP: opts.MinP}}
		s := m.NewSession()
		logits, err := s.Forward(context.Background(), prompt, false)
		require.NoError(t, err)
		for i, id := range res.Tokens {
			var want [1]uint32
			require.NoError(t, sampling.Argpartition(want[:], logits, 1, len(logits), params, sampling.KeyFromSeed(opts.Seed, uint64(i))))
			require.Equal(t, want[0], id, "token %d with %+v", i, opts)
			if opts.Temperature == 0 {
				best := 0
				for j, v := range logits {
					if v > logits[best] {
						best = j
					}
				}
				require.Equal(t, uint32(best), id, "greedy is the argmax")
			}
			logits, err = s.Forward(context.Background(), []uint32{id}, false)
			require.NoError(t, err)
		}
	}
}

// TestConcurrentGenerations proves generations sharing one Model give, for
// the same seed and options, exactly the tokens a sequential run gives, and
// that different seeds give different samples (run under -race).
func TestConcurrentGenerations(t *testing.T) {
	spec := modeltest.SmolLMTiny()
	m := loadSpec(t, spec)
	m.tok = byteCodec{}
	opts := func(seed uint64) GenerateOptions {
		return GenerateOptions{MaxTokens: 12, Temperature: 1.5, TopK: 50, TopP: 0.95, Seed: seed}
	}
	const n = 4
	seq := make([]Result, n)
	for i := range n {
		r, err := m.Generate(context.Background(), "Amen", opts(uint64(i)), nil)
		require.NoError(t, err)
		seq[i] = r
	}
	par := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := m.Generate(context.Background(), "Amen", opts(uint64(i)), nil)
			require.NoError(t, err)
			par[i] = r
		})
	}
	wg.Wait()
	for i := range n {
		require.Equal(t, seq[i].Tokens, par[i].Tokens, "seed %d", i)
		require.Equal(t, seq[i].Text, par[i].Text)
	}
	require.NotEqual(t, seq[0].Tokens, seq[1].Tokens, "different seeds sample differently")
}
