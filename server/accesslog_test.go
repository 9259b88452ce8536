package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/scheduler"
	"github.com/hipgo/hipgo/runtime"
)

// logBuffer collects a JSON slog handler's lines from the server's
// goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// logger is a debug-level JSON logger into l.
func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// line waits for the one access-log line of request id and returns it; a
// second line for the id fails the test.
func (l *logBuffer) line(t *testing.T, id string) map[string]any {
	t.Helper()
	var found []map[string]any
	var bad error
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		found = nil
		for _, s := range strings.Split(l.b.String(), "\n") {
			if s == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				bad = fmt.Errorf("%w: %s", err, s)
				return true
			}
			if m["request_id"] == id {
				found = append(found, m)
			}
		}
		return len(found) > 0
	}, 5*time.Second, time.Millisecond, "no access-log line for %s", id)
	require.NoError(t, bad, "every line is JSON")
	time.Sleep(10 * time.Millisecond) // room for a second line, which would be wrong
	l.mu.Lock()
	n := strings.Count(l.b.String(), `"request_id":"`+id+`"`)
	l.mu.Unlock()
	require.Equal(t, 1, n, "one line per request")
	require.Equal(t, "request", found[0]["msg"])
	return found[0]
}

var generatedID = regexp.MustCompile(`^[A-Z2-7]{26}$`) // crypto/rand.Text

// TestEveryResponseCarriesARequestID: every response, errors and probes
// included, has an X-Request-Id: the client's when it is sane (bounded,
// printable, no spaces), else a new random one that differs per request;
// every error body carries the same id as error.request_id; completion
// ids are random.
func TestEveryResponseCarriesARequestID(t *testing.T) {
	ts := start(t, scheduler.Config{}, Options{AllowedHosts: LoopbackHosts, APIKeys: []string{"k"}})
	auth := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer k"}
	seen := map[string]bool{}
	for _, tc := range []struct {
		name, method, path, body string
		headers                  map[string]string
		status                   int
	}{
		{"completion", "POST", "/v1/completions", tiny, auth, 200},
		{"400", "POST", "/v1/completions", `{"prompt":"x","suffix":"y"}`, auth, 400},
		{"401", "POST", "/v1/completions", tiny, jsonType, 401},
		{"403", "GET", "/v1/models", "", map[string]string{"Host": "attacker.example"}, 403},
		{"404", "GET", "/nope", "", nil, 404},
		{"405", "GET", "/v1/completions", "", nil, 405},
		{"415", "POST", "/v1/completions", tiny, map[string]string{"Authorization": "Bearer k"}, 415},
		{"probe", "GET", "/health/ready", "", nil, 200},
		{"page", "GET", "/", "", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, tc.method, ts.URL+tc.path, tc.body, tc.headers)
			require.Equal(t, tc.status, resp.StatusCode, body)
			id := resp.Header.Get("X-Request-Id")
			require.Regexp(t, generatedID, id)
			require.False(t, seen[id], "a new id per request")
			seen[id] = true
			if tc.status >= 400 {
				var e errorBody
				require.NoError(t, json.Unmarshal([]byte(body), &e), body)
				require.Equal(t, id, e.Error.RequestID)
			}
		})
	}

	// Completion ids are random too: unique across processes, unlike the
	// counter they were.
	var ids []string
	for range 2 {
		resp, body := send(t, "POST", ts.URL+"/v1/completions", tiny, auth)
		require.Equal(t, 200, resp.StatusCode, body)
		var c completionResponse
		require.NoError(t, json.Unmarshal([]byte(body), &c))
		require.Regexp(t, `^cmpl-[A-Z2-7]{26}$`, c.ID)
		ids = append(ids, c.ID)
	}
	require.NotEqual(t, ids[0], ids[1])

	for given, kept := range map[string]bool{
		"7f3c-client.id_1":                  true,
		strings.Repeat("a", maxRequestID):   true,
		strings.Repeat("a", maxRequestID+1): false,
		"has a space":                       false,
		"caf\xc3\xa9":                       false,
		"tab\there":                         false,
	} {
		h := map[string]string{"X-Request-Id": given}
		resp, _ := send(t, "GET", ts.URL+"/health/live", "", h)
		got := resp.Header.Get("X-Request-Id")
		if kept {
			require.Equal(t, given, got)
			continue
		}
		require.Regexp(t, generatedID, got, "%q is replaced", given)
		resp, body := send(t, "GET", ts.URL+"/nope", "", h)
		var e errorBody
		require.NoError(t, json.Unmarshal([]byte(body), &e))
		require.Equal(t, resp.Header.Get("X-Request-Id"), e.Error.RequestID)
		require.NotEqual(t, given, e.Error.RequestID)
	}
}

// TestAccessLogOneLinePerRequest: each request gets one "request" line
// with its id, method, route, status and duration; a generation adds the
// model, its prompt and completion tokens (the usage the client got) and
// its time to first token, streamed or not; a failure adds its class and
// code; probes log at debug level.
func TestAccessLogOneLinePerRequest(t *testing.T) {
	var logs logBuffer
	ts := start(t, scheduler.Config{}, Options{Logger: logs.logger()})

	resp, body := send(t, "POST", ts.URL+"/v1/completions", `{"prompt":"And God said","max_tokens":3,"seed":1}`,
		map[string]string{"Content-Type": "application/json", "X-Request-Id": "whole-1"})
	require.Equal(t, 200, resp.StatusCode, body)
	var whole completionResponse
	require.NoError(t, json.Unmarshal([]byte(body), &whole))
	l := logs.line(t, "whole-1")
	require.Equal(t, "INFO", l["level"])
	require.Equal(t, "POST", l["method"])
	require.Equal(t, "/v1/completions", l["route"])
	require.EqualValues(t, 200, l["status"])
	require.Equal(t, demoName, l["model"])
	require.EqualValues(t, whole.Usage.PromptTokens, l["prompt_tokens"])
	require.EqualValues(t, whole.Usage.CompletionTokens, l["completion_tokens"])
	require.Greater(t, l["ttft_ms"], 0.0)
	require.GreaterOrEqual(t, l["duration_ms"], l["ttft_ms"])
	require.NotContains(t, l, "error")

	resp, body = send(t, "POST", ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`,
		map[string]string{"Content-Type": "application/json", "X-Request-Id": "stream-1"})
	require.Equal(t, 200, resp.StatusCode, body)
	var u usage
	for _, ev := range strings.Split(body, "\n\n") {
		var c chatResponse
		if js, ok := strings.CutPrefix(ev, "data: "); ok && json.Unmarshal([]byte(js), &c) == nil && c.Usage != nil {
			u = *c.Usage
		}
	}
	require.Positive(t, u.CompletionTokens, body)
	l = logs.line(t, "stream-1")
	require.Equal(t, "/v1/chat/completions", l["route"])
	require.EqualValues(t, 200, l["status"])
	require.EqualValues(t, u.PromptTokens, l["prompt_tokens"])
	require.EqualValues(t, u.CompletionTokens, l["completion_tokens"])
	require.Greater(t, l["ttft_ms"], 0.0)
	require.GreaterOrEqual(t, l["duration_ms"], l["ttft_ms"])

	resp, _ = send(t, "POST", ts.URL+"/v1/completions", `{"prompt":"x","suffix":"y"}`, map[string]string{"Content-Type": "application/json", "X-Request-Id": "bad-1"})
	require.Equal(t, 400, resp.StatusCode)
	l = logs.line(t, "bad-1")
	require.EqualValues(t, 400, l["status"])
	require.Equal(t, "bad_request", l["error"])
	require.Equal(t, "unsupported_value", l["code"])
	require.NotContains(t, l, "model", "nothing was generated")

	resp, _ = send(t, "GET", ts.URL+"/nope/x", "", map[string]string{"X-Request-Id": "none-1"})
	require.Equal(t, 404, resp.StatusCode)
	l = logs.line(t, "none-1")
	require.Equal(t, "", l["route"])
	require.Equal(t, "/nope/x", l["path"])
	require.Equal(t, "not_found", l["error"])

	resp, _ = send(t, "GET", ts.URL+"/health/ready", "", map[string]string{"X-Request-Id": "probe-1"})
	require.Equal(t, 200, resp.StatusCode)
	l = logs.line(t, "probe-1")
	require.Equal(t, "DEBUG", l["level"])
	require.Equal(t, "/health/ready", l["route"])
}

// TestAuthFailuresAreLoggedAsWarnings: a 401 is a warning line with its
// class and code, and the key it was sent does not reach the log.
func TestAuthFailuresAreLoggedAsWarnings(t *testing.T) {
	var logs logBuffer
	ts := start(t, scheduler.Config{}, Options{APIKeys: []string{"right"}, Logger: logs.logger()})
	resp, _ := send(t, "POST", ts.URL+"/v1/completions", tiny, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer wrong-key-3f9a", "X-Request-Id": "auth-1"})
	require.Equal(t, 401, resp.StatusCode)
	l := logs.line(t, "auth-1")
	require.Equal(t, "WARN", l["level"])
	require.EqualValues(t, 401, l["status"])
	require.Equal(t, "unauthorized", l["error"])
	require.Equal(t, "invalid_api_key", l["code"])
	logs.mu.Lock()
	defer logs.mu.Unlock()
	require.NotContains(t, logs.b.String(), "wrong-key-3f9a")
}

// TestAFailedStreamIsLoggedWithItsClass: a stream that fails after its 200
// ends with an error event carrying the request id, and its log line is a
// warning with the runtime's error class and the server's message; the
// same failure without streaming is a 500 logged alike.
func TestAFailedStreamIsLoggedWithItsClass(t *testing.T) {
	var logs logBuffer
	ts := start(t, scheduler.Config{MaxFailedSteps: -1}, Options{Logger: logs.logger()}, model.WithStepFaults(func(uint64) error {
		return &runtime.LaunchError{Kernel: "injected", Reason: "test"}
	}))
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x","max_tokens":2,"stream":true}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	id := resp.Header.Get("X-Request-Id")
	var event errorBody
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if js, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(js, `"error"`) {
			require.NoError(t, json.Unmarshal([]byte(js), &event))
		}
	}
	require.Equal(t, "step_failed", event.Error.Code)
	require.Equal(t, id, event.Error.RequestID)
	l := logs.line(t, id)
	require.Equal(t, "WARN", l["level"])
	require.EqualValues(t, 200, l["status"], "the status the client got")
	require.Equal(t, "launch_rejected", l["error"])
	require.Equal(t, "step_failed", l["code"])
	require.Contains(t, l["message"], "injected")

	resp2, body := send(t, "POST", ts.URL+"/v1/completions", `{"prompt":"x","max_tokens":2}`, jsonType)
	require.Equal(t, 500, resp2.StatusCode, body)
	l = logs.line(t, resp2.Header.Get("X-Request-Id"))
	require.Equal(t, "WARN", l["level"])
	require.Equal(t, "launch_rejected", l["error"])
}
