package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/runtime"
)

// TestPenaltiesThroughTheAPI: on the CPU, presence, frequency and
// repetition penalties and logit_bias sent through the OpenAI Go client
// (repetition_penalty as an extra field) give the text model.Generate gives
// with the same options (whose penalised draws
// TestPenaltiesMatchADirectComputationOnTheLogits checks against the
// logits), whole and streamed, a text other than without them; and greedy
// completion under a bias of 100 on one token is that token's text over
// and over.
func TestPenaltiesThroughTheAPI(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{APIKeys: []string{"k"}})
	c := client(ts, "k")
	ctx := context.Background()
	const prompt = "And God said"
	ids, err := ts.m.PromptTokens(prompt)
	require.NoError(t, err)
	biased := ids[len(ids)-1] // "said": a token the model would not repeat at once

	params := openai.CompletionNewParams{
		Model: demoName, Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens: openai.Int(16), Temperature: openai.Float(0.8), Seed: openai.Int(7),
		PresencePenalty: openai.Float(0.5), FrequencyPenalty: openai.Float(1.5),
		LogitBias: map[string]int64{fmt.Sprint(ids[0]): 4},
	}
	extra := option.WithJSONSet("repetition_penalty", 1.3)
	comp, err := c.Completions.New(ctx, params, extra)
	require.NoError(t, err)
	want, err := ts.m.Generate(ctx, prompt, model.GenerateOptions{MaxTokens: 16, Temperature: 0.8, TopP: 1, Seed: 7,
		PresencePenalty: 0.5, FrequencyPenalty: 1.5, RepetitionPenalty: 1.3, LogitBias: map[uint32]float32{ids[0]: 4}}, nil)
	require.NoError(t, err)
	require.Equal(t, want.Text, comp.Choices[0].Text, "the server's text is Generate's with the same penalties")
	plain, err := ts.m.Generate(ctx, prompt, model.GenerateOptions{MaxTokens: 16, Temperature: 0.8, TopP: 1, Seed: 7}, nil)
	require.NoError(t, err)
	require.NotEqual(t, plain.Text, comp.Choices[0].Text, "the penalties changed the text")

	stream := c.Completions.NewStreaming(ctx, params, extra)
	var text strings.Builder
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Text)
		}
	}
	require.NoError(t, stream.Err())
	require.Equal(t, want.Text, text.String(), "streamed")

	chat, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: demoName, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Who made the light?")},
		MaxTokens: openai.Int(8), Temperature: openai.Float(0), LogitBias: map[string]int64{fmt.Sprint(biased): 100},
	})
	require.NoError(t, err)
	piece, ok := ts.m.Tokenizer().Piece(biased)
	require.True(t, ok)
	require.Equal(t, strings.Repeat(string(piece), 8), chat.Choices[0].Message.Content, "greedy under a bias of 100 picks the biased token every time")
}

// TestPenaltiesOnTheGPUAreA400NamingTheField: on the GPU backend (the
// simulated device), which samples on the device, each penalty that asks
// for something is a 400 unsupported_value whose param is the field and
// whose message names the backend, on both endpoints, before anything is
// queued; the values that ask for nothing are served, and a range error
// is still invalid_value.
func TestPenaltiesOnTheGPUAreA400NamingTheField(t *testing.T) {
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(modeltest.SimGPU(2<<30)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	ts := start(t, scheduler.Config{}, Options{}, model.WithDevice(dev))
	require.Contains(t, ts.m.Backend(), "gpu")
	for _, tc := range []struct{ field, value string }{
		{"logit_bias", `{"5": -100}`},
		{"presence_penalty", `0.5`},
		{"frequency_penalty", `-1`},
		{"repetition_penalty", `1.2`},
	} {
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			body := `{"prompt":"x","max_tokens":2,"` + tc.field + `":` + tc.value + `}`
			if strings.Contains(path, "chat") {
				body = `{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"` + tc.field + `":` + tc.value + `}`
			}
			status, got := post(t, ts.URL+path, body)
			require.Equal(t, http.StatusBadRequest, status, got)
			var e errorBody
			require.NoError(t, json.Unmarshal([]byte(got), &e))
			require.NotNil(t, e.Error.Param, got)
			require.Equal(t, tc.field, *e.Error.Param, got)
			require.Equal(t, "unsupported_value", e.Error.Code)
			require.True(t, strings.HasPrefix(e.Error.Message, tc.field+": "), e.Error.Message)
			require.Contains(t, e.Error.Message, ts.m.Backend(), "the message names the backend")
			require.NotEmpty(t, e.Error.RequestID)
		}
	}
	require.Zero(t, ts.sched.Status().Running+ts.sched.Status().Queued)
	status, got := post(t, ts.URL+"/v1/completions", `{"prompt":"x","max_tokens":2,"presence_penalty":0,"frequency_penalty":0,"repetition_penalty":1,"logit_bias":{"5":0}}`)
	require.Equal(t, http.StatusOK, status, got)
	status, got = post(t, ts.URL+"/v1/completions", `{"prompt":"x","max_tokens":2,"presence_penalty":3}`)
	require.Equal(t, http.StatusBadRequest, status, got)
	require.Contains(t, got, `"code":"invalid_value"`)
}
