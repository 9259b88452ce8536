package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/internal/testenv"
	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/modeltest"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/runtime"
)

// structuredSchemas are the schemas the structured-output tests ask for.
// The demo model, trained on the Bible, never writes a quote of its own,
// so its strings are bounded (maxLength, enum, const) and its keys are
// the properties': an unbounded string or a free key would run to
// max_tokens.
var structuredSchemas = []struct{ name, schema string }{
	{"person", `{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":0,"maximum":120}},"required":["name","age"],"additionalProperties":false}`},
	{"nested objects", `{"type":"object","properties":{"who":{"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":8},"home":{"type":"object","properties":{"city":{"enum":["Jerusalem","Bethel","Hebron"]},"gate":{"type":"integer","minimum":1,"maximum":12}},"required":["city","gate"],"additionalProperties":false}},"required":["name","home"],"additionalProperties":false}},"required":["who"],"additionalProperties":false}`},
	{"array of integers", `{"type":"array","items":{"type":"integer","minimum":0,"maximum":9},"minItems":1,"maxItems":4}`},
	{"array of objects", `{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer","minimum":1,"maximum":99},"done":{"type":"boolean"}},"required":["id","done"],"additionalProperties":false},"minItems":1,"maxItems":3}`},
	{"nested arrays", `{"type":"array","items":{"type":"array","items":{"type":"number","minimum":0,"maximum":1},"maxItems":2},"minItems":2,"maxItems":2}`},
	{"string enum", `{"type":"string","enum":["north","south","east","west"]}`},
	{"mixed enum", `{"enum":[1,"two",null,true,{"k":[3]}]}`},
	{"const", `{"type":"object","properties":{"version":{"const":"1.0"},"ok":{"const":true}},"required":["version","ok"],"additionalProperties":false}`},
	{"boolean", `{"type":"boolean"}`},
	{"nullable string", `{"type":"object","properties":{"note":{"type":["string","null"],"maxLength":6}},"required":["note"],"additionalProperties":false}`},
	{"number bounds", `{"type":"object","properties":{"x":{"type":"number","exclusiveMinimum":-1,"exclusiveMaximum":1},"y":{"type":"number","minimum":100,"maximum":100.5}},"required":["x","y"],"additionalProperties":false}`},
	{"integer bounds", `{"type":"array","items":{"type":"integer","minimum":-50,"exclusiveMaximum":-10},"minItems":3,"maxItems":3}`},
	{"optional keys", `{"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":5},"b":{"type":"boolean"},"c":{"type":"null"}},"additionalProperties":false}`},
	{"required and optional", `{"type":"object","properties":{"title":{"type":"string","maxLength":10},"year":{"type":"integer","minimum":1,"maximum":2100},"tags":{"type":"array","items":{"enum":["law","poem","song"]},"maxItems":2}},"required":["title"],"additionalProperties":false}`},
	{"anyOf objects", `{"anyOf":[{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"integer","minimum":1,"maximum":9}},"required":["kind","r"],"additionalProperties":false},{"type":"object","properties":{"kind":{"const":"square"},"side":{"type":"integer","minimum":1,"maximum":9}},"required":["kind","side"],"additionalProperties":false}]}`},
	{"anyOf scalars", `{"type":"object","properties":{"v":{"anyOf":[{"type":"integer","minimum":0,"maximum":9},{"type":"string","maxLength":4},{"type":"null"}]}},"required":["v"],"additionalProperties":false}`},
	{"$ref to $defs", `{"type":"object","properties":{"from":{"$ref":"#/$defs/point"},"to":{"$ref":"#/$defs/point"}},"required":["from","to"],"additionalProperties":false,"$defs":{"point":{"type":"object","properties":{"x":{"type":"integer","minimum":-9,"maximum":9},"y":{"type":"integer","minimum":-9,"maximum":9}},"required":["x","y"],"additionalProperties":false}}}`},
	{"$ref to definitions", `{"type":"array","items":{"$ref":"#/definitions/verse"},"minItems":1,"maxItems":2,"definitions":{"verse":{"type":"object","properties":{"book":{"enum":["Genesis","Exodus"]},"chapter":{"type":"integer","minimum":1,"maximum":50}},"required":["book","chapter"],"additionalProperties":false}}}`},
	{"$ref in anyOf", `{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}],"$defs":{"a":{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":3}},"required":["n"],"additionalProperties":false}}}`},
	{"empty array allowed", `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":2}},"required":["items"],"additionalProperties":false}`},
	{"string lengths", `{"type":"object","properties":{"code":{"type":"string","minLength":3,"maxLength":3}},"required":["code"],"additionalProperties":false}`},
}

func compileSchema(t testing.TB, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("schema.json", doc))
	sch, err := c.Compile("schema.json")
	require.NoError(t, err)
	return sch
}

// chatJSON asks for a reply under the response_format rf and returns its
// content and finish_reason, whole or from the stream's deltas.
func chatJSON(t testing.TB, url, prompt, rf string, extra string, stream bool) (string, string) {
	t.Helper()
	p, err := json.Marshal(prompt)
	require.NoError(t, err)
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":%s}],"response_format":%s,"stream":%v%s}`, p, rf, stream, extra)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	type choice struct {
		Message, Delta *struct{ Content string }
		FinishReason   *string `json:"finish_reason"`
	}
	var content strings.Builder
	finish := ""
	take := func(data []byte) {
		var r struct{ Choices []choice }
		require.NoError(t, json.Unmarshal(data, &r), "%s", data)
		for _, c := range r.Choices {
			if c.Message != nil {
				content.WriteString(c.Message.Content)
			}
			if c.Delta != nil {
				content.WriteString(c.Delta.Content)
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	if !stream {
		var raw json.RawMessage
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&raw))
		take(raw)
		return content.String(), finish
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		take([]byte(line))
	}
	require.NoError(t, sc.Err())
	return content.String(), finish
}

func schemaFormat(name, schema string) string {
	return fmt.Sprintf(`{"type":"json_schema","json_schema":{"name":%q,"schema":%s,"strict":true}}`, name, schema)
}

// checkReply requires content to be a complete JSON value that validates
// against schema.
func checkReply(t testing.TB, sch *jsonschema.Schema, content, finish string) {
	t.Helper()
	require.Equal(t, "stop", finish, "%q", content)
	var v any
	require.NoError(t, json.Unmarshal([]byte(content), &v), "not JSON: %q", content)
	require.NoError(t, sch.Validate(v), "%s", content)
}

// TestResponseFormatJSONSchemaOnTheDemoModel: through the chat API, the
// demo model (trained on the Bible) answers each of 21 schemas, greedy and
// sampled, whole and streamed, with JSON that validates against it and
// finish_reason "stop"; without response_format the same request is not
// JSON.
func TestResponseFormatJSONSchemaOnTheDemoModel(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{})
	for _, s := range structuredSchemas {
		t.Run(s.name, func(t *testing.T) {
			sch := compileSchema(t, s.schema)
			for _, c := range []struct {
				extra  string
				stream bool
			}{
				{`,"temperature":0,"max_tokens":300`, false},
				{`,"temperature":0.9,"seed":5,"max_tokens":300`, true},
				{`,"temperature":1,"top_k":20,"seed":9,"max_tokens":300`, false},
			} {
				content, finish := chatJSON(t, ts.URL, "Reply in JSON.", schemaFormat(s.name, s.schema), c.extra, c.stream)
				checkReply(t, sch, content, finish)
			}
		})
	}
	prose, _ := chatJSON(t, ts.URL, "Reply in JSON.", `{"type":"text"}`, `,"temperature":0,"max_tokens":40`, false)
	require.False(t, json.Valid([]byte(prose)), "%q", prose)
}

// TestResponseFormatCutByMaxTokensIsLength: max_tokens that ends the JSON
// early is finish_reason "length", and the content is an incomplete
// prefix.
func TestResponseFormatCutByMaxTokensIsLength(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{})
	content, finish := chatJSON(t, ts.URL, "Reply in JSON.", schemaFormat("p", structuredSchemas[0].schema), `,"temperature":0,"max_tokens":3`, false)
	require.Equal(t, "length", finish)
	require.False(t, json.Valid([]byte(content)), "%q", content)
	require.True(t, strings.HasPrefix(strings.TrimSpace(content), "{"), "%q", content)
}

// TestResponseFormatOnTheGPUIsA400: on the GPU backend (the simulated
// device), whose logits never leave the device, json_object and
// json_schema are a 400 unsupported_value naming response_format and the
// backend, queueing nothing; text is served.
func TestResponseFormatOnTheGPUIsA400(t *testing.T) {
	dev, err := runtime.Open(context.Background(), runtime.WithDrivers(modeltest.SimGPU(2<<30)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	ts := start(t, scheduler.Config{}, Options{}, model.WithDevice(dev))
	for _, rf := range []string{`{"type":"json_object"}`, schemaFormat("a", `{"type":"object"}`)} {
		status, got := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"response_format":`+rf+`}`)
		require.Equal(t, http.StatusBadRequest, status, got)
		var e errorBody
		require.NoError(t, json.Unmarshal([]byte(got), &e))
		require.Equal(t, "response_format", *e.Error.Param)
		require.Equal(t, "unsupported_value", e.Error.Code)
		require.Contains(t, e.Error.Message, ts.m.Backend())
	}
	require.Zero(t, ts.sched.Status().Running+ts.sched.Status().Queued)
	status, got := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"response_format":{"type":"text"}}`)
	require.Equal(t, http.StatusOK, status, got)
}

// smolLM2Server serves the real SmolLM2-135M-Instruct (the GGUF in .cache;
// skipped without it unless the host tools are required).
func smolLM2Server(t *testing.T) string {
	path := testenv.CacheFile(t, "HIPGO_TEST_SMOLLM2_GGUF", "models/smollm2-135m-instruct-q4_1.gguf")
	m, err := model.Load(path)
	require.NoError(t, err)
	srv := New(Options{ModelName: "smollm2"})
	sch := scheduler.New(m, scheduler.Config{OnStep: srv.OnStep})
	srv.SetScheduler(sch)
	url := httptestServer(t, srv)
	t.Cleanup(func() { sch.Close(); _ = m.Close() })
	return url
}

// TestResponseFormatOnSmolLM2: SmolLM2-135M-Instruct, through its chat
// template, answers the same schemas, and schemas with unbounded strings,
// with JSON that validates, greedy and sampled; json_object gives a JSON
// object.
func TestResponseFormatOnSmolLM2(t *testing.T) {
	url := smolLM2Server(t)
	for _, extra := range []string{`,"temperature":0,"max_tokens":200`, `,"temperature":0.7,"seed":2,"max_tokens":200`} {
		content, finish := chatJSON(t, url, `What is 2+2? Reply with a JSON object with one key, "answer".`, `{"type":"json_object"}`, extra, false)
		require.Equal(t, "stop", finish, "%q", content)
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(content), &v), "%q", content)
	}
	schemas := append([]struct{ name, schema string }{
		{"free strings", `{"type":"object","properties":{"name":{"type":"string"},"city":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":130}},"required":["name","city","age"],"additionalProperties":false}`},
		{"list of strings", `{"type":"object","properties":{"fruits":{"type":"array","items":{"type":"string"},"minItems":2,"maxItems":4}},"required":["fruits"],"additionalProperties":false}`},
	}, structuredSchemas...)
	for _, s := range schemas {
		t.Run(s.name, func(t *testing.T) {
			sch := compileSchema(t, s.schema)
			for _, extra := range []string{`,"temperature":0,"max_tokens":200`, `,"temperature":0.7,"seed":1,"max_tokens":200`} {
				content, finish := chatJSON(t, url, "Reply with JSON for this JSON schema: "+s.schema, schemaFormat(s.name, s.schema), extra, false)
				checkReply(t, sch, content, finish)
			}
		})
	}
}

// TestResponseFormatThroughOpenAIGo: openai-go's json_schema response
// format gives, for each structured-output schema, a reply that validates
// against it, whole and streamed (the same with the same seed), and a
// refused keyword comes back as the client's 400 naming it.
func TestResponseFormatThroughOpenAIGo(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{APIKeys: []string{"k"}})
	c := client(ts, "k")
	ctx := context.Background()
	for _, s := range structuredSchemas {
		var schema map[string]any
		require.NoError(t, json.Unmarshal([]byte(s.schema), &schema))
		r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: demoName, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Reply in JSON.")},
			MaxTokens: openai.Int(300), Temperature: openai.Float(0),
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "s", Schema: schema, Strict: openai.Bool(true)}}},
		})
		require.NoError(t, err, s.name)
		checkReply(t, compileSchema(t, s.schema), r.Choices[0].Message.Content, string(r.Choices[0].FinishReason))
	}
	i := slices.IndexFunc(structuredSchemas, func(s struct{ name, schema string }) bool { return s.name == "$ref to $defs" })
	s := structuredSchemas[i]
	var schema map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.schema), &schema))
	params := openai.ChatCompletionNewParams{
		Model: demoName, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Where from, where to?")},
		MaxTokens: openai.Int(300), Temperature: openai.Float(0.7), Seed: openai.Int(8),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "route", Schema: schema, Strict: openai.Bool(true)}}},
	}
	sch := compileSchema(t, s.schema)
	r, err := c.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	checkReply(t, sch, r.Choices[0].Message.Content, string(r.Choices[0].FinishReason))

	stream := c.Chat.Completions.NewStreaming(ctx, params)
	var text strings.Builder
	finish := ""
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
			if ch.Choices[0].FinishReason != "" {
				finish = ch.Choices[0].FinishReason
			}
		}
	}
	require.NoError(t, stream.Err())
	checkReply(t, sch, text.String(), finish)
	require.Equal(t, r.Choices[0].Message.Content, text.String(), "the same seed streamed")

	params.ResponseFormat.OfJSONSchema.JSONSchema.Schema = map[string]any{"type": "string", "format": "date"}
	_, err = c.Chat.Completions.New(ctx, params)
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "response_format.json_schema.schema", apiErr.Param)
	require.Contains(t, apiErr.Message, "format")
}
