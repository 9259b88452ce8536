package server

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/runtime"
)

// forwardLogSoftmax replays prompt and tokens through a CPU Session and
// returns, for each token, the float64 log-softmax of the logits it was
// drawn from.
func forwardLogSoftmax(t *testing.T, m *model.Model, prompt, tokens []uint32) [][]float64 {
	t.Helper()
	ctx := context.Background()
	s := m.NewSession()
	defer s.Close()
	logits, err := s.Forward(ctx, prompt, false)
	require.NoError(t, err)
	out := make([][]float64, len(tokens))
	for k, tok := range tokens {
		mx := math.Inf(-1)
		for _, x := range logits {
			mx = math.Max(mx, float64(x))
		}
		var sum float64
		for _, x := range logits {
			sum += math.Exp(float64(x) - mx)
		}
		out[k] = make([]float64, len(logits))
		for i, x := range logits {
			out[k][i] = float64(x) - mx - math.Log(sum)
		}
		logits, err = s.Forward(ctx, []uint32{tok}, false)
		require.NoError(t, err)
	}
	return out
}

// TestLogprobsThroughTheAPI: through the OpenAI Go client on the CPU, a
// completion with logprobs 5 and a chat with logprobs and top_logprobs 5,
// sampled, whole and streamed, give OpenAI's shapes: each token is its
// tokenizer piece (chat: with its bytes), its logprob within 1e-4 of the
// log-softmax of the CPU forward's logits (a Session replaying the prompt
// and the tokens model.Generate gives with the same options), the top
// list the 5 best of those logits, best first, whose probabilities sum to
// at most 1; the completion's text_offset is where each token starts in
// its text; streamed logprobs equal the whole answer's; greedy chat picks
// the top-1; without logprobs there are none.
func TestLogprobsThroughTheAPI(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{APIKeys: []string{"k"}})
	c := client(ts, "k")
	ctx := context.Background()
	tok := ts.m.Tokenizer()
	const prompt = "And God said"
	ids, err := ts.m.PromptTokens(prompt)
	require.NoError(t, err)

	params := openai.CompletionNewParams{
		Model: demoName, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens: openai.Int(12), Temperature: openai.Float(0.9), Seed: openai.Int(11), Logprobs: openai.Int(5),
	}
	comp, err := c.Completions.New(ctx, params)
	require.NoError(t, err)
	want, err := ts.m.GenerateTokens(ctx, ids, model.GenerateOptions{MaxTokens: 12, Temperature: 0.9, TopP: 1, Seed: 11}, nil)
	require.NoError(t, err)
	require.Equal(t, want.Text, comp.Choices[0].Text)
	lp := comp.Choices[0].Logprobs
	require.Len(t, lp.Tokens, len(want.Tokens))
	ref := forwardLogSoftmax(t, ts.m, ids, want.Tokens)
	text := comp.Choices[0].Text
	for k, id := range want.Tokens {
		piece, ok := tok.Piece(id)
		require.True(t, ok)
		require.Equal(t, string(piece), lp.Tokens[k])
		require.InDelta(t, ref[k][id], lp.TokenLogprobs[k], 1e-4, "token %d", k)
		require.Len(t, lp.TopLogprobs[k], 5)
		var mass float64
		best := math.Inf(1)
		for _, v := range lp.TopLogprobs[k] {
			mass += math.Exp(v)
			best = math.Min(best, v)
		}
		require.LessOrEqual(t, mass, 1.0)
		require.GreaterOrEqual(t, best, nthBest(ref[k], 5)-1e-4, "the top list is the 5 best")
		require.True(t, strings.HasPrefix(string([]rune(text)[lp.TextOffset[k]:]), lp.Tokens[k]), "text_offset %d", k)
	}
	stream := c.Completions.NewStreaming(ctx, params)
	var st openai.CompletionChoiceLogprobs
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			l := ch.Choices[0].Logprobs
			st.Tokens = append(st.Tokens, l.Tokens...)
			st.TokenLogprobs = append(st.TokenLogprobs, l.TokenLogprobs...)
			st.TopLogprobs = append(st.TopLogprobs, l.TopLogprobs...)
			st.TextOffset = append(st.TextOffset, l.TextOffset...)
		}
	}
	require.NoError(t, stream.Err())
	require.Equal(t, lp.Tokens, st.Tokens, "streamed")
	require.Equal(t, lp.TokenLogprobs, st.TokenLogprobs)
	require.Equal(t, lp.TopLogprobs, st.TopLogprobs)
	require.Equal(t, lp.TextOffset, st.TextOffset)

	for _, temp := range []float64{0, 0.8} {
		cp := openai.ChatCompletionNewParams{
			Model: demoName, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Who made the light?")},
			MaxTokens: openai.Int(10), Temperature: openai.Float(temp), Seed: openai.Int(3), Logprobs: openai.Bool(true), TopLogprobs: openai.Int(5),
		}
		ch, err := c.Chat.Completions.New(ctx, cp)
		require.NoError(t, err)
		content := ch.Choices[0].Logprobs.Content
		require.NotEmpty(t, content)
		var joined strings.Builder
		for k, e := range content {
			joined.WriteString(e.Token)
			b := make([]byte, len(e.Bytes))
			for i, x := range e.Bytes {
				b[i] = byte(x)
			}
			require.Equal(t, e.Token, string(b), "bytes are the token's")
			require.Len(t, e.TopLogprobs, 5)
			var mass float64
			for i, a := range e.TopLogprobs {
				mass += math.Exp(a.Logprob)
				if i > 0 {
					require.LessOrEqual(t, a.Logprob, e.TopLogprobs[i-1].Logprob, "best first")
				}
			}
			require.LessOrEqual(t, mass, 1.0)
			require.LessOrEqual(t, e.Logprob, e.TopLogprobs[0].Logprob+1e-9)
			if temp == 0 {
				require.Equal(t, e.TopLogprobs[0].Token, e.Token, "greedy picks the top-1, token %d", k)
				require.Equal(t, e.TopLogprobs[0].Logprob, e.Logprob)
			}
		}
		require.True(t, strings.HasPrefix(joined.String(), ch.Choices[0].Message.Content), "the tokens spell the reply (and a stop string's tokens after it)")
		cs := c.Chat.Completions.NewStreaming(ctx, cp)
		var streamed []openai.ChatCompletionTokenLogprob
		for cs.Next() {
			if cur := cs.Current(); len(cur.Choices) > 0 {
				streamed = append(streamed, cur.Choices[0].Logprobs.Content...)
			}
		}
		require.NoError(t, cs.Err())
		require.Equal(t, len(content), len(streamed))
		for k := range content {
			require.Equal(t, content[k].RawJSON(), streamed[k].RawJSON(), "streamed token %d", k)
		}
	}

	plain, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: demoName,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}, MaxTokens: openai.Int(2)})
	require.NoError(t, err)
	require.Contains(t, plain.RawJSON(), `"logprobs":null`, "none unless asked for")
}

// nthBest is the n-th largest value of xs.
func nthBest(xs []float64, n int) float64 {
	top := make([]float64, 0, n+1)
	for _, x := range xs {
		top = append(top, x)
		for i := len(top) - 1; i > 0 && top[i] > top[i-1]; i-- {
			top[i], top[i-1] = top[i-1], top[i]
		}
		if len(top) > n {
			top = top[:n]
		}
	}
	return top[n-1]
}

// TestLogprobsOnTheGPUAreA400NamingTheField: on the GPU backend (the
// simulated device), whose logits never leave the device, logprobs on
// either endpoint are a 400 unsupported_value whose param is logprobs and
// whose message names the backend, before anything is queued; logprobs
// false is served. On any backend a top_logprobs outside 0..20, or
// without logprobs, and a completions logprobs outside 0..20 are 400
// invalid_value naming the field.
func TestLogprobsOnTheGPUAreA400NamingTheField(t *testing.T) {
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(modeltest.SimGPU(2<<30)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	ts := start(t, scheduler.Config{}, Options{}, model.WithDevice(dev))
	require.Contains(t, ts.m.Backend(), "gpu")
	const chat, comp = "/v1/chat/completions", "/v1/completions"
	msgs := `"messages":[{"role":"user","content":"x"}],"max_tokens":2`
	for _, tc := range []struct{ path, body, param, code string }{
		{chat, `{` + msgs + `,"logprobs":true}`, "logprobs", "unsupported_value"},
		{chat, `{` + msgs + `,"logprobs":true,"top_logprobs":3}`, "logprobs", "unsupported_value"},
		{comp, `{"prompt":"x","max_tokens":2,"logprobs":0}`, "logprobs", "unsupported_value"},
		{comp, `{"prompt":"x","max_tokens":2,"logprobs":5}`, "logprobs", "unsupported_value"},
		{chat, `{` + msgs + `,"logprobs":true,"top_logprobs":21}`, "top_logprobs", "invalid_value"},
		{chat, `{` + msgs + `,"top_logprobs":2}`, "top_logprobs", "invalid_value"},
		{comp, `{"prompt":"x","max_tokens":2,"logprobs":21}`, "logprobs", "invalid_value"},
		{comp, `{"prompt":"x","max_tokens":2,"logprobs":-1}`, "logprobs", "invalid_value"},
	} {
		status, got := post(t, ts.URL+tc.path, tc.body)
		require.Equal(t, http.StatusBadRequest, status, got)
		var e errorBody
		require.NoError(t, json.Unmarshal([]byte(got), &e))
		require.NotNil(t, e.Error.Param, got)
		require.Equal(t, tc.param, *e.Error.Param, got)
		require.Equal(t, tc.code, e.Error.Code, got)
		if tc.code == "unsupported_value" {
			require.Contains(t, e.Error.Message, ts.m.Backend(), "the message names the backend")
		}
	}
	require.Zero(t, ts.sched.Status().Running+ts.sched.Status().Queued)
	for _, tc := range []struct{ path, body string }{
		{chat, `{` + msgs + `,"logprobs":false}`},
		{chat, `{` + msgs + `,"logprobs":false,"top_logprobs":0}`},
	} {
		status, got := post(t, ts.URL+tc.path, tc.body)
		require.Equal(t, http.StatusOK, status, got)
		require.Contains(t, got, `"logprobs":null`)
	}
}

// TestTextOffsetCountsCharacters: a completion's text_offset counts
// characters, and a token that starts inside a character (a byte-level
// piece of part of it) has that character's offset.
func TestTextOffsetCountsCharacters(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{{"", 0}, {"ab", 2}, {"aé", 2}, {"a\xc3", 1}, {"é\xe2\x80", 1}, {"\xe2\x80\x99", 1}} {
		require.Equal(t, tc.want, charOffset([]byte(tc.text)), "%q", tc.text)
		require.LessOrEqual(t, tc.want, utf8.RuneCountInString(tc.text))
	}
}
