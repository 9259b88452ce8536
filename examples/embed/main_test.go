package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hipgo/hipgo/model"
	"github.com/hipgo/hipgo/model/demo"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer the server's goroutines may log to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// greedy is the demo model's greedy text for prompt, generated here on a
// model of the test's own.
func greedy(t *testing.T, prompt string, n int) string {
	t.Helper()
	m, err := model.LoadFS(demo.FS(), model.WithDeviceMode(model.DeviceCPU))
	require.NoError(t, err)
	defer m.Close()
	res, err := m.Generate(context.Background(), prompt, model.GenerateOptions{MaxTokens: n}, nil)
	require.NoError(t, err)
	require.NotEmpty(t, res.Text)
	return res.Text
}

// TestEmbedServesItsRouteAndTheAPIAndShutsDown runs the service on the demo
// model: its own /generate route streams the model's greedy text, the
// server's API answers under /llm/ (models, readiness, a completion), the
// model was loaded once for both, and cancelling run's context shuts it
// down cleanly (run returns nil and the port is closed).
func TestEmbedServesItsRouteAndTheAPIAndShutsDown(t *testing.T) {
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-device", "cpu"}, &logs, func(a string) { addrs <- a })
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("run returned before listening: %v\n%s", err, logs.String())
	}
	base := "http://" + addr
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	code, body := get("/generate?prompt=And+God+said&n=12")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, greedy(t, "And God said", 12), body)
	code, body = get("/generate?n=3")
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "prompt")

	code, body = get("/llm/health/ready")
	require.Equal(t, http.StatusOK, code, body)
	code, body = get("/llm/v1/models")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"id":"hipgo-demo"`)
	resp, err := http.Post(base+"/llm/v1/completions", "application/json",
		strings.NewReader(`{"model":"hipgo-demo","prompt":"And God said","max_tokens":5,"temperature":0}`))
	require.NoError(t, err)
	var completion struct {
		Choices []struct{ Text string } `json:"choices"`
	}
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&completion))
	resp.Body.Close()
	require.Len(t, completion.Choices, 1)
	require.NotEmpty(t, completion.Choices[0].Text)
	code, _ = get("/")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 1, strings.Count(logs.String(), "model loaded"), "one model for both")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	require.Contains(t, logs.String(), "stopped")
	_, err = net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err, "the listener is closed")
}

// cancelOnWrite is a client that goes away after the first piece of text
// arrives: its first Write cancels the request's context.
type cancelOnWrite struct {
	*httptest.ResponseRecorder
	cancel context.CancelFunc
	writes int
}

func (w *cancelOnWrite) Write(b []byte) (int, error) {
	w.writes++
	w.cancel()
	return w.ResponseRecorder.Write(b)
}

func (w *cancelOnWrite) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// TestGenerateStopsWhenTheClientGoesAway proves the service's own handler
// passes the request's context to model.Generate: once it ends (the client
// went away), generation stops at the next token, long before the 400
// tokens asked for, with the reason "cancelled".
func TestGenerateStopsWhenTheClientGoesAway(t *testing.T) {
	m, err := model.LoadFS(demo.FS(), model.WithDeviceMode(model.DeviceCPU))
	require.NoError(t, err)
	defer m.Close()
	var logs syncBuffer
	h := generateHandler(m, slog.New(slog.NewTextHandler(&logs, nil)))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelOnWrite{ResponseRecorder: httptest.NewRecorder(), cancel: cancel}
	h(w, httptest.NewRequest(http.MethodGet, "/generate?prompt=And+God+said&n=400", nil).WithContext(ctx))
	require.Equal(t, 1, w.writes, "no text after the client went away")
	require.Contains(t, logs.String(), "stopped=cancelled")
	require.Regexp(t, ` tokens=1 `, logs.String())

	// The same request with a context that stays open runs to its cap.
	logs = syncBuffer{}
	h = generateHandler(m, slog.New(slog.NewTextHandler(&logs, nil)))
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/generate?prompt=And+God+said&n=40", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, logs.String(), "tokens=40 ")
}

// TestFlags proves -h says what the service is and bad arguments are
// errors before anything loads.
func TestFlags(t *testing.T) {
	var errOut bytes.Buffer
	err := run(context.Background(), []string{"-h"}, &errOut, nil)
	require.Error(t, err)
	require.True(t, strings.HasPrefix(errOut.String(), "embed is a Go HTTP service that embeds hipgo"), errOut.String())
	require.Error(t, run(context.Background(), []string{"extra"}, io.Discard, nil))
	require.Error(t, run(context.Background(), []string{"-model", t.TempDir() + "/none"}, io.Discard, nil))
}
