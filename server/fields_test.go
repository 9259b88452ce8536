package server

import (
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model/scheduler"
)

// TestFieldsThatAskForNothingAreAccepted: the fields the server ignores
// (they do not change the answer) and the refused fields at their
// defaults or null are 200s, on both endpoints; the refusals are
// TestBadInputIsA400NamingTheField's.
func TestFieldsThatAskForNothingAreAccepted(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{})
	ignored := `"user":"u","metadata":{"k":"v"},"store":true,"service_tier":"auto","prompt_cache_key":"c","safety_identifier":"s","stream_options":{"include_usage":true,"include_obfuscation":false}`
	for _, tc := range []struct{ name, path, body string }{
		{"chat defaults", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x","name":""},{"role":"assistant","content":"y","tool_calls":[],"refusal":null,"function_call":null,"audio":null,"tool_call_id":null}],
			"logprobs":false,"logit_bias":{},"response_format":{"type":"text"},"tools":[],"tool_choice":"none","functions":[],"function_call":"none","modalities":["text"],
			"n":1,"presence_penalty":0,"frequency_penalty":0.0,"parallel_tool_calls":true,"prediction":{"type":"content","content":"y"},` + ignored + `}`},
		{"chat nulls", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x","name":null}],"logprobs":null,"top_logprobs":null,"logit_bias":null,"response_format":null,"tools":null,"tool_choice":null,
			"functions":null,"function_call":null,"audio":null,"modalities":null,"reasoning_effort":null,"verbosity":null,"web_search_options":null}`},
		{"completion defaults", "/v1/completions", `{"prompt":"x","echo":false,"best_of":1,"logit_bias":{},"suffix":"","n":1,` + ignored + `}`},
		{"completion nulls", "/v1/completions", `{"prompt":"x","echo":null,"best_of":null,"logprobs":null,"logit_bias":null,"suffix":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Replace(tc.body, "{", `{"max_tokens":1,`, 1)
			status, got := post(t, ts.URL+tc.path, body)
			require.Equal(t, 200, status, got)
		})
	}
}

// TestDocsListEveryRequestField: docs/serve.md's field table names every
// field the server reads (top level, messages[].x, stream_options.x) with
// the endpoints that take it, and nothing else, so a field added to the
// wire types without saying what it does fails here.
func TestDocsListEveryRequestField(t *testing.T) {
	doc, err := os.ReadFile("../docs/serve.md")
	require.NoError(t, err)
	documented := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_.\\[\\]]+)` \\| (both|chat|completions) \\|").FindAllStringSubmatch(string(doc), -1) {
		require.NotContains(t, documented, m[1], "listed twice")
		documented[m[1]] = m[2]
	}
	fields := func(v any) map[string]bool {
		out := map[string]bool{}
		for k := range structFields(reflect.TypeOf(v)) {
			out[k] = true
		}
		for k := range structFields(reflect.TypeOf(streamOptions{})) {
			out["stream_options."+k] = true
		}
		return out
	}
	chat, comp := fields(chatRequest{}), fields(completionRequest{})
	for k := range structFields(reflect.TypeOf(chatMessage{})) {
		chat["messages[]."+k] = true
	}
	want := map[string]string{}
	for k := range chat {
		want[k] = "chat"
	}
	for k := range comp {
		want[k] = map[bool]string{true: "both", false: "completions"}[chat[k]]
	}
	require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(documented)), "the fields docs/serve.md lists")
	require.Equal(t, want, documented, "the endpoints of each field")
}
