package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The wire types of the OpenAI API that the server reads and writes.

type streamOptions struct {
	IncludeUsage       bool  `json:"include_usage"`
	IncludeObfuscation *bool `json:"include_obfuscation"` // ignored: the server pads nothing
}

// common are the fields both generation endpoints take. Pointers tell a
// field left out from a zero. docs/serve.md lists every field with what
// the server does with it (TestDocsListEveryRequestField); a key that is
// no field is a 400, as it is in OpenAI's API.
type common struct {
	Model            string         `json:"model"`
	MaxTokens        *int           `json:"max_tokens"`
	Temperature      *float64       `json:"temperature"`
	TopP             *float64       `json:"top_p"`
	TopK             *int           `json:"top_k"` // an extension, as llama.cpp's server has
	MinP             *float64       `json:"min_p"` // an extension
	N                *int           `json:"n"`
	Seed             *int64         `json:"seed"`
	Stop             stopField      `json:"stop"`
	Stream           bool           `json:"stream"`
	StreamOptions    *streamOptions `json:"stream_options"`
	PresencePenalty  *float64       `json:"presence_penalty"`
	FrequencyPenalty *float64       `json:"frequency_penalty"`

	// logit_bias maps token ids (decimal strings) to biases;
	// repetition_penalty is an extension, as vLLM's server has it
	// (llama.cpp's calls it repeat_penalty).
	LogitBias         map[string]float64 `json:"logit_bias"`
	RepetitionPenalty *float64           `json:"repetition_penalty"`

	// Accepted and ignored: they do not change the answer.
	User             *string         `json:"user"`
	Metadata         json.RawMessage `json:"metadata"`
	Store            *bool           `json:"store"`
	ServiceTier      *string         `json:"service_tier"`
	PromptCacheKey   *string         `json:"prompt_cache_key"`
	SafetyIdentifier *string         `json:"safety_identifier"`
}

type chatRequest struct {
	common
	Messages            chatMessages `json:"messages"`
	MaxCompletionTokens *int         `json:"max_completion_tokens"`
	// top_logprobs (0..20) needs logprobs: true.
	Logprobs    *bool `json:"logprobs"`
	TopLogprobs *int  `json:"top_logprobs"`

	// response_format: text, json_object or json_schema, by constrained
	// decoding (responseFormat).
	ResponseFormat *responseFormatRequest `json:"response_format"`

	// Refused (400 unsupported_value) unless they ask for what the server
	// does anyway: see chatRefusals.
	Tools            json.RawMessage `json:"tools"`
	ToolChoice       json.RawMessage `json:"tool_choice"`
	Functions        json.RawMessage `json:"functions"`
	FunctionCall     json.RawMessage `json:"function_call"`
	Audio            json.RawMessage `json:"audio"`
	Modalities       json.RawMessage `json:"modalities"`
	ReasoningEffort  json.RawMessage `json:"reasoning_effort"`
	Verbosity        json.RawMessage `json:"verbosity"`
	WebSearchOptions json.RawMessage `json:"web_search_options"`

	// Accepted and ignored: without tools there is nothing to call in
	// parallel, and a prediction only speeds OpenAI's answer up.
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Prediction        json.RawMessage `json:"prediction"`
}

type completionRequest struct {
	common
	Prompt json.RawMessage `json:"prompt"`
	// Logprobs is the legacy API's: how many top logprobs to list (0..20),
	// the sampled token's always.
	Logprobs *int `json:"logprobs"`

	// Refused unless they ask for what the server does anyway: see
	// completionRefusals.
	Echo   json.RawMessage `json:"echo"`
	BestOf json.RawMessage `json:"best_of"`
	Suffix json.RawMessage `json:"suffix"`
}

// chatMessages decodes each message on its own, so that a message of the
// wrong shape is an error naming it (messages[2].content).
type chatMessages []chatMessage

func (m *chatMessages) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*m = nil
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return &fieldError{"messages", "expected an array of messages"}
	}
	out := make(chatMessages, len(raw))
	for i, r := range raw {
		err := json.Unmarshal(r, &out[i])
		var te *json.UnmarshalTypeError
		var fe *fieldError
		switch {
		case errors.As(err, &fe):
			return &fieldError{fmt.Sprintf("messages[%d].%s", i, fe.path), fe.msg}
		case errors.As(err, &te) && te.Field != "":
			return &fieldError{fmt.Sprintf("messages[%d].%s", i, te.Field), fmt.Sprintf("expected %s, got JSON %s", jsonKind(te.Type), te.Value)}
		case err != nil:
			return &fieldError{fmt.Sprintf("messages[%d]", i), "expected a message object"}
		}
	}
	*m = out
	return nil
}

type chatMessage struct {
	Role    string         `json:"role"`
	Content messageContent `json:"content"`

	// Refused unless null: the chat template has no place for them.
	Name       json.RawMessage `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID json.RawMessage `json:"tool_call_id"`
	// FunctionCall, Refusal and Audio come back from OpenAI in an assistant
	// message; a client may send them back with the conversation.
	FunctionCall json.RawMessage `json:"function_call"`
	Refusal      json.RawMessage `json:"refusal"`
	Audio        json.RawMessage `json:"audio"`
}

// messageContent is a string or an array of content parts, of which only
// text parts are accepted.
type messageContent string

func (c *messageContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = messageContent(s)
		return nil
	}
	if string(b) == "null" {
		*c = ""
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return &fieldError{"content", "expected a string or an array of content parts"}
	}
	var s string
	for i, p := range parts {
		if p.Type != "text" {
			return &fieldError{fmt.Sprintf("content[%d].type", i), fmt.Sprintf("content part of type %q: only text parts are supported", p.Type)}
		}
		s += p.Text
	}
	*c = messageContent(s)
	return nil
}

// stopField is a string or an array of strings.
type stopField []string

func (s *stopField) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = stopField{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return &fieldError{"stop", "expected a string or an array of strings"}
	}
	*s = many
	return nil
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      *wireMessage  `json:"message,omitempty"`
	Delta        *wireMessage  `json:"delta,omitempty"`
	FinishReason *string       `json:"finish_reason"`
	Logprobs     *chatLogprobs `json:"logprobs"`
}

type wireMessage struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

type chatResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []chatChoice `json:"choices"`
	Usage             *usage       `json:"usage,omitempty"`
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	FinishReason *string             `json:"finish_reason"`
	Logprobs     *completionLogprobs `json:"logprobs"`
}

type completionResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             *usage             `json:"usage,omitempty"`
}

type modelList struct {
	Object string      `json:"object"`
	Data   []modelInfo `json:"data"`
}

type modelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}
