package server

import (
	"encoding/json"
	"reflect"
)

// refusal is a request field the server does not implement. Its absence,
// null, or one of the values that ask for nothing beyond what the server
// does anyway (tools [], tool_choice "none")
// are accepted; anything else is a 400 unsupported_value naming it, since
// ignoring it would change the answer behind the client's back.
type refusal struct {
	param    string
	value    json.RawMessage
	defaults []string // JSON values accepted as asking for nothing
	why      string
}

// refuse is the 400 of the first refusal whose value asks for something.
func refuse(rs ...refusal) *apiError {
	for _, r := range rs {
		if !asksNothing(r.value, r.defaults) {
			return badRequest(r.param, "unsupported_value", "%s", r.why)
		}
	}
	return nil
}

// asksNothing reports whether v is absent, null or equal, as JSON, to one
// of defaults (so 1 and 1.0, or {} and { }, are the same).
func asksNothing(v json.RawMessage, defaults []string) bool {
	if len(v) == 0 {
		return true
	}
	var got any
	if err := json.Unmarshal(v, &got); err != nil {
		return false
	}
	if got == nil {
		return true
	}
	for _, d := range defaults {
		var want any
		if json.Unmarshal([]byte(d), &want) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}

func chatRefusals(r *chatRequest) []refusal {
	return []refusal{
		{"tools", r.Tools, []string{"[]"}, "tools are not supported"},
		{"tool_choice", r.ToolChoice, []string{`"none"`}, "tools are not supported (tool_choice may only be \"none\")"},
		{"functions", r.Functions, []string{"[]"}, "functions are not supported"},
		{"function_call", r.FunctionCall, []string{`"none"`}, "functions are not supported (function_call may only be \"none\")"},
		{"audio", r.Audio, nil, "audio output is not supported"},
		{"modalities", r.Modalities, []string{`["text"]`}, "only the text modality is supported"},
		{"reasoning_effort", r.ReasoningEffort, nil, "reasoning_effort is not supported"},
		{"verbosity", r.Verbosity, nil, "verbosity is not supported"},
		{"web_search_options", r.WebSearchOptions, nil, "web search is not supported"},
	}
}

func completionRefusals(r *completionRequest) []refusal {
	return []refusal{
		{"echo", r.Echo, []string{"false"}, "echo is not supported"},
		{"best_of", r.BestOf, []string{"1"}, "only best_of = 1 is supported"},
		{"suffix", r.Suffix, []string{`""`}, "suffix (insertion) is not supported"},
	}
}

// messageRefusals are the message fields the chat template has no place
// for; param is the message's path (messages[2]).
func messageRefusals(param string, m *chatMessage) []refusal {
	return []refusal{
		{param + ".name", m.Name, []string{`""`}, "message names are not supported (the chat template has no place for them)"},
		{param + ".tool_calls", m.ToolCalls, []string{"[]"}, "tool calls are not supported"},
		{param + ".tool_call_id", m.ToolCallID, nil, "tool calls are not supported"},
		{param + ".function_call", m.FunctionCall, nil, "functions are not supported"},
		{param + ".refusal", m.Refusal, nil, "refusal messages are not supported"},
		{param + ".audio", m.Audio, nil, "audio is not supported"},
	}
}
