package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/scheduler"
)

// TestBadInputIsA400NamingTheField proves each kind of bad input is a 400
// with an OpenAI error whose param names the field, and costs the server
// nothing (the next request is served).
func TestBadInputIsA400NamingTheField(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{MaxBodyBytes: 4096}, model.WithContextLength(64))
	long := strings.Repeat("and ", 200)
	for _, tc := range []struct {
		name, path, body, param, code string
	}{
		{"bad json", "/v1/completions", `{"prompt": "x",`, "body", "invalid_json"},
		{"wrong type", "/v1/completions", `{"prompt": "x", "max_tokens": "many"}`, "max_tokens", "invalid_type"},
		{"unknown model", "/v1/completions", `{"model": "gpt-4", "prompt": "x"}`, "model", "model_not_found"},
		{"n > 1", "/v1/chat/completions", `{"messages": [{"role":"user","content":"x"}], "n": 2}`, "n", "unsupported_value"},
		{"temperature", "/v1/completions", `{"prompt": "x", "temperature": -1}`, "temperature", "invalid_value"},
		{"top_p", "/v1/completions", `{"prompt": "x", "top_p": 0}`, "top_p", "invalid_value"},
		{"top_k", "/v1/completions", `{"prompt": "x", "top_k": -3}`, "top_k", "invalid_value"},
		{"min_p", "/v1/completions", `{"prompt": "x", "min_p": 2}`, "min_p", "invalid_value"},
		{"max_tokens", "/v1/completions", `{"prompt": "x", "max_tokens": 0}`, "max_tokens", "invalid_value"},
		{"max_tokens past the context", "/v1/completions", `{"prompt": "x", "max_tokens": 1000}`, "max_tokens", "context_length_exceeded"},
		{"max_completion_tokens", "/v1/chat/completions", `{"messages": [{"role":"user","content":"x"}], "max_completion_tokens": 1000}`, "max_completion_tokens", "context_length_exceeded"},
		{"prompt past the context", "/v1/completions", `{"prompt": "` + long[:400] + `"}`, "prompt", "context_length_exceeded"},
		{"oversize body", "/v1/completions", `{"prompt": "` + long + long + long + long + long + long + `"}`, "body", "body_too_large"},
		{"no prompt", "/v1/completions", `{}`, "prompt", "invalid_value"},
		{"no messages", "/v1/chat/completions", `{"messages": []}`, "messages", "invalid_value"},
		{"bad role", "/v1/chat/completions", `{"messages": [{"role":"wizard","content":"x"}]}`, "messages[0].role", "invalid_value"},
		{"empty stop", "/v1/completions", `{"prompt": "x", "stop": ["a", ""]}`, "stop", "invalid_value"},
		{"five stops", "/v1/completions", `{"prompt": "x", "stop": ["a","b","c","d","e"]}`, "stop", "invalid_value"},
		{"presence_penalty", "/v1/completions", `{"prompt": "x", "presence_penalty": 2.5}`, "presence_penalty", "invalid_value"},
		{"frequency_penalty", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"frequency_penalty":-3}`, "frequency_penalty", "invalid_value"},
		{"repetition_penalty 0", "/v1/completions", `{"prompt": "x", "repetition_penalty": 0}`, "repetition_penalty", "invalid_value"},
		{"repetition_penalty negative", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"repetition_penalty":-1.1}`, "repetition_penalty", "invalid_value"},
		{"logit_bias over 100", "/v1/completions", `{"prompt": "x", "logit_bias": {"50": 100.5}}`, "logit_bias", "invalid_value"},
		{"logit_bias key not an id", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"logit_bias":{"the":5}}`, "logit_bias", "invalid_value"},
		{"logit_bias key negative", "/v1/completions", `{"prompt": "x", "logit_bias": {"-1": 5}}`, "logit_bias", "invalid_value"},
		{"logit_bias key past the vocabulary", "/v1/completions", `{"prompt": "x", "logit_bias": {"4096": 5}}`, "logit_bias", "invalid_value"},
		{"logit_bias value a string", "/v1/completions", `{"prompt": "x", "logit_bias": {"50": "up"}}`, "logit_bias", "invalid_type"},
		{"logit_bias an array", "/v1/completions", `{"prompt": "x", "logit_bias": [1]}`, "logit_bias", "invalid_type"},
		// Strict bodies: keys in their case and once, one JSON value, and
		// type errors with the field's path.
		{"key in another case", "/v1/completions", `{"prompt":"x","max_tokens":2,"MAX_TOKENS":6}`, "MAX_TOKENS", "unknown_field"},
		{"key twice", "/v1/completions", `{"prompt":"x","max_tokens":2,"max_tokens":6}`, "max_tokens", "duplicate_key"},
		{"key twice in a message", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x","content":"y"}]}`, "messages[0].content", "duplicate_key"},
		{"nested key in another case", "/v1/chat/completions", `{"messages":[{"Role":"user","content":"x"}]}`, "messages[0].Role", "unknown_field"},
		{"trailing data", "/v1/completions", `{"prompt":"x","max_tokens":2} GARBAGE`, "body", "invalid_json"},
		{"two values", "/v1/completions", `{"prompt":"x"}{"prompt":"y"}`, "body", "invalid_json"},
		{"messages not an array", "/v1/chat/completions", `{"messages":"hi"}`, "messages", "invalid_type"},
		{"content a number", "/v1/chat/completions", `{"messages":[{"role":"user","content":5}]}`, "messages[0].content", "invalid_type"},
		{"role a number", "/v1/chat/completions", `{"messages":[{"role":1,"content":"x"}]}`, "messages[0].role", "invalid_type"},
		{"an image part", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "messages[0].content[0].type", "invalid_type"},
		{"stop a number", "/v1/completions", `{"prompt":"x","stop":3}`, "stop", "invalid_type"},
		// A key that is no field is refused, as OpenAI's API refuses it,
		// at any depth the server describes.
		{"unknown field", "/v1/completions", `{"prompt":"x","foo":1}`, "foo", "unknown_field"},
		{"unknown chat field", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"repeat_penalty":1.1}`, "repeat_penalty", "unknown_field"},
		{"chat field on completions", "/v1/completions", `{"prompt":"x","response_format":{"type":"text"}}`, "response_format", "unknown_field"},
		{"unknown message field", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x","mood":"glad"}]}`, "messages[0].mood", "unknown_field"},
		{"unknown stream option", "/v1/completions", `{"prompt":"x","stream_options":{"include_usage":true,"extra":1}}`, "stream_options.extra", "unknown_field"},
		// Fields that would change the answer and are not implemented.
		// response_format: a schema keyword constrained decoding does not
		// implement, and malformed formats and schemas.
		{"schema pattern", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object","properties":{"s":{"type":"string","pattern":"^a"}}}}}}`, "response_format.json_schema.schema", "unsupported_value"},
		{"schema oneOf", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"oneOf":[{"type":"string"}]}}}}`, "response_format.json_schema.schema", "unsupported_value"},
		{"schema unknown type", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"strung"}}}}`, "response_format.json_schema.schema", "invalid_value"},
		{"schema not an object", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":[1]}}}`, "response_format.json_schema.schema", "invalid_value"},
		{"schema missing", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a"}}}`, "response_format.json_schema.schema", "invalid_value"},
		{"schema name missing", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"schema":{}}}}`, "response_format.json_schema.name", "invalid_value"},
		{"json_schema missing", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}}`, "response_format.json_schema", "invalid_value"},
		{"response_format type", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}}`, "response_format.type", "invalid_value"},
		{"response_format unknown key", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object","grammar":"x"}}`, "response_format.grammar", "unknown_field"},
		{"response_format a string", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":"json"}`, "response_format", "invalid_type"},
		{"tools", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}]}`, "tools", "unsupported_value"},
		{"tool_choice", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"tool_choice":"auto"}`, "tool_choice", "unsupported_value"},
		{"functions", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"functions":[{"name":"f"}]}`, "functions", "unsupported_value"},
		{"function_call", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"function_call":{"name":"f"}}`, "function_call", "unsupported_value"},
		{"suffix", "/v1/completions", `{"prompt":"x","suffix":"y"}`, "suffix", "unsupported_value"},
		{"top_logprobs without logprobs", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_logprobs":2}`, "top_logprobs", "invalid_value"},
		{"top_logprobs 21", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21}`, "top_logprobs", "invalid_value"},
		{"completion logprobs 21", "/v1/completions", `{"prompt":"x","logprobs":21}`, "logprobs", "invalid_value"},
		{"completion logprobs true", "/v1/completions", `{"prompt":"x","logprobs":true}`, "logprobs", "invalid_type"},
		{"n > 1 completions", "/v1/completions", `{"prompt":"x","n":3}`, "n", "unsupported_value"},
		{"best_of", "/v1/completions", `{"prompt":"x","best_of":2}`, "best_of", "unsupported_value"},
		{"echo", "/v1/completions", `{"prompt":"x","echo":true}`, "echo", "unsupported_value"},
		{"audio", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"audio":{"voice":"alloy","format":"wav"}}`, "audio", "unsupported_value"},
		{"modalities", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"modalities":["text","audio"]}`, "modalities", "unsupported_value"},
		{"reasoning_effort", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"reasoning_effort":"low"}`, "reasoning_effort", "unsupported_value"},
		{"verbosity", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"verbosity":"low"}`, "verbosity", "unsupported_value"},
		{"web_search_options", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"web_search_options":{}}`, "web_search_options", "unsupported_value"},
		{"message name", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"},{"role":"user","content":"y","name":"bob"}]}`, "messages[1].name", "unsupported_value"},
		{"message tool_calls", "/v1/chat/completions", `{"messages":[{"role":"assistant","content":"x","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_calls", "unsupported_value"},
		{"message tool_call_id", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x","tool_call_id":"1"}]}`, "messages[0].tool_call_id", "unsupported_value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, ts.URL+tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, status, body)
			var e errorBody
			require.NoError(t, json.Unmarshal([]byte(body), &e), body)
			require.NotNil(t, e.Error.Param, body)
			require.Equal(t, tc.param, *e.Error.Param)
			require.Equal(t, tc.code, e.Error.Code)
			require.Equal(t, "invalid_request_error", e.Error.Type)
			require.NotEmpty(t, e.Error.RequestID)
			require.True(t, strings.HasPrefix(e.Error.Message, tc.param+": "), "the message names the field: %s", e.Error.Message)
			require.NotContains(t, e.Error.Message, "server.", "no Go type names")
			require.NotContains(t, e.Error.Message, "*int")
		})
	}
	status, body := post(t, ts.URL+"/v1/completions", `{"prompt": "x", "max_tokens": 2}`)
	require.Equal(t, http.StatusOK, status, body)
}

// TestQueueFullIs429WithRetryAfter proves a request beyond the queue is a
// 429 with Retry-After while the batch and the queue are full (the steps
// are held at a gate so they stay full).
func TestQueueFullIs429WithRetryAfter(t *testing.T) {
	gate := make(chan struct{})
	stepping := make(chan struct{}, 1)
	ts := start(t, scheduler.Config{MaxBatch: 1, MaxQueue: 1}, Options{}, model.WithStepFaults(func(uint64) error {
		select {
		case stepping <- struct{}{}:
		default:
		}
		<-gate
		return nil
	}))
	done := make(chan int, 2)
	for range 2 { // one running (held in its step), one queued
		go func() {
			status, _ := post(t, ts.URL+"/v1/completions", `{"prompt": "x", "max_tokens": 2}`)
			done <- status
		}()
	}
	<-stepping
	for i := 0; ts.sched.Status().Queued < 1; i++ {
		require.Less(t, i, 5000, "the second request never reached the queue")
		time.Sleep(time.Millisecond)
	}
	got, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "x", "max_tokens": 1}`))
	require.NoError(t, err)
	got.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, got.StatusCode)
	close(gate)
	require.Equal(t, "1", got.Header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, <-done)
	require.Equal(t, http.StatusOK, <-done)
}
