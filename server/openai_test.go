package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/runtime"
)

func client(ts *testServer, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// TestOpenAIGoClient proves the official Go client reads every answer:
// chat and completions, whole and streamed (usage in the last chunk with
// include_usage), the same seed giving the same text both ways, and the
// text matching what model.Generate gives for the same prompt and seed.
func TestOpenAIGoClient(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{APIKeys: []string{"k"}})
	c := client(ts, "k")
	ctx := context.Background()

	comp, err := c.Completions.New(ctx, openai.CompletionNewParams{
		Model: demoName, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("And God said")},
		MaxTokens: openai.Int(12), Temperature: openai.Float(0.8), Seed: openai.Int(42),
	})
	require.NoError(t, err)
	require.Len(t, comp.Choices, 1)
	want, err := ts.m.Generate(ctx, "And God said", model.GenerateOptions{MaxTokens: 12, Temperature: 0.8, TopP: 1, Seed: 42}, nil)
	require.NoError(t, err)
	require.Equal(t, want.Text, comp.Choices[0].Text, "the server's text is Generate's for the same seed")
	require.Equal(t, "length", string(comp.Choices[0].FinishReason))
	require.EqualValues(t, 12, comp.Usage.CompletionTokens)
	require.EqualValues(t, want.PromptTokens, comp.Usage.PromptTokens)
	t.Logf("completion: %q", comp.Choices[0].Text)

	stream := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model: demoName, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("And God said")},
		MaxTokens: openai.Int(12), Temperature: openai.Float(0.8), Seed: openai.Int(42),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var text strings.Builder
	var chunks int
	var last openai.Completion
	for stream.Next() {
		ev := stream.Current()
		if len(ev.Choices) > 0 {
			text.WriteString(ev.Choices[0].Text)
			chunks++
		}
		last = ev
	}
	require.NoError(t, stream.Err())
	require.Equal(t, comp.Choices[0].Text, text.String(), "streamed text is the same")
	require.Greater(t, chunks, 2, "the text arrived in pieces")
	require.EqualValues(t, 12, last.Usage.CompletionTokens, "usage in the last chunk")

	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Who made the light?")}
	cc, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: demoName, Messages: msgs, MaxTokens: openai.Int(16), Seed: openai.Int(7)})
	require.NoError(t, err)
	require.Equal(t, "assistant", string(cc.Choices[0].Message.Role))
	require.NotEmpty(t, cc.Choices[0].Message.Content)
	require.NotContains(t, cc.Choices[0].Message.Content, "User:", "the plain format stops at the next turn")
	t.Logf("chat: %q (%s)", cc.Choices[0].Message.Content, cc.Choices[0].FinishReason)

	cs := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: demoName, Messages: msgs, MaxTokens: openai.Int(16), Seed: openai.Int(7),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var acc openai.ChatCompletionAccumulator
	for cs.Next() {
		acc.AddChunk(cs.Current())
	}
	require.NoError(t, cs.Err())
	require.Equal(t, cc.Choices[0].Message.Content, acc.Choices[0].Message.Content)
	require.Equal(t, cc.Usage.CompletionTokens, acc.Usage.CompletionTokens)

	models, err := c.Models.List(ctx)
	require.NoError(t, err)
	require.Equal(t, demoName, models.Data[0].ID)
}

// TestOpenAIGoClientErrors proves the errors as the Go client sees them: a
// *openai.Error with the status, type, param and code, for a wrong API key,
// an unknown model, n > 1, an out-of-range parameter, a failed step (500,
// and an error event that ends a stream), and a lost device (503).
func TestOpenAIGoClientErrors(t *testing.T) {
	ctx := context.Background()
	var failNext, lose atomic.Bool
	faults := model.WithStepFaults(func(uint64) error {
		switch {
		case lose.Load():
			return &runtime.DeviceLostError{Device: "sim:0", Cause: errors.New("illegal address")}
		case failNext.Load():
			return &runtime.LaunchError{Kernel: "matmul", Reason: "injected"}
		}
		return nil
	})
	ts := start(t, scheduler.Config{MaxFailedSteps: -1}, Options{APIKeys: []string{"k"}}, faults)
	c := client(ts, "k")
	params := func() openai.CompletionNewParams {
		return openai.CompletionNewParams{Model: demoName, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("In the beginning")}, MaxTokens: openai.Int(4)}
	}
	apiErr := func(err error) *openai.Error {
		t.Helper()
		var e *openai.Error
		require.ErrorAs(t, err, &e)
		return e
	}
	wrong := client(ts, "wrong")
	_, err := wrong.Completions.New(ctx, params())
	require.Equal(t, http.StatusUnauthorized, apiErr(err).StatusCode)

	p := params()
	p.Model = "gpt-4o"
	_, err = c.Completions.New(ctx, p)
	e := apiErr(err)
	require.Equal(t, http.StatusBadRequest, e.StatusCode)
	require.Equal(t, "model", e.Param)
	require.Equal(t, "model_not_found", e.Code)

	p = params()
	p.N = openai.Int(2)
	_, err = c.Completions.New(ctx, p)
	require.Equal(t, "n", apiErr(err).Param)

	p = params()
	p.TopP = openai.Float(1.5)
	_, err = c.Completions.New(ctx, p)
	e = apiErr(err)
	require.Equal(t, "top_p", e.Param)
	require.Contains(t, e.Message, "must be in (0, 1]", "the sampling package's rule")

	failNext.Store(true)
	_, err = c.Completions.New(ctx, params())
	e = apiErr(err)
	require.Equal(t, http.StatusInternalServerError, e.StatusCode)
	require.Equal(t, "server_error", e.Type)
	require.Contains(t, e.Message, "injected")

	s := c.Completions.NewStreaming(ctx, params())
	for s.Next() {
	}
	require.ErrorContains(t, s.Err(), "injected", "the error event ends the stream")
	failNext.Store(false)
	_, err = c.Completions.New(ctx, params())
	require.NoError(t, err, "later requests are served")

	lose.Store(true)
	_, err = c.Completions.New(ctx, params())
	e = apiErr(err)
	require.Equal(t, http.StatusServiceUnavailable, e.StatusCode)
	require.Equal(t, "device_lost", e.Code)
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: demoName, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	require.Equal(t, http.StatusServiceUnavailable, apiErr(err).StatusCode, "new requests get 503 at once")
}
