package server

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/hipgo/hipgo/model/scheduler"
)

// withBOS is the demo model with a tokenizer whose post-processor puts
// <|endoftext|> (id 0) first, as Llama 3's puts BOS: add_special then
// changes what /tokenize returns.
func withBOS(t *testing.T) fs.FS {
	t.Helper()
	files := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(demo.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(demo.FS(), p)
		files[p] = &fstest.MapFile{Data: b}
		return err
	}))
	var tok map[string]any
	require.NoError(t, json.Unmarshal(files["tokenizer.json"].Data, &tok))
	bos := map[string]any{"SpecialToken": map[string]any{"id": "<|endoftext|>", "type_id": 0}}
	tok["post_processor"] = map[string]any{
		"type":           "TemplateProcessing",
		"single":         []any{bos, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
		"pair":           []any{bos, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
		"special_tokens": map[string]any{"<|endoftext|>": map[string]any{"id": "<|endoftext|>", "ids": []int{0}, "tokens": []string{"<|endoftext|>"}}},
	}
	b, err := json.Marshal(tok)
	require.NoError(t, err)
	files["tokenizer.json"] = &fstest.MapFile{Data: b}
	return files
}

// startFS is start with the model loaded from fsys.
func startFS(t *testing.T, fsys fs.FS) *testServer {
	t.Helper()
	m, err := model.LoadFS(fsys)
	require.NoError(t, err)
	srv := New(Options{ModelName: demoName})
	sch := scheduler.New(m, scheduler.Config{})
	srv.SetScheduler(sch)
	ts := &testServer{Server: httptest.NewServer(srv), srv: srv, sched: sch, m: m}
	t.Cleanup(func() { sch.Close(); ts.Close() })
	return ts
}

// TestTokenizeAndDetokenizeTakeLlamaServersShapes: POST /tokenize answers
// {"tokens":[ids]} with the tokenizer's ids (add_special adds what its
// template adds), with_pieces gives {"id","piece"} objects whose piece is
// the token's text, or its bytes as numbers when they are not UTF-8 alone
// (an emoji split over byte tokens), and POST /detokenize turns the ids back
// into the text.
func TestTokenizeAndDetokenizeTakeLlamaServersShapes(t *testing.T) {
	ts := startFS(t, withBOS(t))
	tok := ts.m.Tokenizer()
	const text = "And God said, a😀"
	plain, special := tok.Encode(text, false), tok.Encode(text, true)
	require.NotEqual(t, plain, special, "the test's tokenizer adds a token with add_special")

	var got struct{ Tokens []uint32 }
	status, body := post(t, ts.URL+"/tokenize", `{"content":"And God said, a😀"}`)
	require.Equal(t, http.StatusOK, status, body)
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Equal(t, plain, got.Tokens, "add_special defaults to false, as in llama-server")

	status, body = post(t, ts.URL+"/tokenize", `{"content":"And God said, a😀","add_special":true,"parse_special":true,"model":"`+demoName+`"}`)
	require.Equal(t, http.StatusOK, status, body)
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Equal(t, special, got.Tokens)

	status, body = post(t, ts.URL+"/tokenize", `{"content":"","with_pieces":false}`)
	require.Equal(t, http.StatusOK, status, body)
	require.JSONEq(t, `{"tokens":[]}`, body, "an empty text has no tokens (an array, not null)")

	status, body = post(t, ts.URL+"/tokenize", `{"content":"And God said, a😀","with_pieces":true}`)
	require.Equal(t, http.StatusOK, status, body)
	var pieces struct {
		Tokens []struct {
			ID    uint32          `json:"id"`
			Piece json.RawMessage `json:"piece"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &pieces))
	require.Len(t, pieces.Tokens, len(plain))
	var joined []byte
	var byteArrays int
	for i, p := range pieces.Tokens {
		require.Equal(t, plain[i], p.ID)
		want, ok := tok.Piece(p.ID)
		require.True(t, ok)
		var s string
		var bs []int
		switch {
		case json.Unmarshal(p.Piece, &s) == nil:
			require.Equal(t, string(want), s, "token %d", i)
			joined = append(joined, s...)
		case json.Unmarshal(p.Piece, &bs) == nil:
			byteArrays++
			for _, b := range bs {
				joined = append(joined, byte(b))
			}
			require.Equal(t, want, joined[len(joined)-len(bs):], "token %d", i)
		default:
			t.Fatalf("piece %d is neither a string nor bytes: %s", i, p.Piece)
		}
	}
	require.Equal(t, text, string(joined), "the pieces are the text")
	require.Positive(t, byteArrays, "the emoji's byte tokens come as byte arrays")

	ids, err := json.Marshal(special)
	require.NoError(t, err)
	status, body = post(t, ts.URL+"/detokenize", `{"tokens":`+string(ids)+`}`)
	require.Equal(t, http.StatusOK, status, body)
	require.JSONEq(t, `{"content":"<|endoftext|>And God said, a😀"}`, body, "special tokens kept, as llama-server does")
}

// TestTokenizeErrorsNameTheField: the tokenizer routes read bodies as
// strictly as the generation routes, and their errors are OpenAI's shape
// with the request id.
func TestTokenizeErrorsNameTheField(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{})
	for _, tc := range []struct{ path, body, param, code string }{
		{"/tokenize", `{}`, "content", "invalid_value"},
		{"/tokenize", `{"content":1}`, "content", "invalid_type"},
		{"/tokenize", `{"content":"x","with_pieces":"yes"}`, "with_pieces", "invalid_type"},
		{"/tokenize", `{"content":"x","parse_special":false}`, "parse_special", "unsupported_value"},
		{"/tokenize", `{"content":"x","Content":"y"}`, "Content", "unknown_field"},
		{"/tokenize", `{"content":"x","add_bos":true}`, "add_bos", "unknown_field"},
		{"/tokenize", `{"content":"x","model":"gpt-4"}`, "model", "model_not_found"},
		{"/detokenize", `{}`, "tokens", "invalid_value"},
		{"/detokenize", `{"tokens":[1,4096]}`, "tokens[1]", "invalid_value"},
		{"/detokenize", `{"tokens":[-1]}`, "tokens[0]", "invalid_value"},
		{"/detokenize", `{"tokens":[1.5]}`, "tokens", "invalid_type"},
		{"/detokenize", `{"tokens":[1],"tokens":[2]}`, "tokens", "duplicate_key"},
	} {
		t.Run(tc.path+" "+tc.body, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, ts.URL+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", "tok-test-1")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			var e errorBody
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			require.NotNil(t, e.Error.Param, "%+v", e)
			require.Equal(t, tc.param, *e.Error.Param, e.Error.Message)
			require.Equal(t, tc.code, e.Error.Code, e.Error.Message)
			require.Equal(t, "invalid_request_error", e.Error.Type)
			require.Equal(t, "tok-test-1", e.Error.RequestID)
		})
	}
	status, body := get(t, ts.URL+"/tokenize")
	require.Equal(t, http.StatusMethodNotAllowed, status, body)
}

// TestTokenizeWithoutATokenizerIs501: a model loaded without a tokenizer
// (the server used as a library) cannot tokenize; that is the server's
// limit, not the request's fault.
func TestTokenizeWithoutATokenizerIs501(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{}, model.WithoutTokenizer())
	for _, tc := range []struct{ path, body string }{{"/tokenize", `{"content":"x"}`}, {"/detokenize", `{"tokens":[1]}`}} {
		status, body := post(t, ts.URL+tc.path, tc.body)
		require.Equal(t, http.StatusNotImplemented, status, body)
		require.Contains(t, body, `"code":"no_tokenizer"`)
	}
}
