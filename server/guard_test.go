package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model/scheduler"
)

// send makes a request with the given headers and returns the response
// and its body.
func send(t *testing.T, method, url, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// requireError checks an OpenAI-shaped error body with the status and code.
func requireError(t *testing.T, resp *http.Response, body string, status int, code string) errorBody {
	t.Helper()
	require.Equal(t, status, resp.StatusCode, body)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var e errorBody
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Equal(t, code, e.Error.Code, body)
	require.NotEmpty(t, e.Error.Message)
	require.NotEmpty(t, e.Error.RequestID)
	require.Equal(t, resp.Header.Get("X-Request-Id"), e.Error.RequestID, "the error names its request")
	return e
}

const tiny = `{"prompt": "x", "max_tokens": 2}`

var jsonType = map[string]string{"Content-Type": "application/json"}

// TestLoopbackServerRefusesOtherHosts: a server that allows only the
// loopback names refuses a request whose Host names another (DNS
// rebinding: a web page of attacker.example whose name now resolves to
// 127.0.0.1), and serves localhost and the loopback addresses.
func TestLoopbackServerRefusesOtherHosts(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{AllowedHosts: LoopbackHosts})
	port := ts.URL[strings.LastIndex(ts.URL, ":"):]
	resp, body := send(t, "POST", ts.URL+"/v1/completions", tiny, map[string]string{"Host": "attacker.example" + port, "Content-Type": "application/json"})
	requireError(t, resp, body, http.StatusForbidden, "host_not_allowed")
	resp, body = send(t, "GET", ts.URL+"/", "", map[string]string{"Host": "attacker.example" + port})
	requireError(t, resp, body, http.StatusForbidden, "host_not_allowed")
	for _, host := range []string{"localhost" + port, "127.0.0.1" + port, "LOCALHOST" + port, "[::1]" + port} {
		resp, body := send(t, "POST", ts.URL+"/v1/completions", tiny, map[string]string{"Host": host, "Content-Type": "application/json"})
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", host, body)
	}
	// Without AllowedHosts (a server behind a proxy that checks hosts
	// itself) any Host is served.
	open := start(t, scheduler.Config{}, Options{})
	resp, body = send(t, "POST", open.URL+"/v1/completions", tiny, map[string]string{"Host": "api.example", "Content-Type": "application/json"})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
}

// TestPostsMustBeJSON: a POST to /v1/* that is not application/json (a
// browser's cross-origin "simple request" is text/plain, a form, or has
// no type) is a 415; JSON with a charset is served.
func TestPostsMustBeJSON(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{})
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
		resp, body := send(t, "POST", ts.URL+"/v1/completions", tiny, map[string]string{"Content-Type": ct})
		requireError(t, resp, body, http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
	resp, body := send(t, "POST", ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2}`, map[string]string{"Content-Type": "application/json; charset=utf-8"})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
}

// TestCrossOriginCallsNeedAnAllowedOrigin: a page of another origin is
// refused unless CORSOrigins lists it; then the response and the preflight
// carry the CORS headers. The server's own page (same origin) is served.
func TestCrossOriginCallsNeedAnAllowedOrigin(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{})
	resp, body := send(t, "POST", ts.URL+"/v1/completions", tiny, map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"})
	requireError(t, resp, body, http.StatusForbidden, "origin_not_allowed")
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	resp, body = send(t, "POST", ts.URL+"/v1/completions", tiny, map[string]string{"Content-Type": "application/json", "Origin": ts.URL})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), "same origin needs no CORS")

	cors := start(t, scheduler.Config{}, Options{CORSOrigins: []string{"https://app.example"}})
	resp, body = send(t, "OPTIONS", cors.URL+"/v1/chat/completions", "", map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST"})
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	require.Equal(t, "https://app.example", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "Authorization")
	resp, body = send(t, "POST", cors.URL+"/v1/completions", tiny, map[string]string{"Content-Type": "application/json", "Origin": "https://app.example"})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "https://app.example", resp.Header.Get("Access-Control-Allow-Origin"))
	resp, body = send(t, "POST", cors.URL+"/v1/completions", tiny, map[string]string{"Content-Type": "application/json", "Origin": "https://other.example"})
	requireError(t, resp, body, http.StatusForbidden, "origin_not_allowed")
}

// TestPageSecurityHeaders: the chat page may not be framed or sniffed, and
// its Content-Security-Policy allows its own inline script by hash only.
func TestPageSecurityHeaders(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{})
	resp, body := send(t, "GET", ts.URL+"/", "", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "<script>")
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	csp := resp.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.Contains(t, csp, "script-src 'sha256-")
	require.NotContains(t, csp, "script-src 'unsafe-inline'")
}

// TestUnknownRoutesAreOpenAIErrors: 404 and 405 are JSON errors (405 with
// Allow), and GET /v1/models/{id} answers the served model and 404s others.
func TestUnknownRoutesAreOpenAIErrors(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{})
	resp, body := send(t, "GET", ts.URL+"/nope", "", nil)
	requireError(t, resp, body, http.StatusNotFound, "not_found")
	resp, body = send(t, "GET", ts.URL+"/v1/completions", "", nil)
	requireError(t, resp, body, http.StatusMethodNotAllowed, "method_not_allowed")
	require.Equal(t, "POST", resp.Header.Get("Allow"))
	resp, body = send(t, "POST", ts.URL+"/v1/models", "{}", jsonType)
	requireError(t, resp, body, http.StatusMethodNotAllowed, "method_not_allowed")
	require.Equal(t, "GET", resp.Header.Get("Allow"))

	resp, body = send(t, "GET", ts.URL+"/v1/models/"+demoName, "", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var m modelInfo
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	require.Equal(t, demoName, m.ID)
	require.Equal(t, "model", m.Object)
	resp, body = send(t, "GET", ts.URL+"/v1/models/gpt-4", "", nil)
	requireError(t, resp, body, http.StatusNotFound, "model_not_found")
}

// TestAnyOfSeveralKeys: each configured key is accepted; a wrong or
// missing one is a 401 that says how to authenticate.
func TestAnyOfSeveralKeys(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{APIKeys: []string{"first", "second"}})
	for _, key := range []string{"first", "second"} {
		resp, body := send(t, "POST", ts.URL+"/v1/completions", tiny, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key})
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
	}
	for _, auth := range []string{"Bearer third", "Bearer ", "first", ""} {
		resp, body := send(t, "POST", ts.URL+"/v1/completions", tiny, map[string]string{"Content-Type": "application/json", "Authorization": auth})
		requireError(t, resp, body, http.StatusUnauthorized, "invalid_api_key")
		require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
	}
}

// TestFreeFormValuesAreNotCheckedByKey: the keys inside a free-form value
// (metadata's) are the client's, so their case is not checked (the strict
// checks, unknown keys included, are TestBadInputIsA400NamingTheField's).
func TestFreeFormValuesAreNotCheckedByKey(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{})
	status, body := post(t, ts.URL+"/v1/completions", `{"prompt":"x","max_tokens":2,"user":"u","metadata":{"Prompt":1}}`)
	require.Equal(t, http.StatusOK, status, body)
}
